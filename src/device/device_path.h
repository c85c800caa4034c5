/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Paths for descriptors that touch device memory (device_path.c): which
 * path carries each one (IPC, UCX, staging; hixl.DevicePath forces one), and
 * the posting of the device copies of the IPC path.
 */
#ifndef HIXL_DEVICE_DEVICE_PATH_H_
#define HIXL_DEVICE_DEVICE_PATH_H_

#include "core/peer/path.h"
#include "device/device_mem.h"

/* Which path moves descriptor i between device memory and another region
 * (rma, ipc or stage; engine->lock held); UNSUPPORTED naming the
 * descriptor and the reason when none can.  Called by the path table's
 * choice (ops/xfer_path.h). */
hixl_status_t hixl_dev_route(hixl_engine_t *engine, hixl_peer_t *peer,
                             size_t i, const hixl_transfer_op_desc_t *d,
                             hixl_region_t *lr, hixl_rregion_t *rr,
                             hixl_path_t *path_p);
/* Post descriptor i on the device path hixl_dev_route chose (IPC or
 * STAGE; engine->lock held): 1 posted, -1 failed (req failed). */
int hixl_dev_post(hixl_engine_t *engine, hixl_peer_t *peer,
                  hixl_request_t *req, hixl_dev_unit_t **unit_p, size_t i,
                  const hixl_transfer_op_desc_t *d, hixl_region_t *lr,
                  hixl_rregion_t *rr, hixl_path_t path);
/* After the last descriptor: mark the queued copies, queue staging. */
void hixl_dev_submit(hixl_engine_t *engine, hixl_dev_unit_t *unit);

#endif
