/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting peers' memory mapped here (mem_prefault.h).
 */
#include "config.h"
#include "ops/mem_prefault.h"
#include "core/engine.h"
#include "util/log.h"
#include "util/prefault.h"
#include "util/workq.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct hixl_prefault_item {
    hixl_work_t  work;   /* first: the queue's item */
    const void  *addr;
    size_t       len;
} hixl_prefault_item_t;

static void hixl_prefault_work(hixl_work_t *work)
{
    hixl_prefault_item_t *item = (hixl_prefault_item_t*)work;
    int err                    = hixl_prefault(item->addr, item->len);

    hixl_log_debug("pre-faulted a peer's region [%p, +%zu): %s",
                   item->addr, item->len, err ? strerror(err) : "done");
    free(item);
}

static void hixl_prefault_drop(hixl_work_t *work)
{
    free(work);
}

void hixl_prefault_later(hixl_engine_t *engine, const void *addr, size_t len)
{
    hixl_prefault_item_t *item;

    if (engine->prefaulter == NULL) {
        engine->prefaulter = hixl_workq_new();
    }
    item = (engine->prefaulter != NULL) ? calloc(1, sizeof(*item)) : NULL;
    if (item == NULL) {
        return;   /* an optimisation only */
    }
    item->work.run = hixl_prefault_work;
    item->addr     = addr;
    item->len      = len;
    if (hixl_workq_post(engine->prefaulter, &item->work) != 0) {
        free(item);
    }
}

void hixl_prefault_stop(hixl_engine_t *engine)
{
    hixl_workq_free(engine->prefaulter, hixl_prefault_drop);
    engine->prefaulter = NULL;
}
