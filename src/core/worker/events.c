/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine events (see events.h).
 */
#include "config.h"
#include "core/worker/events.h"
#include "core/engine.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

void hixl_events_init(hixl_events_t *ev)
{
    pthread_mutex_init(&ev->lock, NULL);
    ev->efd  = -1;
    ev->epfd = -1;
    atomic_init(&ev->enabled, 0);
    atomic_init(&ev->armed, 0);
    atomic_init(&ev->count, 0);
    atomic_init(&ev->armed_at, 0);
    atomic_init(&ev->closing, 0);
    atomic_init(&ev->waiters, 0);
    hixl_events_pause_init(&ev->pause);
}

void hixl_events_cleanup(hixl_events_t *ev)
{
    if (ev->epfd >= 0) {
        close(ev->epfd);
    }
    if (ev->efd >= 0) {
        close(ev->efd);
    }
    ev->epfd = ev->efd = -1;
    hixl_events_pause_cleanup(&ev->pause);
    pthread_mutex_destroy(&ev->lock);
}

static void hixl_events_write(hixl_events_t *ev)
{
    uint64_t one = 1;

    if (write(ev->efd, &one, sizeof(one)) < 0) {
        return;   /* EAGAIN: the counter is near overflow, readable anyway */
    }
}

void hixl_events_signal_slow(hixl_events_t *ev)
{
    /* Counted before the armed flag is looked at: an arm that set the flag
     * before this count either sees the count change or its flag is seen
     * here (both sequentially consistent), so no event is lost. */
    atomic_fetch_add(&ev->count, 1);
    if (atomic_load(&ev->armed) && atomic_exchange(&ev->armed, 0)) {
        hixl_events_write(ev);
    }
}

static int hixl_events_epoll_add(int epfd, int fd)
{
    struct epoll_event e;

    memset(&e, 0, sizeof(e));
    e.events = EPOLLIN;
    e.data.fd = fd;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &e);
}

/* The eventfd, and the epoll set around it (ev->lock held). */
static hixl_status_t hixl_events_create(hixl_engine_t *engine)
{
    hixl_events_t *ev = &engine->events;

    ev->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ev->efd < 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "engine %s: eventfd: %s",
                          engine->name.canon, strerror(errno));
    }
    ev->epfd = epoll_create1(EPOLL_CLOEXEC);
    if ((ev->epfd < 0) || (hixl_events_epoll_add(ev->epfd, ev->efd) != 0) ||
        /* nobody progresses the engine while the application sleeps:
         * wake it for UCX and socket events too, so that its hixl_arm
         * (which progresses) runs */
        (!engine->progress.running &&
         ((hixl_events_epoll_add(ev->epfd, engine->progress.epfd) != 0) ||
          (hixl_events_pause_create(&ev->pause) < 0) ||
          (hixl_events_epoll_add(ev->epfd, ev->pause.tfd) != 0)))) {
        hixl_error(HIXL_RESOURCE_EXHAUSTED, "engine %s: epoll for the event "
                   "fd: %s", engine->name.canon, strerror(errno));
        if (ev->epfd >= 0) {
            close(ev->epfd);
        }
        close(ev->efd);
        ev->epfd = ev->efd = -1;
        hixl_events_pause_cleanup(&ev->pause);
        return HIXL_RESOURCE_EXHAUSTED;
    }
    /* armed from the start: the first event after this call wakes the
     * application even before its first hixl_arm */
    atomic_store(&ev->armed, 1);
    atomic_store(&ev->enabled, 1);
    return HIXL_SUCCESS;
}

hixl_status_t hixl_events_fd(hixl_engine_t *engine, int *fd_p)
{
    hixl_events_t *ev = &engine->events;
    hixl_status_t status = HIXL_SUCCESS;

    pthread_mutex_lock(&ev->lock);
    if (ev->epfd < 0) {
        status = hixl_events_create(engine);
    }
    if (status == HIXL_SUCCESS) {
        *fd_p = ev->epfd;
    }
    pthread_mutex_unlock(&ev->lock);
    return status;
}

hixl_status_t hixl_events_arm(hixl_engine_t *engine, int *armed_p)
{
    hixl_events_t *ev = &engine->events;
    unsigned long now, prev;
    uint64_t value;
    int fd, ready;
    hixl_status_t status;

    status = hixl_events_fd(engine, &fd);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    *armed_p = 0;
    if (!engine->progress.running) {
        pthread_mutex_lock(&ev->lock);
        ready = hixl_events_pause_prepare(engine);
        pthread_mutex_unlock(&ev->lock);
        if (!ready) {
            return HIXL_SUCCESS;   /* UCX or a socket had work: look again */
        }
    }
    /* clear, then arm, then re-check (ucp_worker_arm's order) */
    while (read(ev->efd, &value, sizeof(value)) > 0) {
    }
    atomic_store(&ev->armed, 1);
    now  = atomic_load(&ev->count);
    prev = atomic_exchange(&ev->armed_at, now);
    /* events since the last arm: the application may not have seen them.
     * The flag stays set: a spurious wake-up costs a round, a lost one a
     * hang. */
    *armed_p = (now == prev);
    return HIXL_SUCCESS;
}

/* ---- the finalize gate ----------------------------------------------------- */

hixl_status_t hixl_events_enter(hixl_engine_t *engine)
{
    hixl_events_t *ev = &engine->events;

    /* counted before the flag is read: finalize sets the flag before it
     * reads the count, so it waits for us or we see the flag */
    atomic_fetch_add(&ev->waiters, 1);
    if (atomic_load(&ev->closing)) {
        hixl_events_leave(engine);
        return hixl_error(HIXL_FAILED, "engine %s is being finalized",
                          engine->name.canon);
    }
    return HIXL_SUCCESS;
}

void hixl_events_leave(hixl_engine_t *engine)
{
    hixl_req_pool_t *pool = &engine->reqs;

    /* finalize sleeps on done_cond until the last one leaves */
    pthread_mutex_lock(&pool->done_lock);
    hixl_assert(atomic_load(&engine->events.waiters) >= 1);   /* entered */
    atomic_fetch_sub(&engine->events.waiters, 1);
    if (atomic_load(&engine->events.closing)) {
        pthread_cond_broadcast(&pool->done_cond);
    }
    pthread_mutex_unlock(&pool->done_lock);
}

/* Wake every kind of sleeper a blocking wait can be. */
static void hixl_events_wake_all(hixl_engine_t *engine)
{
    hixl_req_pool_t *pool = &engine->reqs;

    pthread_mutex_lock(&pool->done_lock);          /* transfers */
    pthread_cond_broadcast(&pool->done_cond);
    pthread_mutex_unlock(&pool->done_lock);
    pthread_mutex_lock(&engine->lock);             /* notifies, layers */
    pthread_cond_broadcast(&engine->cond);
    pthread_mutex_unlock(&engine->lock);
    if (engine->ucp_worker != NULL) {              /* epoll, no thread */
        ucp_worker_signal(engine->ucp_worker);
    }
    if (engine->events.efd >= 0) {                 /* the application's */
        hixl_events_write(&engine->events);
    }
}

void hixl_events_shutdown(hixl_engine_t *engine)
{
    hixl_req_pool_t *pool = &engine->reqs;
    struct timespec ts;

    atomic_store(&engine->events.closing, 1);
    if (pool->reqs == NULL) {
        return;   /* a partly initialized engine: nobody could wait */
    }
    hixl_events_wake_all(engine);
    pthread_mutex_lock(&pool->done_lock);
    while (atomic_load(&engine->events.waiters) > 0) {
        /* a waiter in a slice that missed the broadcast sees the flag at
         * its next look: wake again now and then */
        hixl_timespec_at(&ts, hixl_now_ns() + HIXL_NS_PER_MS * 10);
        pthread_cond_timedwait(&pool->done_cond, &pool->done_lock, &ts);
        if (atomic_load(&engine->events.waiters) > 0) {
            pthread_mutex_unlock(&pool->done_lock);
            hixl_events_wake_all(engine);
            pthread_mutex_lock(&pool->done_lock);
        }
    }
    pthread_mutex_unlock(&pool->done_lock);
}
