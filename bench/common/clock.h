/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Time for the benchmarks: CLOCK_MONOTONIC in nanoseconds, and sleeps on
 * the same clock.
 *
 * CLOCK_MONOTONIC is one clock for every process of a host, so a time one
 * process stamps (fan's coordinator, pd_pipeline's decode) compares with a
 * time another stamps (an engine child, the prefill process).
 */
#ifndef HIXL_BENCH_COMMON_CLOCK_H_
#define HIXL_BENCH_COMMON_CLOCK_H_

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t bc_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double bc_now_s(void)
{
    return (double)bc_now_ns() * 1e-9;
}

/* An absolute deadline, so that a signal that interrupts the sleep does
 * not stretch it. */
static inline void bc_sleep_until_ns(uint64_t t_ns)
{
    struct timespec ts;

    ts.tv_sec  = (time_t)(t_ns / 1000000000ull);
    ts.tv_nsec = (long)(t_ns % 1000000000ull);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR) {
    }
}

/* Sleep, not spin: a modelled accelerator computing, or a wait between
 * retries, leaves the CPU to the processes being measured. */
static inline void bc_sleep_ms(double ms)
{
    if (ms > 0) {
        bc_sleep_until_ns(bc_now_ns() + (uint64_t)(ms * 1e6));
    }
}

#endif
