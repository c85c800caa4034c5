/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sorted index of non-overlapping address ranges, shared by the local region
 * table and each peer's remote region table.  Lookups are a binary search
 * behind a one-entry hint: descriptors of one batch usually fall in the same
 * region, so the common lookup is one comparison.
 */
#ifndef HIXL_RANGE_INDEX_H_
#define HIXL_RANGE_INDEX_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>

/* First member of every indexed object. */
typedef struct hixl_range {
    uint64_t addr;
    uint64_t len;
} hixl_range_t;

typedef struct hixl_range_index {
    hixl_range_t **items;   /* sorted by addr */
    size_t         count;
    size_t         cap;
    size_t         hint;
} hixl_range_index_t;

/* The range holding all of [addr, addr + len), or NULL.  When NULL and a
 * range holds addr but ends too early, *straddle (if given) is set to it. */
static inline hixl_range_t *
hixl_range_find(hixl_range_index_t *idx, uint64_t addr, uint64_t len,
                hixl_range_t **straddle);

/* The same without touching the hint, for readers that share the index
 * (handlers under a read lock). */
static inline const hixl_range_t *
hixl_range_lookup(const hixl_range_index_t *idx, uint64_t addr, uint64_t len);

/* Any range overlapping [addr, addr + len), or NULL. */
hixl_range_t *hixl_range_overlap(const hixl_range_index_t *idx, uint64_t addr,
                                 uint64_t len);

/* Insert (the caller has checked for overlap).  RESOURCE_EXHAUSTED on OOM. */
hixl_status_t hixl_range_insert(hixl_range_index_t *idx, hixl_range_t *item);

void hixl_range_remove(hixl_range_index_t *idx, hixl_range_t *item);

void hixl_range_index_cleanup(hixl_range_index_t *idx);

/* Position of the last range starting at or below addr, or count if none. */
size_t hixl_range_floor(const hixl_range_index_t *idx, uint64_t addr);

static inline int hixl_range_holds(const hixl_range_t *r, uint64_t addr,
                                   uint64_t len)
{
    /* written so that addr + len cannot overflow */
    return (addr >= r->addr) && (addr - r->addr <= r->len) &&
           (len <= r->len - (addr - r->addr));
}

static inline hixl_range_t *
hixl_range_find(hixl_range_index_t *idx, uint64_t addr, uint64_t len,
                hixl_range_t **straddle)
{
    size_t i;

    if ((idx->hint < idx->count) &&
        hixl_range_holds(idx->items[idx->hint], addr, len)) {
        return idx->items[idx->hint];
    }
    i = hixl_range_floor(idx, addr);
    if (i == idx->count) {
        return NULL;
    }
    if (hixl_range_holds(idx->items[i], addr, len)) {
        idx->hint = i;
        return idx->items[i];
    }
    if (straddle && (addr - idx->items[i]->addr < idx->items[i]->len)) {
        *straddle = idx->items[i];
    }
    return NULL;
}

static inline const hixl_range_t *
hixl_range_lookup(const hixl_range_index_t *idx, uint64_t addr, uint64_t len)
{
    size_t i = hixl_range_floor(idx, addr);

    return ((i < idx->count) && hixl_range_holds(idx->items[i], addr, len)) ?
           idx->items[i] : NULL;
}

#endif
