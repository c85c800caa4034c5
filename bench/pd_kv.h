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

#include "common/pattern.h"

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

/* The pattern seed of one block (bench/common's pattern): it depends on
 * (run, layer, block), so a block landing in the wrong slot or left from
 * another run is caught too. */
static inline uint64_t pd_block_seed(uint64_t run, unsigned layer,
                                     size_t block)
{
    return bc_pattern_seed((run << 40) ^ ((uint64_t)layer << 24) ^ block);
}

#endif
