# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch's prefill role: the prompt layer by layer, each layer's K
and V written block by block into decode's cache by (region, offset) of
its imported description and flushed while the next layer computes
(pipelined), after the whole prefill (bulk), or sent over a plain TCP
socket (staged)."""

import json
import socket
import time

from pd_torch_link import Notifies, ok, wait_req
from pd_torch_model import Shape, build_model, prefill_layer, prompt_tokens


def local_ip_towards(ip):
    """This host's address on the route to ip (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.connect((ip, 9))
        return u.getsockname()[0]


def prefill_role(args, torch, hixl):
    dec = args.decode
    dec_ip = dec.rsplit(":", 1)[0]
    engine = hixl.Hixl()
    ok(engine, engine.initialize(args.local or local_ip_towards(dec_ip)),
       "initialize")
    deadline = time.monotonic() + args.peer_wait_s
    while True:   # decode may still be starting: retry, bounded
        st = engine.connect(dec, args.timeout_ms)
        if st == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    ok(engine, st, "connect %s" % dec)
    notes = Notifies(hixl, engine)
    notes.send(dec, "pd.hello", "", args.timeout_ms)
    rmem = engine.import_mem(notes.wait("pd.memdesc",
                                        args.peer_wait_s).notify_msg_bytes)
    layout = json.loads(notes.wait("pd.layout", args.peer_wait_s).notify_msg)
    s = Shape(**layout["shape"])
    table = layout["block_table"]
    print("pd_torch prefill: decode %s: %d regions, %d layers, block table "
          "%s" % (rmem.engine, len(rmem), s.layers, table), flush=True)
    model = build_model(torch, s)
    prompt = prompt_tokens(torch, s)
    T = s.prefill_len
    # K and V of each layer as computed: [T, KVH, hd] contiguous, so token
    # block j is one piece of bytes; registered once, reused by every mode
    stage = [torch.zeros(T, s.kv_heads, s.head_dim) for _ in
             range(2 * s.layers)]
    handles = []
    for t in stage:
        st, h = engine.register_mem(t, hixl.MEM_HOST)
        ok(engine, st, "register_mem")
        handles.append(h)

    def layer_descs(l):
        """Writes of layer l's K and V, block by block, each addressed by
        (region, offset) in decode's description."""
        out = []
        for part in (0, 1):
            src = stage[2 * l + part]
            for j in range(0, T, s.block_size):
                n = min(s.block_size, T - j) * s.token_bytes
                out.append(hixl.TransferOpDesc(
                    src.data_ptr() + j * s.token_bytes,
                    rmem.addr(2 * l + part,
                              table[j // s.block_size] * s.block_bytes, n),
                    n))
        return out

    def send_layer(l, gen, reqs):
        """Post layer l's writes, then its layer flush (both return at
        once: the next layer computes while this one moves)."""
        st, req = engine.transfer_async(dec, hixl.WRITE, layer_descs(l))
        ok(engine, st, "transfer_async layer %d" % l)
        reqs.append(req)
        ok(engine, engine.flush_layer(dec, 0, gen, l), "flush_layer %d" % l)

    layer_bytes = 2 * T * s.token_bytes
    failed = 0
    for _ in layout["modes"]:
        ready = json.loads(notes.wait("pd.ready", args.peer_wait_s).notify_msg)
        mode, gen = ready["mode"], ready["generation"]
        reqs = []
        t0 = time.perf_counter()
        with torch.no_grad():
            x = model.embed(torch.tensor(prompt[:-1]))
            for l in range(s.layers):
                x, k, v = prefill_layer(torch, model, s, l, x)
                stage[2 * l].copy_(k)
                stage[2 * l + 1].copy_(v)
                if l == s.layers - 1:
                    # the end of prefill: the last layer's K and V exist
                    compute_s = time.perf_counter() - t0
                    t_end = time.time()
                if mode == "pipelined":
                    send_layer(l, gen, reqs)
        if mode == "bulk":
            for l in range(s.layers):
                send_layer(l, gen, reqs)
        elif mode == "staged":
            with socket.create_connection(
                    (dec_ip.strip("[]"), layout["staged_port"]),
                    timeout=args.timeout_ms / 1000) as c:
                for t in stage:
                    c.sendall(memoryview(t.numpy()).cast("B"))
        notes.send(dec, "pd.prefilled", json.dumps({
            "compute_s": compute_s, "t_end": t_end,
            "bytes": layer_bytes * s.layers}), args.timeout_ms)
        for i, req in enumerate(reqs):
            wait_req(engine, hixl, req, "%s transfer %d" % (mode, i),
                     args.timeout_ms / 1000)
        result = json.loads(notes.wait("pd.result",
                                       args.peer_wait_s).notify_msg)
        failed += not result["ok"]
        if not args.quiet:
            print("%-9s prefill compute %8.2f ms (%d layers, %d tokens), "
                  "%d bytes; decode: %s" % (
                      mode, compute_s * 1e3, s.layers, T,
                      layer_bytes * s.layers,
                      "matches the reference" if result["ok"] else
                      "MISMATCH"), flush=True)
    notes.send(dec, "pd.bye", "", args.timeout_ms)
    for h in handles:
        engine.deregister_mem(h)
    engine.disconnect(dec, args.timeout_ms)
    engine.finalize()
    return 1 if failed else 0
