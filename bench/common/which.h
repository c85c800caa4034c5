/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Finding a helper program on PATH (gnuplot for the plots), so that a
 * benchmark says it skipped a plot instead of failing without one.
 */
#ifndef HIXL_BENCH_COMMON_WHICH_H_
#define HIXL_BENCH_COMMON_WHICH_H_

/* The full path of an executable prog on PATH (a static buffer, valid
 * until the next call), or NULL. */
const char *bc_which(const char *prog);

#endif
