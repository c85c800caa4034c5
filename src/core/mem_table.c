/*
 * Local region table.
 */
#include "config.h"
#include "core/mem_table.h"
#include "util/handle.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

hixl_status_t hixl_mem_table_insert(hixl_mem_table_t *t, uint16_t serial,
                                    hixl_region_t *region)
{
    hixl_region_t **slots;
    uint16_t *gens;
    hixl_status_t status;
    size_t i, n;

    for (i = 0; (i < t->nslots) && (t->slots[i] != NULL); ++i) {
    }
    if (i == t->nslots) {
        n     = t->nslots ? t->nslots * 2 : 16;
        slots = realloc(t->slots, n * sizeof(*slots));
        if (slots == NULL) {
            goto oom;
        }
        t->slots = slots;
        gens     = realloc(t->gens, n * sizeof(*gens));
        if (gens == NULL) {
            goto oom;
        }
        t->gens = gens;
        memset(&t->slots[t->nslots], 0, (n - t->nslots) * sizeof(*slots));
        memset(&t->gens[t->nslots], 0, (n - t->nslots) * sizeof(*gens));
        t->nslots = n;
    }

    status = hixl_range_insert(&t->by_addr, &region->range);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    t->gens[i]     = hixl_gen_next(t->gens[i]);
    t->slots[i]    = region;
    region->handle = hixl_handle_make(serial, t->gens[i], (uint32_t)i);
    t->count++;
    return HIXL_SUCCESS;

oom:
    return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the region "
                      "table (%zu regions)", t->count);
}

hixl_region_t *hixl_mem_table_get(const hixl_mem_table_t *t, uint16_t serial,
                                  uint64_t handle)
{
    uint32_t i = hixl_handle_index(handle);

    if ((hixl_handle_engine(handle) != serial) || (i >= t->nslots) ||
        (t->slots[i] == NULL) || (t->gens[i] != hixl_handle_gen(handle))) {
        return NULL;
    }
    return t->slots[i];
}

void hixl_mem_table_remove(hixl_mem_table_t *t, hixl_region_t *region)
{
    uint32_t i = hixl_handle_index(region->handle);

    hixl_range_remove(&t->by_addr, &region->range);
    if ((i < t->nslots) && (t->slots[i] == region)) {
        t->slots[i] = NULL;
        t->count--;
    }
}

void hixl_mem_table_cleanup(hixl_mem_table_t *t)
{
    hixl_range_index_cleanup(&t->by_addr);
    free(t->slots);
    free(t->gens);
    memset(t, 0, sizeof(*t));
}
