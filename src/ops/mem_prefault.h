/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting peers' memory mapped here (hixl.PrefaultMem, util/prefault.h)
 * off every path that matters: a peer's region UCX maps into this process
 * (shared memory it allocated) has no page tables until it is first
 * written, so the first transfer into it would fault page by page.  The
 * regions a peer announces are pre-faulted by a thread of the engine's own
 * as they arrive (at connect, or later), not by the progress thread, which
 * must not stop for the seconds a large KV cache takes.  That thread runs
 * at the lowest priority (util/workq.h): when many engines connect at once,
 * their wire-ups come first.
 *
 * A region revoked meanwhile is unmapped under it: the kernel then reports
 * the range as unmapped, and nothing else happens (pre-faulting never
 * changes bytes).
 */
#ifndef HIXL_OPS_MEM_PREFAULT_H_
#define HIXL_OPS_MEM_PREFAULT_H_

#include <hixl/hixl.h>
#include <stddef.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_warm hixl_warm_t;

/* Set-up and the last cleanup (after every region is freed). */
hixl_status_t hixl_prefault_init(hixl_engine_t *engine);
void hixl_prefault_cleanup(hixl_engine_t *engine);

/* Queue [addr, +len) of this process's address space (engine->lock held);
 * the thread starts with the first. */
void hixl_prefault_later(hixl_engine_t *engine, const void *addr, size_t len);

/*
 * Warming: memory this engine allocated (hixl_alloc_mem) gets every page
 * written once on the same thread, without a byte changed (util/prefault.h
 * says why page tables are not enough where memory is backed lazily).
 * The region holds the returned warming (NULL: none, an optimisation
 * only) and cancels it before the memory goes: hixl_warm_cancel returns
 * once no page of it will be written again.  hixl_mem_warm_wait (hixl.h)
 * waits for the warming and the pre-faulting queued so far.
 */
hixl_warm_t *hixl_warm_later(hixl_engine_t *engine, void *addr, size_t len);
void hixl_warm_cancel(hixl_warm_t *warm);

/* Stop the thread (finalize, before peers' mappings go); what is queued is
 * dropped, a warming or pre-fault running stops at its next chunk. */
void hixl_prefault_stop(hixl_engine_t *engine);

#endif
