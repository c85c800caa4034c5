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

struct hixl_prefaulter {
    hixl_workq_t q;
};

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
        engine->prefaulter = calloc(1, sizeof(*engine->prefaulter));
        if (engine->prefaulter == NULL) {
            return;   /* an optimisation only */
        }
        hixl_workq_init(&engine->prefaulter->q);
    }
    item = calloc(1, sizeof(*item));
    if (item == NULL) {
        return;
    }
    item->work.run = hixl_prefault_work;
    item->addr     = addr;
    item->len      = len;
    if (hixl_workq_post(&engine->prefaulter->q, &item->work) != 0) {
        free(item);
    }
}

void hixl_prefault_stop(hixl_engine_t *engine)
{
    if (engine->prefaulter == NULL) {
        return;
    }
    hixl_workq_stop(&engine->prefaulter->q, hixl_prefault_drop);
    free(engine->prefaulter);
    engine->prefaulter = NULL;
}
