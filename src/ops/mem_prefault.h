/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting peers' memory mapped here (hixl.PrefaultMem, util/prefault.h)
 * off every path that matters: a peer's region UCX maps into this process
 * (shared memory it allocated) has no page tables until it is first
 * written, so the first transfer into it would fault page by page.  The
 * regions a peer announces are pre-faulted by a thread of the engine's own
 * as they arrive (at connect, or later), not by the progress thread, which
 * must not stop for the seconds a large KV cache takes.
 *
 * A region revoked meanwhile is unmapped under it: the kernel then reports
 * the range as unmapped, and nothing else happens (pre-faulting never
 * changes bytes).
 */
#ifndef HIXL_OPS_MEM_PREFAULT_H_
#define HIXL_OPS_MEM_PREFAULT_H_

#include <stddef.h>

typedef struct hixl_engine hixl_engine_t;

/* Queue [addr, +len) of this process's address space (engine->lock held);
 * the thread starts with the first. */
void hixl_prefault_later(hixl_engine_t *engine, const void *addr, size_t len);

/* Stop the thread (finalize, before peers' mappings go); what is queued is
 * dropped. */
void hixl_prefault_stop(hixl_engine_t *engine);

#endif
