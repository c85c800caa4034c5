/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control layer's set-up, its peer hooks and its periodic work.
 */
#include "config.h"
#include "ctrl/ctrl.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Say why the connection ends, best effort (the socket closes right
 * after), and remember it: a connection the application saw up is owed
 * its hixl_disconnect(). */
static void hixl_ctrl_peer_closing(hixl_engine_t *engine, hixl_peer_t *peer)
{
    const uint8_t *resume =
        ((peer->handshake != NULL) && peer->handshake->has_resume) ?
            peer->handshake->resume :
            NULL;
    hixl_msg_t bye;

    hixl_ended_record(&engine->ctrl->ended, peer,
                      (peer->handshake != NULL) && peer->handshake->app_owned,
                      resume);
    memset(&bye, 0, sizeof(bye));
    bye.type         = CTRL_BYE;
    bye.u.bye.status = (uint32_t)peer->close_status;
    bye.u.bye.reason = hixl_msg_bytes(peer->close_reason,
                                      strlen(peer->close_reason));
    hixl_ctrl_send(peer, &bye);
}

static void hixl_ctrl_peer_destroy(hixl_peer_t *peer)
{
    free(peer->handshake);
    peer->handshake = NULL;
}

static const hixl_peer_hooks_t hixl_ctrl_hooks = {
    .name    = "ctrl",
    .closing = hixl_ctrl_peer_closing,
    .destroy = hixl_ctrl_peer_destroy,
};

/* Drop accepted connections that never completed a handshake in time (a
 * port scanner, a stuck or hostile client: hixl.HandshakeTimeoutMs) and
 * connects that got no answer (their call's timeout). */
static void hixl_ctrl_reap_handshakes(hixl_engine_t *engine, uint64_t now)
{
    hixl_peer_t *peer, *next;

    for (peer = engine->peers.head; peer != NULL; peer = next) {
        next = peer->next;
        if ((peer->state == HIXL_PEER_HANDSHAKE) &&
            (peer->handshake != NULL) &&
            (now > peer->handshake->deadline_ns)) {
            if (hixl_peer_outgoing(peer)) {
                hixl_peer_close(engine, peer, HIXL_TIMEOUT, "no handshake "
                                "answer within the connect's timeout");
            } else {
                hixl_metrics_count(engine->metrics, HIXL_MX_EVICTED +
                                   HIXL_STATS_EVICTED_TIMEOUT, 1);
                hixl_peer_close(engine, peer, HIXL_TIMEOUT, "no handshake "
                                "within hixl.HandshakeTimeoutMs (%d ms)",
                                engine->opts.handshake_timeout_ms);
            }
        }
    }
}

static hixl_status_t hixl_ctrl_auto_connect(hixl_engine_t *engine,
                                            const char *remote)
{
    return hixl_connect_locked(engine, remote,
                               engine->opts.connect_timeout_ms);
}

static const char *hixl_ctrl_ended_reason(hixl_engine_t *engine,
                                          const char *remote, int outgoing)
{
    return hixl_ended_reason(&engine->ctrl->ended, remote, outgoing);
}

hixl_status_t hixl_ctrl_init(hixl_engine_t *engine)
{
    hixl_status_t status;

    engine->ctrl = calloc(1, sizeof(*engine->ctrl));
    if (engine->ctrl == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    engine->ctrl->listen_fd    = -1;
    engine->peers.connect      = hixl_ctrl_auto_connect;
    engine->peers.ended_reason = hixl_ctrl_ended_reason;
    status = hixl_peer_hooks_add(engine, &hixl_ctrl_hooks);
    if (status == HIXL_SUCCESS) {
        status = hixl_progress_periodic(engine, hixl_ctrl_reap_handshakes);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_dispatch_init(engine);
    hixl_connect_init(engine);
    hixl_accept_init(engine);
    return engine->listening ? hixl_accept_listen(engine) : HIXL_SUCCESS;
}

void hixl_ctrl_stop_listening(hixl_engine_t *engine)
{
    if ((engine->ctrl != NULL) && (engine->ctrl->listen_fd >= 0)) {
        close(engine->ctrl->listen_fd);
        engine->ctrl->listen_fd = -1;
    }
}

void hixl_ctrl_cleanup(hixl_engine_t *engine)
{
    if (engine->ctrl == NULL) {
        return;
    }
    hixl_ctrl_stop_listening(engine);
    hixl_ended_cleanup(&engine->ctrl->ended);
    free(engine->ctrl);
    engine->ctrl = NULL;
}
