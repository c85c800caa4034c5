/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Index of non-overlapping address ranges, shared by the local region table
 * and each peer's remote region table.  An AVL tree keyed by start address
 * whose links live in the indexed objects themselves: registering or
 * announcing one region among n costs O(log n) and allocates nothing (a
 * sorted array's insert moved n pointers, which made registering tens of
 * thousands of regions quadratic).  Lookups are a descent of at most
 * 1.44 log2(n) levels behind a one-entry hint: descriptors of one batch
 * usually fall in the same region, so the common lookup is one comparison.
 */
#ifndef HIXL_RANGE_INDEX_H_
#define HIXL_RANGE_INDEX_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>

/* First member of every indexed object.  Only addr and len are the
 * owner's; the links belong to the index while the range is in one. */
typedef struct hixl_range {
    uint64_t           addr;
    uint64_t           len;
    struct hixl_range *child[2]; /* lower, higher start addresses */
    struct hixl_range *parent;
    int32_t            height; /* of the subtree rooted here, >= 1 */
} hixl_range_t;

typedef struct hixl_range_index {
    hixl_range_t *root;
    size_t        count;
    hixl_range_t *hint; /* last found, or NULL */
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

/* The range starting last at or below addr, or NULL.  Reads only. */
static inline hixl_range_t *hixl_range_floor(const hixl_range_index_t *idx,
                                             uint64_t                  addr);

/* Any range overlapping [addr, addr + len), or NULL. */
hixl_range_t *hixl_range_overlap(const hixl_range_index_t *idx, uint64_t addr,
                                 uint64_t len);

/* Insert (the caller has checked for overlap).  Allocates nothing: always
 * SUCCESS, a status kept so that callers need not know. */
hixl_status_t hixl_range_insert(hixl_range_index_t *idx, hixl_range_t *item);

/* Remove item; a range that is not in idx (even one equal to a member)
 * is left alone. */
void hixl_range_remove(hixl_range_index_t *idx, hixl_range_t *item);

/* In address order: the lowest range, and the one after r (NULL at the
 * end).  Neither may be used across an insert or a remove. */
hixl_range_t *hixl_range_first(const hixl_range_index_t *idx);
hixl_range_t *hixl_range_next(const hixl_range_t *r);

/* Empty the index, handing every range to fn once (children before their
 * parent, so fn may free what it is given), in O(n). */
void hixl_range_index_drain(hixl_range_index_t *idx,
                            void (*fn)(hixl_range_t *r, void *arg), void *arg);

/* Forget every range (their owners keep them). */
void hixl_range_index_cleanup(hixl_range_index_t *idx);

static inline int hixl_range_holds(const hixl_range_t *r, uint64_t addr,
                                   uint64_t len)
{
    /* written so that addr + len cannot overflow */
    return (addr >= r->addr) && (addr - r->addr <= r->len) &&
           (len <= r->len - (addr - r->addr));
}

static inline hixl_range_t *hixl_range_floor(const hixl_range_index_t *idx,
                                             uint64_t                  addr)
{
    hixl_range_t *n = idx->root, *best = NULL;

    while (n != NULL) {
        if (n->addr <= addr) {
            best = n;
            n    = n->child[1];
        } else {
            n = n->child[0];
        }
    }
    return best;
}

static inline hixl_range_t *
hixl_range_find(hixl_range_index_t *idx, uint64_t addr, uint64_t len,
                hixl_range_t **straddle)
{
    hixl_range_t *r;

    if ((idx->hint != NULL) && hixl_range_holds(idx->hint, addr, len)) {
        return idx->hint;
    }
    r = hixl_range_floor(idx, addr);
    if (r == NULL) {
        return NULL;
    }
    if (hixl_range_holds(r, addr, len)) {
        idx->hint = r;
        return r;
    }
    if (straddle && (addr - r->addr < r->len)) {
        *straddle = r;
    }
    return NULL;
}

static inline const hixl_range_t *
hixl_range_lookup(const hixl_range_index_t *idx, uint64_t addr, uint64_t len)
{
    const hixl_range_t *r = hixl_range_floor(idx, addr);

    return ((r != NULL) && hixl_range_holds(r, addr, len)) ? r : NULL;
}

#endif
