/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_wait_notifies: hixl_get_notifies that blocks until at least one
 * notify is queued.  Queuing a notify broadcasts engine->cond under
 * engine->lock (ops/notify.c), so with a progress thread the waiter sleeps
 * on it without slices; without one it progresses the engine and sleeps in
 * epoll between events (core/worker/progress.h).
 */
#include "config.h"
#include "ops/notify.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

/* Longest sleep before the deadline is looked at again. */
#define HIXL_NOTIFY_WAIT_SLICE_NS HIXL_NS_PER_S

/* Until a notify is queued, finalize begins or the deadline passes
 * (engine->lock held); 1 when there are notifies. */
static int hixl_notify_wait_queued(hixl_engine_t *engine, uint64_t deadline)
{
    hixl_spurious_wakes_t wakes = {0};
    struct timespec ts;
    uint64_t now, wake;

    hixl_assert_locked(&engine->lock);
    for (;;) {
        if (hixl_notify_queued(engine) > 0) {
            return 1;
        }
        now = hixl_now_ns();
        if (hixl_events_closing(&engine->events) || (now >= deadline)) {
            return 0;
        }
        wake = (deadline - now > HIXL_NOTIFY_WAIT_SLICE_NS) ?
               now + HIXL_NOTIFY_WAIT_SLICE_NS : deadline;
        if (engine->progress.running) {
            hixl_timespec_at(&ts, wake);
            pthread_cond_timedwait(&engine->cond, &engine->lock, &ts);
        } else {
            pthread_mutex_unlock(&engine->lock);
            hixl_progress_block(engine, wake, &wakes);
            pthread_mutex_lock(&engine->lock);
        }
    }
}

hixl_status_t hixl_wait_notifies(hixl_engine_t *engine, int32_t timeout_ms,
                                 hixl_notify_t **notifies_p, size_t *count_p)
{
    uint64_t deadline;
    hixl_status_t status;
    int queued;

    if ((engine == NULL) || (notifies_p == NULL) || (count_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL", !engine ? "engine" :
                          !notifies_p ? "notifies_p" : "count_p");
    }
    if (timeout_ms < -1) {
        return hixl_error(HIXL_PARAM_INVALID, "timeout_ms %d: give 0 to look "
                          "without waiting, -1 for no deadline, or a positive "
                          "time", (int)timeout_ms);
    }
    *notifies_p = NULL;
    *count_p    = 0;
    deadline    = hixl_deadline_ns(timeout_ms);
    status = hixl_events_enter(engine);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (!engine->progress.running) {
        hixl_progress_pass(engine, HIXL_PROGRESS_WAIT_CONTROL);
    }
    /* another thread may take what woke us: then wait again */
    do {
        pthread_mutex_lock(&engine->lock);
        queued = hixl_notify_wait_queued(engine, deadline);
        pthread_mutex_unlock(&engine->lock);
        status = queued ? hixl_get_notifies(engine, notifies_p, count_p) :
                 HIXL_SUCCESS;
    } while (queued && (status == HIXL_SUCCESS) && (*count_p == 0));
    if (!queued && hixl_events_closing(&engine->events)) {
        status = hixl_error(HIXL_FAILED, "engine %s was finalized while "
                            "waiting for notifies", engine->name.canon);
    } else if (!queued) {
        status = hixl_error(HIXL_TIMEOUT, "engine %s: no notify within %d ms",
                            engine->name.canon, (int)timeout_ms);
    }
    hixl_events_leave(engine);
    return status;
}
