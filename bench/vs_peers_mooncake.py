# SPDX-License-Identifier: BSD-3-Clause
"""bench/vs_peers: Mooncake Transfer Engine's side (pip
mooncake-transfer-engine-non-cuda).

As its Python API documentation sets it up: TransferEngine.initialize
with local_hostname 127.0.0.1, metadata "P2PHANDSHAKE" (no etcd: the
segment name is host:rpc_port) and protocol "tcp"; host memory (numpy)
given to register_memory; a request is one batch (batch_transfer_async,
lists of local addresses, remote addresses and lengths), completed with
get_batch_transfer_status.  Its Python API attaches a notify only to the
synchronous calls (batch_transfer_sync(..., notify=TransferNotify)), the
notify leaving once the batch is complete, so the layer pipeline and
fan-in's "all my bytes landed" post each batch synchronously with its
notify; the decode polls get_notifies.  Latency uses transfer_sync_write
(one call, no batch of its own to poll).  The installed wheel has no
shared-memory transport (its "shm" protocol falls back to tcp), so the
orchestrator runs it over tcp only.  Knobs: GLOG_minloglevel=1 (its
per-batch INFO lines off); everything else its defaults.
"""

import time

import numpy as np

from mooncake.engine import TransferEngine, TransferNotify, TransferOpcode


class Engine:
    lib = "mooncake"

    def __init__(self, role, index, arena_bytes):
        self.e = TransferEngine()
        rc = self.e.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "")
        if rc != 0:
            raise RuntimeError("TransferEngine.initialize returned %d" % rc)
        self.arena = np.zeros(arena_bytes, np.uint8)
        self.base = self.arena.ctypes.data
        rc = self.e.register_memory(self.base, arena_bytes)
        if rc != 0:
            raise RuntimeError("register_memory returned %d" % rc)
        self.remote = None

    def info(self):
        return {"name": "127.0.0.1:%d" % self.e.get_rpc_port(),
                "base": self.base}

    def connect(self, info):
        self.remote = info["name"]
        # open the segment (the handshake) before anything is timed
        rc = self.e.transfer_sync_write(self.remote, self.base, info["base"],
                                        8)
        if rc != 0:
            raise RuntimeError("first write to %s returned %d" % (
                self.remote, rc))

    def learn_peers(self, infos):
        pass

    # ---- initiator --------------------------------------------------------

    def prepare(self, local, remote, lens, kind=None):
        return (local, remote, lens)

    def post(self, op, plan, lidx, ridx, notify=None):
        local, remote, lens = plan
        code = TransferOpcode.Read if op == "READ" else TransferOpcode.Write
        a = local[lidx].tolist()
        b = remote[ridx].tolist()
        n = lens[lidx].tolist()
        if notify is not None:
            rc = self.e.batch_transfer_sync(self.remote, a, b, n, code,
                                            TransferNotify("vs", notify))
            if rc != 0:
                raise RuntimeError("batch_transfer_sync returned %d" % rc)
            return None
        bid = self.e.batch_transfer_async(self.remote, a, b, n, code)
        if bid == 0:
            raise RuntimeError("batch_transfer_async failed")
        return bid

    def post_layer(self, plan, lidx, ridx, layer, gen):
        return self.post("WRITE", plan, lidx, ridx,
                         notify="L.%d.%d" % (gen, layer))

    def wait(self, handles):
        handles = [h for h in handles if h is not None]
        if handles:
            rc = self.e.get_batch_transfer_status(handles)
            if rc != 0:
                raise RuntimeError("get_batch_transfer_status returned %d" %
                                   rc)

    def sync(self, op, plan, i):
        local, remote, lens = plan
        fn = (self.e.transfer_sync_read if op == "READ" else
              self.e.transfer_sync_write)
        rc = fn(self.remote, int(local[i]), int(remote[i]), int(lens[i]))
        if rc != 0:
            raise RuntimeError("transfer_sync returned %d" % rc)

    # ---- target -----------------------------------------------------------

    def _notes(self, count, prefix, each=None):
        import vs_peers_worker as w
        times = []
        while len(times) < count:
            got = self.e.get_notifies()
            t = w.now()
            for n in got:
                if n.msg.startswith(prefix):
                    times.append((n.msg, t))
                    if each:
                        each(n.msg)
            if not got:
                time.sleep(0.0001)
        return times

    def wait_layers(self, peer, layers, gen, on_layer):
        prefix = "L.%d." % gen
        landed = {}
        for m, t in self._notes(
                layers, prefix,
                lambda m: on_layer(int(m.rsplit(".", 1)[1]))):
            landed[int(m.rsplit(".", 1)[1])] = t
        return [landed[layer] for layer in range(layers)]

    def wait_notifies(self, count, prefix):
        return [t for _, t in self._notes(count, prefix)]

    def close(self):
        self.e.unregister_memory(self.base)
