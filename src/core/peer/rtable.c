/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer's remote region table (see rtable.h).
 */
#include "config.h"
#include "core/peer/rtable.h"
#include "core/engine.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>

hixl_status_t hixl_rtable_insert(hixl_rtable_t *t, hixl_rregion_t *rr,
                                 uint32_t max_regions)
{
    uint64_t addr = rr->range.addr, len = rr->range.len;
    hixl_status_t status;

    if (t->count >= max_regions) {
        return hixl_error(HIXL_FAILED, "peer announced more than %u regions "
                          "(option hixl.MaxRemoteRegions)", max_regions);
    }
    if (hixl_range_overlap(&t->idx, addr, len) != NULL) {
        return hixl_error(HIXL_FAILED, "MEM_ADD [0x%" PRIx64 ", +%" PRIu64 ") "
                          "overlaps a region it announced before", addr, len);
    }
    status = hixl_range_insert(&t->idx, &rr->range);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    t->count++;
    hixl_assert(t->count == t->idx.count);   /* every region indexed once */
    return HIXL_SUCCESS;
}

static void hixl_rregion_put_dev(hixl_engine_t *engine, hixl_rregion_t *rr)
{
    if (rr->dev != NULL) {
        engine->remote_dev_put(engine, rr->dev);
        rr->dev = NULL;
    }
}

void hixl_rregion_free(hixl_engine_t *engine, hixl_rregion_t *rr)
{
    if (rr->rkey != NULL) {
        ucp_rkey_destroy(rr->rkey);
    }
    hixl_rregion_put_dev(engine, rr);
    free(rr);
}

hixl_status_t hixl_rtable_revoke(hixl_engine_t *engine, hixl_rtable_t *t,
                                 uint64_t id, uint64_t addr)
{
    hixl_rregion_t *rr = (hixl_rregion_t *)hixl_range_floor(&t->idx, addr);

    if ((rr == NULL) || (rr->range.addr != addr) || (rr->id != id)) {
        return hixl_error(HIXL_FAILED, "MEM_DEL of region 0x%" PRIx64 " at "
                          "0x%" PRIx64 " it never announced", id, addr);
    }
    hixl_range_remove(&t->idx, &rr->range);
    hixl_assert(t->count >= 1);   /* it was found: it was counted */
    t->count--;
    /* device copies still running hold their own reference; the import
     * closes when the last one ends, before any revoke answer */
    hixl_rregion_put_dev(engine, rr);
    rr->next_dead = t->dead;
    t->dead       = rr;
    return HIXL_SUCCESS;
}

void hixl_rtable_reap(hixl_engine_t *engine, hixl_rtable_t *t)
{
    hixl_rregion_t *rr;

    while ((rr = t->dead) != NULL) {
        t->dead = rr->next_dead;
        hixl_rregion_free(engine, rr);
    }
}

static void hixl_rtable_drop(hixl_range_t *r, void *engine)
{
    hixl_rregion_free(engine, (hixl_rregion_t *)r);
}

void hixl_rtable_cleanup(hixl_engine_t *engine, hixl_rtable_t *t)
{
    hixl_range_index_drain(&t->idx, hixl_rtable_drop, engine);
    t->count = 0;
    hixl_rtable_reap(engine, t);
}
