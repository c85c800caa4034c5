/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Request pool and request completion.
 */
#include "config.h"
#include "core/xfer/request.h"
#include "core/engine.h"
#include "core/peer/peer.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/handle.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(HIXL_PATH_COUNT == HIXL_STATS_PATHS,
               "a path of core/peer/path.h is a path of hixl_stats_t");
_Static_assert((int)HIXL_PATH_STAGE == (int)HIXL_STATS_PATH_STAGING,
               "the paths in the same order");

/* Bounds of one sleep of hixl_req_sleep. */
#define HIXL_REQ_SLEEP_MIN_NS HIXL_NS_PER_MS
#define HIXL_REQ_SLEEP_MAX_NS HIXL_NS_PER_S

/* ---- the pool ------------------------------------------------------------ */

hixl_status_t hixl_req_pool_init(hixl_req_pool_t *pool, uint32_t size,
                                 uint16_t serial)
{
    memset(pool, 0, sizeof(*pool));
    pool->reqs = calloc(size, sizeof(*pool->reqs));
    if (pool->reqs == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %u "
                          "requests (option hixl.MaxRequests)", size);
    }
    pool->size   = size;
    pool->serial = serial;
    /* the slots stay untouched until first taken (hixl_req_fresh); a zero
     * slot reads as FREE to a lookup */
    _Static_assert(HIXL_REQ_FREE == 0, "a zero slot is a free one");
    atomic_init(&pool->used, 0);
    atomic_init(&pool->returned, NULL);
    atomic_init(&pool->done_waiters, 0);
    pthread_mutex_init(&pool->done_lock, NULL);
    hixl_cond_init_monotonic(&pool->done_cond);
    return HIXL_SUCCESS;
}

void hixl_req_pool_cleanup(hixl_req_pool_t *pool)
{
    uint32_t i, used = atomic_load(&pool->used);
    hixl_request_t *req;

    if (pool->reqs == NULL) {
        return;
    }
    for (i = 0; i < used; ++i) {
        req = &pool->reqs[i];
        if ((atomic_load(&req->state) != HIXL_REQ_FREE) &&
            (req->peer != NULL)) {
            hixl_peer_release(req->peer);
        }
        free(req->notify_name);
        free(req->notify_msg);
    }
    free(pool->reqs);
    pthread_mutex_destroy(&pool->done_lock);
    pthread_cond_destroy(&pool->done_cond);
    memset(pool, 0, sizeof(*pool));
}

/* A slot never used yet, made ready (the taker only), or NULL when every
 * slot has been used: lookups may read it from now, so it is published
 * with a release store. */
static hixl_request_t *hixl_req_fresh(hixl_req_pool_t *pool)
{
    uint32_t i = atomic_load_explicit(&pool->used, memory_order_relaxed);
    hixl_request_t *req;

    if (i == pool->size) {
        return NULL;
    }
    req           = &pool->reqs[i];
    req->index    = i;
    req->flush.cb = hixl_req_flushed;
    atomic_store_explicit(&pool->used, i + 1, memory_order_release);
    return req;
}

hixl_request_t *hixl_req_get(hixl_req_pool_t *pool, hixl_engine_t *engine)
{
    hixl_request_t *req = pool->hot;

    if (req == NULL) {
        /* take everything returned so far in one exchange (no ABA: nobody
         * else pops); only when nothing was, a slot never used yet, so a
         * steady window cycles through the same few cache-warm slots */
        req = atomic_exchange(&pool->returned, NULL);
        if (req == NULL) {
            req = hixl_req_fresh(pool);
            if (req == NULL) {
                return NULL;
            }
            goto got;
        }
    }
    pool->hot = req->next_free;
got:
    hixl_assert(atomic_load(&req->state) == HIXL_REQ_FREE);

    /* nobody else sees the slot before the transfer is posted (UCX's own
     * synchronisation publishes it to its callbacks): relaxed stores */
    req->gen         = hixl_gen_next(req->gen);
    req->handle      = hixl_handle_make(pool->serial, req->gen, req->index);
    req->engine      = engine;
    req->peer        = NULL;
    req->seq         = ++pool->next_seq;
    req->user_data   = NULL;
    req->notify_name = NULL;
    req->notify_msg  = NULL;
    req->notify_len  = 0;
    req->after_data  = NULL;
    req->errmsg[0]   = '\0';
    req->paths       = 0;
    /* two holds from the start: the poster's, and its flush's (a transfer
     * always ends with one) */
    atomic_store_explicit(&req->pending, 2, memory_order_relaxed);
    atomic_store_explicit(&req->data_pending, 2, memory_order_relaxed);
    atomic_store_explicit(&req->status, HIXL_SUCCESS, memory_order_relaxed);
    atomic_store_explicit(&req->await_ack, 0, memory_order_relaxed);
    atomic_store_explicit(&req->state, HIXL_REQ_ACTIVE, memory_order_release);
    return req;
}

void hixl_req_put(hixl_req_pool_t *pool, hixl_request_t *req)
{
    hixl_request_t *head;

    hixl_assert(atomic_load(&req->state) != HIXL_REQ_FREE);   /* no double put */
    free(req->notify_name);
    free(req->notify_msg);
    req->notify_name = NULL;
    req->notify_msg  = NULL;
    atomic_store_explicit(&req->state, HIXL_REQ_FREE, memory_order_release);
    head = atomic_load_explicit(&pool->returned, memory_order_relaxed);
    do {
        req->next_free = head;
    } while (!atomic_compare_exchange_weak(&pool->returned, &head, req));
}

/* Back to the pool, with the peer reference it held. */
static void hixl_req_release(hixl_request_t *req)
{
    hixl_peer_t *peer = req->peer;

    req->peer = NULL;
    hixl_req_put(&req->engine->reqs, req);
    if (peer != NULL) {
        hixl_peer_release(peer);
    }
}

void hixl_req_discard(hixl_request_t *req)
{
    hixl_req_release(req);
}

hixl_request_t *hixl_req_lookup(hixl_req_pool_t *pool, uint64_t handle)
{
    uint32_t i = hixl_handle_index(handle);
    hixl_request_t *req;
    unsigned state;

    if ((hixl_handle_engine(handle) != pool->serial) || (i >= pool->size)) {
        return NULL;
    }
    req   = &pool->reqs[i];
    state = atomic_load(&req->state);
    if ((req->gen != hixl_handle_gen(handle)) ||
        ((state != HIXL_REQ_ACTIVE) && (state != HIXL_REQ_DONE))) {
        return NULL;
    }
    return req;
}

void hixl_req_for_each(hixl_req_pool_t *pool, hixl_peer_t *peer,
                       void (*fn)(hixl_request_t *req, void *arg), void *arg)
{
    uint32_t i, used = atomic_load(&pool->used);

    for (i = 0; i < used; ++i) {
        if (pool->reqs[i].peer == peer) {
            fn(&pool->reqs[i], arg);
        }
    }
}

/* ---- completion ---------------------------------------------------------- */

const char *hixl_req_op_name(hixl_transfer_op_t op)
{
    return (op == HIXL_WRITE) ? "WRITE" : "READ";
}

void hixl_req_fail(hixl_request_t *req, hixl_status_t status,
                   const char *fmt, ...)
{
    int expected = HIXL_SUCCESS;
    va_list ap;

    if (!atomic_compare_exchange_strong(&req->status, &expected,
                                        (int)status)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(req->errmsg, sizeof(req->errmsg), fmt, ap);
    va_end(ap);
}

void hixl_req_inflight(hixl_request_t *req)
{
    hixl_assert(atomic_load(&req->state) == HIXL_REQ_ACTIVE);
    hixl_peer_retain(req->peer);
    atomic_fetch_add(&req->peer->inflight, 1);
    atomic_fetch_add(&req->engine->progress.busy, 1);
}

static void hixl_req_wake(hixl_req_pool_t *pool)
{
    /* A sleeper registers in done_waiters under done_lock before it checks
     * the state, so either it sees DONE or it is counted here. */
    if (atomic_load(&pool->done_waiters) == 0) {
        return;
    }
    pthread_mutex_lock(&pool->done_lock);
    pthread_cond_broadcast(&pool->done_cond);
    pthread_mutex_unlock(&pool->done_lock);
}

void hixl_req_complete_one(hixl_request_t *req)
{
    hixl_engine_t *engine = req->engine;
    unsigned expected     = HIXL_REQ_ACTIVE;
    unsigned before       = atomic_fetch_sub(&req->pending, 1);

    hixl_assert(before >= 1);   /* one completion per hold */
    if (before != 1) {
        return;
    }
    before = atomic_fetch_sub(&req->peer->inflight, 1);
    hixl_assert(before >= 1);
    before = atomic_fetch_sub(&engine->progress.busy, 1);
    hixl_assert(before >= 1);
    (void)before;
    hixl_req_mark_done(req);
    if (atomic_compare_exchange_strong(&req->state, &expected,
                                       HIXL_REQ_DONE)) {
        hixl_req_wake(&engine->reqs);
        hixl_events_signal(&engine->events);
    } else {
        /* reported as TIMEOUT already: nobody will ask again */
        hixl_req_release(req);
    }
}

void hixl_req_data_done(hixl_request_t *req)
{
    /* the last data-bearing completion (endpoint flush, device copies,
     * staged chunks) runs after_data: the notify must not overtake them */
    unsigned before = atomic_fetch_sub(&req->data_pending, 1);

    hixl_assert(before >= 1);
    if ((before == 1) &&
        (req->after_data != NULL) &&
        (atomic_load(&req->status) == HIXL_SUCCESS)) {
        req->after_data(req);
    }
    hixl_req_complete_one(req);
}

void hixl_req_flushed(hixl_ep_flush_waiter_t *waiter, ucs_status_t ustatus)
{
    hixl_request_t *req = (hixl_request_t*)((char*)waiter -
                                            offsetof(hixl_request_t, flush));
    hixl_peer_t *peer   = req->peer;

    if (ustatus != UCS_OK) {
        hixl_req_fail(req, HIXL_FAILED, "%s of %zu descriptor(s) to %s "
                      "failed: %s%s%s", hixl_req_op_name(req->op),
                      req->num_descs, peer->name, ucs_status_string(ustatus),
                      peer->close_reason[0] ? "; " : "", peer->close_reason);
    }
    hixl_req_data_done(req);
}

/* Count req's outcome, as the application is told it. */
static void hixl_req_account(hixl_request_t *req, unsigned outcome)
{
    uint64_t latency = UINT64_MAX;

    if ((outcome == HIXL_STATS_COMPLETED) && (req->post_ns != 0) &&
        (req->done_ns >= req->post_ns)) {
        latency = req->done_ns - req->post_ns;
    }
    hixl_metrics_transfer(req->engine->metrics, (unsigned)req->op, req->paths,
                          req->path_bytes, outcome, latency);
}

hixl_status_t hixl_req_report(hixl_request_t *req,
                              hixl_transfer_status_t *status_p)
{
    hixl_status_t status = (hixl_status_t)atomic_load(&req->status);

    hixl_assert(atomic_load(&req->state) == HIXL_REQ_DONE);
    if (status == HIXL_SUCCESS) {
        *status_p = HIXL_TRANSFER_COMPLETED;
        hixl_req_account(req, HIXL_STATS_COMPLETED);
    } else {
        *status_p = HIXL_TRANSFER_FAILED;
        hixl_req_account(req, HIXL_STATS_FAILED);
        hixl_error(status, "%s", req->errmsg);
    }
    hixl_req_release(req);
    return status;
}

int hixl_req_expire(hixl_request_t *req, uint64_t now)
{
    unsigned expected = HIXL_REQ_ACTIVE;

    if ((now < req->deadline_ns) ||
        !atomic_compare_exchange_strong(&req->state, &expected,
                                        HIXL_REQ_ORPHAN)) {
        return 0;
    }
    hixl_req_account(req, HIXL_STATS_TIMEOUT);
    hixl_error(HIXL_TIMEOUT, "%s of %zu descriptor(s) to %s did not complete "
               "within its timeout; its buffers stay in use until the "
               "transport gives them up", hixl_req_op_name(req->op),
               req->num_descs, req->peer->name);
    return 1;
}

void hixl_req_sleep_until(hixl_req_pool_t *pool, int (*ready)(void *arg),
                          void *arg, uint64_t wake_ns)
{
    struct timespec ts;

    pthread_mutex_lock(&pool->done_lock);
    atomic_fetch_add(&pool->done_waiters, 1);
    if (!ready(arg)) {
        hixl_timespec_at(&ts, wake_ns);
        pthread_cond_timedwait(&pool->done_cond, &pool->done_lock, &ts);
    }
    hixl_assert(atomic_load(&pool->done_waiters) >= 1);   /* ours */
    atomic_fetch_sub(&pool->done_waiters, 1);
    pthread_mutex_unlock(&pool->done_lock);
}

void hixl_req_sleep(hixl_req_pool_t *pool, hixl_request_t *req,
                    uint64_t deadline_ns)
{
    struct timespec ts;
    uint64_t now, wake;

    pthread_mutex_lock(&pool->done_lock);
    atomic_fetch_add(&pool->done_waiters, 1);
    if (atomic_load(&req->state) != HIXL_REQ_DONE) {
        /* the deadline may be on the coarse clock, which lags by up to a
         * tick: past it, sleep in short slices until it expires; a long
         * sleep wakes now and then (the caller re-checks its request) */
        now  = hixl_now_ns();
        wake = deadline_ns;
        if ((wake == UINT64_MAX) || (wake > now + HIXL_REQ_SLEEP_MAX_NS)) {
            wake = now + HIXL_REQ_SLEEP_MAX_NS;
        } else if (wake < now + HIXL_REQ_SLEEP_MIN_NS) {
            wake = now + HIXL_REQ_SLEEP_MIN_NS;
        }
        hixl_timespec_at(&ts, wake);
        pthread_cond_timedwait(&pool->done_cond, &pool->done_lock, &ts);
    }
    hixl_assert(atomic_load(&pool->done_waiters) >= 1);   /* ours */
    atomic_fetch_sub(&pool->done_waiters, 1);
    pthread_mutex_unlock(&pool->done_lock);
}
