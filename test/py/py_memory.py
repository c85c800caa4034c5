#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""make check (it_py_memory.sh): alloc_mem's Allocation and memory
descriptions in Python, with two engines in one process.

* an Allocation is still the int address (arithmetic, ctypes, JSON) and
  gives memoryview / numpy / torch views; deregistration is refused while
  a view is alive and every later use raises instead of reaching freed
  memory; finalize likewise;
* mem_warm_wait: after it, a first transfer into the decode's memory
  (mapped into this process by shared memory) faults no page per page;
  bad timeouts raise;
* decode exports its regions, prefill imports them and writes by (region,
  offset); out-of-bounds and malformed descriptions raise HixlError naming
  what was wrong; the written bytes are checked where they landed.
numpy and torch parts run where those are installed.
"""
import ctypes
import json
import resource
import sys

import hixl_ucx as hx

EPHEMERAL = {"hixl.ListenEphemeral": "1"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def raises(exc, fn, what, substr=""):
    try:
        fn()
    except exc as e:
        check(substr in str(e), "%s: message %r lacks %r" % (what, str(e),
                                                              substr))
        return
    check(False, "%s: no %s" % (what, exc.__name__))


def allocation(h):
    st, a, hd = h.alloc_mem(4096)
    check(st == hx.SUCCESS, "alloc_mem")
    check(isinstance(a, int) and a.addr == int(a) and len(a) == 4096,
          "Allocation is the int address")
    json.dumps({"kv": a})
    ctypes.memset(a + 1, 0x5a, 2)
    mv = a.memoryview()
    check(mv[1] == 0x5a and mv[3] == 0, "memoryview sees the bytes")
    mv[0] = 9
    check(ctypes.string_at(a, 1) == b"\x09", "memoryview writes the memory")
    if sys.version_info >= (3, 12):
        check(memoryview(a)[0] == 9, "memoryview(Allocation)")
    try:
        import numpy
    except ImportError:
        numpy = None
    if numpy is not None:
        arr = a.numpy(numpy.uint32, (4, 4))
        raises(BufferError, lambda: h.deregister_mem(hd),
               "deregister with a numpy view alive", "still alive")
        check(not a.released, "refused deregistration keeps the memory")
        del arr
    check(h.deregister_mem(hd) == hx.SUCCESS, "deregister_mem")
    raises(ValueError, a.memoryview, "view after deregistration", "freed")
    raises(ValueError, lambda: a.addr, ".addr after deregistration",
           "freed")
    raises(ValueError, lambda: mv[0], "old memoryview after deregistration")


def finalize_refused():
    h = hx.Hixl()
    check(h.initialize("127.0.0.1") == hx.SUCCESS, "initialize")
    st, a, _ = h.alloc_mem(64)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t = a.torch(torch.float32, (4, 4))
        t.fill_(1.5)
        raises(BufferError, h.finalize, "finalize with a tensor alive",
               "still alive")
        check(h.engine_name() != "", "refused finalize keeps the engine")
        del t
    h.finalize()
    raises(ValueError, a.memoryview, "view after finalize", "freed")


def descriptions(dec, pre):
    regions = []
    for n in (4096, 8192):
        st, a, hd = dec.alloc_mem(n)
        ctypes.memset(a, 0, n)
        regions.append((a, hd))
    data = dec.export_mem([hd for _, hd in regions])
    check(isinstance(data, bytes) and data[:4] == b"HXMD", "export_mem")
    rm = pre.import_mem(data)
    check(rm.engine == dec.engine_name() and len(rm) == 2, "import_mem")
    check(rm.region_len(1) == 8192 and rm.region_type(1) == hx.MEM_HOST,
          "region accessors")
    raises(hx.HixlError, lambda: rm.addr(1, 8000, 193), "out of bounds",
           "offset 8000 + length 193 exceeds its size 8192")
    raises(hx.HixlError, lambda: rm.addr(2, 0, 1), "no such region",
           "holds 2 regions")
    raises(hx.HixlError, lambda: pre.import_mem(data[:-1]), "truncated",
           "truncated")
    raises(hx.HixlError, lambda: pre.import_mem(b"XXXX" + data[4:]),
           "wrong magic", "magic")
    raises(hx.HixlError, lambda: dec.export_mem([12345]), "bad handle",
           "handles[0]")
    src = bytearray(range(256)) * 4
    check(pre.register_mem(src)[0] == hx.SUCCESS, "register source")
    check(pre.connect(dec.engine_name()) == hx.SUCCESS, "connect")
    descs = [rm.op_desc(src, 1, 5000), rm.op_desc(src, 0, 100, 16)]
    check(pre.transfer_sync(dec.engine_name(), hx.WRITE, descs) ==
          hx.SUCCESS, "transfer_sync by (region, offset)")
    a0, a1 = regions[0][0], regions[1][0]
    check(ctypes.string_at(a1 + 5000, 1024) == bytes(src), "region 1 bytes")
    check(ctypes.string_at(a1 + 4999, 1) == b"\0" and
          ctypes.string_at(a1 + 6024, 1) == b"\0", "region 1 untouched")
    check(ctypes.string_at(a0 + 100, 16) == bytes(src[:16]),
          "region 0 bytes")
    pre.disconnect(dec.engine_name())


def warm_wait(dec, pre):
    """The wait covers the peer's memory mapped here: without it, a first
    transfer right after connecting faults each of the decode's pages in
    this process; after it, none."""
    n = 64 << 20
    st, dst, dhd = dec.alloc_mem(n)
    ctypes.memset(dst, 1, n)
    st, src, shd = pre.alloc_mem(n)
    ctypes.memset(src, 2, n)
    check(pre.connect(dec.engine_name()) == hx.SUCCESS, "connect")
    check(pre.mem_warm_wait() == hx.SUCCESS, "mem_warm_wait")
    check(pre.mem_warm_wait(0) == hx.SUCCESS, "mem_warm_wait(0) when warm")
    raises(ValueError, lambda: pre.mem_warm_wait(-2), "timeout -2",
           "timeout_in_millis")
    raises(TypeError, lambda: pre.mem_warm_wait("1"), "timeout str",
           "timeout_in_millis")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    check(pre.transfer_sync(dec.engine_name(), hx.WRITE,
                            [(int(src), int(dst), n)]) == hx.SUCCESS,
          "first transfer after the wait")
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # 16,384 pages; a few faults of the process's own are allowed
    check(faults < 512, "first transfer after mem_warm_wait faulted %d "
          "pages" % faults)
    check(ctypes.string_at(dst + n - 4096, 4096) == b"\2" * 4096,
          "first transfer's bytes")
    pre.disconnect(dec.engine_name())
    check(pre.deregister_mem(shd) == hx.SUCCESS, "free source")
    check(dec.deregister_mem(dhd) == hx.SUCCESS, "free target")


def main():
    dec, pre = hx.Hixl(), hx.Hixl()
    check(dec.initialize("127.0.0.1:0", EPHEMERAL) == hx.SUCCESS, "decode")
    check(pre.initialize("127.0.0.1") == hx.SUCCESS, "prefill")
    allocation(dec)
    finalize_refused()
    descriptions(dec, pre)
    warm_wait(dec, pre)
    pre.finalize()
    dec.finalize()
    if failures:
        print("%d failed" % len(failures))
        return 1
    print("py_memory: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
