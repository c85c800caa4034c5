/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pauses of an application that sleeps on the event fd (events_pause.h).
 */
#include "config.h"
#include "core/worker/events_pause.h"
#include "core/engine.h"
#include "core/worker/progress.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

void hixl_events_pause_init(hixl_events_pause_t *pause)
{
    memset(pause, 0, sizeof(*pause));
    pause->tfd = -1;
}

int hixl_events_pause_create(hixl_events_pause_t *pause)
{
    pause->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return pause->tfd;
}

void hixl_events_pause_cleanup(hixl_events_pause_t *pause)
{
    if (pause->tfd >= 0) {
        close(pause->tfd);
    }
    pause->tfd = -1;
}

/* The engine's epoll set in the application's: watched or not.  A change
 * of the interest mask allocates nothing, so it does not fail on a set
 * that holds the fd. */
static int hixl_events_pause_watch(hixl_engine_t *engine, int on)
{
    struct epoll_event e;

    memset(&e, 0, sizeof(e));
    e.events  = on ? EPOLLIN : 0;
    e.data.fd = engine->progress.epfd;
    return epoll_ctl(engine->events.epfd, EPOLL_CTL_MOD, engine->progress.epfd,
                     &e);
}

static void hixl_events_pause_begin(hixl_engine_t *engine, uint64_t ns)
{
    hixl_events_pause_t *pause = &engine->events.pause;
    struct itimerspec its;

    memset(&its, 0, sizeof(its));
    its.it_value.tv_sec  = (time_t)(ns / HIXL_NS_PER_S);
    its.it_value.tv_nsec = (long)(ns % HIXL_NS_PER_S);
    if (timerfd_settime(pause->tfd, 0, &its, NULL) != 0) {
        return;   /* no timer: sleep on the engine's fds instead */
    }
    if (hixl_events_pause_watch(engine, 0) != 0) {
        hixl_log_debug("engine %s: no pause for the event fd: %s",
                       engine->name.canon, strerror(errno));
        return;
    }
    pause->pausing = 1;
}

static void hixl_events_pause_end(hixl_engine_t *engine)
{
    hixl_events_pause_t *pause = &engine->events.pause;
    struct itimerspec off;
    uint64_t expirations;

    memset(&off, 0, sizeof(off));
    (void)timerfd_settime(pause->tfd, 0, &off, NULL);
    while (read(pause->tfd, &expirations, sizeof(expirations)) > 0) {
    }
    if (hixl_events_pause_watch(engine, 1) != 0) {
        /* cannot happen for a set that holds the fd; were it to, the
         * application would sleep through UCX's traffic: say so */
        hixl_log_warn("engine %s: the event fd no longer watches the "
                      "engine: %s", engine->name.canon, strerror(errno));
        return;
    }
    pause->pausing = 0;
}

int hixl_events_pause_prepare(hixl_engine_t *engine)
{
    hixl_events_t *ev      = &engine->events;
    hixl_events_pause_t *pause         = &ev->pause;
    uint64_t now           = hixl_now_ns();
    uint64_t             pause_ns;
    int ready;

    if (pause->pausing) {
        /* a pause is not a sleep: not counted */
        hixl_events_pause_end(engine);
    } else if (pause->armed_ns != 0) {
        /* the application slept since the last arm: a wake-up soon after
         * it, with no event of the library's since, was for nothing */
        hixl_spurious_wakes_slept(&pause->wakes, pause->armed_ns, now,
                                  2 * HIXL_EVENTS_EARLY_NS, 0,
                                  atomic_load(&ev->count) != pause->count);
    }
    pause->armed_ns = 0;
    ready = hixl_progress_ready_to_sleep(engine);
    hixl_spurious_wakes_round(&pause->wakes, !ready, 0);
    if (!ready) {
        return 0;
    }
    pause_ns =
        (pause->tfd >= 0) && (engine->progress.worker_efd >= 0) ?
            hixl_spurious_wakes_pause_ns(&pause->wakes,
                                         atomic_load(&engine->progress.busy) >
                                             0) :
            0;
    if (pause_ns > 0) {
        hixl_events_pause_begin(engine, pause_ns);
    }
    pause->armed_ns = hixl_now_ns();
    pause->count    = atomic_load(&ev->count);
    return 1;
}
