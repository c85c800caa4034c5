# SPDX-License-Identifier: BSD-3-Clause
"""bench/vs_peers: NIXL's side (pip "nixl[cu12]", its own UCX).

As NIXL's documentation and its vLLM connector use it: one agent per
process with the UCX backend and NIXL's progress thread (the defaults of
nixl_agent_config), host memory (numpy) registered as DRAM, the peer's
metadata loaded with add_remote_agent, descriptor lists prepared once per
shape (prep_xfer_dlist, the decode's whole pool on the remote side) and
each request made from indices (make_prepped_xfer) and posted (transfer),
completion polled with check_xfer_state, and a notification (notif_msg)
with a transfer for "these bytes landed".  Knobs: UCX_TLS from the
orchestrator; the UCX backend's ucx_error_handling_mode=none when
UCX_TLS=sm (its default, peer, needs a transport that detects peer
failure, which shared memory has not: NIXL's backend then fails to start);
NIXL_LOG_LEVEL=WARN.
"""

import os
import time

import numpy as np

from nixl._api import nixl_agent, nixl_agent_config


class Engine:
    lib = "nixl"

    def __init__(self, role, index, arena_bytes):
        self.name = "decode" if role == "decode" else "prefill%d" % index
        # the progress thread (NIXL's default) is needed: without it a
        # decode that makes no NIXL call never progresses, and tcp puts
        # into it stall
        self.agent = nixl_agent(self.name, nixl_agent_config(backends=[]))
        params = {}
        if os.environ.get("UCX_TLS", "") == "sm":
            params["ucx_error_handling_mode"] = "none"
        self.agent.create_backend("UCX", params)
        self.arena = np.zeros(arena_bytes, np.uint8)
        self.base = self.arena.ctypes.data
        self.reg = self.agent.register_memory(
            [(self.base, arena_bytes, 0, "")], "DRAM")
        self.remote = None
        self.pending = {}

    def info(self):
        return {"name": self.name, "base": self.base,
                "meta": self.agent.get_agent_metadata().hex()}

    def connect(self, info):
        self.remote = self.agent.add_remote_agent(bytes.fromhex(info["meta"]))
        self.agent.make_connection(self.remote)

    def learn_peers(self, infos):
        pass

    # ---- initiator --------------------------------------------------------

    def prepare(self, local, remote, lens, kind=None):
        zeros = np.zeros(len(lens), dtype=np.int64)
        lh = self.agent.prep_xfer_dlist(
            "NIXL_INIT_AGENT", np.stack([local, lens, zeros], axis=1), "DRAM")
        rh = self.agent.prep_xfer_dlist(
            self.remote, np.stack([remote, lens, zeros], axis=1), "DRAM")
        return (lh, rh)

    def post(self, op, plan, lidx, ridx, notify=None):
        lh, rh = plan
        h = self.agent.make_prepped_xfer(
            op, lh, np.asarray(lidx, dtype=np.int32), rh,
            np.asarray(ridx, dtype=np.int32),
            notify.encode() if notify else b"")
        if self.agent.transfer(h) == "ERR":
            raise RuntimeError("NIXL transfer failed to post")
        return h

    def post_layer(self, plan, lidx, ridx, layer, gen):
        return self.post("WRITE", plan, lidx, ridx,
                         notify="L.%d.%d" % (gen, layer))

    def wait(self, handles):
        for h in handles:
            while True:
                st = self.agent.check_xfer_state(h)
                if st == "DONE":
                    break
                if st == "ERR":
                    raise RuntimeError("NIXL transfer ended in error")
            self.agent.release_xfer_handle(h)

    def sync(self, op, plan, i):
        self.wait([self.post(op, plan, [i], [i])])

    # ---- target -----------------------------------------------------------

    def _notes(self, count, prefix, each=None):
        import vs_peers_worker as w
        times = []
        while len(times) < count:
            got = self.agent.get_new_notifs()
            t = w.now()
            fresh = [m.decode() for msgs in got.values() for m in msgs]
            for m in fresh:
                if m.startswith(prefix):
                    times.append((m, t))
            if not fresh:
                time.sleep(0.0001)
            elif each:
                each(fresh)
        return times

    def wait_layers(self, peer, layers, gen, on_layer):
        prefix = "L.%d." % gen
        landed = {}

        def seen(msgs):
            for m in msgs:
                if m.startswith(prefix):
                    on_layer(int(m.rsplit(".", 1)[1]))
        for m, t in self._notes(layers, prefix, seen):
            landed[int(m.rsplit(".", 1)[1])] = t
        return [landed[layer] for layer in range(layers)]

    def wait_notifies(self, count, prefix):
        return [t for _, t in self._notes(count, prefix)]

    def close(self):
        if self.remote:
            self.agent.remove_remote_agent(self.remote)
        self.agent.deregister_memory(self.reg)
