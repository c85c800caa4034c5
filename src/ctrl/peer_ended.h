/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections that ended, remembered by name.
 *
 * Two uses.  A transfer to a peer that is gone gets NOT_CONNECTED with the
 * reason its connection ended ("the peer said BYE: ...", "endpoint
 * timeout"), not a bare "not connected".  And a connection the application
 * saw come up but that ended from the other side (the peer disconnected,
 * finalized or died) stays owed to the application: its hixl_disconnect()
 * still succeeds, once, like ucp_ep_close() on an endpoint that failed.
 * Without that, every orderly shutdown races: whichever side disconnects
 * second would get NOT_CONNECTED for doing the right thing.
 *
 * The record is bounded (HIXL_ENDED_MAX); past it the oldest acknowledged
 * entries go first.  All calls with engine->lock held (the list is the
 * ctrl layer's, struct hixl_ctrl).
 */
#ifndef HIXL_PEER_ENDED_H_
#define HIXL_PEER_ENDED_H_

#include "core/peer/peer.h"

#include <stddef.h>
#include <stdint.h>

#define HIXL_ENDED_MAX 256
/* The token a listener issues to each accepted connection (HELLO_ACK) and
 * that the same engine presents when it reconnects (HELLO): only those two
 * know it, so only the engine that held a connection can replace it.  A
 * connector keeps the token of an ended connection here, with its reason. */
#define HIXL_RESUME_LEN 16

typedef struct hixl_ended hixl_ended_t;

typedef struct hixl_ended_list {
    hixl_ended_t *head;      /* newest first */
    unsigned      count;
} hixl_ended_list_t;

/* Remember why peer ended (from hixl_peer_close).  owed: the application
 * saw the connection up and did not end it itself.  resume: the
 * connection's resume token (issued by the listener, kept by both ends),
 * or NULL; peer->remote_instance is kept with it. */
void hixl_ended_record(hixl_ended_list_t *list, const hixl_peer_t *peer,
                       int owed, const uint8_t *resume);

/* The resume token of the newest ended connection with name in that
 * direction: 1, HIXL_RESUME_LEN bytes in out and the connection's
 * remote_instance in *instance_p, or 0 when none is remembered. */
int hixl_ended_resume(hixl_ended_list_t *list, const char *name,
                      int outgoing, uint8_t *out, uint64_t *instance_p);

/* The reason the newest connection called remote ended (outgoing: 1 only
 * outgoing ones, -1 either), or NULL when none is remembered. */
const char *hixl_ended_reason(hixl_ended_list_t *list, const char *remote,
                              int outgoing);

/* hixl_disconnect() of a connection that already ended: 1 if one owed to
 * the application was found (it is then acknowledged; its reason is copied
 * into reason), else 0. */
int hixl_ended_acknowledge(hixl_ended_list_t *list, const char *remote,
                           char *reason, size_t reason_len);

/* A new connection to name came up: what is remembered of older ones in
 * the same direction is no longer news. */
void hixl_ended_forget(hixl_ended_list_t *list, const char *name, int outgoing);

void hixl_ended_cleanup(hixl_ended_list_t *list);

#endif
