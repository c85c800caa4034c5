/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Same-host copies gathered and run together (copy_batch.h).
 */
#include "config.h"
#include "ops/copy_batch.h"
#include "core/peer/cma.h"
#include "util/copy.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hixl_copy_batch_t *hixl_copy_batch_new(size_t cap, int write, pid_t pid)
{
    hixl_copy_batch_t *b;
    size_t iov;

    hixl_assert((cap > 0) && (cap <= HIXL_COPY_BATCH_MAX));
    /* the arrays follow the header, the widest first: no padding needed */
    iov = cap * sizeof(struct iovec);
    b   = malloc(sizeof(*b) + 2 * iov + cap * sizeof(size_t) + cap);
    if (b == NULL) {
        return NULL;
    }
    memset(b, 0, sizeof(*b));
    b->write  = write;
    b->pid    = pid;
    b->cap    = cap;
    b->local  = (struct iovec*)(b + 1);
    b->remote = (struct iovec*)((char*)b->local + iov);
    b->desc   = (size_t*)((char*)b->remote + iov);
    b->stream = (uint8_t*)(b->desc + cap);
    return b;
}

size_t hixl_copy_batch_add(hixl_copy_batch_t *b, size_t desc, void *local,
                           uint64_t remote, size_t len, int stream)
{
    size_t off = 0, n;
    size_t k;

    while ((off < len) && (b->count < b->cap)) {
        n = len - off;
        n = (n > HIXL_COPY_PIECE_MAX) ? HIXL_COPY_PIECE_MAX : n;
        k = b->count++;
        b->local[k].iov_base  = (char*)local + off;
        b->local[k].iov_len   = n;
        b->remote[k].iov_base = (void*)(uintptr_t)(remote + off);
        b->remote[k].iov_len  = n;
        b->desc[k]            = desc;
        b->stream[k]          = (uint8_t)(stream != 0);
        off += n;
    }
    return off;
}

/* Into memory mapped here: nothing is saved by company, one copy each. */
static void hixl_copy_batch_map(hixl_copy_batch_t *b, size_t from, size_t to)
{
    const struct iovec *l = b->local, *r = b->remote;
    size_t k;

    for (k = from; k < to; ++k) {
        void *dst       = b->write ? r[k].iov_base : l[k].iov_base;
        const void *src = b->write ? l[k].iov_base : r[k].iov_base;

        if (b->stream[k]) {
            hixl_copy_past_caches(dst, src, l[k].iov_len);
        } else {
            memcpy(dst, src, l[k].iov_len);
        }
    }
}

hixl_status_t hixl_copy_batch_run(hixl_copy_batch_t *b, size_t from,
                                  size_t to)
{
    char why[HIXL_ERROR_MSG_MAX];
    hixl_status_t status;
    size_t stopped = 0;

    hixl_assert((from <= to) && (to <= b->count));
    if (b->pid == 0) {
        hixl_copy_batch_map(b, from, to);
        return HIXL_SUCCESS;
    }
    status = hixl_cma_copyv(b->pid, b->write, &b->local[from],
                            &b->remote[from], to - from, &stopped);
    if (status == HIXL_SUCCESS) {
        return HIXL_SUCCESS;
    }
    snprintf(why, sizeof(why), "%s", hixl_error_message());
    return hixl_error(status, "descriptor %zu: %s", b->desc[from + stopped],
                      why);
}
