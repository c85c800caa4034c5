/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The inbound table: connections as the listener sees them in UCX
 * (inbound.h).
 */
#include "config.h"
#include "core/peer/inbound.h"
#include "core/am/am.h"
#include "core/engine.h"
#include "core/peer/ep_close.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* id: slot index + 1 in the low 32 bits, a random tag in the high ones */
static hixl_inbound_slot_t *hixl_inbound_find(hixl_engine_t *engine,
                                              uint64_t       id)
{
    hixl_inbound_t *t         = &engine->inbound;
    size_t index     = (size_t)(uint32_t)id - 1;

    if (((uint32_t)id == 0) || (index >= t->cap) ||
        (t->slots[index].id != id) ||
        (t->slots[index].state == HIXL_INBOUND_FREE)) {
        return NULL;
    }
    return &t->slots[index];
}

int hixl_inbound_check(hixl_engine_t *engine, uint64_t id, ucp_ep_h reply_ep)
{
    hixl_inbound_slot_t *slot = hixl_inbound_find(engine, id);

    return (slot != NULL) && (slot->state == HIXL_INBOUND_BOUND) &&
           (slot->ep == reply_ep);
}

int hixl_inbound_orphan(hixl_engine_t *engine, ucp_ep_h reply_ep)
{
    hixl_inbound_t *t = &engine->inbound;
    size_t i;

    for (i = 0; i < t->cap; ++i) {
        if ((t->slots[i].state == HIXL_INBOUND_BOUND) &&
            (t->slots[i].ep == reply_ep)) {
            return 0;
        }
    }
    return 1;
}

hixl_status_t hixl_inbound_open(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_inbound_t *t = &engine->inbound;
    uint32_t tag;
    size_t i;

    if (getrandom(&tag, sizeof(tag), 0) != sizeof(tag)) {
        tag = (uint32_t)(hixl_now_ns() ^ peer->serial);
    }
    tag |= 1;   /* never 0: an id of 0 names nothing */
    hixl_assert_locked(&engine->lock);
    hixl_assert(!hixl_peer_outgoing(peer) && (peer->conn_id == 0));
    pthread_rwlock_wrlock(&engine->serve_lock);
    for (i = 0; (i < t->cap) && (t->slots[i].state != HIXL_INBOUND_FREE); ++i) {
    }
    if (hixl_array_reserve(&t->slots, &t->cap, i + 1, sizeof(*t->slots),
                           16) != 0) {
        pthread_rwlock_unlock(&engine->serve_lock);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "connection");
    }
    hixl_assert(atomic_load(&t->slots[i].ack_queued) == 0);   /* FREE */
    t->slots[i].id    = ((uint64_t)tag << 32) | (uint64_t)(i + 1);
    t->slots[i].state = HIXL_INBOUND_PENDING;
    t->slots[i].ep    = NULL;
    t->slots[i].peer  = peer;
    hixl_peer_retain(peer);
    peer->conn_id     = t->slots[i].id;
    pthread_rwlock_unlock(&engine->serve_lock);
    return HIXL_SUCCESS;
}

/* Answers are queued on slot's connection: mark it (want: HIXL_ACKS_HELD,
 * or HIXL_ACKS_DUE, which wins) for hixl_inbound_acks_send. */
static void hixl_inbound_mark(hixl_inbound_t *t, hixl_inbound_slot_t *slot,
                              int want)
{
    int prev = atomic_load(&slot->ack_queued);

    hixl_assert((want == HIXL_ACKS_HELD) || (want == HIXL_ACKS_DUE));
    do {
        if (prev >= want) {
            return;
        }
    } while (!atomic_compare_exchange_weak(&slot->ack_queued, &prev, want));
    if (want == HIXL_ACKS_DUE) {
        atomic_fetch_add(&t->acks_due, 1);
    }
    if ((prev == 0) && (atomic_fetch_add(&t->acks_queued, 1) == 0)) {
        /* the first one held (a hint: a stale value only sends sooner) */
        atomic_store_explicit(&t->acks_since_ns, hixl_now_ns(),
                              memory_order_relaxed);
    }
}

/* Take slot's mark off (it is being written, or its connection ended);
 * whether it had one. */
static int hixl_inbound_unmark(hixl_inbound_t *t, hixl_inbound_slot_t *slot)
{
    int prev = atomic_exchange(&slot->ack_queued, 0);
    unsigned before;

    hixl_assert((prev >= 0) && (prev <= HIXL_ACKS_DUE));
    if (prev == HIXL_ACKS_DUE) {
        before = atomic_fetch_sub(&t->acks_due, 1);
        hixl_assert(before >= 1);   /* counted when marked due */
        (void)before;
    }
    if (prev != 0) {
        before = atomic_fetch_sub(&t->acks_queued, 1);
        hixl_assert(before >= 1);   /* counted when first marked */
        (void)before;
    }
    return prev != 0;
}

/* The peer's closing hook: the connection ended (engine->lock held);
 * nothing naming it is accepted from now. */
static void hixl_inbound_close(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_inbound_slot_t *slot;
    hixl_peer_t *held = NULL;

    if (hixl_peer_outgoing(peer) || (peer->conn_id == 0)) {
        return;
    }
    hixl_assert_locked(&engine->lock);
    pthread_rwlock_wrlock(&engine->serve_lock);
    slot = hixl_inbound_find(engine, peer->conn_id);
    if (slot != NULL) {
        hixl_assert(slot->peer == peer);   /* the id is the peer's own */
        held        = slot->peer;
        slot->state = HIXL_INBOUND_FREE;
        slot->ep    = NULL;
        slot->peer  = NULL;
        hixl_inbound_unmark(&engine->inbound, slot);   /* unsent: moot */
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    peer->conn_id = 0;
    if (held != NULL) {
        hixl_peer_release(held);
    }
}

/* UNBIND on reply_ep for connection id: if reply_ep is the connection's
 * endpoint, nothing arrives on it for the connection from now on. */
static void hixl_inbound_unbind(hixl_engine_t *engine, uint64_t id,
                                ucp_ep_h reply_ep)
{
    hixl_inbound_slot_t *slot;

    pthread_rwlock_wrlock(&engine->serve_lock);
    slot = hixl_inbound_find(engine, id);
    if ((slot != NULL) && (slot->state == HIXL_INBOUND_BOUND) &&
        (slot->ep == reply_ep)) {
        hixl_assert(slot->peer != NULL);   /* referenced while it lives */
        slot->state = HIXL_INBOUND_UNBOUND;
        slot->ep    = NULL;
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

void hixl_inbound_ack(hixl_engine_t *engine, uint64_t id,
                      const hixl_am_hdr_t *h, hixl_status_t status)
{
    hixl_inbound_slot_t *slot;
    hixl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.type                = CTRL_DATA_ACK;
    msg.u.data_ack.chan     = h->chan;
    msg.u.data_ack.cookie   = h->cookie;
    msg.u.data_ack.addr     = h->addr;
    msg.u.data_ack.len      = h->len;
    msg.u.data_ack.flags    = h->flags;
    msg.u.data_ack.status   = (uint32_t)status;
    pthread_rwlock_rdlock(&engine->serve_lock);
    slot = hixl_inbound_find(engine, id);
    /* thread-safe; marked even when other messages were queued before
     * it, which a held answer may be */
    if ((slot != NULL) && (slot->peer != NULL) &&
        (hixl_conn_queue(&slot->peer->conn, &msg) >= 0)) {
        hixl_inbound_mark(&engine->inbound, slot,
                          ((status == HIXL_SUCCESS) &&
                           (h->flags & HIXL_AM_FLAG_MORE)) ?
                              HIXL_ACKS_HELD :
                              HIXL_ACKS_DUE);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

void hixl_inbound_acks_send(hixl_engine_t *engine, int quiet)
{
    hixl_inbound_t      *t = &engine->inbound;
    hixl_inbound_slot_t *slot;
    char err[128];
    int all;
    size_t i;

    if (atomic_load_explicit(&t->acks_queued, memory_order_relaxed) == 0) {
        return;
    }
    all = quiet || (hixl_now_ns() - atomic_load_explicit(
                        &t->acks_since_ns, memory_order_relaxed) >=
                    HIXL_ACK_HOLD_NS);
    if (!all && (atomic_load_explicit(&t->acks_due,
                                      memory_order_relaxed) == 0)) {
        return;   /* held, and none due */
    }
    pthread_rwlock_rdlock(&engine->serve_lock);
    for (i = 0; i < t->cap; ++i) {
        slot = &t->slots[i];
        if ((atomic_load_explicit(&slot->ack_queued, memory_order_relaxed) <
             (all ? HIXL_ACKS_HELD : HIXL_ACKS_DUE)) ||
            !hixl_inbound_unmark(t, slot)) {
            continue;
        }
        /* a connection that broke is ended by its control poll; a slot
         * marked since it went FREE was unmarked by its close */
        hixl_assert(slot->state != HIXL_INBOUND_FREE);
        if ((slot->peer != NULL) &&
            (hixl_conn_flush(&slot->peer->conn, err, sizeof(err)) != 0)) {
            hixl_log_debug("answers to %s not sent: %s", slot->peer->name,
                           err);
        }
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

void hixl_inbound_cleanup(hixl_engine_t *engine)
{
    free(engine->inbound.slots);
    memset(&engine->inbound, 0, sizeof(engine->inbound));
}

/* BIND (checked by the dispatcher: ours, with its reply_ep) */
static ucs_status_t hixl_inbound_on_bind(hixl_engine_t       *engine,
                                         const hixl_am_hdr_t *h, void *data,
                                         size_t length, ucp_ep_h reply_ep)
{
    hixl_inbound_slot_t *slot;
    hixl_am_hdr_t ack;

    ack        = *h;
    ack.status = HIXL_FAILED;
    pthread_rwlock_wrlock(&engine->serve_lock);
    slot = hixl_inbound_find(engine, h->conn);
    if ((slot != NULL) && (slot->state == HIXL_INBOUND_PENDING)) {
        hixl_assert((slot->ep == NULL) && (reply_ep != NULL));
        slot->state = HIXL_INBOUND_BOUND;
        slot->ep    = reply_ep;
        ack.status  = HIXL_SUCCESS;
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    if (ack.status != HIXL_SUCCESS) {
        hixl_log_info("BIND for no pending connection %" PRIx64 ": refused",
                      h->conn);
    }
    /* reply_ep is alive here: UCX passed it to this very callback */
    hixl_am_send_small(engine, reply_ep, HIXL_AM_BIND_ACK, &ack, NULL, 0, 0,
                       NULL, NULL);
    return UCS_OK;
}

/* UNBIND (checked by the dispatcher: ours, with its reply_ep).  Only the
 * connector of reply_ep can send on it: an UNBIND ends nothing but the
 * sender's own connection. */
static ucs_status_t hixl_inbound_on_unbind(hixl_engine_t       *engine,
                                           const hixl_am_hdr_t *h, void *data,
                                           size_t length, ucp_ep_h reply_ep)
{
    hixl_am_hdr_t ack;

    hixl_inbound_unbind(engine, h->conn, reply_ep);
    ack        = *h;
    ack.status = HIXL_SUCCESS;
    hixl_am_send_small(engine, reply_ep, HIXL_AM_UNBIND_ACK, &ack,
                       NULL, 0, 0, NULL, NULL);
    if (h->flags & HIXL_AM_FLAG_ERR_PEER) {   /* else UCX refuses to force */
        /* the flush also sees the answer out before the close */
        hixl_ep_close_reply_ep(engine, reply_ep, h->conn, "UNBIND");
    }
    return UCS_OK;
}

static const hixl_peer_hooks_t hixl_inbound_hooks = {
    .name    = "inbound",
    .closing = hixl_inbound_close,
};

hixl_status_t hixl_inbound_init(hixl_engine_t *engine)
{
    hixl_status_t status = hixl_peer_hooks_add(engine, &hixl_inbound_hooks);

    if ((status != HIXL_SUCCESS) || (engine->ucp_worker_in == NULL)) {
        return status;
    }
    hixl_progress_after_in(engine, hixl_inbound_acks_send);
    status = hixl_am_set_handler(engine, engine->ucp_worker_in, HIXL_AM_BIND,
                                 HIXL_AM_RECV_REPLY_EP, hixl_inbound_on_bind);
    if (status == HIXL_SUCCESS) {
        status =
            hixl_am_set_handler(engine, engine->ucp_worker_in, HIXL_AM_UNBIND,
                                HIXL_AM_RECV_REPLY_EP, hixl_inbound_on_unbind);
    }
    return status;
}
