/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Order statistics of a benchmark's samples: medians over repetitions,
 * percentiles of connect times and of per-iteration latencies.
 *
 * Each function sorts the array it is given, in place, so that callers
 * can read the minimum and maximum off its ends afterwards.
 */
#ifndef HIXL_BENCH_COMMON_STATS_H_
#define HIXL_BENCH_COMMON_STATS_H_

#include <stddef.h>
#include <stdint.h>

void bc_sort_double(double *v, size_t n);

/* The middle value, the mean of the two middle ones for even n; NAN when
 * n is 0. */
double bc_median(double *v, size_t n);

/* Nearest rank: the smallest value with at least pct percent of the
 * values at or below it; NAN when n is 0. */
double bc_percentile(double *v, size_t n, double pct);

/* ucx_perftest's rank (put_bw's percentile column must compare with
 * ucx_perftest's): the value at index floor((n - 1) * pct / 100) of the
 * sorted values; 0 when n is 0. */
uint64_t bc_percentile_floor_u64(uint64_t *v, size_t n, double pct);

#endif
