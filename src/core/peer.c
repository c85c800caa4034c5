/*
 * Peer table and per-peer remote region tables.
 */
#include "config.h"
#include "core/peer.h"
#include "ctrl/peer_ended.h"
#include "core/ep_flush.h"
#include "device/device.h"
#include "util/log.h"

#include <ucs/config/global_opts.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hixl_peer_t *hixl_peer_create(hixl_engine_t *engine, int fd, int outgoing)
{
    hixl_peer_t *peer = calloc(1, sizeof(*peer));

    if (peer == NULL) {
        return NULL;
    }
    peer->engine   = engine;
    peer->outgoing = outgoing;
    peer->state    = HIXL_PEER_HANDSHAKE;
    peer->serial   = ++engine->next_peer_serial;
    atomic_init(&peer->refcount, 1);
    atomic_init(&peer->inflight, 0);
    ctrl_conn_init(&peer->conn, fd);
    pthread_mutex_init(&peer->lf_lock, NULL);
    return peer;
}

hixl_status_t hixl_peer_add(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_status_t status;

    status = ctrl_conn_watch(&peer->conn, engine->epfd,
                             HIXL_POLL_DATA(HIXL_POLL_PEER, peer->serial));
    if (status != HIXL_SUCCESS) {
        return status;
    }
    peer->next    = engine->peers;
    engine->peers = peer;
    return HIXL_SUCCESS;
}

void hixl_peer_retain(hixl_peer_t *peer)
{
    atomic_fetch_add(&peer->refcount, 1);
}

static void hixl_rregion_free(hixl_peer_t *peer, hixl_rregion_t *rr)
{
    if (rr->rkey != NULL) {
        ucp_rkey_destroy(rr->rkey);
    }
    if (rr->dev != NULL) {
        hixl_dev_rdev_put(peer->engine, rr->dev);
    }
    free(rr);
}

static void hixl_peer_free_rkeys(hixl_peer_t *peer)
{
    hixl_rregion_t *rr;
    size_t i;

    for (i = 0; i < peer->rtab.count; ++i) {
        rr = (hixl_rregion_t*)peer->rtab.items[i];
        hixl_rregion_free(peer, rr);
    }
    hixl_range_index_cleanup(&peer->rtab);
    peer->rtab_count = 0;
    while (peer->dead != NULL) {
        rr         = peer->dead;
        peer->dead = rr->next_dead;
        hixl_rregion_free(peer, rr);
    }
}

void hixl_peer_release(hixl_peer_t *peer)
{
    if (atomic_fetch_sub(&peer->refcount, 1) != 1) {
        return;
    }
    /* closed before its last reference went: nothing of UCX is left */
    ctrl_conn_cleanup(&peer->conn);
    free(peer->sent_gen);
    pthread_mutex_destroy(&peer->lf_lock);
    free(peer);
}

static void hixl_peer_unlink(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_peer_t **pp;

    for (pp = &engine->peers; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == peer) {
            *pp = peer->next;
            return;
        }
    }
}

void hixl_peer_close(hixl_engine_t *engine, hixl_peer_t *peer,
                     hixl_status_t status, const char *fmt, ...)
{
    hixl_notify_waiter_t *w;
    ctrl_msg_t bye;
    ucs_status_ptr_t sp;
    ucp_request_param_t param;
    va_list ap;

    if (peer->state == HIXL_PEER_CLOSED) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(peer->close_reason, sizeof(peer->close_reason), fmt, ap);
    va_end(ap);
    peer->close_status = status;
    peer->state        = HIXL_PEER_CLOSED;
    hixl_ended_record(engine, peer, peer->app_owned);
    hixl_log_info("peer %s (%s): closed: %s", peer->name[0] ? peer->name :
                  "(handshake)", peer->outgoing ? "outgoing" : "accepted",
                  peer->close_reason);

    /* Tell the peer why, best effort: the socket closes right after. */
    memset(&bye, 0, sizeof(bye));
    bye.type            = CTRL_BYE;
    bye.u.bye.status    = (uint32_t)status;
    bye.u.bye.reason    = ctrl_bytes(peer->close_reason,
                                     strlen(peer->close_reason));
    ctrl_conn_send(&peer->conn, &bye);
    ctrl_conn_close(&peer->conn);

    /* Forced close cancels what is in flight.  UCX 1.13 may call the
     * cancelled flushes back only when the worker is destroyed, so the
     * requests and layer flushes to this peer are settled below instead
     * (hixl_xfer_peer_closed, hixl_layer_peer_closed).  rkeys go after the
     * endpoint, so that no operation still queued on it can use one. */
    if (peer->ep != NULL) {
        hixl_fg_close(peer->ep_ctx);   /* no flush may be issued on it now */
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        sp = ucp_ep_close_nbx(peer->ep, &param);
        if (UCS_PTR_IS_PTR(sp)) {
            ucp_request_free(sp);
        }
        peer->ep = NULL;
    }
    hixl_peer_free_rkeys(peer);

    for (w = peer->notify_waiters; w != NULL; w = w->next) {
        w->done   = 1;
        w->status = HIXL_NOTIFY_FAILED;
    }
    peer->notify_waiters = NULL;
    hixl_xfer_peer_closed(engine, peer);
    hixl_layer_peer_closed(engine, peer);

    hixl_peer_unlink(engine, peer);
    pthread_cond_broadcast(&engine->cond);
    hixl_peer_release(peer);
}

void hixl_peer_reap_errors(hixl_engine_t *engine)
{
    hixl_peer_t *peer, *next;
    int err;

    for (peer = engine->peers; peer != NULL; peer = next) {
        next = peer->next;
        err  = (peer->ep_ctx != NULL) ? atomic_load(&peer->ep_ctx->status) : 0;
        if (err != 0) {
            hixl_log_warn("peer %s: UCX endpoint error: %s", peer->name,
                          ucs_status_string(err));
            hixl_peer_close(engine, peer, HIXL_FAILED, "transport error "
                            "from UCX: %s", ucs_status_string(err));
        }
    }
}

hixl_peer_t *hixl_peer_find(hixl_engine_t *engine, const char *remote,
                            int outgoing)
{
    hixl_peer_t *peer, *found = NULL;
    hixl_name_t canon;
    const char *name;
    int pass;

    hixl_name_for_each_spelling(name, remote, &canon, pass) {
        for (peer = engine->peers; peer != NULL; peer = peer->next) {
            if ((peer->state == HIXL_PEER_CLOSED) ||
                ((outgoing >= 0) && (peer->outgoing != outgoing))) {
                continue;
            }
            if (strcmp(peer->alias, name) && strcmp(peer->name, name)) {
                continue;
            }
            if (peer->outgoing || (outgoing == 0)) {
                return peer;
            }
            found = peer;   /* accepted; keep looking for an outgoing one */
        }
        if (found != NULL) {
            return found;
        }
    }
    return NULL;
}

hixl_status_t hixl_peer_region_add(hixl_peer_t *peer, const ctrl_msg_t *msg,
                                   uint32_t max_regions)
{
    uint64_t addr = msg->u.mem_add.addr, len = msg->u.mem_add.len;
    hixl_rregion_t *rr;
    hixl_status_t status;
    ucs_status_t ustatus;

    if (!peer->outgoing || (peer->ep == NULL)) {
        return hixl_error(HIXL_FAILED, "MEM_ADD on a connection it does not "
                          "belong to");
    }
    if ((len == 0) || (addr + len < addr)) {
        return hixl_error(HIXL_FAILED, "MEM_ADD of a bad range [0x%" PRIx64
                          ", +%" PRIu64 ")", addr, len);
    }
    if (peer->rtab_count >= max_regions) {
        return hixl_error(HIXL_FAILED, "peer announced more than %u regions "
                          "(option hixl.MaxRemoteRegions)", max_regions);
    }
    if (hixl_range_overlap(&peer->rtab, addr, len) != NULL) {
        return hixl_error(HIXL_FAILED, "MEM_ADD [0x%" PRIx64 ", +%" PRIu64 ") "
                          "overlaps a region it announced before", addr, len);
    }
    rr = calloc(1, sizeof(*rr));
    if (rr == NULL) {
        return hixl_error(HIXL_FAILED, "out of memory for a remote region");
    }
    rr->range.addr = addr;
    rr->range.len  = len;
    rr->id         = msg->u.mem_add.id;
    rr->mem_type   = msg->u.mem_add.mem_type;
    if ((rr->mem_type != HIXL_MEM_HOST) && (rr->mem_type != HIXL_MEM_DEVICE)) {
        free(rr);
        return hixl_error(HIXL_FAILED, "MEM_ADD of memory type %u",
                          msg->u.mem_add.mem_type);
    }
    /* a composite key: the UCX part (host memory always, device memory
     * when NIC-registered) and the device part (device memory) */
    if ((msg->u.mem_add.rkey.len == 0) &&
        ((rr->mem_type == HIXL_MEM_HOST) || (msg->u.mem_add.dev_key.len == 0))) {
        free(rr);
        return hixl_error(HIXL_FAILED, "MEM_ADD of [0x%" PRIx64 ", +%" PRIu64
                          ") without a remote key", addr, len);
    }
    if (msg->u.mem_add.rkey.len != 0) {
        ustatus = ucp_ep_rkey_unpack(peer->ep, msg->u.mem_add.rkey.ptr,
                                     &rr->rkey);
        if (ustatus != UCS_OK) {
            free(rr);
            return hixl_error(HIXL_FAILED, "cannot unpack the remote key of "
                              "region [0x%" PRIx64 ", +%" PRIu64 "): %s", addr,
                              len, ucs_status_string(ustatus));
        }
    }
    if (rr->mem_type == HIXL_MEM_DEVICE) {
        status = hixl_dev_rregion_create(peer->engine, rr,
                                         msg->u.mem_add.dev_key.ptr,
                                         msg->u.mem_add.dev_key.len);
        if (status != HIXL_SUCCESS) {
            hixl_rregion_free(peer, rr);   /* keeps the message */
            return status;
        }
    }
    status = hixl_range_insert(&peer->rtab, &rr->range);
    if (status != HIXL_SUCCESS) {
        hixl_rregion_free(peer, rr);
        return status;
    }
    peer->rtab_count++;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_peer_region_del(hixl_peer_t *peer, uint64_t id,
                                   uint64_t addr)
{
    size_t i = hixl_range_floor(&peer->rtab, addr);
    hixl_rregion_t *rr;

    if ((i == peer->rtab.count) || (peer->rtab.items[i]->addr != addr) ||
        (((hixl_rregion_t*)peer->rtab.items[i])->id != id)) {
        return hixl_error(HIXL_FAILED, "MEM_DEL of region 0x%" PRIx64 " at "
                          "0x%" PRIx64 " it never announced", id, addr);
    }
    rr = (hixl_rregion_t*)peer->rtab.items[i];
    hixl_range_remove(&peer->rtab, &rr->range);
    peer->rtab_count--;
    if (rr->dev != NULL) {
        /* device copies still running hold their own reference; the
         * import closes when the last one ends, before any revoke answer */
        hixl_dev_rdev_put(peer->engine, rr->dev);
        rr->dev = NULL;
    }
    rr->next_dead = peer->dead;
    peer->dead    = rr;
    hixl_peer_reap_dead_regions(peer);
    return HIXL_SUCCESS;
}

void hixl_peer_reap_dead_regions(hixl_peer_t *peer)
{
    hixl_rregion_t *rr;

    if (atomic_load(&peer->inflight) != 0) {
        return;
    }
    while (peer->dead != NULL) {
        rr         = peer->dead;
        peer->dead = rr->next_dead;
        hixl_rregion_free(peer, rr);
    }
}

static void hixl_peer_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    hixl_ep_ctx_t *ctx = arg;

    /* UCX's lock is held here: only flag it; the progress engine closes the
     * peer, if it still has this endpoint, under engine->lock
     * (hixl_peer_reap_errors). */
    hixl_log_debug("UCX endpoint %p error: %s", (void*)ep,
                   ucs_status_string(status));
    atomic_store(&ctx->status, (int)status);
    atomic_store(&ctx->engine->peer_errors, 1);
}

void hixl_ep_ctx_cleanup(hixl_engine_t *engine)
{
    hixl_ep_ctx_t *ctx;

    while ((ctx = engine->ep_ctxs) != NULL) {
        engine->ep_ctxs = ctx->next;
        hixl_fg_cleanup(ctx);
        free(ctx);
    }
}

/* A PEER-mode attempt may fail only because no transport handles peer
 * failure; UCX logs that as an ERROR although we recover from it, so keep
 * UCX quiet for that one call when a fallback follows. */
static ucs_status_t hixl_peer_ep_create_quiet(hixl_engine_t *engine,
                                              const ucp_ep_params_t *params,
                                              ucp_ep_h *ep_p)
{
    ucs_log_level_t saved = ucs_global_opts.log_component.log_level;
    ucs_status_t ustatus;

    if (saved < UCS_LOG_LEVEL_DEBUG) {
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
    }
    ustatus = ucp_ep_create(engine->ucp_worker, params, ep_p);
    ucs_global_opts.log_component.log_level = saved;
    return ustatus;
}

/*
 * UCX's error mode decides which transports an endpoint may use: PEER mode
 * only those that can report a dead peer.  On UCX 1.13 that excludes shared
 * memory, so PEER to a peer on this host moves data over tcp loopback.  It is
 * still the default (auto) wherever it reaches the peer: in NONE mode a peer
 * that dies while UCX talks to it over tcp makes UCX abort the surviving
 * process ("Fatal: unexpected error: Endpoint timeout", seen in the put
 * handler of a target whose initiator was killed), and no library may let a
 * peer's crash take its own process down.  Only where PEER cannot reach the
 * peer (UCX_TLS=sm, posix,cma) does auto fall back to NONE; a dead peer is
 * then found on the control connection, and shared memory has no
 * connection for UCX to fail on.
 */
hixl_status_t hixl_peer_create_ep(hixl_engine_t *engine, hixl_peer_t *peer,
                                  const ctrl_bytes_t *worker_addr)
{
    int mode = engine->opts.error_mode;
    ucs_status_t ustatus = UCS_ERR_UNREACHABLE;
    ucp_ep_params_t params;

    if (worker_addr->len == 0) {
        return hixl_error(HIXL_FAILED, "peer sent an empty worker address");
    }
    peer->ep_ctx = calloc(1, sizeof(*peer->ep_ctx));
    if (peer->ep_ctx == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    peer->ep_ctx->engine = engine;
    peer->ep_ctx->next   = engine->ep_ctxs;
    engine->ep_ctxs      = peer->ep_ctx;
    if (mode == HIXL_ERROR_MODE_AUTO) {
        mode = HIXL_ERROR_MODE_PEER;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address         = (const ucp_address_t*)worker_addr->ptr;
    params.err_handler.cb  = hixl_peer_ep_error_cb;
    params.err_handler.arg = peer->ep_ctx;
    if (mode == HIXL_ERROR_MODE_PEER) {
        params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        if (engine->opts.error_mode == HIXL_ERROR_MODE_PEER) {
            ustatus = ucp_ep_create(engine->ucp_worker, &params, &peer->ep);
        } else {
            ustatus = hixl_peer_ep_create_quiet(engine, &params, &peer->ep);
            if (ustatus == UCS_ERR_UNREACHABLE) {
                hixl_log_info("%s: no transport with peer-failure handling "
                              "reaches it (UCX_TLS=%s); using UCX error mode "
                              "none, a dead peer is found on the control "
                              "connection", peer->name, getenv("UCX_TLS") ?
                              getenv("UCX_TLS") : "default");
                mode = HIXL_ERROR_MODE_NONE;
            }
        }
    }
    if (mode == HIXL_ERROR_MODE_NONE) {
        params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        ustatus = ucp_ep_create(engine->ucp_worker, &params, &peer->ep);
    }
    if (ustatus != UCS_OK) {
        peer->ep = NULL;
        return hixl_error(HIXL_FAILED, "cannot create a UCX endpoint to %s: "
                          "%s (UCX_TLS=%s, hixl.ErrorMode %s)", peer->name,
                          ucs_status_string(ustatus),
                          getenv("UCX_TLS") ? getenv("UCX_TLS") : "default",
                          (mode == HIXL_ERROR_MODE_PEER) ? "peer" : "none");
    }
    hixl_fg_init(peer->ep_ctx, peer->ep);
    hixl_log_debug("%s: endpoint in UCX error mode %s", peer->name,
                   (mode == HIXL_ERROR_MODE_PEER) ? "peer" : "none");
    return HIXL_SUCCESS;
}
