/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Ascend HBM memory-type plugin: the ops table libhixl-ucx loads
 * (src/mem_plugin.h), probe/open/close, detection of device memory and
 * page-locked host memory for the staging pool.
 *
 * The plugin loads the ACL runtime itself (ascend_acl.c): it builds and
 * loads on any machine and reports the runtime unavailable where CANN is
 * not installed.  It calls aclInit() and tolerates
 * ACL_ERROR_REPEAT_INITIALIZE (the application usually initialized ACL to
 * allocate the memory it registers); it never calls aclFinalize(), which
 * belongs to the application.
 */
#include "ascend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

hixl_status_t ascend_fail(const ascend_ctx_t *ctx, hixl_status_t status,
                          const char *call, aclError rc)
{
    return ctx->host->error(status, "ascend: %s failed: ACL error %d %s",
                            call, rc, ascend_acl_strerror(rc));
}

/* Load the runtime and initialize ACL; *ndev_p its device count. */
static const ascend_acl_t *ascend_start(const hixl_mem_params_t *params,
                                        uint32_t *ndev_p, char *err,
                                        size_t errlen)
{
    const ascend_acl_t *acl;
    aclError rc;

    acl = ascend_acl_load(params->runtime, err, errlen);
    if (acl == NULL) {
        return NULL;
    }
    rc = acl->init(NULL);
    if ((rc != ACL_SUCCESS) && (rc != ACL_ERROR_REPEAT_INITIALIZE)) {
        snprintf(err, errlen, "aclInit failed: ACL error %d %s", rc,
                 ascend_acl_strerror(rc));
        return NULL;
    }
    rc = acl->get_device_count(ndev_p);
    if (rc != ACL_SUCCESS) {
        snprintf(err, errlen, "aclrtGetDeviceCount failed: ACL error %d %s",
                 rc, ascend_acl_strerror(rc));
        return NULL;
    }
    return acl;
}

static hixl_status_t ascend_probe(const hixl_mem_params_t *params,
                                  hixl_mem_info_t *info)
{
    int32_t major = 0, minor = 0, patch = 0;
    const ascend_acl_t *acl;
    uint32_t ndev = 0;
    char err[256];

    memset(info, 0, sizeof(*info));
    snprintf(info->runtime, sizeof(info->runtime), "%s",
             (params->runtime && *params->runtime) ? params->runtime :
             ASCEND_ACL_DEFAULT);
    acl = ascend_start(params, &ndev, err, sizeof(err));
    if (acl == NULL) {
        snprintf(info->detail, sizeof(info->detail), "%s", err);
        return HIXL_SUCCESS;
    }
    info->runtime_found = 1;
    snprintf(info->runtime, sizeof(info->runtime), "%s", acl->path);
    if ((acl->get_version == NULL) ||
        (acl->get_version(&major, &minor, &patch) != ACL_SUCCESS)) {
        major = minor = patch = -1;
    }
    snprintf(info->detail, sizeof(info->detail), "%u device(s), runtime "
             "version %d.%d.%d, IPC %s", ndev, major, minor, patch,
             acl->ipc_mem_import_by_key ? "yes" : "no (staging only)");
    return HIXL_SUCCESS;
}

static hixl_status_t ascend_open(const hixl_mem_params_t *params,
                                 void **ctx_p)
{
    const ascend_acl_t *acl;
    ascend_ctx_t *ctx;
    uint32_t ndev = 0;
    char err[256];

    acl = ascend_start(params, &ndev, err, sizeof(err));
    if (acl == NULL) {
        return params->host->error(HIXL_UNSUPPORTED, "ascend: the ACL runtime "
                                   "is unavailable: %s", err);
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return params->host->error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    ctx->host = params->host;
    ctx->acl  = acl;
    ctx->ndev = ndev;
    if ((acl->device_get_bare_tgid == NULL) ||
        (acl->device_get_bare_tgid(&ctx->pid) != ACL_SUCCESS)) {
        ctx->pid = (int32_t)getpid();
    }
    *ctx_p = ctx;
    return HIXL_SUCCESS;
}

static void ascend_close(void *arg)
{
    ascend_ctx_t *ctx = arg;

    ascend_streams_close(ctx);
    free(ctx);
}

static const char *ascend_location_name(aclrtMemLocationType type)
{
    switch (type) {
    case ACL_MEM_LOCATION_TYPE_HOST:         return "page-locked host";
    case ACL_MEM_LOCATION_TYPE_DEVICE:       return "device";
    case ACL_MEM_LOCATION_TYPE_UNREGISTERED: return "ordinary host";
    case ACL_MEM_LOCATION_TYPE_MANAGED:      return "managed";
    }
    return "unknown";
}

static hixl_status_t ascend_detect(void *arg, const void *addr, size_t len,
                                   hixl_mem_attr_t *attr)
{
    ascend_ctx_t *ctx = arg;
    aclrtPtrAttributes first, last;
    aclError rc;

    rc = ctx->acl->pointer_get_attributes(addr, &first);
    if (rc == ACL_SUCCESS) {
        rc = ctx->acl->pointer_get_attributes((const char*)addr + len - 1,
                                              &last);
    }
    if (rc != ACL_SUCCESS) {
        return ascend_fail(ctx, HIXL_UNSUPPORTED, "aclrtPointerGetAttributes",
                           rc);
    }
    if (first.location.type != ACL_MEM_LOCATION_TYPE_DEVICE) {
        return ctx->host->error(HIXL_UNSUPPORTED, "ascend: 0x%" PRIxPTR " is "
                                "%s memory to the ACL runtime, not device "
                                "memory", (uintptr_t)addr,
                                ascend_location_name(first.location.type));
    }
    if ((last.location.type != ACL_MEM_LOCATION_TYPE_DEVICE) ||
        (last.location.id != first.location.id)) {
        return ctx->host->error(HIXL_UNSUPPORTED, "ascend: [0x%" PRIxPTR
                                ", +%zu) does not lie in the memory of one "
                                "device (its last byte is %s memory%s)",
                                (uintptr_t)addr, len,
                                ascend_location_name(last.location.type),
                                (last.location.type ==
                                 ACL_MEM_LOCATION_TYPE_DEVICE) ?
                                " of another device" : "");
    }
    attr->device    = (int32_t)first.location.id;
    attr->page_size = first.pageSize;
    return HIXL_SUCCESS;
}

static hixl_status_t ascend_host_alloc(void *arg, size_t len, void **addr_p)
{
    ascend_ctx_t *ctx = arg;
    aclError rc;

    rc = ctx->acl->malloc_host(addr_p, len);
    return (rc == ACL_SUCCESS) ? HIXL_SUCCESS :
           ascend_fail(ctx, HIXL_RESOURCE_EXHAUSTED, "aclrtMallocHost", rc);
}

static void ascend_host_free(void *arg, void *addr)
{
    ascend_ctx_t *ctx = arg;

    ctx->acl->free_host(addr);
}

static const hixl_mem_plugin_ops_t ascend_ops = {
    .abi_version = HIXL_MEM_PLUGIN_ABI_VERSION,
    .size        = sizeof(hixl_mem_plugin_ops_t),
    .name        = "ascend",
    .description = "Ascend HBM through the ACL runtime (libascendcl.so)",
    .probe       = ascend_probe,
    .open        = ascend_open,
    .close       = ascend_close,
    .detect      = ascend_detect,
    .reg         = ascend_reg,
    .dereg       = ascend_dereg,
    .unpack      = ascend_unpack,
    .import      = ascend_import,
    .release     = ascend_release,
    .copy        = ascend_copy,
    .mark        = ascend_mark,
    .test        = ascend_test,
    .host_alloc  = ascend_host_alloc,
    .host_free   = ascend_host_free,
};

__attribute__((visibility("default")))
const hixl_mem_plugin_ops_t *hixl_mem_plugin_entry(void);

const hixl_mem_plugin_ops_t *hixl_mem_plugin_entry(void)
{
    return &ascend_ops;
}
