/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Channels: connections as their connector sees them in UCX (channel.h).
 */
#include "config.h"
#include "core/peer/channel.h"
#include "core/am/am.h"
#include "core/engine.h"
#include "util/debug.h"
#include "util/log.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define HIXL_CHAN_CHUNK 64

/* a message's slot travels in its flags */
_Static_assert((HIXL_CHAN_EPOCHS & (HIXL_CHAN_EPOCHS - 1)) == 0 &&
               HIXL_CHAN_EPOCHS - 1 == HIXL_AM_FLAG_SLOT,
               "epoch slots and HIXL_AM_FLAG_SLOT disagree");

/* id: 32 bits of slot index + 1, 32 bits of the slot's generation */
static uint64_t hixl_chan_make_id(size_t index, unsigned gen)
{
    return ((uint64_t)gen << 32) | (uint64_t)(index + 1);
}

hixl_chan_t *hixl_chan_lookup(hixl_engine_t *engine, uint64_t id)
{
    hixl_chan_table_t *t = &engine->chans;
    size_t index         = (size_t)(uint32_t)id - 1;
    hixl_chan_t *chan;

    if ((uint32_t)id == 0 ||
        (index / HIXL_CHAN_CHUNK >= t->nchunks)) {
        return NULL;
    }
    chan = &t->chunks[index / HIXL_CHAN_CHUNK][index % HIXL_CHAN_CHUNK];
    if ((chan->id != id) || !atomic_load(&chan->open)) {
        return NULL;
    }
    return chan;
}

/* A free slot (engine->lock held; serve_lock taken for the table). */
static hixl_chan_t *hixl_chan_slot(hixl_chan_table_t *t)
{
    hixl_chan_t **chunks, *chunk, *chan = t->free;
    size_t i;

    if (chan != NULL) {
        t->free = chan->next_free;
        return chan;
    }
    if (t->used == t->nchunks * HIXL_CHAN_CHUNK) {
        chunk  = calloc(HIXL_CHAN_CHUNK, sizeof(*chunk));
        chunks = realloc(t->chunks, (t->nchunks + 1) * sizeof(*chunks));
        if ((chunk == NULL) || (chunks == NULL)) {
            free(chunk);
            if (chunks != NULL) {
                t->chunks = chunks;
            }
            return NULL;
        }
        t->chunks              = chunks;
        t->chunks[t->nchunks++] = chunk;
    }
    i = t->used++;
    chan = &t->chunks[i / HIXL_CHAN_CHUNK][i % HIXL_CHAN_CHUNK];
    chan->id = hixl_chan_make_id(i, 0);
    return chan;
}

/* ---- flushing: UCX's flush and the slot's answers -------------------------- */

static void hixl_chan_part_done(hixl_chan_epoch_t *e, ucs_status_t status)
{
    int ok = UCS_OK;
    int parts;

    if (status != UCS_OK) {
        atomic_compare_exchange_strong(&e->status, &ok, (int)status);
    }
    parts = atomic_fetch_sub(&e->parts, 1);
    hixl_assert(parts >= 1);   /* each part of a flush ends once */
    if (parts == 1) {
        /* drops the flush's reference on the service */
        hixl_ep_flush_completed(e->group, (ucs_status_t)atomic_load(
                                    &e->status));
    }
}

/* The flush waits for slot e and it is empty now: that part is done. */
static void hixl_chan_slot_drained(hixl_chan_epoch_t *e)
{
    int armed = 1;

    if (atomic_compare_exchange_strong(&e->armed, &armed, 0)) {
        hixl_chan_part_done(e, UCS_OK);
    }
}

static void hixl_chan_ucp_flushed(void *request, ucs_status_t status,
                                  void *user_data)
{
    ucp_request_free(request);
    hixl_chan_part_done(user_data, status);
}

/*
 * The flush function of a channel's endpoint (ep_flush.h), called under
 * engine->lock with fewer than HIXL_CHAN_EPOCHS - 1 other flushes of the
 * endpoint in flight.  Without library messages in flight it is UCX's
 * flush alone (which may complete at once: shared memory).  Otherwise the
 * writes and reads posted from now count in the next slot, and the flush
 * is done when UCX's flush and the answers of this slot are both in.
 * UCX's flush is left out where no put or get was posted since its last
 * one (hixl_chan_rma_posted): then the answers alone, or nothing at all,
 * are the flush.
 */
static ucs_status_ptr_t hixl_chan_flush(hixl_ep_flush_t *ep_flush, void *ep,
                                        hixl_ep_flush_group_t *group)
{
    hixl_chan_t       *chan = ep_flush->owner;
    int                slot = chan->cur;
    hixl_chan_epoch_t *e    = &chan->epochs[slot];
    ucs_status_ptr_t   sp;
    /* taken before UCX's flush is posted: a put posted after this sets it
     * again for the next flush (hixl_chan_rma_posted); looked at first, as
     * an exchange is an atomic read-modify-write even when it finds 0 */
    int ucx            = atomic_load(&chan->ucx_ops) &&
                         atomic_exchange(&chan->ucx_ops, 0);

    if (atomic_load(&e->outstanding) == 0) {
        return ucx ? hixl_ep_flush_via_ucp(ep_flush, ep, group) : NULL;
    }
    chan->cur = (slot + 1) % HIXL_CHAN_EPOCHS;
    /* free: at most HIXL_CHAN_EPOCHS - 1 flushes are out (the service's
     * depth), and slots are closed in order */
    hixl_assert(atomic_load(&chan->epochs[chan->cur].parts) <= 0);
    atomic_store(&e->status, UCS_OK);
    atomic_store(&e->parts, ucx ? 2 : 1);
    atomic_store(&e->armed, 0);
    e->group = group;
    if (ucx) {
        sp = hixl_ep_flush_ucp_post(ep, hixl_chan_ucp_flushed, e);
        if (!UCS_PTR_IS_PTR(sp)) {
            hixl_chan_part_done(e, UCS_PTR_STATUS(sp));
        }
    }
    atomic_store(&e->armed, 1);
    if (atomic_load(&e->outstanding) == 0) {
        hixl_chan_slot_drained(e);
    }
    /* done through hixl_ep_flush_completed, maybe already */
    return (ucs_status_ptr_t)(uintptr_t)1;
}

/* The channel's idle test (ep_flush.h): hixl_chan_flush would return NULL
 * now, having found no put or get since its last flush and no answer due
 * in the current slot. */
static int hixl_chan_idle(hixl_ep_flush_t *ep_flush)
{
    hixl_chan_t *chan = ep_flush->owner;

    return (atomic_load(&chan->ucx_ops) == 0) &&
           (atomic_load(&chan->epochs[chan->cur].outstanding) == 0);
}

void hixl_chan_rma_posted(hixl_chan_t *chan)
{
    if (chan != NULL) {   /* none: its endpoint is never flushed again */
        atomic_store(&chan->ucx_ops, 1);
    }
}

unsigned hixl_chan_post(hixl_chan_t *chan, hixl_answer_via_t via)
{
    /* posts run under engine->lock, which the stop of a channel holds */
    hixl_assert(atomic_load(&chan->open));
    hixl_assert((chan->cur >= 0) && (chan->cur < HIXL_CHAN_EPOCHS));
    hixl_assert((via == HIXL_ANSWER_ON_CONTROL) ||
                (via == HIXL_ANSWER_ELSEWHERE));
    if (via == HIXL_ANSWER_ON_CONTROL) {
        atomic_fetch_add(chan->ctrl_due, 1);
        atomic_fetch_add(&chan->ctrl_pending, 1);
    }
    atomic_fetch_add(&chan->epochs[chan->cur].outstanding, 1);
    return (unsigned)chan->cur;
}

void hixl_chan_answered(hixl_chan_t *chan, unsigned slot,
                        hixl_answer_via_t via)
{
    long before;

    /* not taken off the engine's count by the stop */
    if ((via == HIXL_ANSWER_ON_CONTROL) &&
        (atomic_fetch_sub(&chan->ctrl_pending, 1) > 0)) {
        atomic_fetch_sub(chan->ctrl_due, 1);
    }
    slot  %= HIXL_CHAN_EPOCHS;
    before = atomic_load(&chan->epochs[slot].outstanding);
    do {
        if (before <= 0) {
            /* nothing of this slot awaits an answer: one its peer sent
             * twice, or for nothing it was sent.  Counted, it would let
             * the slot's next flush end before that message's answer. */
            return;
        }
    } while (!atomic_compare_exchange_weak(&chan->epochs[slot].outstanding,
                                           &before, before - 1));
    if (before == 1) {
        hixl_chan_slot_drained(&chan->epochs[slot]);
    }
}

/* ---- life -------------------------------------------------------------------- */

hixl_status_t hixl_chan_open(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_chan_t *chan;
    int i;

    pthread_rwlock_wrlock(&engine->serve_lock);
    chan = hixl_chan_slot(&engine->chans);
    if (chan != NULL) {
        atomic_store(&chan->bound, 0);
        for (i = 0; i < HIXL_CHAN_EPOCHS; ++i) {
            chan->epochs[i].chan = chan;
            atomic_store(&chan->epochs[i].outstanding, 0);
            atomic_store(&chan->epochs[i].parts, 0);
            atomic_store(&chan->epochs[i].armed, 0);
            chan->epochs[i].group = NULL;
        }
        atomic_store(&chan->ctrl_pending, 0);
        chan->ctrl_due = &engine->progress.ctrl_answers_due;
        atomic_store(&chan->ucx_ops, 1);
        chan->cur  = 0;
        chan->conn = peer->conn_id;
        chan->ep   = peer->ep;
        chan->ep_flush = peer->ep_flush;
        atomic_store(&chan->open, 1);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    if (chan == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "channel");
    }
    peer->ep_flush->owner = chan;
    peer->ep_flush->flush = hixl_chan_flush;
    peer->ep_flush->idle  = hixl_chan_idle;
    /* a flush per slot in flight, one slot left for the posts */
    hixl_ep_flush_set_depth(peer->ep_flush, HIXL_CHAN_EPOCHS - 1);
    peer->chan       = chan;
    return HIXL_SUCCESS;
}

/* The answers still due on the control connection, emptied. */
static long hixl_chan_take_due(atomic_long *count)
{
    long n = atomic_exchange(count, 0);

    return (n > 0) ? n : 0;
}

void hixl_chan_stop(hixl_engine_t *engine, hixl_chan_t *chan)
{
    int i;

    hixl_assert(atomic_load(&chan->open));   /* stopped once */
    pthread_rwlock_wrlock(&engine->serve_lock);
    atomic_store(&chan->open, 0);
    chan->id = hixl_chan_make_id((size_t)(uint32_t)chan->id - 1,
                                 (unsigned)(chan->id >> 32) + 1);
    if (engine->chans.on_close != NULL) {
        engine->chans.on_close(engine, chan);   /* WRITEs still waiting go */
    }
    /* the answers still due will not come: the engine stops waiting for
     * them (a late hixl_chan_answered finds the counts at or below zero) */
    for (i = 0; i < HIXL_CHAN_EPOCHS; ++i) {
        atomic_store(&chan->epochs[i].outstanding, 0);
    }
    atomic_fetch_sub(chan->ctrl_due, hixl_chan_take_due(&chan->ctrl_pending));
    pthread_rwlock_unlock(&engine->serve_lock);
    /* no copy or pack starts from now (its start looks under serve_lock);
     * one in progress ends within microseconds (a chunk, a UCX segment) */
    while (atomic_load(&chan->copying) > 0) {
        sched_yield();
    }
}

void hixl_chan_close(hixl_engine_t *engine, hixl_chan_t *chan)
{
    int i, out = 0;

    hixl_assert(!atomic_load(&chan->open));   /* stopped first */
    pthread_rwlock_wrlock(&engine->serve_lock);
    for (i = 0; i < HIXL_CHAN_EPOCHS; ++i) {
        /* a flush still waiting for answers will not get them: its part
         * of them ends here (the flush service was closed before, so this
         * only drops the flush's reference on it) */
        if (atomic_exchange(&chan->epochs[i].armed, 0)) {
            hixl_chan_part_done(&chan->epochs[i], UCS_ERR_CANCELED);
        }
        out |= (atomic_load(&chan->epochs[i].parts) > 0);
    }
    /* UCX calls a force-closed endpoint's flush back inside the close, but
     * may defer it: a slot whose flush is still out is never reused (its
     * late callback finds it as it left it) */
    if (!out) {
        chan->next_free    = engine->chans.free;
        engine->chans.free = chan;
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

int hixl_chan_copy_begin(hixl_engine_t *engine, hixl_chan_t *chan,
                         uint64_t id)
{
    int open;

    pthread_rwlock_rdlock(&engine->serve_lock);
    open = (chan->id == id) && atomic_load(&chan->open);
    if (open) {
        atomic_fetch_add(&chan->copying, 1);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return open;
}

void hixl_chan_copy_end(hixl_chan_t *chan)
{
    int before = atomic_fetch_sub(&chan->copying, 1);

    hixl_assert(before >= 1);   /* after its begin said yes */
    (void)before;
}

void hixl_chan_table_cleanup(hixl_chan_table_t *t)
{
    size_t i;

    for (i = 0; i < t->nchunks; ++i) {
        free(t->chunks[i]);
    }
    free(t->chunks);
    memset(t, 0, sizeof(*t));
}

/* ---- binding ------------------------------------------------------------------- */

hixl_status_t hixl_chan_bind(hixl_engine_t *engine, hixl_chan_t *chan,
                             int peer_mode)
{
    hixl_am_hdr_t h;

    hixl_am_hdr_init(&h);
    h.conn  = chan->conn;
    h.chan  = chan->id;
    h.flags = peer_mode ? HIXL_AM_FLAG_ERR_PEER : 0;
    hixl_am_send_small(engine, chan->ep, HIXL_AM_BIND, &h, NULL, 0,
                       UCP_AM_SEND_FLAG_REPLY, NULL, NULL);
    return HIXL_SUCCESS;
}

/* BIND_ACK (checked by the dispatcher: ours) */
static ucs_status_t hixl_chan_on_bind_ack(hixl_engine_t *engine,
                                          const hixl_am_hdr_t *h, void *data,
                                          size_t length, ucp_ep_h reply_ep)
{
    hixl_chan_t *chan;

    pthread_rwlock_rdlock(&engine->serve_lock);
    chan = hixl_chan_lookup(engine, h->chan);
    if (chan != NULL) {
        atomic_store(&chan->bound, (h->status == HIXL_SUCCESS) ? 1 : -1);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    /* wakes the connect waiting for it (on engine->cond).  Without
     * engine->lock, which a handler may not take, a waiter between its
     * check and its sleep misses this; its 1 ms slice covers that rare
     * case, and the usual one no longer waits out the slice. */
    pthread_cond_broadcast(&engine->cond);
    return UCS_OK;
}

void hixl_chan_on_close(hixl_engine_t *engine, hixl_chan_close_fn_t fn)
{
    engine->chans.on_close = fn;
}

hixl_status_t hixl_chan_init(hixl_engine_t *engine)
{
    return hixl_am_set_handler(engine, engine->ucp_worker, HIXL_AM_BIND_ACK,
                               0, hixl_chan_on_bind_ack);
}
