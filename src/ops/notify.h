/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Notifies: named messages between connected engines, over the control
 * connection (so they are ordered per peer on every transport), into a
 * bounded queue that hixl_get_notifies() drains.  Every notify is answered
 * with a NOTIFY_ACK carrying whether it was queued, so a sender learns that
 * the receiver's queue is full instead of the notify vanishing.
 *
 * A transfer may carry one (hixl_transfer_args_t.notify): it is sent once
 * every byte of the transfer landed, and the request completes when its
 * answer comes.
 */
#ifndef HIXL_OPS_NOTIFY_H_
#define HIXL_OPS_NOTIFY_H_

#include "core/engine.h"

/* Sequence numbers of per-transfer notifies carry this bit and the request
 * handle, so the answer finds its request without a lookup table. */
#define HIXL_SEQ_XFER (1ull << 63)

hixl_status_t hixl_notify_init(hixl_engine_t *engine);
void hixl_notify_cleanup(hixl_engine_t *engine);

/* Check a notify the application gave (what: "notify", "transfer
 * notify"); PARAM_INVALID naming the problem. */
hixl_status_t hixl_notify_check(const hixl_engine_t *engine,
                                const hixl_notify_desc_t *n, const char *what);

/* Give req a copy of the (checked) notify, sent after its data. */
hixl_status_t hixl_notify_attach(hixl_request_t *req,
                                 const hixl_notify_desc_t *n);

/* How many notifies are queued (engine->lock held). */
uint32_t hixl_notify_queued(const hixl_engine_t *engine);

#endif
