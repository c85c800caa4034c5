/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * KV-cache shape, paged layout and byte pattern shared by the prefill and
 * decode sides of bench/pd_pipeline.
 *
 * A layer holds K and V for every token: 2 x kv_heads x head_dim x seq_len x
 * dtype_bytes.  It is cut into blocks of block_tokens tokens (K and V blocks
 * alike), as paged-attention caches are.  Prefill keeps a layer's blocks in
 * order; decode places them at slots of its own block table (a fixed
 * permutation), so one layer is one transfer of many descriptors.
 */
#ifndef HIXL_BENCH_PD_KV_H_
#define HIXL_BENCH_PD_KV_H_

#include <stddef.h>
#include <stdint.h>

typedef struct pd_shape {
    unsigned layers;
    unsigned kv_heads;
    unsigned head_dim;
    unsigned seq_len;
    unsigned dtype_bytes;
    unsigned block_tokens;
} pd_shape_t;

static inline size_t pd_block_bytes(const pd_shape_t *s)
{
    return (size_t)s->kv_heads * s->head_dim * s->block_tokens *
           s->dtype_bytes;
}

/* K blocks then V blocks */
static inline size_t pd_blocks_per_layer(const pd_shape_t *s)
{
    return 2 * (size_t)((s->seq_len + s->block_tokens - 1) / s->block_tokens);
}

static inline size_t pd_layer_bytes(const pd_shape_t *s)
{
    return pd_blocks_per_layer(s) * pd_block_bytes(s);
}

static inline size_t pd_cache_bytes(const pd_shape_t *s)
{
    return pd_layer_bytes(s) * s->layers;
}

static inline size_t pd_gcd(size_t a, size_t b)
{
    while (b != 0) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Decode's block slot for prefill's block b of a layer (n blocks): a stride
 * coprime to n makes b -> b * stride + 7 (mod n) a permutation that
 * scatters neighbours, like a real block table. */
static inline size_t pd_slot(size_t b, size_t n)
{
    size_t stride = (n / 2) | 1;

    while (pd_gcd(stride, n) != 1) {
        stride += 2;
    }
    return (b * stride + 7) % n;
}

static inline uint64_t pd_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Fill / check one block; the pattern depends on (run, layer, block) so a
 * block landing in the wrong slot or from another run is caught too.
 * Word-wise: these touch gigabytes. */
static inline void pd_fill_block(uint8_t *dst, size_t len, uint64_t run,
                                 unsigned layer, size_t block)
{
    uint64_t seed = pd_mix((run << 40) ^ ((uint64_t)layer << 24) ^ block);
    uint64_t *w   = (uint64_t*)dst;
    size_t i;

    for (i = 0; i < len / 8; ++i) {
        w[i] = seed ^ (i * 0xd6e8feb86659fd93ull);
    }
    for (i = len & ~(size_t)7; i < len; ++i) {
        dst[i] = (uint8_t)(seed >> (i & 7));
    }
}

static inline size_t pd_check_block(const uint8_t *src, size_t len,
                                    uint64_t run, unsigned layer, size_t block)
{
    uint64_t seed    = pd_mix((run << 40) ^ ((uint64_t)layer << 24) ^ block);
    const uint64_t *w = (const uint64_t*)src;
    size_t i, bad = 0;

    uint64_t diff;
    unsigned k;

    for (i = 0; i < len / 8; ++i) {
        diff = w[i] ^ (seed ^ (i * 0xd6e8feb86659fd93ull));
        for (k = 0; diff && (k < 8); ++k) {   /* count bytes, not words */
            bad  += ((diff & 0xff) != 0);
            diff >>= 8;
        }
    }
    for (i = len & ~(size_t)7; i < len; ++i) {
        bad += (src[i] != (uint8_t)(seed >> (i & 7)));
    }
    return bad;
}

#endif
