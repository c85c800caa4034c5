/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: the machine's limit, measured in the same run.
 *
 * On one host a put over shared memory is a memcpy into the peer's pages,
 * so one core's memcpy of the same number of bytes, into the same memory,
 * is the speed to compare with.  Decode copies a buffer like prefill's
 * (page-aligned, huge-page hint, touched) into its own KV cache right
 * after hixl_alloc_mem gave it:
 *
 *   cold  the first copy: the cache's pages fault in during it, as when a
 *         KV cache allocated at start-up receives its first request (unless
 *         the allocator pre-faulted them);
 *   warm  the same copy again into the now touched pages (the better of two
 *         copies): the steady state, which the timed runs of pd_pipeline
 *         are (an untimed warm-up run goes first).
 *
 * This also faults the cache in before anything is timed.  Decode does it
 * before it answers any prefill engine, so nothing else of pd_pipeline runs
 * meanwhile.
 */
#include "pd_run.h"

#include <stdio.h>
#include <string.h>

static double pd_copy_gbs(void *dst, const void *src, size_t bytes)
{
    uint64_t t0 = bc_now_ns(), dt;

    memcpy(dst, src, bytes);
    /* nobody reads the destination back: keep the copy observable */
    __asm__ __volatile__("" : : "r"(dst) : "memory");
    dt = bc_now_ns() - t0;
    return (dt > 0) ? bytes / (double)dt : 0.0;   /* bytes per ns = GB/s */
}

int pd_memcpy_measure(void *dst, size_t bytes, pd_memcpy_t *out)
{
    void *src;
    double w;

    memset(out, 0, sizeof(*out));
    out->bytes = bytes;
    src = pd_alloc(bytes);   /* touched: faults are not part of the copy */
    if (src == NULL) {
        return -1;
    }
    memset(src, 0x5a, bytes);
    out->cold_gbs = pd_copy_gbs(dst, src, bytes);
    out->warm_gbs = pd_copy_gbs(dst, src, bytes);
    w             = pd_copy_gbs(dst, src, bytes);
    if (w > out->warm_gbs) {
        out->warm_gbs = w;
    }
    pd_free(src, bytes);
    out->measured = 1;
    return 0;
}
