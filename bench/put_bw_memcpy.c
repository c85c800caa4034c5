/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw --memcpy-baseline: the speed a transfer between processes of one
 * host is to be held against, measured in the same run.
 *
 * Over shared memory a transfer is copies, so one core's memcpy of exactly
 * the same descriptors (the same sizes, the same order, the same scatter
 * at both ends) is its limit: scattered small blocks cost what they cost
 * the CPU's caches and prefetchers, not only what they cost the library.
 * The two buffers are this process's own, each as large as the transfer,
 * touched and copied once untimed (warm, as the measured loop is after its
 * warm-up).
 */
#include "config.h"
#include "put_bw.h"
#include "common/clock.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Without -n or --max-time limits the measured loop would run 1,000,000
 * transfers; the baseline needs far fewer to be steady. */
#define BENCH_MEMCPY_MAX_TIME 1.0

static void *bench_memcpy_buf(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    return (p == MAP_FAILED) ? NULL : p;
}

/* One pass over the descriptors: what one transfer copies. */
static void bench_memcpy_pass(const bench_side_t *side, uint8_t *src,
                              uint8_t *dst, int get)
{
    const hixl_transfer_op_desc_t *d = side->descs;
    uintptr_t local                  = (uintptr_t)bench_local(side);
    size_t i, lo, ro;

    for (i = 0; i < side->num_descs; ++i) {
        lo = d[i].local_addr - local;
        ro = d[i].remote_addr - side->peer_target;
        if (get) {
            memcpy(src + lo, dst + ro, d[i].len);
        } else {
            memcpy(dst + ro, src + lo, d[i].len);
        }
    }
    /* nobody reads the destination back: keep the copies observable */
    __asm__ __volatile__("" : : "r"(dst), "r"(src) : "memory");
}

int bench_memcpy_baseline(const bench_side_t *side, const bench_opts_t *opts,
                          const bench_run_t *run, bench_stats_t *stats)
{
    int get = (bench_tests[opts->test].op == HIXL_READ);
    uint8_t *src, *dst;
    double max_time = BENCH_MEMCPY_MAX_TIME;
    uint64_t i, end_tick;

    if (bench_mem_is_device(bench_local(side))) {
        fprintf(stderr, "put_bw: --memcpy-baseline: host memory only\n");
        return -1;
    }
    src = bench_memcpy_buf(run->msg_size);
    dst = bench_memcpy_buf(run->msg_size);
    if ((src == NULL) || (dst == NULL)) {
        fprintf(stderr, "put_bw: --memcpy-baseline: cannot map 2 x %zu "
                "bytes\n", run->msg_size);
        if (src != NULL) {
            munmap(src, run->msg_size);
        }
        return -1;
    }
    memset(src, 0x5a, run->msg_size);
    memset(dst, 0xa5, run->msg_size);
    bench_memcpy_pass(side, src, dst, get);   /* warm */

    if ((opts->max_time > 0) && (opts->max_time < max_time)) {
        max_time = opts->max_time;
    }
    bench_stats_start(stats, opts, run);
    stats->factor         = 1.0;   /* copies, never a round trip */
    stats->interval_ticks = UINT64_MAX;
    stats->label          = "memcpy";
    end_tick = stats->prev_tick +
               (uint64_t)(max_time * bench_ticks_per_sec());
    for (i = 0; i < opts->iters; ++i) {
        bench_memcpy_pass(side, src, dst, get);
        bench_stats_update(stats, run->msg_size);
        if (stats->prev_tick > end_tick) {
            break;
        }
    }
    munmap(src, run->msg_size);
    munmap(dst, run->msg_size);
    return 0;
}
