# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch's plumbing over hixl: notifies by name, status checks, a
request's end, and the staged mode's socket reads."""

import time

# the exceptions of the waits (hixl_ucx, under the module CANN names hixl)
from hixl_ucx import HixlError, HixlTimeoutError


class Notifies:
    """Notifies by name, kept in arrival order until asked for; waiting
    sleeps in the library (hixl_wait_notifies), never polls."""

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
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise PdError("no %s notify within %.0f s" % (name,
                                                             timeout_s))
            try:
                self.queue += self.engine.wait_notifies(timeout_ms=left_ms)
            except HixlTimeoutError:
                pass   # the deadline above says so
            except HixlError as e:
                raise PdError("waiting for the %s notify: %s" % (name, e))


class PdError(Exception):
    pass


def ok(engine, status, what):
    if status != 0:
        raise PdError("%s: status %d: %s" % (what, status,
                                             engine.last_error()))


def wait_req(engine, hixl, req, what, timeout_s):
    """Wait for a transfer to end (the library sleeps until it does);
    FAILED and TIMEOUT raise with the reason (the peer went away, a
    descriptor was refused...)."""
    try:
        ts = engine.wait_transfers([req], timeout_ms=int(timeout_s * 1000))[0]
    except HixlTimeoutError:
        raise PdError("%s: still waiting after %.0f s" % (what, timeout_s))
    except HixlError as e:
        raise PdError("%s: %s" % (what, e))
    if ts != hixl.TransferStatus.COMPLETED:
        raise PdError("%s: %s: %s" % (what, ts.name, engine.last_error()))


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
