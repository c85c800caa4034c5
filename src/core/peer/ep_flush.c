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

hixl_epf_t *hixl_epf_create(void *ep, hixl_epf_flush_fn_t flush,
                            atomic_int *wanted)
{
    hixl_epf_t *epf = calloc(1, sizeof(*epf));

    if (epf == NULL) {
        return NULL;
    }
    pthread_spin_init(&epf->lock, PTHREAD_PROCESS_PRIVATE);
    atomic_init(&epf->refs, 1);
    atomic_init(&epf->calling, 0);
    atomic_init(&epf->busy, 0);
    epf->ep     = ep;
    epf->flush  = flush;
    epf->wanted = wanted;
    return epf;
}

void hixl_epf_retain(hixl_epf_t *epf)
{
    unsigned before = atomic_fetch_add(&epf->refs, 1);

    hixl_assert(before >= 1);   /* the owner's reference lives until close */
    (void)before;
}

void hixl_epf_release(hixl_epf_t *epf)
{
    unsigned before = atomic_fetch_sub(&epf->refs, 1);

    hixl_assert(before >= 1);   /* never below zero */
    if (before != 1) {
        return;
    }
    hixl_assert(atomic_load(&epf->calling) == 0);
    hixl_assert((epf->group == NULL) && (epf->wait_head == NULL));
    pthread_spin_destroy(&epf->lock);
    free(epf);
}

/* lock held (or exclusive): if a flush is due, the waiters become its
 * group.  Returns 1 when the caller is to issue it. */
static int hixl_epf_take_waiters(hixl_epf_t *epf)
{
    if (!epf->due || (epf->ep == NULL) || (epf->wait_head == NULL)) {
        return 0;
    }
    /* due is set only when the flush in flight ended: no group is out */
    hixl_assert(epf->group == NULL);
    hixl_assert(atomic_load(&epf->busy) == 1);
    epf->group     = epf->wait_head;
    epf->wait_head = epf->wait_tail = NULL;
    epf->due       = 0;
    return 1;
}

/* lock held (or exclusive): the flush covering the group ended; detach
 * the group.  *due_p: waiters are owed the next flush (busy stays set). */
static hixl_epf_waiter_t *hixl_epf_claim(hixl_epf_t *epf, int *due_p)
{
    hixl_epf_waiter_t *group = epf->group;

    hixl_assert(atomic_load(&epf->busy) == 1);   /* a flush was out */
    epf->group = NULL;
    if ((epf->ep != NULL) && (epf->wait_head != NULL)) {
        epf->due = 1;
        *due_p   = 1;
    } else {
        *due_p = 0;
        atomic_store_explicit(&epf->busy, 0, memory_order_release);
    }
    return group;
}

/* Call back a detached list.  own, when set and successful, is not called
 * back but reported in *own_done. */
static void hixl_epf_call(hixl_epf_waiter_t *list, ucs_status_t status,
                          hixl_epf_waiter_t *own, int *own_done)
{
    hixl_epf_waiter_t *w, *next;

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

/* Flush for epf->group.  The caller is the one thread that may add or
 * issue (engine lock), and no flush is in flight, so a flush that
 * completes at once is finished here without the spinlock, and the next
 * group with it.  Returns 1 when own was covered by a flush that completed
 * here without error. */
static int hixl_epf_issue(hixl_epf_t *epf, hixl_epf_waiter_t *own)
{
    hixl_epf_waiter_t *group;
    ucs_status_ptr_t sp;
    int more, due, own_done = 0;

    hixl_assert(epf->group != NULL);   /* what the flush is for */
    do {
        if ((epf->idle != NULL) && epf->idle(epf)) {
            sp = NULL;   /* nothing to flush: done at once */
        } else {
            hixl_epf_retain(epf);   /* the flush's, dropped by its completion */
            sp = epf->flush(epf, epf->ep);
            if (UCS_PTR_IS_PTR(sp)) {
                return own_done;   /* the rest: hixl_epf_flushed */
            }
            hixl_epf_release(epf);  /* done at once: the owner's ref remains */
        }
        group = hixl_epf_claim(epf, &due);
        hixl_epf_call(group, UCS_PTR_STATUS(sp), own, &own_done);
        more = due && hixl_epf_take_waiters(epf);
    } while (more);
    return own_done;
}

int hixl_epf_add(hixl_epf_t *epf, hixl_epf_waiter_t *w, int own_fast)
{
    hixl_epf_waiter_t *own = own_fast ? w : NULL;
    int issue;

    hixl_assert((w != NULL) && (w->cb != NULL));
    w->next = NULL;
    if (epf->ep == NULL) {
        w->cb(w, UCS_ERR_CANCELED);
        return 0;
    }
    /* No flush out or due: only the caller's thread sets busy, and with no
     * flush out no callback touches the lists, so they are ours without
     * the spinlock until a flush goes out. */
    if (atomic_load_explicit(&epf->busy, memory_order_acquire) == 0) {
        epf->group = w;
        atomic_store_explicit(&epf->busy, 1, memory_order_relaxed);
        return hixl_epf_issue(epf, own);
    }
    pthread_spin_lock(&epf->lock);
    if (!atomic_load(&epf->busy)) {
        epf->group = w;   /* a callback cleared it just now */
        atomic_store(&epf->busy, 1);
        issue = 1;
    } else {
        /* the flush in flight may predate w's operations: the next one */
        if (epf->wait_tail != NULL) {
            epf->wait_tail->next = w;
        } else {
            epf->wait_head = w;
        }
        epf->wait_tail = w;
        /* the flush in flight completed and nobody issued the next yet */
        issue = hixl_epf_take_waiters(epf);
    }
    pthread_spin_unlock(&epf->lock);
    return issue ? hixl_epf_issue(epf, own) : 0;
}

int hixl_epf_progress(hixl_epf_t *epf)
{
    int issue;

    pthread_spin_lock(&epf->lock);
    issue = hixl_epf_take_waiters(epf);
    pthread_spin_unlock(&epf->lock);
    if (issue) {
        hixl_epf_issue(epf, NULL);
    }
    return issue;
}

void hixl_epf_flushed(hixl_epf_t *epf, ucs_status_t status)
{
    hixl_epf_waiter_t *group;
    unsigned calling;
    int due;

    pthread_spin_lock(&epf->lock);
    group = hixl_epf_claim(epf, &due);
    atomic_fetch_add(&epf->calling, 1);   /* close waits for us */
    pthread_spin_unlock(&epf->lock);

    hixl_epf_call(group, status, NULL, NULL);
    calling = atomic_fetch_sub(&epf->calling, 1);
    hixl_assert(calling >= 1);   /* never below zero */
    (void)calling;
    if (due) {
        /* the engine lock may not be taken here: the next flush is issued
         * by a caller that holds it (hixl_epf_progress, hixl_epf_add) */
        atomic_store(epf->wanted, 1);
    }
}

void hixl_epf_close(hixl_epf_t *epf, ucs_status_t status)
{
    hixl_epf_waiter_t *list;

    if (epf->ep == NULL) {
        return;
    }
    pthread_spin_lock(&epf->lock);
    list = epf->group;
    if (list != NULL) {
        hixl_epf_waiter_t *tail = list;

        while (tail->next != NULL) {
            tail = tail->next;
        }
        tail->next = epf->wait_head;
    } else {
        list = epf->wait_head;
    }
    epf->group     = NULL;
    epf->wait_head = epf->wait_tail = NULL;
    epf->due       = 0;
    epf->ep        = NULL;
    pthread_spin_unlock(&epf->lock);

    hixl_epf_call(list, status, NULL, NULL);
    /* a completion that claimed its group before us is calling it back:
     * its waiters must be done before anyone may free them */
    while (atomic_load(&epf->calling) != 0) {
        sched_yield();
    }
    hixl_epf_release(epf);
}

/* ---- UCX ------------------------------------------------------------------ */

static void hixl_epf_ucp_cb(void *request, ucs_status_t status,
                            void *user_data)
{
    hixl_epf_t *epf = user_data;

    ucp_request_free(request);
    hixl_epf_flushed(epf, status);
    hixl_epf_release(epf);
}

ucs_status_ptr_t hixl_epf_ucp_post(void *ep,
                                   void (*cb)(void *request,
                                              ucs_status_t status,
                                              void *user_data),
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

ucs_status_ptr_t hixl_epf_ucp_flush(hixl_epf_t *epf, void *ep)
{
    return hixl_epf_ucp_post(ep, hixl_epf_ucp_cb, epf);
}
