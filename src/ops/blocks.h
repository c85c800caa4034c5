/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfers by block table: hixl_blocks_prepare / hixl_blocks_release /
 * hixl_transfer_blocks_async.
 */
#ifndef HIXL_OPS_BLOCKS_H_
#define HIXL_OPS_BLOCKS_H_

#include "core/engine.h"

/* Free the layouts the application did not release (finalize). */
void hixl_blocks_cleanup(hixl_engine_t *engine);

#endif
