# SPDX-License-Identifier: BSD-3-Clause
"""One process of bench/vs_peers: a decode (target) or a prefill
(initiator) of one library, driven by the orchestrator over stdin/stdout,
one JSON object per line.

    vs_peers_worker.py LIB ROLE INDEX ARENA_BYTES

LIB is hixl, nixl or mooncake (the adapter module vs_peers_LIB.py beside
this file); ROLE is decode or prefill.  The process allocates and registers
one arena of ARENA_BYTES at start-up, the way its library recommends, and
every job uses offsets in it, so nothing is registered while a job is
timed.  Each job runs here the same way for every library; only the
adapter's calls differ.

Commands (orchestrator -> worker) and answers:
    {"cmd": "peer", "info": {...}}          prefill: connect to the decode
    {"cmd": "peers", "infos": [...]}        decode: the prefills' names
    {"cmd": "prepare", "job": {...}}        fill sources / clear targets
                                            -> {"ready": 1, ...}
    {"cmd": "go"}                           run the timed part -> results
    {"cmd": "verify"}                       decode: check what landed
    {"cmd": "quit"}
Every answer carries "errors": a list; a byte out of place is an error.
"""

import importlib
import json
import os
import sys
import time
import traceback

import numpy as np

KiB = 1024
MiB = 1024 * KiB
WORD = 8                    # the pattern's unit: one uint64
STREAM = 7                  # this library's layer-signal stream


def now():
    """CLOCK_MONOTONIC: one clock for every process on the host."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def pattern(seed, first_block, nblocks, block_bytes):
    """nblocks blocks of block_bytes whose every uint64 depends on the seed,
    the block's number and its position in the block: a block that lands
    in the wrong place, or stale bytes from an earlier run, do not match."""
    words = block_bytes // WORD
    blocks = np.arange(first_block, first_block + nblocks, dtype=np.uint64)
    base = (blocks * np.uint64(0x9E3779B97F4A7C15) +
            np.uint64((seed * 0xD1B54A32D192ED03) % (1 << 64)))
    out = base[:, None] + np.arange(words, dtype=np.uint64)[None, :]
    return out.view(np.uint8).reshape(nblocks, block_bytes)


def first_bad(got, want):
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    return int(bad[0]) if bad.size else -1


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def hear():
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(0)
    return json.loads(line)


class Job:
    """Where a job's bytes are, computed alike on both sides.

    kinds: p2p (size, total, op), kv (layers, blocks, block, seed),
    pipe (the same, layer by layer), fanin (nprefill, each, chunk),
    lat (size, iters)."""

    def __init__(self, spec):
        self.spec = spec
        self.kind = spec["kind"]
        self.seed = spec["seed"]
        self.op = spec.get("op", "WRITE")
        k = self.kind
        if k == "p2p":
            self.bsize = spec["size"]
            self.n = spec["total"] // self.bsize
        elif k in ("kv", "pipe"):
            self.layers = spec["layers"]
            self.bsize = spec["block"]
            self.per_half = spec["blocks"]
            self.n = self.layers * 2 * self.per_half
            rng = np.random.default_rng(self.seed)
            # decode's block table: request block j of layer-half h sits
            # in pool slot table[j] of that layer-half
            self.table = rng.permutation(self.per_half)
        elif k == "fanin":
            self.bsize = spec["chunk"]
            self.each = spec["each"] // self.bsize
            self.n = self.each
        elif k == "lat":
            self.bsize = spec["size"]
            self.n = spec["iters"]
        else:
            raise ValueError("unknown job kind %r" % k)

    def remote_slots(self, index=0):
        """Offsets in the decode arena of this prefill's descriptors, in
        request order."""
        if self.kind in ("kv", "pipe"):
            half = np.arange(self.layers * 2, dtype=np.int64)[:, None]
            slot = half * self.per_half + self.table[None, :]
            return (slot.reshape(-1) * self.bsize).astype(np.int64)
        if self.kind == "fanin":
            return ((index * self.each + np.arange(self.each, dtype=np.int64))
                    * self.bsize)
        return np.arange(self.n, dtype=np.int64) * self.bsize

    def local_slots(self):
        return np.arange(self.n, dtype=np.int64) * self.bsize

    def bytes_per_prefill(self):
        return self.n * self.bsize


class Worker:
    def __init__(self, lib, role, index, arena):
        mod = importlib.import_module("vs_peers_" + lib)
        self.role = role
        self.index = index
        self.eng = mod.Engine(role, index, arena)
        self.job = None
        self.plans = {}
        self.gen = 0
        self.peers = []

    # ---- helpers ----------------------------------------------------------

    def arena_blocks(self, offset, nblocks, bsize):
        a = self.eng.arena
        return a[offset:offset + nblocks * bsize].reshape(nblocks, bsize)

    def plan_for(self, job):
        """The library's prepared descriptor lists for this job: the local
        descriptors in request order and the decode's pool in pool order
        (made once per job shape, untimed, as NIXL's prepared lists are)."""
        key = (job.kind, job.bsize, job.n, self.index)
        if key not in self.plans:
            local = self.eng.base + job.local_slots()
            if job.kind in ("kv", "pipe"):
                pool = np.arange(job.n, dtype=np.int64) * job.bsize
            else:
                pool = job.remote_slots(self.index)
            remote = self.peer_base + pool
            lens = np.full(job.n, job.bsize, dtype=np.int64)
            self.plans[key] = self.eng.prepare(local, remote, lens, job.kind)
        return self.plans[key]

    def remote_index(self, job):
        """Which entries of the decode's prepared list each local
        descriptor goes to."""
        if job.kind in ("kv", "pipe"):
            return job.remote_slots() // job.bsize
        return np.arange(job.n, dtype=np.int64)

    # ---- commands ---------------------------------------------------------

    def cmd_peer(self, msg):
        self.peer_base = msg["info"]["base"]
        self.eng.connect(msg["info"])
        return {}

    def cmd_peers(self, msg):
        self.peers = msg["infos"]
        self.eng.learn_peers(self.peers)
        return {}

    def cmd_prepare(self, msg):
        job = self.job = Job(msg["job"])
        self.gen += 1
        out = {}
        if self.role == "prefill":
            self.plan_for(job)
            if job.op == "WRITE":
                src = pattern(job.seed + self.index, 0, job.n, job.bsize)
                self.arena_blocks(0, job.n, job.bsize)[:] = src
            else:
                self.arena_blocks(0, job.n, job.bsize)[:] = 0
        else:
            if job.kind == "pipe":
                # what the first and last block of each layer must hold
                per_layer = 2 * job.per_half
                slots = job.remote_slots()
                self.spot = [[(int(slots[j]), pattern(job.seed, j, 1,
                                                      job.bsize)[0])
                              for j in (layer * per_layer,
                                        (layer + 1) * per_layer - 1)]
                             for layer in range(job.layers)]
            total = job.n * job.bsize * (job.spec.get("nprefill", 1))
            if job.op == "WRITE":
                self.eng.arena[:total] = 0
            else:
                self.arena_blocks(0, job.n, job.bsize)[:] = \
                    pattern(job.seed, 0, job.n, job.bsize)
        out["ready"] = 1
        return out

    def cmd_go(self, msg):
        job = self.job
        if self.role == "decode":
            return self.decode_go(job)
        return getattr(self, "go_" + job.kind)(job)

    # ---- prefill side -----------------------------------------------------

    def go_p2p(self, job):
        plan = self.plan_for(job)
        ridx = self.remote_index(job)
        t0 = now()
        c0 = time.thread_time()
        handles = [self.eng.post(job.op, plan, [i], ridx[i:i + 1])
                   for i in range(job.n)]
        c1 = time.thread_time()
        self.eng.wait(handles)
        t1 = now()
        out = {"seconds": t1 - t0, "post_cpu": c1 - c0,
               "bytes": job.n * job.bsize}
        if job.op == "READ":
            out["errors"] = self.check_read(job)
        return out

    def check_read(self, job):
        want = pattern(job.seed, 0, job.n, job.bsize)
        got = self.arena_blocks(0, job.n, job.bsize)
        bad = first_bad(got, want)
        return [] if bad < 0 else ["READ: byte %d of %d read wrong" %
                                   (bad, got.size)]

    def go_kv(self, job):
        plan = self.plan_for(job)
        lidx = np.arange(job.n, dtype=np.int64)
        ridx = self.remote_index(job)
        t0 = now()
        c0 = time.thread_time()
        h = self.eng.post("WRITE", plan, lidx, ridx)
        c1 = time.thread_time()
        t1 = now()
        self.eng.wait([h])
        t2 = now()
        return {"submit_cpu": c1 - c0, "submit_wall": t1 - t0,
                "complete": t2 - t0, "descs": job.n,
                "bytes": job.n * job.bsize}

    def go_pipe(self, job):
        plan = self.plan_for(job)
        ridx = self.remote_index(job)
        per_layer = 2 * job.per_half
        posts = []
        handles = []
        gap = job.spec.get("gap_ms", 0) / 1e3
        t0 = now()
        for layer in range(job.layers):
            sel = np.arange(layer * per_layer, (layer + 1) * per_layer,
                            dtype=np.int64)
            # paced: layer k's post starts at t0 + k * gap (the prefill
            # computed it meanwhile), or at once when the posts before it
            # took longer than that
            wait = t0 + layer * gap - now()
            if wait > 0:
                time.sleep(wait)
            posts.append(now())
            handles.append(self.eng.post_layer(plan, sel, ridx[sel], layer,
                                               self.gen))
        self.eng.wait([h for h in handles if h is not None])
        t1 = now()
        return {"posts": posts, "t0": t0, "local_done": t1 - t0}

    def go_fanin(self, job):
        plan = self.plan_for(job)
        lidx = np.arange(job.n, dtype=np.int64)
        t0 = now()
        h = self.eng.post("WRITE", plan, lidx, self.remote_index(job),
                          notify="done.%d.%d" % (self.gen, self.index))
        self.eng.wait([h] if h is not None else [])
        t1 = now()
        return {"t0": t0, "t1": t1, "bytes": job.n * job.bsize}

    def go_lat(self, job):
        plan = self.plan_for(job)
        times = np.empty(job.n)
        for i in range(job.n):
            t = now()
            self.eng.sync(job.op, plan, i)
            times[i] = now() - t
        return {"times_us": (times * 1e6).tolist()}

    # ---- decode side ------------------------------------------------------

    def decode_go(self, job):
        if job.kind == "pipe":
            # each layer is checked (its first and last block) the moment
            # the decode learns it landed; all of it in verify
            c0 = time.process_time()
            errors = []
            landed = self.eng.wait_layers(
                self.peers[0], job.layers, self.gen,
                lambda layer: self.spot_check(job, layer, errors))
            return {"landed": landed, "cpu": time.process_time() - c0,
                    "errors": errors}
        if job.kind == "fanin":
            n = job.spec["nprefill"]
            c0 = time.process_time()
            t0 = now()
            times = self.eng.wait_notifies(n, "done.%d." % self.gen)
            return {"cpu": time.process_time() - c0, "t0": t0,
                    "last": max(times)}
        return {}

    def spot_check(self, job, layer, errors):
        for j, want in self.spot[layer]:
            got = self.eng.arena[j:j + job.bsize]
            if first_bad(got, want) >= 0:
                errors.append("layer %d: a block was not there when the "
                              "layer was reported landed" % layer)

    def cmd_verify(self, msg):
        job = self.job
        errors = []
        if self.role != "decode" or job.op != "WRITE":
            return {"errors": errors}
        pool_blocks = job.n * job.spec.get("nprefill", 1)
        pool = self.arena_blocks(0, pool_blocks, job.bsize)
        for p in range(job.spec.get("nprefill", 1)):
            want = pattern(job.seed + p, 0, job.n, job.bsize)
            slots = job.remote_slots(p) // job.bsize
            got = pool[slots]
            bad = first_bad(got, want)
            if bad >= 0:
                blk = bad // job.bsize
                errors.append("%s: prefill %d block %d (pool slot %d) byte "
                              "%d wrong" % (job.kind, p, blk, slots[blk],
                                            bad % job.bsize))
        return {"errors": errors}


def main():
    lib, role, index, arena = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4])
    try:
        w = Worker(lib, role, index, arena)
        say({"info": w.eng.info(), "errors": []})
    except Exception as exc:   # said to the orchestrator, which reports it
        say({"fatal": "%s: %s" % (type(exc).__name__, exc),
             "trace": traceback.format_exc()})
        return 1
    while True:
        msg = hear()
        if msg["cmd"] == "quit":
            w.eng.close()
            say({"bye": 1, "errors": []})
            return 0
        try:
            out = getattr(w, "cmd_" + msg["cmd"])(msg)
            out.setdefault("errors", [])
        except Exception as exc:
            out = {"errors": ["%s %s: %s: %s" % (lib, role, type(exc).__name__,
                                                 exc)],
                   "trace": traceback.format_exc()}
        say(out)


if __name__ == "__main__":
    sys.exit(main())
