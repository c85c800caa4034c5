/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting and warming memory in the background (mem_prefault.h).
 */
#include "config.h"
#include "ops/mem_prefault.h"
#include "core/engine.h"
#include "core/xfer/mem_table.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"
#include "util/prefault.h"
#include "util/workq.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Warming and pre-faulting do this much between looks at whether they must
 * stop: what a deregistration or a finalize may wait for (about 6 ms of
 * CPU at the 6 s per GiB warming took here; the thread runs at the lowest
 * priority, util/workq.h, so on a busy host the wait is longer). */
#define HIXL_BG_CHUNK (1u << 20)

/* Every item on the engine's queue: how to drop it unrun. */
typedef struct hixl_bg_item {
    hixl_work_t work;   /* first: the queue's item */
    void      (*drop)(struct hixl_bg_item *item);
} hixl_bg_item_t;

typedef struct hixl_prefault_item {
    hixl_bg_item_t bg;   /* first */
    hixl_engine_t *engine;
    const void    *addr;
    size_t         len;
} hixl_prefault_item_t;

/* A region's warming, held by the region and by the queue. */
struct hixl_warm {
    hixl_bg_item_t bg;          /* first */
    hixl_engine_t *engine;
    uint8_t       *addr;
    size_t         len;
    atomic_int     refs;
    int            cancelled;   /* under warming->lock */
};

/* The engine's warming state (engine->warming). */
struct hixl_warming {
    pthread_mutex_t lock;       /* held while a chunk is written */
    pthread_cond_t  cond;       /* pending went down */
    unsigned        pending;    /* warms and pre-faults queued or
                                 * running (hixl_mem_warm_wait) */
    int             stopping;
};

static int hixl_bg_queue(hixl_engine_t *engine)
{
    if (engine->prefaulter == NULL) {
        engine->prefaulter = hixl_workq_new(1);
    }
    return (engine->prefaulter != NULL) ? 0 : -1;
}

/* Work for hixl_mem_warm_wait: counted when queued, settled when it ran
 * or was dropped. */
static void hixl_pending_add(struct hixl_warming *g)
{
    pthread_mutex_lock(&g->lock);
    ++g->pending;
    pthread_mutex_unlock(&g->lock);
}

static void hixl_pending_settle(struct hixl_warming *g)
{
    pthread_mutex_lock(&g->lock);
    --g->pending;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

/* ---- pre-faulting peers' memory mapped here ------------------------------- */

static int hixl_bg_stopping(struct hixl_warming *g)
{
    int stopping;

    pthread_mutex_lock(&g->lock);
    stopping = g->stopping;
    pthread_mutex_unlock(&g->lock);
    return stopping;
}

/* In chunks, so that a finalize waits for one chunk, not the region. */
static void hixl_prefault_work(hixl_work_t *work)
{
    hixl_prefault_item_t *item = (hixl_prefault_item_t*)work;
    const uint8_t *addr        = item->addr;
    uint64_t start             = hixl_now_ns();
    size_t done, n;
    int err = 0;

    for (done = 0; (done < item->len) && (err == 0); done += n) {
        n = (item->len - done < HIXL_BG_CHUNK) ? item->len - done :
            HIXL_BG_CHUNK;
        err = hixl_bg_stopping(item->engine->warming) ? ECANCELED :
              hixl_prefault(addr + done, n);
    }
    hixl_log_debug("pre-faulted a peer's region [%p, +%zu): %s in %.3f s",
                   item->addr, item->len, err ? strerror(err) : "done",
                   (double)(hixl_now_ns() - start) / 1e9);
    hixl_pending_settle(item->engine->warming);
    free(item);
}

static void hixl_prefault_item_drop(hixl_bg_item_t *bg)
{
    hixl_prefault_item_t *item = (hixl_prefault_item_t*)bg;

    hixl_pending_settle(item->engine->warming);
    free(item);
}

void hixl_prefault_later(hixl_engine_t *engine, const void *addr, size_t len)
{
    hixl_prefault_item_t *item;

    hixl_assert_locked(&engine->lock);
    item = ((engine->warming != NULL) && (hixl_bg_queue(engine) == 0)) ?
           calloc(1, sizeof(*item)) : NULL;
    if (item == NULL) {
        return;   /* an optimisation only */
    }
    item->bg.work.run = hixl_prefault_work;
    item->bg.drop     = hixl_prefault_item_drop;
    item->engine      = engine;
    item->addr        = addr;
    item->len         = len;
    hixl_pending_add(engine->warming);
    if (hixl_workq_post(engine->prefaulter, &item->bg.work) != 0) {
        hixl_pending_settle(engine->warming);
        free(item);
    }
}

/* ---- warming memory this engine allocated ---------------------------------- */

static void hixl_warm_release(hixl_warm_t *w)
{
    int before = atomic_fetch_sub(&w->refs, 1);

    hixl_assert(before >= 1);   /* the owner's and the queue's */
    if (before == 1) {
        free(w);
    }
}

/* The queue is done with w, run or not. */
static void hixl_warm_settle(hixl_warm_t *w)
{
    hixl_pending_settle(w->engine->warming);
    hixl_warm_release(w);
}

static void hixl_warm_work(hixl_work_t *work)
{
    hixl_warm_t *w            = (hixl_warm_t*)work;
    struct hixl_warming *g    = w->engine->warming;
    uint64_t start            = hixl_now_ns();
    size_t done, n;
    int stopped = 0;

    for (done = 0; (done < w->len) && !stopped; done += n) {
        n = (w->len - done < HIXL_BG_CHUNK) ? w->len - done :
            HIXL_BG_CHUNK;
        pthread_mutex_lock(&g->lock);
        stopped = w->cancelled || g->stopping;
        if (!stopped) {
            hixl_touch_pages(w->addr + done, n);
        }
        pthread_mutex_unlock(&g->lock);
    }
    hixl_log_debug("warmed [%p, +%zu): %s in %.3f s", (void*)w->addr, w->len,
                   stopped ? "stopped" : "every page written",
                   (double)(hixl_now_ns() - start) / 1e9);
    hixl_warm_settle(w);
}

static void hixl_warm_drop(hixl_bg_item_t *item)
{
    hixl_warm_settle((hixl_warm_t*)item);
}

hixl_warm_t *hixl_warm_later(hixl_engine_t *engine, void *addr, size_t len)
{
    struct hixl_warming *g = engine->warming;
    hixl_warm_t *w;

    if ((g == NULL) || (hixl_bg_queue(engine) != 0) ||
        ((w = calloc(1, sizeof(*w))) == NULL)) {
        return NULL;   /* an optimisation only */
    }
    w->bg.work.run = hixl_warm_work;
    w->bg.drop     = hixl_warm_drop;
    w->engine      = engine;
    w->addr        = addr;
    w->len         = len;
    atomic_init(&w->refs, 2);   /* the region's and the queue's */
    hixl_pending_add(g);
    if (hixl_workq_post(engine->prefaulter, &w->bg.work) != 0) {
        hixl_warm_settle(w);
        hixl_warm_release(w);
        return NULL;
    }
    return w;
}

void hixl_warm_cancel(hixl_warm_t *w)
{
    struct hixl_warming *g;

    if (w == NULL) {
        return;
    }
    g = w->engine->warming;
    pthread_mutex_lock(&g->lock);   /* waits out a chunk being written */
    w->cancelled = 1;
    pthread_mutex_unlock(&g->lock);
    hixl_warm_release(w);
}

hixl_status_t hixl_mem_warm_wait(hixl_engine_t *engine, int32_t timeout_ms)
{
    uint64_t deadline = hixl_deadline_ns(timeout_ms);
    struct hixl_warming *g;
    struct timespec ts;
    unsigned pending;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if (timeout_ms < -1) {
        return hixl_error(HIXL_PARAM_INVALID, "timeout %d ms: give -1 "
                          "(no limit) or a non-negative number", timeout_ms);
    }
    g = engine->warming;
    pthread_mutex_lock(&g->lock);
    while ((g->pending > 0) && (hixl_now_ns() < deadline)) {
        hixl_timespec_at(&ts, (deadline == UINT64_MAX) ?
                         hixl_now_ns() + HIXL_NS_PER_S : deadline);
        pthread_cond_timedwait(&g->cond, &g->lock, &ts);
    }
    pending = g->pending;
    pthread_mutex_unlock(&g->lock);
    if (pending > 0) {
        return hixl_error(HIXL_TIMEOUT, "%u allocation(s) or peer region(s) "
                          "still being warmed or pre-faulted after %d ms",
                          pending, timeout_ms);
    }
    return HIXL_SUCCESS;
}

/* ---- set-up ------------------------------------------------------------------ */

hixl_status_t hixl_prefault_init(hixl_engine_t *engine)
{
    engine->warming = calloc(1, sizeof(*engine->warming));
    if (engine->warming == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    pthread_mutex_init(&engine->warming->lock, NULL);
    hixl_cond_init_monotonic(&engine->warming->cond);
    return HIXL_SUCCESS;
}

static void hixl_bg_drop(hixl_work_t *work)
{
    hixl_bg_item_t *item = (hixl_bg_item_t*)work;

    item->drop(item);
}

void hixl_prefault_stop(hixl_engine_t *engine)
{
    if (engine->warming != NULL) {
        pthread_mutex_lock(&engine->warming->lock);
        engine->warming->stopping = 1;   /* a warm running stops at once */
        pthread_mutex_unlock(&engine->warming->lock);
    }
    hixl_workq_free(engine->prefaulter, hixl_bg_drop);
    engine->prefaulter = NULL;
}

void hixl_prefault_cleanup(hixl_engine_t *engine)
{
    if (engine->warming == NULL) {
        return;
    }
    pthread_mutex_destroy(&engine->warming->lock);
    pthread_cond_destroy(&engine->warming->cond);
    free(engine->warming);
    engine->warming = NULL;
}
