/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Growable arrays: one doubling rule for every table that grows (region
 * slots, a unit's remote regions, a staging job's chunks),
 * so that none of them has its own copy of the realloc dance.
 */
#ifndef HIXL_UTIL_ARRAY_H_
#define HIXL_UTIL_ARRAY_H_

#include <stdlib.h>
#include <string.h>

/*
 * Make room for at least `need` elements of `size` bytes in *items, whose
 * capacity is *cap: doubles (starting at min_cap), zero-fills the new
 * tail, and updates both.  0 on success, -1 when out of memory (then
 * nothing changed).
 */
static inline int hixl_array_reserve(void *items_p, size_t *cap, size_t need,
                                     size_t size, size_t min_cap)
{
    void **items = (void**)items_p;
    size_t n     = *cap ? *cap : min_cap;
    void *grown;

    if (need <= *cap) {
        return 0;
    }
    while (n < need) {
        n *= 2;
    }
    grown = realloc(*items, n * size);
    if (grown == NULL) {
        return -1;
    }
    memset((char*)grown + *cap * size, 0, (n - *cap) * size);
    *items = grown;
    *cap   = n;
    return 0;
}

#endif
