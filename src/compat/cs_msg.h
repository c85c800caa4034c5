/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two messages of CANN hixl's C interface over libhixl-ucx (cs_msg.c),
 * carried as notifies between a HixlCS client's engine and its server's:
 *
 *   HIXL_CS_REQ_NAME    client -> server: "send me your region table"
 *                   "HXCQ" u32 version, u64 request id              16 B
 *   HIXL_CS_TABLE_NAME  server -> client: the table, answering that id
 *                   "HXCT" u32 version, u64 request id, u32 count,
 *                   u32 reserved (0), then count entries of
 *                   i32 CommMemType, u32 tag length, u64 addr, u64 size,
 *                   the tag's bytes (no NUL)
 *
 * Integers little-endian.  A decoder trusts nothing: lengths are checked
 * before every read, counts and tag lengths against the limits below, and
 * the message must end exactly where its last entry does.
 */
#ifndef HIXL_COMPAT_CS_MSG_H_
#define HIXL_COMPAT_CS_MSG_H_

#include "compat.h"

#include <cs/hixl_cs.h>

#include <stddef.h>
#include <stdint.h>

#define HIXL_CS_REQ_NAME    "hixl.cs.mem?"
#define HIXL_CS_TABLE_NAME  "hixl.cs.mem"
#define HIXL_CS_REQ_LEN     16u
#define HIXL_CS_TABLE_HDR   24u
#define HIXL_CS_ENTRY_HDR   24u
/* A tag's bytes, and a server's regions: a full table stays far below the
 * engines' notify limit (16 MiB, set by the CS engines). */
#define HIXL_CS_TAG_MAX     1023u
#define HIXL_CS_MAX_REGIONS 8192u
#define HIXL_CS_NOTIFY_MAX  "16777216"

/* One region of a table, as the server encodes it. */
typedef struct hixl_cs_entry {
    int32_t     type;      /* CommMemType */
    uint64_t    addr;
    uint64_t    size;
    const char *tag;       /* tag_len bytes */
    size_t      tag_len;
} hixl_cs_entry_t;

/* A decoded table, owned by whoever decoded it (hixl_cs_table_free). */
typedef struct hixl_cs_table {
    uint32_t  count;
    CommMem  *mems;
    char    **tags;        /* NUL-terminated, "" for untagged regions */
} hixl_cs_table_t;

HIXL_COMPAT_HIDDEN void hixl_cs_req_encode(uint8_t buf[HIXL_CS_REQ_LEN],
                                           uint64_t id);
/* 0 with *id, or -1 when msg is not a request. */
HIXL_COMPAT_HIDDEN int hixl_cs_req_decode(const void *msg, size_t len,
                                          uint64_t *id);

/* Bytes the table of these entries takes. */
HIXL_COMPAT_HIDDEN size_t hixl_cs_table_len(const hixl_cs_entry_t *e,
                                            uint32_t n);
/* Encode into buf of hixl_cs_table_len(e, n) bytes. */
HIXL_COMPAT_HIDDEN void hixl_cs_table_encode(uint8_t *buf, uint64_t id,
                                             const hixl_cs_entry_t *e,
                                             uint32_t n);
/* 0 with *id and *table (allocated), or -1 with why[] when msg is not a
 * well-formed table (or memory ran out). */
HIXL_COMPAT_HIDDEN int hixl_cs_table_decode(const void *msg, size_t len,
                                            uint64_t *id,
                                            hixl_cs_table_t *table,
                                            char *why, size_t whylen);
HIXL_COMPAT_HIDDEN void hixl_cs_table_free(hixl_cs_table_t *table);

#endif
