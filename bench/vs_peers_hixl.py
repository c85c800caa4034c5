# SPDX-License-Identifier: BSD-3-Clause
"""bench/vs_peers: this library's side, through its Python binding
(hixl_ucx, ctypes over libhixl-ucx).

As the README and docs/python-and-engines.md recommend: memory from
alloc_mem (on one host UCX reaches it through shared memory), one
transfer_async per request, the engine's progress thread (the default),
layer-granular flush (flush_layer / wait_layer) for the layer pipeline, a
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
        self.h.initialize("127.0.0.1:0", {"hixl.ListenEphemeral": "1"})
        _, addr, self.handle = self.h.alloc_mem(arena_bytes, hixl.MEM_HOST)
        self.alloc = addr
        self.base = int(addr)
        self.arena = addr.numpy(np.uint8, (arena_bytes,))
        self.remote = None
        self.notes = []

    def info(self):
        return {"name": self.h.engine_name(), "base": self.base}

    def connect(self, info):
        self.remote = info["name"]
        self.h.connect(self.remote, timeout_in_millis=OP_MS)

    def learn_peers(self, infos):
        pass

    # ---- initiator --------------------------------------------------------

    def prepare(self, local, remote, lens):
        return (local, remote, lens)

    @staticmethod
    def _descs(plan, lidx, ridx):
        local, remote, lens = plan
        return list(zip(local[lidx].tolist(), remote[ridx].tolist(),
                        lens[lidx].tolist()))

    def post(self, op, plan, lidx, ridx, notify=None):
        args = None
        if notify is not None:
            args = hixl.TransferArgs(notify=hixl.NotifyDesc("vs", notify))
        _, req = self.h.transfer_async(
            self.remote, hixl.READ if op == "READ" else hixl.WRITE,
            self._descs(plan, lidx, ridx), args)
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
        local, remote, lens = plan
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
        if self.remote:
            self.h.disconnect(self.remote, OP_MS)
        del self.arena
        self.alloc = None
        self.h.deregister_mem(self.handle)
        self.h.finalize()
