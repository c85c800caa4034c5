/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The target's half of the WRITE/READ data protocol (core/xfer/am_data.h):
 * WRITEs placed and answered on the control connection, READs answered
 * with the data, both on the in worker.
 */
#ifndef HIXL_CORE_XFER_AM_TARGET_H_
#define HIXL_CORE_XFER_AM_TARGET_H_

#include <hixl/hixl.h>

typedef struct hixl_engine hixl_engine_t;

/* Set the WRITE and READ handlers on the in worker (an engine that
 * listens; engine set-up). */
hixl_status_t hixl_am_target_init(hixl_engine_t *engine);

#endif
