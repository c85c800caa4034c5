/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control message dispatch (see dispatch.h).
 */
#include "config.h"
#include "ctrl/ctrl.h"
#include "util/debug.h"
#include "util/log.h"

#include <string.h>
#include <sys/epoll.h>

typedef struct hixl_dispatch_ctx {
    hixl_engine_t *engine;
    hixl_peer_t   *peer;
} hixl_dispatch_ctx_t;

void hixl_ctrl_handle(hixl_engine_t *engine, uint16_t type, hixl_ctrl_fn_t fn,
                      unsigned when)
{
    if ((type > 0) && (type < CTRL_MSG_TYPE_LAST)) {
        engine->ctrl->rules[type].fn   = fn;
        engine->ctrl->rules[type].when = when;
    }
}

int hixl_ctrl_protocol_error(hixl_engine_t *engine, hixl_peer_t *peer,
                             const hixl_msg_t *msg, const char *why)
{
    hixl_log_warn("dropping %s: protocol error: %s %s", peer->name[0] ?
                  peer->name : "a connection in handshake",
                  hixl_msg_type_name(msg->type), why);
    if ((peer->state == HIXL_PEER_HANDSHAKE) && !hixl_peer_outgoing(peer)) {
        hixl_metrics_count(engine->metrics, HIXL_MX_REFUSED +
                           HIXL_STATS_REFUSED_INVALID, 1);
    }
    hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: %s %s",
                    hixl_msg_type_name(msg->type), why);
    return 1;
}

/* Is msg legal from peer now?  NULL, or why not. */
static const char *hixl_ctrl_illegal(const hixl_ctrl_rule_t *rule,
                                     const hixl_peer_t *peer)
{
    if (rule->fn == NULL) {
        return "is unknown";
    }
    if (!(rule->when & (hixl_peer_outgoing(peer) ? HIXL_CTRL_ON_OUTGOING :
                        HIXL_CTRL_ON_ACCEPTED))) {
        return hixl_peer_outgoing(peer) ?
               "from an engine we connected to (only connectors send it)" :
               "from an engine that connected to us (only listeners send it)";
    }
    if (!(rule->when & ((peer->state == HIXL_PEER_READY) ?
                        HIXL_CTRL_WHEN_READY : HIXL_CTRL_IN_HANDSHAKE))) {
        return (peer->state == HIXL_PEER_READY) ? "after the handshake" :
               "before the handshake completed";
    }
    return NULL;
}

static int hixl_ctrl_dispatch(void *arg, const hixl_msg_t *msg)
{
    hixl_dispatch_ctx_t *ctx = arg;
    hixl_engine_t *engine    = ctx->engine;
    hixl_peer_t *peer        = ctx->peer;
    const hixl_ctrl_rule_t *rule;
    const char *why;

    if (peer->state == HIXL_PEER_CLOSED) {
        return 1;
    }
    rule = &engine->ctrl->rules[(msg->type < CTRL_MSG_TYPE_LAST) ?
                                msg->type : 0];
    why  = hixl_ctrl_illegal(rule, peer);
    if (why != NULL) {
        return hixl_ctrl_protocol_error(engine, peer, msg, why);
    }
    return rule->fn(engine, peer, msg);
}

/* Close peer for its control connection's error: a timeout means the peer
 * stayed silent past hixl.PeerTimeoutMs (hixl_sock_setup), and says so. */
static void hixl_ctrl_conn_failed(hixl_engine_t *engine, hixl_peer_t *peer,
                                  const char *err)
{
    if (strstr(err, "timed out") != NULL) {
        hixl_log_warn("%s: no answer for hixl.PeerTimeoutMs (%d ms): closing",
                      peer->name[0] ? peer->name : "a connection in handshake",
                      engine->opts.peer_timeout_ms);
        peer->end = HIXL_PEER_END_CUT;
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s answered nothing for "
                        "%d ms (hixl.PeerTimeoutMs): it is gone or cut off "
                        "(%s)", peer->name[0] ? peer->name : "the peer",
                        engine->opts.peer_timeout_ms, err);
        return;
    }
    if ((strncmp(err, "connection closed by peer", 25) == 0) ||
        (strstr(err, "reset by peer") != NULL)) {
        /* gone without a goodbye: its process ended (or its host) */
        hixl_peer_close_why(peer, HIXL_STATS_CLOSED_PEER_DEATH);
    } else {
        /* not a plain hang-up: malformed input or a socket error */
        hixl_log_warn("dropping %s: %s", peer->name[0] ? peer->name :
                      "a connection in handshake", err);
        if ((peer->state == HIXL_PEER_HANDSHAKE) &&
            !hixl_peer_outgoing(peer)) {
            hixl_metrics_count(engine->metrics, HIXL_MX_REFUSED +
                               ((strstr(err, "protocol version") != NULL) ?
                                HIXL_STATS_REFUSED_VERSION :
                                HIXL_STATS_REFUSED_INVALID), 1);
        }
    }
    hixl_peer_close(engine, peer, HIXL_FAILED, "control connection: %s", err);
}

void hixl_ctrl_event(hixl_engine_t *engine, uint64_t serial, uint32_t events)
{
    hixl_peer_t *peer = hixl_peer_by_serial(engine, serial);
    hixl_dispatch_ctx_t ctx = {engine, peer};
    char err[256];

    hixl_assert_locked(&engine->lock);
    if (peer == NULL) {
        return;   /* closed meanwhile */
    }
    if ((events & EPOLLOUT) &&
        (hixl_conn_flush(&peer->conn, err, sizeof(err)) != 0)) {
        hixl_ctrl_conn_failed(engine, peer, err);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        return;
    }
    /* keep the peer alive through handlers that close it */
    hixl_peer_retain(peer);
    if ((hixl_conn_receive(&peer->conn, hixl_ctrl_dispatch, &ctx, err,
                           sizeof(err)) != 0) &&
        (peer->state != HIXL_PEER_CLOSED)) {
        hixl_ctrl_conn_failed(engine, peer, err);
    }
    hixl_peer_release(peer);
}

static int hixl_ctrl_on_bye(hixl_engine_t *engine, hixl_peer_t *peer,
                            const hixl_msg_t *msg)
{
    peer->end = HIXL_PEER_END_ORDERLY;   /* it said goodbye: alive */
    hixl_peer_close(engine, peer, HIXL_FAILED, "%s closed the connection: "
                    "%.*s", peer->name[0] ? peer->name : "peer",
                    (int)msg->u.bye.reason.len,
                    (const char*)msg->u.bye.reason.ptr);
    return 1;
}

void hixl_dispatch_init(hixl_engine_t *engine)
{
    hixl_progress_on_socket(engine, HIXL_POLL_PEER, hixl_ctrl_event);
    hixl_ctrl_handle(engine, CTRL_BYE, hixl_ctrl_on_bye,
                     HIXL_CTRL_ON_EITHER | HIXL_CTRL_ANY_STATE);
}
