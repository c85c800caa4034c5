/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting memory (prefault.h).
 */
#include "config.h"
#include "util/prefault.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

void hixl_touch_pages(void *addr, size_t len)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t p    = (uintptr_t)addr;
    uintptr_t end  = (uintptr_t)addr + len;

    if (len == 0) {
        return;
    }
    __atomic_fetch_add((uint8_t*)p, 0, __ATOMIC_RELAXED);
    for (p = (p & ~(page - 1)) + page; p < end; p += page) {
        __atomic_fetch_add((uint8_t*)p, 0, __ATOMIC_RELAXED);
    }
}

int hixl_prefault(const void *addr, size_t len)
{
    uintptr_t page  = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)addr & ~(page - 1);
    uintptr_t end   = ((uintptr_t)addr + len + page - 1) & ~(page - 1);

    if ((len == 0) || (end < start)) {
        return 0;
    }
    return (madvise((void*)start, end - start, MADV_POPULATE_WRITE) == 0) ?
           0 : errno;
}
