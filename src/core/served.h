/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections as the listener sees them in UCX: the served table.
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
 * BIND and UNBIND, and retiring it: core/ep_retire.h).
 * Answers that cannot be sent from inside UCX's callback for the message
 * go over the connection's control connection (DATA_ACK).
 *
 * Entries are found by the connection id the listener gave in HELLO_ACK
 * (slot and a random part, so an old or made-up id finds nothing).
 *
 * Locking: the table is guarded by engine->serve_lock; handlers (in UCX
 * progress) take it, and nobody calls UCX while holding it.
 */
#ifndef HIXL_CORE_SERVED_H_
#define HIXL_CORE_SERVED_H_

#include <hixl/hixl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_peer   hixl_peer_t;

typedef enum hixl_served_state {
    HIXL_SERVED_FREE,
    HIXL_SERVED_PENDING,   /* HELLO_ACK sent, BIND not arrived */
    HIXL_SERVED_BOUND,
    HIXL_SERVED_UNBOUND    /* its connector closed the endpoint (UNBIND) */
} hixl_served_state_t;

typedef struct hixl_served_slot {
    uint64_t            id;
    hixl_served_state_t state;
    ucp_ep_h            ep;          /* BOUND: the connection's endpoint
                                        (compared, never used) */
    hixl_peer_t        *peer;        /* referenced while the slot lives */
    atomic_int          ack_queued;  /* DATA_ACKs queued, not yet written */
} hixl_served_slot_t;

typedef struct hixl_served {
    hixl_served_slot_t *slots;
    size_t              cap;
    atomic_uint         acks_queued; /* slots with ack_queued set */
} hixl_served_t;

/* A connection is being accepted: its id goes in HELLO_ACK (engine->lock
 * held); peer->conn_id is set. */
hixl_status_t hixl_served_open(hixl_engine_t *engine, hixl_peer_t *peer);

/* Answer a library WRITE (the message's header) on the control connection
 * of connection id, if it still lives; from a handler of the in worker.
 * The answer is queued: those of one pass of the in worker go out with
 * one write per connection (hixl_served_acks_send), not a system call
 * each (a 64 KiB WRITE costs the decode a few of those). */
struct hixl_am_hdr;
void hixl_served_ack(hixl_engine_t *engine, uint64_t id,
                     const struct hixl_am_hdr *h, hixl_status_t status);

/* Write the answers queued since the last call (after every progress of
 * the in worker: core/progress.c). */
void hixl_served_acks_send(hixl_engine_t *engine);

/* Whether a message on reply_ep belongs to live connection id
 * (serve_lock held). */
int hixl_served_check(hixl_engine_t *engine, uint64_t id, ucp_ep_h reply_ep);

/* Whether reply_ep serves no live connection: what still arrives on it is
 * of one that ended (serve_lock held). */
int hixl_served_orphan(hixl_engine_t *engine, ucp_ep_h reply_ep);

void hixl_served_cleanup(hixl_engine_t *engine);

/* Set the BIND and UNBIND handlers on the engine's in worker (UNBIND: the
 * connector closes the endpoint it arrives on; it is taken out of the
 * table, answered and retired, core/ep_retire.h), and the peer hook that
 * ends a connection here when its peer closes (core/peer.h). */
hixl_status_t hixl_served_init(hixl_engine_t *engine);

#endif
