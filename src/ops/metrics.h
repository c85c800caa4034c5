/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's figures for the application (hixl_get_stats,
 * hixl_metrics_text; metrics.c) and over HTTP (hixl.MetricsListen;
 * metrics_http.c).  The counters are core's (core/worker/metrics.h); the
 * gauges are read here under engine->lock.
 */
#ifndef HIXL_OPS_METRICS_H_
#define HIXL_OPS_METRICS_H_

#include "core/engine.h"

/* Everything of *out, counters and gauges (takes engine->lock). */
void hixl_metrics_snapshot(hixl_engine_t *engine, hixl_stats_t *out);

/* The exposition text of a snapshot, for an engine called engine_name
 * (snprintf-like: returns the length the whole text needs). */
size_t hixl_stats_format(const hixl_stats_t *st, const char *engine_name,
                         char *buf, size_t len);

/* The HTTP endpoint: started last in hixl_initialize when
 * hixl.MetricsListen is set (UNSUPPORTED without libmicrohttpd), stopped
 * first in finalize, so that no request runs while the engine goes. */
hixl_status_t hixl_metrics_http_start(hixl_engine_t *engine);
void hixl_metrics_http_stop(hixl_engine_t *engine);

#endif
