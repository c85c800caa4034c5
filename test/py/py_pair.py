# SPDX-License-Identifier: BSD-3-Clause
"""Two Python processes move bytes with hixl_ucx (run by it_python.sh).

    py_pair.py run       for UCX_TLS in tcp, sm, unset: start a decode and a
                         prefill process, relay what they must know of each
                         other, collect both verdicts
    py_pair.py decode    listen; KV cache from alloc_mem, a ctypes block, an
                         mmap region; check each layer when it is ready and
                         the mmap region when its transfer's notify arrives
    py_pair.py prefill   connect; write the layers (transfer_sync and
                         transfer_async), flush each, write the mmap region
                         with a completion notify, notify "kv_ready", read
                         the block back, try what must fail

Processes speak one JSON object per line on stdin/stdout.  Every byte moved
is checked; a verdict is {"ok": bool, "errors": [...]}.
"""

import ctypes
import hashlib
import json
import logging
import mmap
import os
import select
import subprocess
import sys
import time

import hixl_ucx as hixl
from py_lines import hear, say

LAYERS = 8
HALF = 128 * 1024 + 24            # K (or V) of one layer
LAYER = 2 * HALF
KV_LEN = LAYERS * LAYER
BLOCK_LEN = 512 * 1024 + 3
MM_LEN = 1024 * 1024 + 5
STREAM, GENERATION = 5, 42
OP_MS = 20000
KV_SEED, BLOCK_SEED, MM_SEED = b"kv", b"block", b"mm"
MM_NOTE = bytes(range(256)) + b"\x00tail"


def pattern(seed, length):
    """length bytes that depend on seed and on each byte's position."""
    out = bytearray()
    i = 0
    while len(out) < length:
        out += hashlib.blake2b(seed + i.to_bytes(8, "little"),
                               digest_size=64).digest()
        i += 1
    return bytes(out[:length])


def first_diff(got, want):
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return i
    return min(len(got), len(want))


class Checks:
    def __init__(self, who):
        self.who = who
        self.errors = []

    def fail(self, text):
        self.errors.append("%s: %s" % (self.who, text))

    def status(self, got, want, what):
        if got != want:
            if isinstance(want, tuple):
                self.fail("%s returned %r, expected %r" % (what, got, want))
            else:
                self.fail("%s returned %s (%d), expected %s: %s" % (
                    what, hixl.strerror(got), got, hixl.strerror(want),
                    hixl.last_error()))
        return got == want

    def ok(self, got, what):
        return self.status(got, hixl.SUCCESS, what)

    def same(self, got, want, what):
        if got != want:
            i = first_diff(got, want)
            self.fail("%s: byte %d is %r, expected %r" % (
                what, i, got[i:i + 1], want[i:i + 1]))


class Captured(logging.Handler):
    """The library's log lines as they reach Python's logging."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def decode():
    c = Checks("decode")
    logs = Captured()
    logging.getLogger("hixl_ucx").addHandler(logs)
    logging.getLogger("hixl_ucx").setLevel(logging.DEBUG)
    h = hixl.Hixl()
    c.ok(h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1",
                                      "hixl.LogLevel": "info"}),
         "initialize")
    # peers write into memory from alloc_mem; ctypes and mmap work too
    st, kv_addr, kv_handle = h.alloc_mem(KV_LEN, hixl.MEM_HOST)
    c.ok(st, "alloc_mem")
    ctypes.memset(kv_addr, 0, KV_LEN)
    block = ctypes.create_string_buffer(pattern(BLOCK_SEED, BLOCK_LEN),
                                        BLOCK_LEN)
    st, block_handle = h.register_mem(
        hixl.MemDesc(ctypes.addressof(block), BLOCK_LEN), hixl.MEM_HOST)
    c.ok(st, "register_mem(ctypes)")
    mm = mmap.mmap(-1, MM_LEN)
    mm_addr = hixl.buffer_address(mm)
    st, mm_handle = h.register_mem(hixl.MemDesc(mm_addr, MM_LEN))
    c.ok(st, "register_mem(mmap)")

    say({"name": h.engine_name(), "kv": kv_addr,
         "block": ctypes.addressof(block), "mm": mm_addr})
    prefill = hear()["prefill"]

    kv_want = pattern(KV_SEED, KV_LEN)
    for layer in range(LAYERS):
        st = h.wait_layer(prefill, STREAM, GENERATION, layer, OP_MS)
        if c.ok(st, "wait_layer(%d)" % layer):
            off = layer * LAYER
            c.same(ctypes.string_at(kv_addr + off, LAYER),
                   kv_want[off:off + LAYER], "layer %d when ready" % layer)
    st, ready = h.test_layer(prefill, STREAM, GENERATION, LAYERS - 1)
    c.ok(st, "test_layer")
    if not ready:
        c.fail("test_layer: the last layer is not ready after wait_layer")

    # two notifies: the transfer's own (data checked on arrival), then
    # kv_ready; hixl delivers them in order
    got = []
    deadline = time.monotonic() + OP_MS / 1000.0
    while len(got) < 2 and time.monotonic() < deadline:
        st, notifies = h.get_notifies()
        c.ok(st, "get_notifies")
        for n in notifies:
            if n.name == "mm_done":
                c.same(mm[:], pattern(MM_SEED, MM_LEN),
                       "mmap region when its notify arrived")
            got.append(n)
        if len(got) < 2:
            time.sleep(0.001)
    names = [n.name for n in got]
    if names != ["mm_done", "kv_ready"]:
        c.fail("notifies %r, expected ['mm_done', 'kv_ready']" % names)
    else:
        if got[0].notify_msg_bytes != MM_NOTE:
            c.fail("mm_done message %r" % got[0].notify_msg_bytes[:32])
        if got[1].notify_msg != "layers=%d" % LAYERS:
            c.fail("kv_ready message %r" % got[1].notify_msg)
        if got[1].remote != prefill:
            c.fail("kv_ready came from %r, not %r" % (got[1].remote, prefill))
    c.same(ctypes.string_at(kv_addr, KV_LEN), kv_want, "KV at the end")

    # the library's own lines came through logging, with their source
    accepted = [r for r in logs.records
                if r.getMessage().startswith("accepted ")]
    if not accepted:
        c.fail("no 'accepted ...' line from the library in logging (got %d "
               "records)" % len(logs.records))
    elif accepted[0].levelno != logging.INFO or \
            not accepted[0].name.startswith("hixl_ucx.") or \
            not accepted[0].pathname.endswith(".c"):
        c.fail("the 'accepted' record: level %s, logger %s, source %s" %
               (accepted[0].levelname, accepted[0].name,
                accepted[0].pathname))
    say({"ok": not c.errors, "errors": c.errors})
    hear()   # bye: prefill has read the block back
    c.ok(h.deregister_mem(mm_handle), "deregister_mem(mmap)")
    c.ok(h.deregister_mem(block_handle), "deregister_mem(ctypes)")
    c.ok(h.deregister_mem(kv_handle), "deregister_mem(alloc_mem)")
    h.finalize()
    h.finalize()   # idempotent
    say({"ok": not c.errors, "errors": c.errors})


def prefill():
    c = Checks("prefill")
    peer = hear()
    remote = peer["name"]

    c.status(hixl.get_capability(hixl.AUTO_CONNECT), (hixl.SUCCESS,
             hixl.FEATURE_SUPPORTED), "get_capability(AUTO_CONNECT)")
    c.status(hixl.get_capability(hixl.FeatureType.CLIENT_SERVER_COMM),
             (hixl.SUCCESS, hixl.FEATURE_SUPPORTED),
             "get_capability(CLIENT_SERVER_COMM)")
    idle = hixl.Hixl()   # hixl answers FAILED before initialize
    c.status(idle.connect(remote), hixl.FAILED, "connect before initialize")
    c.status(idle.register_mem(hixl.MemDesc(4096, 4096))[0], hixl.FAILED,
             "register_mem before initialize")

    h = hixl.Hixl()
    c.ok(h.initialize("127.0.0.1"), "initialize")   # client-only
    c.ok(h.initialize("127.0.0.1"), "initialize again (ignored)")
    src = ctypes.create_string_buffer(pattern(KV_SEED, KV_LEN), KV_LEN)
    src_addr = ctypes.addressof(src)
    st, src_handle = h.register_mem(hixl.MemDesc(src_addr, KV_LEN),
                                    hixl.MemType.MEM_HOST)
    c.ok(st, "register_mem(src)")
    back = bytearray(BLOCK_LEN)
    back_addr = hixl.buffer_address(back)
    st, back_handle = h.register_mem(hixl.MemDesc(back_addr, BLOCK_LEN))
    c.ok(st, "register_mem(bytearray)")
    mm_src = mmap.mmap(-1, MM_LEN)
    mm_src[:] = pattern(MM_SEED, MM_LEN)
    st, mm_handle = h.register_mem(hixl.MemDesc(hixl.buffer_address(mm_src),
                                                MM_LEN))
    c.ok(st, "register_mem(mmap)")

    c.ok(h.connect(remote, timeout_in_millis=OP_MS), "connect")
    c.status(h.connect(remote, OP_MS), hixl.ALREADY_CONNECTED, "connect again")
    say({"name": h.engine_name()})

    for layer in range(LAYERS):
        off = layer * LAYER
        descs = [hixl.TransferOpDesc(src_addr + off, peer["kv"] + off, HALF),
                 hixl.TransferOpDesc(src_addr + off + HALF,
                                     peer["kv"] + off + HALF, HALF)]
        if layer % 2 == 0:
            c.ok(h.transfer_sync(remote, hixl.WRITE, descs, OP_MS),
                 "transfer_sync(layer %d)" % layer)
        else:
            st, req = h.transfer_async(remote, hixl.TransferOp.WRITE, descs,
                                       hixl.TransferArgs())
            c.ok(st, "transfer_async(layer %d)" % layer)
            state = wait_req(h, req, c)
            if state != hixl.TransferStatus.COMPLETED:
                c.fail("layer %d ended %s: %s" % (layer, state.name,
                                                  hixl.last_error()))
            c.status(h.get_transfer_status(req)[0], hixl.PARAM_INVALID,
                     "status of a released request")
        c.ok(h.flush_layer(remote, STREAM, GENERATION, layer),
             "flush_layer(%d)" % layer)

    # a transfer whose notify arrives only with all of its bytes
    args = hixl.TransferArgs(notify=hixl.NotifyDesc("mm_done", MM_NOTE),
                             timeout_in_millis=OP_MS)
    st, req = h.transfer_async(
        remote, hixl.WRITE,
        [(hixl.buffer_address(mm_src), peer["mm"], MM_LEN)], args)
    c.ok(st, "transfer_async(mmap, notify)")
    state = wait_req(h, req, c)
    if state != hixl.TransferStatus.COMPLETED:
        c.fail("mmap transfer ended %s: %s" % (state.name, hixl.last_error()))
    c.ok(h.send_notify(remote, hixl.NotifyDesc("kv_ready",
                                               "layers=%d" % LAYERS)),
         "send_notify")

    # READ the decode's ctypes block into a bytearray
    c.ok(h.transfer_sync(remote, hixl.READ,
                         [hixl.TransferOpDesc(back_addr, peer["block"],
                                              BLOCK_LEN)], OP_MS),
         "transfer_sync(READ)")
    c.same(bytes(back), pattern(BLOCK_SEED, BLOCK_LEN), "READ of the block")

    c.status(h.transfer_sync(remote, hixl.WRITE,
                             [(src_addr, peer["kv"] + KV_LEN - 8, 64)], OP_MS),
             hixl.PARAM_INVALID, "transfer_sync outside the KV region")

    say({"ok": not c.errors, "errors": c.errors})
    hear()   # decode checked: now leave
    c.ok(h.disconnect(remote, OP_MS), "disconnect")
    c.status(h.disconnect(remote), hixl.NOT_CONNECTED, "disconnect again")
    for handle in (src_handle, back_handle, mm_handle):
        c.ok(h.deregister_mem(handle), "deregister_mem")
    h.finalize()
    say({"ok": not c.errors, "errors": c.errors})


def wait_req(h, req, c):
    deadline = time.monotonic() + OP_MS / 1000.0
    while time.monotonic() < deadline:
        st, state = h.get_transfer_status(req)
        if not c.ok(st, "get_transfer_status"):
            return hixl.TransferStatus.FAILED
        if state != hixl.TransferStatus.WAITING:
            return state
    return hixl.TransferStatus.WAITING


class Child:
    def __init__(self, role, env):
        self.role = role
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), role],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            universal_newlines=True)

    def hear(self, timeout=90.0):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise RuntimeError("%s said nothing (exit %s)" % (
                self.role, self.proc.poll()))
        return json.loads(line)

    def say(self, obj):
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def end(self):
        try:
            self.proc.stdin.close()
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def run_pair(tls):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HIXL_") or k == "HIXL_UCX_LIB"}
    if tls is None:
        env.pop("UCX_TLS", None)
    else:
        env["UCX_TLS"] = tls
    errors = []
    dec = Child("decode", env)
    pre = Child("prefill", env)
    try:
        pre.say(dec.hear())                 # decode's name and addresses
        dec.say({"prefill": pre.hear()["name"]})
        for who in (dec, pre):              # both checked their bytes
            errors += who.hear()["errors"]
        dec.say({"bye": 1})
        pre.say({"bye": 1})
        for who in (dec, pre):              # and shut down cleanly
            errors += who.hear()["errors"]
    except (RuntimeError, ValueError) as exc:
        errors.append(str(exc))
    for who in (pre, dec):
        code = who.end()
        if code != 0:
            errors.append("%s exited with %s" % (who.role, code))
    return errors


def run():
    failed = 0
    for tls in ("tcp", "sm", None):
        label = "UCX_TLS=%s" % tls if tls else "UCX_TLS unset"
        errors = run_pair(tls)
        print("%s: two Python processes, %s" % ("FAIL" if errors else "PASS",
                                                 label))
        for e in errors:
            print("    " + e)
        failed += bool(errors)
    print("hixl_ucx from %s, library %s" % (hixl.__file__, hixl.library))
    return 1 if failed else 0


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "run"
    if role == "decode":
        decode()
    elif role == "prefill":
        prefill()
    else:
        sys.exit(run())
