/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The benchmarks' byte pattern (pattern.h).
 */
#include "config.h"
#include "pattern.h"

#include <string.h>

/* 2^64 / golden ratio and splitmix64's first multiplier: (i + 1) * GOLDEN
 * spreads consecutive words over the whole range, the xor-shift-multiply
 * rounds make every input bit reach every output bit. */
#define BC_PATTERN_GOLDEN 0x9e3779b97f4a7c15ull
#define BC_PATTERN_MUL    0xbf58476d1ce4e5b9ull
#define BC_PATTERN_SALT   0x5eed5eed5eed5eedull

uint64_t bc_pattern_word(uint64_t index, uint64_t seed)
{
    uint64_t x = (index + 1) * BC_PATTERN_GOLDEN ^ seed;

    x ^= x >> 31;
    x *= BC_PATTERN_MUL;
    x ^= x >> 27;
    return x;
}

uint64_t bc_pattern_seed(uint64_t key)
{
    return bc_pattern_word(key, BC_PATTERN_SALT);
}

void bc_pattern_fill(uint8_t *buf, size_t len, uint64_t seed)
{
    size_t i, words = len / 8;
    uint64_t w;

    /* memcpy: buf need not be aligned (a descriptor may start anywhere) */
    for (i = 0; i < words; ++i) {
        w = bc_pattern_word(i, seed);
        memcpy(buf + 8 * i, &w, 8);
    }
    if (len % 8) {
        w = bc_pattern_word(words, seed);
        memcpy(buf + 8 * words, &w, len % 8);
    }
}

size_t bc_pattern_check(const uint8_t *buf, size_t len, uint64_t seed,
                        bc_pattern_diff_t *diff)
{
    size_t i, j, n, bad = 0;
    uint8_t want[8];
    uint64_t w, got;

    for (i = 0; i < len; i += 8) {
        w = bc_pattern_word(i / 8, seed);
        n = (len - i < 8) ? len - i : 8;
        if (n == 8) {
            memcpy(&got, buf + i, 8);
            if (got == w) {
                continue;           /* the common case: one compare */
            }
        }
        memcpy(want, &w, 8);
        for (j = 0; j < n; ++j) {
            if (buf[i + j] == want[j]) {
                continue;
            }
            if ((bad++ == 0) && (diff != NULL)) {
                diff->first = i + j;
                diff->got   = buf[i + j];
                diff->want  = want[j];
            }
        }
    }
    if (diff != NULL) {
        diff->bad = bad;
    }
    return bad;
}
