/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's counters: shards, histograms, the sum a read makes.
 */
#include "config.h"
#include "core/worker/metrics.h"

#include <stdlib.h>
#include <string.h>

const uint64_t hixl_metrics_le_ns[HIXL_STATS_BUCKETS] = {
    1000ull,        2500ull,        5000ull,
    10000ull,       25000ull,       50000ull,
    100000ull,      250000ull,      500000ull,
    1000000ull,     2500000ull,     5000000ull,
    10000000ull,    25000000ull,    50000000ull,
    100000000ull,   250000000ull,   500000000ull,
    1000000000ull,  2500000000ull,  5000000000ull,
    10000000000ull, UINT64_MAX
};

__thread unsigned hixl_metrics_shard_of_thread;
__thread unsigned hixl_metrics_posts_of_thread;

unsigned hixl_metrics_shard_slow(void)
{
    static atomic_uint next;
    unsigned n = atomic_fetch_add(&next, 1);

    /* 1 + the index, so that 0 means "not assigned yet"; shards 1.. are
     * owned, one thread each, until they run out; then shard 0, shared */
    hixl_metrics_shard_of_thread = (n < HIXL_METRICS_SHARDS - 1) ? n + 2 : 1;
    return hixl_metrics_shard_of_thread;
}

hixl_metrics_t *hixl_metrics_create(void)
{
    hixl_metrics_t *m = aligned_alloc(64, sizeof(*m));

    if (m != NULL) {
        memset(m, 0, sizeof(*m));
        m->born_ns = hixl_now_ns();
    }
    return m;
}

void hixl_metrics_free(hixl_metrics_t *m)
{
    free(m);
}

void hixl_metrics_observe(hixl_mx_hist_t *h, uint64_t ns)
{
    unsigned i = 0;

    /* a few compares: most values fall in the first decades */
    while (ns > hixl_metrics_le_ns[i]) {
        ++i;
    }
    HIXL_MX_ADD(h->bucket[i], 1);
    HIXL_MX_ADD(h->sum_ns, ns);
    HIXL_MX_ADD(h->count, 1);
}

void hixl_metrics_transfer(hixl_metrics_t *m, unsigned op, unsigned paths,
                           const uint64_t *bytes, unsigned outcome,
                           uint64_t latency_ns)
{
#if HIXL_METRICS
    hixl_mx_shard_t *s;
    unsigned p;

    if ((m == NULL) || (op >= HIXL_STATS_OPS)) {
        return;
    }
    s = hixl_metrics_shard(m);
    for (p = 0; paths != 0; ++p, paths >>= 1) {
        if (paths & 1u) {
            HIXL_MX_ADD(s->transfers[op][p][outcome], 1);
            HIXL_MX_ADD(s->bytes[op][p][outcome], bytes[p]);
        }
    }
    if (latency_ns != UINT64_MAX) {
        hixl_metrics_observe(&s->latency[op], latency_ns);
    }
#else
    (void)m; (void)op; (void)paths; (void)bytes; (void)outcome;
    (void)latency_ns;
#endif
}

void hixl_metrics_layer_signal(hixl_metrics_t *m, uint64_t latency_ns)
{
#if HIXL_METRICS
    hixl_mx_shard_t *s;

    if (m == NULL) {
        return;
    }
    s = hixl_metrics_shard(m);
    HIXL_MX_ADD(s->counter[HIXL_MX_LAYER_SENT], 1);
    hixl_metrics_observe(&s->layer_signal, latency_ns);
#else
    (void)m; (void)latency_ns;
#endif
}

static void hixl_metrics_read_hist(const hixl_mx_hist_t *h,
                                   hixl_stats_histogram_t *out)
{
    unsigned b;

    out->count  += atomic_load_explicit(&h->count, memory_order_relaxed);
    out->sum_ns += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
    for (b = 0; b < HIXL_STATS_BUCKETS; ++b) {
        out->bucket[b] += atomic_load_explicit(&h->bucket[b],
                                               memory_order_relaxed);
    }
}

#define HIXL_MX_LOAD(field) \
    atomic_load_explicit(&(field), memory_order_relaxed)

void hixl_metrics_read(const hixl_metrics_t *m, hixl_stats_t *out)
{
    const hixl_mx_shard_t *s;
    const atomic_uint_fast64_t *c;
    unsigned i, o, p, r;

    for (i = 0; i < HIXL_STATS_BUCKETS; ++i) {
        out->latency[0].le_ns[i]   = hixl_metrics_le_ns[i];
        out->latency[1].le_ns[i]   = hixl_metrics_le_ns[i];
        out->layer_signal.le_ns[i] = hixl_metrics_le_ns[i];
    }
    out->uptime_ns = hixl_now_ns() - m->born_ns;
    for (i = 0; i < HIXL_METRICS_SHARDS; ++i) {
        s = &m->shard[i];
        c = s->counter;
        for (o = 0; o < HIXL_STATS_OPS; ++o) {
            for (p = 0; p < HIXL_STATS_PATHS; ++p) {
                for (r = 0; r < HIXL_STATS_OUTCOMES; ++r) {
                    out->transfers[o][p][r] += HIXL_MX_LOAD(s->transfers[o][p][r]);
                    out->bytes[o][p][r]     += HIXL_MX_LOAD(s->bytes[o][p][r]);
                }
            }
            hixl_metrics_read_hist(&s->latency[o], &out->latency[o]);
        }
        hixl_metrics_read_hist(&s->layer_signal, &out->layer_signal);
        out->layer_signals_sent     += HIXL_MX_LOAD(c[HIXL_MX_LAYER_SENT]);
        out->layer_signals_received += HIXL_MX_LOAD(c[HIXL_MX_LAYER_RECEIVED]);
        out->conn_connected         += HIXL_MX_LOAD(c[HIXL_MX_CONNECTED]);
        out->conn_connect_failed    += HIXL_MX_LOAD(c[HIXL_MX_CONNECT_FAILED]);
        out->conn_accepted          += HIXL_MX_LOAD(c[HIXL_MX_ACCEPTED]);
        for (r = 0; r < HIXL_STATS_REFUSED_COUNT; ++r) {
            out->conn_refused[r] += HIXL_MX_LOAD(c[HIXL_MX_REFUSED + r]);
        }
        for (r = 0; r < HIXL_STATS_EVICTED_COUNT; ++r) {
            out->conn_evicted[r] += HIXL_MX_LOAD(c[HIXL_MX_EVICTED + r]);
        }
        for (r = 0; r < HIXL_STATS_CLOSED_COUNT; ++r) {
            out->conn_closed[r] += HIXL_MX_LOAD(c[HIXL_MX_CLOSED + r]);
        }
        out->notifies_sent     += HIXL_MX_LOAD(c[HIXL_MX_NOTIFY_SENT]);
        out->notifies_received += HIXL_MX_LOAD(c[HIXL_MX_NOTIFY_RECEIVED]);
        for (r = 0; r < HIXL_STATS_DROPPED_COUNT; ++r) {
            out->notifies_dropped[r] +=
                HIXL_MX_LOAD(c[HIXL_MX_NOTIFY_DROPPED + r]);
        }
        out->progress_wakeups += HIXL_MX_LOAD(c[HIXL_MX_WAKEUPS]);
    }
}
