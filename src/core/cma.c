/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Same-host copies between processes (cma.h).
 */
#define _GNU_SOURCE
#include "config.h"
#include "core/cma.h"
#include "util/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int hixl_cma_probe(pid_t pid, uint64_t ident, uint64_t instance)
{
    uint64_t seen = 0;
    struct iovec l = {&seen, sizeof(seen)};
    struct iovec r = {(void*)(uintptr_t)ident, sizeof(seen)};
    ssize_t n;

    if ((pid <= 0) || (ident == 0)) {
        return EINVAL;
    }
    n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
        return errno;
    }
    return ((n == (ssize_t)sizeof(seen)) && (seen == instance)) ? 0 : ESTALE;
}

/* The kernel copies at most what one call's iovecs cover and may stop
 * early (a fault part-way, a signal): go on from where it stopped. */
hixl_status_t hixl_cma_copy(pid_t pid, int write, void *local,
                            uint64_t remote, size_t len)
{
    size_t done = 0;
    struct iovec l, r;
    ssize_t n;

    while (done < len) {
        l.iov_base = (char*)local + done;
        l.iov_len  = len - done;
        r.iov_base = (void*)(uintptr_t)(remote + done);
        r.iov_len  = len - done;
        n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) :
                    process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        return hixl_error(HIXL_FAILED, "%s of %zu bytes at 0x%" PRIx64
                          " in process %d stopped after %zu: %s",
                          write ? "process_vm_writev" : "process_vm_readv",
                          len, remote, (int)pid, done,
                          (n < 0) ? strerror(errno) : "no progress");
    }
    return HIXL_SUCCESS;
}
