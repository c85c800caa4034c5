/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encoder and hostile-input decoder of exported memory descriptions (the
 * format is in mem_desc.h).
 */
#include "config.h"
#include "wire/mem_desc.h"
#include "util/byteorder.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint16_t mem_desc_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static void mem_desc_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

size_t hixl_mdesc_size(size_t owner_len, size_t count)
{
    return MEM_DESC_HEADER_LEN + owner_len + count * MEM_DESC_REGION_LEN;
}

void hixl_mdesc_encode(uint8_t *buf, const char *owner,
                       const hixl_mdesc_region_t *regions, size_t count)
{
    size_t name_len = strlen(owner);
    uint8_t *p;
    size_t i;

    memcpy(buf, MEM_DESC_MAGIC, 4);
    mem_desc_put16(buf + 4, MEM_DESC_VERSION);
    mem_desc_put16(buf + 6, 0);
    mem_desc_put16(buf + 8, (uint16_t)name_len);
    mem_desc_put16(buf + 10, 0);
    hixl_put_le32(buf + 12, (uint32_t)count);
    memcpy(buf + MEM_DESC_HEADER_LEN, owner, name_len);
    p = buf + MEM_DESC_HEADER_LEN + name_len;
    for (i = 0; i < count; ++i, p += MEM_DESC_REGION_LEN) {
        hixl_put_le64(p, regions[i].addr);
        hixl_put_le64(p + 8, regions[i].len);
        hixl_put_le64(p + 16, regions[i].id);
        hixl_put_le32(p + 24, (uint32_t)regions[i].type);
        hixl_put_le32(p + 28, 0);
    }
}

static hixl_status_t mem_desc_check_header(const uint8_t *buf, size_t len,
                                           size_t *name_len_p,
                                           size_t *count_p)
{
    size_t name_len, count, need;
    unsigned version, flags;

    if (len < MEM_DESC_HEADER_LEN) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: %zu "
                          "bytes, shorter than its %u-byte header "
                          "(truncated)", len, MEM_DESC_HEADER_LEN);
    }
    if (memcmp(buf, MEM_DESC_MAGIC, 4) != 0) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: wrong "
                          "magic (not the bytes hixl_export_mem gives)");
    }
    version = mem_desc_get16(buf + 4);
    flags   = mem_desc_get16(buf + 6);
    if (version != MEM_DESC_VERSION) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: format "
                          "version %u, this library reads version %u",
                          version, MEM_DESC_VERSION);
    }
    if ((flags != 0) || (mem_desc_get16(buf + 10) != 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: unknown "
                          "flags 0x%x or reserved bits set", flags);
    }
    name_len = mem_desc_get16(buf + 8);
    count    = hixl_get_le32(buf + 12);
    if ((name_len == 0) || (name_len > HIXL_ENGINE_NAME_MAX)) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: owner "
                          "name of %zu bytes (1 to %d)", name_len,
                          HIXL_ENGINE_NAME_MAX);
    }
    if (count > MEM_DESC_MAX_REGIONS) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: %zu "
                          "regions, more than %u", count,
                          MEM_DESC_MAX_REGIONS);
    }
    need = hixl_mdesc_size(name_len, count);
    if (len != need) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: %zu "
                          "bytes where its header says %zu (%s)", len, need,
                          (len < need) ? "truncated" : "trailing bytes");
    }
    if (memchr(buf + MEM_DESC_HEADER_LEN, '\0', name_len) != NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: the "
                          "owner name holds a NUL byte");
    }
    *name_len_p = name_len;
    *count_p    = count;
    return HIXL_SUCCESS;
}

static hixl_status_t mem_desc_read_region(const uint8_t *p, size_t i,
                                          hixl_mdesc_region_t *r)
{
    uint32_t type = hixl_get_le32(p + 24);

    r->addr = hixl_get_le64(p);
    r->len  = hixl_get_le64(p + 8);
    r->id   = hixl_get_le64(p + 16);
    if ((r->addr == 0) || (r->len == 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: region "
                          "%zu has a zero %s", i, r->addr ? "length" :
                          "address");
    }
    if (r->addr + r->len < r->addr) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: region "
                          "%zu [0x%" PRIx64 ", +%" PRIu64 ") wraps around",
                          i, r->addr, r->len);
    }
    if ((type > (uint32_t)HIXL_MEM_HOST) || (hixl_get_le32(p + 28) != 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description: region "
                          "%zu has memory type %" PRIu32 " or reserved bits "
                          "set", i, type);
    }
    r->type = (hixl_mem_type_t)type;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_mdesc_decode(const uint8_t *buf, size_t len,
                                hixl_mdesc_t *out)
{
    hixl_mdesc_region_t *regions = NULL;
    size_t name_len = 0, count = 0, i;
    const uint8_t *p;
    hixl_status_t status;

    if (buf == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "memory description is NULL");
    }
    status = mem_desc_check_header(buf, len, &name_len, &count);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (count > 0) {
        regions = calloc(count, sizeof(*regions));
        if (regions == NULL) {
            return hixl_error(HIXL_RESOURCE_EXHAUSTED, "memory description:"
                              " no memory for %zu regions", count);
        }
    }
    p = buf + MEM_DESC_HEADER_LEN + name_len;
    for (i = 0; i < count; ++i, p += MEM_DESC_REGION_LEN) {
        status = mem_desc_read_region(p, i, &regions[i]);
        if (status != HIXL_SUCCESS) {
            free(regions);
            return status;
        }
    }
    memcpy(out->owner, buf + MEM_DESC_HEADER_LEN, name_len);
    out->owner[name_len] = '\0';
    out->count   = count;
    out->regions = regions;
    return HIXL_SUCCESS;
}
