/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The deterministic schedule of the layer-ordering stress test, computed
 * identically by the prefill and the decode process: which stream and
 * generation each use of a stream has, how big each layer is, how it is cut
 * into descriptors, and the byte pattern it carries.  Nothing here depends
 * on the library under test.
 */
#ifndef HIXL_TEST_LAYER_ORDER_PLAN_H_
#define HIXL_TEST_LAYER_ORDER_PLAN_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PLAN_MAX_PIECES 8
#define PLAN_MAX_LAYER  65536u   /* largest layer in bytes */
#define PLAN_MAX_SKEW   64u      /* layers start unaligned within a slot */

typedef struct plan {
    unsigned streams;            /* distinct stream ids */
    unsigned streams_in_flight;  /* uses interleaved layer by layer */
    unsigned uses;               /* stream uses in all (reuse included) */
    unsigned layers;             /* per use */
    size_t   slot;               /* bytes reserved per (stream, layer) */
} plan_t;

typedef struct layer_shape {
    size_t   size;
    size_t   skew;
    unsigned pieces;
    size_t   piece[PLAN_MAX_PIECES];
} layer_shape_t;

static inline void plan_init(plan_t *p)
{
    p->streams           = 8;
    p->streams_in_flight = 4;
    p->uses              = 96;   /* 12 generations of each stream */
    p->layers            = 24;   /* 23 layer signals + 1 transfer notify */
    p->slot              = PLAN_MAX_LAYER + PLAN_MAX_SKEW;
}

static inline unsigned plan_stream(const plan_t *p, unsigned use)
{
    return use % p->streams;
}

static inline uint64_t plan_gen(const plan_t *p, unsigned use)
{
    return use / p->streams + 1;
}

static inline size_t plan_region_size(const plan_t *p)
{
    return (size_t)p->streams * p->layers * p->slot;
}

static inline size_t plan_layer_offset(const plan_t *p, unsigned stream,
                                       unsigned layer)
{
    return ((size_t)stream * p->layers + layer) * p->slot;
}

static inline uint64_t plan_mix(uint64_t x)
{
    /* splitmix64 finalizer */
    x += 0x9e3779b97f4a7c15ull;
    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t plan_seed(unsigned stream, uint64_t gen, unsigned layer)
{
    return plan_mix(((uint64_t)stream << 48) ^ (gen << 16) ^ layer);
}

static inline void plan_layer_shape(const plan_t *p, unsigned stream,
                                    uint64_t gen, unsigned layer,
                                    layer_shape_t *s)
{
    uint64_t r = plan_seed(stream, gen, layer);
    size_t left, i;

    (void)p;
    /* mostly large layers, with the occasional tiny one */
    s->size   = (r & 7) ? 1 + plan_mix(r + 1) % PLAN_MAX_LAYER :
                          1 + plan_mix(r + 1) % 64;
    s->skew   = plan_mix(r + 2) % PLAN_MAX_SKEW;
    s->pieces = 1 + (unsigned)(plan_mix(r + 3) % PLAN_MAX_PIECES);
    if (s->pieces > s->size) {
        s->pieces = (unsigned)s->size;
    }
    left = s->size;
    for (i = 0; i + 1 < s->pieces; ++i) {
        /* each piece at least 1 byte, leaving 1 for every later piece */
        s->piece[i] = 1 + plan_mix(r + 4 + i) % (left - (s->pieces - i) + 1);
        left       -= s->piece[i];
    }
    s->piece[s->pieces - 1] = left;
}

static inline uint8_t pattern_byte(uint64_t seed, size_t i)
{
    return (uint8_t)(plan_mix(seed ^ (i >> 3)) >> (8 * (i & 7)));
}

static inline void pattern_fill(uint8_t *dst, size_t len, unsigned stream,
                                uint64_t gen, unsigned layer)
{
    uint64_t seed = plan_seed(stream, gen, layer);
    size_t i;

    for (i = 0; i < len; ++i) {
        dst[i] = pattern_byte(seed, i);
    }
}

/* Number of bytes that differ from the pattern. */
static inline size_t pattern_check(const uint8_t *src, size_t len,
                                   unsigned stream, uint64_t gen,
                                   unsigned layer)
{
    uint64_t seed = plan_seed(stream, gen, layer);
    size_t i, bad = 0;

    for (i = 0; i < len; ++i) {
        bad += (src[i] != pattern_byte(seed, i));
    }
    return bad;
}

#endif
