# SPDX-License-Identifier: BSD-3-Clause
"""`import hixl`, CANN hixl's Python module name, between two processes
(run by it_py_compat.sh).

    py_compat.py run       for UCX_TLS in tcp and sm, run a prefill process
                           (which starts its decode process); report both
    py_compat.py prefill   `import hixl` with CANN's option keys;
                           connect_async and get_async_connect_status until
                           CONNECTED; transfer_async with TransferArgs
                           user_data; get_all_transfer_status with
                           GetTransferStatusArgs until every request is
                           reported; transfer_sync READ; disconnect_async
                           until NOT_CONNECT; CANN's answers after finalize
    py_compat.py decode    listen; a ctypes region; check it on request

Also the module itself: exactly CANN's __all__, every name there, hixl.hixl
with the same names, hixl_ucx still importable.  Every byte moved is
checked where it landed.  Processes speak one JSON object per line.
"""

import ctypes
import hashlib
import json
import os
import subprocess
import sys
import time

import hixl

SLICE = 64 * 1024 + 8
SLICES = 6
REGION = SLICES * SLICE
WAIT_S = 30

#: CANN hixl's __all__ (its binding's hixl/__init__.py), the names a
#: program may import from hixl
CANN_ALL = [
    "SUCCESS", "PARAM_INVALID", "TIMEOUT", "NOT_CONNECTED",
    "ALREADY_CONNECTED", "NOTIFY_FAILED", "UNSUPPORTED", "FAILED",
    "RESOURCE_EXHAUSTED", "OPTION_ENABLE_USE_FABRIC_MEM",
    "OPTION_RDMA_TRAFFIC_CLASS", "OPTION_RDMA_SERVICE_LEVEL",
    "OPTION_BUFFER_POOL", "OPTION_GLOBAL_RESOURCE_CONFIG",
    "OPTION_AUTO_CONNECT", "OPTION_LOCAL_COMM_RES", "FEATURE_SUPPORTED",
    "FEATURE_NOT_SUPPORTED", "MemType", "MEM_DEVICE", "MEM_HOST",
    "TransferOp", "READ", "WRITE", "TransferStatus", "AsyncConnectStatus",
    "NOT_CONNECT", "CONNECT_PENDING", "CONNECTING", "CONNECTED",
    "CONNECT_FAILED", "DISCONNECT_PENDING", "DISCONNECTING", "FeatureType",
    "AUTO_CONNECT", "CLIENT_SERVER_COMM", "MemDesc", "TransferOpDesc",
    "TransferArgs", "GetTransferStatusArgs", "TransferResult", "NotifyDesc",
    "Hixl", "get_capability",
]


def pattern(seed, length):
    out = bytearray()
    i = 0
    while len(out) < length:
        out += hashlib.blake2b(b"%d:%d" % (seed, i), digest_size=64).digest()
        i += 1
    return bytes(out[:length])


def say(stream, obj):
    stream.write(json.dumps(obj) + "\n")
    stream.flush()


def hear(stream):
    line = stream.readline()
    if not line:
        raise RuntimeError("the other process went away")
    return json.loads(line)


class Checks:
    def __init__(self, who):
        self.who = who
        self.errors = []

    def expect(self, cond, what):
        if not cond:
            self.errors.append("%s: %s (%s)" % (self.who, what,
                                                hixl.Hixl.last_error()))
        return cond

    def ok(self, status, what):
        return self.expect(status == hixl.SUCCESS, "%s returned %r" % (
            what, status))


# ---- decode --------------------------------------------------------------------

def decode():
    c = Checks("decode")
    h = hixl.Hixl()
    c.ok(h.initialize("127.0.0.1:0", {
        "hixl.ListenEphemeral": "1",
        hixl.OPTION_GLOBAL_RESOURCE_CONFIG: json.dumps(
            {"comm_resource_config.protocol_desc": ["roce:device"]}),
        hixl.OPTION_LOCAL_COMM_RES: json.dumps({"version": "1.3"}),
        hixl.OPTION_BUFFER_POOL: "0:0"}), "initialize")
    region = ctypes.create_string_buffer(pattern(1, REGION), REGION)
    st, handle = h.register_mem(hixl.MemDesc(ctypes.addressof(region),
                                             REGION), hixl.MEM_HOST)
    c.ok(st, "register_mem")
    say(sys.stdout, {"name": h.engine_name(),
                     "addr": ctypes.addressof(region)})
    while True:
        msg = hear(sys.stdin)
        if "bye" in msg:
            break
        got = ctypes.string_at(ctypes.addressof(region), REGION)
        want = pattern(msg["seed"], REGION)
        c.expect(got == want, "region does not hold pattern %d" %
                 msg["seed"])
        say(sys.stdout, {"checked": got == want})
    c.ok(h.deregister_mem(handle), "deregister_mem")
    c.ok(h.deregister_mem(handle), "deregister_mem again (a no-op)")
    h.finalize()
    say(sys.stdout, {"errors": c.errors})


# ---- prefill -----------------------------------------------------------------------

def wait_async(c, h, remote, want):
    deadline = time.monotonic() + WAIT_S
    st = None
    while time.monotonic() < deadline:
        ret, st = h.get_async_connect_status(remote)
        c.ok(ret, "get_async_connect_status")
        c.expect(isinstance(st, hixl.AsyncConnectStatus),
                 "the status is an AsyncConnectStatus")
        if st == want or st == hixl.CONNECT_FAILED:
            break
        time.sleep(0.001)
    return c.expect(st == want, "async status %r, waited for %r" % (st, want))


def batch(c, h, remote, local, remote_addr, dec):
    local_addr = ctypes.addressof(local)
    ctypes.memmove(local_addr, pattern(2, REGION), REGION)
    reqs = {}
    for i in range(SLICES):
        args = hixl.TransferArgs()
        args.user_data = 1000 + i
        ret, req = h.transfer_async(remote, hixl.WRITE, [hixl.TransferOpDesc(
            local_addr=local_addr + i * SLICE,
            remote_addr=remote_addr + i * SLICE, len=SLICE)], args)
        c.ok(ret, "transfer_async")
        reqs[req] = 1000 + i
    order = list(reqs)
    ret, first = h.get_all_transfer_status(hixl.GetTransferStatusArgs(2))
    c.ok(ret, "get_all_transfer_status(2)")
    c.expect([r.req for r in first] == order[:2], "oldest first, two only")
    done = {}

    def take(results):
        for r in results:
            c.expect(isinstance(r, hixl.TransferResult), "a TransferResult")
            c.expect(reqs.get(r.req) == r.user_data,
                     "request %#x came back with user_data %r" % (
                         r.req, r.user_data))
            if r.status == hixl.TransferStatus.WAITING:
                continue
            c.expect(r.req not in done, "request %#x reported twice" % r.req)
            c.expect(r.status == hixl.TransferStatus.COMPLETED,
                     "request ended %r" % r.status)
            done[r.req] = r.user_data

    take(first)
    deadline = time.monotonic() + WAIT_S
    flip = False
    while len(done) < SLICES and time.monotonic() < deadline:
        ret, results = h.get_all_transfer_status(
            hixl.GetTransferStatusArgs(skip_waiting=flip))
        c.ok(ret, "get_all_transfer_status")
        if flip:
            c.expect(all(r.status != hixl.TransferStatus.WAITING
                         for r in results), "skip_waiting gave WAITING")
        take(results)
        flip = not flip
    c.expect(sorted(done.values()) == list(range(1000, 1000 + SLICES)),
             "every request reported once with its user_data")
    c.expect(h.get_all_transfer_status() == (hixl.SUCCESS, []),
             "nothing left once all were reported")
    # a reported request is released: FAILED, as CANN's binding reports it
    ret, st = h.get_transfer_status(order[0])
    c.expect(ret != hixl.SUCCESS and st == hixl.TransferStatus.FAILED,
             "a released request: %r, %r" % (ret, st))
    say(dec.stdin, {"seed": 2})
    c.expect(hear(dec.stdout).get("checked"), "decode holds pattern 2")


def prefill():
    c = Checks("prefill")
    env = dict(os.environ)
    dec = subprocess.Popen([sys.executable, __file__, "decode"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           universal_newlines=True, env=env)
    try:
        peer = hear(dec.stdout)
        remote, remote_addr = peer["name"], peer["addr"]
        h = hixl.Hixl()
        c.ok(h.initialize("127.0.0.1", {
            hixl.OPTION_ENABLE_USE_FABRIC_MEM: "1",
            hixl.OPTION_GLOBAL_RESOURCE_CONFIG: json.dumps(
                {"connect_pool.thread_num": 2,
                 "connect_pool.task_queue_capacity": "8"}),
            "adxl.BufferPool": "4:8"}), "initialize")
        local = ctypes.create_string_buffer(REGION)
        st, handle = h.register_mem(hixl.MemDesc(ctypes.addressof(local),
                                                 REGION), hixl.MEM_HOST)
        c.ok(st, "register_mem")
        c.ok(h.connect_async(remote), "connect_async")
        if wait_async(c, h, remote, hixl.CONNECTED):
            ret, table = h.get_all_async_connect_status()
            c.expect(ret == hixl.SUCCESS and table == {
                remote: hixl.AsyncConnectStatus.CONNECTED},
                "get_all_async_connect_status: %r %r" % (ret, table))
            batch(c, h, remote, local, remote_addr, dec)
            ctypes.memset(ctypes.addressof(local), 0, REGION)
            c.ok(h.transfer_sync(remote, hixl.READ, [hixl.TransferOpDesc(
                ctypes.addressof(local), remote_addr, REGION)]),
                "transfer_sync READ")
            c.expect(local.raw == pattern(2, REGION), "READ brought back "
                     "what decode holds")
        c.expect(h.get_transfer_status(0) == (hixl.FAILED,
                                              hixl.TransferStatus.FAILED),
                 "get_transfer_status(0)")
        c.ok(h.disconnect_async(remote), "disconnect_async")
        wait_async(c, h, remote, hixl.NOT_CONNECT)
        c.expect(h.get_all_async_connect_status() == (hixl.SUCCESS, {}),
                 "nothing in the async table after disconnect")
        c.ok(h.deregister_mem(handle), "deregister_mem")
        c.ok(h.deregister_mem(handle), "deregister_mem again (a no-op)")
        c.expect(h.finalize() is None, "finalize returns None")
        c.expect(h.get_all_transfer_status() == (hixl.FAILED, []),
                 "get_all_transfer_status after finalize")
        c.expect(h.get_all_async_connect_status() == (hixl.FAILED, {}),
                 "get_all_async_connect_status after finalize")
        c.expect(h.get_async_connect_status(remote) ==
                 (hixl.FAILED, hixl.NOT_CONNECT),
                 "get_async_connect_status after finalize")
        c.expect(h.connect_async(remote) == hixl.FAILED,
                 "connect_async after finalize")
        say(dec.stdin, {"bye": 1})
        c.errors += hear(dec.stdout)["errors"]
    except (RuntimeError, ValueError) as exc:
        c.errors.append(str(exc))
    try:
        dec.stdin.close()
        code = dec.wait(timeout=60)
    except subprocess.TimeoutExpired:
        dec.kill()
        code = dec.wait()
    c.expect(code == 0, "decode exited with %s" % code)
    print(json.dumps({"errors": c.errors}))


# ---- the module ---------------------------------------------------------------------

def module_checks():
    import hixl.hixl as sub
    import hixl_ucx
    errors = []
    if sorted(hixl.__all__) != sorted(CANN_ALL):
        errors.append("hixl.__all__ differs from CANN's: %r" % (
            sorted(set(hixl.__all__) ^ set(CANN_ALL))))
    for name in CANN_ALL:
        if getattr(hixl, name, None) is None:
            errors.append("hixl.%s is missing" % name)
        elif getattr(sub, name, None) is not getattr(hixl, name):
            errors.append("hixl.hixl.%s is not hixl.%s" % (name, name))
    if hixl.Hixl is not hixl_ucx.Hixl:
        errors.append("hixl.Hixl is not hixl_ucx.Hixl")
    if hixl.get_capability(hixl.CLIENT_SERVER_COMM) != (hixl.SUCCESS, 1):
        errors.append("get_capability(CLIENT_SERVER_COMM) is %r" % (
            hixl.get_capability(hixl.CLIENT_SERVER_COMM),))
    args = hixl.GetTransferStatusArgs()
    if (args.max_query_count, args.skip_waiting) != (4294967295, False):
        errors.append("GetTransferStatusArgs() defaults")
    r = hixl.TransferResult()
    if (r.req, r.user_data, r.status) != (0, 0, hixl.TransferStatus.WAITING):
        errors.append("TransferResult() defaults")
    if [int(s) for s in hixl.AsyncConnectStatus] != list(range(7)):
        errors.append("AsyncConnectStatus values")
    return errors


def run():
    failed = 0
    errors = module_checks()
    print("%s: the module has CANN hixl's names" % ("FAIL" if errors
                                                     else "PASS"))
    for e in errors:
        print("    " + e)
    failed += bool(errors)
    for tls in ("tcp", "sm"):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("HIXL_") or k == "HIXL_UCX_LIB"}
        env["UCX_TLS"] = tls
        try:
            out = subprocess.run([sys.executable, __file__, "prefill"],
                                 stdout=subprocess.PIPE, env=env,
                                 universal_newlines=True, timeout=120)
            lines = out.stdout.strip().splitlines()
            errors = json.loads(lines[-1])["errors"] if lines else \
                ["prefill printed nothing (exit %s)" % out.returncode]
        except subprocess.TimeoutExpired:
            errors = ["prefill did not finish in 120 s"]
        print("%s: import hixl, two processes, UCX_TLS=%s" % (
            "FAIL" if errors else "PASS", tls))
        for e in errors:
            print("    " + e)
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "run"
    if role == "decode":
        decode()
    elif role == "prefill":
        prefill()
    else:
        sys.exit(run())
