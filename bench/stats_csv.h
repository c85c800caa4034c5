/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An engine's figures over time, for the benchmarks (pd_pipeline, fan):
 * with HIXL_BENCH_STATS=PREFIX in the environment, a thread samples
 * hixl_get_stats every 50 ms into PREFIX-<role>-<pid>.csv, and when the
 * engine is done a PNG beside it plots bytes per second and the mean
 * layer-signal latency of each interval (gnuplot, where installed).
 * Without the variable nothing runs.
 */
#ifndef HIXL_BENCH_STATS_CSV_H_
#define HIXL_BENCH_STATS_CSV_H_

#include <hixl/hixl.h>

typedef struct bench_stats bench_stats_t;

/* Start sampling engine (role: "decode", "prefill"...); NULL when the
 * variable is unset or the file cannot be written (said on stderr). */
bench_stats_t *bench_stats_start(hixl_engine_t *engine, const char *role);

/* Stop (before the engine is finalized), write the last row, plot. */
void bench_stats_stop(bench_stats_t *s);

#endif
