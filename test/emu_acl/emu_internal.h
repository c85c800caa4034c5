/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl internals (test double of the ACL runtime, see emu_acl.h).
 *
 * One process-wide state under one lock: devices and their default
 * contexts, peer-access bits, the allocation table (device, page-locked
 * host and imported memory), live streams and events.  Threads have a
 * current context, as in ACL.
 */
#ifndef EMU_INTERNAL_H_
#define EMU_INTERNAL_H_

#include "emu_acl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define EMU_MAX_DEVICES  16
#define EMU_EXPORT_SLOTS 24
#define EMU_MAX_PIDS     16
#define EMU_META_MAGIC   0x454d5541434c4d31ull   /* "EMUACLM1" */
#define EMU_CTX_MAGIC    0x43545845u
#define EMU_STREAM_MAGIC 0x5354524du
#define EMU_EVENT_MAGIC  0x45564e54u

typedef struct emu_ctx {
    uint32_t magic;
    int32_t  device;
} emu_ctx_t;

/* One export of a device allocation; lives in the metadata page at the end
 * of the memfd, so importers in other processes read it. */
typedef struct emu_export_slot {
    uint64_t nonce;
    uint64_t offset;
    uint64_t size;
    uint32_t state;            /* EMU_SLOT_* */
    uint32_t validate;         /* importer pid must be whitelisted */
    uint32_t npids;
    int32_t  pids[EMU_MAX_PIDS];
} emu_export_slot_t;

enum { EMU_SLOT_FREE = 0, EMU_SLOT_OPEN = 1, EMU_SLOT_CLOSED = 2 };

typedef struct emu_meta {
    uint64_t          magic;
    int32_t           device;
    int32_t           owner_pid;
    uint64_t          size;
    emu_export_slot_t slots[EMU_EXPORT_SLOTS];
} emu_meta_t;

typedef enum emu_alloc_kind {
    EMU_ALLOC_DEVICE,   /* aclrtMalloc */
    EMU_ALLOC_HOST,     /* aclrtMallocHost (page-locked) */
    EMU_ALLOC_IMPORT    /* aclrtIpcMemImportByKey */
} emu_alloc_kind_t;

typedef struct emu_alloc {
    struct emu_alloc *next;
    emu_alloc_kind_t  kind;
    uintptr_t         va;          /* first byte as the caller sees it */
    size_t            size;
    int32_t           device;      /* -1 for host */
    int               fd;          /* device: the memfd; else -1 */
    void             *map;         /* caller-visible mapping */
    size_t            map_len;
    void             *alias_map;   /* the runtime's read-write view */
    size_t            alias_len;
    uint8_t          *alias;       /* byte va in the read-write view */
    emu_meta_t       *meta;        /* device: metadata page */
    char              key[EMU_ACL_IPC_KEY_LEN];   /* import: its key */
    int               refs;        /* import: times imported */
} emu_alloc_t;

typedef struct emu_stream emu_stream_t;
typedef struct emu_event  emu_event_t;

typedef struct emu_state {
    pthread_mutex_t lock;
    int             acl_inited;
    int             ndev;
    uint32_t        nic_mask;
    unsigned        delay_us;
    int             ctx_live[EMU_MAX_DEVICES];
    emu_ctx_t       ctx[EMU_MAX_DEVICES];
    uint8_t         peer[EMU_MAX_DEVICES][EMU_MAX_DEVICES];
    emu_alloc_t    *allocs;
    emu_stream_t   *streams;
    emu_event_t    *events;
} emu_state_t;

extern emu_state_t emu;
/* The calling thread's current context (aclrtSetCurrentContext).  Static
 * TLS (initial-exec), though this library is dlopen()ed by the plugin:
 * LeakSanitizer's exit-time scan of a dlopen()ed module's dynamic TLS
 * crashes its tracer ("Tracer caught signal 11") on Debian 12's gcc 12
 * and glibc 2.36, depending on the process's memory layout. */
#define EMU_TLS __thread __attribute__((tls_model("initial-exec")))
extern EMU_TLS emu_ctx_t *emu_cur;

/* Read the environment once; every entry point calls it first. */
void emu_setup(void);

static inline int emu_device_valid(int32_t d)
{
    return (d >= 0) && (d < emu.ndev);
}

/* Allocation holding all of [addr, +len) / holding addr (lock held). */
emu_alloc_t *emu_find(uintptr_t addr, size_t len);
emu_alloc_t *emu_find_addr(uintptr_t addr);

/* A copy operand resolved to the bytes the runtime touches. */
typedef struct emu_operand {
    uint8_t *ptr;
    int32_t  device;     /* -1: host */
    int      pinned;     /* host memory from aclrtMallocHost */
} emu_operand_t;

/* Resolve both sides of a copy and check them against kind (lock held). */
aclError emu_resolve_copy(void *dst, size_t dest_max, const void *src,
                          size_t count, aclrtMemcpyKind kind,
                          emu_operand_t *d, emu_operand_t *s);

/* Wait until every stream has finished what it was given (lock NOT held):
 * memory is unmapped only after that, as ACL frees synchronize. */
void emu_streams_sync_all(void);

/* Map `len` bytes of fd at `off` twice: the caller's view (PROT_NONE
 * unless the device is NIC-visible) and the runtime's read-write alias. */
aclError emu_map_pair(emu_alloc_t *a, int fd, uint64_t off, size_t len);
void     emu_unmap_pair(emu_alloc_t *a);

#endif
