/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Layer-granular flush: hixl_flush_layer (prefill side, layer_flush.c) and
 * hixl_wait_layer / hixl_test_layer (decode side, layer_wait.c).
 */
#ifndef HIXL_OPS_LAYER_H_
#define HIXL_OPS_LAYER_H_

#include "core/engine.h"

hixl_status_t hixl_layer_init(hixl_engine_t *engine);
void hixl_layer_cleanup(hixl_engine_t *engine);

/* layer_flush.c's part of the set-up (its peer hooks). */
hixl_status_t hixl_layer_flush_init(hixl_engine_t *engine);

#endif
