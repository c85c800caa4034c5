/*
 * Transfer requests: a fixed pool allocated at initialization, so posting a
 * transfer allocates nothing, and handles that carry a generation, so a
 * released request's handle is refused.
 *
 * A request counts its outstanding completions in `pending`: one held by the
 * poster until posting is done, one for the UCX flush that proves remote
 * completion, one for the device work of the transfer (device.h), one for
 * the NOTIFY_ACK of a per-transfer notify.  Whoever drops the last one
 * finishes it.  All but the notify's are also counted in `data_pending`,
 * whose last drop means every byte is at its destination: only then is
 * the notify sent.  The first failure wins `status` and writes `errmsg`.
 */
#ifndef HIXL_REQUEST_H_
#define HIXL_REQUEST_H_

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct hixl_peer hixl_peer_t;

typedef enum hixl_req_state {
    HIXL_REQ_FREE,
    HIXL_REQ_ACTIVE,   /* in flight */
    HIXL_REQ_DONE,     /* finished, not yet reported */
    HIXL_REQ_ORPHAN    /* reported TIMEOUT; returns to the pool when done */
} hixl_req_state_t;

typedef struct hixl_request {
    atomic_uint          state;
    atomic_uint          pending;
    atomic_uint          data_pending; /* of pending: holds until the data
                                          is at its destination (poster,
                                          flush, device work) */
    atomic_int           status;
    atomic_int           await_ack;    /* NOTIFY sent, ack not yet seen */
    atomic_uint          flush_pending; /* (gen << 1) | 1 while our UCX
                                           flush is out, else 0 (transfer.c) */
    uint16_t             gen;
    uint32_t             index;
    uint64_t             handle;
    uint64_t             deadline_ns;
    hixl_peer_t         *peer;         /* referenced while in the request */
    hixl_transfer_op_t   op;
    size_t               num_descs;
    char                *notify_name;  /* per-transfer notify, or NULL */
    void                *notify_msg;
    size_t               notify_len;
    char                 errmsg[256];
    struct hixl_request *next_free;
    struct hixl_request *next_flush;   /* its flush group (flush_group.h) */
} hixl_request_t;

/* Free slots: hixl_req_get takes them one caller at a time (under
 * engine->lock); hixl_req_put, from any thread (a status call, a UCX
 * callback for a request reported TIMEOUT), pushes onto `returned`, which
 * the taker empties into `hot` in one exchange when `hot` runs dry.  Slots
 * never used yet (free_list) come only after both, so that a steady window
 * reuses the same few.  No lock on the hot path, and no ABA: only the taker
 * pops. */
typedef struct hixl_req_pool {
    hixl_request_t           *reqs;
    uint32_t                  size;
    hixl_request_t           *hot;        /* returned, the taker's now */
    hixl_request_t           *free_list;  /* never used yet */
    _Atomic(hixl_request_t *) returned;
} hixl_req_pool_t;

hixl_status_t hixl_req_pool_init(hixl_req_pool_t *pool, uint32_t size);
void hixl_req_pool_cleanup(hixl_req_pool_t *pool);

/* A fresh ACTIVE request holding pending = data_pending = 2 (its poster
 * and its flush), or NULL when all are in use (engine->lock held: the one
 * taker). */
hixl_request_t *hixl_req_get(hixl_req_pool_t *pool, uint16_t serial);

/* Back to the pool (drops nothing else: see hixl_xfer_release). */
void hixl_req_put(hixl_req_pool_t *pool, hixl_request_t *req);

/* Whether hixl_req_get would return a request (its caller, the one taker,
 * may rely on the answer until it takes: the others only return). */
static inline int hixl_req_available(hixl_req_pool_t *pool)
{
    return (pool->hot != NULL) || (pool->free_list != NULL) ||
           (atomic_load_explicit(&pool->returned, memory_order_relaxed) !=
            NULL);
}

/* The request a handle names, if it is still ACTIVE or DONE. */
hixl_request_t *hixl_req_lookup(hixl_req_pool_t *pool, uint16_t serial,
                                uint64_t handle);

/* Record a failure; the first one wins. */
void hixl_req_fail(hixl_request_t *req, hixl_status_t status,
                   const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- transfer.c: completion logic shared with control handling ---- */
typedef struct hixl_engine hixl_engine_t;

/* Drop one pending completion; the last one finishes the request. */
void hixl_xfer_complete_one(hixl_engine_t *engine, hixl_request_t *req);

/* Drop one data-pending (and pending) count; the last data-pending one
 * sends the per-transfer notify, if any, now that every byte landed. */
void hixl_xfer_data_done(hixl_engine_t *engine, hixl_request_t *req);

/* NOTIFY_ACK for a per-transfer notify (engine->lock held). */
void hixl_xfer_notify_acked(hixl_engine_t *engine, uint64_t seq,
                            hixl_status_t status);

/* The peer is gone: fail requests still waiting for its NOTIFY_ACK. */
void hixl_xfer_peer_closed(hixl_engine_t *engine, hixl_peer_t *peer);

/* Finalize, after the worker is gone: free the flush tokens. */
/* Finalize: drop what requests never reported still hold (their peers). */
void hixl_xfer_abandon_all(hixl_engine_t *engine);

/* Sequence numbers of per-transfer notifies carry this bit and the request
 * handle, so the ack finds its request without a lookup table. */
#define HIXL_SEQ_XFER (1ull << 63)

#endif
