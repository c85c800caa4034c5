/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer's UCX endpoint: creation in the right error mode (its error
 * record: core/peer/ep_err.h), and its end.
 */
#include "config.h"
#include "core/engine.h"
#include "core/peer/peer.h"
#include "core/worker/ucx_log_mute.h"
#include "core/worker/ucx_settings.h"
#include "core/peer/ep_close.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ucs_status_t hixl_peer_ep_error(const hixl_peer_t *peer)
{
    return (peer->ep_err != NULL) ? hixl_ep_err_status(peer->ep_err) :
                                    UCS_OK;
}

static const char *hixl_tls_name(void)
{
    const char *tls = getenv("UCX_TLS");

    return (tls != NULL) ? tls : "default";
}

/*
 * UCX's error mode decides which transports an endpoint may use: PEER mode
 * only those that can report a dead peer, which shared memory does in UCX
 * 1.13 once the engine's context sets MM_ERROR_HANDLING (core/engine.c).
 * PEER is the default (auto) because only PEER endpoints can be
 * force-closed: a close that cancels what is queued on the endpoint at
 * once, which is what ending a connection to a dead or unreachable peer
 * needs.  Where PEER cannot reach the peer (a UCX without that setting,
 * UCX_TLS=sm) auto falls back to NONE; a dead peer is then found on the
 * control connection.  Neither mode keeps UCX from aborting a process
 * whose peer died during an emulated put: that is why such transfers go
 * through library messages instead (core/xfer/am_data.h).
 */
static ucs_status_t hixl_ep_create_mode(hixl_engine_t *engine,
                                        hixl_peer_t *peer,
                                        ucp_ep_params_t *params, int *mode)
{
    ucs_status_t ustatus = UCS_ERR_UNREACHABLE;

    if (*mode == HIXL_ERROR_MODE_AUTO) {
        /* a refusal here is expected and answered: UCX's error line for it
         * would only mislead (ucx_log_mute.h) */
        params->err_mode = UCP_ERR_HANDLING_MODE_PEER;
        hixl_ucx_log_mute_begin();
        ustatus = ucp_ep_create(engine->ucp_worker, params, &peer->ep);
        hixl_ucx_log_mute_end();
        if (ustatus != UCS_ERR_UNREACHABLE) {
            *mode = HIXL_ERROR_MODE_PEER;
            return ustatus;
        }
        hixl_log_info("%s: no transport with peer-failure handling reaches "
                      "it (UCX_TLS=%s); using UCX error mode none, a dead "
                      "peer is found on the control connection", peer->name,
                      hixl_tls_name());
        *mode = HIXL_ERROR_MODE_NONE;
    }
    params->err_mode = (*mode == HIXL_ERROR_MODE_PEER) ?
                       UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    return ucp_ep_create(engine->ucp_worker, params, &peer->ep);
}

/* RDMA transports as a lane's line prints them */
static const char *const hixl_rdma_printed[] = {"rc_", "dc_", "ud_", "rc/",
                                                "dc/", "ud/"};

#define HIXL_EP_TLS_MAX 16

/* 1: UCX's query for the endpoint's transports answered, *rdma says
 * whether one is RDMA; 0: no answer (UCX before 1.14). */
static int hixl_ep_transports_query(hixl_peer_t *peer, int *rdma)
{
#ifdef HAVE_UCP_EP_ATTR_T_TRANSPORTS
    /* RDMA transports, by the start of their names (rc_mlx5, ud_verbs...) */
    static const char *const rdma_tls[] = {"rc_", "dc_", "ud_"};
    ucp_transport_entry_t entries[HIXL_EP_TLS_MAX];
    ucp_ep_attr_t attr;
    unsigned i, j;

    if (!hixl_ucx_ep_query_transports()) {
        return 0;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask             = UCP_EP_ATTR_FIELD_TRANSPORTS;
    attr.transports.entries     = entries;
    attr.transports.num_entries = HIXL_EP_TLS_MAX;
    attr.transports.entry_size  = sizeof(entries[0]);
    if (ucp_ep_query(peer->ep, &attr) != UCS_OK) {
        return 0;
    }
    *rdma = 0;
    for (i = 0; i < attr.transports.num_entries; ++i) {
        for (j = 0; j < sizeof(rdma_tls) / sizeof(rdma_tls[0]); ++j) {
            if ((entries[i].transport_name != NULL) &&
                (strncmp(entries[i].transport_name, rdma_tls[j],
                         strlen(rdma_tls[j])) == 0)) {
                *rdma = 1;
            }
        }
    }
    return 1;
#else
    (void)peer;
    (void)rdma;
    return 0;
#endif
}

/* Whether the transports UCX prints for the endpoint name an RDMA one
 * ("rc_mlx5/..." in a lane's line). */
static int hixl_ep_transports_printed(hixl_peer_t *peer)
{
    char *text = NULL;
    size_t len = 0, i;
    FILE *f    = open_memstream(&text, &len);
    int rdma   = 0;

    if (f == NULL) {
        return 0;   /* unknown: the safe choice */
    }
    ucp_ep_print_info(peer->ep, f);
    fclose(f);
    for (i = 0; (text != NULL) && (i < sizeof(hixl_rdma_printed) /
                                            sizeof(hixl_rdma_printed[0]));
         ++i) {
        rdma |= (strstr(text, hixl_rdma_printed[i]) != NULL);
    }
    free(text);
    return rdma;
}

/* Whether UCX gave the endpoint RDMA lanes: puts there are real remote
 * writes, never emulated with messages.  UCX's query where the UCX running
 * has it, else what it prints (core/worker/ucx_settings.h). */
static void hixl_ep_transports(hixl_peer_t *peer)
{
    int rdma = 0;

    if (!hixl_ep_transports_query(peer, &rdma)) {
        rdma = hixl_ep_transports_printed(peer);
    }
    hixl_peer_mark(peer, HIXL_PEER_F_EP_RDMA, rdma);
}

hixl_status_t hixl_peer_ep_create(hixl_engine_t *engine, hixl_peer_t *peer,
                                  const void *worker_addr, size_t len)
{
    int mode = engine->opts.error_mode;
    ucp_ep_params_t params;
    ucs_status_t ustatus;
    hixl_status_t status;

    if (len == 0) {
        return hixl_error(HIXL_FAILED, "peer sent an empty worker address");
    }
    peer->ep_err = hixl_ep_err_new(engine);
    if (peer->ep_err == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address    = (const ucp_address_t*)worker_addr;
    hixl_ep_err_handler(peer->ep_err, &params);
    ustatus = hixl_ep_create_mode(engine, peer, &params, &mode);
    if (ustatus != UCS_OK) {
        peer->ep = NULL;
        return hixl_error(HIXL_FAILED, "cannot create a UCX endpoint to %s: "
                          "%s (UCX_TLS=%s, hixl.ErrorMode %s)", peer->name,
                          ucs_status_string(ustatus), hixl_tls_name(),
                          (mode == HIXL_ERROR_MODE_PEER) ? "peer" : "none");
    }
    hixl_peer_mark(peer, HIXL_PEER_F_EP_PEER_MODE,
                   mode == HIXL_ERROR_MODE_PEER);
    hixl_ep_transports(peer);
    peer->ep_flush = hixl_ep_flush_create(peer->ep, hixl_ep_flush_via_ucp,
                                          &engine->progress.flush_wanted);
    if (peer->ep_flush == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    status = hixl_chan_open(engine, peer);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_log_debug("%s: endpoint in UCX error mode %s%s", peer->name,
                   (mode == HIXL_ERROR_MODE_PEER) ? "peer" : "none",
                   hixl_peer_is(peer, HIXL_PEER_F_EP_RDMA) ? ", RDMA lanes" :
                   "");
    return hixl_chan_bind(engine, peer->chan, mode == HIXL_ERROR_MODE_PEER);
}

void hixl_peer_ep_close(hixl_engine_t *engine, hixl_peer_t *peer,
                        ucs_status_t status)
{
    /* read before the flush service's close settles the transfers */
    int ucx_ok  = (peer->ep_err != NULL) &&
                  (hixl_ep_err_status(peer->ep_err) == UCS_OK);
    int unbind  = ucx_ok && (peer->end == HIXL_PEER_END_ORDERLY) &&
                  (atomic_load(&peer->inflight) == 0) &&
                  (peer->chan != NULL) &&
                  (atomic_load(&peer->chan->bound) == 1);
    int in_order  = ucx_ok && (peer->end != HIXL_PEER_END_ABRUPT);
    int peer_mode = hixl_peer_is(peer, HIXL_PEER_F_EP_PEER_MODE);

    if (peer->chan != NULL) {
        /* before the transfers end: nothing reads their buffers after */
        hixl_chan_stop(engine, peer->chan);
    }
    if (peer->ep_flush != NULL) {
        /* no flush may be issued now */
        hixl_ep_flush_close(peer->ep_flush, status);
        peer->ep_flush = NULL;
    }
    if ((peer->ep != NULL) && peer_mode && in_order) {
        /* both sides may be alive: flushed, then force-closed, and the
         * listener asked to close its end when nothing was in flight
         * (core/peer/ep_close.h) */
        peer->close_id = hixl_ep_close_start(engine, peer->ep, peer->ep_err,
                                             peer->conn_id, unbind,
                                             peer->name);
        peer->ep_err   = NULL;   /* its reference went with the endpoint */
    } else if (peer->ep != NULL) {
        /* the peer is gone (its sockets with it), or UCX's error path has
         * the endpoint: closed at once, what is queued cancelled */
        hixl_ep_close_now(peer->ep, peer->ep_err, peer_mode,
                          peer->name);
    }
    peer->ep = NULL;
    if (peer->chan != NULL) {
        hixl_chan_close(engine, peer->chan);
        peer->chan = NULL;
    }
    if (peer->ep_err != NULL) {
        hixl_ep_err_release(peer->ep_err);
        peer->ep_err = NULL;
    }
}
