/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sorted range index.
 */
#include "config.h"
#include "util/range_index.h"
#include "util/array.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

size_t hixl_range_floor(const hixl_range_index_t *idx, uint64_t addr)
{
    size_t lo = 0, hi = idx->count, mid;

    /* first item with items[i]->addr > addr, then step back one */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (idx->items[mid]->addr <= addr) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return (lo == 0) ? idx->count : lo - 1;
}

hixl_range_t *hixl_range_overlap(const hixl_range_index_t *idx, uint64_t addr,
                                 uint64_t len)
{
    size_t i = hixl_range_floor(idx, addr);
    size_t next;

    /* the range starting at or below addr, if it reaches addr */
    if ((i < idx->count) && (addr - idx->items[i]->addr < idx->items[i]->len)) {
        return idx->items[i];
    }
    /* the first range starting above addr, if [addr, +len) reaches it */
    next = (i == idx->count) ? 0 : i + 1;
    if ((next < idx->count) && (idx->items[next]->addr - addr < len)) {
        return idx->items[next];
    }
    return NULL;
}

hixl_status_t hixl_range_insert(hixl_range_index_t *idx, hixl_range_t *item)
{
    size_t pos;

    if (hixl_array_reserve(&idx->items, &idx->cap, idx->count + 1,
                           sizeof(*idx->items), 16) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "region index (%zu regions)", idx->count);
    }
    pos = hixl_range_floor(idx, item->addr);
    pos = (pos == idx->count) ? 0 : pos + 1;
    memmove(&idx->items[pos + 1], &idx->items[pos],
            (idx->count - pos) * sizeof(*idx->items));
    idx->items[pos] = item;
    idx->count++;
    idx->hint = pos;
    return HIXL_SUCCESS;
}

void hixl_range_remove(hixl_range_index_t *idx, hixl_range_t *item)
{
    size_t i = hixl_range_floor(idx, item->addr);

    if ((i == idx->count) || (idx->items[i] != item)) {
        return;
    }
    hixl_assert((idx->count >= 1) && (i < idx->count));
    memmove(&idx->items[i], &idx->items[i + 1],
            (idx->count - i - 1) * sizeof(*idx->items));
    idx->count--;
    idx->hint = 0;
}

void hixl_range_index_cleanup(hixl_range_index_t *idx)
{
    free(idx->items);
    memset(idx, 0, sizeof(*idx));
}
