/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_get_stats and hixl_metrics_text: core's counters, the gauges read
 * under engine->lock, and their Prometheus text (docs/metrics.md lists
 * every family; keep it in step).
 */
#include "config.h"
#include "ops/metrics.h"
#include "util/log.h"
#include "util/prom_text.h"

#include <stddef.h>
#include <string.h>

static const char *const hixl_mx_ops[HIXL_STATS_OPS] = {"read", "write"};
static const char *const hixl_mx_paths[HIXL_STATS_PATHS] = {
    "rma", "am", "cma", "map", "ipc", "staging"};
static const char *const hixl_mx_outcomes[HIXL_STATS_OUTCOMES] = {
    "completed", "failed", "timeout"};
static const char *const hixl_mx_refused[HIXL_STATS_REFUSED_COUNT] = {
    "authentication", "version", "duplicate_name", "admission", "invalid"};
static const char *const hixl_mx_evicted[HIXL_STATS_EVICTED_COUNT] = {
    "handshake_full", "handshake_timeout"};
static const char *const hixl_mx_closed[HIXL_STATS_CLOSED_COUNT] = {
    "disconnect", "peer_timeout", "peer_death", "error"};
static const char *const hixl_mx_dropped[HIXL_STATS_DROPPED_COUNT] = {
    "queue_full", "too_large"};

_Static_assert(HIXL_READ == 0 && HIXL_WRITE == 1, "op labels by op");

/* ---- reading ------------------------------------------------------------ */

/* The gauges: engine->lock held. */
static void hixl_metrics_gauges(hixl_engine_t *engine, hixl_stats_t *out)
{
    hixl_req_pool_t *pool = &engine->reqs;
    const hixl_region_t *r;
    const hixl_peer_t *peer;
    uint32_t i, used;
    size_t s;

    for (peer = engine->peers.head; peer != NULL; peer = peer->next) {
        out->conn_open += (peer->state == HIXL_PEER_READY);
    }
    for (s = 0; s < engine->mem.nslots; ++s) {
        r = engine->mem.slots[s].region;
        if ((r != NULL) && !r->revoked) {
            out->regions++;
            out->region_bytes += r->range.len;
        }
    }
    used = atomic_load(&pool->used);
    for (i = 0; i < used; ++i) {
        out->requests_in_flight +=
            (atomic_load_explicit(&pool->reqs[i].state,
                                  memory_order_relaxed) == HIXL_REQ_ACTIVE);
    }
}

void hixl_metrics_snapshot(hixl_engine_t *engine, hixl_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    out->size    = sizeof(*out);
    out->version = HIXL_STATS_VERSION;
    hixl_metrics_read(engine->metrics, out);
    pthread_mutex_lock(&engine->lock);
    hixl_metrics_gauges(engine, out);
    pthread_mutex_unlock(&engine->lock);
}

hixl_status_t hixl_get_stats(hixl_engine_t *engine, hixl_stats_t *stats)
{
    hixl_stats_t all;
    size_t n;

    if ((engine == NULL) || (stats == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL", (engine == NULL) ?
                          "engine" : "stats");
    }
    if (stats->size < offsetof(hixl_stats_t, uptime_ns) +
                      sizeof(stats->uptime_ns)) {
        return hixl_error(HIXL_PARAM_INVALID, "stats->size %zu is too small "
                          "(set it to sizeof(hixl_stats_t), %zu here)",
                          stats->size, sizeof(hixl_stats_t));
    }
    hixl_metrics_snapshot(engine, &all);
    n         = (stats->size < sizeof(all)) ? stats->size : sizeof(all);
    all.size  = n;
    memcpy(stats, &all, n);
    return HIXL_SUCCESS;
}

/* ---- the exposition --------------------------------------------------------- */

/* A family of one sample per value of one label. */
static void hixl_mx_by(hixl_prom_t *w, const char *name, const char *help,
                       const char *label, const char *const *values,
                       const uint64_t *counts, unsigned n)
{
    hixl_prom_label_t l;
    unsigned i;

    hixl_prom_family(w, name, "counter", help);
    for (i = 0; i < n; ++i) {
        l.name  = label;
        l.value = values[i];
        hixl_prom_sample(w, name, &l, 1, counts[i]);
    }
}

static void hixl_mx_one(hixl_prom_t *w, const char *name, const char *type,
                        const char *help, uint64_t value)
{
    hixl_prom_family(w, name, type, help);
    hixl_prom_sample(w, name, NULL, 0, value);
}

/* op x path x outcome */
static void hixl_mx_transfers(hixl_prom_t *w, const char *name,
                              const char *help,
                              const uint64_t v[HIXL_STATS_OPS]
                                              [HIXL_STATS_PATHS]
                                              [HIXL_STATS_OUTCOMES])
{
    hixl_prom_label_t l[3] = {{"op", NULL}, {"path", NULL},
                              {"outcome", NULL}};
    unsigned o, p, r;

    hixl_prom_family(w, name, "counter", help);
    for (o = 0; o < HIXL_STATS_OPS; ++o) {
        for (p = 0; p < HIXL_STATS_PATHS; ++p) {
            for (r = 0; r < HIXL_STATS_OUTCOMES; ++r) {
                l[0].value = hixl_mx_ops[o];
                l[1].value = hixl_mx_paths[p];
                l[2].value = hixl_mx_outcomes[r];
                hixl_prom_sample(w, name, l, 3, v[o][p][r]);
            }
        }
    }
}

size_t hixl_stats_format(const hixl_stats_t *st, const char *engine_name,
                         char *buf, size_t len)
{
    hixl_prom_label_t l[2];
    hixl_prom_t w;
    unsigned o;

    hixl_prom_init(&w, buf, len);
    hixl_prom_family(&w, "hixl_engine_info", "gauge",
                     "The engine: its name and the library's version");
    l[0].name  = "engine";
    l[0].value = engine_name;
    l[1].name  = "version";
    l[1].value = PACKAGE_VERSION;
    hixl_prom_sample(&w, "hixl_engine_info", l, 2, 1);
    hixl_prom_family(&w, "hixl_uptime_seconds", "gauge",
                     "Seconds since the engine was initialized");
    hixl_prom_sample_seconds(&w, "hixl_uptime_seconds", NULL, 0,
                             st->uptime_ns);

    hixl_mx_transfers(&w, "hixl_transfers_total", "Transfers ended, by "
                      "operation, data path and outcome as the application "
                      "was told it (a transfer that took several paths "
                      "counts on each)", st->transfers);
    hixl_mx_transfers(&w, "hixl_transfer_bytes_total", "Bytes of the "
                      "transfers ended, by operation, data path and "
                      "outcome", st->bytes);
    hixl_prom_family(&w, "hixl_transfer_latency_seconds", "histogram",
                     "Post to completion of completed transfers, by "
                     "operation");
    for (o = 0; o < HIXL_STATS_OPS; ++o) {
        l[0].name  = "op";
        l[0].value = hixl_mx_ops[o];
        hixl_prom_histogram(&w, "hixl_transfer_latency_seconds", l, 1,
                            &st->latency[o]);
    }
    hixl_prom_family(&w, "hixl_layer_signal_latency_seconds", "histogram",
                     "Prefill side: hixl_flush_layer to its layer signal "
                     "sent, every byte before it landed");
    hixl_prom_histogram(&w, "hixl_layer_signal_latency_seconds", NULL, 0,
                        &st->layer_signal);
    hixl_mx_one(&w, "hixl_layer_signals_sent_total", "counter",
                "Layer signals sent (prefill side)", st->layer_signals_sent);
    hixl_mx_one(&w, "hixl_layer_signals_received_total", "counter",
                "Layer signals received (decode side)",
                st->layer_signals_received);

    hixl_mx_one(&w, "hixl_connections_open", "gauge",
                "Connections established now, both directions",
                st->conn_open);
    hixl_mx_one(&w, "hixl_connections_connected_total", "counter",
                "Connections this engine made that completed their "
                "handshake", st->conn_connected);
    hixl_mx_one(&w, "hixl_connections_connect_failed_total", "counter",
                "Connections this engine made that ended in their "
                "handshake", st->conn_connect_failed);
    hixl_mx_one(&w, "hixl_connections_accepted_total", "counter",
                "Connections accepted (handshake completed)",
                st->conn_accepted);
    hixl_mx_by(&w, "hixl_connections_refused_total", "Connections refused "
               "in their handshake, by reason", "reason", hixl_mx_refused,
               st->conn_refused, HIXL_STATS_REFUSED_COUNT);
    hixl_mx_by(&w, "hixl_connections_evicted_total", "Accepted connections "
               "dropped before their handshake completed, by reason",
               "reason", hixl_mx_evicted, st->conn_evicted,
               HIXL_STATS_EVICTED_COUNT);
    hixl_mx_by(&w, "hixl_connections_closed_total", "Established "
               "connections closed, by reason", "reason", hixl_mx_closed,
               st->conn_closed, HIXL_STATS_CLOSED_COUNT);

    hixl_mx_one(&w, "hixl_notifies_sent_total", "counter", "Notifies sent",
                st->notifies_sent);
    hixl_mx_one(&w, "hixl_notifies_received_total", "counter",
                "Notifies received and queued", st->notifies_received);
    hixl_mx_by(&w, "hixl_notifies_dropped_total", "Notifies received and "
               "refused, by reason", "reason", hixl_mx_dropped,
               st->notifies_dropped, HIXL_STATS_DROPPED_COUNT);

    hixl_mx_one(&w, "hixl_registered_regions", "gauge",
                "Memory regions registered", st->regions);
    hixl_mx_one(&w, "hixl_registered_bytes", "gauge",
                "Bytes of the memory regions registered", st->region_bytes);
    hixl_mx_one(&w, "hixl_requests_in_flight", "gauge",
                "Transfers posted and not yet ended", st->requests_in_flight);
    hixl_mx_one(&w, "hixl_progress_wakeups_total", "counter",
                "Times the progress thread woke from a sleep",
                st->progress_wakeups);
    return hixl_prom_end(&w);
}

size_t hixl_metrics_text(hixl_engine_t *engine, char *buf, size_t len)
{
    hixl_stats_t st;

    if (engine == NULL) {
        hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
        return 0;
    }
    hixl_metrics_snapshot(engine, &st);
    return hixl_stats_format(&st, engine->name.canon, buf, len);
}
