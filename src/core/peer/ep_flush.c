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
    return ep_flush;
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
    hixl_assert((ep_flush->group == NULL) && (ep_flush->wait_head == NULL));
    pthread_spin_destroy(&ep_flush->lock);
    free(ep_flush);
}

/* lock held (or exclusive): if a flush is due, the waiters become its
 * group.  Returns 1 when the caller is to issue it. */
static int hixl_ep_flush_take_waiters(hixl_ep_flush_t *ep_flush)
{
    if (!ep_flush->due || (ep_flush->ep == NULL) ||
        (ep_flush->wait_head == NULL)) {
        return 0;
    }
    /* due is set only when the flush in flight ended: no group is out */
    hixl_assert(ep_flush->group == NULL);
    hixl_assert(atomic_load(&ep_flush->busy) == 1);
    ep_flush->group     = ep_flush->wait_head;
    ep_flush->wait_head = ep_flush->wait_tail = NULL;
    ep_flush->due                             = 0;
    return 1;
}

/* lock held (or exclusive): the flush covering the group ended; detach
 * the group.  *due_p: waiters are owed the next flush (busy stays set). */
static hixl_ep_flush_waiter_t *hixl_ep_flush_claim(hixl_ep_flush_t *ep_flush,
                                                   int             *due_p)
{
    hixl_ep_flush_waiter_t *group = ep_flush->group;

    hixl_assert(atomic_load(&ep_flush->busy) == 1);   /* a flush was out */
    ep_flush->group = NULL;
    if ((ep_flush->ep != NULL) && (ep_flush->wait_head != NULL)) {
        ep_flush->due = 1;
        *due_p   = 1;
    } else {
        *due_p = 0;
        atomic_store_explicit(&ep_flush->busy, 0, memory_order_release);
    }
    return group;
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

/* Flush for ep_flush->group.  The caller is the one thread that may add or
 * issue (engine lock), and no flush is in flight, so a flush that
 * completes at once is finished here without the spinlock, and the next
 * group with it.  Returns 1 when own was covered by a flush that completed
 * here without error. */
static int hixl_ep_flush_issue(hixl_ep_flush_t        *ep_flush,
                               hixl_ep_flush_waiter_t *own)
{
    hixl_ep_flush_waiter_t *group;
    ucs_status_ptr_t sp;
    int more, due, own_done = 0;

    hixl_assert(ep_flush->group != NULL);   /* what the flush is for */
    do {
        if ((ep_flush->idle != NULL) && ep_flush->idle(ep_flush)) {
            sp = NULL;   /* nothing to flush: done at once */
        } else {
            /* the flush's, dropped by its completion */
            hixl_ep_flush_retain(ep_flush);
            sp = ep_flush->flush(ep_flush, ep_flush->ep);
            if (UCS_PTR_IS_PTR(sp)) {
                return own_done;   /* the rest: hixl_ep_flush_completed */
            }
            /* done at once: the owner's ref remains */
            hixl_ep_flush_release(ep_flush);
        }
        group = hixl_ep_flush_claim(ep_flush, &due);
        hixl_ep_flush_call(group, UCS_PTR_STATUS(sp), own, &own_done);
        more = due && hixl_ep_flush_take_waiters(ep_flush);
    } while (more);
    return own_done;
}

int hixl_ep_flush_add(hixl_ep_flush_t *ep_flush, hixl_ep_flush_waiter_t *w,
                      int own_fast)
{
    hixl_ep_flush_waiter_t *own = own_fast ? w : NULL;
    int issue, idle;

    hixl_assert((w != NULL) && (w->cb != NULL));
    w->next = NULL;
    if (ep_flush->ep == NULL) {
        w->cb(w, UCS_ERR_CANCELED);
        return 0;
    }
    /* No flush out or due: only the caller's thread sets busy, and with no
     * flush out no callback touches the lists, so they are ours without
     * the spinlock until a flush goes out. */
    if (atomic_load_explicit(&ep_flush->busy, memory_order_acquire) == 0) {
        ep_flush->group = w;
        atomic_store_explicit(&ep_flush->busy, 1, memory_order_relaxed);
        return hixl_ep_flush_issue(ep_flush, own);
    }
    /* Nothing posted since the flush out was issued (or all of it done
     * already): that flush covers w's operations.  Asked here, under the
     * engine lock, before anything more can be posted; an answer that
     * arrives meanwhile only makes it truer. */
    idle = (ep_flush->idle != NULL) && ep_flush->idle(ep_flush);
    pthread_spin_lock(&ep_flush->lock);
    if (!atomic_load(&ep_flush->busy)) {
        ep_flush->group = w;   /* a callback cleared it just now */
        atomic_store(&ep_flush->busy, 1);
        issue = 1;
    } else if (idle && (ep_flush->group != NULL)) {
        /* the flush out has not completed (its completion detaches the
         * group under this lock): w joins its group, last, so that a
         * group is called back in the order its waiters came (a join
         * is rare: walking the group is cheap enough) */
        hixl_ep_flush_waiter_t *tail = ep_flush->group;

        while (tail->next != NULL) {
            tail = tail->next;
        }
        tail->next = w;
        issue      = 0;
    } else {
        /* the flush in flight may predate w's operations: the next one */
        if (ep_flush->wait_tail != NULL) {
            ep_flush->wait_tail->next = w;
        } else {
            ep_flush->wait_head = w;
        }
        ep_flush->wait_tail = w;
        /* the flush in flight completed and nobody issued the next yet */
        issue = hixl_ep_flush_take_waiters(ep_flush);
    }
    pthread_spin_unlock(&ep_flush->lock);
    return issue ? hixl_ep_flush_issue(ep_flush, own) : 0;
}

int hixl_ep_flush_progress(hixl_ep_flush_t *ep_flush)
{
    int issue;

    pthread_spin_lock(&ep_flush->lock);
    issue = hixl_ep_flush_take_waiters(ep_flush);
    pthread_spin_unlock(&ep_flush->lock);
    if (issue) {
        hixl_ep_flush_issue(ep_flush, NULL);
    }
    return issue;
}

void hixl_ep_flush_completed(hixl_ep_flush_t *ep_flush, ucs_status_t status)
{
    hixl_ep_flush_waiter_t *group;
    unsigned calling;
    int due;

    pthread_spin_lock(&ep_flush->lock);
    group = hixl_ep_flush_claim(ep_flush, &due);
    atomic_fetch_add(&ep_flush->calling, 1);   /* close waits for us */
    pthread_spin_unlock(&ep_flush->lock);

    hixl_ep_flush_call(group, status, NULL, NULL);
    calling = atomic_fetch_sub(&ep_flush->calling, 1);
    hixl_assert(calling >= 1);   /* never below zero */
    (void)calling;
    if (due) {
        /* the engine lock may not be taken here: the next flush is issued
         * by a caller that holds it (hixl_ep_flush_progress, hixl_ep_flush_add)
         */
        atomic_store(ep_flush->wanted, 1);
    }
}

void hixl_ep_flush_close(hixl_ep_flush_t *ep_flush, ucs_status_t status)
{
    hixl_ep_flush_waiter_t *list;

    if (ep_flush->ep == NULL) {
        return;
    }
    pthread_spin_lock(&ep_flush->lock);
    list = ep_flush->group;
    if (list != NULL) {
        hixl_ep_flush_waiter_t *tail = list;

        while (tail->next != NULL) {
            tail = tail->next;
        }
        tail->next = ep_flush->wait_head;
    } else {
        list = ep_flush->wait_head;
    }
    ep_flush->group     = NULL;
    ep_flush->wait_head = ep_flush->wait_tail = NULL;
    ep_flush->due                             = 0;
    ep_flush->ep                              = NULL;
    pthread_spin_unlock(&ep_flush->lock);

    hixl_ep_flush_call(list, status, NULL, NULL);
    /* a completion that claimed its group before us is calling it back:
     * its waiters must be done before anyone may free them */
    while (atomic_load(&ep_flush->calling) != 0) {
        sched_yield();
    }
    hixl_ep_flush_release(ep_flush);
}

/* ---- UCX ------------------------------------------------------------------ */

static void hixl_ep_flush_ucp_cb(void *request, ucs_status_t status,
                                 void *user_data)
{
    hixl_ep_flush_t *ep_flush = user_data;

    ucp_request_free(request);
    hixl_ep_flush_completed(ep_flush, status);
    hixl_ep_flush_release(ep_flush);
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

ucs_status_ptr_t hixl_ep_flush_via_ucp(hixl_ep_flush_t *ep_flush, void *ep)
{
    return hixl_ep_flush_ucp_post(ep, hixl_ep_flush_ucp_cb, ep_flush);
}
