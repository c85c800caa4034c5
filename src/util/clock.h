/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Monotonic time and deadlines, in nanoseconds.
 */
#ifndef HIXL_CLOCK_H_
#define HIXL_CLOCK_H_

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define HIXL_NS_PER_US 1000ull
#define HIXL_NS_PER_MS 1000000ull
#define HIXL_NS_PER_S  1000000000ull

static inline uint64_t hixl_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * HIXL_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* A cheaper clock for checks made on every poll (deadlines of requests):
 * a few ms coarse, which is fine against timeouts given in ms. */
static inline uint64_t hixl_now_coarse_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * HIXL_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Deadline timeout_ms after now (on now's clock); a negative timeout means
 * "never". */
static inline uint64_t hixl_deadline_after(uint64_t now, int64_t timeout_ms)
{
    if (timeout_ms < 0) {
        return UINT64_MAX;
    }
    return now + (uint64_t)timeout_ms * HIXL_NS_PER_MS;
}

static inline uint64_t hixl_deadline_ns(int64_t timeout_ms)
{
    return hixl_deadline_after(hixl_now_ns(), timeout_ms);
}

/* The same on the coarse clock, for deadlines only ever compared with
 * hixl_now_coarse_ns() (a request's: one per transfer, on the hot path). */
static inline uint64_t hixl_deadline_coarse_ns(int64_t timeout_ms)
{
    return hixl_deadline_after(hixl_now_coarse_ns(), timeout_ms);
}

/* Milliseconds left until a deadline (0 when passed, -1 when never). */
static inline int hixl_ms_left(uint64_t deadline_ns)
{
    uint64_t now;

    if (deadline_ns == UINT64_MAX) {
        return -1;
    }
    now = hixl_now_ns();
    if (now >= deadline_ns) {
        return 0;
    }
    return (int)((deadline_ns - now + HIXL_NS_PER_MS - 1) / HIXL_NS_PER_MS);
}

/* An absolute CLOCK_MONOTONIC time for pthread_cond_timedwait. */
static inline void hixl_timespec_at(struct timespec *ts, uint64_t ns)
{
    ts->tv_sec  = (time_t)(ns / HIXL_NS_PER_S);
    ts->tv_nsec = (long)(ns % HIXL_NS_PER_S);
}

/* Condition variables time out on the monotonic clock, like every
 * deadline here (a wall-clock step must not stretch or cut a wait). */
static inline void hixl_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

#endif
