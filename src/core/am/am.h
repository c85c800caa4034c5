/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's active-message transport (messages: core/am/am_proto.h):
 * sending them, and receiving them through one validating dispatcher.
 *
 * It sits below everything that speaks these messages: channels (BIND),
 * the inbound table (BIND_ACK), endpoint closing (UNBIND, UNBIND_ACK)
 * and the WRITE/READ data protocol (core/xfer/am_data.h).  It knows none of
 * them: each registers a handler for its message ids, and the dispatcher
 * hands a handler only what passed the checks every one of them needs:
 *  - the header is one of the library's (length, magic, version; copied
 *    out, as UCX passes it at whatever alignment it lands), else the
 *    message is dropped;
 *  - it is not a rendezvous: the library sends every message eagerly, so
 *    one that is not is not ours, and the sender's call ends with
 *    UCS_ERR_UNSUPPORTED (for a rendezvous UCX hands the handler its own
 *    descriptor, not the payload, which a handler must never read as
 *    data);
 *  - HIXL_AM_RECV_REPLY_EP: it came with UCX's reply endpoint (the sender
 *    used the REPLY flag), else it is dropped;
 *  - HIXL_AM_RECV_SEALED: its payload ends with the seal of a guarded send
 *    (hixl_am_guard_t), which is taken off; a message whose seal is
 *    broken, or missing, reaches its handler with no data (NULL, 0).
 *
 * Every payload is packed by the transport (a UCX generic datatype): see
 * am.c for why the library's messages never go zero-copy.
 *
 * Threads: sends may be posted from any thread, handlers included; the
 * pool of send contexts has a spinlock of its own that is held across
 * nothing else.  Handlers run inside ucp_worker_progress of the worker
 * they were set on and never take engine->lock.
 */
#ifndef HIXL_CORE_AM_H_
#define HIXL_CORE_AM_H_

#include "core/am/am_proto.h"

#include <hixl/hixl.h>
#include <sys/uio.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;

/* Called once when a send ends, whatever its status (also when it could
 * not be posted), with the header that was sent. */
typedef void (*hixl_am_done_fn_t)(void *arg, const hixl_am_hdr_t *hdr);

/* A validated message: h is a copy of its header; reply_ep is UCX's reply
 * endpoint, or NULL when the message came without one.  Returns what the
 * UCX receive callback returns. */
typedef ucs_status_t (*hixl_am_recv_fn_t)(hixl_engine_t *engine,
                                          const hixl_am_hdr_t *h, void *data,
                                          size_t length, ucp_ep_h reply_ep);

/* hixl_am_set_handler flags: what the dispatcher requires */
#define HIXL_AM_RECV_REPLY_EP 1u   /* with a reply endpoint */
#define HIXL_AM_RECV_SEALED   4u   /* sent guarded: seal checked, taken off */

/*
 * Data a send may read only while its owner has not let it go: a caller's
 * buffer, which is the caller's again once its transfer was reported
 * ended, although UCX may hold the send (a peer that cannot be reached
 * keeps it queued until the network heals: core/peer/ep_close.h).  UCX packs
 * a send part by part, when each part goes out; before each part begin
 * says whether the data may be read, and keeps it so until end.  Once it
 * says no, the rest goes out as zeros and the seal at the end of the
 * payload is broken, so the receiver drops the whole message.
 */
typedef struct hixl_am_guard {
    int  (*begin)(hixl_engine_t *engine, void *arg, const hixl_am_hdr_t *hdr);
    void (*end)(void *arg);
    void  *arg;
} hixl_am_guard_t;

/* Send hdr (+ len bytes of data) on ep with UCX's UCP_AM_SEND_FLAG_*
 * flags, from any thread.  The header is copied; data is read while the
 * send is in flight, under guard when one is given (the receiver's handler
 * must then be HIXL_AM_RECV_SEALED).  on_done, if given, runs once in
 * every case.  Returns UCX's status: UCS_OK once posted. */
ucs_status_t hixl_am_send(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                          const hixl_am_hdr_t *hdr, const void *data,
                          size_t len, uint32_t flags,
                          const hixl_am_guard_t *guard,
                          hixl_am_done_fn_t on_done, void *arg);

/*
 * A payload in pieces, gathered when UCX packs it: head (the sender's own
 * bytes, such as a table of the pieces) and then the parts, which are the
 * guarded data when a guard is given.  Everything it points to, the part
 * array included, stays until on_done.
 */
typedef struct hixl_am_payload {
    const void         *head;
    size_t              head_len;
    const struct iovec *parts;
    size_t              num_parts;
    size_t              parts_len;   /* the parts' lengths summed */
} hixl_am_payload_t;

/* hixl_am_send with a payload in pieces (parts_len + head_len > 0). */
ucs_status_t hixl_am_sendv(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                           const hixl_am_hdr_t *hdr,
                           const hixl_am_payload_t *payload, uint32_t flags,
                           const hixl_am_guard_t *guard,
                           hixl_am_done_fn_t on_done, void *arg);

/* The same for an answer or a small message whose failure only matters to
 * the log (handlers included). */
void hixl_am_send_small(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                        const hixl_am_hdr_t *hdr, const void *data,
                        size_t len, uint32_t flags,
                        hixl_am_done_fn_t on_done, void *arg);

/* Set the handler of message id on a worker (engine set-up; each id has
 * one handler, on one worker). */
hixl_status_t hixl_am_set_handler(hixl_engine_t *engine, ucp_worker_h worker,
                                  unsigned id, unsigned flags,
                                  hixl_am_recv_fn_t cb);

/* Library messages and receives still in flight (their UCX requests not
 * called back yet). */
unsigned hixl_am_live(hixl_engine_t *engine);

/* Pool of the headers sends in flight need, and the handler table (engine
 * set-up, cleanup). */
hixl_status_t hixl_am_init(hixl_engine_t *engine);
void hixl_am_cleanup(hixl_engine_t *engine);

#endif
