/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Same-host copies off the caller's thread.
 *
 * To a peer on this host, host memory moves by plain copies: into memory
 * UCX maps here (a peer's hixl_alloc_mem memory: HIXL_PATH_MAP) with
 * memcpy, into memory it cannot map (registered memory: HIXL_PATH_CMA)
 * with process_vm_writev.  hixl_transfer_sync copies in the caller's thread
 * (nothing is faster).  With hixl.AsyncCopy=thread, hixl_transfer_async
 * hands them to the engine's copier thread and returns at once, so that a
 * prefill's thread that posts a layer goes on computing the next one while
 * the copy runs on another core (with hixl.ProgressThread=0, no thread of
 * the library's: it copies inline).  Inline is the default: each copy
 * handed over costs a thread hand-off, which loses where cores are fewer
 * than the threads that want them (a fan-in of many engines).
 *
 * A request's copies go as batches (ops/copy_batch.h: up to IOV_MAX
 * descriptors each), so a thread hand-off is paid per batch, not per
 * descriptor.  A queued batch counts as an operation of its connection's
 * channel, in the current epoch slot (core/peer/channel.h): every flush of
 * the connection (the transfer's own, a layer signal's, the barrier a
 * revocation waits for) waits until it is done.  The thread copies in runs
 * of at most 8 MiB and looks at the channel between them: once the
 * connection is closed it stops, and the close waits for the run in
 * progress before the peer's mappings go (hixl_chan_copy_begin).  A request that ended meanwhile (reported
 * TIMEOUT, or failed in another descriptor) has its copies stopped at the
 * next run too.  A failure is recorded in the request through its
 * handle, never through a pointer a close may have freed.
 */
#ifndef HIXL_OPS_COPIER_H_
#define HIXL_OPS_COPIER_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct hixl_engine  hixl_engine_t;
typedef struct hixl_chan    hixl_chan_t;
typedef struct hixl_request hixl_request_t;
struct hixl_copy_batch;

/* Queue a batch of copies of req (ops/copy_batch.h) to the thread, which
 * owns it from now (engine->lock held).  When no thread can take it, it
 * runs here and now: HIXL_SUCCESS, or its failure with the reason as the
 * last error. */
hixl_status_t hixl_copier_post(hixl_engine_t *engine, hixl_chan_t *chan,
                               hixl_request_t *req,
                               struct hixl_copy_batch *batch);

/* A copy of len bytes between local and remote (write: local -> remote),
 * now, in this thread: pid 0, remote is an address of this process (a
 * peer's memory mapped here); else remote is in process pid.  stream:
 * with pid 0, the copy bypasses the caches (util/copy.h,
 * hixl_copy_sweeps).  HIXL_SUCCESS, or the failure with the reason as the
 * last error. */
hixl_status_t hixl_copy_now(int write, pid_t pid, void *local,
                            uint64_t remote, size_t len, int stream);

/* Whether copies for this engine are handed to the thread. */
int hixl_copier_enabled(const hixl_engine_t *engine);

/* Stop the thread (finalize); what is queued is dropped. */
void hixl_copier_stop(hixl_engine_t *engine);

#endif
