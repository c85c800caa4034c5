/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine events for applications that must not spin: the event fd an
 * epoll loop (or asyncio) waits on, and the gate that lets hixl_finalize
 * end the blocking waits of other threads.
 *
 * The model is UCX's ucp_worker_get_efd / ucp_worker_arm: the fd becomes
 * readable at the first event after it was armed (a request finished, a
 * notify was queued, a layer signal landed or a layer source went away).
 * Arming re-checks: when events happened since the previous arm, it says
 * so instead of arming, and the application looks at its requests,
 * notifies and layers before sleeping.  Until the fd is asked for, an event
 * costs one load (hixl_events_signal), so engines that poll pay nothing.
 *
 * The gate: a thread inside a blocking wait (hixl_wait_transfers,
 * hixl_wait_notifies, hixl_wait_layer) counts itself in `waiters`;
 * finalize sets `closing`, wakes every sleeper and waits until the count
 * is 0 before it frees anything.
 */
#ifndef HIXL_CORE_EVENTS_H_
#define HIXL_CORE_EVENTS_H_

#include "core/worker/events_pause.h"

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct hixl_engine hixl_engine_t;

typedef struct hixl_events {
    pthread_mutex_t     lock;       /* creating the fds; the pauses */
    int             efd;        /* the eventfd the library writes, or -1 */
    int             epfd;       /* what the application waits on: efd, and
                                   without a progress thread the engine's
                                   own epoll set (sockets, UCX); or -1 */
    atomic_int      enabled;    /* the fd was asked for: count events */
    atomic_int      armed;      /* the next event writes efd */
    atomic_ulong    count;      /* events since enabled */
    atomic_ulong    armed_at;   /* count at the last arm */
    atomic_int      closing;    /* finalize began: waits end */
    atomic_uint     waiters;    /* threads inside blocking waits */
    hixl_events_pause_t pause;      /* without a progress thread (lock) */
} hixl_events_t;

void hixl_events_init(hixl_events_t *ev);
void hixl_events_cleanup(hixl_events_t *ev);

void hixl_events_signal_slow(hixl_events_t *ev);

/* An event happened (any thread, UCX callbacks included; no lock). */
static inline void hixl_events_signal(hixl_events_t *ev)
{
    if (atomic_load(&ev->enabled)) {
        hixl_events_signal_slow(ev);
    }
}

/* The application's fd, created on first use (engine->lock not held). */
hixl_status_t hixl_events_fd(hixl_engine_t *engine, int *fd_p);

/* Clear the fd and arm it: *armed_p 0 when events happened since the
 * previous arm (or, without a progress thread, UCX has events to
 * progress), 1 when the fd will become readable at the next one. */
hixl_status_t hixl_events_arm(hixl_engine_t *engine, int *armed_p);

/* Enter a blocking wait: FAILED (with the message) once finalize began. */
hixl_status_t hixl_events_enter(hixl_engine_t *engine);
void hixl_events_leave(hixl_engine_t *engine);

static inline int hixl_events_closing(hixl_events_t *ev)
{
    return atomic_load(&ev->closing);
}

/* Finalize: end every blocking wait and wait until they have left. */
void hixl_events_shutdown(hixl_engine_t *engine);

#endif
