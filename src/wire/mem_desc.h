/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The serialised description of a set of registered regions
 * (hixl_export_mem / hixl_import_mem): its byte format, its encoder and its
 * decoder.  The bytes travel through whatever channel the application picks
 * (a notify, its own RPC, a file), so the decoder treats them as hostile:
 * every count and length is checked against the input before it is used.
 *
 * Format (little endian), version 1:
 *
 *   off  size
 *     0     4  magic "HXMD"
 *     4     2  format version (1)
 *     6     2  flags, 0 (a reader refuses bits it does not know)
 *     8     2  owner engine name length N, 1..HIXL_ENGINE_NAME_MAX
 *    10     2  reserved, 0
 *    12     4  region count C, at most MEM_DESC_MAX_REGIONS
 *    16     N  owner engine name (no NUL)
 *  16+N  32*C  regions: addr u64, len u64, id u64, mem type u32, reserved u32
 *
 * The input must be exactly that long: trailing bytes are refused too, so
 * that two different byte strings never decode to the same description.
 */
#ifndef HIXL_WIRE_MEM_DESC_H_
#define HIXL_WIRE_MEM_DESC_H_

#include <hixl/hixl.h>

#include <stddef.h>
#include <stdint.h>

#define MEM_DESC_MAGIC        "HXMD"
#define MEM_DESC_VERSION      1u
#define MEM_DESC_HEADER_LEN   16u
#define MEM_DESC_REGION_LEN   32u
/* far more regions than an engine registers; bounds what a decoder
 * allocates for a count a peer wrote */
#define MEM_DESC_MAX_REGIONS  65536u

typedef struct hixl_mdesc_region {
    uint64_t        addr;
    uint64_t        len;
    uint64_t        id;      /* the owner's handle: tells re-registrations
                                of the same address apart */
    hixl_mem_type_t type;
} hixl_mdesc_region_t;

typedef struct hixl_mdesc {
    char               owner[HIXL_ENGINE_NAME_MAX + 1];
    size_t             count;
    hixl_mdesc_region_t *regions;   /* malloc'd by hixl_mdesc_decode */
} hixl_mdesc_t;

/* Bytes the description of count regions owned by `owner` takes. */
size_t hixl_mdesc_size(size_t owner_len, size_t count);

/* Write it into buf, which holds hixl_mdesc_size(strlen(owner), count). */
void hixl_mdesc_encode(uint8_t *buf, const char *owner,
                       const hixl_mdesc_region_t *regions, size_t count);

/* Decode len bytes into *out (out->regions to free()).  PARAM_INVALID with
 * the reason in hixl_last_error() for anything malformed; *out is then
 * untouched.  RESOURCE_EXHAUSTED when the region array cannot be
 * allocated. */
hixl_status_t hixl_mdesc_decode(const uint8_t *buf, size_t len,
                                hixl_mdesc_t *out);

#endif
