/*
 * Pre-faulting peers' memory mapped here (mem_prefault.h).
 */
#include "config.h"
#include "ops/mem_prefault.h"
#include "core/engine.h"
#include "util/log.h"
#include "util/prefault.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct hixl_prefault_item {
    struct hixl_prefault_item *next;
    const void                *addr;
    size_t                     len;
} hixl_prefault_item_t;

struct hixl_prefaulter {
    pthread_mutex_t       lock;
    pthread_cond_t        cond;
    pthread_t             thread;
    int                   running;
    int                   stop;
    hixl_prefault_item_t *head, *tail;
};

static void *hixl_prefault_main(void *arg)
{
    struct hixl_prefaulter *pf = arg;
    hixl_prefault_item_t *item;
    int err;

    pthread_mutex_lock(&pf->lock);
    while (!pf->stop) {
        item = pf->head;
        if (item == NULL) {
            pthread_cond_wait(&pf->cond, &pf->lock);
            continue;
        }
        pf->head = item->next;
        if (pf->head == NULL) {
            pf->tail = NULL;
        }
        pthread_mutex_unlock(&pf->lock);
        err = hixl_prefault(item->addr, item->len);
        hixl_log_debug("pre-faulted a peer's region [%p, +%zu): %s",
                       item->addr, item->len, err ? strerror(err) : "done");
        free(item);
        pthread_mutex_lock(&pf->lock);
    }
    pthread_mutex_unlock(&pf->lock);
    return NULL;
}

void hixl_prefault_later(hixl_engine_t *engine, const void *addr, size_t len)
{
    struct hixl_prefaulter *pf = engine->prefaulter;
    hixl_prefault_item_t *item;

    if (pf == NULL) {
        pf = calloc(1, sizeof(*pf));
        if (pf == NULL) {
            return;   /* an optimisation only */
        }
        pthread_mutex_init(&pf->lock, NULL);
        pthread_cond_init(&pf->cond, NULL);
        engine->prefaulter = pf;
    }
    item = calloc(1, sizeof(*item));
    if (item == NULL) {
        return;
    }
    item->addr = addr;
    item->len  = len;
    pthread_mutex_lock(&pf->lock);
    if (!pf->running && !pf->stop) {
        pf->running = (pthread_create(&pf->thread, NULL, hixl_prefault_main,
                                      pf) == 0);
    }
    if (!pf->running) {
        pthread_mutex_unlock(&pf->lock);
        free(item);
        return;
    }
    if (pf->tail != NULL) {
        pf->tail->next = item;
    } else {
        pf->head = item;
    }
    pf->tail = item;
    pthread_cond_signal(&pf->cond);
    pthread_mutex_unlock(&pf->lock);
}

void hixl_prefault_stop(hixl_engine_t *engine)
{
    struct hixl_prefaulter *pf = engine->prefaulter;
    hixl_prefault_item_t *item;

    if (pf == NULL) {
        return;
    }
    pthread_mutex_lock(&pf->lock);
    pf->stop = 1;
    pthread_cond_signal(&pf->cond);
    pthread_mutex_unlock(&pf->lock);
    if (pf->running) {
        pthread_join(pf->thread, NULL);
    }
    while ((item = pf->head) != NULL) {
        pf->head = item->next;
        free(item);
    }
    pthread_mutex_destroy(&pf->lock);
    pthread_cond_destroy(&pf->cond);
    free(pf);
    engine->prefaulter = NULL;
}
