/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: the byte patterns and the guard, and what every write is (both
 * sides compute it from the seed).
 */
#include "soak.h"

/* ---- patterns -------------------------------------------------------------- */

uint64_t rnd(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix(*state);
}

void pat_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t idx)
{
    uint64_t s = mix(seed), w;
    size_t k = 0;
    unsigned b;

    while ((k < len) && ((idx + k) & 7)) {
        w = pat_word(s, (idx + k) >> 3);
        p[k] = (uint8_t)(w >> (8 * ((idx + k) & 7)));
        ++k;
    }
    for (; k + 8 <= len; k += 8) {
        w = pat_word(s, (idx + k) >> 3);
        memcpy(p + k, &w, 8);   /* little-endian: byte b is bits 8b.. */
    }
    if (k < len) {
        w = pat_word(s, (idx + k) >> 3);
        for (b = 0; k < len; ++b, ++k) {
            p[k] = (uint8_t)(w >> (8 * b));
        }
    }
}

size_t pat_check(const uint8_t *p, size_t len, uint64_t seed,
                        uint64_t idx, size_t *first)
{
    uint64_t s = mix(seed), w, got;
    size_t k = 0, bad = 0;
    unsigned b;

    *first = len;
    while (k < len) {
        if ((((idx + k) & 7) == 0) && (k + 8 <= len)) {
            w = pat_word(s, (idx + k) >> 3);
            memcpy(&got, p + k, 8);
            if (got == w) {
                k += 8;
                continue;
            }
            for (b = 0; b < 8; ++b) {
                if (p[k + b] != (uint8_t)(w >> (8 * b))) {
                    if (bad++ == 0) {
                        *first = k + b;
                    }
                }
            }
            k += 8;
            continue;
        }
        w = pat_word(s, (idx + k) >> 3);
        if (p[k] != (uint8_t)(w >> (8 * ((idx + k) & 7)))) {
            if (bad++ == 0) {
                *first = k;
            }
        }
        ++k;
    }
    return bad;
}

size_t guard_check(const uint8_t *p, size_t len, size_t *first)
{
    const uint64_t gw = 0x0101010101010101ull * GUARD;
    size_t k = 0, bad = 0;
    uint64_t w;

    *first = len;
    while (k < len) {
        if ((((uintptr_t)(p + k) & 7) == 0) && (k + 8 <= len)) {
            memcpy(&w, p + k, 8);
            if (w == gw) {
                k += 8;
                continue;
            }
        }
        if (p[k] != GUARD) {
            if (bad++ == 0) {
                *first = k;
            }
        }
        ++k;
    }
    return bad;
}

/* ---- what every write is (both sides compute it) ------------------------- */

void plan_write(unsigned s, unsigned r, uint64_t q, plan_t *p)
{
    uint64_t base = mix(g_cfg.seed ^ ((uint64_t)s << 56) ^ ((uint64_t)r << 48));
    uint64_t x = mix(base ^ mix(q ^ 0x706c616eull)), y = mix(x);
    unsigned cls = (unsigned)(x % 16), bits;

    p->signal = (int)((x >> 8) & 1);
    p->off    = (size_t)((x >> 16) % SLOT_SKEW);
    if (cls == 0) {
        p->size = 1 + (size_t)(y % 64);               /* tiny */
    } else if (cls < 4) {
        p->size = 65 + (size_t)(y % 4032);            /* small */
    } else if (cls == 4) {
        p->size = SLOT_DATA;                          /* the largest */
    } else {
        bits    = 12 + (unsigned)((y >> 40) % 9);     /* 4 KiB .. 1 MiB */
        p->size = ((size_t)1 << bits) + (size_t)(y % ((uint64_t)1 << bits));
        if (p->size > SLOT_DATA) {
            p->size = SLOT_DATA;
        }
    }
    p->seed = mix(base ^ q);
}

uint64_t static_seed(unsigned e)
{
    return mix(g_cfg.seed ^ 0x5354415449430000ull ^ e);
}
