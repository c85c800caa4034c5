/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl (test double): device and page-locked host memory, pointer
 * attributes, synchronous copies.  Signatures follow CANN acl_rt.h
 * (aclrtMalloc, aclrtFree, aclrtMallocHost, aclrtFreeHost,
 * aclrtPointerGetAttributes, aclrtMemcpy, aclrtMemset).
 */
#define _GNU_SOURCE
#include "emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void emu_link(emu_alloc_t *a)
{
    a->next    = emu.allocs;
    emu.allocs = a;
}

static void emu_unlink(emu_alloc_t *a)
{
    emu_alloc_t **pp;

    for (pp = &emu.allocs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == a) {
            *pp = a->next;
            return;
        }
    }
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t data;
    emu_alloc_t *a;
    char name[32];
    aclError rc;

    emu_setup();
    if ((devPtr == NULL) || (size == 0) ||
        ((unsigned)policy > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (emu_cur == NULL) {
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    a->kind   = EMU_ALLOC_DEVICE;
    a->device = emu_cur->device;
    snprintf(name, sizeof(name), "emu_acl_dev%d", a->device);
    a->fd = memfd_create(name, MFD_CLOEXEC);
    data  = (size + (size_t)page - 1) & ~((size_t)page - 1);
    /* the data pages, then one metadata page (export slots) */
    if ((a->fd < 0) || (ftruncate(a->fd, (off_t)(data + (size_t)page)) != 0)) {
        rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
        goto err;
    }
    a->meta = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED,
                   a->fd, (off_t)data);
    if (a->meta == MAP_FAILED) {
        a->meta = NULL;
        rc      = ACL_ERROR_RT_MEMORY_ALLOCATION;
        goto err;
    }
    a->meta->magic     = EMU_META_MAGIC;
    a->meta->device    = a->device;
    a->meta->owner_pid = (int32_t)getpid();
    a->meta->size      = size;
    rc = emu_map_pair(a, a->fd, 0, size);
    if (rc != ACL_SUCCESS) {
        goto err;
    }
    pthread_mutex_lock(&emu.lock);
    emu_link(a);
    pthread_mutex_unlock(&emu.lock);
    *devPtr = (void*)a->va;
    return ACL_SUCCESS;

err:
    if (a->meta != NULL) {
        munmap(a->meta, (size_t)page);
    }
    if (a->fd >= 0) {
        close(a->fd);
    }
    free(a);
    return rc;
}

aclError aclrtFree(void *devPtr)
{
    emu_alloc_t *a;
    int i;

    emu_setup();
    if (devPtr == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&emu.lock);
    a = emu_find_addr((uintptr_t)devPtr);
    if ((a == NULL) || (a->kind != EMU_ALLOC_DEVICE) ||
        (a->va != (uintptr_t)devPtr)) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    emu_unlink(a);
    /* exports die with the memory; importers keep their pages */
    for (i = 0; i < EMU_EXPORT_SLOTS; ++i) {
        if (a->meta->slots[i].state == EMU_SLOT_OPEN) {
            a->meta->slots[i].state = EMU_SLOT_CLOSED;
        }
    }
    pthread_mutex_unlock(&emu.lock);

    emu_streams_sync_all();   /* like ACL's free, wait for copies */
    emu_unmap_pair(a);
    munmap(a->meta, (size_t)sysconf(_SC_PAGESIZE));
    close(a->fd);
    free(a);
    return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **hostPtr, size_t size)
{
    emu_alloc_t *a;
    void *p;

    emu_setup();
    if ((hostPtr == NULL) || (size == 0)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    a = calloc(1, sizeof(*a));
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if ((a == NULL) || (p == MAP_FAILED)) {
        free(a);
        if (p != MAP_FAILED) {
            munmap(p, size);
        }
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    a->kind    = EMU_ALLOC_HOST;
    a->device  = -1;
    a->fd      = -1;
    a->map     = p;
    a->map_len = size;
    a->va      = (uintptr_t)p;
    a->alias   = p;
    a->size    = size;
    pthread_mutex_lock(&emu.lock);
    emu_link(a);
    pthread_mutex_unlock(&emu.lock);
    *hostPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr)
{
    emu_alloc_t *a;

    emu_setup();
    if (hostPtr == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&emu.lock);
    a = emu_find_addr((uintptr_t)hostPtr);
    if ((a == NULL) || (a->kind != EMU_ALLOC_HOST) ||
        (a->va != (uintptr_t)hostPtr)) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    emu_unlink(a);
    pthread_mutex_unlock(&emu.lock);
    emu_streams_sync_all();
    munmap(a->map, a->map_len);
    free(a);
    return ACL_SUCCESS;
}

aclError aclrtPointerGetAttributes(const void *ptr,
                                   aclrtPtrAttributes *attributes)
{
    emu_alloc_t *a;

    emu_setup();
    if ((ptr == NULL) || (attributes == NULL)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    memset(attributes, 0, sizeof(*attributes));
    attributes->pageSize = (uint32_t)sysconf(_SC_PAGESIZE);
    pthread_mutex_lock(&emu.lock);
    a = emu_find_addr((uintptr_t)ptr);
    if (a == NULL) {
        attributes->location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
    } else if (a->kind == EMU_ALLOC_HOST) {
        attributes->location.type = ACL_MEM_LOCATION_TYPE_HOST;
    } else {
        attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
        attributes->location.id   = (uint32_t)a->device;
    }
    pthread_mutex_unlock(&emu.lock);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind)
{
    emu_operand_t d, s;
    aclError rc;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    rc = emu_resolve_copy(dst, destMax, src, count, kind, &d, &s);
    if (rc == ACL_SUCCESS) {
        memmove(d.ptr, s.ptr, count);
    }
    pthread_mutex_unlock(&emu.lock);
    return rc;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value,
                     size_t count)
{
    emu_alloc_t *a;
    uint8_t *p;

    emu_setup();
    if ((devPtr == NULL) || (count > maxCount)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&emu.lock);
    a = emu_find((uintptr_t)devPtr, count);
    if ((a == NULL) && (emu_find_addr((uintptr_t)devPtr) != NULL)) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    p = (a != NULL) ? a->alias + ((uintptr_t)devPtr - a->va) : devPtr;
    memset(p, value, count);
    pthread_mutex_unlock(&emu.lock);
    return ACL_SUCCESS;
}
