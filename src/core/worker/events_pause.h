/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pauses of an application that sleeps on the engine's event fd with no
 * progress thread (core/worker/events.h).
 *
 * Without a progress thread the application's fd holds the engine's own epoll
 * set, so UCX's event fd wakes the application, whose next hixl_arm progresses
 * the engine.  Where UCX's fd stays readable with nothing to do (UCX 1.13's tcp
 * while a peer has not accepted a connection: core/worker/spurious_wakes.h),
 * every sleep ended at once and an application that connected in the background
 * spun a core until the connect ended.
 *
 * So hixl_arm counts those wake-ups as the progress thread does: a sleep that
 * ended within HIXL_EVENTS_EARLY_NS of the arm, with no event of the library's
 * since, after which progress found nothing.  After HIXL_SPURIOUS_WAKES_MAX of
 * them it arms a pause instead: the engine's epoll set is taken out of the
 * application's fd (its interest mask emptied, which cannot fail) and a timer
 * fd in it fires after the pause.  The next hixl_arm puts the set back,
 * progresses, and tries sleeping on it again.  The library's own events (efd)
 * wake the application during a pause as always; socket and UCX traffic wait
 * for the timer, at most a millisecond.
 */
#ifndef HIXL_CORE_EVENTS_PAUSE_H_
#define HIXL_CORE_EVENTS_PAUSE_H_

#include "core/worker/spurious_wakes.h"

#include <hixl/hixl.h>
#include <stdint.h>

typedef struct hixl_engine hixl_engine_t;

/* A wake-up this soon after the arm, with nothing for it, was for nothing. */
#define HIXL_EVENTS_EARLY_NS 100000ull   /* 100 us */

typedef struct hixl_events_pause {
    int                   tfd;        /* the pause's timer, in the fd's set */
    int                   pausing;    /* the engine's set is out for a pause */
    uint64_t          armed_ns;   /* when the application last slept */
    unsigned long     count;      /* the library's event count then */
    hixl_spurious_wakes_t wakes;
} hixl_events_pause_t;

void hixl_events_pause_init(hixl_events_pause_t *pause);

/* The timer (events->lock held, no progress thread), for the caller to
 * add to the application's epoll set: its fd, or -1 with errno. */
int hixl_events_pause_create(hixl_events_pause_t *pause);

void hixl_events_pause_cleanup(hixl_events_pause_t *pause);

/* hixl_arm's look before it arms, without a progress thread (events->lock
 * held): progress the engine; 0 when that found work (the application
 * looks again), 1 when it may sleep, on the engine's fds or through a
 * pause. */
int hixl_events_pause_prepare(hixl_engine_t *engine);

#endif
