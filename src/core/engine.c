/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's core: identity, options, UCX context and worker, and the
 * core steps of finalize.
 */
#include "config.h"
#include "core/engine.h"
#include "core/am/am.h"
#include "core/xfer/am_data.h"
#include "core/worker/ucx_settings.h"
#include "wire/ctrl_conn.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long finalize progresses for callbacks still owed. */
#define HIXL_ENGINE_SETTLE_MS 1000

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

static hixl_status_t hixl_engine_worker(hixl_engine_t *engine,
                                        ucp_worker_h *worker_p)
{
    ucp_worker_params_t wparams;
    ucp_worker_attr_t wattr;
    ucs_status_t ustatus;

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_MULTI;
    ustatus = ucp_worker_create(engine->ucp_context, &wparams, worker_p);
    if (ustatus != UCS_OK) {
        *worker_p = NULL;
        return hixl_error(HIXL_FAILED, "ucp_worker_create: %s",
                          ucs_status_string(ustatus));
    }
    memset(&wattr, 0, sizeof(wattr));
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
    ucp_worker_query(*worker_p, &wattr);
    if (wattr.thread_mode != UCS_THREAD_MODE_MULTI) {
        return hixl_error(HIXL_UNSUPPORTED, "this UCX gives no multi-thread "
                          "worker (build UCX with --enable-mt)");
    }
    return HIXL_SUCCESS;
}

/*
 * Settings of the library's own UCX context (never process-wide ones); a
 * UCX without a key keeps its default.
 *
 * MM_ERROR_HANDLING: shared memory supports UCX's PEER error mode, so that
 * endpoints to peers on this host can be force-closed (UCX 1.13 refuses
 * that in NONE mode, leaving the endpoint and its operations open) and a
 * dead peer is reported.
 *
 * ADAPTIVE_PROGRESS off (unless UCX_ADAPTIVE_PROGRESS says otherwise):
 * UCX stops progressing a transport once its last endpoint closed and
 * relies on its async thread to wake the worker for that transport's next
 * event; with UCX 1.13.1, the tcp socket of a connection closed from both
 * sides then stayed in CLOSE_WAIT until some other traffic woke the
 * transport (one descriptor per connection left on a quiet listener), and
 * a progress thread asleep in its event fd may miss traffic the same way.
 * Progressing every transport costs a poll of each per progress call.
 *
 * UCX's keepalive keeps its default round (20 s): a peer on this host
 * that dies without closing its connection (SIGKILL) is found by it only,
 * on shared memory, and until then the listener's endpoint of it keeps the
 * peer's FIFO and receive segments mapped (three mappings, up to 4 MiB).
 * A round of 1 s released them within a second or two, but over tcp its
 * probes kept an endpoint of an ended incarnation connected once a
 * partition healed (it_mh_partition): the shorter round is
 * UCX_KEEPALIVE_INTERVAL=1s for deployments that lose many same-host
 * peers and have no partitions to heal.
 *
 * KEEPALIVE_NUM_EPS inf (unless UCX_KEEPALIVE_NUM_EPS is set): UCX checks
 * at most that many endpoints per round (128 by default), so a listener
 * that loses same-host peers without a goodbye faster than 128 a round
 * keeps a growing backlog of their endpoints and mappings, released only
 * once the deaths slow down.  Checking every endpoint each round bounds
 * what a dead peer holds to one round.
 *
 * TCP_TX_SEG_SIZE 64k (unless UCX_TCP_TX_SEG_SIZE or UCX_TCP_RX_SEG_SIZE
 * is set): the library's messages are sent by copy, never zero-copy
 * (core/am/am.c says why), and over tcp a copied message goes in
 * segments of this size; UCX's default, 8 KiB, halved tcp bandwidth
 * against 64 KiB.  64 KiB is also UCX's default receive segment, so a
 * peer with UCX's defaults (an older copy of this library included)
 * takes these segments.
 */
static void hixl_engine_ucx_config(hixl_engine_t *engine, ucp_config_t *config)
{
    char value[16];

    /* the workarounds' settings (core/worker/ucx_settings.h) */
    hixl_ucx_settings_apply(config);
    /* hixl's RDMA options keep their meaning through UCX's IB settings */
    if (engine->opts.rdma_traffic_class >= 0) {
        snprintf(value, sizeof(value), "%d", engine->opts.rdma_traffic_class);
        ucp_config_modify(config, "IB_TRAFFIC_CLASS", value);
    }
    if (engine->opts.rdma_service_level >= 0) {
        snprintf(value, sizeof(value), "%d", engine->opts.rdma_service_level);
        ucp_config_modify(config, "IB_SL", value);
    }
}

static hixl_status_t hixl_engine_ucx_init(hixl_engine_t *engine)
{
    ucp_config_t *config;
    ucp_params_t params;
    ucs_status_t ustatus;
    hixl_status_t status;

    ustatus = ucp_config_read(NULL, NULL, &config);
    if (ustatus != UCS_OK) {
        return hixl_error(HIXL_FAILED, "ucp_config_read: %s (check UCX_* "
                          "environment variables)", ucs_status_string(ustatus));
    }
    hixl_engine_ucx_config(engine, config);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME |
                        UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
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

    status = hixl_engine_worker(engine, &engine->ucp_worker);
    if ((status == HIXL_SUCCESS) && engine->listening) {
        status = hixl_engine_worker(engine, &engine->ucp_worker_in);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    ustatus = ucp_worker_get_address(engine->listening ?
                                     engine->ucp_worker_in :
                                     engine->ucp_worker, &engine->worker_addr,
                                     &engine->worker_addr_len);
    if (ustatus != UCS_OK) {
        engine->worker_addr = NULL;
        return hixl_error(HIXL_FAILED, "ucp_worker_get_address: %s",
                          ucs_status_string(ustatus));
    }
    return HIXL_SUCCESS;
}

/* The port first, UCX second: a restarted server asks for the port it had,
 * which a kernel-chosen port of its own UCX (a tcp interface's listener)
 * could otherwise have taken a moment earlier. */
static hixl_status_t hixl_engine_hold_name(hixl_engine_t *engine)
{
    hixl_status_t status;
    uint16_t port;

    status = hixl_sock_listen(&engine->name, &engine->name_fd, &port);
    if (status == HIXL_SUCCESS) {
        hixl_name_set_port(&engine->name, port);
    }
    return status;
}

static hixl_status_t hixl_engine_init(hixl_engine_t *engine,
                                      const char *local_engine,
                                      const hixl_option_t *options,
                                      size_t num_options)
{
    hixl_status_t status;

    status = hixl_opts_load(&engine->opts, options, num_options, NULL, NULL);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_log_level_hold(engine->opts.log_level);
    engine->log_held = 1;
    status = hixl_name_parse(local_engine, &engine->name);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    engine->listening = (engine->name.port != 0) ||
                        engine->opts.listen_ephemeral;
    if (engine->listening) {
        status = hixl_engine_hold_name(engine);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    status = hixl_req_pool_init(&engine->reqs, engine->opts.max_requests,
                                engine->serial);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_peers_init(engine);
    if (status == HIXL_SUCCESS) {
        status = hixl_engine_ucx_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_am_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_chan_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_inbound_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_ep_close_init(engine);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_am_data_init(engine);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    return hixl_progress_init(engine);
}

hixl_status_t hixl_engine_create(const char *local_engine,
                                 const hixl_option_t *options,
                                 size_t num_options, hixl_engine_t **engine_p)
{
    hixl_engine_t *engine;
    hixl_status_t status;
    char reason[512];

    engine = calloc(1, sizeof(*engine));
    if (engine == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    engine->name_fd                = -1;
    engine->progress.epfd          = -1;
    engine->progress.worker_efd    = -1;
    engine->progress.worker_efd_in = -1;
    engine->serial              = hixl_engine_next_serial();
    engine->metrics             = hixl_metrics_create();
    if (engine->metrics == NULL) {
        free(engine);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    hixl_engine_host_id(engine);
    pthread_mutex_init(&engine->lock, NULL);
    hixl_cond_init_monotonic(&engine->cond);
    pthread_rwlock_init(&engine->serve_lock, NULL);
    pthread_mutex_init(&engine->ep_closer.lock, NULL);
    hixl_events_init(&engine->events);

    status = hixl_engine_init(engine, local_engine, options, num_options);
    if (status != HIXL_SUCCESS) {
        /* teardown may log or fail quietly; keep the message that matters */
        snprintf(reason, sizeof(reason), "%s", hixl_error_message());
        hixl_engine_destroy_worker(engine);
        hixl_engine_free(engine);
        return hixl_error(status, "%s", reason);
    }
    *engine_p = engine;
    return HIXL_SUCCESS;
}

/* ---- flush waits ------------------------------------------------------------ */

static void hixl_flush_wait_cb(hixl_ep_flush_waiter_t *w, ucs_status_t status)
{
    hixl_flush_wait_t *fw = (hixl_flush_wait_t*)w;

    fw->status = status;
    atomic_store(&fw->done, 1);
    /* without engine->lock (it may be held by the caller of add/close):
     * the waiter also wakes every millisecond (hixl_engine_wait) */
    pthread_cond_broadcast(&fw->engine->cond);
}

void hixl_flush_wait_start(hixl_engine_t *engine, hixl_peer_t *peer,
                           hixl_flush_wait_t *fw)
{
    memset(fw, 0, sizeof(*fw));
    fw->w.cb   = hixl_flush_wait_cb;
    fw->engine = engine;
    fw->status = UCS_ERR_CANCELED;
    if (peer->ep_flush == NULL) {
        atomic_store(&fw->done, 1);
        return;
    }
    hixl_ep_flush_add(peer->ep_flush, &fw->w, 0);
    hixl_progress_kick(engine);
}

int hixl_flush_wait_done(void *arg)
{
    return atomic_load(&((hixl_flush_wait_t*)arg)->done);
}

/* ---- finalize ------------------------------------------------------------------ */

typedef struct hixl_drain {
    hixl_flush_wait_t *waits;
    hixl_peer_t      **peers;   /* waits[i]'s, referenced */
    size_t             count;
} hixl_drain_t;

static int hixl_drain_done(void *arg)
{
    hixl_drain_t *d = arg;
    size_t i;

    for (i = 0; i < d->count; ++i) {
        if (!hixl_flush_wait_done(&d->waits[i])) {
            return 0;
        }
    }
    return 1;
}

static int hixl_drain_closed(void *arg)
{
    hixl_drain_t *d = arg;
    size_t i;

    for (i = 0; i < d->count; ++i) {
        if (!hixl_ep_close_done(d->peers[i]->engine, d->peers[i]->close_id)) {
            return 0;
        }
    }
    return 1;
}

/*
 * A connection whose flush completed with nothing in flight ends as a
 * disconnect would: the listener is asked to close its end of it
 * (core/peer/ep_close.h).  A finalize alone is the usual way to end an engine,
 * and its process often lives on (an engine per job, a restart after an
 * error): nothing else tells a listener on the same host that the
 * connector's worker went, since UCX's keepalive there checks only that
 * the process lives.
 */
static void hixl_drain_mark_orderly(hixl_drain_t *d)
{
    hixl_peer_t *peer;
    size_t i;

    for (i = 0; i < d->count; ++i) {
        peer = d->peers[i];
        if (hixl_flush_wait_done(&d->waits[i]) &&
            (d->waits[i].status == UCS_OK) &&
            (peer->state == HIXL_PEER_READY) &&
            (atomic_load(&peer->inflight) == 0)) {
            peer->end = hixl_peer_end_by_us(peer);
        }
    }
}

void hixl_engine_drain(hixl_engine_t *engine)
{
    hixl_drain_t d = {NULL, NULL, 0};
    hixl_peer_t *peer;
    uint64_t deadline;
    size_t n, i;

    if ((engine->ucp_worker == NULL) || (engine->opts.finalize_timeout_ms == 0)) {
        return;
    }
    deadline = hixl_deadline_ns(engine->opts.finalize_timeout_ms);
    pthread_mutex_lock(&engine->lock);
    n       = engine->peers.count ? engine->peers.count : 1;
    d.waits = calloc(n, sizeof(*d.waits));
    d.peers = calloc(n, sizeof(*d.peers));
    for (peer = engine->peers.head;
         (peer != NULL) && (d.waits != NULL) && (d.peers != NULL);
         peer = peer->next) {
        if ((peer->ep_flush != NULL) && (peer->state == HIXL_PEER_READY)) {
            hixl_peer_retain(peer);
            d.peers[d.count] = peer;
            hixl_flush_wait_start(engine, peer, &d.waits[d.count++]);
        }
    }
    if (d.count > 0) {
        hixl_engine_wait_busy(engine, deadline, hixl_drain_done, &d);
    }
    hixl_drain_mark_orderly(&d);
    /* waits still open are settled by closing their peers, here, before
     * the records go */
    hixl_engine_close_peers(engine);
    if (d.count > 0) {   /* the listeners' answers to UNBIND */
        hixl_engine_wait_busy(engine, deadline, hixl_drain_closed, &d);
    }
    for (i = 0; i < d.count; ++i) {
        hixl_peer_release(d.peers[i]);
    }
    pthread_mutex_unlock(&engine->lock);
    free(d.waits);
    free(d.peers);
}

void hixl_engine_close_peers(hixl_engine_t *engine)
{
    hixl_peer_t *peer;

    while ((peer = engine->peers.head) != NULL) {
        hixl_peer_close_why(peer, HIXL_STATS_CLOSED_DISCONNECT);
        hixl_peer_close(engine, peer, HIXL_FAILED, "engine %s is finalizing",
                        engine->name.canon);
    }
}

void hixl_engine_destroy_worker(hixl_engine_t *engine)
{
    ucp_worker_h addr_worker = (engine->ucp_worker_in != NULL) ?
                               engine->ucp_worker_in : engine->ucp_worker;

    /* UCX completes what the forced closes cancelled from progress, and
     * what was still queued on an endpoint in wire-up only when the worker
     * is destroyed: requests, peers and the engine's locks must outlive
     * ucp_worker_destroy, so it comes first. */
    uint64_t deadline = hixl_deadline_ns(HIXL_ENGINE_SETTLE_MS);

    /* Operations of force-closed endpoints are called back (CANCELED)
     * when UCX's discard of their lanes completes in a later progress call:
     * give that a moment, so that no request of ours is left to UCX's
     * worker destroy (which would only warn that it was never returned). */
    while ((engine->ucp_worker != NULL) && (hixl_am_live(engine) > 0) &&
           (hixl_now_ns() < deadline)) {
        hixl_progress_ucx(engine);
    }
    if ((engine->worker_addr != NULL) && (addr_worker != NULL)) {
        ucp_worker_release_address(addr_worker, engine->worker_addr);
        engine->worker_addr = NULL;
    }
    if (engine->ucp_worker_in != NULL) {
        while (ucp_worker_progress(engine->ucp_worker_in) != 0) {
        }
        ucp_worker_destroy(engine->ucp_worker_in);
        engine->ucp_worker_in = NULL;
    }
    if (engine->ucp_worker != NULL) {
        while (ucp_worker_progress(engine->ucp_worker) != 0) {
        }
        ucp_worker_destroy(engine->ucp_worker);
        engine->ucp_worker = NULL;
    }
    hixl_ep_close_cleanup(engine);
}

void hixl_engine_free(hixl_engine_t *engine)
{
    if (engine->name_fd >= 0) {   /* ctrl never took it over */
        close(engine->name_fd);
    }
    hixl_am_data_cleanup(engine);
    hixl_am_cleanup(engine);
    hixl_chan_table_cleanup(&engine->chans);
    hixl_inbound_cleanup(engine);
    pthread_rwlock_destroy(&engine->serve_lock);
    pthread_mutex_destroy(&engine->ep_closer.lock);
    if (engine->log_held) {
        hixl_log_level_drop(engine->opts.log_level);
    }
    hixl_req_pool_cleanup(&engine->reqs);
    hixl_mem_table_cleanup(&engine->mem);
    hixl_events_cleanup(&engine->events);
    hixl_progress_cleanup(engine);
    hixl_peer_hooks_cleanup(engine);
    if (engine->ucp_context != NULL) {
        ucp_cleanup(engine->ucp_context);
    }
    pthread_mutex_destroy(&engine->lock);
    pthread_cond_destroy(&engine->cond);
    hixl_metrics_free(engine->metrics);
    free(engine);
}
