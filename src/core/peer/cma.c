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
        if ((n < 0) && (errno == ESRCH)) {
            return hixl_error(HIXL_NOT_CONNECTED, "process %d is gone (%s "
                              "of %zu bytes at 0x%" PRIx64 " stopped after "
                              "%zu: %s)", (int)pid, write ?
                              "process_vm_writev" : "process_vm_readv", len,
                              remote, done, strerror(ESRCH));
        }
        return hixl_error(HIXL_FAILED, "%s of %zu bytes at 0x%" PRIx64
                          " in process %d stopped after %zu: %s",
                          write ? "process_vm_writev" : "process_vm_readv",
                          len, remote, (int)pid, done,
                          (n < 0) ? strerror(errno) : "no progress");
    }
    return HIXL_SUCCESS;
}
