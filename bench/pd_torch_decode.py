# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch's decode role: the paged KV cache, its description and
layout sent to prefill, the first token computed layer by layer as the KV
lands (wait_layer), then generation and the comparison with the
reference."""

import json
import socket
import time

from pd_torch_link import Notifies, ok, recv_exact
from pd_torch_model import (PagedCache, Shape, build_model, decode_step,
                            generate, prompt_tokens, reference)


def decode_role(args, torch, hixl):
    s = Shape(**{k: getattr(args, k) for k in Shape.KEYS})
    model = build_model(torch, s)
    # a request's blocks are scattered over the pool, as a paged allocator
    # leaves them: the block table is what prefill must follow
    num_blocks = s.blocks_per_seq * 2
    g = torch.Generator().manual_seed(s.seed + 2)
    table = torch.randperm(num_blocks, generator=g)[:s.blocks_per_seq]
    table = table.tolist()
    with torch.no_grad():
        ref_logits, ref_tokens = reference(torch, model, s, table, num_blocks)
    cache = PagedCache(torch, s, num_blocks, table)

    engine = hixl.Hixl()
    options = {"hixl.ListenEphemeral": "1"} if args.listen.endswith(":0") \
        else {}
    ok(engine, engine.initialize(args.listen, options), "initialize")
    handles = []
    for t in cache.tensors():
        st, h = engine.register_mem(t, hixl.MEM_HOST)
        ok(engine, st, "register_mem")
        handles.append(h)
    desc = engine.export_mem(handles)
    print("pd_torch decode: listening on %s" % engine.engine_name(),
          flush=True)
    print("pd_torch decode: model %d layers, dim %d, %d heads / %d KV heads, "
          "%.2fM parameters; KV cache %d blocks x %d tokens, %d regions" % (
              s.layers, s.dim, s.heads, s.kv_heads,
              sum(p.numel() for p in model.parameters()) / 1e6, num_blocks,
              s.block_size, len(handles)), flush=True)
    notes = Notifies(hixl, engine)
    hello = notes.wait("pd.hello", args.peer_wait_s)
    prefill = hello.remote
    staged = socket.socket()
    staged.bind((args.listen.rsplit(":", 1)[0].strip("[]"), 0))
    staged.listen(1)
    layout = {"shape": s.as_dict(), "block_table": table,
              "regions": "K of layer l is region 2l, V region 2l+1",
              "block_bytes": s.block_bytes, "token_bytes": s.token_bytes,
              "modes": args.modes, "staged_port": staged.getsockname()[1],
              "stream": 0}
    notes.send(prefill, "pd.memdesc", desc, args.timeout_ms)
    notes.send(prefill, "pd.layout", json.dumps(layout), args.timeout_ms)
    prompt = prompt_tokens(torch, s)
    failed = 0
    for gen, mode in enumerate(args.modes, 1):
        cache.zero()   # a mode that moved nothing cannot pass on old bytes
        notes.send(prefill, "pd.ready", json.dumps({"mode": mode,
                                                    "generation": gen}),
                   args.timeout_ms)
        if mode == "staged":
            conn, _ = staged.accept()
            conn.settimeout(args.timeout_ms / 1000)
            with conn:
                for l in range(s.layers):
                    for part in (cache.k[l], cache.v[l]):
                        data = recv_exact(conn, s.prefill_len * s.token_bytes)
                        src = torch.frombuffer(data, dtype=torch.float32)
                        src = src.view(s.prefill_len, s.kv_heads, s.head_dim)
                        for t in range(0, s.prefill_len, s.block_size):
                            n = min(s.block_size, s.prefill_len - t)
                            part[table[t // s.block_size], :n] = src[t:t + n]

            def wait(l):
                pass
        else:
            def wait(l, gen=gen):
                ok(engine, engine.wait_layer(prefill, 0, gen, l,
                                             args.timeout_ms),
                   "wait_layer %d" % l)
        with torch.no_grad():
            logits = decode_step(torch, model, s, cache, prompt[-1],
                                 s.prefill_len, wait)
            t_first = time.time()
            tokens = generate(torch, model, s, cache, logits)
        done = json.loads(notes.wait("pd.prefilled",
                                     args.peer_wait_s).notify_msg)
        diff = float((logits - ref_logits).abs().max())
        good = tokens == ref_tokens and diff <= args.tolerance
        failed += not good
        print("%-9s prefill compute %8.2f ms, end of prefill -> first token "
              "%8.2f ms, %9d bytes moved; %d tokens %s reference, first "
              "logits max abs diff %.1e (<= %.0e): %s" % (
                  mode, done["compute_s"] * 1e3,
                  (t_first - done["t_end"]) * 1e3, done["bytes"],
                  len(tokens), "equal" if tokens == ref_tokens else
                  "DIFFER from", diff, args.tolerance,
                  "ok" if good else "MISMATCH"), flush=True)
        if tokens != ref_tokens:
            print("  decode:    %s\n  reference: %s" % (tokens, ref_tokens))
        notes.send(prefill, "pd.result", json.dumps({"mode": mode,
                                                     "ok": good}),
                   args.timeout_ms)
    notes.wait("pd.bye", args.peer_wait_s)
    staged.close()
    for h in handles:
        engine.deregister_mem(h)
    engine.finalize()
    print("pd_torch decode: %d mode(s), %d matched the reference" % (
        len(args.modes), len(args.modes) - failed))
    return 1 if failed else 0
