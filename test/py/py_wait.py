# SPDX-License-Identifier: BSD-3-Clause
"""Completion without polling in Python (run by it_py_wait.sh).

    py_wait.py run       for (UCX_TLS, decode's progress thread) in
                         (tcp, on), (sm, on), (tcp, off): run a decode
                         process, which starts its peers, and print its
                         verdict
    py_wait.py decode    the engine under test: asyncio awaitables for
                         notifies, layers and a transfer; wait_notifies with
                         and without a timeout; the event fd in epoll;
                         wait_transfers ANY then ALL; finalize from another
                         thread ending a wait; a peer killed while waited on
                         (over tcp)
    py_wait.py prefill   the peer: notifies, layer writes and flushes into
                         decode, checks what decode wrote into it
    py_wait.py victim    a peer that is stopped, then killed

Processes speak one JSON object per line.  Every byte moved is checked.
"""

import asyncio
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import threading

import hixl_ucx as hixl

LAYERS = 4
LAYER = 256 * 1024 + 8
REGION = LAYERS * LAYER
PIECES = 4
OP_MS = 20000
OP_S = OP_MS / 1000.0


def pattern(seed, length):
    out = bytearray()
    i = 0
    while len(out) < length:
        out += hashlib.blake2b(seed + i.to_bytes(8, "little"),
                               digest_size=64).digest()
        i += 1
    return bytes(out[:length])


def say(obj, stream=sys.stdout):
    stream.write(json.dumps(obj) + "\n")
    stream.flush()


def hear(stream=sys.stdin):
    line = stream.readline()
    if not line:
        raise SystemExit("the other side went away")
    return json.loads(line)


def peer_engine(h):
    """A listening engine with REGION bytes from alloc_mem."""
    h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1"})
    _, addr, _ = h.alloc_mem(REGION)
    return addr


def read(addr, length):
    import ctypes
    return ctypes.string_at(addr, length)


def write(addr, data):
    import ctypes
    ctypes.memmove(addr, data, len(data))


# ---- the peers --------------------------------------------------------------

def prefill():
    h = hixl.Hixl(raise_on_error=True)
    addr = peer_engine(h)
    say({"name": h.engine_name(), "addr": addr})
    d = hear()
    h.connect(d["decode"], OP_MS)
    h.send_notify(d["decode"], hixl.NotifyDesc("hello", "first"), OP_MS)
    src = pattern(b"layers", REGION)
    write(addr, src)
    for layer in range(LAYERS):
        h.transfer_sync(d["decode"], hixl.WRITE, [
            (addr + layer * LAYER, d["addr"] + layer * LAYER, LAYER)], OP_MS)
        h.flush_layer(d["decode"], 0, 1, layer)
    while True:
        cmd = hear()
        if "notify" in cmd:
            h.send_notify(d["decode"], hixl.NotifyDesc(cmd["notify"], "m"),
                          OP_MS)
            say({"sent": cmd["notify"]})
        elif "check" in cmd:
            want = pattern(cmd["check"].encode(), REGION)
            say({"same": read(addr, REGION) == want})
        else:
            break
    h.finalize()
    say({"bye": 1})


def victim():
    h = hixl.Hixl(raise_on_error=True)
    addr = peer_engine(h)
    say({"name": h.engine_name(), "addr": addr})
    hear()   # killed before it hears anything


# ---- the engine under test --------------------------------------------------

class Peer:
    def __init__(self, role):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), role],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            universal_newlines=True)

    def say(self, obj):
        say(obj, self.proc.stdin)

    def hear(self):
        ready, _, _ = select.select([self.proc.stdout], [], [], 90.0)
        if not ready:
            raise RuntimeError("a peer said nothing")
        return hear(self.proc.stdout)


class Checks:
    def __init__(self):
        self.errors = []

    def true(self, cond, what):
        if not cond:
            self.errors.append(what)


async def aio_part(h, c, pre, kv_addr, pre_info):
    """Await a notify, every layer, then a transfer of decode's own."""
    got = await h.wait_notifies_async(timeout=OP_S)
    c.true([(n.name, n.notify_msg) for n in got] == [("hello", "first")],
           "wait_notifies_async: %r" % got)
    want = pattern(b"layers", REGION)
    for layer in range(LAYERS):
        await h.wait_layer_async(pre_info["name"], 0, 1, layer, timeout=OP_S)
        at = layer * LAYER
        c.true(read(kv_addr + at, LAYER) == want[at:at + LAYER],
               "layer %d: bytes not there at its signal" % layer)
    # a transfer of decode's own, awaited
    h.connect(pre_info["name"], OP_MS)
    write(kv_addr, pattern(b"aio", REGION))
    _, req = h.transfer_async(pre_info["name"], hixl.WRITE,
                              [(kv_addr, pre_info["addr"], REGION)])
    st = await h.wait_transfer_async(req, timeout=OP_S)
    c.true(st == hixl.TransferStatus.COMPLETED, "awaited transfer: %r" % st)
    pre.say({"check": "aio"})
    c.true(pre.hear()["same"], "awaited transfer: bytes differ at prefill")
    # a notify that never comes: asyncio's timeout, nothing left behind
    try:
        await h.wait_notifies_async(timeout=0.2)
        c.true(False, "wait_notifies_async(0.2) returned")
    except asyncio.TimeoutError:
        pass
    # an error is named after the awaitable the caller awaited
    try:
        await h.wait_layer_async(pre_info["name"], 1 << 30, 1, 0,
                                 timeout=OP_S)
        c.true(False, "wait_layer_async of stream 2**30 returned")
    except hixl.HixlError as e:
        c.true(e.method == "wait_layer_async",
               "wait_layer_async raised as %r" % e.method)


def blocking_part(h, c, pre, kv_addr, pre_info):
    try:
        h.wait_notifies(timeout_ms=100)
        c.true(False, "wait_notifies(100) without a notify returned")
    except hixl.HixlTimeoutError as e:
        c.true(e.status == hixl.TIMEOUT, "wait_notifies: %r" % e)
    # the peer's send_notify needs decode's progress when it has no thread:
    # the wait below is what gives it
    pre.say({"notify": "second"})
    got = h.wait_notifies(timeout_ms=OP_MS)
    c.true([n.name for n in got] == ["second"], "wait_notifies: %r" % got)
    c.true(pre.hear()["sent"] == "second", "second not sent")

    # the event fd, in epoll
    fd = h.event_fd()
    ep = select.epoll()
    ep.register(fd, select.EPOLLIN)
    pre.say({"notify": "third"})
    got, rounds = [], 0
    while not got and rounds < 1000:
        got = h.get_notifies()[1]
        if not got and h.arm():
            ep.poll(OP_S)
        rounds += 1
    c.true([n.name for n in got] == ["third"], "epoll: %r" % got)
    c.true(pre.hear()["sent"] == "third", "third not sent")
    ep.close()

    # wait_transfers: ANY, then ALL on the rest
    write(kv_addr, pattern(b"pieces", REGION))
    piece = REGION // PIECES
    reqs = []
    for i in range(PIECES):
        _, r = h.transfer_async(pre_info["name"], hixl.WRITE, [
            (kv_addr + i * piece, pre_info["addr"] + i * piece, piece)])
        reqs.append(r)
    st = h.wait_transfers(reqs, hixl.WAIT_ANY, OP_MS)
    c.true(hixl.TransferStatus.COMPLETED in st, "ANY: %r" % st)
    rest = [r for r, s in zip(reqs, st) if s == hixl.TransferStatus.WAITING]
    if rest:
        st2 = h.wait_transfers(rest, hixl.WAIT_ALL, OP_MS)
        c.true(all(s == hixl.TransferStatus.COMPLETED for s in st2),
               "ALL: %r" % st2)
    pre.say({"check": "pieces"})
    c.true(pre.hear()["same"], "wait_transfers: bytes differ at prefill")


def finalize_part(c):
    """finalize() from this thread ends another thread's wait."""
    h2 = hixl.Hixl()
    h2.initialize("127.0.0.1", {})
    out = {}

    def waiter():
        try:
            h2.wait_notifies()
            out["ret"] = "returned"
        except hixl.HixlError as e:
            out["ret"] = e.status

    th = threading.Thread(target=waiter)
    th.start()
    threading.Event().wait(0.3)
    h2.finalize()
    th.join(OP_S)
    c.true(not th.is_alive() and out.get("ret") == hixl.FAILED,
           "finalize while waiting: %r" % out)


def stop(pid):
    """SIGSTOP, and wait until it has reached every thread: kill() returns
    before it has, and on a loaded machine a thread of the peer may still
    run (and answer) for milliseconds after it."""
    os.kill(pid, signal.SIGSTOP)
    _, status = os.waitpid(pid, os.WUNTRACED)
    return os.WIFSTOPPED(status)


def death_part(h, c, kv_addr):
    """A peer killed while its transfers are waited on: FAILED."""
    vic = Peer("victim")
    info = vic.hear()
    h.connect(info["name"], OP_MS)
    c.true(stop(vic.proc.pid), "the victim did not stop")
    reqs = [h.transfer_async(info["name"], hixl.WRITE, [
        (kv_addr, info["addr"], REGION)])[1] for _ in range(PIECES)]
    killer = threading.Timer(0.3, os.kill, (vic.proc.pid, signal.SIGKILL))
    killer.start()
    st = h.wait_transfers(reqs, hixl.WAIT_ALL, None)
    killer.join()
    vic.proc.wait()
    c.true(all(s == hixl.TransferStatus.FAILED for s in st),
           "killed peer: %r" % st)


def decode():
    c = Checks()
    progress = os.environ.get("PY_WAIT_PROGRESS", "1")
    h = hixl.Hixl(raise_on_error=True)
    h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1",
                                 "hixl.ProgressThread": progress,
                                 "hixl.PeerTimeoutMs": "5000",
                                 "hixl.FinalizeTimeoutMs": "1000"})
    _, kv_addr, _ = h.alloc_mem(REGION)
    write(kv_addr, bytes(REGION))
    pre = Peer("prefill")
    pre_info = pre.hear()
    pre.say({"decode": h.engine_name(), "addr": kv_addr})
    try:
        asyncio.run(aio_part(h, c, pre, kv_addr, pre_info))
        blocking_part(h, c, pre, kv_addr, pre_info)
        finalize_part(c)
        # shared memory completes inside the post: nothing left to fail
        if os.environ.get("UCX_TLS") == "tcp":
            death_part(h, c, kv_addr)
    except Exception as e:   # a verdict, not a traceback
        c.true(False, "%s: %s" % (type(e).__name__, e))
    pre.say({"bye": 1})
    try:
        pre.hear()
    except (RuntimeError, SystemExit) as e:
        c.true(False, "prefill: %s" % e)
    pre.proc.wait(60)
    h.finalize()
    say({"ok": not c.errors, "errors": c.errors})


def run():
    failed = 0
    for tls, progress in (("tcp", "1"), ("sm", "1"), ("tcp", "0")):
        env = dict(os.environ, UCX_TLS=tls, PY_WAIT_PROGRESS=progress)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__),
                               "decode"], env=env, stdout=subprocess.PIPE,
                              universal_newlines=True, timeout=300)
        lines = proc.stdout.strip().splitlines()
        verdict = json.loads(lines[-1]) if lines else {
            "ok": False, "errors": ["no verdict (exit %d)" % proc.returncode]}
        label = "UCX_TLS=%s, progress thread %s" % (
            tls, "on" if progress == "1" else "off")
        print("%s: waits, asyncio and the event fd, %s" % (
            "PASS" if verdict["ok"] else "FAIL", label))
        for e in verdict["errors"]:
            print("    " + e)
        failed += not verdict["ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "run"
    if role == "run":
        sys.exit(run())
    {"decode": decode, "prefill": prefill, "victim": victim}[role]()
