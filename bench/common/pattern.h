/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The byte pattern every benchmark writes and the receiving side checks.
 *
 * Word i of the pattern of `seed` is a mix of (i, seed): cheap enough to
 * fill and check gigabytes, and a block that lands at the wrong offset, or
 * stale bytes of an earlier seed, do not match.  Byte order is the
 * host's: a pattern is checked on the host that filled it, or after
 * being moved byte for byte.
 */
#ifndef HIXL_BENCH_COMMON_PATTERN_H_
#define HIXL_BENCH_COMMON_PATTERN_H_

#include <stddef.h>
#include <stdint.h>

/* Where a check found bad bytes: how many, and the first of them. */
typedef struct bc_pattern_diff {
    size_t  bad;
    size_t  first;          /* offset of the first bad byte */
    uint8_t got;            /* its value */
    uint8_t want;           /* the pattern's value there */
} bc_pattern_diff_t;

/* Word `index` of the pattern of `seed`. */
uint64_t bc_pattern_word(uint64_t index, uint64_t seed);

/* A seed from a key made of small numbers (a run, a pass, a layer, a
 * peer): neighbouring keys give unrelated patterns. */
uint64_t bc_pattern_seed(uint64_t key);

void bc_pattern_fill(uint8_t *buf, size_t len, uint64_t seed);

/* The number of bytes of buf that differ from the pattern (0: all match);
 * diff, when not NULL, says where. */
size_t bc_pattern_check(const uint8_t *buf, size_t len, uint64_t seed,
                        bc_pattern_diff_t *diff);

#endif
