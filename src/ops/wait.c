/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion without polling, for transfers: hixl_wait_transfers (a
 * thread blocks on a set of requests), and the engine's event fd with
 * hixl_arm (an epoll loop or asyncio waits on it; core/worker/events.h).
 *
 * A waiter sleeps on the request pool's condition variable, which every
 * completion broadcasts while someone sleeps (core/xfer/request.c); without a
 * progress thread it progresses the engine itself and sleeps in epoll
 * between events, as the thread would.  It wakes at the earliest deadline
 * of its requests too, so a request's own TIMEOUT is reported on time.
 */
#include "config.h"
#include "core/engine.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* Longest sleep between looks at the deadlines (a request's deadline is
 * on the coarse clock, which may lag the sleep's). */
#define HIXL_WAIT_MAX_SLEEP_NS HIXL_NS_PER_S

typedef struct hixl_wait_set {
    hixl_engine_t          *engine;
    const hixl_req_t       *handles;
    hixl_request_t        **reqs;      /* NULL once reported */
    size_t                  n;
    hixl_transfer_status_t *statuses;
    size_t                  done;      /* reported by this call */
    size_t                  first;     /* lowest index reported */
} hixl_wait_set_t;

static int hixl_wait_by_ptr(const void *a, const void *b)
{
    const void *pa = *(void *const *)a, *pb = *(void *const *)b;

    return (pa > pb) - (pa < pb);
}

/* Every handle names a request in flight on this engine, none twice. */
static hixl_status_t hixl_wait_resolve(hixl_wait_set_t *ws)
{
    hixl_status_t status = HIXL_SUCCESS;
    hixl_request_t **sorted;
    size_t i;

    for (i = 0; i < ws->n; ++i) {
        ws->reqs[i] = hixl_req_lookup(&ws->engine->reqs,
                                      (uintptr_t)ws->handles[i]);
        if (ws->reqs[i] == NULL) {
            return hixl_error(HIXL_PARAM_INVALID, "request %zu (%p) is not in "
                              "flight on engine %s (already reported, or "
                              "never issued by it)", i,
                              (void*)ws->handles[i], ws->engine->name.canon);
        }
    }
    sorted = malloc(ws->n * sizeof(*sorted));
    if (sorted == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a wait "
                          "on %zu requests", ws->n);
    }
    memcpy(sorted, ws->reqs, ws->n * sizeof(*sorted));
    qsort(sorted, ws->n, sizeof(*sorted), hixl_wait_by_ptr);
    for (i = 1; i < ws->n; ++i) {
        if (sorted[i] == sorted[i - 1]) {
            status = hixl_error(HIXL_PARAM_INVALID, "request %p is given "
                                "twice (a request is reported once)",
                                (void*)(uintptr_t)sorted[i]->handle);
            break;
        }
    }
    free(sorted);
    return status;
}

/* Report (and release) every request of the set that ended, as
 * hixl_get_transfer_status would: DONE, or past its own deadline. */
static void hixl_wait_collect(hixl_wait_set_t *ws)
{
    uint64_t now = hixl_now_coarse_ns();
    hixl_request_t *req;
    size_t i;

    for (i = 0; i < ws->n; ++i) {
        req = ws->reqs[i];
        if (req == NULL) {
            continue;
        }
        if (atomic_load(&req->state) == HIXL_REQ_DONE) {
            hixl_req_report(req, &ws->statuses[i]);
        } else if (hixl_req_expire(req, now)) {
            ws->statuses[i] = HIXL_TRANSFER_TIMEOUT;
        } else {
            continue;
        }
        ws->reqs[i] = NULL;
        if (ws->done++ == 0) {
            ws->first = i;
        }
    }
}

/* For the sleeper: is there anything to collect (or a reason to stop)? */
static int hixl_wait_ready(void *arg)
{
    hixl_wait_set_t *ws = arg;
    size_t i;

    if (hixl_events_closing(&ws->engine->events)) {
        return 1;
    }
    for (i = 0; i < ws->n; ++i) {
        if ((ws->reqs[i] != NULL) &&
            (atomic_load(&ws->reqs[i]->state) == HIXL_REQ_DONE)) {
            return 1;
        }
    }
    return 0;
}

/* When to wake at the latest: the wait's deadline, a request's own, or
 * the longest sleep. */
static uint64_t hixl_wait_wake_ns(const hixl_wait_set_t *ws,
                                  uint64_t deadline)
{
    uint64_t now  = hixl_now_ns();
    uint64_t wake = now + HIXL_WAIT_MAX_SLEEP_NS;
    size_t i;

    if (deadline < wake) {
        wake = deadline;
    }
    for (i = 0; i < ws->n; ++i) {
        if ((ws->reqs[i] != NULL) && (ws->reqs[i]->deadline_ns < wake)) {
            /* coarse clock: a tick late at most; the next round sees it */
            wake = ws->reqs[i]->deadline_ns;
        }
    }
    return (wake < now + HIXL_NS_PER_MS) ? now + HIXL_NS_PER_MS : wake;
}

static hixl_status_t hixl_wait_loop(hixl_wait_set_t *ws,
                                    hixl_wait_mode_t mode,
                                    int32_t timeout_ms)
{
    hixl_engine_t *engine   = ws->engine;
    uint64_t deadline       = hixl_deadline_ns(timeout_ms);
    size_t want             = (mode == HIXL_WAIT_ALL) ? ws->n : 1;
    hixl_spurious_wakes_t wakes            = {0};

    for (;;) {
        hixl_wait_collect(ws);
        if (ws->done >= want) {
            return HIXL_SUCCESS;
        }
        if (hixl_events_closing(&engine->events)) {
            return hixl_error(HIXL_FAILED, "engine %s was finalized while "
                              "waiting: %zu of %zu requests reported",
                              engine->name.canon, ws->done, ws->n);
        }
        if (hixl_now_ns() >= deadline) {
            return hixl_error(HIXL_TIMEOUT, "%zu of %zu requests ended within "
                              "%d ms (waiting for %s)", ws->done, ws->n,
                              (int)timeout_ms, (mode == HIXL_WAIT_ALL) ?
                              "all" : "any");
        }
        if (engine->progress.running) {
            hixl_req_sleep_until(&engine->reqs, hixl_wait_ready, ws,
                                 hixl_wait_wake_ns(ws, deadline));
        } else {
            hixl_progress_block(engine, hixl_wait_wake_ns(ws, deadline),
                                &wakes);
        }
    }
}

static hixl_status_t hixl_wait_check(hixl_engine_t *engine,
                                     const hixl_req_t *reqs, size_t n,
                                     hixl_wait_mode_t mode, int32_t timeout_ms,
                                     hixl_transfer_status_t *statuses)
{
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if (reqs == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "reqs is NULL");
    }
    if (n == 0) {
        return hixl_error(HIXL_PARAM_INVALID, "no requests to wait for (n 0)");
    }
    if (statuses == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "statuses is NULL");
    }
    if ((mode != HIXL_WAIT_ALL) && (mode != HIXL_WAIT_ANY)) {
        return hixl_error(HIXL_PARAM_INVALID, "wait mode %d is neither "
                          "HIXL_WAIT_ALL (0) nor HIXL_WAIT_ANY (1)", (int)mode);
    }
    if (timeout_ms < -1) {
        return hixl_error(HIXL_PARAM_INVALID, "timeout_ms %d: give 0 to look "
                          "without waiting, -1 for no deadline, or a positive "
                          "time", (int)timeout_ms);
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_wait_transfers(hixl_engine_t *engine,
                                  const hixl_req_t *reqs, size_t n,
                                  hixl_wait_mode_t mode, int32_t timeout_ms,
                                  hixl_transfer_status_t *statuses,
                                  size_t *first_done_p)
{
    hixl_wait_set_t ws;
    hixl_status_t status;
    size_t i;

    status = hixl_wait_check(engine, reqs, n, mode, timeout_ms, statuses);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    for (i = 0; i < n; ++i) {
        statuses[i] = HIXL_TRANSFER_WAITING;
    }
    if (first_done_p != NULL) {
        *first_done_p = n;
    }
    status = hixl_events_enter(engine);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    memset(&ws, 0, sizeof(ws));
    ws.engine   = engine;
    ws.handles  = reqs;
    ws.n        = n;
    ws.statuses = statuses;
    ws.reqs     = malloc(n * sizeof(*ws.reqs));
    if (ws.reqs == NULL) {
        status = hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                            "wait on %zu requests", n);
        goto out;
    }
    status = hixl_wait_resolve(&ws);
    if (status == HIXL_SUCCESS) {
        status = hixl_wait_loop(&ws, mode, timeout_ms);
    }
    if ((first_done_p != NULL) && (ws.done > 0)) {
        *first_done_p = ws.first;
    }
    free(ws.reqs);
out:
    hixl_events_leave(engine);
    return status;
}

hixl_status_t hixl_get_event_fd(hixl_engine_t *engine, int *fd_p)
{
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if (fd_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "fd_p is NULL");
    }
    return hixl_events_fd(engine, fd_p);
}

hixl_status_t hixl_arm(hixl_engine_t *engine, int *armed_p)
{
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if (armed_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "armed_p is NULL");
    }
    return hixl_events_arm(engine, armed_p);
}
