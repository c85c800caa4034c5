/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control messages by type: each module registers the handler of the
 * messages it owns, with the peers and states it is legal on, and the
 * dispatcher enforces that once for all of them.  A message that breaks
 * the rules closes that peer with the reason logged; the engine goes on
 * serving the others.
 */
#ifndef HIXL_CTRL_DISPATCH_H_
#define HIXL_CTRL_DISPATCH_H_

#include "core/engine.h"
#include "wire/ctrl_msg.h"

/* Handle msg from peer (engine->lock held).  Non-zero when the handler
 * closed the peer (reading its connection stops). */
typedef int (*hixl_ctrl_fn_t)(hixl_engine_t *engine, hixl_peer_t *peer,
                              const hixl_msg_t *msg);

/* Where a message is legal: on which side's peers, in which state. */
enum {
    HIXL_CTRL_ON_OUTGOING  = 1u << 0,   /* sent by a listener we connected */
    HIXL_CTRL_ON_ACCEPTED  = 1u << 1,   /* sent by a connector we accepted */
    HIXL_CTRL_IN_HANDSHAKE = 1u << 2,
    HIXL_CTRL_WHEN_READY   = 1u << 3,
    HIXL_CTRL_ON_EITHER    = HIXL_CTRL_ON_OUTGOING | HIXL_CTRL_ON_ACCEPTED,
    HIXL_CTRL_ANY_STATE    = HIXL_CTRL_IN_HANDSHAKE | HIXL_CTRL_WHEN_READY
};

typedef struct hixl_ctrl_rule {
    hixl_ctrl_fn_t fn;
    unsigned       when;
} hixl_ctrl_rule_t;

/* Register the handler of a message type (engine set-up). */
void hixl_ctrl_handle(hixl_engine_t *engine, uint16_t type, hixl_ctrl_fn_t fn,
                      unsigned when);

/* Close peer for a protocol error in msg; returns 1 (a handler's result). */
int hixl_ctrl_protocol_error(hixl_engine_t *engine, hixl_peer_t *peer,
                             const hixl_msg_t *msg, const char *why);

/* Send msg on peer's control connection (FAILED when it is closed). */
static inline hixl_status_t hixl_ctrl_send(hixl_peer_t *peer,
                                           const hixl_msg_t *msg)
{
    return hixl_conn_send(&peer->conn, msg);
}

/* Queue msg behind what peer's connection has queued, without writing:
 * a run of messages then leaves in as few writes as the socket takes,
 * with the next hixl_ctrl_send on it, which the caller owes.  FAILED (the
 * reason said) when the connection is closed or its queue full. */
static inline hixl_status_t hixl_ctrl_queue(hixl_peer_t      *peer,
                                            const hixl_msg_t *msg)
{
    return (hixl_conn_queue(&peer->conn, msg) < 0) ? HIXL_FAILED : HIXL_SUCCESS;
}

#endif
