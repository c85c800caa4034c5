/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the copies that bypass the caches (src/util/copy.c): of received
 * data into its destination, and of same-host transfers that sweep.
 * Every length around their thresholds (the streaming ones, a cache
 * line, the 60 KiB of a library message) at every alignment of source
 * and destination lands byte for byte, and not one byte outside
 * the destination changes: the copy writes aligned lines with its own
 * head and tail around them, and a mistake there corrupts a neighbour's
 * data in a KV cache without failing anything else.
 */
#include "config.h"
#include "harness.h"
#include "util/copy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD   256
#define GUARD_B 0xa5

typedef void (*copy_fn_t)(void *dst, const void *src, size_t n);

static void check_copy(copy_fn_t copy, size_t len, size_t src_off,
                       size_t dst_off)
{
    size_t span   = GUARD + 64 + len + GUARD;
    uint8_t *src  = malloc(span);
    uint8_t *dst  = malloc(span);
    uint8_t *d    = dst + GUARD + dst_off;
    size_t i;

    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(dst);
    for (i = 0; i < span; ++i) {
        src[i] = (uint8_t)(i * 131 + len + 7);   /* no two lines alike */
    }
    memset(dst, GUARD_B, span);
    copy(d, src + src_off, len);
    ck_assert_msg(memcmp(d, src + src_off, len) == 0,
                  "%zu bytes from +%zu to +%zu: not what was copied", len,
                  src_off, dst_off);
    for (i = 0; i < span; ++i) {
        if ((dst + i < d) || (dst + i >= d + len)) {
            ck_assert_msg(dst[i] == GUARD_B, "%zu bytes from +%zu to +%zu: "
                          "byte %td outside the destination changed", len,
                          src_off, dst_off, (dst + i) - d);
        }
    }
    free(src);
    free(dst);
}

static void check_lengths(copy_fn_t copy)
{
    static const size_t lens[] = {
        0, 1, 63, 64, 65, 127, 128, 129, 191, 4095,
        HIXL_COPY_SWEEP_MIN - 1, HIXL_COPY_SWEEP_MIN,
        HIXL_COPY_SWEEP_MIN + 13, HIXL_COPY_STREAM_MIN - 1,
        HIXL_COPY_STREAM_MIN, HIXL_COPY_STREAM_MIN + 1,
        HIXL_COPY_STREAM_MIN + 63, 60 * 1024, 60 * 1024 + 13,
        (1u << 20) + 7
    };
    static const size_t offs[] = {0, 1, 7, 15, 16, 33, 63};
    size_t l, s, d;

    for (l = 0; l < sizeof(lens) / sizeof(lens[0]); ++l) {
        for (s = 0; s < 3; ++s) {
            for (d = 0; d < sizeof(offs) / sizeof(offs[0]); ++d) {
                check_copy(copy, lens[l], offs[s * 3], offs[d]);
            }
        }
    }
}

/* received data: streams from HIXL_COPY_STREAM_MIN */
START_TEST(test_lengths_and_alignments)
{
    check_lengths(hixl_copy_streaming);
}
END_TEST

/* a same-host copy hixl_copy_sweeps chose: streams from any length */
START_TEST(test_past_caches)
{
    check_lengths(hixl_copy_past_caches);
}
END_TEST

/* the rule that chooses */
START_TEST(test_sweeps)
{
    ck_assert(!hixl_copy_sweeps(64 * 1024, 2u << 20));
    ck_assert(hixl_copy_sweeps(HIXL_COPY_SWEEP_LEN, 0));
    ck_assert(hixl_copy_sweeps(HIXL_COPY_SWEEP_MIN, HIXL_COPY_SWEEP_REGION));
    ck_assert(!hixl_copy_sweeps(HIXL_COPY_SWEEP_MIN - 1,
                                HIXL_COPY_SWEEP_REGION));
    ck_assert(!hixl_copy_sweeps(HIXL_COPY_SWEEP_LEN - 1,
                                HIXL_COPY_SWEEP_REGION - 1));
}
END_TEST

static Suite *unit_copy_suite(void)
{
    Suite *s = suite_create("copy");
    TCase *tc = hx_tcase("copy");

    tcase_add_test(tc, test_lengths_and_alignments);
    tcase_add_test(tc, test_past_caches);
    tcase_add_test(tc, test_sweeps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_copy_suite());
}
