/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Local region table.
 */
#include "config.h"
#include "core/xfer/mem_table.h"
#include "util/array.h"
#include "util/handle.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

hixl_status_t hixl_mem_table_insert(hixl_mem_table_t *t, uint16_t serial,
                                    hixl_region_t *region)
{
    hixl_status_t status;
    size_t i;

    for (i = t->first_free; (i < t->nslots) && (t->slots[i].region != NULL);
         ++i) {
    }
    if (hixl_array_reserve(&t->slots, &t->nslots, i + 1, sizeof(*t->slots),
                           16) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "region table (%zu regions)", t->count);
    }
    status = hixl_range_insert(&t->by_addr, &region->range);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    t->slots[i].gen    = hixl_gen_next(t->slots[i].gen);
    t->slots[i].region = region;
    t->first_free      = i + 1;
    region->handle     = hixl_handle_make(serial, t->slots[i].gen,
                                          (uint32_t)i);
    t->count++;
    return HIXL_SUCCESS;
}

hixl_region_t *hixl_mem_table_get(const hixl_mem_table_t *t, uint16_t serial,
                                  uint64_t handle)
{
    uint32_t i = hixl_handle_index(handle);

    if ((hixl_handle_engine(handle) != serial) || (i >= t->nslots) ||
        (t->slots[i].region == NULL) ||
        (t->slots[i].gen != hixl_handle_gen(handle))) {
        return NULL;
    }
    return t->slots[i].region;
}

hixl_region_t *hixl_mem_table_same(hixl_mem_table_t *t, uint64_t addr,
                                   uint64_t len)
{
    hixl_range_t *r = hixl_range_find(&t->by_addr, addr, len, NULL);

    return ((r != NULL) && (r->addr == addr) && (r->len == len)) ?
           (hixl_region_t*)r : NULL;
}

void hixl_mem_table_remove(hixl_mem_table_t *t, hixl_region_t *region)
{
    uint32_t i = hixl_handle_index(region->handle);

    if (!region->revoked) {
        hixl_range_remove(&t->by_addr, &region->range);
    }
    if ((i < t->nslots) && (t->slots[i].region == region)) {
        hixl_assert(t->count >= 1);   /* the region was counted */
        t->slots[i].region = NULL;
        t->count--;
        if (i < t->first_free) {
            t->first_free = i;
        }
    }
}

void hixl_mem_table_cleanup(hixl_mem_table_t *t)
{
    hixl_range_index_cleanup(&t->by_addr);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
