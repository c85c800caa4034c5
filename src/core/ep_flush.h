/*
 * Coalesced transfer flushes: one ucp_ep_flush_nbx in flight per endpoint.
 *
 * A transfer completes when a UCX flush posted after its last put or get
 * completes: that is what makes COMPLETED mean "visible at the
 * destination".  One flush per transfer is correct but expensive where a
 * flush is a round trip (tcp: the peer acknowledges the puts), and the
 * flushes of a window of small transfers then cost more than their data.
 *
 * So transfers to one endpoint share flushes, as a database shares a log
 * write between commits (group commit):
 *  - a transfer whose puts are posted while no flush is in flight posts one
 *    and is its group;
 *  - a transfer posted while one is in flight waits: the flush in flight
 *    may have been posted before its puts, so it does not cover them;
 *  - when the flush in flight completes, its group completes, and everyone
 *    who waited meanwhile becomes the next group under one new flush.
 * A flush covers every operation posted on the endpoint before it, so each
 * transfer still completes only after a flush posted after its own puts.
 * Where a flush completes at once (shared memory, CMA), nothing ever waits.
 *
 * Locking: posting and issuing run under engine->lock, which also guards
 * the endpoint's life (hixl_peer_close).  UCX calls the flush back with its
 * worker lock held, where engine->lock must not be taken (other threads
 * take it before calling UCX), so the callback only completes its group;
 * the next flush is issued by the next hixl_progress or transfer post.  The
 * group lists are guarded by a spinlock of their own, never held across a
 * UCX call.  The state lives in the endpoint context (hixl_ep_ctx_t), which
 * outlives the peer: UCX may call back a force-closed endpoint's flush as
 * late as worker destroy.
 */
#ifndef HIXL_FLUSH_GROUP_H_
#define HIXL_FLUSH_GROUP_H_

#include "core/peer.h"

/* Start coalescing on a new endpoint. */
void hixl_fg_init(hixl_ep_ctx_t *ctx, ucp_ep_h ep);

/* Release what hixl_fg_init set up (engine destroy, after the worker). */
void hixl_fg_cleanup(hixl_ep_ctx_t *ctx);

/* req's operations are posted on peer's endpoint: complete it (through
 * hixl_xfer_flushed) once a flush covers them.  engine->lock held.
 * Returns 1 instead when a flush covering them completed inside this call
 * without error: the caller then drops the flush's hold on req itself. */
int hixl_fg_add(hixl_engine_t *engine, hixl_peer_t *peer,
                hixl_request_t *req);

/* Issue the flushes that callbacks left waiting (engine->lock not held). */
void hixl_fg_progress(hixl_engine_t *engine);

/* The endpoint is about to be closed (engine->lock held): stop issuing
 * and drop the group lists; hixl_xfer_peer_closed then settles their
 * requests, and a late callback finds nothing. */
void hixl_fg_close(hixl_ep_ctx_t *ctx);

/* A flush covering req ended with ustatus (transfer.c). */
void hixl_xfer_flushed(hixl_engine_t *engine, hixl_request_t *req,
                       ucs_status_t ustatus);

#endif
