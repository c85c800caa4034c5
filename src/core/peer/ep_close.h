/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Closing UCX endpoints in order: a connection's endpoints on both sides
 * without tripping over UCX 1.13.
 *
 * Three facts of UCX 1.13 shape this (each seen in this library's
 * tests):
 *
 *  1. An endpoint made from a worker address has a partner that UCX made
 *     in the other worker for it (the listener's, core/peer/inbound.h), and
 *     there is no disconnect between the two: closing one leaves the
 *     other, and on tcp the socket they share, until the other is closed
 *     too or a worker goes (ucp_ep_disconnected keeps "endpoints which
 *     have remote connection"; a closed tcp endpoint keeps its socket for
 *     receiving until the other side's ends).  A decode whose prefills
 *     reconnect would keep one socket and one endpoint per connection it
 *     ever had.
 *  2. The listener may close its endpoint only while UCX vouches for it:
 *     UCX destroys it by itself when it sees the connector fail, so a
 *     pointer kept for later may be stale.  Inside a callback UCX passed
 *     it to, it is good, and so in the completion of a flush issued there
 *     that ends without error.
 *  3. A forced close of a tcp endpoint whose socket cannot take data (a
 *     partition: the peer acknowledges nothing) leaves UCX discarding it
 *     with its queue blocked; when the network heals, that discard
 *     corrupts UCX's state and the process dies (SIGSEGV, or the arbiter
 *     assertion "scheduling arbiter group while it's being dispatched"),
 *     about 15 s after the heal.  A flush first, then the forced close,
 *     never meets a blocked queue.
 *
 * So a connector whose connection ended with both sides possibly alive (an
 * application disconnected, or the peer stopped answering: core/peer/peer.h
 * hixl_peer_end_t) closes its endpoint (hixl_ep_close_start): it flushes it; if
 * the connection ended in order with nothing in flight, it then sends UNBIND on
 * it with the REPLY flag, and the listener's handler takes the endpoint out of
 * the inbound table, answers UNBIND_ACK on it and closes its own end (flush,
 * then forced close).  A peer that is gone (its sockets closed without a
 * goodbye) or an endpoint UCX reported an error on is closed at once, as
 * before: nothing is blocked there, and a flush racing UCX's own error handling
 * trips a UCX 1.13 assertion ("comp->count > 0", seen once when a decode was
 * killed mid-flush). The connector force-closes its endpoint once its flush is
 * done and the answer came (or HIXL_EP_CLOSE_WAIT_MS passed without one), or at
 * once when UCX reports an error on it.  A flush that cannot finish (the peer
 * is cut off) keeps the endpoint, and only UCX's data queued on it, until the
 * network heals or TCP gives up; the library's own data messages read a
 * caller's buffer only while its connection is open, and what goes out after
 * that is dropped by the listener (core/am/am.h, hixl_am_guard_t), so no
 * caller's buffer is read after its transfer ended.  The listener closes an
 * endpoint whose connection ended without UNBIND when the next message of it
 * arrives (a partition healed: the connector's queued bytes come); otherwise
 * UCX's keepalive ends it.
 *
 * Only endpoints in UCX's PEER error mode take part: in NONE mode UCX
 * refuses forced closes (endpoint.c closes those with a flush close).
 */
#ifndef HIXL_CORE_EP_CLOSE_H_
#define HIXL_CORE_EP_CLOSE_H_

#include "core/peer/ep_err.h"

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

typedef struct hixl_ep_close hixl_ep_close_t;

/* How long a connector waits for UNBIND_ACK once its flush is done (a
 * peer that does not answer is dead or cut off; UCX's own error, when it
 * comes, ends the wait sooner). */
#define HIXL_EP_CLOSE_WAIT_MS 1000

typedef struct hixl_ep_close_reply hixl_ep_close_reply_t;

typedef struct hixl_ep_closer {
    pthread_mutex_t lock;        /* the lists; taken inside UCX callbacks */
    hixl_ep_close_t       *head;        /* connector endpoints */
    hixl_ep_close_reply_t *replies;     /* inbound endpoints being flushed */
    uint64_t        next_id;
    atomic_uint     count;
} hixl_ep_closer_t;

/* Connector: close ep of connection conn (to the engine called name); with
 * unbind, the listener is asked to close its end (UNBIND).  The endpoint
 * and err's reference are the closing's now.  Returns its id (for
 * hixl_ep_close_done), never 0. */
uint64_t hixl_ep_close_start(hixl_engine_t *engine, ucp_ep_h ep,
                             hixl_ep_err_t *err, uint64_t conn, int unbind,
                             const char *name);

/* Whether closing id has closed its endpoint (an unknown id has). */
int hixl_ep_close_done(hixl_engine_t *engine, uint64_t id);

/* Listener, inside a UCX callback that passed ep: close it (flush, then
 * forced close from the flush's completion); why is for the log. */
void hixl_ep_close_reply_ep(hixl_engine_t *engine, ucp_ep_h ep, uint64_t conn,
                            const char *why);

/* After the worker's destroy, which took every endpoint still closing (a
 * forced close before it could meet a blocked queue, fact 3): free their
 * records.  UCX may call an endpoint's error handler until the worker is
 * gone, so its argument lives until then. */
void hixl_ep_close_cleanup(hixl_engine_t *engine);

/* The UNBIND_ACK handler (out worker; UNBIND's is the inbound table's,
 * core/peer/inbound.h), the progress callback that closes endpoints whose time
 * came (engine set-up; the list's lock is the engine's to create and
 * destroy). */
hixl_status_t hixl_ep_close_init(hixl_engine_t *engine);

#endif
