#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch: prefill -> decode of a real (small) transformer over hixl.

A decoder-only transformer (grouped-query attention, rotary positions,
RMSNorm, SwiGLU; weights from a fixed seed, nothing downloaded) is split
the way disaggregated serving splits it:

  decode   owns a paged KV cache (one torch tensor per layer for K and one
           for V, [blocks, block_size, kv_heads, head_dim] float32,
           registered with the `hixl` module's engine), exports their
           description (Hixl.export_mem) and sends it with its block table
           and the model's shape to prefill by notify;
  prefill  runs the prompt layer by layer; as each layer's K and V are
           computed it writes them block by block into decode's cache,
           addressed by (region, offset) through the imported description
           (Hixl.import_mem), and flushes that layer (flush_layer) while
           the next one is computed;
  decode   waits per layer (wait_layer) and runs its first token's forward
           pass layer by layer as the KV lands, then generates more tokens
           from its own cache.

Decode compares its tokens with a single-process reference generation
(same model, prompt and seed): token ids must be equal and the first
token's logits within --tolerance (max abs difference, float32), else it
exits non-zero.  Modes: pipelined (per layer, overlapped with compute),
bulk (every layer after the whole prefill) and staged (host copy over a
plain TCP socket, no hixl); each prints prefill compute time, the time
from the end of prefill to the first generated token at decode, and the
bytes moved.
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import time

USAGE_EXAMPLES = """\
roles:
  run      one host: forks decode and prefill (UCX_TLS=sm unless set)
  decode   --listen IP:PORT   owns the paged KV cache, runs generation
  prefill  --decode IP:PORT   runs the prompt, writes the KV into decode

examples:
  pd_torch run                                   # one host, every mode
  pd_torch run --layers 8 --dim 64 --prompt-len 40 --new-tokens 4
  # two hosts (UCX_TLS=tcp or rc; UCX_NET_DEVICES as for any UCX program):
  hostB$ pd_torch decode --listen 10.0.0.2:16000
  hostA$ pd_torch prefill --decode 10.0.0.2:16000

The model's shape, prompt, seed, modes and block size are decode's
options: prefill learns them from decode's layout notify.  The time from
the end of prefill to the first token compares the two hosts' wall
clocks: keep them synchronised (NTP/PTP) when measuring across machines.
Exit status: 0 when every mode matched the reference, 1 on a mismatch,
2 on an error (a transfer FAILED or TIMEOUT, a peer that went away), 77
without PyTorch.

Needs PyTorch (Debian: python3-torch; CPU only) and the `hixl` Python
package with libhixl-ucx: after make install it is found; from a source
tree set PYTHONPATH=<source>/python and
HIXL_UCX_LIB=<build>/src/.libs/libhixl-ucx.so.0.  Notifies are waited for
by polling every millisecond; layers with wait_layer.
"""

NOTIFY_POLL_S = 0.001


# ---- model -------------------------------------------------------------------

class Shape:
    """The model's and the cache's shape (decode's options, sent to
    prefill in the layout)."""

    KEYS = ("layers", "dim", "heads", "kv_heads", "ffn", "vocab", "seed",
            "prompt_len", "new_tokens", "block_size")

    def __init__(self, **kw):
        for k in self.KEYS:
            setattr(self, k, int(kw[k]))
        if self.dim % self.heads or self.heads % self.kv_heads:
            raise SystemExit("pd_torch: --dim must divide by --heads and "
                             "--heads by --kv-heads")
        self.head_dim = self.dim // self.heads
        # the last prompt token is decode's first step: prefill runs the rest
        self.prefill_len = self.prompt_len - 1
        self.max_len = self.prompt_len + self.new_tokens
        self.blocks_per_seq = -(-self.max_len // self.block_size)
        self.token_bytes = self.kv_heads * self.head_dim * 4
        self.block_bytes = self.block_size * self.token_bytes

    def as_dict(self):
        return {k: getattr(self, k) for k in self.KEYS}


def build_model(torch, s):
    """Weights from s.seed on the CPU, float32, eval mode."""
    nn = torch.nn
    torch.manual_seed(s.seed)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            hd = s.head_dim
            self.norm1 = nn.Parameter(torch.ones(s.dim))
            self.q = nn.Linear(s.dim, s.heads * hd, bias=False)
            self.k = nn.Linear(s.dim, s.kv_heads * hd, bias=False)
            self.v = nn.Linear(s.dim, s.kv_heads * hd, bias=False)
            self.o = nn.Linear(s.heads * hd, s.dim, bias=False)
            self.norm2 = nn.Parameter(torch.ones(s.dim))
            self.gate = nn.Linear(s.dim, s.ffn, bias=False)
            self.up = nn.Linear(s.dim, s.ffn, bias=False)
            self.down = nn.Linear(s.ffn, s.dim, bias=False)

    model = nn.Module()
    model.embed = nn.Embedding(s.vocab, s.dim)
    model.layers = nn.ModuleList([Layer() for _ in range(s.layers)])
    model.norm = nn.Parameter(torch.ones(s.dim))
    model.head = nn.Linear(s.dim, s.vocab, bias=False)
    inv = 1.0 / (10000 ** (torch.arange(0, s.head_dim, 2).float() /
                           s.head_dim))
    ang = torch.outer(torch.arange(s.max_len).float(), inv)
    model.rope = (torch.cos(ang), torch.sin(ang))
    model.eval()
    return model


def rms(torch, x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w


def rope(torch, model, x, pos):
    """Rotary positions on x [tokens, heads, head_dim] at positions pos."""
    cos, sin = model.rope[0][pos][:, None, :], model.rope[1][pos][:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos),
                       dim=-1).flatten(-2)


def attend(torch, s, q, k, v, causal):
    """q [T, H, hd] over k, v [S, KVH, hd]; grouped-query: each K/V head
    serves heads // kv_heads query heads."""
    rep = s.heads // s.kv_heads
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    att = torch.einsum("thd,shd->hts", q, k) / (s.head_dim ** 0.5)
    if causal:
        n = q.shape[0]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        att = att.masked_fill(mask, float("-inf"))
    return torch.einsum("hts,shd->thd", att.softmax(-1), v)


def ffn(torch, layer, x):
    return layer.down(torch.nn.functional.silu(layer.gate(x)) * layer.up(x))


def prefill_layer(torch, model, s, l, x):
    """Layer l over the prompt x [T, dim] -> (next x, K [T, KVH, hd], V)."""
    layer = model.layers[l]
    T = x.shape[0]
    pos = torch.arange(T)
    h = rms(torch, x, layer.norm1)
    q = rope(torch, model, layer.q(h).view(T, s.heads, s.head_dim), pos)
    k = rope(torch, model, layer.k(h).view(T, s.kv_heads, s.head_dim), pos)
    v = layer.v(h).view(T, s.kv_heads, s.head_dim)
    x = x + layer.o(attend(torch, s, q, k, v, True).reshape(T, s.dim))
    x = x + ffn(torch, layer, rms(torch, x, layer.norm2))
    return x, k, v


class PagedCache:
    """K and V of every layer in blocks of block_size tokens; a sequence's
    token t lives in block block_table[t // block_size]."""

    def __init__(self, torch, s, num_blocks, block_table):
        shape = (num_blocks, s.block_size, s.kv_heads, s.head_dim)
        self.k = [torch.zeros(shape) for _ in range(s.layers)]
        self.v = [torch.zeros(shape) for _ in range(s.layers)]
        self.table = list(block_table)
        self.s = s

    def tensors(self):
        """Region order of the exported description: K0, V0, K1, V1, ..."""
        out = []
        for k, v in zip(self.k, self.v):
            out += [k, v]
        return out

    def zero(self):
        for t in self.tensors():
            t.zero_()

    def put(self, l, t, k, v):
        b, i = self.table[t // self.s.block_size], t % self.s.block_size
        self.k[l][b, i], self.v[l][b, i] = k, v

    def get(self, torch, l, n):
        """K, V [n, KVH, hd] of tokens 0..n-1 of layer l (gathered)."""
        blocks = self.table[:-(-n // self.s.block_size)]
        k = self.k[l][blocks].reshape(-1, self.s.kv_heads, self.s.head_dim)
        v = self.v[l][blocks].reshape(-1, self.s.kv_heads, self.s.head_dim)
        return k[:n], v[:n]


def decode_step(torch, model, s, cache, token, t, before_layer=None):
    """One token at position t over cache tokens 0..t-1 -> logits; the
    token's own K, V go into the cache.  before_layer(l) runs before layer
    l reads the cache (decode waits there for the layer to land)."""
    x = model.embed(torch.tensor([token]))
    pos = torch.tensor([t])
    for l, layer in enumerate(model.layers):
        if before_layer is not None:
            before_layer(l)
        h = rms(torch, x, layer.norm1)
        q = rope(torch, model, layer.q(h).view(1, s.heads, s.head_dim), pos)
        k = rope(torch, model, layer.k(h).view(1, s.kv_heads, s.head_dim),
                 pos)
        v = layer.v(h).view(1, s.kv_heads, s.head_dim)
        cache.put(l, t, k[0], v[0])
        kk, vv = cache.get(torch, l, t + 1)
        x = x + layer.o(attend(torch, s, q, kk, vv, False).reshape(1, s.dim))
        x = x + ffn(torch, layer, rms(torch, x, layer.norm2))
    return model.head(rms(torch, x, model.norm))[0]


def generate(torch, model, s, cache, first_logits):
    """Greedy tokens: the first from first_logits, then new_tokens more."""
    tokens = [int(first_logits.argmax())]
    for i in range(s.new_tokens):
        logits = decode_step(torch, model, s, cache, tokens[-1],
                             s.prompt_len + i)
        tokens.append(int(logits.argmax()))
    return tokens


def prompt_tokens(torch, s):
    g = torch.Generator().manual_seed(s.seed + 1)
    return torch.randint(s.vocab, (s.prompt_len,), generator=g).tolist()


def reference(torch, model, s, block_table, num_blocks):
    """The single-process generation every mode must reproduce."""
    cache = PagedCache(torch, s, num_blocks, block_table)
    prompt = prompt_tokens(torch, s)
    x = model.embed(torch.tensor(prompt[:-1]))
    for l in range(s.layers):
        x, k, v = prefill_layer(torch, model, s, l, x)
        for t in range(s.prefill_len):
            cache.put(l, t, k[t], v[t])
    logits = decode_step(torch, model, s, cache, prompt[-1], s.prefill_len)
    return logits, generate(torch, model, s, cache, logits)


# ---- notifies ------------------------------------------------------------------

class Notifies:
    """Notifies by name.  Waiting polls with short sleeps in this one
    place, so that a blocking or event-driven wait can replace it."""

    def __init__(self, hixl, engine):
        self.hixl, self.engine, self.queue = hixl, engine, []

    def send(self, remote, name, msg, timeout_ms):
        ok(self.engine, self.engine.send_notify(
            remote, self.hixl.NotifyDesc(name, msg), timeout_ms),
            "send_notify %s" % name)

    def wait(self, name, timeout_s):
        deadline = time.monotonic() + timeout_s
        while True:
            for i, n in enumerate(self.queue):
                if n.name == name:
                    return self.queue.pop(i)
            st, got = self.engine.get_notifies()
            ok(self.engine, st, "get_notifies")
            self.queue += got
            if not got:
                if time.monotonic() > deadline:
                    raise PdError("no %s notify within %.0f s" % (name,
                                                                 timeout_s))
                time.sleep(NOTIFY_POLL_S)


class PdError(Exception):
    pass


def ok(engine, status, what):
    if status != 0:
        raise PdError("%s: status %d: %s" % (what, status,
                                             engine.last_error()))


def wait_req(engine, hixl, req, what, timeout_s):
    """Poll a transfer to its end; FAILED and TIMEOUT raise with the
    reason (the peer went away, a descriptor was refused...)."""
    deadline = time.monotonic() + timeout_s
    while True:
        st, ts = engine.get_transfer_status(req)
        ok(engine, st, what)
        if ts == hixl.TransferStatus.COMPLETED:
            return
        if ts != hixl.TransferStatus.WAITING:
            raise PdError("%s: %s: %s" % (what, ts.name, engine.last_error()))
        if time.monotonic() > deadline:
            raise PdError("%s: still waiting after %.0f s" % (what,
                                                              timeout_s))
        time.sleep(0.0002)


# ---- the staged copy (plain TCP) ---------------------------------------------

def recv_exact(sock, n):
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise PdError("staged: connection closed after %d of %d bytes" %
                          (got, n))
        got += k
    return buf


# ---- decode --------------------------------------------------------------------

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


# ---- prefill -------------------------------------------------------------------

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
                    st, req = engine.transfer_async(dec, hixl.WRITE,
                                                    layer_descs(l))
                    ok(engine, st, "transfer_async layer %d" % l)
                    reqs.append(req)
                    ok(engine, engine.flush_layer(dec, 0, gen, l),
                       "flush_layer %d" % l)
        if mode == "bulk":
            for l in range(s.layers):
                st, req = engine.transfer_async(dec, hixl.WRITE,
                                                layer_descs(l))
                ok(engine, st, "transfer_async layer %d" % l)
                reqs.append(req)
                ok(engine, engine.flush_layer(dec, 0, gen, l),
                   "flush_layer %d" % l)
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
    del rmem
    for h in handles:
        engine.deregister_mem(h)
    engine.disconnect(dec, args.timeout_ms)
    engine.finalize()
    return 1 if failed else 0


# ---- one host: both roles ------------------------------------------------------

def run_both(args, argv):
    env = dict(os.environ)
    env.setdefault("UCX_TLS", "sm")
    me = [sys.executable, os.path.abspath(__file__)]
    role_args = [a for a in argv if a != "run"]
    dec = subprocess.Popen(me + ["decode", "--listen", "127.0.0.1:0"] +
                           role_args, env=env, stdout=subprocess.PIPE,
                           text=True)
    procs = [dec]
    try:
        first = dec.stdout.readline()
        sys.stdout.write(first)
        if "listening on " not in first:
            print("pd_torch: decode did not start", file=sys.stderr)
            return 2
        name = first.split("listening on ")[1].strip()
        procs.append(subprocess.Popen(
            me + ["prefill", "--decode", name] +
            (["--quiet"] if args.quiet else []) +
            ["--threads", str(args.threads),
             "--timeout-ms", str(args.timeout_ms),
             "--peer-wait-s", str(args.peer_wait_s)], env=env))
        for line in dec.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
        # both roles bound their own waits; this only catches a hang
        limit = args.peer_wait_s + 60
        pre_rc = procs[1].wait(timeout=limit)
        dec_rc = dec.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        print("pd_torch: a role did not end in time", file=sys.stderr)
        return 2
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("pd_torch: decode exit %d, prefill exit %d" % (dec_rc, pre_rc))
    return max(dec_rc, pre_rc)


# ---- command line --------------------------------------------------------------

def parse(argv):
    p = argparse.ArgumentParser(
        prog="pd_torch", description=__doc__,
        epilog=USAGE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("role", choices=("run", "decode", "prefill"),
                   help="run: both on this host; decode / prefill: one role")
    p.add_argument("--listen", metavar="IP:PORT",
                   help="decode: the engine name to listen on")
    p.add_argument("--decode", metavar="IP:PORT",
                   help="prefill: decode's engine name")
    p.add_argument("--local", metavar="IP",
                   help="prefill: its own address (default: the one on the "
                   "route to decode)")
    g = p.add_argument_group("model and cache (decode's; prefill learns them)")
    g.add_argument("--layers", type=int, default=12)
    g.add_argument("--dim", type=int, default=256, help="model width")
    g.add_argument("--heads", type=int, default=8, help="query heads")
    g.add_argument("--kv-heads", type=int, default=2,
                   help="K/V heads (grouped-query attention)")
    g.add_argument("--ffn", type=int, default=768, help="SwiGLU width")
    g.add_argument("--vocab", type=int, default=512)
    g.add_argument("--seed", type=int, default=1234,
                   help="weights and prompt come from it")
    g.add_argument("--prompt-len", type=int, default=128)
    g.add_argument("--new-tokens", type=int, default=16,
                   help="tokens decode generates after the first")
    g.add_argument("--block-size", type=int, default=16,
                   help="tokens per KV cache block")
    g.add_argument("--modes", default="pipelined,bulk,staged",
                   help="comma-separated: pipelined, bulk, staged")
    g.add_argument("--tolerance", type=float, default=1e-4,
                   help="first-token logits: max abs difference allowed")
    g.add_argument("--threads", type=int, default=1,
                   help="torch threads per role (the reference runs alike)")
    p.add_argument("--timeout-ms", type=int, default=30000,
                   help="every hixl call and wait_layer")
    p.add_argument("--peer-wait-s", type=float, default=120,
                   help="how long to wait for the other role's notifies")
    p.add_argument("--quiet", action="store_true",
                   help="prefill: no per-mode lines")
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in ("pipelined", "bulk", "staged"):
            p.error("unknown mode %r" % m)
    if args.role == "decode" and not args.listen:
        p.error("decode needs --listen IP:PORT")
    if args.role == "prefill" and not args.decode:
        p.error("prefill needs --decode IP:PORT")
    if args.prompt_len < 2:
        p.error("--prompt-len must be at least 2")
    return args


def main(argv):
    args = parse(argv)
    if args.role == "run":
        return run_both(args, argv)
    try:
        import torch
    except ImportError:
        print("pd_torch: needs PyTorch (Debian: apt-get install "
              "python3-torch; pip: torch)", file=sys.stderr)
        return 77
    import hixl
    torch.set_num_threads(args.threads)
    try:
        if args.role == "decode":
            return decode_role(args, torch, hixl)
        return prefill_role(args, torch, hixl)
    except PdError as exc:
        print("pd_torch %s: %s" % (args.role, exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
