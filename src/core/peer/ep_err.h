/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A UCX endpoint's error record, and closing an endpoint at once.
 *
 * The record is the argument of the endpoint's error handler.  UCX may
 * call that handler until the endpoint's close completes, so the record is
 * counted: the peer holds one reference, each close one more, and it is
 * freed by whichever lets go last.  The handler runs inside UCX with its
 * lock held: it only records the error and wakes progress; the periodic
 * pass closes the peer under engine->lock (core/peer/peer.c).
 *
 * Closing at once is what both a peer's end (core/peer/endpoint.c) and a
 * closing in order that ran out of time (core/peer/ep_close.h) come to.
 */
#ifndef HIXL_CORE_EP_ERR_H_
#define HIXL_CORE_EP_ERR_H_

#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_ep_err hixl_ep_err_t;

/* A record with one reference (the caller's), no error yet; NULL when out
 * of memory. */
hixl_ep_err_t *hixl_ep_err_new(hixl_engine_t *engine);

/* Make err the error handler's argument of the endpoint params create. */
void hixl_ep_err_handler(hixl_ep_err_t *err, ucp_ep_params_t *params);

/* The error UCX reported on the endpoint, or UCS_OK; a reference
 * dropped. */
ucs_status_t hixl_ep_err_status(const hixl_ep_err_t *err);
void hixl_ep_err_release(hixl_ep_err_t *err);

/* Close ep now: forced in PEER mode (what is queued is cancelled), a flush
 * close in NONE mode, where UCX refuses to force.  err gets a reference
 * for the close. */
void hixl_ep_close_now(ucp_ep_h ep, hixl_ep_err_t *err, int peer_mode,
                       const char *name);

#endif
