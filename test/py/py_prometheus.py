#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Prometheus itself scrapes a decode and a prefill (run by
it_prometheus.sh): Debian's prometheus server, on a port of its own with a
storage directory of its own, scrapes both engines' /metrics every second
while the prefill writes a known number of bytes into the decode over
tcp, a write
to a target process is cut short by that process's death, and another
prefill process connected to the decode is killed.  Then Prometheus's
HTTP query API must report exactly what happened: the bytes and the
completed writes, the one failed write, and the decode's connection
closed by a peer's death.  Exit 77 (skipped) without the prometheus
server or without the metrics endpoint (a library built without
libmicrohttpd).

    py_prometheus.py                 the test
    py_prometheus.py victim          a target: listens, registers a region,
                                     prints its name and address, waits
    py_prometheus.py prefill NAME    connects to NAME, says so, waits
"""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import hixl_ucx as hixl

WRITES, LEN = 6, 256 * 1024
WAIT_S = 60


def victim():
    h = hixl.Hixl(raise_on_error=True)
    h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1"})
    buf = ctypes.create_string_buffer(LEN)
    h.register_mem(hixl.MemDesc(ctypes.addressof(buf), LEN), hixl.MEM_HOST)
    print(json.dumps({"name": h.engine_name(),
                      "addr": ctypes.addressof(buf)}), flush=True)
    time.sleep(WAIT_S * 4)   # killed long before


def prefill(decode_name):
    h = hixl.Hixl(raise_on_error=True)
    h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1"})
    h.connect(decode_name)
    print("connected", flush=True)
    time.sleep(WAIT_S * 4)   # killed long before


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def until(what, fn, timeout=WAIT_S):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = fn()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit("FAIL: %s within %d s" % (what, timeout))


def query(prom, expr):
    """The value of an instant query with one result, or None."""
    url = "http://%s/api/v1/query?%s" % (
        prom, urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    res = body["data"]["result"]
    return float(res[0]["value"][1]) if len(res) == 1 else None


def start_prometheus(tmp, targets):
    port = free_port()
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: hixl\n    static_configs:\n"
                "      - targets: [%s]\n" % ", ".join(
                    '"%s"' % t for t in targets))
    proc = subprocess.Popen(
        [shutil.which("prometheus"), "--config.file=" + cfg,
         "--storage.tsdb.path=" + os.path.join(tmp, "data"),
         "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
    prom = "127.0.0.1:%d" % port

    def ready():
        try:
            with urllib.request.urlopen("http://%s/-/ready" % prom,
                                        timeout=2) as r:
                return r.status == 200
        except OSError:
            return proc.poll() is not None and \
                SystemExit("FAIL: prometheus exited %s" % proc.returncode)
    until("prometheus ready", ready)
    return proc, prom


def main():
    if shutil.which("prometheus") is None:
        print("SKIP: no prometheus server (Debian: prometheus)")
        return 77
    # tcp: a write to a stopped target waits for its answer (a kernel copy
    # between processes of one host would not need the target to run)
    os.environ["UCX_TLS"] = "tcp"
    opts = {"hixl.ListenEphemeral": "1", "hixl.MetricsListen": "127.0.0.1:0"}
    decode = hixl.Hixl()
    st = decode.initialize("127.0.0.1:0", opts)
    if st == hixl.UNSUPPORTED:
        print("SKIP: no metrics endpoint: %s" % hixl.last_error())
        return 77
    assert st == hixl.SUCCESS, hixl.last_error()
    dst = ctypes.create_string_buffer(WRITES * LEN)
    assert decode.register_mem(hixl.MemDesc(ctypes.addressof(dst),
                                            len(dst))) [0] == hixl.SUCCESS
    pre = hixl.Hixl(raise_on_error=True)
    pre.initialize("127.0.0.1:0", opts)
    src = ctypes.create_string_buffer(WRITES * LEN)
    pre.register_mem(hixl.MemDesc(ctypes.addressof(src), len(src)))
    d_inst, p_inst = decode.metrics_address(), pre.metrics_address()
    tmp = tempfile.mkdtemp(prefix="hixl-prom-")
    prom_proc, prom = start_prometheus(tmp, [d_inst, p_inst])
    kids = []
    try:
        until("both targets up", lambda: query(
            prom, 'sum(up{job="hixl"})') == 2)
        # the writes that complete, every byte checked where it landed
        pre.connect(decode.engine_name())
        for i in range(WRITES):
            ctypes.memset(ctypes.addressof(src) + i * LEN, 0x41 + i, LEN)
            pre.transfer_sync(decode.engine_name(), hixl.WRITE,
                              [(ctypes.addressof(src) + i * LEN,
                                ctypes.addressof(dst) + i * LEN, LEN)])
        for i in range(WRITES):
            assert dst.raw[i * LEN:(i + 1) * LEN] == bytes([0x41 + i]) * LEN
        # a write whose target dies under it: stopped, posted, killed
        v = subprocess.Popen([sys.executable, __file__, "victim"],
                             stdout=subprocess.PIPE, text=True)
        kids.append(v)
        info = json.loads(v.stdout.readline())
        pre.connect(info["name"])
        os.kill(v.pid, signal.SIGSTOP)
        _, req = pre.transfer_async(info["name"], hixl.WRITE,
                                    [(ctypes.addressof(src), info["addr"],
                                      LEN)])
        os.kill(v.pid, signal.SIGKILL)
        v.wait()
        states = pre.wait_transfers([req], timeout_ms=WAIT_S * 1000)
        assert states[0] == hixl.TransferStatus.FAILED, states
        # a prefill of the decode's killed
        k = subprocess.Popen([sys.executable, __file__, "prefill",
                              decode.engine_name()], stdout=subprocess.PIPE,
                             text=True)
        kids.append(k)
        assert k.stdout.readline().strip() == "connected"
        os.kill(k.pid, signal.SIGKILL)
        k.wait()
        until("the decode sees the prefill's death", lambda: decode.stats()
              ["connections"]["closed"]["peer_death"] == 1)
        # what Prometheus stored, once it scraped after all of that
        want = {
            'sum(hixl_transfer_bytes_total{instance="%s",op="write",'
            'outcome="completed"})' % p_inst: WRITES * LEN,
            'sum(hixl_transfers_total{instance="%s",op="write",'
            'outcome="completed"})' % p_inst: WRITES,
            'sum(hixl_transfers_total{instance="%s",outcome="failed"})'
            % p_inst: 1,
            'sum(hixl_transfer_bytes_total{instance="%s",outcome="failed"})'
            % p_inst: LEN,
            'hixl_connections_closed_total{instance="%s",'
            'reason="peer_death"}' % d_inst: 1,
            'hixl_connections_accepted_total{instance="%s"}' % d_inst: 2,
            'hixl_connections_open{instance="%s"}' % d_inst: 1,
        }
        until("Prometheus reports the run", lambda: all(
            query(prom, q) == v for q, v in want.items()))
        for q, v in want.items():
            print("prometheus: %s = %.0f (the run: %d)" % (q, query(prom, q),
                                                            v))
        s = pre.stats()
        assert sum(n["completed"] for n in s["bytes"]["write"].values()) \
            == WRITES * LEN
    finally:
        for kid in kids:
            if kid.poll() is None:
                kid.kill()
                kid.wait()
        prom_proc.terminate()
        try:
            prom_proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prom_proc.kill()
            prom_proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    pre.finalize()
    decode.finalize()
    print("PASS: Prometheus scraped both engines and reports the bytes, the "
          "completed and failed writes and the peer's death of the run")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "victim":
        victim()
    elif len(sys.argv) > 2 and sys.argv[1] == "prefill":
        prefill(sys.argv[2])
    else:
        sys.exit(main())
