/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections as the listener sees them in UCX: the inbound table.
 *
 * The listener never creates endpoints to its connectors (its in worker
 * only answers).  It learns which UCX endpoint serves a connection from the
 * connector's BIND message, which UCX delivers with that endpoint as
 * reply_ep: every library message of the connection must arrive on it and
 * name the connection's id, and once the connection ends nothing naming it
 * is accepted, however late it arrives.  That endpoint is UCX's own (made
 * for the connector's wire-up, and destroyed by UCX when it sees the
 * connector fail): the table keeps its address to compare with, and the
 * listener uses it only inside callbacks UCX passes it to (the answers to
 * BIND and UNBIND, and closing it: core/peer/ep_close.h).
 * Answers that cannot be sent from inside UCX's callback for the message
 * go over the connection's control connection (DATA_ACK).
 *
 * Entries are found by the connection id the listener gave in HELLO_ACK
 * (slot and a random part, so an old or made-up id finds nothing).
 *
 * Locking: the table is guarded by engine->serve_lock; handlers (in UCX
 * progress) take it, and nobody calls UCX while holding it.
 */
#ifndef HIXL_CORE_INBOUND_H_
#define HIXL_CORE_INBOUND_H_

#include <hixl/hixl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_peer   hixl_peer_t;

typedef enum hixl_inbound_state {
    HIXL_INBOUND_FREE,
    HIXL_INBOUND_PENDING,   /* HELLO_ACK sent, BIND not arrived */
    HIXL_INBOUND_BOUND,
    HIXL_INBOUND_UNBOUND   /* its connector closed the endpoint (UNBIND) */
} hixl_inbound_state_t;

typedef struct hixl_inbound_slot {
    uint64_t            id;
    hixl_inbound_state_t state;
    ucp_ep_h            ep;          /* BOUND: the connection's endpoint
                                        (compared, never used) */
    hixl_peer_t        *peer;        /* referenced while the slot lives */
    atomic_int          ack_queued;  /* DATA_ACKs queued, not yet written:
                                        HIXL_ACKS_HELD or _DUE */
} hixl_inbound_slot_t;

typedef struct hixl_inbound {
    hixl_inbound_slot_t *slots;
    size_t              cap;
    atomic_uint         acks_queued; /* slots with ack_queued set */
    atomic_uint         acks_due;    /* slots with HIXL_ACKS_DUE */
    atomic_uint_fast64_t acks_since_ns; /* when acks_queued left 0 */
} hixl_inbound_t;

/* A connection is being accepted: its id goes in HELLO_ACK (engine->lock
 * held); peer->conn_id is set. */
hixl_status_t hixl_inbound_open(hixl_engine_t *engine, hixl_peer_t *peer);

/* Answer a library WRITE (the message's header) on the control connection
 * of connection id, if it still lives; from a handler of the in worker.
 * The answer is queued, and written with the others of its connection by
 * hixl_inbound_acks_send, not a system call each. */
struct hixl_am_hdr;
void hixl_inbound_ack(hixl_engine_t *engine, uint64_t id,
                      const struct hixl_am_hdr *h, hixl_status_t status);

/*
 * Write the answers queued (after every progress of the in worker: the
 * inbound table registers it with core/worker/progress.h): those of
 * connections with an answer due now, or all of them once a pass of the in
 * worker brought nothing (quiet) or the oldest has waited HIXL_ACK_HOLD_NS.
 *
 * An answer is due now unless its WRITE said more of its descriptor
 * follows (HIXL_AM_FLAG_MORE), and a failure always is; the others are
 * held, and go out with the next answer due on their connection.  Why:
 * while WRITEs stream in, every answer written at once was a system call
 * of the receiver (over loopback, the sender's receive path too) and a
 * wake-up of the sender's progress thread, for a few dozen bytes per
 * WRITE: with many senders into one receiver, a large part of the
 * receiver's CPU.  Nothing waits for a held answer alone: what waits for a transfer
 * waits for its descriptors' last WRITEs, and those are answered at once.
 * The hold bounds what a sender whose descriptor stalled half-way waits
 * beyond its last WRITE.
 */
#define HIXL_ACKS_HELD   1
#define HIXL_ACKS_DUE    2
#define HIXL_ACK_HOLD_NS 1000000ull   /* 1 ms */
void hixl_inbound_acks_send(hixl_engine_t *engine, int quiet);

/* Whether a message on reply_ep belongs to live connection id
 * (serve_lock held). */
int hixl_inbound_check(hixl_engine_t *engine, uint64_t id, ucp_ep_h reply_ep);

/* Whether reply_ep serves no live connection: what still arrives on it is
 * of one that ended (serve_lock held). */
int hixl_inbound_orphan(hixl_engine_t *engine, ucp_ep_h reply_ep);

void hixl_inbound_cleanup(hixl_engine_t *engine);

/* Set the BIND and UNBIND handlers on the engine's in worker (UNBIND: the
 * connector closes the endpoint it arrives on; it is taken out of the
 * table, answered and closed, core/peer/ep_close.h), the peer hook that ends
 * a connection here when its peer closes (core/peer/peer.h), and the sending
 * of answers after each progress of the in worker (core/worker/progress.h). */
hixl_status_t hixl_inbound_init(hixl_engine_t *engine);

#endif
