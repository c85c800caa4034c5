/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl (test double): IPC sharing of device memory between processes.
 * Signatures and flag values follow CANN acl_rt.h
 * (aclrtIpcMemGetExportKey, aclrtIpcMemSetImportPid,
 * aclrtIpcMemImportByKey, aclrtIpcMemClose).
 *
 * A key is "emuacl-<pid>-<fd>-<slot>-<nonce>": the exporter's pid, the
 * memfd behind the allocation in that process, the export slot in the
 * memfd's metadata page and a random nonce, so a key that outlived its
 * export (closed, freed, or a recycled fd) is refused instead of mapping
 * the wrong memory.
 */
#define _GNU_SOURCE
#include "emu_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct emu_key {
    int      pid;
    int      fd;
    unsigned slot;
    uint64_t nonce;
} emu_key_t;

static int emu_key_parse(const char *key, emu_key_t *k)
{
    char tail;

    if ((key == NULL) ||
        (strnlen(key, EMU_ACL_IPC_KEY_LEN) == EMU_ACL_IPC_KEY_LEN) ||
        (sscanf(key, "emuacl-%d-%d-%u-%16" SCNx64 "%c", &k->pid, &k->fd,
                &k->slot, &k->nonce, &tail) != 4) ||
        (k->pid <= 0) || (k->fd < 0) || (k->slot >= EMU_EXPORT_SLOTS)) {
        return -1;
    }
    return 0;
}

aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key,
                                 size_t len, uint64_t flags)
{
    emu_export_slot_t *slot = NULL;
    emu_alloc_t *a;
    uint64_t nonce = 0;
    unsigned i;

    emu_setup();
    if ((devPtr == NULL) || (size == 0) || (key == NULL) ||
        (len < EMU_ACL_IPC_KEY_LEN) ||
        (flags > ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    while (nonce == 0) {
        if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
            nonce = (uint64_t)random() << 20 ^ (uint64_t)getpid();
        }
    }
    pthread_mutex_lock(&emu.lock);
    a = emu_find((uintptr_t)devPtr, size);
    if ((a == NULL) || (a->kind != EMU_ALLOC_DEVICE)) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    for (i = 0; i < EMU_EXPORT_SLOTS; ++i) {
        if (a->meta->slots[i].state != EMU_SLOT_OPEN) {
            slot = &a->meta->slots[i];
            break;
        }
    }
    if (slot == NULL) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    memset(slot, 0, sizeof(*slot));
    slot->nonce    = nonce;
    slot->offset   = (uintptr_t)devPtr - a->va;
    slot->size     = size;
    slot->validate = !(flags &
                       ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
    slot->state    = EMU_SLOT_OPEN;
    snprintf(key, len, "emuacl-%d-%d-%u-%016lx", (int)getpid(), a->fd, i,
             (unsigned long)nonce);
    pthread_mutex_unlock(&emu.lock);
    return ACL_SUCCESS;
}

/* The exporter's open slot a key names (this process, lock held). */
static emu_export_slot_t *emu_own_slot(const emu_key_t *k)
{
    emu_alloc_t *a;
    emu_export_slot_t *slot;

    for (a = emu.allocs; a != NULL; a = a->next) {
        if ((a->kind == EMU_ALLOC_DEVICE) && (a->fd == k->fd)) {
            slot = &a->meta->slots[k->slot];
            return ((slot->state == EMU_SLOT_OPEN) &&
                    (slot->nonce == k->nonce)) ? slot : NULL;
        }
    }
    return NULL;
}

aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num)
{
    emu_export_slot_t *slot;
    emu_key_t k;
    size_t i;

    emu_setup();
    if ((pid == NULL) || (num == 0) || (emu_key_parse(key, &k) != 0)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (k.pid != getpid()) {
        return ACL_ERROR_RT_PARAM_INVALID;   /* only the exporter may */
    }
    pthread_mutex_lock(&emu.lock);
    slot = emu_own_slot(&k);
    if (slot == NULL) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    if (slot->npids + num > EMU_MAX_PIDS) {
        pthread_mutex_unlock(&emu.lock);
        return ACL_ERROR_INVALID_PARAM;
    }
    for (i = 0; i < num; ++i) {
        slot->pids[slot->npids++] = pid[i];
    }
    pthread_mutex_unlock(&emu.lock);
    return ACL_SUCCESS;
}

static emu_alloc_t *emu_import_find(const char *key)
{
    emu_alloc_t *a;

    for (a = emu.allocs; a != NULL; a = a->next) {
        if ((a->kind == EMU_ALLOC_IMPORT) && !strcmp(a->key, key)) {
            return a;
        }
    }
    return NULL;
}

static int emu_pid_allowed(const emu_export_slot_t *slot, int32_t pid)
{
    uint32_t i;

    if (!slot->validate) {
        return 1;
    }
    for (i = 0; (i < slot->npids) && (i < EMU_MAX_PIDS); ++i) {
        if (slot->pids[i] == pid) {
            return 1;
        }
    }
    return 0;
}

/* Open the exporter's memfd and check the key against its metadata; on
 * success *fd_p is open and *slot_p a copy of the export slot. */
static aclError emu_import_open(const emu_key_t *k, int *fd_p,
                                emu_export_slot_t *slot_p,
                                int32_t *device_p)
{
    long page = sysconf(_SC_PAGESIZE);
    emu_meta_t *meta;
    struct stat st;
    char path[64];
    aclError rc = ACL_ERROR_RT_PARAM_INVALID;
    int fd;

    snprintf(path, sizeof(path), "/proc/%d/fd/%d", k->pid, k->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return ACL_ERROR_RT_PARAM_INVALID;   /* no such exporter */
    }
    if ((fstat(fd, &st) != 0) || (st.st_size < 2 * page)) {
        goto err;
    }
    meta = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd,
                (off_t)(st.st_size - page));
    if (meta == MAP_FAILED) {
        goto err;
    }
    if ((meta->magic == EMU_META_MAGIC) && (meta->owner_pid == k->pid) &&
        (meta->slots[k->slot].state == EMU_SLOT_OPEN) &&
        (meta->slots[k->slot].nonce == k->nonce) &&
        (meta->slots[k->slot].offset + meta->slots[k->slot].size <=
         meta->size)) {
        *slot_p   = meta->slots[k->slot];
        *device_p = meta->device;
        rc = emu_pid_allowed(slot_p, (int32_t)getpid()) ? ACL_SUCCESS :
             ACL_ERROR_RT_NO_PERMISSION;
    }
    munmap(meta, (size_t)page);
    if (rc == ACL_SUCCESS) {
        *fd_p = fd;
        return ACL_SUCCESS;
    }
err:
    close(fd);
    return rc;
}

aclError aclrtIpcMemImportByKey(void **devPtr, const char *key,
                                uint64_t flags)
{
    emu_export_slot_t slot;
    emu_alloc_t *a;
    emu_key_t k;
    int32_t device;
    aclError rc;
    int fd;

    emu_setup();
    if ((devPtr == NULL) || (emu_key_parse(key, &k) != 0) ||
        (flags > ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (k.pid == getpid()) {
        return ACL_ERROR_RT_PARAM_INVALID;   /* a process's own export */
    }
    pthread_mutex_lock(&emu.lock);
    a = emu_import_find(key);
    if (a != NULL) {
        a->refs++;
        *devPtr = (void*)a->va;
        pthread_mutex_unlock(&emu.lock);
        return ACL_SUCCESS;
    }
    pthread_mutex_unlock(&emu.lock);

    rc = emu_import_open(&k, &fd, &slot, &device);
    if (rc != ACL_SUCCESS) {
        return rc;
    }
    if ((flags & ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS) &&
        (emu_cur != NULL) && (emu_cur->device != device) &&
        emu_device_valid(device)) {
        pthread_mutex_lock(&emu.lock);
        emu.peer[emu_cur->device][device] = 1;
        pthread_mutex_unlock(&emu.lock);
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        close(fd);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    a->kind   = EMU_ALLOC_IMPORT;
    a->device = device;
    a->fd     = -1;
    a->refs   = 1;
    snprintf(a->key, sizeof(a->key), "%s", key);
    rc = emu_map_pair(a, fd, slot.offset, slot.size);
    close(fd);   /* the mappings keep the pages */
    if (rc != ACL_SUCCESS) {
        free(a);
        return rc;
    }
    pthread_mutex_lock(&emu.lock);
    a->next    = emu.allocs;
    emu.allocs = a;
    pthread_mutex_unlock(&emu.lock);
    *devPtr = (void*)a->va;
    return ACL_SUCCESS;
}

aclError aclrtIpcMemClose(const char *key)
{
    emu_export_slot_t *slot;
    emu_alloc_t **pp, *a = NULL;
    emu_key_t k;

    emu_setup();
    if (emu_key_parse(key, &k) != 0) {
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&emu.lock);
    if (k.pid == getpid()) {
        /* exporter: later imports fail; existing ones keep working */
        slot = emu_own_slot(&k);
        if (slot != NULL) {
            slot->state = EMU_SLOT_CLOSED;
        }
        pthread_mutex_unlock(&emu.lock);
        return (slot != NULL) ? ACL_SUCCESS : ACL_ERROR_RT_PARAM_INVALID;
    }
    for (pp = &emu.allocs; *pp != NULL; pp = &(*pp)->next) {
        if (((*pp)->kind == EMU_ALLOC_IMPORT) && !strcmp((*pp)->key, key)) {
            a = *pp;
            if (--a->refs == 0) {
                *pp = a->next;
            }
            break;
        }
    }
    pthread_mutex_unlock(&emu.lock);
    if (a == NULL) {
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    if (a->refs == 0) {
        emu_streams_sync_all();   /* no queued copy may still use it */
        emu_unmap_pair(a);
        free(a);
    }
    return ACL_SUCCESS;
}
