/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfer requests: a fixed pool allocated at initialization, so posting a
 * transfer allocates nothing; handles that carry a generation, so a
 * released request's handle is refused; and the completion of a request,
 * which every layer above drives by calling down into this file.
 *
 * A request counts its outstanding completions in `pending`: one held by the
 * poster until posting is done, one for the endpoint flush that proves
 * remote completion (its waiter, `flush`), one for the device work of the
 * transfer (device/device.h), one for the answer to a per-transfer notify.
 * Whoever drops the last one finishes it.  All but the notify's are also
 * counted in `data_pending`, whose last drop means every byte is at its
 * destination: only then does `after_data` run (it sends the notify).  The
 * first failure wins `status` and writes `errmsg`.
 *
 * Completion runs in any thread, inside UCX callbacks too: nothing here
 * takes engine->lock.
 */
#ifndef HIXL_CORE_REQUEST_H_
#define HIXL_CORE_REQUEST_H_

#include "core/peer/ep_flush.h"
#include "core/peer/path.h"

#include "core/worker/metrics.h"

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct hixl_engine  hixl_engine_t;
typedef struct hixl_peer    hixl_peer_t;
typedef struct hixl_request hixl_request_t;

typedef enum hixl_req_state {
    HIXL_REQ_FREE,
    HIXL_REQ_ACTIVE,   /* in flight */
    HIXL_REQ_DONE,     /* finished, not yet reported */
    HIXL_REQ_ORPHAN    /* reported TIMEOUT; returns to the pool when done */
} hixl_req_state_t;

struct hixl_request {
    atomic_uint          state;
    atomic_uint          pending;
    atomic_uint          data_pending; /* of pending: holds until the data
                                          is at its destination (poster,
                                          flush, device work) */
    atomic_int           status;
    atomic_int           await_ack;    /* per-transfer notify sent, its
                                          answer not yet seen */
    uint16_t             gen;
    uint32_t             index;
    uint64_t             handle;
    uint64_t             deadline_ns;
    uint64_t             seq;          /* submission order */
    const void          *user_data;    /* returned with its status */
    hixl_engine_t       *engine;
    hixl_peer_t         *peer;         /* referenced while in flight */
    hixl_transfer_op_t   op;
    size_t               num_descs;
    char                *notify_name;  /* per-transfer notify, or NULL */
    void                *notify_msg;
    size_t               notify_len;
    /* runs once every byte landed, before the last pending drop (NULL:
     * nothing to do): sends the per-transfer notify */
    void               (*after_data)(hixl_request_t *req);
    hixl_ep_flush_waiter_t flush;   /* in its endpoint's flush group */
    /* what the metrics count at its outcome (core/worker/metrics.h):
     * the paths its descriptors took (a mask of hixl_path_t), the bytes
     * of each, when it was posted and when it ended (0: not timed) */
    unsigned             paths;
    uint64_t             path_bytes[HIXL_PATH_COUNT];
    uint64_t             post_ns;
    uint64_t             done_ns;
    char                 errmsg[256];
    hixl_request_t      *next_free;
};

/* Free slots: hixl_req_get takes them one caller at a time (under
 * engine->lock); hixl_req_put, from any thread (a status call, a UCX
 * callback for a request reported TIMEOUT), pushes onto `returned`, which
 * the taker empties into `hot` in one exchange when `hot` runs dry.  Slots
 * never used yet (reqs[used..size)) come only after both, so that a steady
 * window reuses the same few; they are zero (calloc) until first taken, so
 * an engine touches only the pages of the slots it has used: the whole
 * array (hixl.MaxRequests slots, several MiB) written at initialize cost
 * every engine tens of milliseconds of page faults and its RSS.  No lock
 * on the hot path, and no ABA: only the taker pops.  done_lock / done_cond
 * wake callers sleeping on a request. */
typedef struct hixl_req_pool {
    hixl_request_t           *reqs;
    uint32_t                  size;
    uint16_t                  serial;     /* the engine's: tags handles */
    uint64_t                  next_seq;   /* the taker's */
    hixl_request_t           *hot;        /* returned, the taker's now */
    atomic_uint               used;       /* slots taken at least once:
                                             written by the taker only */
    _Atomic(hixl_request_t *) returned;
    pthread_mutex_t           done_lock;
    pthread_cond_t            done_cond;
    atomic_uint               done_waiters;
} hixl_req_pool_t;

hixl_status_t hixl_req_pool_init(hixl_req_pool_t *pool, uint32_t size,
                                 uint16_t serial);

/* Finalize: drop what requests never reported still hold (their peers),
 * then free the pool. */
void hixl_req_pool_cleanup(hixl_req_pool_t *pool);

/* A fresh ACTIVE request holding pending = data_pending = 2 (its poster
 * and its flush), or NULL when all are in use (engine->lock held: the one
 * taker). */
hixl_request_t *hixl_req_get(hixl_req_pool_t *pool, hixl_engine_t *engine);

/* Back to the pool (drops nothing else; any thread). */
void hixl_req_put(hixl_req_pool_t *pool, hixl_request_t *req);

/* Give back a request that was never posted (nothing holds it). */
void hixl_req_discard(hixl_request_t *req);

/* Whether hixl_req_get would return a request (its caller, the one taker,
 * may rely on the answer until it takes: the others only return). */
static inline int hixl_req_available(hixl_req_pool_t *pool)
{
    return (pool->hot != NULL) ||
           (atomic_load_explicit(&pool->used, memory_order_relaxed) <
            pool->size) ||
           (atomic_load_explicit(&pool->returned, memory_order_relaxed) !=
            NULL);
}

/* The request a handle names, if it is still ACTIVE or DONE. */
hixl_request_t *hixl_req_lookup(hixl_req_pool_t *pool, uint64_t handle);

/* Call fn for every request in flight to peer (engine->lock held). */
void hixl_req_for_each(hixl_req_pool_t *pool, hixl_peer_t *peer,
                       void (*fn)(hixl_request_t *req, void *arg), void *arg);

/* Record a failure; the first one wins. */
void hixl_req_fail(hixl_request_t *req, hixl_status_t status,
                   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The request goes in flight after its post: it takes its peer reference
 * and its place in the in-flight counts (engine->lock held). */
void hixl_req_inflight(hixl_request_t *req);

/* Drop one pending completion; the last one finishes the request. */
void hixl_req_complete_one(hixl_request_t *req);

/* Drop one data-pending (and pending) count; the last data-pending one
 * runs req->after_data, now that every byte landed. */
void hixl_req_data_done(hixl_request_t *req);

/* The flush waiter's callback: a flush covering req ended with ustatus
 * (the flush's hold is dropped). */
void hixl_req_flushed(hixl_ep_flush_waiter_t *waiter, ucs_status_t ustatus);

/* It ended just now (its state goes DONE): note when, if its latency is
 * measured (core/worker/metrics.h). */
static inline void hixl_req_mark_done(hixl_request_t *req)
{
    req->done_ns = hixl_metrics_end_clock(req->post_ns);
}

/* Report a finished request (COMPLETED or FAILED, the reason into the
 * caller's last error) and release it; returns its status. */
hixl_status_t hixl_req_report(hixl_request_t *req,
                              hixl_transfer_status_t *status_p);

/* If req is past its deadline, orphan it (its completion releases it
 * later) and record TIMEOUT as the caller's last error.  1 when it did. */
int hixl_req_expire(hixl_request_t *req, uint64_t now);

/* Sleep until a completion is signalled or deadline_ns passes (the
 * progress thread completes requests meanwhile). */
void hixl_req_sleep(hixl_req_pool_t *pool, hixl_request_t *req,
                    uint64_t deadline_ns);

/* Sleep until a request completes (any of the pool's), the engine starts
 * finalizing, or wake_ns passes; unless ready(arg) already holds, checked
 * after registering as a sleeper so that no completion is missed.  For a
 * caller that waits on a set of requests with a progress thread. */
void hixl_req_sleep_until(hixl_req_pool_t *pool, int (*ready)(void *arg),
                          void *arg, uint64_t wake_ns);

const char *hixl_req_op_name(hixl_transfer_op_t op);

#endif
