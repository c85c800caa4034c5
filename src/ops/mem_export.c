/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Exported memory descriptions: hixl_export_mem describes registered
 * regions in the bytes of wire/mem_desc.h; hixl_import_mem decodes them,
 * and hixl_remote_mem_addr turns (region, offset, length) into a checked
 * remote address.  Nothing here touches the peer tables: transfers still
 * validate every descriptor against what the owner announced, this only
 * gives the application addresses it cannot get wrong silently.
 */
#include "config.h"
#include "core/engine.h"
#include "wire/mem_desc.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct hixl_remote_mem {
    hixl_mdesc_t desc;
};

/* Copy what handles name out of the region table (engine->lock held, as
 * deregistration may run meanwhile). */
static hixl_status_t hixl_export_collect(hixl_engine_t *engine,
                                         const hixl_mem_handle_t *handles,
                                         size_t n, hixl_mdesc_region_t *out)
{
    const hixl_region_t *region;
    size_t i;

    hixl_assert_locked(&engine->lock);
    for (i = 0; i < n; ++i) {
        region = hixl_mem_table_get(&engine->mem, engine->serial,
                                    (uintptr_t)handles[i]);
        if ((region == NULL) || region->revoked) {
            return hixl_error(HIXL_PARAM_INVALID, "handles[%zu] (%p) is not "
                              "a region registered with this engine", i,
                              (void*)handles[i]);
        }
        out[i].addr = region->range.addr;
        out[i].len  = region->range.len;
        out[i].id   = region->handle;
        out[i].type = region->type;
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_export_mem(hixl_engine_t *engine,
                              const hixl_mem_handle_t *handles, size_t n,
                              void *buf, size_t *len_p)
{
    hixl_mdesc_region_t *regions;
    const char *owner;
    hixl_status_t status;
    size_t need;

    if ((engine == NULL) || (len_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL",
                          engine ? "len_p" : "engine");
    }
    if ((handles == NULL) && (n > 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "handles is NULL");
    }
    if (n > MEM_DESC_MAX_REGIONS) {
        return hixl_error(HIXL_PARAM_INVALID, "%zu regions, a description "
                          "holds at most %u", n, MEM_DESC_MAX_REGIONS);
    }
    owner = hixl_engine_name(engine);
    need  = hixl_mdesc_size(strlen(owner), n);
    if (buf == NULL) {
        *len_p = need;
        return HIXL_SUCCESS;
    }
    if (*len_p < need) {
        status = hixl_error(HIXL_PARAM_INVALID, "buffer of %zu bytes, the "
                            "description of %zu regions needs %zu", *len_p,
                            n, need);
        *len_p = need;
        return status;
    }
    regions = calloc(n ? n : 1, sizeof(*regions));
    if (regions == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "no memory to describe "
                          "%zu regions", n);
    }
    pthread_mutex_lock(&engine->lock);
    status = hixl_export_collect(engine, handles, n, regions);
    pthread_mutex_unlock(&engine->lock);
    if (status == HIXL_SUCCESS) {
        hixl_mdesc_encode(buf, owner, regions, n);
        *len_p = need;
    }
    free(regions);
    return status;
}

hixl_status_t hixl_import_mem(hixl_engine_t *engine, const void *buf,
                              size_t len, hixl_remote_mem_t **rmem_p)
{
    hixl_remote_mem_t *rmem;
    hixl_status_t status;

    if ((engine == NULL) || (rmem_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL",
                          engine ? "rmem_p" : "engine");
    }
    rmem = calloc(1, sizeof(*rmem));
    if (rmem == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "no memory for a remote "
                          "memory description");
    }
    status = hixl_mdesc_decode(buf, len, &rmem->desc);
    if (status != HIXL_SUCCESS) {
        free(rmem);
        return status;
    }
    *rmem_p = rmem;
    return HIXL_SUCCESS;
}

void hixl_remote_mem_free(hixl_remote_mem_t *rmem)
{
    if (rmem != NULL) {
        free(rmem->desc.regions);
        free(rmem);
    }
}

size_t hixl_remote_mem_count(const hixl_remote_mem_t *rmem)
{
    return (rmem != NULL) ? rmem->desc.count : 0;
}

const char *hixl_remote_mem_engine(const hixl_remote_mem_t *rmem)
{
    return (rmem != NULL) ? rmem->desc.owner : "";
}

static hixl_status_t hixl_remote_mem_get(const hixl_remote_mem_t *rmem,
                                         size_t region,
                                         const hixl_mdesc_region_t **r_p)
{
    if (rmem == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "remote memory is NULL");
    }
    if (region >= rmem->desc.count) {
        return hixl_error(HIXL_PARAM_INVALID, "region %zu: the description "
                          "of %s holds %zu regions", region,
                          rmem->desc.owner, rmem->desc.count);
    }
    *r_p = &rmem->desc.regions[region];
    return HIXL_SUCCESS;
}

hixl_status_t hixl_remote_mem_region(const hixl_remote_mem_t *rmem,
                                     size_t region, uint64_t *len_p,
                                     hixl_mem_type_t *type_p)
{
    const hixl_mdesc_region_t *r = NULL;
    hixl_status_t status = hixl_remote_mem_get(rmem, region, &r);

    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (len_p != NULL) {
        *len_p = r->len;
    }
    if (type_p != NULL) {
        *type_p = r->type;
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_remote_mem_addr(const hixl_remote_mem_t *rmem,
                                   size_t region, uint64_t offset,
                                   uint64_t len, uint64_t *remote_addr_p)
{
    const hixl_mdesc_region_t *r = NULL;
    hixl_status_t status;

    if (remote_addr_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "remote_addr_p is NULL");
    }
    status = hixl_remote_mem_get(rmem, region, &r);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    /* written so that no sum can wrap: offset <= size, len <= size - offset */
    if ((offset > r->len) || (len > r->len - offset)) {
        return hixl_error(HIXL_PARAM_INVALID, "region %zu of %s: offset %"
                          PRIu64 " + length %" PRIu64 " exceeds its size %"
                          PRIu64, region, rmem->desc.owner, offset, len,
                          r->len);
    }
    *remote_addr_p = r->addr + offset;
    return HIXL_SUCCESS;
}
