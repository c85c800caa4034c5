/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's counters (hixl_stats_t of <hixl/hixl.h>, docs/metrics.md):
 * always on, so they cost an addition each and nothing else.  They are kept
 * in shards summed by a read.  The first HIXL_METRICS_SHARDS - 1 threads
 * that count in the process each own a shard (the same index in every
 * engine): only that thread writes it, with a relaxed load and store (no
 * locked instruction), and no line bounces between cores; threads after
 * them share shard 0 with relaxed atomic additions.  Latency needs two
 * clock reads, which cost as much as the rest together: one transfer in
 * HIXL_METRICS_TIME_EVERY that a thread posts is timed (its first one
 * included), the others only counted.  Gauges (open connections, regions,
 * requests in flight) are not here: ops/metrics.c reads them from the
 * engine's own state when asked.
 *
 * Locking: none.  Any thread counts, inside UCX callbacks too; a read may
 * see a transfer's count without its bytes for an instant, never a torn
 * value.
 *
 * Built with --disable-metrics (HIXL_METRICS 0) every call here is empty
 * and reads no clock: what the counting costs is measured against that
 * build (docs/metrics.md).
 */
#ifndef HIXL_CORE_METRICS_H_
#define HIXL_CORE_METRICS_H_

#include "util/clock.h"

#include <hixl/hixl.h>
#include <stdatomic.h>
#include <stdint.h>

#ifndef HIXL_METRICS
#define HIXL_METRICS 1
#endif

#define HIXL_METRICS_SHARDS     32
#define HIXL_METRICS_TIME_EVERY 8   /* a power of 2 */

/* The plain counters, one slot each. */
typedef enum hixl_mx_counter {
    HIXL_MX_LAYER_SENT,
    HIXL_MX_LAYER_RECEIVED,
    HIXL_MX_CONNECTED,
    HIXL_MX_CONNECT_FAILED,
    HIXL_MX_ACCEPTED,
    HIXL_MX_REFUSED,                                    /* + reason */
    HIXL_MX_EVICTED = HIXL_MX_REFUSED + HIXL_STATS_REFUSED_COUNT,
    HIXL_MX_CLOSED  = HIXL_MX_EVICTED + HIXL_STATS_EVICTED_COUNT,
    HIXL_MX_NOTIFY_SENT = HIXL_MX_CLOSED + HIXL_STATS_CLOSED_COUNT,
    HIXL_MX_NOTIFY_RECEIVED,
    HIXL_MX_NOTIFY_DROPPED,                             /* + reason */
    HIXL_MX_WAKEUPS = HIXL_MX_NOTIFY_DROPPED + HIXL_STATS_DROPPED_COUNT,
    HIXL_MX_COUNTERS
} hixl_mx_counter_t;

typedef struct hixl_mx_hist {
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t sum_ns;
    atomic_uint_fast64_t bucket[HIXL_STATS_BUCKETS];
} hixl_mx_hist_t;

typedef struct hixl_mx_shard {
    atomic_uint_fast64_t transfers[HIXL_STATS_OPS][HIXL_STATS_PATHS]
                                  [HIXL_STATS_OUTCOMES];
    atomic_uint_fast64_t bytes[HIXL_STATS_OPS][HIXL_STATS_PATHS]
                              [HIXL_STATS_OUTCOMES];
    hixl_mx_hist_t       latency[HIXL_STATS_OPS];
    hixl_mx_hist_t       layer_signal;
    atomic_uint_fast64_t counter[HIXL_MX_COUNTERS];
} __attribute__((aligned(64))) hixl_mx_shard_t;

typedef struct hixl_metrics {
    hixl_mx_shard_t shard[HIXL_METRICS_SHARDS];
    uint64_t        born_ns;
} hixl_metrics_t;

/* The upper bounds of the histograms' buckets, in ns (the last UINT64_MAX:
 * +Inf), 1 us to 10 s in 1-2.5-5 steps. */
extern const uint64_t hixl_metrics_le_ns[HIXL_STATS_BUCKETS];

/* This thread's shard, 1 + its index (0: not assigned yet; assigned on
 * its first count); it owns it unless that is shard 0. */
unsigned hixl_metrics_shard_slow(void);
extern __thread unsigned hixl_metrics_shard_of_thread;
extern __thread unsigned hixl_metrics_posts_of_thread;

static inline unsigned hixl_metrics_shard_index(void)
{
    unsigned s = hixl_metrics_shard_of_thread;

    if (__builtin_expect(s == 0, 0)) {
        s = hixl_metrics_shard_slow();
    }
    return s - 1;
}

static inline hixl_mx_shard_t *hixl_metrics_shard(hixl_metrics_t *m)
{
    return &m->shard[hixl_metrics_shard_index()];
}

/* Add n to a counter of this thread's shard. */
static inline void hixl_mx_add(atomic_uint_fast64_t *c, uint64_t n)
{
    if (__builtin_expect(hixl_metrics_shard_of_thread > 1, 1)) {
        /* the shard is this thread's alone: no locked instruction */
        atomic_store_explicit(c, atomic_load_explicit(c,
                              memory_order_relaxed) + n,
                              memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
    }
}

#define HIXL_MX_ADD(field, n) hixl_mx_add(&(field), (n))

/* The clock for the latency histograms: now when this post is one a
 * thread times (one in HIXL_METRICS_TIME_EVERY), else 0 (and always 0
 * when metrics are compiled out). */
static inline uint64_t hixl_metrics_post_clock(void)
{
#if HIXL_METRICS
    if ((hixl_metrics_posts_of_thread++ & (HIXL_METRICS_TIME_EVERY - 1)) ==
        0) {
        return hixl_now_ns();
    }
#endif
    return 0;
}

/* The clock for the end of what hixl_metrics_post_clock timed (started:
 * what it returned). */
static inline uint64_t hixl_metrics_end_clock(uint64_t started)
{
#if HIXL_METRICS
    if (started != 0) {
        return hixl_now_ns();
    }
#endif
    (void)started;
    return 0;
}

/* Allocate (zeroed) and free; NULL on OOM (the caller's set-up fails). */
hixl_metrics_t *hixl_metrics_create(void);
void hixl_metrics_free(hixl_metrics_t *m);

/* Count n into a plain counter. */
static inline void hixl_metrics_count(hixl_metrics_t *m,
                                      hixl_mx_counter_t which, uint64_t n)
{
#if HIXL_METRICS
    if (m != NULL) {
        hixl_mx_shard_t *s = hixl_metrics_shard(m);

        HIXL_MX_ADD(s->counter[which], n);
    }
#else
    (void)m; (void)which; (void)n;
#endif
}

/* Record one value of a histogram (of this thread's shard). */
void hixl_metrics_observe(hixl_mx_hist_t *h, uint64_t ns);

/* A transfer's outcome: for every path in the mask paths, one transfer and
 * bytes[path] bytes; latency_ns into op's histogram when not UINT64_MAX. */
void hixl_metrics_transfer(hixl_metrics_t *m, unsigned op, unsigned paths,
                           const uint64_t *bytes, unsigned outcome,
                           uint64_t latency_ns);

/* A layer signal went out hixl_flush_layer's latency_ns after its call. */
void hixl_metrics_layer_signal(hixl_metrics_t *m, uint64_t latency_ns);

/* Sum the shards into the counters of *out (the gauges are left alone). */
void hixl_metrics_read(const hixl_metrics_t *m, hixl_stats_t *out);

#endif
