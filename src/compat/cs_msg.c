/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encoding and strict decoding of the HixlCS region-table messages (see
 * cs_msg.h for the layout).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cs_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIXL_CS_REQ_MAGIC   "HXCQ"
#define HIXL_CS_TABLE_MAGIC "HXCT"
#define HIXL_CS_VERSION     1u

void hixl_cs_req_encode(uint8_t buf[HIXL_CS_REQ_LEN], uint64_t id)
{
    memcpy(buf, HIXL_CS_REQ_MAGIC, 4);
    hixl_compat_put_le32(buf + 4, HIXL_CS_VERSION);
    hixl_compat_put_le64(buf + 8, id);
}

int hixl_cs_req_decode(const void *msg, size_t len, uint64_t *id)
{
    const uint8_t *p = msg;

    if ((len != HIXL_CS_REQ_LEN) || memcmp(p, HIXL_CS_REQ_MAGIC, 4) ||
        (hixl_compat_get_le32(p + 4) != HIXL_CS_VERSION)) {
        return -1;
    }
    *id = hixl_compat_get_le64(p + 8);
    return 0;
}

size_t hixl_cs_table_len(const hixl_cs_entry_t *e, uint32_t n)
{
    size_t len = HIXL_CS_TABLE_HDR;
    uint32_t i;

    for (i = 0; i < n; ++i) {
        len += HIXL_CS_ENTRY_HDR + e[i].tag_len;
    }
    return len;
}

void hixl_cs_table_encode(uint8_t *buf, uint64_t id, const hixl_cs_entry_t *e,
                          uint32_t n)
{
    uint8_t *p = buf + HIXL_CS_TABLE_HDR;
    uint32_t i;

    memcpy(buf, HIXL_CS_TABLE_MAGIC, 4);
    hixl_compat_put_le32(buf + 4, HIXL_CS_VERSION);
    hixl_compat_put_le64(buf + 8, id);
    hixl_compat_put_le32(buf + 16, n);
    hixl_compat_put_le32(buf + 20, 0);
    for (i = 0; i < n; ++i) {
        hixl_compat_put_le32(p, (uint32_t)e[i].type);
        hixl_compat_put_le32(p + 4, (uint32_t)e[i].tag_len);
        hixl_compat_put_le64(p + 8, e[i].addr);
        hixl_compat_put_le64(p + 16, e[i].size);
        memcpy(p + HIXL_CS_ENTRY_HDR, e[i].tag, e[i].tag_len);
        p += HIXL_CS_ENTRY_HDR + e[i].tag_len;
    }
}

void hixl_cs_table_free(hixl_cs_table_t *table)
{
    if (table->tags != NULL) {
        free(table->tags[0]);   /* one block holds every tag */
    }
    free(table->tags);
    free(table->mems);
    memset(table, 0, sizeof(*table));
}

/* One pass over the entries: check them and count the tags' bytes. */
static int hixl_cs_table_check(const uint8_t *p, size_t len, uint32_t count,
                               size_t *tag_bytes, char *why, size_t whylen)
{
    size_t off = HIXL_CS_TABLE_HDR, total = 0;
    uint32_t i, type, tlen;

    for (i = 0; i < count; ++i) {
        if (len - off < HIXL_CS_ENTRY_HDR) {
            snprintf(why, whylen, "entry %u is cut short", i);
            return -1;
        }
        type = hixl_compat_get_le32(p + off);
        tlen = hixl_compat_get_le32(p + off + 4);
        if ((type != (uint32_t)COMM_MEM_TYPE_DEVICE) &&
            (type != (uint32_t)COMM_MEM_TYPE_HOST)) {
            snprintf(why, whylen, "entry %u: memory type %d", i,
                     (int32_t)type);
            return -1;
        }
        if ((tlen > HIXL_CS_TAG_MAX) ||
            (len - off - HIXL_CS_ENTRY_HDR < tlen)) {
            snprintf(why, whylen, "entry %u: tag of %u bytes", i, tlen);
            return -1;
        }
        if (memchr(p + off + HIXL_CS_ENTRY_HDR, '\0', tlen) != NULL) {
            snprintf(why, whylen, "entry %u: NUL in its tag", i);
            return -1;
        }
        off   += HIXL_CS_ENTRY_HDR + tlen;
        total += tlen + 1;
    }
    if (off != len) {
        snprintf(why, whylen, "%zu bytes after the last entry", len - off);
        return -1;
    }
    *tag_bytes = total;
    return 0;
}

int hixl_cs_table_decode(const void *msg, size_t len, uint64_t *id,
                         hixl_cs_table_t *table, char *why, size_t whylen)
{
    const uint8_t *p = msg;
    size_t tag_bytes = 0, off = HIXL_CS_TABLE_HDR;
    uint32_t count, i, tlen;
    char *block;

    memset(table, 0, sizeof(*table));
    if ((len < HIXL_CS_TABLE_HDR) || memcmp(p, HIXL_CS_TABLE_MAGIC, 4) ||
        (hixl_compat_get_le32(p + 4) != HIXL_CS_VERSION) ||
        (hixl_compat_get_le32(p + 20) != 0)) {
        snprintf(why, whylen, "not a version %u region table (%zu bytes)",
                 HIXL_CS_VERSION, len);
        return -1;
    }
    count = hixl_compat_get_le32(p + 16);
    if (count > HIXL_CS_MAX_REGIONS) {
        snprintf(why, whylen, "%u regions, limit %u", count,
                 HIXL_CS_MAX_REGIONS);
        return -1;
    }
    if (hixl_cs_table_check(p, len, count, &tag_bytes, why, whylen) != 0) {
        return -1;
    }
    table->mems = calloc(count ? count : 1, sizeof(*table->mems));
    table->tags = calloc(count ? count : 1, sizeof(*table->tags));
    block       = malloc(tag_bytes ? tag_bytes : 1);
    if ((table->mems == NULL) || (table->tags == NULL) || (block == NULL)) {
        free(block);
        hixl_cs_table_free(table);
        snprintf(why, whylen, "out of memory for %u regions", count);
        return -1;
    }
    table->tags[0] = block;   /* freed through tags[0], even when empty */
    for (i = 0; i < count; ++i) {
        tlen = hixl_compat_get_le32(p + off + 4);
        table->mems[i].type =
            (CommMemType)(int32_t)hixl_compat_get_le32(p + off);
        table->mems[i].addr =
            (void*)(uintptr_t)hixl_compat_get_le64(p + off + 8);
        table->mems[i].size = hixl_compat_get_le64(p + off + 16);
        table->tags[i]      = block;
        memcpy(block, p + off + HIXL_CS_ENTRY_HDR, tlen);
        block[tlen] = '\0';
        block += tlen + 1;
        off   += HIXL_CS_ENTRY_HDR + tlen;
    }
    table->count = count;
    *id          = hixl_compat_get_le64(p + 8);
    return 0;
}
