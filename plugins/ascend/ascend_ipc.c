/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Export and import of Ascend device memory between processes on one node
 * (aclrtIpcMemGetExportKey / aclrtIpcMemImportByKey / aclrtIpcMemClose).
 *
 * The blob a peer gets (all integers little-endian, 89 bytes):
 *
 *   u32 magic "ASC1" | u16 version 1 | u16 flags (bit 0: key valid)
 *   i32 device (the exporter's ordinal) | i32 exporter pid (bare tgid)
 *   u64 length | char key[65] (NUL-terminated)
 *
 * Exports are made with ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION:
 * a region is registered before the peers that will import it are known
 * (they may connect later), so no pid whitelist (aclrtIpcMemSetImportPid)
 * can be set at export time; who may use the key is decided by who is
 * allowed on the control connection that carries it.
 *
 * A region that cannot be exported (a product without IPC, an old
 * runtime) still registers: its blob carries no key, and peers use the
 * staging or NIC path for it.
 */
#include "ascend.h"

#include <stdlib.h>
#include <string.h>

#define ASCEND_BLOB_MAGIC   0x31435341u   /* "ASC1" */
#define ASCEND_BLOB_VERSION 1
#define ASCEND_BLOB_LEN     (24 + ACL_RT_IPC_KEY_LEN)
#define ASCEND_BLOB_HAS_KEY 1u

typedef struct ascend_reg {
    int32_t device;
    int     has_key;
    char    key[ACL_RT_IPC_KEY_LEN];
} ascend_reg_t;

typedef struct ascend_rmem {
    int32_t         device;      /* exporter's ordinal */
    int32_t         pid;
    uint64_t        len;
    int             has_key;
    char            key[ACL_RT_IPC_KEY_LEN];
    void           *addr;        /* imported mapping, NULL until then */
    hixl_mem_attr_t attr;
} ascend_rmem_t;

static void ascend_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t ascend_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

hixl_status_t ascend_reg(void *arg, void *addr, size_t len,
                         const hixl_mem_attr_t *attr, void **reg_p,
                         void *blob, size_t *blob_len)
{
    ascend_ctx_t *ctx = arg;
    uint8_t *b       = blob;
    ascend_reg_t *reg;
    aclrtContext saved;
    aclError rc = ACL_SUCCESS;

    if (*blob_len < ASCEND_BLOB_LEN) {
        return ctx->host->error(HIXL_PARAM_INVALID, "blob buffer of %zu "
                                "bytes, %d needed", *blob_len,
                                ASCEND_BLOB_LEN);
    }
    reg = calloc(1, sizeof(*reg));
    if (reg == NULL) {
        return ctx->host->error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    reg->device = attr->device;
    if ((ctx->acl->ipc_mem_get_export_key != NULL) &&
        (ascend_device_enter(ctx, attr->device, &saved) == HIXL_SUCCESS)) {
        rc = ctx->acl->ipc_mem_get_export_key(
                addr, len, reg->key, sizeof(reg->key),
                ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION);
        ascend_device_leave(ctx, saved);
        reg->has_key = (rc == ACL_SUCCESS) &&
                       (memchr(reg->key, '\0', sizeof(reg->key)) != NULL);
        if (!reg->has_key) {
            ctx->host->log(1, "ascend: no IPC export of [%p, +%zu) on device "
                           "%d (aclrtIpcMemGetExportKey: %d %s); peers on "
                           "this node will stage through host memory", addr,
                           len, attr->device, rc, ascend_acl_strerror(rc));
        }
    }
    memset(b, 0, ASCEND_BLOB_LEN);
    ascend_put32(b, ASCEND_BLOB_MAGIC);
    b[4] = ASCEND_BLOB_VERSION;
    b[6] = reg->has_key ? ASCEND_BLOB_HAS_KEY : 0;
    ascend_put32(b + 8, (uint32_t)attr->device);
    ascend_put32(b + 12, (uint32_t)ctx->pid);
    ascend_put32(b + 16, (uint32_t)len);
    ascend_put32(b + 20, (uint32_t)((uint64_t)len >> 32));
    if (reg->has_key) {
        memcpy(b + 24, reg->key, sizeof(reg->key));
    }
    *blob_len = ASCEND_BLOB_LEN;
    *reg_p    = reg;
    return HIXL_SUCCESS;
}

void ascend_dereg(void *arg, void *r)
{
    ascend_ctx_t *ctx = arg;
    ascend_reg_t *reg = r;
    aclrtContext saved;

    if (reg->has_key &&
        (ascend_device_enter(ctx, reg->device, &saved) == HIXL_SUCCESS)) {
        ctx->acl->ipc_mem_close(reg->key);
        ascend_device_leave(ctx, saved);
    }
    free(reg);
}

hixl_status_t ascend_unpack(void *arg, const void *blob, size_t blob_len,
                            void **rmem_p, uint64_t *len_p)
{
    ascend_ctx_t *ctx = arg;
    const uint8_t *b  = blob;
    ascend_rmem_t *rm;
    size_t klen;

    if ((blob_len != ASCEND_BLOB_LEN) ||
        (ascend_get32(b) != ASCEND_BLOB_MAGIC) ||
        (b[4] != ASCEND_BLOB_VERSION) || (b[5] != 0) ||
        (b[6] & ~ASCEND_BLOB_HAS_KEY) || (b[7] != 0)) {
        return ctx->host->error(HIXL_FAILED, "malformed Ascend memory key "
                                "(%zu bytes, version %u)", blob_len,
                                (blob_len > 4) ? b[4] : 0);
    }
    rm = calloc(1, sizeof(*rm));
    if (rm == NULL) {
        return ctx->host->error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    rm->has_key = b[6] & ASCEND_BLOB_HAS_KEY;
    rm->device  = (int32_t)ascend_get32(b + 8);
    rm->pid     = (int32_t)ascend_get32(b + 12);
    rm->len     = ascend_get32(b + 16) |
                  ((uint64_t)ascend_get32(b + 20) << 32);
    if (rm->has_key) {
        memcpy(rm->key, b + 24, sizeof(rm->key));
        klen = strnlen(rm->key, sizeof(rm->key));
        if ((klen == 0) || (klen == sizeof(rm->key))) {
            free(rm);
            return ctx->host->error(HIXL_FAILED, "malformed Ascend memory "
                                    "key: IPC key not terminated");
        }
    } else if (b[24] != 0) {
        free(rm);
        return ctx->host->error(HIXL_FAILED, "malformed Ascend memory key: "
                                "key bytes without the key flag");
    }
    if ((rm->len == 0) || (rm->device < 0)) {
        klen = (size_t)rm->len;
        free(rm);
        return ctx->host->error(HIXL_FAILED, "malformed Ascend memory key: "
                                "length %zu, device %d", klen,
                                (int32_t)ascend_get32(b + 8));
    }
    *rmem_p = rm;
    *len_p  = rm->len;
    return HIXL_SUCCESS;
}

hixl_status_t ascend_import(void *arg, void *r, void **addr_p,
                            hixl_mem_attr_t *attr)
{
    ascend_ctx_t *ctx = arg;
    ascend_rmem_t *rm = r;
    aclrtPtrAttributes pa;
    aclrtContext saved;
    hixl_status_t status;
    int32_t via;
    aclError rc;
    void *p = NULL;

    if (rm->addr != NULL) {
        *addr_p = rm->addr;
        *attr   = rm->attr;
        return HIXL_SUCCESS;
    }
    if (!rm->has_key) {
        return ctx->host->error(HIXL_UNSUPPORTED, "the peer exported no IPC "
                                "key for it (aclrtIpcMemGetExportKey "
                                "unavailable or failed there)");
    }
    if (ctx->acl->ipc_mem_import_by_key == NULL) {
        return ctx->host->error(HIXL_UNSUPPORTED, "this ACL runtime (%s) has "
                                "no aclrtIpcMemImportByKey", ctx->acl->path);
    }
    /* import under a device context: the exporter's ordinal when this
     * process has it (same node, usually the same numbering), else 0 */
    via    = ((uint32_t)rm->device < ctx->ndev) ? rm->device : 0;
    status = ascend_device_enter(ctx, via, &saved);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    rc = ctx->acl->ipc_mem_import_by_key(&p, rm->key,
                                         ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT);
    if (rc != ACL_SUCCESS) {
        status = ascend_fail(ctx, HIXL_UNSUPPORTED, "aclrtIpcMemImportByKey",
                             rc);
        goto out;
    }
    rc = ctx->acl->pointer_get_attributes(p, &pa);
    if ((rc != ACL_SUCCESS) ||
        (pa.location.type != ACL_MEM_LOCATION_TYPE_DEVICE)) {
        ctx->acl->ipc_mem_close(rm->key);
        status = (rc != ACL_SUCCESS) ?
                 ascend_fail(ctx, HIXL_FAILED, "aclrtPointerGetAttributes",
                             rc) :
                 ctx->host->error(HIXL_FAILED, "imported IPC memory is not "
                                  "device memory (location type %d)",
                                  (int)pa.location.type);
        goto out;
    }
    rm->addr            = p;
    rm->attr.device     = (int32_t)pa.location.id;
    rm->attr.page_size  = pa.pageSize;
    *addr_p             = p;
    *attr               = rm->attr;
out:
    ascend_device_leave(ctx, saved);
    return status;
}

void ascend_release(void *arg, void *r)
{
    ascend_ctx_t *ctx = arg;
    ascend_rmem_t *rm = r;
    aclrtContext saved;

    if ((rm->addr != NULL) &&
        (ascend_device_enter(ctx, rm->attr.device, &saved) ==
         HIXL_SUCCESS)) {
        ctx->acl->ipc_mem_close(rm->key);
        ascend_device_leave(ctx, saved);
    }
    free(rm);
}
