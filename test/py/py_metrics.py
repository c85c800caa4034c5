# SPDX-License-Identifier: BSD-3-Clause
"""The metrics in Python (run by it_py_metrics.sh): two engines of this
process, a decode serving /metrics on a free port and a prefill writing a
known number of bytes into it; Hixl.stats() counts exactly those writes,
Hixl.metrics_text() says the same, the decode's endpoint answers over
HTTP, and a HixlCollector in a registry of its own gives prometheus_client
the same figures.  Exit 77 (skipped) without prometheus_client."""

import ctypes
import sys
import urllib.request

import hixl_ucx as hixl

WRITES = 5
LEN = 128 * 1024


def main() -> int:
    try:
        import prometheus_client
        from prometheus_client import CollectorRegistry, generate_latest
    except ImportError:
        print("SKIP: no prometheus_client (Debian: python3-prometheus-client)")
        return 77
    decode = hixl.Hixl(raise_on_error=True)
    decode.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1",
                                      "hixl.MetricsListen": "127.0.0.1:0"})
    dst = ctypes.create_string_buffer(WRITES * LEN)
    decode.register_mem(hixl.MemDesc(ctypes.addressof(dst), len(dst)),
                        hixl.MEM_HOST)
    prefill = hixl.Hixl(raise_on_error=True)
    prefill.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1"})
    src = ctypes.create_string_buffer(WRITES * LEN)
    prefill.register_mem(hixl.MemDesc(ctypes.addressof(src), len(src)),
                         hixl.MEM_HOST)
    prefill.connect(decode.engine_name())
    for i in range(WRITES):
        ctypes.memset(ctypes.addressof(src) + i * LEN, 0x30 + i, LEN)
        prefill.transfer_sync(decode.engine_name(), hixl.WRITE,
                              [(ctypes.addressof(src) + i * LEN,
                                ctypes.addressof(dst) + i * LEN, LEN)])
    for i in range(WRITES):
        assert dst.raw[i * LEN:(i + 1) * LEN] == bytes([0x30 + i]) * LEN

    s = prefill.stats()
    done = sum(n["completed"] for n in s["transfers"]["write"].values())
    moved = sum(n["completed"] for n in s["bytes"]["write"].values())
    assert done == WRITES, s["transfers"]
    assert moved == WRITES * LEN, s["bytes"]
    # one post in 8 of a thread is timed, its first included
    timed = s["latency"]["write"]["count"]
    assert 1 <= timed <= WRITES, timed
    assert s["latency"]["write"]["buckets"][-1] == (float("inf"), timed)
    assert s["connections"]["connected"] == 1
    assert s["connections"]["open"] == 1
    assert s["region_bytes"] == WRITES * LEN
    assert s["requests_in_flight"] == 0
    text = prefill.metrics_text()
    assert "# TYPE hixl_transfers_total counter" in text

    addr = decode.metrics_address()
    assert addr.startswith("127.0.0.1:") and not addr.endswith(":0"), addr
    assert prefill.metrics_address() == ""
    with urllib.request.urlopen("http://%s/metrics" % addr, timeout=30) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        body = r.read().decode()
    assert "hixl_connections_accepted_total 1\n" in body, body

    registry = CollectorRegistry()
    prefill.register_collector(registry)
    got = 0.0
    for p in hixl._metrics.PATHS:
        v = registry.get_sample_value(
            "hixl_transfer_bytes_total",
            {"op": "write", "path": p, "outcome": "completed"})
        assert v is not None, p
        got += v
    assert got == WRITES * LEN, got
    assert registry.get_sample_value(
        "hixl_transfer_latency_seconds_count", {"op": "write"}) == timed
    out = generate_latest(registry).decode()
    assert "hixl_connections_open 1.0" in out, out
    print("prometheus_client %s: %d writes, %d bytes" %
          (getattr(prometheus_client, "__version__", "?"), done, moved))

    prefill.finalize()
    decode.finalize()
    # a finalized engine's collector yields nothing
    assert "hixl_transfers_total" not in generate_latest(registry).decode()
    return 0


if __name__ == "__main__":
    sys.exit(main())
