# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch's plumbing over hixl: notifies by name, status checks, a
request's end, and the staged mode's socket reads."""

import time

NOTIFY_POLL_S = 0.001


class Notifies:
    """Notifies by name.  Waiting polls with short sleeps in this one
    place, so that a blocking or event-driven wait can replace it."""

    def __init__(self, hixl, engine):
        self.hixl, self.engine, self.queue = hixl, engine, []

    def send(self, remote, name, msg, timeout_ms):
        ok(self.engine, self.engine.send_notify(
            remote, self.hixl.NotifyDesc(name, msg), timeout_ms),
            "send_notify %s" % name)

    def wait(self, name, timeout_s):
        deadline = time.monotonic() + timeout_s
        while True:
            for i, n in enumerate(self.queue):
                if n.name == name:
                    return self.queue.pop(i)
            st, got = self.engine.get_notifies()
            ok(self.engine, st, "get_notifies")
            self.queue += got
            if not got:
                if time.monotonic() > deadline:
                    raise PdError("no %s notify within %.0f s" % (name,
                                                                 timeout_s))
                time.sleep(NOTIFY_POLL_S)


class PdError(Exception):
    pass


def ok(engine, status, what):
    if status != 0:
        raise PdError("%s: status %d: %s" % (what, status,
                                             engine.last_error()))


def wait_req(engine, hixl, req, what, timeout_s):
    """Poll a transfer to its end; FAILED and TIMEOUT raise with the
    reason (the peer went away, a descriptor was refused...)."""
    deadline = time.monotonic() + timeout_s
    while True:
        st, ts = engine.get_transfer_status(req)
        ok(engine, st, what)
        if ts == hixl.TransferStatus.COMPLETED:
            return
        if ts != hixl.TransferStatus.WAITING:
            raise PdError("%s: %s: %s" % (what, ts.name, engine.last_error()))
        if time.monotonic() > deadline:
            raise PdError("%s: still waiting after %.0f s" % (what,
                                                              timeout_s))
        time.sleep(0.0002)


# ---- the staged copy (plain TCP) ---------------------------------------------

def recv_exact(sock, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise PdError("staged: connection closed after %d of %d bytes" %
                          (got, n))
        got += k
    return buf
