/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing UCX endpoints (ep_close.h).
 */
#include "config.h"
#include "core/peer/ep_close.h"
#include "core/am/am.h"
#include "core/engine.h"
#include "core/peer/ep_flush.h"
#include "core/peer/peer.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct hixl_ep_close {
    hixl_ep_close_t *next;
    hixl_engine_t *engine;
    uint64_t       id;            /* UNBIND's cookie, echoed in the ACK */
    ucp_ep_h       ep;
    hixl_ep_err_t *err;
    int            unbind;        /* the listener is asked to close too */
    uint64_t       conn;          /* the listener's id of the connection */
    uint64_t       deadline_ns;   /* for the answer, from UNBIND's send */
    /* under the list's lock: */
    int            answered;
    int            flushed;       /* 1 done, -1 done with an error */
    int            unbind_sent;
    /* the list's and the flush's (whichever ends last frees it) */
    atomic_int     refs;
    char           name[HIXL_ENGINE_NAME_MAX + 1];
};

/* An inbound endpoint being closed: one flush each, however many messages
 * of its ended connection still arrive meanwhile. */
struct hixl_ep_close_reply {
    hixl_ep_close_reply_t *next;
    hixl_engine_t       *engine;
    ucp_ep_h             ep;
};

static void hixl_ep_close_release(hixl_ep_close_t *r)
{
    int before = atomic_fetch_sub(&r->refs, 1);

    hixl_assert(before >= 1);   /* the list's and the flush's, no more */
    if (before == 1) {
        free(r);
    }
}

/* ---- connector ---------------------------------------------------------------- */

static void hixl_ep_close_flushed(void *request, ucs_status_t status,
                                  void *user_data)
{
    hixl_ep_close_t  *r = user_data;
    hixl_ep_closer_t *l = &r->engine->ep_closer;

    ucp_request_free(request);
    pthread_mutex_lock(&l->lock);
    hixl_assert(r->flushed == 0);   /* called back once */
    r->flushed = (status == UCS_OK) ? 1 : -1;
    pthread_mutex_unlock(&l->lock);
    hixl_ep_close_release(r);
}

/* Flush r's endpoint; its completion marks r (at once if nothing is out).
 * Its flush service was closed before (ep_flush.h says why this flush is
 * not one of the service's). */
static void hixl_ep_close_flush(hixl_ep_close_t *r)
{
    ucs_status_ptr_t sp;

    sp = hixl_ep_flush_ucp_post(r->ep, hixl_ep_close_flushed, r);
    if (!UCS_PTR_IS_PTR(sp)) {
        r->flushed = UCS_PTR_IS_ERR(sp) ? -1 : 1;
        hixl_ep_close_release(r);   /* no callback will come */
    }
}

uint64_t hixl_ep_close_start(hixl_engine_t *engine, ucp_ep_h ep,
                             hixl_ep_err_t *err, uint64_t conn, int unbind,
                             const char *name)
{
    hixl_ep_closer_t *l = &engine->ep_closer;
    hixl_ep_close_t  *r = calloc(1, sizeof(*r));
    uint64_t id;

    hixl_assert((ep != NULL) && (err != NULL));
    hixl_assert(!unbind || (conn != 0));   /* UNBIND names the connection */
    if (r == NULL) {   /* no memory: a forced close, whatever it meets */
        hixl_ep_close_now(ep, err, 1, name);
        hixl_ep_err_release(err);
        return 0;
    }
    atomic_init(&r->refs, 2);
    r->engine = engine;
    r->ep     = ep;
    r->err    = err;
    r->unbind = unbind;
    r->conn   = conn;
    snprintf(r->name, sizeof(r->name), "%s", name);
    pthread_mutex_lock(&l->lock);
    r->id   = id = ++l->next_id;
    r->next = l->head;
    l->head = r;
    atomic_fetch_add(&l->count, 1);
    /* UNBIND goes once the flush is done (hixl_ep_close_unbind): a tcp
     * flush asks the other side for an acknowledgement, which its end must
     * still be open to send.  Under the lock: the flush's completion may
     * come from another thread's progress at once. */
    hixl_ep_close_flush(r);
    pthread_mutex_unlock(&l->lock);
    hixl_progress_kick(engine);
    return id;   /* r may be gone already: another thread's progress */
}

int hixl_ep_close_done(hixl_engine_t *engine, uint64_t id)
{
    hixl_ep_closer_t *l = &engine->ep_closer;
    hixl_ep_close_t  *r;
    int found = 0;

    if ((id == 0) || (atomic_load(&l->count) == 0)) {
        return 1;
    }
    pthread_mutex_lock(&l->lock);
    for (r = l->head; (r != NULL) && !found; r = r->next) {
        found = (r->id == id);
    }
    pthread_mutex_unlock(&l->lock);
    return !found;
}

/* Whether r's endpoint may be force-closed now (the list's lock held). */
static int hixl_ep_close_due(const hixl_ep_close_t *r, uint64_t now)
{
    hixl_assert((r->flushed >= -1) && (r->flushed <= 1));
    if (hixl_ep_err_status(r->err) != UCS_OK) {
        return 1;   /* UCX's error path owns the endpoint's state */
    }
    if (r->flushed == 0) {
        return 0;   /* its queue may be blocked (fact 3) */
    }
    return !r->unbind || r->answered || (r->flushed < 0) ||
           (r->unbind_sent && (now >= r->deadline_ns));
}

#define HIXL_EP_CLOSE_BATCH 16

/* Send UNBIND on the endpoints whose flush is done (from progress, not
 * from the flush's callback: UCX is inside its progress there). */
static void hixl_ep_close_unbind(hixl_engine_t *engine)
{
    hixl_ep_closer_t *l = &engine->ep_closer;
    ucp_ep_h          eps[HIXL_EP_CLOSE_BATCH];
    hixl_am_hdr_t     h[HIXL_EP_CLOSE_BATCH];
    hixl_ep_close_t  *r;
    size_t n = 0, i;

    pthread_mutex_lock(&l->lock);
    for (r = l->head; (r != NULL) && (n < HIXL_EP_CLOSE_BATCH); r = r->next) {
        if (!r->unbind || r->unbind_sent || (r->flushed != 1)) {
            continue;
        }
        hixl_assert(r->conn != 0);
        r->unbind_sent = 1;
        r->deadline_ns = hixl_deadline_ns(HIXL_EP_CLOSE_WAIT_MS);
        hixl_am_hdr_init(&h[n]);
        h[n].conn   = r->conn;
        h[n].cookie = r->id;
        h[n].flags  = HIXL_AM_FLAG_ERR_PEER;
        eps[n++]    = r->ep;   /* closed only from progress, by its taker:
                                  not before its answer or deadline */
    }
    pthread_mutex_unlock(&l->lock);
    for (i = 0; i < n; ++i) {
        hixl_am_send_small(engine, eps[i], HIXL_AM_UNBIND, &h[i], NULL, 0,
                           UCP_AM_SEND_FLAG_REPLY, NULL, NULL);
    }
}

/* Take out of the list those whose endpoint may close now, for closing
 * without the list's lock. */
static hixl_ep_close_t *hixl_ep_close_take_due(hixl_ep_closer_t *l)
{
    hixl_ep_close_t **pp, *r, *out = NULL;
    uint64_t now = hixl_now_ns();

    pthread_mutex_lock(&l->lock);
    for (pp = &l->head; (r = *pp) != NULL;) {
        if (!hixl_ep_close_due(r, now)) {
            pp = &r->next;
            continue;
        }
        if (r->unbind && !r->answered) {
            hixl_log_info("%s: no answer to UNBIND%s; closing the endpoint "
                          "alone", r->name,
                          (hixl_ep_err_status(r->err) != UCS_OK) ?
                          " (UCX reported an error on it)" : "");
        }
        *pp     = r->next;
        r->next = out;
        out     = r;
        hixl_assert(atomic_load(&l->count) >= 1);   /* r was counted */
        atomic_fetch_sub(&l->count, 1);
    }
    pthread_mutex_unlock(&l->lock);
    return out;
}

static unsigned hixl_ep_close_progress(hixl_engine_t *engine)
{
    hixl_ep_close_t *r, *next;
    unsigned n = 0;

    if (atomic_load(&engine->ep_closer.count) == 0) {
        return 0;
    }
    hixl_ep_close_unbind(engine);
    for (r = hixl_ep_close_take_due(&engine->ep_closer); r != NULL; r = next) {
        next = r->next;
        /* a flush still out (UCX's error cut it short) is called back
         * from the close, and finds r: it holds its own reference */
        hixl_ep_close_now(r->ep, r->err, 1, r->name);
        hixl_ep_err_release(r->err);
        hixl_ep_close_release(r);
        ++n;
    }
    return n;
}

void hixl_ep_close_cleanup(hixl_engine_t *engine)
{
    hixl_ep_closer_t      *l = &engine->ep_closer;
    hixl_ep_close_reply_t *rr;
    hixl_ep_close_t       *r, *next;

    while ((rr = l->replies) != NULL) {   /* flushes the destroy ended */
        l->replies = rr->next;
        free(rr);
    }
    pthread_mutex_lock(&l->lock);
    r       = l->head;
    l->head = NULL;
    atomic_store(&l->count, 0);
    pthread_mutex_unlock(&l->lock);
    for (; r != NULL; r = next) {
        next = r->next;
        /* the worker's destroy called back a flush still out (or it is
         * never freed: better than freed too early) */
        hixl_ep_err_release(r->err);
        hixl_ep_close_release(r);
    }
}

/* UNBIND_ACK (checked by the dispatcher: ours) */
static ucs_status_t hixl_ep_close_on_ack(hixl_engine_t       *engine,
                                         const hixl_am_hdr_t *h, void *data,
                                         size_t length, ucp_ep_h reply_ep)
{
    hixl_ep_closer_t *l = &engine->ep_closer;
    hixl_ep_close_t  *r;

    /* the endpoint is closed later, from progress: UCX is inside a
     * receive on it now */
    pthread_mutex_lock(&l->lock);
    for (r = l->head; r != NULL; r = r->next) {
        if (r->id == h->cookie) {
            r->answered = 1;
            break;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return UCS_OK;
}

/* ---- listener ----------------------------------------------------------------- */

static void hixl_ep_close_req_free(void *request, ucs_status_t status,
                                   void *user_data)
{
    ucp_request_free(request);
}

static void hixl_ep_close_force(ucp_ep_h ep)
{
    ucp_request_param_t cp;
    ucs_status_ptr_t sp;

    memset(&cp, 0, sizeof(cp));
    cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK;
    cp.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    cp.cb.send      = hixl_ep_close_req_free;
    sp = ucp_ep_close_nbx(ep, &cp);
    if (UCS_PTR_IS_ERR(sp)) {
        hixl_log_debug("closing an inbound endpoint: %s",
                       ucs_status_string(UCS_PTR_STATUS(sp)));
    }
}

/* Take ep out of the inbound endpoints being closed (1 if it was in). */
static int hixl_ep_close_reply_unlist(hixl_ep_closer_t *l, ucp_ep_h ep)
{
    hixl_ep_close_reply_t **pp, *rr;
    int found = 0;

    pthread_mutex_lock(&l->lock);
    for (pp = &l->replies; (rr = *pp) != NULL; pp = &rr->next) {
        if (rr->ep == ep) {
            *pp   = rr->next;
            found = 1;
            free(rr);
            break;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return found;
}

/* The flush of an inbound endpoint ended: without error, UCX has not
 * destroyed it (a failure would have ended the flush with an error
 * first), and its queue is empty. */
static void hixl_ep_close_reply_flushed(void *request, ucs_status_t status,
                                        void *user_data)
{
    hixl_ep_close_reply_t *rr             = user_data;
    hixl_engine_t *engine   = rr->engine;
    ucp_ep_h ep             = rr->ep;
    int found;

    ucp_request_free(request);
    found = hixl_ep_close_reply_unlist(&engine->ep_closer, ep);
    hixl_assert(found);   /* listed until its flush is called back, once */
    (void)found;
    if (status == UCS_OK) {
        hixl_ep_close_force(ep);
    }
}

void hixl_ep_close_reply_ep(hixl_engine_t *engine, ucp_ep_h ep, uint64_t conn,
                            const char *why)
{
    hixl_ep_closer_t      *l = &engine->ep_closer;
    hixl_ep_close_reply_t *rr;
    ucs_status_ptr_t sp;

    hixl_assert(ep != NULL);
    pthread_mutex_lock(&l->lock);
    for (rr = l->replies; (rr != NULL) && (rr->ep != ep); rr = rr->next) {
    }
    if (rr == NULL) {
        rr = calloc(1, sizeof(*rr));
        if (rr != NULL) {
            rr->engine = engine;
            rr->ep     = ep;
            rr->next   = l->replies;
            l->replies = rr;
        }
    } else {
        rr = NULL;   /* being closed already */
    }
    pthread_mutex_unlock(&l->lock);
    if (rr == NULL) {
        return;
    }
    hixl_log_debug("closing the endpoint of connection %" PRIx64 ": %s", conn,
                   why);
    /* an inbound endpoint has no flush service (ep_flush.h) */
    sp = hixl_ep_flush_ucp_post(ep, hixl_ep_close_reply_flushed, rr);
    if (!UCS_PTR_IS_PTR(sp)) {
        hixl_ep_close_reply_unlist(l, ep);
        if (sp == NULL) {
            hixl_ep_close_force(ep); /* flushed already: still inside the
                                        callback that vouches for it */
        }
    }
}

/* ---- set-up ------------------------------------------------------------------- */

hixl_status_t hixl_ep_close_init(hixl_engine_t *engine)
{
    hixl_status_t status = hixl_progress_add(engine, hixl_ep_close_progress);

    if (status != HIXL_SUCCESS) {
        return status;
    }
    return hixl_am_set_handler(engine, engine->ucp_worker, HIXL_AM_UNBIND_ACK,
                               0, hixl_ep_close_on_ack);
}
