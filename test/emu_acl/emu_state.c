/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl (test double): process state, allocation lookup, the double
 * mapping behind "device" memory, and copy operand checks.
 */
#define _GNU_SOURCE
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

emu_state_t emu = {.lock = PTHREAD_MUTEX_INITIALIZER};
EMU_TLS emu_ctx_t *emu_cur;

static pthread_once_t emu_once = PTHREAD_ONCE_INIT;

static long emu_env_long(const char *name, long dflt, long min, long max)
{
    const char *v = getenv(name);
    char *end;
    long n;

    if ((v == NULL) || (*v == '\0')) {
        return dflt;
    }
    n = strtol(v, &end, 0);
    if ((*end != '\0') || (n < min) || (n > max)) {
        return dflt;
    }
    return n;
}

static void emu_setup_once(void)
{
    emu.ndev     = (int)emu_env_long("EMU_ACL_DEVICE_COUNT", 4, 1,
                                     EMU_MAX_DEVICES);
    emu.nic_mask = (uint32_t)emu_env_long("EMU_ACL_NIC_VISIBLE", 0, 0,
                                          0xffff);
    emu.delay_us = (unsigned)emu_env_long("EMU_ACL_COPY_DELAY_US", 0, 0,
                                          10000000);
}

void emu_setup(void)
{
    pthread_once(&emu_once, emu_setup_once);
}

emu_alloc_t *emu_find_addr(uintptr_t addr)
{
    emu_alloc_t *a;

    for (a = emu.allocs; a != NULL; a = a->next) {
        if ((addr >= a->va) && (addr - a->va < a->size)) {
            return a;
        }
    }
    return NULL;
}

emu_alloc_t *emu_find(uintptr_t addr, size_t len)
{
    emu_alloc_t *a = emu_find_addr(addr);

    if ((a == NULL) || (len > a->size - (addr - a->va))) {
        return NULL;
    }
    return a;
}

aclError emu_map_pair(emu_alloc_t *a, int fd, uint64_t off, size_t len)
{
    long page       = sysconf(_SC_PAGESIZE);
    uint64_t base   = off & ~((uint64_t)page - 1);
    size_t span     = (size_t)(off - base) + len;
    int visible     = (a->device >= 0) && (a->device < 32) &&
                      ((emu.nic_mask >> a->device) & 1);

    span = (span + (size_t)page - 1) & ~((size_t)page - 1);
    /* The address the caller gets: no access at all, like HBM seen from
     * the CPU (a NIC-visible device excepted, see emu_acl.h). */
    a->map = mmap(NULL, span, visible ? (PROT_READ | PROT_WRITE) : PROT_NONE,
                  MAP_SHARED, fd, (off_t)base);
    if (a->map == MAP_FAILED) {
        a->map = NULL;
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    a->map_len   = span;
    a->alias_map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                        (off_t)base);
    if (a->alias_map == MAP_FAILED) {
        munmap(a->map, span);
        a->map       = NULL;
        a->alias_map = NULL;
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    a->alias_len = span;
    a->va        = (uintptr_t)a->map + (uintptr_t)(off - base);
    a->alias     = (uint8_t*)a->alias_map + (off - base);
    a->size      = len;
    return ACL_SUCCESS;
}

void emu_unmap_pair(emu_alloc_t *a)
{
    if (a->map != NULL) {
        munmap(a->map, a->map_len);
    }
    if (a->alias_map != NULL) {
        munmap(a->alias_map, a->alias_len);
    }
    a->map       = NULL;
    a->alias_map = NULL;
}

/* want: 1 device memory, 0 host memory, -1 either. */
static aclError emu_operand(const void *p, size_t len, int want,
                            emu_operand_t *op)
{
    emu_alloc_t *a = emu_find((uintptr_t)p, len);
    int is_dev;

    if ((a == NULL) && (emu_find_addr((uintptr_t)p) != NULL)) {
        return ACL_ERROR_RT_PARAM_INVALID;   /* runs past an allocation */
    }
    is_dev = (a != NULL) && (a->kind != EMU_ALLOC_HOST);
    if (((want == 1) && !is_dev) || ((want == 0) && is_dev)) {
        return ACL_ERROR_RT_PARAM_INVALID;   /* kind does not match */
    }
    if (is_dev) {
        op->ptr    = a->alias + ((uintptr_t)p - a->va);
        op->device = a->device;
        op->pinned = 0;
    } else {
        op->ptr    = (uint8_t*)(uintptr_t)p;
        op->device = -1;
        op->pinned = (a != NULL);
    }
    return ACL_SUCCESS;
}

aclError emu_resolve_copy(void *dst, size_t dest_max, const void *src,
                          size_t count, aclrtMemcpyKind kind,
                          emu_operand_t *d, emu_operand_t *s)
{
    static const int want[][2] = {   /* {dst, src} per kind */
        [ACL_MEMCPY_HOST_TO_HOST]     = {0, 0},
        [ACL_MEMCPY_HOST_TO_DEVICE]   = {1, 0},
        [ACL_MEMCPY_DEVICE_TO_HOST]   = {0, 1},
        [ACL_MEMCPY_DEVICE_TO_DEVICE] = {1, 1},
        [ACL_MEMCPY_DEFAULT]          = {-1, -1},
    };
    aclError rc;

    if ((dst == NULL) || (src == NULL) || (count > dest_max)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (((unsigned)kind > ACL_MEMCPY_DEFAULT)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    rc = emu_operand(dst, count, want[kind][0], d);
    if (rc == ACL_SUCCESS) {
        rc = emu_operand(src, count, want[kind][1], s);
    }
    return rc;
}
