/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Received tables of pieces (am_table.h).
 */
#include "config.h"
#include "core/xfer/am_table.h"
#include "core/engine.h"
#include "util/copy.h"
#include "util/debug.h"

int hixl_am_table_read(const hixl_am_hdr_t *h, const void *payload,
                       size_t length, int with_data, hixl_am_table_t *t)
{
    size_t table_len;
    uint64_t sum = 0;
    hixl_am_piece_t p;
    uint32_t k;

    if ((h->count == 0) || (h->count > HIXL_AM_MAX_PIECES) ||
        (payload == NULL)) {
        return -1;
    }
    table_len = (size_t)h->count * sizeof(hixl_am_piece_t);
    /* no more than the library's own messages carry (am_proto.h): a READ
     * names its bytes without carrying them, and its answer goes out as
     * one message, holding the regions it reads until it is out */
    if ((h->len > HIXL_AM_CHUNK) ||
        (table_len + h->len > HIXL_AM_PAYLOAD_MAX) ||
        (length < table_len) ||
        (with_data ? (length - table_len != h->len) : (length != table_len))) {
        return -1;
    }
    t->pieces = payload;
    t->data   = with_data ? (const unsigned char*)payload + table_len : NULL;
    t->count  = h->count;
    t->len    = h->len;
    for (k = 0; k < t->count; ++k) {
        hixl_am_table_piece(t, k, &p);
        /* each at most the whole (at most HIXL_AM_CHUNK), so the sum
         * cannot wrap */
        if ((p.len == 0) || (p.len > h->len)) {
            return -1;
        }
        sum += p.len;
        if (sum > h->len) {
            return -1;
        }
    }
    return (sum == h->len) ? 0 : -1;
}

hixl_region_t *hixl_am_region(hixl_engine_t *engine, uint64_t addr,
                              uint64_t len)
{
    hixl_region_t *region = (hixl_region_t*)hixl_range_lookup(
            &engine->mem.by_addr, addr, len);

    return ((region != NULL) && (region->type == HIXL_MEM_HOST)) ? region :
           NULL;
}

int hixl_am_table_placed(hixl_engine_t *engine, const hixl_am_table_t *t,
                         hixl_am_side_t side, hixl_region_t **regions,
                         hixl_am_piece_t *bad)
{
    hixl_region_t *last = NULL, *region;
    hixl_am_piece_t p;
    uint64_t addr;
    uint32_t k;

    for (k = 0; k < t->count; ++k) {
        hixl_am_table_piece(t, k, &p);
        addr = hixl_am_piece_addr(&p, side);
        /* the pieces of a message mostly share a region */
        region = ((last != NULL) &&
                  hixl_range_holds(&last->range, addr, p.len)) ? last :
                 hixl_am_region(engine, addr, p.len);
        if (region == NULL) {
            *bad = p;
            return 0;
        }
        if (regions != NULL) {
            regions[k] = (region == last) ? NULL : region;
        }
        last = region;
    }
    return 1;
}

void hixl_am_table_scatter(const hixl_am_table_t *t, hixl_am_side_t side)
{
    const unsigned char *src = t->data;
    /* a message as large as a streaming copy is a part of a bulk transfer
     * sweeping its destination (util/copy.h), whatever its pieces' size:
     * the blocks of a paged KV cache stream too */
    int sweep = (t->len >= HIXL_COPY_STREAM_MIN);
    hixl_am_piece_t p;
    void *dst;
    uint32_t k;

    hixl_assert(src != NULL);   /* a table with data */
    for (k = 0; k < t->count; ++k) {
        hixl_am_table_piece(t, k, &p);
        dst = (void*)(uintptr_t)hixl_am_piece_addr(&p, side);
        if (sweep) {
            hixl_copy_past_caches(dst, src, p.len);
        } else {
            hixl_copy_streaming(dst, src, p.len);
        }
        src += p.len;
    }
}
