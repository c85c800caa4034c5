# SPDX-License-Identifier: BSD-3-Clause
"""hixl_ucx as a user installs it (run by it_py_venv.sh inside a fresh venv
where `pip install` put the package).

    py_venv_pair.py run      start a decode and a prefill process and
                             collect their verdicts (over UCX_TLS=tcp and sm)
    py_venv_pair.py decode   listen; register a numpy array (the KV
                             target, float16 in 2-D) and a bytearray (a
                             block prefill reads back), via the objects
    py_venv_pair.py prefill  register a numpy array and a bytearray,
                             WRITE the array into decode's, READ decode's
                             bytearray, with object descriptors; check
                             that wrong arguments are refused by name
    py_venv_pair.py api      argument checks and the exceptions mode, in
                             one process (no peer needed)

Every byte moved is checked.  One JSON object per line on stdin/stdout.
"""

import json
import os
import select
import subprocess
import sys
import time

import numpy as np

import hixl_ucx as hixl
from py_lines import hear, say

ROWS, COLS = 64, 1024             # float16: 128 KiB
BLOCK = 256 * 1024 + 7
OP_MS = 20000


def kv_pattern():
    a = np.arange(ROWS * COLS, dtype=np.uint32) * np.uint32(2654435761)
    return (a >> np.uint32(16)).astype(np.uint16).view(np.float16).reshape(
        ROWS, COLS)


def block_pattern():
    return bytearray((i * 131 + 7) & 0xff for i in range(BLOCK))


def expect_raises(errors, exc, words, fn, *args, **kw):
    """fn(*args) must raise exc with every word of `words` in its text."""
    try:
        fn(*args, **kw)
    except exc as e:
        text = str(e)
        for w in words:
            if w not in text:
                errors.append("%s: %r lacks %r" % (exc.__name__, text, w))
        return e
    except Exception as e:  # noqa: BLE001 (report what came instead)
        errors.append("expected %s %s, got %s: %s" % (
            exc.__name__, words, type(e).__name__, e))
        return None
    errors.append("expected %s %s, nothing raised" % (exc.__name__, words))
    return None


def decode():
    errors = []
    h = hixl.Hixl(raise_on_error=True)      # NIXL-style: exceptions
    h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": True})
    kv = np.zeros((ROWS, COLS), dtype=np.float16)
    block = block_pattern()
    _, kv_handle = h.register_mem(kv)        # the objects themselves
    _, block_handle = h.register_mem(block)
    say({"name": h.engine_name(), "kv": hixl.buffer_address(kv),
         "kv_len": kv.nbytes, "block": hixl.buffer_address(block)})
    deadline = time.monotonic() + OP_MS / 1000.0
    done = None
    while done is None and time.monotonic() < deadline:
        _, notes = h.get_notifies()
        done = next((n for n in notes if n.name == "kv_done"), None)
        time.sleep(0.001)
    if done is None:
        errors.append("decode: no kv_done notify")
    elif not np.array_equal(kv.view(np.uint16),
                            kv_pattern().view(np.uint16)):
        bad = int(np.count_nonzero(kv.view(np.uint16) !=
                                   kv_pattern().view(np.uint16)))
        errors.append("decode: %d of %d float16 values wrong" % (bad,
                                                                 kv.size))
    say({"ok": not errors, "errors": errors})
    hear()   # prefill disconnected
    h.deregister_mem(kv_handle)
    h.deregister_mem(block_handle)
    h.finalize()
    say({"ok": True, "errors": []})


def prefill():
    errors = []
    peer = hear()
    remote = peer["name"]
    h = hixl.Hixl()                          # hixl's convention: statuses
    st = h.initialize("127.0.0.1")
    src = kv_pattern()                       # numpy source
    back = bytearray(BLOCK)                  # bytearray READ target
    st_src, src_handle = h.register_mem(src)
    st_back, back_handle = h.register_mem(hixl.MemDesc(back))
    st_conn = h.connect(remote, OP_MS)
    for what, got in (("initialize", st), ("register_mem(numpy)", st_src),
                      ("register_mem(bytearray)", st_back),
                      ("connect", st_conn)):
        if got != hixl.SUCCESS:
            errors.append("prefill: %s: %s %s" % (what, hixl.strerror(got),
                                                   hixl.last_error()))
    # a bytearray registered is pinned: it cannot be resized under hixl
    expect_raises(errors, BufferError, [], back.extend, b"x")

    # WRITE the numpy array into decode's (object descriptor: length from
    # the array), asynchronously with its notify
    st, req = h.transfer_async(
        remote, hixl.WRITE, [hixl.TransferOpDesc(src, peer["kv"])],
        hixl.TransferArgs(timeout_in_millis=OP_MS,
                          notify=hixl.NotifyDesc("kv_done", b"\x00\x01")))
    state = hixl.TransferStatus.WAITING
    deadline = time.monotonic() + OP_MS / 1000.0
    while (st == hixl.SUCCESS and state == hixl.TransferStatus.WAITING and
           time.monotonic() < deadline):
        st, state = h.get_transfer_status(req)
    if state != hixl.TransferStatus.COMPLETED:
        errors.append("prefill: WRITE of the numpy array ended %s (%s): %s"
                      % (state.name, hixl.strerror(st), hixl.last_error()))
    # READ decode's bytearray into ours: a tuple (local object, remote)
    st = h.transfer_sync(remote, hixl.READ, [(back, peer["block"])], OP_MS)
    if st != hixl.SUCCESS:
        errors.append("prefill: READ: %s" % hixl.last_error())
    elif back != block_pattern():
        errors.append("prefill: the bytearray read back differs")

    # wrong arguments are refused by name, before the library is called
    d = [hixl.TransferOpDesc(src, peer["kv"])]
    expect_raises(errors, TypeError, ["op", "'write'"], h.transfer_sync,
                  remote, "write", d)
    expect_raises(errors, ValueError, ["op"], h.transfer_sync, remote, 7, d)
    expect_raises(errors, TypeError, ["remote_engine"], h.transfer_sync,
                  None, hixl.WRITE, d)
    expect_raises(errors, TypeError, ["timeout_in_millis"], h.connect,
                  remote, "1000")
    expect_raises(errors, TypeError, ["read-only"], h.register_mem,
                  b"immutable")
    ro = np.zeros(16, dtype=np.uint8)
    ro.flags.writeable = False
    expect_raises(errors, TypeError, ["read-only"], h.register_mem, ro)
    expect_raises(errors, TypeError, ["not contiguous"], h.register_mem,
                  np.zeros((8, 8))[:, ::2])
    expect_raises(errors, TypeError, ["mem_type"], h.register_mem,
                  bytearray(8), "host")
    expect_raises(errors, ValueError, ["TransferOpDesc len"],
                  hixl.TransferOpDesc, back, peer["block"], BLOCK + 1)
    say({"ok": not errors, "errors": errors})
    hear()
    h.disconnect(remote, OP_MS)
    h.deregister_mem(src_handle)
    h.deregister_mem(back_handle)
    back.extend(b"x")   # let go after deregister_mem: resizable again
    h.finalize()
    say({"ok": True, "errors": []})


class FakeTensor:
    """What hixl_ucx needs of a torch tensor: data_ptr() and nbytes."""

    def __init__(self, n):
        self.storage = np.zeros(n, dtype=np.uint8)
        self.nbytes = n
        self.device = type("Device", (), {"type": "cpu"})()

    def data_ptr(self):
        return int(self.storage.ctypes.data)

    def is_contiguous(self):
        return True


def api():
    """One process, one engine: buffer kinds, errors, the exceptions mode."""
    errors = []
    h = hixl.Hixl()
    if h.initialize("127.0.0.1") != hixl.SUCCESS:
        errors.append("initialize: " + hixl.last_error())
    t = FakeTensor(4096)
    st, th = h.register_mem(t)               # data_ptr() + nbytes
    if st != hixl.SUCCESS:
        errors.append("register_mem(data_ptr object): " + hixl.last_error())
    f = np.zeros((32, 16), dtype=np.float32, order="F")
    st, fh = h.register_mem(f)               # Fortran order: one block
    if st != hixl.SUCCESS:
        errors.append("register_mem(F-order array): " + hixl.last_error())
    if hixl.MemDesc(f).addr != f.ctypes.data:
        errors.append("MemDesc(F-order array) has the wrong address")
    if hixl.MemDesc(t).len != 4096:
        errors.append("MemDesc(tensor).len is not its nbytes")
    # raw addresses still work
    raw = bytearray(4096)
    st, rh = h.register_mem(hixl.MemDesc(hixl.buffer_address(raw), 4096))
    if st != hixl.SUCCESS:
        errors.append("register_mem(raw address): " + hixl.last_error())
    for handle in (th, fh, rh):
        h.deregister_mem(handle)
    # hixl's convention: a status, and last_error() says why
    st = h.connect("127.0.0.1:1", 200)
    if st == hixl.SUCCESS or not hixl.last_error():
        errors.append("connect to a closed port returned %d, %r" % (
            st, hixl.last_error()))
    h.finalize()
    # the opt-in exceptions mode carries status and message
    r = hixl.Hixl(raise_on_error=True)
    r.initialize("127.0.0.1")
    e = expect_raises(errors, hixl.HixlError, ["connect"], r.connect,
                      "127.0.0.1:1", 200)
    if e is not None and (e.status == hixl.SUCCESS or not e.message):
        errors.append("HixlError without status or message: %r" % (e,))
    e = expect_raises(errors, hixl.HixlError, ["PARAM_INVALID"],
                      r.deregister_mem, 0)
    if e is not None and e.status != hixl.PARAM_INVALID:
        errors.append("deregister_mem(0): status %d" % e.status)
    r.finalize()
    expect_raises(errors, ValueError, ["stream"], h.flush_layer, "x", -1, 1,
                  0)
    print(json.dumps({"ok": not errors, "errors": errors}))


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
    env = dict(os.environ, UCX_TLS=tls)
    errors = []
    dec = Child("decode", env)
    pre = Child("prefill", env)
    try:
        pre.say(dec.hear())
        for who in (dec, pre):
            errors += who.hear()["errors"]
        pre.say({"bye": 1})
        errors += pre.hear()["errors"]
        dec.say({"bye": 1})
        errors += dec.hear()["errors"]
    except (RuntimeError, ValueError) as exc:
        errors.append(str(exc))
    for who in (pre, dec):
        code = who.end()
        if code != 0:
            errors.append("%s exited with %s" % (who.role, code))
    return errors


def run():
    failed = 0
    for tls in ("tcp", "sm"):
        errors = run_pair(tls)
        print("%s: numpy array and bytearray between two processes, "
              "UCX_TLS=%s" % ("FAIL" if errors else "PASS", tls))
        for e in errors:
            print("    " + e)
        failed += bool(errors)
    print("hixl_ucx %s from %s, library %s" % (hixl.__version__,
                                               hixl.__file__, hixl.library))
    return 1 if failed else 0


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "run"
    if role == "decode":
        decode()
    elif role == "prefill":
        prefill()
    elif role == "api":
        api()
    else:
        sys.exit(run())
