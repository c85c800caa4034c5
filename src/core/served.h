/*
 * Connections as the listener sees them in UCX: the served table.
 *
 * The listener never creates endpoints to its connectors (its in worker
 * only answers).  It learns which UCX endpoint serves a connection from the
 * connector's BIND message, which UCX delivers with that endpoint as
 * reply_ep, and from then on it owns it: every library message of the
 * connection must arrive on it (anything else is dropped), and when the
 * connection ends the listener closes it, which makes UCX drop whatever
 * the old connection still sends, on every transport.
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
#include <stdint.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_peer   hixl_peer_t;

typedef enum hixl_served_state {
    HIXL_SERVED_FREE,
    HIXL_SERVED_PENDING,   /* HELLO_ACK sent, BIND not arrived */
    HIXL_SERVED_BOUND
} hixl_served_state_t;

typedef struct hixl_served_slot {
    uint64_t            id;
    hixl_served_state_t state;
    ucp_ep_h            ep;          /* BOUND: the connection's endpoint */
    int                 peer_mode;   /* it is in UCX's PEER error mode */
} hixl_served_slot_t;

typedef struct hixl_served {
    hixl_served_slot_t *slots;
    size_t              cap;
} hixl_served_t;

/* A connection is being accepted: its id goes in HELLO_ACK (engine->lock
 * held); peer->conn_id is set. */
hixl_status_t hixl_served_open(hixl_engine_t *engine, hixl_peer_t *peer);

/* It ended (engine->lock held): its endpoint, if bound, is closed. */
void hixl_served_close(hixl_engine_t *engine, hixl_peer_t *peer);

/* Whether a message on reply_ep belongs to live connection id
 * (serve_lock held). */
int hixl_served_check(hixl_engine_t *engine, uint64_t id, ucp_ep_h reply_ep);

void hixl_served_cleanup(hixl_engine_t *engine);

/* Set the BIND handler on the engine's in worker. */
hixl_status_t hixl_served_init(hixl_engine_t *engine);

#endif
