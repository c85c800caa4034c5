/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint-flush service (see ep_flush.h).
 */
#include "config.h"
#include "core/peer/ep_flush.h"
#include "util/debug.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

hixl_ep_flush_t *hixl_ep_flush_create(void *ep, hixl_ep_flush_fn_t flush,
                                      atomic_int *wanted)
{
    hixl_ep_flush_t *ep_flush = calloc(1, sizeof(*ep_flush));

    if (ep_flush == NULL) {
        return NULL;
    }
    pthread_spin_init(&ep_flush->lock, PTHREAD_PROCESS_PRIVATE);
    atomic_init(&ep_flush->refs, 1);
    atomic_init(&ep_flush->calling, 0);
    atomic_init(&ep_flush->busy, 0);
    ep_flush->ep     = ep;
    ep_flush->flush  = flush;
    ep_flush->wanted = wanted;
    ep_flush->depth  = 1;
    ep_flush->failed = UCS_OK;
    return ep_flush;
}

void hixl_ep_flush_set_depth(hixl_ep_flush_t *ep_flush, unsigned depth)
{
    hixl_assert((depth >= 1) && (depth <= HIXL_EP_FLUSH_MAX_DEPTH));
    pthread_spin_lock(&ep_flush->lock);
    /* raised while a flush of the endpoint's wire-up may be out */
    hixl_assert(depth >= ep_flush->out);
    ep_flush->depth = depth;
    pthread_spin_unlock(&ep_flush->lock);
}

void hixl_ep_flush_retain(hixl_ep_flush_t *ep_flush)
{
    unsigned before = atomic_fetch_add(&ep_flush->refs, 1);

    hixl_assert(before >= 1);   /* the owner's reference lives until close */
    (void)before;
}

void hixl_ep_flush_release(hixl_ep_flush_t *ep_flush)
{
    unsigned before = atomic_fetch_sub(&ep_flush->refs, 1);

    hixl_assert(before >= 1);   /* never below zero */
    if (before != 1) {
        return;
    }
    hixl_assert(atomic_load(&ep_flush->calling) == 0);
    hixl_assert((ep_flush->out == 0) && (ep_flush->wait_head == NULL));
    pthread_spin_destroy(&ep_flush->lock);
    free(ep_flush);
}

/* lock held (or exclusive: nothing in flight): a group in flight for the
 * waiters head..tail, the newest. */
static hixl_ep_flush_group_t *hixl_ep_flush_open(hixl_ep_flush_t        *ep_flush,
                                                 hixl_ep_flush_waiter_t *head,
                                                 hixl_ep_flush_waiter_t *tail)
{
    hixl_ep_flush_group_t *g;

    hixl_assert(ep_flush->out < ep_flush->depth);
    g = &ep_flush->groups[(ep_flush->first + ep_flush->out) %
                          HIXL_EP_FLUSH_MAX_DEPTH];
    ep_flush->out++;
    g->ep_flush = ep_flush;
    g->head     = head;
    g->tail     = tail;
    g->done     = 0;
    g->status   = UCS_OK;
    return g;
}

/* lock held: if a flush is due and one more may go out, the waiters
 * become its group, which the caller is to issue. */
static hixl_ep_flush_group_t *hixl_ep_flush_take_waiters(
        hixl_ep_flush_t *ep_flush)
{
    hixl_ep_flush_group_t *g;

    if (!ep_flush->due || (ep_flush->ep == NULL) ||
        (ep_flush->wait_head == NULL) ||
        (ep_flush->out >= ep_flush->depth)) {
        return NULL;
    }
    hixl_assert(atomic_load(&ep_flush->busy) == 1);
    g = hixl_ep_flush_open(ep_flush, ep_flush->wait_head,
                           ep_flush->wait_tail);
    ep_flush->wait_head = ep_flush->wait_tail = NULL;
    ep_flush->due                             = 0;
    return g;
}

/* Call back a detached list.  own, when set and successful, is not called
 * back but reported in *own_done. */
static void hixl_ep_flush_call(hixl_ep_flush_waiter_t *list,
                               ucs_status_t status, hixl_ep_flush_waiter_t *own,
                               int *own_done)
{
    hixl_ep_flush_waiter_t *w, *next;

    for (w = list; w != NULL; w = next) {
        next    = w->next;   /* w may be gone once called back */
        hixl_assert(w->cb != NULL);
        w->next = NULL;
        if ((w == own) && (status == UCS_OK)) {
            *own_done = 1;
            continue;
        }
        w->cb(w, status);
    }
}

/* lock held: the oldest group in flight, if its flush and every earlier
 * one completed, detached with the status to call it back with. */
static hixl_ep_flush_waiter_t *hixl_ep_flush_pop(hixl_ep_flush_t *ep_flush,
                                                 ucs_status_t    *status,
                                                 int             *popped)
{
    hixl_ep_flush_group_t *g = &ep_flush->groups[ep_flush->first];
    hixl_ep_flush_waiter_t *list;

    *popped = (ep_flush->out > 0) && g->done;
    if (!*popped) {
        return NULL;
    }
    /* a later flush covers an earlier one's operations: a failure is
     * carried to the groups issued while the failed flush was out, which
     * are the ones behind it now (the ring is in issue order); a group
     * issued after it was called back starts afresh */
    if (g->status != UCS_OK) {
        if (ep_flush->failed == UCS_OK) {
            ep_flush->failed = g->status;
        }
        ep_flush->fail_left = ep_flush->out - 1;
    } else if (ep_flush->failed != UCS_OK) {
        hixl_assert(ep_flush->fail_left > 0);   /* carried to this one */
        ep_flush->fail_left--;
    }
    *status = ep_flush->failed;
    if (ep_flush->fail_left == 0) {
        ep_flush->failed = UCS_OK;
    }
    list            = g->head;
    g->head         = g->tail = NULL;
    ep_flush->first = (ep_flush->first + 1) % HIXL_EP_FLUSH_MAX_DEPTH;
    --ep_flush->out;
    if ((ep_flush->wait_head != NULL) && (ep_flush->ep != NULL)) {
        ep_flush->due = 1;   /* room for the waiters' flush */
    }
    return list;
}

/*
 * The flush of g completed with status.  Whoever finds no other thread
 * calling back calls back every group whose turn has come, in order, and
 * any that complete meanwhile; the others leave theirs to it.  Returns 1
 * when own was called back successfully here without its callback.
 */
static int hixl_ep_flush_finish(hixl_ep_flush_t *ep_flush,
                                hixl_ep_flush_group_t *g,
                                ucs_status_t status,
                                hixl_ep_flush_waiter_t *own)
{
    hixl_ep_flush_waiter_t *list;
    ucs_status_t st = UCS_OK;
    int own_done = 0, popped, due;
    unsigned calling;

    pthread_spin_lock(&ep_flush->lock);
    if (ep_flush->ep == NULL) {
        /* closed: its waiters were called back by the close */
        pthread_spin_unlock(&ep_flush->lock);
        return 0;
    }
    g->done   = 1;
    g->status = status;
    if (ep_flush->delivering) {
        pthread_spin_unlock(&ep_flush->lock);
        return 0;
    }
    ep_flush->delivering = 1;
    atomic_fetch_add(&ep_flush->calling, 1);   /* close waits for us */
    for (;;) {
        list = hixl_ep_flush_pop(ep_flush, &st, &popped);
        if (!popped) {
            break;
        }
        pthread_spin_unlock(&ep_flush->lock);
        hixl_ep_flush_call(list, st, own, &own_done);
        pthread_spin_lock(&ep_flush->lock);
    }
    ep_flush->delivering = 0;
    due                  = ep_flush->due;
    if ((ep_flush->out == 0) && !due && (ep_flush->wait_head == NULL)) {
        atomic_store_explicit(&ep_flush->busy, 0, memory_order_release);
    }
    pthread_spin_unlock(&ep_flush->lock);
    calling = atomic_fetch_sub(&ep_flush->calling, 1);
    hixl_assert(calling >= 1);   /* never below zero */
    (void)calling;
    if (due) {
        /* the engine lock may not be taken here: the next flush is issued
         * by a caller that holds it (hixl_ep_flush_progress,
         * hixl_ep_flush_add) */
        atomic_store(ep_flush->wanted, 1);
    }
    return own_done;
}

/* Flush for g, and then for the waiters whose flush that made due.  The
 * caller is the one thread that may add or issue (engine lock).  Returns
 * 1 when own was covered by a flush that completed here without error. */
static int hixl_ep_flush_issue(hixl_ep_flush_t        *ep_flush,
                               hixl_ep_flush_group_t  *g,
                               hixl_ep_flush_waiter_t *own)
{
    ucs_status_ptr_t sp;
    int own_done = 0;

    while (g != NULL) {
        if ((ep_flush->idle != NULL) && ep_flush->idle(ep_flush)) {
            sp = NULL;   /* nothing to flush: done at once */
        } else {
            /* the flush's, dropped by its completion */
            hixl_ep_flush_retain(ep_flush);
            sp = ep_flush->flush(ep_flush, ep_flush->ep, g);
            if (UCS_PTR_IS_PTR(sp)) {
                return own_done;   /* the rest: hixl_ep_flush_completed */
            }
            /* done at once: the owner's ref remains */
            hixl_ep_flush_release(ep_flush);
        }
        own_done |= hixl_ep_flush_finish(ep_flush, g, UCS_PTR_STATUS(sp),
                                         own);
        pthread_spin_lock(&ep_flush->lock);
        g = hixl_ep_flush_take_waiters(ep_flush);
        pthread_spin_unlock(&ep_flush->lock);
    }
    return own_done;
}

int hixl_ep_flush_add(hixl_ep_flush_t *ep_flush, hixl_ep_flush_waiter_t *w,
                      int own_fast)
{
    hixl_ep_flush_waiter_t *own = own_fast ? w : NULL;
    hixl_ep_flush_group_t *g    = NULL;
    int idle;

    hixl_assert((w != NULL) && (w->cb != NULL));
    w->next = NULL;
    if (ep_flush->ep == NULL) {
        w->cb(w, UCS_ERR_CANCELED);
        return 0;
    }
    idle = (ep_flush->idle != NULL) && ep_flush->idle(ep_flush);
    /* Nothing in flight, waiting or being called back: only the caller's
     * thread sets busy, and no callback touches the lists until a flush
     * goes out, so they are ours without the spinlock. */
    if (atomic_load_explicit(&ep_flush->busy, memory_order_acquire) == 0) {
        if (idle) {
            /* everything posted is done: no flush, no reference (a small
             * transfer that completed inside its post paid a fifth of its
             * cost in those atomics) */
            if (own != NULL) {
                return 1;
            }
            w->cb(w, UCS_OK);
            return 0;
        }
        atomic_store_explicit(&ep_flush->busy, 1, memory_order_relaxed);
        return hixl_ep_flush_issue(ep_flush,
                                   hixl_ep_flush_open(ep_flush, w, w), own);
    }
    /* Asked before the lock, under the engine lock, before anything more
     * can be posted; an answer that arrives meanwhile only makes it
     * truer. */
    pthread_spin_lock(&ep_flush->lock);
    if (!atomic_load(&ep_flush->busy)) {
        atomic_store(&ep_flush->busy, 1);   /* a callback cleared it */
        g = hixl_ep_flush_open(ep_flush, w, w);
    } else if (idle && (ep_flush->out > 0)) {
        /* nothing posted since the newest flush in flight was issued:
         * it covers w, which joins its group, last, so that a group is
         * called back in the order its waiters came */
        hixl_ep_flush_group_t *newest = &ep_flush->groups[
            (ep_flush->first + ep_flush->out - 1) % HIXL_EP_FLUSH_MAX_DEPTH];

        newest->tail->next = w;
        newest->tail       = w;
    } else if ((ep_flush->out < ep_flush->depth) &&
               (ep_flush->wait_head == NULL)) {
        g = hixl_ep_flush_open(ep_flush, w, w);   /* a flush of its own */
    } else {
        /* the flushes in flight may predate w's operations: the next one */
        if (ep_flush->wait_tail != NULL) {
            ep_flush->wait_tail->next = w;
        } else {
            ep_flush->wait_head = w;
        }
        ep_flush->wait_tail = w;
        /* one completed and nobody issued the waiters' flush yet */
        g = hixl_ep_flush_take_waiters(ep_flush);
    }
    pthread_spin_unlock(&ep_flush->lock);
    return (g != NULL) ? hixl_ep_flush_issue(ep_flush, g, own) : 0;
}

int hixl_ep_flush_progress(hixl_ep_flush_t *ep_flush)
{
    hixl_ep_flush_group_t *g;

    pthread_spin_lock(&ep_flush->lock);
    g = hixl_ep_flush_take_waiters(ep_flush);
    pthread_spin_unlock(&ep_flush->lock);
    if (g != NULL) {
        hixl_ep_flush_issue(ep_flush, g, NULL);
    }
    return g != NULL;
}

void hixl_ep_flush_completed(hixl_ep_flush_group_t *group,
                             ucs_status_t status)
{
    hixl_ep_flush_t *ep_flush = group->ep_flush;

    hixl_ep_flush_finish(ep_flush, group, status, NULL);
    hixl_ep_flush_release(ep_flush);   /* the flush's reference */
}

void hixl_ep_flush_close(hixl_ep_flush_t *ep_flush, ucs_status_t status)
{
    hixl_ep_flush_waiter_t *list = NULL, **tail = &list;
    hixl_ep_flush_group_t *g;
    unsigned i;

    if (ep_flush->ep == NULL) {
        return;
    }
    pthread_spin_lock(&ep_flush->lock);
    /* the groups in flight in order, then the waiters: all of them now */
    for (i = 0; i < ep_flush->out; ++i) {
        g = &ep_flush->groups[(ep_flush->first + i) %
                              HIXL_EP_FLUSH_MAX_DEPTH];
        if (g->head != NULL) {
            *tail = g->head;
            tail  = &g->tail->next;
        }
        g->head = g->tail = NULL;
    }
    *tail               = ep_flush->wait_head;
    ep_flush->out       = 0;
    ep_flush->wait_head = ep_flush->wait_tail = NULL;
    ep_flush->due       = 0;
    ep_flush->ep        = NULL;
    pthread_spin_unlock(&ep_flush->lock);

    /* a thread calling back groups it took before us goes first: its
     * groups are older than ours (callbacks in order, one thread at a
     * time), and its waiters must be done before anyone may free them */
    while (atomic_load(&ep_flush->calling) != 0) {
        sched_yield();
    }
    hixl_ep_flush_call(list, status, NULL, NULL);
    hixl_ep_flush_release(ep_flush);
}

/* ---- UCX ------------------------------------------------------------------ */

static void hixl_ep_flush_ucp_cb(void *request, ucs_status_t status,
                                 void *user_data)
{
    ucp_request_free(request);
    hixl_ep_flush_completed(user_data, status);
}

ucs_status_ptr_t hixl_ep_flush_ucp_post(
    void *ep, void (*cb)(void *request, ucs_status_t status, void *user_data),
    void *arg)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = cb;
    param.user_data    = arg;
    return ucp_ep_flush_nbx((ucp_ep_h)ep, &param);
}

ucs_status_ptr_t hixl_ep_flush_via_ucp(hixl_ep_flush_t *ep_flush, void *ep,
                                       hixl_ep_flush_group_t *group)
{
    (void)ep_flush;
    return hixl_ep_flush_ucp_post(ep, hixl_ep_flush_ucp_cb, group);
}
