/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfers: hixl_transfer_sync / hixl_transfer_async /
 * hixl_get_transfer_status.
 */
#ifndef HIXL_OPS_TRANSFER_H_
#define HIXL_OPS_TRANSFER_H_

#include "core/engine.h"

hixl_status_t hixl_transfer_init(hixl_engine_t *engine);
void hixl_transfer_cleanup(hixl_engine_t *engine);

#endif
