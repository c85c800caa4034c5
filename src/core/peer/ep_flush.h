/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint-flush service: the one place that flushes UCX endpoints.
 *
 * A UCX endpoint flush completes once every operation posted on the
 * endpoint before it is complete at its destination.  That is what makes a
 * transfer COMPLETED mean "visible at the destination", what a layer signal
 * and a revoke answer wait for, and what disconnect, connect's wire-up,
 * staging and finalize need.  All of them are waiters here:
 *
 *   hixl_ep_flush_waiter_t { next, cb }   embedded in the waiter's record
 *
 * Flushes are shared, as a database shares a log write between commits
 * (group commit), because a flush costs a round trip where the transport
 * acknowledges puts (tcp), and up to `depth` of them are in flight at once
 * (hixl_ep_flush_set_depth; 1 unless the owner's flush function can tell
 * its flushes apart), so that a layer signal does not wait for the
 * layers posted after it:
 *  - a waiter added while fewer than depth flushes are in flight gets a
 *    flush of its own and is its group;
 *  - a waiter added while depth are in flight waits: those flushes may
 *    have been posted before the waiter's operations, so they do not cover
 *    them; everyone who waited becomes the next group under one new flush
 *    when one completes;
 *  - unless the idle test (below) says nothing was posted since the newest
 *    flush in flight was issued, or that all of it is done: then that
 *    flush covers the waiter's operations, and the waiter joins its group.
 * Groups are called back in the order their flushes were issued, each
 * after its own flush and every earlier one completed (a later flush
 * covers what the earlier ones did, and a failure of an earlier one is
 * its failure too, for the groups issued while the failed flush was out;
 * one issued after it was called back starts afresh).  So each waiter is
 * called back only after a flush posted after it was added, and where a
 * flush completes at once (shared memory, CMA), nothing ever waits.
 *
 * Exactly once: every waiter added is called back once, with the flush's
 * status or with the status given to hixl_ep_flush_close(), which settles every
 * waiter still queued before it returns, and waits for callbacks already
 * running elsewhere.  A late UCX callback of a closed endpoint (UCX 1.13 may
 * call a force-closed endpoint's flush back as late as worker destroy)
 * finds nothing to do: the service object lives until then (refcount).
 *
 * Threads: hixl_ep_flush_add, hixl_ep_flush_progress and hixl_ep_flush_close
 * are called by one thread at a time (the engine lock); UCX calls flushes back
 * from any thread, maybe with that lock held elsewhere, so callbacks never take
 * it: a waiter's cb must not block on the engine lock.  The group lists are
 * guarded by a spinlock of their own, never held across a UCX call or a
 * callback; one thread at a time makes the callbacks (the others leave
 * their completed groups to it), so groups are called back in order.
 *
 * The flush itself is a function pointer, so the service is unit-tested
 * without UCX (test/unit/ep_flush.c).
 */
#ifndef HIXL_CORE_EP_FLUSH_H_
#define HIXL_CORE_EP_FLUSH_H_

#include <pthread.h>
#include <stdatomic.h>
#include <ucs/type/status.h>

typedef struct hixl_ep_flush_waiter hixl_ep_flush_waiter_t;
typedef struct hixl_ep_flush        hixl_ep_flush_t;
typedef struct hixl_ep_flush_group  hixl_ep_flush_group_t;

/* Flushes in flight at most (hixl_ep_flush_set_depth). */
#define HIXL_EP_FLUSH_MAX_DEPTH 64

struct hixl_ep_flush_waiter {
    hixl_ep_flush_waiter_t *next;
    /* called once, from any thread, with no engine lock held or with it
     * held by the caller of add/progress/close; must not take it */
    void (*cb)(hixl_ep_flush_waiter_t *waiter, ucs_status_t status);
};

/*
 * Post one flush of ep, for group, whose completion calls
 * hixl_ep_flush_completed(group, status).  Returns NULL when it completed at
 * once, an error pointer when it could not be posted, or anything else while
 * it is in flight (UCS_PTR_* conventions).
 */
typedef ucs_status_ptr_t (*hixl_ep_flush_fn_t)(hixl_ep_flush_t       *ep_flush,
                                               void                  *ep,
                                               hixl_ep_flush_group_t *group);

/*
 * Optional: whether everything posted on ep since the last flush was
 * issued is complete, so that a flush now, with none in flight, would
 * complete at once without error.  Called where the flush function would
 * be, under the same rules; when it says so, the service finishes the
 * group without a flush and without the reference a flush takes (a small
 * transfer that completed inside its post paid a fifth of its cost in
 * those atomics), and a waiter added while a flush is in flight joins that
 * flush's group, which covers all its operations.
 */
typedef int (*hixl_ep_flush_idle_fn_t)(hixl_ep_flush_t *ep_flush);

/* The waiters one flush covers. */
struct hixl_ep_flush_group {
    hixl_ep_flush_t        *ep_flush;
    hixl_ep_flush_waiter_t *head;      /* in the order they came */
    hixl_ep_flush_waiter_t *tail;
    int                     done;      /* its flush completed */
    ucs_status_t            status;    /* with this */
};

struct hixl_ep_flush {
    pthread_spinlock_t   lock;
    void                *owner;        /* the flush function's context */
    atomic_uint          refs;         /* owner + flushes in flight */
    atomic_uint          calling;      /* callbacks running outside lock */
    void                *ep;           /* NULL once closed */
    hixl_ep_flush_fn_t      flush;
    hixl_ep_flush_idle_fn_t idle;         /* NULL: always flush */
    atomic_int          *wanted;       /* set when a flush is due */
    atomic_int           busy;         /* flushes in flight, waiters, or
                                          callbacks being made */
    int                  due;          /* the waiters' flush is to issue */
    int                  delivering;   /* a thread is calling groups back */
    unsigned             depth;        /* flushes in flight at most */
    unsigned             first;        /* the oldest group in flight */
    unsigned             out;          /* groups in flight */
    ucs_status_t         failed;       /* of an earlier group in flight */
    unsigned             fail_left;    /* groups out it is carried to */
    hixl_ep_flush_group_t groups[HIXL_EP_FLUSH_MAX_DEPTH];   /* a ring */
    hixl_ep_flush_waiter_t *wait_head;    /* waiting for a flush: the next
                                             group */
    hixl_ep_flush_waiter_t *wait_tail;
};

/* A service for ep.  wanted: a flag the owner's progress watches to call
 * hixl_ep_flush_progress (a callback may not issue the next flush itself).
 * NULL when out of memory. */
hixl_ep_flush_t *hixl_ep_flush_create(void *ep, hixl_ep_flush_fn_t flush,
                                      atomic_int *wanted);

/* How many flushes may be in flight at once (1 to HIXL_EP_FLUSH_MAX_DEPTH;
 * 1 when created), set by the owner when it installs a flush function that
 * tells its flushes apart (engine lock, as for add). */
void hixl_ep_flush_set_depth(hixl_ep_flush_t *ep_flush, unsigned depth);

/* The flush of the real thing: ucp_ep_flush_nbx on a ucp_ep_h. */
ucs_status_ptr_t hixl_ep_flush_via_ucp(hixl_ep_flush_t *ep_flush, void *ep,
                                       hixl_ep_flush_group_t *group);

/*
 * UCX's flush of ep (a ucp_ep_h): the library's one call of
 * ucp_ep_flush_nbx.  cb is UCX's send callback (it frees the request) and
 * gets arg; returns as ucp_ep_flush_nbx does.  Its callers:
 *  - hixl_ep_flush_via_ucp, and a flush function that adds to UCX's flush
 *    (core/peer/channel.c: the answers of the library's own messages); both
 *    run inside the service, which shares and settles them;
 *  - endpoint closing (core/peer/ep_close.h), the one user outside the
 *    service, for two reasons.  A connector's endpoint is closed after
 *    its service was closed: the close settles every waiter (transfers,
 *    layer signals, revoke answers) with the connection's end, and what is
 *    left is the flush that tells when the endpoint may be force-closed
 *    (a forced close must never meet a blocked queue), which nobody waits
 *    on and nothing may settle.  A listener's inbound endpoint never has a
 *    service: it is UCX's own, made for the connector's wire-up, and may
 *    be used only inside a callback of UCX that passed it, so it is
 *    flushed there, once, before its forced close.
 */
ucs_status_ptr_t hixl_ep_flush_ucp_post(
    void *ep, void (*cb)(void *request, ucs_status_t status, void *user_data),
    void *arg);

/*
 * Have w called back once a flush covering every operation posted before
 * this call completes (one posted after it, or the one in flight when the
 * idle test says nothing was posted since it was issued).
 * Returns 1 instead, without calling w->cb, when a flush covering w
 * completed successfully inside this call and own_fast is set: the caller
 * then finishes w's business itself (a transfer that completed inside its
 * post does so without atomics).  Closed: w->cb(UCS_ERR_CANCELED) at once.
 */
int hixl_ep_flush_add(hixl_ep_flush_t *ep_flush, hixl_ep_flush_waiter_t *w,
                      int own_fast);

/* Issue the flush that a callback left due (the owner's progress, when
 * *wanted was set).  Returns 1 when it issued one. */
int hixl_ep_flush_progress(hixl_ep_flush_t *ep_flush);

/* The flush of group completed with status (from the flush function's
 * completion; any thread); drops the reference the service took for it. */
void hixl_ep_flush_completed(hixl_ep_flush_group_t *group,
                             ucs_status_t status);

/* The endpoint is closing: no flush is issued on it again, every waiter
 * still queued is called back with status before this returns, and
 * callbacks running elsewhere have finished.  Drops the owner's
 * reference, so the owner calls it once and forgets ep_flush. */
void hixl_ep_flush_close(hixl_ep_flush_t *ep_flush, ucs_status_t status);

/* Take / drop a reference (the owner's is taken by create). */
void hixl_ep_flush_retain(hixl_ep_flush_t *ep_flush);
void hixl_ep_flush_release(hixl_ep_flush_t *ep_flush);

#endif
