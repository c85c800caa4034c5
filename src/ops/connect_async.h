/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connect pool behind hixl_connect_async / hixl_disconnect_async.
 */
#ifndef HIXL_OPS_CONNECT_ASYNC_H_
#define HIXL_OPS_CONNECT_ASYNC_H_

#include "core/engine.h"

/* Finalize, first of all: stop the pool (running operations end within
 * their timeouts; queued ones are dropped). */
void hixl_connect_async_cleanup(hixl_engine_t *engine);

#endif
