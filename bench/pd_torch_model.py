# SPDX-License-Identifier: BSD-3-Clause
"""pd_torch's model: a small decoder-only transformer (grouped-query
attention, rotary positions, RMSNorm, SwiGLU; weights from a seed), its
paged KV cache, the forward passes prefill and decode run, and the
single-process reference generation both roles must reproduce.  torch is
passed in, so that importing this costs nothing where it is missing."""

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
