/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration: hixl_register_mem / hixl_alloc_mem /
 * hixl_deregister_mem, the announcements that keep peers' remote tables
 * current (MEM_ADD, MEM_DEL), and the SYNC barrier behind refreshes and
 * revocations.
 */
#ifndef HIXL_OPS_MEMORY_H_
#define HIXL_OPS_MEMORY_H_

#include "core/engine.h"

hixl_status_t hixl_memory_init(hixl_engine_t *engine);

/* Finalize, after the worker is gone: unmap and free every region. */
void hixl_memory_cleanup(hixl_engine_t *engine);

/* Ask peer for everything it registered since it last told us, and wait
 * until its answer is in (engine->lock held; released while waiting).
 * NOT_CONNECTED when the peer went meanwhile, TIMEOUT. */
hixl_status_t hixl_memory_refresh(hixl_engine_t *engine, hixl_peer_t *peer,
                                  uint64_t deadline_ns);

#endif
