# SPDX-License-Identifier: BSD-3-Clause
"""bench/vs_peers: this library's side, through its Python binding
(hixl_ucx, ctypes over libhixl-ucx).

As the README and docs/python-and-engines.md recommend: memory from
alloc_mem (on one host UCX reaches it through shared memory), one
transfer_async per request, for the paged KV cache (the kv and pipe jobs)
transfers by block table (both sides' block layouts prepared once per job
shape with prepare_blocks, untimed, as NIXL's lists are with
prep_xfer_dlist; a request is transfer_blocks_async with two numpy id
arrays), the engine's progress thread (the default) and its copier thread
for same-host copies (hixl.AsyncCopy=thread: the submit returns at once),
layer-granular flush (flush_layer / wait_layer) for the layer pipeline,
mem_warm_wait after connecting (untimed: page tables of the decode's
memory mapped here, filled in the background), a
transfer's own notify for "all of my bytes are there", and the blocking
waits (wait_transfers, wait_notifies), which sleep in the library.  Over
tcp the orchestrator sets UCX_TCP_TX_SEG_SIZE=64k UCX_TCP_RX_SEG_SIZE=64k
(README, "Two machines").
"""

import numpy as np

import hixl_ucx as hixl

OP_MS = 120000


class Engine:
    lib = "hixl"

    def __init__(self, role, index, arena_bytes):
        self.h = hixl.Hixl(raise_on_error=True)
        # every engine listens on a port of its own: client-only engines
        # of one host share the name "127.0.0.1", and the decode takes one
        # connection per name
        # and same-host copies on the engine's copier thread, as an
        # engine whose prefill computes while its requests move sets it
        # (docs/configuration.md, hixl.AsyncCopy): a request's submit
        # returns at once, as the peers' do
        self.h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1",
                                          "hixl.AsyncCopy": "thread"})
        _, addr, self.handle = self.h.alloc_mem(arena_bytes, hixl.MEM_HOST)
        self.alloc = addr
        self.base = int(addr)
        self.arena = addr.numpy(np.uint8, (arena_bytes,))
        self.remote = None
        self.notes = []
        self.blocks = []

    def info(self):
        return {"name": self.h.engine_name(), "base": self.base}

    def connect(self, info):
        self.remote = info["name"]
        self.h.connect(self.remote, timeout_in_millis=OP_MS)
        # the decode's memory mapped here (sm) gets its page tables in the
        # background after the connect; before timing, as the README says
        # an engine that wants its first request at full speed does
        self.h.mem_warm_wait(OP_MS)

    def learn_peers(self, infos):
        self.h.mem_warm_wait(OP_MS)   # alloc_mem's pages written once

    # ---- initiator --------------------------------------------------------

    def _layout(self, addrs, bsize, remote):
        """prepare_blocks for blocks of bsize at addrs: by stride when
        they are back to back, else by offsets from the lowest."""
        base = int(addrs.min())
        offs = addrs - base
        regular = bool((offs == np.arange(addrs.size, dtype=np.int64)
                        * bsize).all())
        _, blocks = self.h.prepare_blocks(
            base, bsize, int(addrs.size),
            offsets=None if regular else offs.astype(np.uint64),
            remote_engine=self.remote if remote else None)
        self.blocks.append(blocks)
        return blocks

    def prepare(self, local, remote, lens, kind=None):
        if kind in ("kv", "pipe"):
            bsize = int(lens[0])
            assert (lens == bsize).all()
            return ("blocks", self._layout(local, bsize, False),
                    self._layout(remote, bsize, True))
        return ("descs", local, remote, lens)

    @staticmethod
    def _descs(plan, lidx, ridx):
        _, local, remote, lens = plan
        return list(zip(local[lidx].tolist(), remote[ridx].tolist(),
                        lens[lidx].tolist()))

    def post(self, op, plan, lidx, ridx, notify=None):
        args = None
        if notify is not None:
            args = hixl.TransferArgs(notify=hixl.NotifyDesc("vs", notify))
        top = hixl.READ if op == "READ" else hixl.WRITE
        if plan[0] == "blocks":
            _, req = self.h.transfer_blocks_async(
                self.remote, top, plan[1], lidx, plan[2], ridx, args)
        else:
            _, req = self.h.transfer_async(
                self.remote, top, self._descs(plan, lidx, ridx), args)
        return req

    def post_layer(self, plan, lidx, ridx, layer, gen):
        req = self.post("WRITE", plan, lidx, ridx)
        self.h.flush_layer(self.remote, 7, gen, layer)
        return req

    def wait(self, handles):
        if not handles:
            return
        for i, st in enumerate(self.h.wait_transfers(handles, hixl.WAIT_ALL,
                                                     OP_MS)):
            if st != hixl.TransferStatus.COMPLETED:
                raise RuntimeError("transfer %d ended %s: %s" % (
                    i, st.name, hixl.last_error()))

    def sync(self, op, plan, i):
        _, local, remote, lens = plan
        self.h.transfer_sync(self.remote,
                             hixl.READ if op == "READ" else hixl.WRITE,
                             [(int(local[i]), int(remote[i]), int(lens[i]))],
                             OP_MS)

    # ---- target -----------------------------------------------------------

    def wait_layers(self, peer, layers, gen, on_layer):
        import vs_peers_worker as w
        landed = []
        for layer in range(layers):
            self.h.wait_layer(peer["name"], 7, gen, layer, OP_MS)
            landed.append(w.now())
            on_layer(layer)
        return landed

    def wait_notifies(self, count, prefix):
        import vs_peers_worker as w
        times = []
        while len(times) < count:
            for n in self.h.wait_notifies(OP_MS):
                if n.notify_msg.startswith(prefix):
                    times.append(w.now())
        return times

    def close(self):
        for b in self.blocks:
            b.release()
        if self.remote:
            self.h.disconnect(self.remote, OP_MS)
        del self.arena
        self.alloc = None
        self.h.deregister_mem(self.handle)
        self.h.finalize()
