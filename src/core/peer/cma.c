/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Same-host copies between processes (cma.h).
 */
#define _GNU_SOURCE
#include "config.h"
#include "core/peer/cma.h"
#include "util/log.h"
#include "wire/sock_owner.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/uio.h>

/* Whether this process may copy into pid's memory at all (ptrace rules,
 * Yama): one byte read from its first mapping.  EFAULT (an unreadable
 * page) still says the access itself was allowed. */
static int hixl_cma_allowed(pid_t pid)
{
    unsigned long start;
    char path[32], byte;
    struct iovec l = {&byte, 1}, r;
    FILE *f;
    int n;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (f == NULL) {
        return (errno == ENOENT) ? ESRCH : errno;
    }
    n = fscanf(f, "%lx-", &start);
    fclose(f);
    if (n != 1) {
        return EACCES;
    }
    r.iov_base = (void*)(uintptr_t)start;
    r.iov_len  = 1;
    if ((process_vm_readv(pid, &l, 1, &r, 1, 0) < 0) && (errno != EFAULT)) {
        return errno;
    }
    return 0;
}

int hixl_cma_probe(pid_t pid, int fd)
{
    int err = hixl_sock_owner_check(fd, pid);

    return (err != 0) ? err : hixl_cma_allowed(pid);
}

/* One call for up to IOV_MAX pieces from piece k, off bytes into it (its
 * iovecs moved past those for the call, then put back). */
static ssize_t hixl_cma_call(pid_t pid, int write, struct iovec *local,
                             struct iovec *remote, size_t k, size_t m,
                             size_t off)
{
    struct iovec l = local[k], r = remote[k];
    ssize_t n;

    local[k].iov_base   = (char*)l.iov_base + off;
    local[k].iov_len    = l.iov_len - off;
    remote[k].iov_base  = (char*)r.iov_base + off;
    remote[k].iov_len   = r.iov_len - off;
    n = write ? process_vm_writev(pid, &local[k], m, &remote[k], m, 0) :
                process_vm_readv(pid, &local[k], m, &remote[k], m, 0);
    local[k]  = l;
    remote[k] = r;
    return n;
}

/* One call copies at most IOV_MAX pieces, and the kernel may stop early
 * (a fault part-way, a signal, a peer unmapping its memory): go on from
 * where it stopped, so that either every byte is there or the piece it
 * could not copy is named. */
hixl_status_t hixl_cma_copyv(pid_t pid, int write, struct iovec *local,
                             struct iovec *remote, size_t count,
                             size_t *stopped)
{
    const char *call = write ? "process_vm_writev" : "process_vm_readv";
    size_t k = 0, off = 0, m, got;
    ssize_t n;

    while (k < count) {
        m = count - k;
        m = (m > IOV_MAX) ? IOV_MAX : m;
        n = hixl_cma_call(pid, write, local, remote, k, m, off);
        if (n > 0) {
            /* past the pieces done, into the one it stopped in */
            for (got = (size_t)n + off, off = 0;
                 (k < count) && (got >= local[k].iov_len); ++k) {
                got -= local[k].iov_len;
            }
            off = got;
            continue;
        }
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        *stopped = k;
        if ((n < 0) && (errno == ESRCH)) {
            return hixl_error(HIXL_NOT_CONNECTED, "process %d is gone (%s "
                              "of %zu bytes at 0x%" PRIxPTR " stopped after "
                              "%zu: %s)", (int)pid, call, local[k].iov_len,
                              (uintptr_t)remote[k].iov_base, off,
                              strerror(ESRCH));
        }
        return hixl_error(HIXL_FAILED, "%s of %zu bytes at 0x%" PRIxPTR
                          " in process %d stopped after %zu: %s", call,
                          local[k].iov_len, (uintptr_t)remote[k].iov_base,
                          (int)pid, off, (n < 0) ? strerror(errno) :
                          "no progress");
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_cma_copy(pid_t pid, int write, void *local,
                            uint64_t remote, size_t len)
{
    struct iovec l = {local, len};
    struct iovec r = {(void*)(uintptr_t)remote, len};
    size_t stopped;

    return hixl_cma_copyv(pid, write, &l, &r, 1, &stopped);
}
