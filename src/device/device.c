/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device memory, engine level: the plugin instances an engine opens, the
 * units of device work in flight, their progress and completion, and the
 * barriers that keep layer signals and revoke answers behind them.
 */
#include "config.h"
#include "device/device.h"
#include "device/device_mem.h"
#include "device/staging.h"
#include "core/engine.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HIXL_DEV_DRAIN_NS (10ull * 1000000000ull)

/* ---- set-up ------------------------------------------------------------- */

static void hixl_dev_open_plugins(hixl_engine_t *engine, hixl_dev_t *dev)
{
    const hixl_plugin_t *p;
    hixl_dev_plugin_t *dp;
    hixl_mem_params_t params;
    hixl_error_saved_t saved;
    char rt[512];
    size_t n = 0;

    for (p = hixl_plugins_first(); p != NULL; p = p->next) {
        n += (p->ops != NULL) &&
             hixl_plugin_enabled(engine->opts.plugins, p->name);
    }
    if (n == 0) {
        return;
    }
    dev->plugins = calloc(n, sizeof(*dev->plugins));
    if (dev->plugins == NULL) {
        hixl_log_warn("out of memory for memory-type plugins: device memory "
                      "is unsupported on this engine");
        return;
    }
    for (p = hixl_plugins_first(); p != NULL; p = p->next) {
        if ((p->ops == NULL) ||
            !hixl_plugin_enabled(engine->opts.plugins, p->name)) {
            continue;
        }
        dp         = &dev->plugins[dev->nplugins++];
        dp->plugin = p;
        dp->ops    = p->ops;
        memset(&params, 0, sizeof(params));
        params.host    = &hixl_mem_host;
        params.runtime = hixl_plugin_opt_lookup(engine->opts.plugin_runtime,
                                                p->name, rt, sizeof(rt));
        /* an engine without the plugin is still a success */
        hixl_error_save(&saved);
        if (p->ops->open(&params, &dp->ctx) != HIXL_SUCCESS) {
            dp->ctx = NULL;
            snprintf(dp->why, sizeof(dp->why), "%s", hixl_error_message());
            hixl_log_info("memory-type plugin %s unavailable: %s", p->name,
                          dp->why);
        }
        hixl_error_restore(&saved);
    }
}

hixl_status_t hixl_dev_init(hixl_engine_t *engine)
{
    pthread_mutexattr_t attr;
    hixl_status_t status;
    hixl_dev_t *dev;

    dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&dev->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_init(&dev->barrier_lock, NULL);
    atomic_init(&dev->units_live, 0);
    atomic_init(&dev->barriers_live, 0);
    atomic_init(&dev->seq, 0);
    engine->dev      = dev;
    engine->remote_dev_put = hixl_dev_remote_put;
    hixl_dev_local_engine(engine, 1);
    status = hixl_progress_add(engine, hixl_dev_progress);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (strcmp(engine->opts.plugins, "none")) {
        hixl_plugins_scan(engine->opts.plugin_dir,
                          engine->opts.plugin_install_dir);
        hixl_dev_open_plugins(engine, dev);
    }
    return HIXL_SUCCESS;
}

/* ---- units -------------------------------------------------------------- */

hixl_dev_unit_t *hixl_dev_unit_new(hixl_engine_t *engine, hixl_peer_t *peer,
                                   hixl_request_t *req)
{
    hixl_dev_t *dev = engine->dev;
    hixl_dev_unit_t *unit;

    unit = calloc(1, sizeof(*unit));
    if (unit == NULL) {
        return NULL;
    }
    unit->seq  = atomic_fetch_add(&dev->seq, 1) + 1;
    unit->req  = req;
    unit->peer = peer;
    hixl_peer_retain(peer);
    atomic_fetch_add(&req->pending, 1);
    atomic_fetch_add(&req->data_pending, 1);
    if (dev->units_tail != NULL) {
        dev->units_tail->next = unit;
    } else {
        dev->units = unit;
    }
    dev->units_tail = unit;
    atomic_fetch_add(&dev->units_live, 1);
    return unit;
}

/* Has every copy and staged chunk of the unit completed? */
static int hixl_dev_unit_poll(hixl_engine_t *engine, hixl_dev_unit_t *unit)
{
    hixl_dev_mark_t *m;
    hixl_status_t status;
    unsigned i;
    int done, busy = 0;

    if (!unit->submitted) {
        return 0;
    }
    for (i = 0; i < unit->nmarks; ++i) {
        m = &unit->marks[i];
        if (m->token == NULL) {
            continue;
        }
        done   = 0;
        status = m->dp->ops->test(m->dp->ctx, m->token, &done);
        if (status != HIXL_SUCCESS) {
            hixl_req_fail(unit->req, status, "device copy to %s failed: %s",
                          unit->peer->name, hixl_error_message());
            done = 1;
        }
        if (done) {
            m->token = NULL;
        } else {
            busy = 1;
        }
    }
    if ((unit->job != NULL) && !hixl_stage_job_poll(engine, unit->job)) {
        busy = 1;
    }
    return !busy;
}

/* The unit's data is where it belongs: let the request go on. */
/* Give back what a unit holds (its remote regions, its staging job, its
 * peer) and free it. */
static void hixl_dev_unit_free(hixl_engine_t *engine, hixl_dev_unit_t *unit)
{
    size_t i;

    for (i = 0; i < unit->num_remote_devs; ++i) {
        hixl_dev_remote_put(engine, unit->remote_devs[i]);
    }
    free(unit->remote_devs);
    if (unit->job != NULL) {
        hixl_stage_job_free(unit->job);
    }
    hixl_peer_release(unit->peer);
    free(unit);
}

static void hixl_dev_unit_finish(hixl_engine_t *engine, hixl_dev_unit_t *unit)
{
    hixl_assert(atomic_load(&engine->dev->units_live) >= 1);   /* counted */
    atomic_fetch_sub(&engine->dev->units_live, 1);
    hixl_req_data_done(unit->req);
    hixl_dev_unit_free(engine, unit);
}

static unsigned hixl_dev_units_progress(hixl_engine_t *engine)
{
    hixl_dev_t *dev = engine->dev;
    hixl_dev_unit_t **pp = &dev->units, *unit, *prev = NULL;
    unsigned n = 0;

    while ((unit = *pp) != NULL) {
        if (!hixl_dev_unit_poll(engine, unit)) {
            prev = unit;
            pp   = &unit->next;
            continue;
        }
        *pp = unit->next;
        if (dev->units_tail == unit) {
            dev->units_tail = prev;
        }
        hixl_dev_unit_finish(engine, unit);
        ++n;
    }
    return n;
}

/* ---- barriers ----------------------------------------------------------- */

uint64_t hixl_dev_seq(hixl_engine_t *engine)
{
    return (engine->dev != NULL) ? atomic_load(&engine->dev->seq) : 0;
}

void hixl_dev_barrier(hixl_engine_t *engine, hixl_peer_t *peer, uint64_t seq,
                      void (*fn)(void *arg), void *arg,
                      hixl_dev_barrier_t *b)
{
    hixl_dev_t *dev = engine->dev;

    if ((dev == NULL) || (atomic_load(&dev->units_live) == 0)) {
        fn(arg);   /* nothing of this engine's device work is in flight */
        return;
    }
    b->peer = peer;
    b->seq  = seq;
    b->fn   = fn;
    b->arg  = arg;
    atomic_fetch_add(&engine->progress.busy, 1);
    pthread_mutex_lock(&dev->barrier_lock);
    b->next       = dev->barriers;
    dev->barriers = b;
    atomic_fetch_add(&dev->barriers_live, 1);
    pthread_mutex_unlock(&dev->barrier_lock);
    hixl_progress_kick(engine);
}

/* Is a unit to peer with sequence <= seq still in flight (dev->lock)? */
static int hixl_dev_pending_before(hixl_dev_t *dev, hixl_peer_t *peer,
                                   uint64_t seq)
{
    hixl_dev_unit_t *unit;

    for (unit = dev->units; (unit != NULL) && (unit->seq <= seq);
         unit = unit->next) {
        if (unit->peer == peer) {
            return 1;
        }
    }
    return 0;
}

/* Unhook the barriers that may fire now (dev->lock held). */
static hixl_dev_barrier_t *hixl_dev_barriers_ready(hixl_dev_t *dev)
{
    hixl_dev_barrier_t **pp, *b, *ready = NULL;

    pthread_mutex_lock(&dev->barrier_lock);
    for (pp = &dev->barriers; (b = *pp) != NULL;) {
        if (hixl_dev_pending_before(dev, b->peer, b->seq)) {
            pp = &b->next;
            continue;
        }
        *pp     = b->next;
        b->next = ready;
        ready   = b;
        hixl_assert(atomic_load(&dev->barriers_live) >= 1);
        atomic_fetch_sub(&dev->barriers_live, 1);
    }
    pthread_mutex_unlock(&dev->barrier_lock);
    return ready;
}

static unsigned hixl_dev_barriers_fire(hixl_engine_t *engine,
                                       hixl_dev_barrier_t *b)
{
    hixl_dev_barrier_t *next;
    unsigned n = 0;

    for (; b != NULL; b = next) {
        next = b->next;   /* b lives in what fn frees */
        b->fn(b->arg);
        hixl_assert(atomic_load(&engine->progress.busy) >= 1);   /* its own */
        atomic_fetch_sub(&engine->progress.busy, 1);
        ++n;
    }
    return n;
}

/* ---- progress ----------------------------------------------------------- */

unsigned hixl_dev_progress(hixl_engine_t *engine)
{
    hixl_dev_t *dev = engine->dev;
    hixl_dev_barrier_t *ready;
    unsigned n;

    if ((dev == NULL) || ((atomic_load(&dev->units_live) == 0) &&
                          (atomic_load(&dev->barriers_live) == 0))) {
        return 0;
    }
    pthread_mutex_lock(&engine->lock);
    pthread_mutex_lock(&dev->lock);
    n     = hixl_stage_progress(engine);
    n    += hixl_dev_units_progress(engine);
    ready = hixl_dev_barriers_ready(dev);
    pthread_mutex_unlock(&dev->lock);
    pthread_mutex_unlock(&engine->lock);
    /* outside the locks: they send on control connections */
    return n + hixl_dev_barriers_fire(engine, ready);
}

/* ---- teardown ----------------------------------------------------------- */

void hixl_dev_drain(hixl_engine_t *engine)
{
    hixl_dev_t *dev = engine->dev;
    uint64_t deadline;

    if (dev == NULL) {
        return;
    }
    /* peers are closed by now: staged chunks fail fast, device copies
     * finish on their own; give them time, never forever */
    deadline = hixl_now_ns() + HIXL_DEV_DRAIN_NS;
    while (((atomic_load(&dev->units_live) != 0) ||
            (atomic_load(&dev->barriers_live) != 0)) &&
           (hixl_now_ns() < deadline)) {
        hixl_progress_ucx(engine);
        hixl_dev_progress(engine);
    }
    if (atomic_load(&dev->units_live) != 0) {
        hixl_log_warn("%u device transfer(s) still in flight at finalize",
                      atomic_load(&dev->units_live));
    }
}

void hixl_dev_cleanup(hixl_engine_t *engine)
{
    hixl_dev_t *dev = engine->dev;
    hixl_dev_unit_t *unit;
    size_t i;

    if (dev == NULL) {
        return;
    }
    hixl_dev_local_engine(engine, 0);
    /* units the drain could not finish: give back what they hold (their
     * requests are gone with the engine) */
    while ((unit = dev->units) != NULL) {
        dev->units = unit->next;
        hixl_dev_unit_free(engine, unit);
    }
    hixl_stage_cleanup(engine);
    /* barriers left (their waiters' records) die with the engine */
    dev->barriers = NULL;
    for (i = 0; i < dev->nplugins; ++i) {
        if (dev->plugins[i].ctx != NULL) {
            dev->plugins[i].ops->close(dev->plugins[i].ctx);
        }
    }
    free(dev->plugins);
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->barrier_lock);
    free(dev);
    engine->dev = NULL;
}
