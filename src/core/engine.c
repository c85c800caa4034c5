/*
 * Engine life cycle: hixl_initialize / hixl_finalize.
 */
#include "config.h"
#include "core/peer.h"
#include "ctrl/peer_ended.h"
#include "util/clock.h"
#include "device/device.h"
#include "util/log.h"

#include <ucs/config/global_opts.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

/* Engine serials tag handles; 0 is never used so that no valid handle
 * carries an all-zero serial. */
static atomic_uint hixl_engine_serials = 0;

static uint16_t hixl_engine_next_serial(void)
{
    unsigned s;

    do {
        s = atomic_fetch_add(&hixl_engine_serials, 1) + 1;
    } while ((uint16_t)s == 0);
    return (uint16_t)s;
}

/* Identity of this host: the kernel's boot id, shared by every process (and
 * container) on one running kernel, which is what shared-memory transports
 * need; the host name where it cannot be read. */
static void hixl_engine_host_id(hixl_engine_t *engine)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t n = 0;

    if (f != NULL) {
        n = fread(engine->host_id, 1, sizeof(engine->host_id) - 1, f);
        fclose(f);
    }
    engine->host_id[n] = '\0';
    engine->host_id[strcspn(engine->host_id, "\n")] = '\0';
    if (engine->host_id[0] == '\0') {
        gethostname(engine->host_id, sizeof(engine->host_id) - 1);
    }
}

static void hixl_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

static hixl_status_t hixl_engine_ucx_init(hixl_engine_t *engine)
{
    ucp_worker_params_t wparams;
    ucp_worker_attr_t wattr;
    ucp_config_t *config;
    ucp_params_t params;
    ucs_status_t ustatus;
    char value[16];

    ustatus = ucp_config_read(NULL, NULL, &config);
    if (ustatus != UCS_OK) {
        return hixl_error(HIXL_FAILED, "ucp_config_read: %s (check UCX_* "
                          "environment variables)", ucs_status_string(ustatus));
    }
    /* hixl's RDMA options keep their meaning through UCX's IB settings */
    if (engine->opts.rdma_traffic_class >= 0) {
        snprintf(value, sizeof(value), "%d", engine->opts.rdma_traffic_class);
        ucp_config_modify(config, "IB_TRAFFIC_CLASS", value);
    }
    if (engine->opts.rdma_service_level >= 0) {
        snprintf(value, sizeof(value), "%d", engine->opts.rdma_service_level);
        ucp_config_modify(config, "IB_SL", value);
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    params.name       = "hixl";
    params.mt_workers_shared = 0;
    ustatus = ucp_init(&params, config, &engine->ucp_context);
    ucp_config_release(config);
    if (ustatus != UCS_OK) {
        engine->ucp_context = NULL;
        return hixl_error(HIXL_FAILED, "ucp_init: %s (check UCX_TLS and the "
                          "transports ucx_info -d lists)",
                          ucs_status_string(ustatus));
    }

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_MULTI;
    ustatus = ucp_worker_create(engine->ucp_context, &wparams,
                                &engine->ucp_worker);
    if (ustatus != UCS_OK) {
        engine->ucp_worker = NULL;
        return hixl_error(HIXL_FAILED, "ucp_worker_create: %s",
                          ucs_status_string(ustatus));
    }
    memset(&wattr, 0, sizeof(wattr));
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    ucp_worker_query(engine->ucp_worker, &wattr);
    if (wattr.thread_mode != UCS_THREAD_MODE_MULTI) {
        return hixl_error(HIXL_UNSUPPORTED, "this UCX gives no multi-thread "
                          "worker (build UCX with --enable-mt)");
    }
    ustatus = ucp_worker_get_address(engine->ucp_worker, &engine->worker_addr,
                                     &engine->worker_addr_len);
    if (ustatus != UCS_OK) {
        engine->worker_addr = NULL;
        return hixl_error(HIXL_FAILED, "ucp_worker_get_address: %s",
                          ucs_status_string(ustatus));
    }
    if (ucp_worker_get_efd(engine->ucp_worker, &engine->worker_efd) != UCS_OK) {
        engine->worker_efd = -1;   /* the progress thread will nap instead */
    }
    return HIXL_SUCCESS;
}

static hixl_status_t hixl_engine_poll_init(hixl_engine_t *engine)
{
    struct epoll_event ev;
    hixl_status_t status;
    uint16_t port;

    engine->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (engine->epfd < 0) {
        return hixl_error(HIXL_FAILED, "epoll_create1: %s", strerror(errno));
    }
    memset(&ev, 0, sizeof(ev));
    if (engine->worker_efd >= 0) {
        ev.events   = EPOLLIN;
        ev.data.u64 = HIXL_POLL_DATA(HIXL_POLL_WORKER, 0);
        epoll_ctl(engine->epfd, EPOLL_CTL_ADD, engine->worker_efd, &ev);
    }
    if (!engine->listening) {
        return HIXL_SUCCESS;
    }
    status = ctrl_sock_listen(&engine->name, &engine->listen_fd, &port);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_name_set_port(&engine->name, port);
    ev.events   = EPOLLIN;
    ev.data.u64 = HIXL_POLL_DATA(HIXL_POLL_LISTEN, 0);
    if (epoll_ctl(engine->epfd, EPOLL_CTL_ADD, engine->listen_fd, &ev) != 0) {
        return hixl_error(HIXL_FAILED, "epoll_ctl: %s", strerror(errno));
    }
    return HIXL_SUCCESS;
}

/* Operations cancelled by forced closes sit in UCX 1.13's endpoint queues
 * until here, and UCX lists each one as a warning ("N pending operations
 * were not flushed", "object ... was not returned to mpool").  Those are the
 * transfers this engine already reported FAILED; keep UCX to errors while
 * it drops them, and say once what happened. */
static void hixl_engine_worker_destroy(hixl_engine_t *engine)
{
    ucs_log_level_t saved = ucs_global_opts.log_component.log_level;

    if (atomic_load(&engine->cancelled) && (saved == UCS_LOG_LEVEL_WARN)) {
        hixl_log_info("dropping %u cancelled transfer(s) held by UCX",
                      atomic_load(&engine->cancelled));
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_ERROR;
    }
    ucp_worker_destroy(engine->ucp_worker);
    ucs_global_opts.log_component.log_level = saved;
}

typedef struct hixl_drain {
    ucs_status_ptr_t *reqs;
    size_t            count;
} hixl_drain_t;

static int hixl_drain_done(void *arg)
{
    hixl_drain_t *d = arg;
    size_t i;

    for (i = 0; i < d->count; ++i) {
        if (ucp_request_check_status(d->reqs[i]) == UCS_INPROGRESS) {
            return 0;
        }
    }
    return 1;
}

/* Let what is in flight land, within hixl.FinalizeTimeoutMs, before the
 * peers are closed: a forced close cancels transfers mid-way, and (UCX 1.13)
 * a target still answering a vanished initiator over tcp may abort. */
static void hixl_engine_drain(hixl_engine_t *engine)
{
    hixl_drain_t d = {NULL, 0};
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    hixl_peer_t *peer;
    size_t n = 0, i;

    if ((engine->ucp_worker == NULL) || (engine->opts.finalize_timeout_ms == 0)) {
        return;
    }
    pthread_mutex_lock(&engine->lock);
    for (peer = engine->peers; peer != NULL; peer = peer->next) {
        n += (peer->ep != NULL);
    }
    d.reqs = calloc(n ? n : 1, sizeof(*d.reqs));
    memset(&param, 0, sizeof(param));
    for (peer = engine->peers; (peer != NULL) && (d.reqs != NULL);
         peer = peer->next) {
        if ((peer->ep != NULL) && (peer->state == HIXL_PEER_READY)) {
            sp = ucp_ep_flush_nbx(peer->ep, &param);
            if (UCS_PTR_IS_PTR(sp)) {
                d.reqs[d.count++] = sp;
            }
        }
    }
    if (d.count > 0) {
        atomic_fetch_add(&engine->busy, 1);
        hixl_progress_kick(engine);
        hixl_engine_wait(engine,
                         hixl_deadline_ns(engine->opts.finalize_timeout_ms),
                         hixl_drain_done, &d);
        atomic_fetch_sub(&engine->busy, 1);
    }
    for (i = 0; i < d.count; ++i) {
        ucp_request_free(d.reqs[i]);
    }
    pthread_mutex_unlock(&engine->lock);
    free(d.reqs);
}

/* Release everything; safe on a partly initialized engine. */
static void hixl_engine_destroy(hixl_engine_t *engine)
{
    hixl_peer_t *peer;

    hixl_engine_drain(engine);
    hixl_progress_stop(engine);
    if (engine->listen_fd >= 0) {
        close(engine->listen_fd);
    }

    pthread_mutex_lock(&engine->lock);
    while ((peer = engine->peers) != NULL) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "engine %s is finalizing",
                        engine->name.canon);
    }
    pthread_mutex_unlock(&engine->lock);
    /* device copies and staged chunks in flight end (or fail: their peers
     * are closed) while the worker still runs their UCX parts */
    hixl_dev_drain(engine);

    /* UCX completes what the forced closes cancelled from progress, and
     * what was still queued on an endpoint in wire-up only when the worker
     * is destroyed: requests, peers and the engine's locks must outlive
     * ucp_worker_destroy, so it comes first. */
    if (engine->ucp_worker != NULL) {
        while (ucp_worker_progress(engine->ucp_worker) != 0) {
        }
        if (engine->worker_addr != NULL) {
            ucp_worker_release_address(engine->ucp_worker, engine->worker_addr);
        }
        hixl_engine_worker_destroy(engine);
    }
    hixl_ep_ctx_cleanup(engine);
    hixl_xfer_abandon_all(engine);
    hixl_mem_cleanup(engine);
    hixl_dev_cleanup(engine);   /* after the regions its plugins export */
    hixl_notify_queue_cleanup(engine);
    hixl_layer_sources_cleanup(engine);
    hixl_ended_cleanup(engine);
    hixl_req_pool_cleanup(&engine->reqs);
    if (engine->epfd >= 0) {
        close(engine->epfd);
    }
    if (engine->ucp_context != NULL) {
        ucp_cleanup(engine->ucp_context);
    }
    pthread_mutex_destroy(&engine->lock);
    pthread_cond_destroy(&engine->cond);
    pthread_mutex_destroy(&engine->done_lock);
    pthread_cond_destroy(&engine->done_cond);
    pthread_mutex_destroy(&engine->poll_lock);
    free(engine);
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
    *engine_p = NULL;
    engine = calloc(1, sizeof(*engine));
    if (engine == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    engine->listen_fd  = -1;
    engine->epfd       = -1;
    engine->worker_efd = -1;
    engine->serial     = hixl_engine_next_serial();
    hixl_engine_host_id(engine);
    if (getrandom(&engine->instance, sizeof(engine->instance), 0) !=
        sizeof(engine->instance)) {
        engine->instance = hixl_now_ns() ^ ((uint64_t)getpid() << 32);
    }
    pthread_mutex_init(&engine->lock, NULL);
    hixl_cond_init_monotonic(&engine->cond);
    pthread_mutex_init(&engine->done_lock, NULL);
    hixl_cond_init_monotonic(&engine->done_cond);
    pthread_mutex_init(&engine->poll_lock, NULL);

    status = hixl_opts_load(&engine->opts, options, num_options, NULL, NULL);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    hixl_log_level = engine->opts.log_level;
    status = hixl_name_parse(local_engine, &engine->name);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    engine->listening = (engine->name.port != 0) ||
                        engine->opts.listen_ephemeral;
    status = hixl_req_pool_init(&engine->reqs, engine->opts.max_requests);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    status = hixl_engine_ucx_init(engine);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    status = hixl_dev_init(engine);   /* memory-type plugins */
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    status = hixl_engine_poll_init(engine);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    if (engine->opts.progress_thread) {
        status = hixl_progress_start(engine);
        if (status != HIXL_SUCCESS) {
            goto err;
        }
    }
    hixl_log_info("engine %s initialized (%s, progress thread %s)",
                  engine->name.canon, engine->listening ? "listening" :
                  "client-only", engine->progress_running ? "on" : "off");
    *engine_p = engine;
    return HIXL_SUCCESS;

err:
    /* destroy may log or fail quietly; keep the message that matters */
    snprintf(reason, sizeof(reason), "%s", hixl_error_message());
    hixl_engine_destroy(engine);
    return hixl_error(status, "%s", reason);
}

hixl_status_t hixl_finalize(hixl_engine_t *engine)
{
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    hixl_engine_destroy(engine);
    return HIXL_SUCCESS;
}

const char *hixl_engine_name(const hixl_engine_t *engine)
{
    return (engine != NULL) ? engine->name.canon : "";
}
