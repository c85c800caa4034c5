/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A request's same-host copies to one peer, gathered and run together.
 *
 * A paged KV cache moves as thousands of blocks of a few KiB scattered
 * over a region.  Posted one by one, each block cost a copier job (an
 * allocation, a hand-off, a count in the channel, a look at the
 * connection) or a process_vm_writev of its own, more than copying 4 KiB
 * costs.  ops/xfer_path.c gathers the descriptors a request posts on the
 * same path (map or cma) into a batch, and a batch is one copier job
 * (ops/copier.h) or one run in the caller's thread; a cma batch is one
 * kernel call per IOV_MAX pieces.
 *
 * A piece is a descriptor, or a part of one: a descriptor larger than
 * HIXL_COPY_PIECE_MAX is cut, so that the copier, which looks at the
 * connection between runs of at most that many bytes, never copies much
 * more before it notices a close.
 */
#ifndef HIXL_OPS_COPY_BATCH_H_
#define HIXL_OPS_COPY_BATCH_H_

#include "util/workq.h"

#include <hixl/hixl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define HIXL_COPY_BATCH_MAX IOV_MAX     /* pieces: one kernel call's */
#define HIXL_COPY_PIECE_MAX (8u << 20)  /* bytes */

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_chan   hixl_chan_t;

typedef struct hixl_copy_batch {
    hixl_work_t    work;         /* first: the copier's queue item */
    /* set by hixl_copier_post */
    hixl_engine_t *engine;
    hixl_chan_t   *chan;
    uint64_t       chan_id;
    unsigned       slot;
    uint64_t       req_handle;
    /* the copies */
    int            write;        /* local -> remote */
    pid_t          pid;          /* cma: the peer's; 0: map (remote is an
                                    address here) */
    size_t         count, cap;   /* pieces */
    struct iovec  *local;        /* piece k: local[k] <-> remote[k], */
    struct iovec  *remote;       /* equal lengths */
    size_t        *desc;         /* the descriptor piece k belongs to */
    uint8_t       *stream;       /* map: bypass the caches (util/copy.h) */
} hixl_copy_batch_t;

/* An empty batch with room for cap pieces (at most HIXL_COPY_BATCH_MAX),
 * one allocation (free()); NULL when out of memory. */
hixl_copy_batch_t *hixl_copy_batch_new(size_t cap, int write, pid_t pid);

/* Add descriptor desc's len bytes as pieces while there is room: the
 * bytes taken (less than len when the batch filled up first). */
size_t hixl_copy_batch_add(hixl_copy_batch_t *b, size_t desc, void *local,
                           uint64_t remote, size_t len, int stream);

static inline int hixl_copy_batch_full(const hixl_copy_batch_t *b)
{
    return b->count == b->cap;
}

/* Copy pieces [from, to) in this thread: HIXL_SUCCESS once every byte is
 * there, else the failure, whose reason (the last error) names the
 * descriptor; NOT_CONNECTED when the peer's process is gone. */
hixl_status_t hixl_copy_batch_run(hixl_copy_batch_t *b, size_t from,
                                  size_t to);

#endif
