/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine life cycle: hixl_initialize / hixl_finalize, composing the layers
 * (core, then ctrl, device and the operations on top) in one place.
 */
#include "config.h"
#include "core/engine.h"
#include "core/worker/ucx_settings.h"
#include "ctrl/ctrl.h"
#include "device/device.h"
#include "ops/blocks.h"
#include "ops/connect_async.h"
#include "ops/copier.h"
#include "ops/layer.h"
#include "ops/mem_prefault.h"
#include "ops/memory.h"
#include "ops/metrics.h"
#include "ops/notify.h"
#include "ops/transfer.h"
#include "util/log.h"

#include <stdio.h>

/* Release everything; safe on a partly initialized engine.  The order is
 * what the layers need of each other: nothing new arrives (listening
 * stops), what is in flight lands or is failed with its peer, the progress
 * thread stops, device work ends, UCX goes, then every layer's state. */
static void hixl_engine_destroy(hixl_engine_t *engine)
{
    hixl_metrics_http_stop(engine);   /* no request while the engine goes */
    hixl_connect_async_cleanup(engine);
    hixl_prefault_stop(engine);   /* before peers' mappings go */
    hixl_ctrl_stop_listening(engine);
    hixl_engine_drain(engine);
    hixl_progress_stop(engine);
    pthread_mutex_lock(&engine->lock);
    hixl_engine_close_peers(engine);
    pthread_mutex_unlock(&engine->lock);
    hixl_copier_stop(engine);   /* after the drain, which may wait for it */
    /* device copies and staged chunks in flight end (or fail: their peers
     * are closed) while the worker still runs their UCX parts */
    hixl_dev_drain(engine);
    hixl_engine_destroy_worker(engine);
    hixl_memory_cleanup(engine);
    hixl_prefault_cleanup(engine);   /* after the regions it warmed */
    hixl_dev_cleanup(engine);   /* after the regions its plugins export */
    hixl_notify_cleanup(engine);
    hixl_layer_cleanup(engine);
    hixl_transfer_cleanup(engine);
    hixl_blocks_cleanup(engine);
    hixl_ctrl_cleanup(engine);
    hixl_engine_free(engine);
}

static hixl_status_t hixl_engine_setup(hixl_engine_t *engine)
{
    hixl_status_t status;

    status = hixl_ctrl_init(engine);
    if (status == HIXL_SUCCESS) {
        status = hixl_dev_init(engine);   /* memory-type plugins */
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_prefault_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_memory_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_notify_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_layer_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_transfer_init(engine);
    }
    if ((status == HIXL_SUCCESS) && engine->opts.progress_thread) {
        status = hixl_progress_start(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_metrics_http_start(engine);
    }
    return status;
}

hixl_status_t hixl_initialize(const char *local_engine,
                              const hixl_option_t *options, size_t num_options,
                              hixl_engine_t **engine_p)
{
    hixl_engine_t *engine;
    hixl_status_t status;
    char reason[512];

    if (engine_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine_p is NULL");
    }
    status = hixl_engine_create(local_engine, options, num_options, &engine);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_engine_setup(engine);
    if (status != HIXL_SUCCESS) {
        /* teardown may log or fail quietly; keep the message that matters */
        snprintf(reason, sizeof(reason), "%s", hixl_error_message());
        hixl_engine_destroy(engine);
        return hixl_error(status, "%s", reason);
    }
    hixl_log_info("engine %s initialized (%s, progress thread %s)",
                  engine->name.canon, engine->listening ? "listening" :
                  "client-only", engine->progress.running ? "on" : "off");
    *engine_p = engine;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_finalize(hixl_engine_t *engine)
{
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    /* blocking waits of other threads end (FAILED) and leave first */
    hixl_events_shutdown(engine);
    hixl_engine_destroy(engine);
    return HIXL_SUCCESS;
}

const char *hixl_engine_name(const hixl_engine_t *engine)
{
    return (engine != NULL) ? engine->name.canon : "";
}

unsigned hixl_engine_progress(hixl_engine_t *engine)
{
    return (engine != NULL) ? hixl_progress_pass(engine, HIXL_PROGRESS_POLL_DATA) : 0;
}

size_t hixl_ucx_workarounds(hixl_ucx_workaround_t *out, size_t max)
{
    return hixl_ucx_workarounds_list(out, (out != NULL) ? max : 0);
}

hixl_status_t hixl_get_capability(int32_t feature, int32_t *value_p)
{
    if (value_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "value_p is NULL");
    }
    if (feature < 0) {
        return hixl_error(HIXL_PARAM_INVALID, "feature %d is negative",
                          (int)feature);
    }
    *value_p = (feature == HIXL_FEATURE_AUTO_CONNECT) ||
               (feature == HIXL_FEATURE_CLIENT_SERVER_COMM);
    return HIXL_SUCCESS;
}
