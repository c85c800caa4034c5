/*
 * Control message handling: what each message does, and in which state of
 * which kind of peer it is allowed.  A message that breaks the protocol
 * closes that peer with the reason logged; the engine goes on serving the
 * others.
 */
#include "config.h"
#include "core/peer.h"
#include "device/device.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

typedef struct hixl_dispatch_ctx {
    hixl_engine_t *engine;
    hixl_peer_t   *peer;
} hixl_dispatch_ctx_t;

/* A SYNC from the listener asks us to finish everything we posted to it
 * before answering (the revoke barrier of a deregistration): the endpoint
 * flush, then the device copies posted to it (which also closes imports
 * of regions it revoked: device.h). */
typedef struct hixl_sync_reply {
    hixl_engine_t *engine;
    hixl_peer_t   *peer;
    uint64_t       token;
    uint64_t       dev_seq;
    hixl_dev_barrier_t barrier;
} hixl_sync_reply_t;

static void hixl_send_sync_ack(hixl_peer_t *peer, uint64_t token)
{
    ctrl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.type         = CTRL_SYNC_ACK;
    msg.u.sync.token = token;
    ctrl_conn_send(&peer->conn, &msg);
}

static void hixl_sync_reply_send(void *arg)
{
    hixl_sync_reply_t *reply = arg;

    hixl_send_sync_ack(reply->peer, reply->token);
    hixl_peer_release(reply->peer);
    free(reply);
}

static void hixl_sync_flush_cb(void *request, ucs_status_t ustatus,
                               void *user_data)
{
    hixl_sync_reply_t *reply = user_data;

    ucp_request_free(request);
    /* On error the peer is being closed anyway; the ack would be moot. */
    if (ustatus == UCS_OK) {
        hixl_dev_barrier(reply->engine, reply->peer, reply->dev_seq,
                         hixl_sync_reply_send, reply, &reply->barrier);
        return;
    }
    hixl_peer_release(reply->peer);
    free(reply);
}

static void hixl_handle_sync(hixl_engine_t *engine, hixl_peer_t *peer,
                             uint64_t token)
{
    ucp_request_param_t param;
    hixl_sync_reply_t *reply;
    ucs_status_ptr_t sp;

    if (peer->ep == NULL) {
        hixl_send_sync_ack(peer, token);
        return;
    }
    reply = malloc(sizeof(*reply));
    if (reply == NULL) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "out of memory answering "
                        "SYNC");
        return;
    }
    hixl_peer_retain(peer);
    reply->engine  = engine;
    reply->peer    = peer;
    reply->token   = token;
    reply->dev_seq = hixl_dev_seq(engine);
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = hixl_sync_flush_cb;
    param.user_data    = reply;
    sp = ucp_ep_flush_nbx(peer->ep, &param);
    if (UCS_PTR_IS_PTR(sp)) {
        return;   /* answered from the callback */
    }
    if (sp == NULL) {
        hixl_dev_barrier(engine, peer, reply->dev_seq, hixl_sync_reply_send,
                         reply, &reply->barrier);
        return;
    }
    hixl_peer_release(peer);
    free(reply);
}

static void hixl_handle_notify(hixl_engine_t *engine, hixl_peer_t *peer,
                               const ctrl_msg_t *msg)
{
    hixl_status_t status = hixl_notify_enqueue(engine, peer->name, msg);
    ctrl_msg_t ack;

    memset(&ack, 0, sizeof(ack));
    ack.type                = CTRL_NOTIFY_ACK;
    ack.u.notify_ack.seq    = msg->u.notify.seq;
    ack.u.notify_ack.status = (uint32_t)status;
    ctrl_conn_send(&peer->conn, &ack);
}

static void hixl_handle_notify_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                                   const ctrl_msg_t *msg)
{
    uint64_t seq = msg->u.notify_ack.seq;
    hixl_notify_waiter_t **pp, *w;

    if (seq & HIXL_SEQ_XFER) {
        hixl_xfer_notify_acked(engine, seq,
                               (hixl_status_t)msg->u.notify_ack.status);
        return;
    }
    for (pp = &peer->notify_waiters; (w = *pp) != NULL; pp = &w->next) {
        if (w->seq == seq) {
            *pp       = w->next;
            w->done   = 1;
            w->status = (hixl_status_t)msg->u.notify_ack.status;
            pthread_cond_broadcast(&engine->cond);
            return;
        }
    }
    /* the sender timed out and left: nothing to do */
}

static int hixl_protocol_error(hixl_engine_t *engine, hixl_peer_t *peer,
                               const ctrl_msg_t *msg, const char *why)
{
    hixl_log_warn("dropping %s: protocol error: %s %s", peer->name[0] ?
                  peer->name : "a connection in handshake",
                  ctrl_msg_type_name(msg->type), why);
    hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: %s %s",
                    ctrl_msg_type_name(msg->type), why);
    return 1;
}

static int hixl_ctrl_handle(void *arg, const ctrl_msg_t *msg)
{
    hixl_dispatch_ctx_t *ctx = arg;
    hixl_engine_t *engine    = ctx->engine;
    hixl_peer_t *peer        = ctx->peer;
    int ready                = (peer->state == HIXL_PEER_READY);

    if (peer->state == HIXL_PEER_CLOSED) {
        return 1;
    }
    switch (msg->type) {
    case CTRL_HELLO:
        return hixl_handshake_hello(engine, peer, msg);
    case CTRL_HELLO_ACK:
        return hixl_handshake_ack(engine, peer, msg);
    case CTRL_AUTH_CHALLENGE:
    case CTRL_AUTH_RESPONSE:
        return hixl_handshake_auth(engine, peer, msg);
    case CTRL_MEM_ADD:
        if (!peer->outgoing || (peer->ep == NULL)) {
            return hixl_protocol_error(engine, peer, msg, "from a peer that "
                                       "has not accepted us");
        }
        if (hixl_peer_region_add(peer, msg, engine->opts.max_remote_regions) !=
            HIXL_SUCCESS) {
            return hixl_protocol_error(engine, peer, msg,
                                       hixl_error_message());
        }
        return 0;
    case CTRL_MEM_DEL:
        if (!peer->outgoing || (peer->ep == NULL)) {
            return hixl_protocol_error(engine, peer, msg, "from a peer that "
                                       "has not accepted us");
        }
        if (hixl_peer_region_del(peer, msg->u.mem_del.id,
                                 msg->u.mem_del.addr) != HIXL_SUCCESS) {
            return hixl_protocol_error(engine, peer, msg,
                                       hixl_error_message());
        }
        return 0;
    case CTRL_TABLE_END:
        if (!peer->outgoing || (peer->ep == NULL) ||
            (peer->state != HIXL_PEER_HANDSHAKE)) {
            return hixl_protocol_error(engine, peer, msg, "out of order");
        }
        peer->state = HIXL_PEER_READY;
        pthread_cond_broadcast(&engine->cond);
        return 0;
    case CTRL_SYNC:
        if (!ready) {
            return hixl_protocol_error(engine, peer, msg, "before handshake");
        }
        hixl_handle_sync(engine, peer, msg->u.sync.token);
        return 0;
    case CTRL_SYNC_ACK:
        if (!ready) {
            return hixl_protocol_error(engine, peer, msg, "before handshake");
        }
        if (msg->u.sync.token > peer->sync_acked) {
            peer->sync_acked = msg->u.sync.token;
        }
        pthread_cond_broadcast(&engine->cond);
        return 0;
    case CTRL_NOTIFY:
        if (!ready) {
            return hixl_protocol_error(engine, peer, msg, "before handshake");
        }
        hixl_handle_notify(engine, peer, msg);
        return 0;
    case CTRL_NOTIFY_ACK:
        if (!ready) {
            return hixl_protocol_error(engine, peer, msg, "before handshake");
        }
        hixl_handle_notify_ack(engine, peer, msg);
        return 0;
    case CTRL_LAYER:
        if (!ready || peer->outgoing) {
            return hixl_protocol_error(engine, peer, msg, "from a peer we "
                                       "did not accept");
        }
        return hixl_layer_signal_recv(engine, peer, msg);
    case CTRL_BYE:
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s closed the connection: "
                        "%.*s", peer->name[0] ? peer->name : "peer",
                        (int)msg->u.bye.reason.len,
                        (const char*)msg->u.bye.reason.ptr);
        return 1;
    }
    return hixl_protocol_error(engine, peer, msg, "is unknown");
}

void hixl_ctrl_event(hixl_engine_t *engine, hixl_peer_t *peer, uint32_t events)
{
    hixl_dispatch_ctx_t ctx = {engine, peer};
    char err[256];

    if ((events & EPOLLOUT) &&
        (ctrl_conn_flush(&peer->conn, err, sizeof(err)) != 0)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "control connection: %s",
                        err);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        return;
    }
    /* keep the peer alive through handlers that close it */
    hixl_peer_retain(peer);
    if ((ctrl_conn_receive(&peer->conn, hixl_ctrl_handle, &ctx, err,
                           sizeof(err)) != 0) &&
        (peer->state != HIXL_PEER_CLOSED)) {
        if (strncmp(err, "connection closed by peer", 25) != 0) {
            /* not a plain hang-up: malformed input or a socket error */
            hixl_log_warn("dropping %s: %s", peer->name[0] ? peer->name :
                          "a connection in handshake", err);
        }
        hixl_peer_close(engine, peer, HIXL_FAILED, "control connection: %s",
                        err);
    }
    hixl_peer_release(peer);
}
