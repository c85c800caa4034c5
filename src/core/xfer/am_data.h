/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's WRITE/READ data protocol (messages: core/am/am_proto.h, sent
 * and received through core/am/am.h): writes and reads that the target
 * checks and answers, used where UCX would emulate puts and gets with
 * messages of its own.
 *
 * Why: UCX 1.13's tcp transport has no remote-write lane, so ucp_put_nbx
 * there is an active message whose handler, in the target, sends an ack
 * for every fragment and aborts the target process when that ack cannot be
 * sent because the initiator died (ucp_request_try_send -> ucs_fatal; no
 * endpoint or error mode avoids it).  Shared memory emulates puts into
 * memory UCX did not allocate the same way, one message per 8 KiB, and a
 * process killed while writing into a shared-memory receive queue leaves a
 * hole that blocks it for good: the fewer messages, the rarer that is.
 *
 * So, per remote region (hixl_rregion_t.path): where UCX maps the memory
 * (ucp_rkey_ptr: shared memory it allocated) or has RDMA lanes, puts and
 * gets; to another process of this host, kernel copies (core/peer/cma.h);
 * elsewhere these messages, eager, one answer each.  A message carries a
 * table of pieces and their data (core/am/am_proto.h): the descriptors of
 * a request gathered up to HIXL_AM_CHUNK bytes, so that small blocks go
 * several to a message and large ones in several.  A WRITE's data is
 * packed from the caller's buffers only while its connection is open
 * (core/am/am.h's guard), so that an endpoint that keeps what it queued
 * after its connection ended (core/peer/ep_close.h) never reads a caller's
 * buffer afterwards; a window per channel bounds what UCX holds, and
 * WRITEs beyond it wait in order for room.
 *
 * The target (its in worker, core/xfer/am_target.h) accepts a message only on
 * the endpoint bound to a live connection (core/peer/inbound.h) and only when
 * every piece lies inside one of its registered host regions
 * (core/xfer/am_table.h), so nothing of an ended connection and nothing from
 * outside the library can land.  The answer comes after the bytes are in
 * memory; the connector counts answers in its channel's epoch slots
 * (core/peer/channel.h), which is what its endpoint flush waits for.
 */
#ifndef HIXL_CORE_AM_DATA_H_
#define HIXL_CORE_AM_DATA_H_

#include "core/am/am.h"
#include "core/peer/channel.h"

#include <hixl/hixl.h>

typedef struct hixl_request hixl_request_t;
typedef struct hixl_region  hixl_region_t;

/* A request's descriptors to one channel being gathered into messages
 * (zero it before the first; hixl_am_msg_t: core/peer/channel.h). */
typedef struct hixl_am_batch {
    hixl_am_msg_t *msg;      /* the message being gathered, or NULL */
    size_t         posted;   /* WRITE bytes the caller's thread sent */
} hixl_am_batch_t;

/* Add a WRITE (id HIXL_AM_WRITE) of [local, +len) to remote, or a READ
 * (HIXL_AM_READ) of [remote, +len) into local (a registered region), to
 * req's batch on chan (engine->lock held).  Pieces go several to a
 * message, and a large one in several messages; a message that is full
 * is sent.  UCS_OK, or why a message was not sent. */
ucs_status_t hixl_am_batch_add(hixl_engine_t *engine, hixl_am_batch_t *batch,
                               hixl_chan_t *chan, hixl_request_t *req,
                               unsigned id, uintptr_t local, uint64_t remote,
                               size_t len);

/* Send what batch gathered: the request's last message. */
ucs_status_t hixl_am_batch_flush(hixl_engine_t *engine,
                                 hixl_am_batch_t *batch);

/* A WRITE's answer came (DATA_ACK on the control connection, handled by
 * ctrl/; the fields in a message header). */
void hixl_am_acked(hixl_engine_t *engine, const hixl_am_hdr_t *h);

/* The data handlers (answers on the out worker, WRITE and READ on the in
 * worker when the engine listens), the progress callback that sends WRITEs
 * that waited for room, and the channel close hook that drops them (engine
 * set-up, after core/am/am.h's and the channels'); cleanup. */
hixl_status_t hixl_am_data_init(hixl_engine_t *engine);
void hixl_am_data_cleanup(hixl_engine_t *engine);

#endif
