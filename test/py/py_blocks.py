#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A paged KV cache moved by block table between two Python processes
(run by it_py_blocks.sh), over tcp and shared memory.

    py_blocks.py run       start a decode and a prefill per transport,
                           relay what each must know of the other, collect
                           both verdicts
    py_blocks.py decode    listen; a cache of LAYERS x (K, V) x BLOCKS blocks
                           from alloc_mem; choose the request's block table
                           (a random permutation); check each layer, block by
                           block, when its layer flush arrives; then the whole
                           cache after a one-request transfer
    py_blocks.py prefill   connect; prepare both layouts once; send the
                           request layer by layer (one call per layer, then
                           its layer flush), then as one request of every
                           block; try what must fail

Each block holds values that name its layer, K or V, request block and
generation, so a block that lands in the wrong place, or not at all, is
found and named.  Processes speak one JSON object per line.
"""

import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:   # pragma: no cover
    print("SKIP: numpy is not installed")
    sys.exit(77)

import hixl_ucx as hixl
from py_lines import hear, say

LAYERS, BLOCKS, BLOCK = 32, 512, 1024          # bytes per block
PER_LAYER = 2 * BLOCKS                          # K and V
NUM = LAYERS * PER_LAYER                        # 32,768 blocks
CACHE = NUM * BLOCK
STREAM = 3
OP_MS = 60000


def block_values(gen, layer, kv, j):
    """The uint32 words of request block j of (layer, kv) in generation gen."""
    tag = (gen << 28) | (layer << 20) | (kv << 19) | j
    return (np.arange(BLOCK // 4, dtype=np.uint32) * np.uint32(2654435761)
            ^ np.uint32(tag))


def fill_request(words, gen):
    """The prefill's own blocks, request order: (layer, kv, j) at
    ((layer * 2 + kv) * BLOCKS + j)."""
    lanes = np.arange(BLOCK // 4, dtype=np.uint32) * np.uint32(2654435761)
    tags = np.arange(NUM, dtype=np.uint32)
    layer, rest = tags // PER_LAYER, tags % PER_LAYER
    kv, j = rest // BLOCKS, rest % BLOCKS
    tag = (np.uint32(gen) << 28) | (layer << 20) | (kv << 19) | j
    words.reshape(NUM, BLOCK // 4)[:] = lanes[None, :] ^ tag[:, None]


class Checks:
    def __init__(self, who):
        self.who = who
        self.errors = []

    def fail(self, text):
        if len(self.errors) < 20:
            self.errors.append("%s: %s" % (self.who, text))

    def ok(self, status, what):
        if status != hixl.SUCCESS:
            self.fail("%s: %s: %s" % (what, hixl.strerror(status),
                                      hixl.last_error()))
        return status == hixl.SUCCESS


def check_layer(c, cache, table, gen, layer):
    """Every block of layer: request block j of K and V in cache block
    table[j] of that layer."""
    for kv in (0, 1):
        for j in range(BLOCKS):
            blk = (layer * 2 + kv) * BLOCKS + int(table[j])
            got = cache[blk]
            want = block_values(gen, layer, kv, j)
            if not np.array_equal(got, want):
                bad = int(np.flatnonzero(got != want)[0])
                c.fail("gen %d layer %d %s request block %d (cache block "
                       "%d): word %d is 0x%08x, expected 0x%08x" % (
                           gen, layer, "KV"[kv], j, blk, bad, int(got[bad]),
                           int(want[bad])))
                return False
    return True


def decode():
    c = Checks("decode")
    h = hixl.Hixl()
    c.ok(h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1"}),
         "initialize")
    st, kv, _ = h.alloc_mem(CACHE, hixl.MEM_HOST)
    c.ok(st, "alloc_mem")
    cache = kv.numpy(np.uint32).reshape(NUM, BLOCK // 4)
    cache[:] = 0
    table = np.random.default_rng(1234).permutation(BLOCKS).astype(np.uint32)
    say({"name": h.engine_name(), "cache": int(kv),
         "table": table.tolist()})
    prefill = hear()["prefill"]
    # generation 1: layer by layer, each checked when its flush arrives
    for layer in range(LAYERS):
        if not c.ok(h.wait_layer(prefill, STREAM, 1, layer, OP_MS),
                    "wait_layer %d" % layer):
            break
        if not check_layer(c, cache, table, 1, layer):
            break
    cache[:] = 0
    say({"gen1": "checked"})
    # generation 2: one request of every block, then one flush
    if c.ok(h.wait_layer(prefill, STREAM, 2, 0, OP_MS), "wait_layer gen 2"):
        for layer in range(LAYERS):
            if not check_layer(c, cache, table, 2, layer):
                break
    say({"gen2": "checked"})
    hear()   # the prefill is done with this engine's memory
    del cache
    h.finalize()
    say({"ok": not c.errors, "errors": c.errors})


def prefill():
    c = Checks("prefill")
    peer = hear()
    h = hixl.Hixl()
    c.ok(h.initialize("127.0.0.1", {}), "initialize")
    c.ok(h.connect(peer["name"], OP_MS), "connect")
    st, own, _ = h.alloc_mem(CACHE, hixl.MEM_HOST)
    c.ok(st, "alloc_mem")
    words = own.numpy(np.uint32)
    fill_request(words, 1)
    say({"prefill": h.engine_name()})
    table = np.array(peer["table"], dtype=np.uint32)
    st, local = h.prepare_blocks(int(own), BLOCK, NUM)
    c.ok(st, "prepare_blocks(local)")
    st, remote = h.prepare_blocks(peer["cache"], BLOCK, NUM,
                                  remote_engine=peer["name"])
    c.ok(st, "prepare_blocks(remote)")
    # the ids of one layer: request order locally, the table's remotely
    j = np.arange(BLOCKS, dtype=np.uint32)
    per_layer = []
    for layer in range(LAYERS):
        lids = np.concatenate([(layer * 2 + kv) * BLOCKS + j
                               for kv in (0, 1)]).astype(np.uint32)
        rids = np.concatenate([(layer * 2 + kv) * BLOCKS + table
                               for kv in (0, 1)]).astype(np.uint32)
        per_layer.append((lids, rids))
    reqs = []
    for layer, (lids, rids) in enumerate(per_layer):
        st, req = h.transfer_blocks_async(peer["name"], hixl.WRITE, local,
                                          lids, remote, rids)
        if not c.ok(st, "transfer_blocks_async layer %d" % layer):
            break
        reqs.append(req)
        c.ok(h.flush_layer(peer["name"], STREAM, 1, layer),
             "flush_layer %d" % layer)
    states = h.wait_transfers(reqs, timeout_ms=OP_MS)
    if any(s != hixl.TransferStatus.COMPLETED for s in states):
        c.fail("generation 1: %s" % [s.name for s in states])
    hear()   # the decode checked generation 1 and cleared its cache
    fill_request(words, 2)
    lids = np.concatenate([p[0] for p in per_layer])
    rids = np.concatenate([p[1] for p in per_layer])
    t0 = time.process_time()
    st, req = h.transfer_blocks_async(peer["name"], hixl.WRITE, local, lids,
                                      remote, rids)
    submit_ms = (time.process_time() - t0) * 1e3
    if c.ok(st, "transfer_blocks_async of %d blocks" % NUM):
        states = h.wait_transfers([req], timeout_ms=OP_MS)
        if states[0] != hixl.TransferStatus.COMPLETED:
            c.fail("generation 2: %s" % states[0].name)
    c.ok(h.flush_layer(peer["name"], STREAM, 2, 0), "flush_layer gen 2")
    # what must fail, and write nothing
    bad = rids.copy()
    bad[7] = NUM
    st, _ = h.transfer_blocks_async(peer["name"], hixl.WRITE, local, lids,
                                    remote, bad)
    if st != hixl.PARAM_INVALID or "position 7" not in hixl.last_error():
        c.fail("an id past the layout: %s, %r" % (hixl.strerror(st),
                                                  hixl.last_error()))
    for what, args in (("lists of unequal length", (lids[:3], rids[:4])),
                       ("negative ids", (np.array([-1]), np.array([0]))),
                       ("float ids", (np.array([0.5]), np.array([0])))):
        try:
            h.transfer_blocks_async(peer["name"], hixl.WRITE, local, args[0],
                                    remote, args[1])
            c.fail("%s: no exception" % what)
        except (TypeError, ValueError):
            pass
    hear()   # the decode checked generation 2
    c.ok(local.release(), "release(local)")
    st = local.release()
    if st == hixl.SUCCESS:
        c.fail("a second release succeeded")
    with remote:
        pass
    say({"done": True})
    del words   # a view of alloc_mem's memory must go before finalize
    h.finalize()
    say({"ok": not c.errors, "errors": c.errors,
         "submit_ms": round(submit_ms, 2)})


def run():
    verdicts = []
    for tls in ("tcp", "sm"):
        env = dict(os.environ, UCX_TLS=tls)
        procs = {}
        for role in ("decode", "prefill"):
            procs[role] = subprocess.Popen(
                [sys.executable, __file__, role], env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        d, p = procs["decode"], procs["prefill"]

        def relay(src, dst):
            line = src.stdout.readline()
            if not line:
                raise SystemExit("%s ended early" % tls)
            dst.stdin.write(line)
            dst.stdin.flush()
            return json.loads(line)

        try:
            relay(d, p)             # decode's name, cache and table
            relay(p, d)             # prefill's name
            relay(d, p)             # gen 1 checked
            relay(d, p)             # gen 2 checked
            relay(p, d)             # prefill done
            dv = json.loads(d.stdout.readline())
            pv = json.loads(p.stdout.readline())
        finally:
            for proc in procs.values():
                try:
                    proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
        for v in (dv, pv):
            verdicts.append((tls, v))
        print("%s: %d blocks of %d bytes, one request submitted in %s ms of "
              "CPU" % (tls, NUM, BLOCK, pv.get("submit_ms")))
    failed = [(tls, e) for tls, v in verdicts if not v["ok"]
              for e in v["errors"]]
    for tls, e in failed:
        print("FAIL [%s]: %s" % (tls, e))
    if not failed:
        print("PASS: %d-layer, %d-block requests by block table, every block "
              "checked, over tcp and sm" % (LAYERS, BLOCKS))
    return 1 if failed else 0


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "run"
    if role == "run":
        sys.exit(run())
    {"decode": decode, "prefill": prefill}[role]()
