/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A connection as its connector sees it in UCX: the channel.
 *
 * Every outgoing peer has one.  It is what UCX callbacks and the library's
 * active-message handlers find by id (they run inside ucp_worker_progress
 * and may not take the engine lock, nor trust a pointer that a close may
 * have freed): the id carries a generation, the table's slots are never
 * freed, and a closed channel ignores whatever still arrives for it.
 *
 * It holds:
 *  - the binding: BIND sent to the listener with UCX's REPLY flag, so that
 *    the listener knows the endpoint UCX made for this connection
 *    (core/peer/inbound.h); BIND_ACK answers (UNBIND ends it:
 *    core/peer/ep_close.h);
 *  - the count of library WRITE/READ messages (and same-host copies) not
 *    answered yet, in a ring of HIXL_CHAN_EPOCHS epoch slots: an endpoint
 *    flush closes the current slot and completes when UCX's own flush (for
 *    puts and gets, where any were posted since UCX's last one) and the
 *    answers of every message of that slot are in.  Up to
 *    HIXL_CHAN_EPOCHS - 1 flushes are in flight at once, each waiting for
 *    its own slot, so a layer's flush does not wait for the layers posted
 *    after it.  That is the endpoint-flush service's
 *    flush function for the peer (core/peer/ep_flush.h), so transfers, layer
 *    signals and revoke answers cover both kinds of operation alike.
 *
 * Locking: slots change under engine->serve_lock (write) and are read by
 * handlers under it (read); counts and flags are atomics.
 */
#ifndef HIXL_CORE_CHANNEL_H_
#define HIXL_CORE_CHANNEL_H_

#include "core/peer/ep_flush.h"

#include <hixl/hixl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine  hixl_engine_t;
typedef struct hixl_peer    hixl_peer_t;
typedef struct hixl_chan    hixl_chan_t;
typedef struct hixl_am_msg hixl_am_msg_t;

/* Epoch slots: a flush per layer of a model's request in flight at once
 * (a power of two: a message's slot travels in its flags, core/am/am_proto.h's
 * HIXL_AM_FLAG_SLOT). */
#define HIXL_CHAN_EPOCHS 64

/* One epoch slot: its messages not answered yet, and the flush waiting
 * for them, if any. */
typedef struct hixl_chan_epoch {
    hixl_chan_t            *chan;
    atomic_long             outstanding;
    /* the flush that closed this slot: parts still to come (UCX's flush,
     * the slot's answers), its status; armed while it waits for the
     * answers */
    atomic_int              parts;
    atomic_int              status;
    atomic_int              armed;
    hixl_ep_flush_group_t  *group;
} hixl_chan_epoch_t;

struct hixl_chan {
    atomic_uint   gen;          /* of the slot: part of the id */
    atomic_int    open;
    atomic_int    bound;        /* 0 waiting, 1 BIND_ACK ok, -1 refused */
    uint64_t      id;
    uint64_t      conn;         /* the listener's id of the connection */
    ucp_ep_h      ep;
    hixl_ep_flush_t *ep_flush;
    /* messages not answered yet, per epoch slot; posts count into `cur` */
    hixl_chan_epoch_t epochs[HIXL_CHAN_EPOCHS];
    /* of those, the ones whose answer comes on the control connection
     * (WRITEs); each also counts in *ctrl_due (the engine's
     * ctrl_answers_due) until it is answered or the channel stops */
    atomic_long   ctrl_pending;
    atomic_long  *ctrl_due;
    int           cur;          /* engine->lock */
    /* puts or gets posted on ep since UCX's last flush of it was posted
     * (1 at open: the first flush is UCX's, which also completes the
     * endpoint's wire-up) */
    atomic_int    ucx_ops;
    hixl_chan_t  *next_free;
    /* library WRITEs (core/xfer/am_data.c): bytes UCX holds to send, and
     * those waiting for room (under the message pool's lock) */
    atomic_long     am_window;
    hixl_am_msg_t  *am_wait_head, *am_wait_tail;
    int             am_draining;  /* taken off the queue, being sent */
    hixl_chan_t    *am_next;      /* in the pool's list of waiting ones */
    /* library READs whose data has not come (core/xfer/am_reads.h), under
     * the same lock */
    struct hixl_am_read_wait *am_reads_head, *am_reads_tail;
    size_t          am_reads_n;
    size_t          am_reads_prune;   /* stale ones looked for at this many */
    /* chunks of same-host copies (ops/copier.c) and packs of WRITEs
     * (core/xfer/am_data.c) reading callers' buffers now: the stop waits for
     * them before transfers are reported ended and the peer's mappings
     * go */
    atomic_int      copying;
};

/* Called when a channel closes (serve_lock held for writing; it may call
 * no UCX function): what a layer above keeps per channel goes. */
typedef void (*hixl_chan_close_fn_t)(hixl_engine_t *engine,
                                     hixl_chan_t *chan);

typedef struct hixl_chan_table {
    hixl_chan_t **chunks;       /* HIXL_CHAN_CHUNK slots each, never freed */
    size_t        nchunks;
    hixl_chan_t  *free;         /* closed slots to reuse (engine->lock) */
    size_t        used;
    hixl_chan_close_fn_t on_close;   /* hixl_chan_on_close */
} hixl_chan_table_t;

/* Open a channel for peer's endpoint (engine->lock held): its flush
 * service is the peer's ep_flush from now on. */
hixl_status_t hixl_chan_open(hixl_engine_t *engine, hixl_peer_t *peer);

/* Stop it (engine->lock held, before the flush service closes and so
 * before any of its transfers is reported ended): it is closed to lookups
 * and answers from now, its WRITEs still waiting for room are dropped
 * (hixl_chan_on_close), and a copy or a pack of a WRITE that is reading a
 * caller's buffer now has finished when this returns; none starts later
 * (hixl_chan_copy_begin).  So no transfer's buffers are read once it has
 * been reported FAILED. */
void hixl_chan_stop(hixl_engine_t *engine, hixl_chan_t *chan);

/* Close a stopped channel (engine->lock held, after the flush service and
 * the endpoint closed): a flush still waiting for its answers ends, and
 * the slot is reused once no UCX callback can reach it. */
void hixl_chan_close(hixl_engine_t *engine, hixl_chan_t *chan);

void hixl_chan_table_cleanup(hixl_chan_table_t *t);

/* The open channel an id names, or NULL (serve_lock held, read or
 * write). */
hixl_chan_t *hixl_chan_lookup(hixl_engine_t *engine, uint64_t id);

/* Send BIND (engine->lock held); BIND_ACK sets chan->bound. */
hixl_status_t hixl_chan_bind(hixl_engine_t *engine, hixl_chan_t *chan,
                             int peer_mode);

/* Where the answer of a message comes from: the control connection (an
 * engine without a progress thread then polls those sockets on every
 * progress call until it came), or elsewhere (a UCX message, a thread of
 * this process). */
typedef enum {
    HIXL_ANSWER_ELSEWHERE  = 0,
    HIXL_ANSWER_ON_CONTROL = 1
} hixl_answer_via_t;

/* A WRITE or READ message (or a same-host copy) goes out on the channel:
 * counted in the current slot, whose number (for the message's flags) is
 * returned. */
unsigned hixl_chan_post(hixl_chan_t *chan, hixl_answer_via_t via);

/* Its answer came (or it can never come: it was not sent): uncounted.
 * `via` is the one it was posted with.  An answer for a slot with nothing
 * outstanding (a peer's duplicate) is ignored. */
void hixl_chan_answered(hixl_chan_t *chan, unsigned slot,
                        hixl_answer_via_t via);

/* A put or get was posted on the channel's endpoint (called once
 * ucp_put_nbx or ucp_get_nbx returned, so that a flush that finds this
 * was posted after it): the next flush is UCX's too.  A flush of a channel
 * with nothing but the library's messages and same-host copies since the
 * last one leaves UCX out: their answers prove them, and over tcp UCX's
 * flush is a round trip of its own (a put request and its ack) on every
 * transfer. */
void hixl_chan_rma_posted(hixl_chan_t *chan);

/* A chunk of a same-host copy, or the pack of a part of a WRITE, may read
 * the caller's buffer (1: the channel named id is open; it counts as
 * copying until hixl_chan_copy_end) or not (0: stopped). */
int hixl_chan_copy_begin(hixl_engine_t *engine, hixl_chan_t *chan,
                         uint64_t id);
void hixl_chan_copy_end(hixl_chan_t *chan);

/* Have fn called whenever a channel closes (engine set-up; one). */
void hixl_chan_on_close(hixl_engine_t *engine, hixl_chan_close_fn_t fn);

/* Set the channel's active-message handlers on the engine's out worker. */
hixl_status_t hixl_chan_init(hixl_engine_t *engine);

#endif
