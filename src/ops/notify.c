/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Notifies (see notify.h).
 */
#include "config.h"
#include "ops/notify.h"
#include "ctrl/dispatch.h"
#include "util/args.h"
#include "util/clock.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct hixl_notify_node {
    struct hixl_notify_node *next;
    size_t                   remote_len;
    size_t                   name_len;
    size_t                   msg_len;
    char                     data[];     /* remote \0 name \0 msg \0 */
} hixl_notify_node_t;

/* The received queue (engine->notifies). */
struct hixl_notifies {
    hixl_notify_node_t *head;
    hixl_notify_node_t *tail;
    uint32_t            count;
};

/* A hixl_send_notify() call waiting for its NOTIFY_ACK (on its stack),
 * listed on its peer (peer->notify->waiters). */
typedef struct hixl_notify_waiter {
    uint64_t                   seq;
    int                        done;
    hixl_status_t              status;
    struct hixl_notify_waiter *next;
} hixl_notify_waiter_t;

/* This module's part of a peer (peer->notify), from READY to destroy. */
struct hixl_notify_peer {
    hixl_notify_waiter_t *waiters;
    uint64_t              next_seq;   /* of the notifies sent to it */
};

/* ---- receiving ------------------------------------------------------------- */

/* Queue a notify (engine->lock held); returns the status its sender is
 * told. */
static hixl_status_t hixl_notify_enqueue(hixl_engine_t *engine,
                                         const char *remote,
                                         const hixl_msg_bytes_t *name,
                                         const hixl_msg_bytes_t *body)
{
    struct hixl_notifies *q  = engine->notifies;
    hixl_notify_node_t *node;
    char *p;

    if (body->len > engine->opts.max_notify_size) {
        hixl_log_warn("notify \"%.*s\" from %s: %u bytes exceed "
                      "hixl.MaxNotifySize %u; refused", (int)name->len,
                      (const char*)name->ptr, remote, body->len,
                      engine->opts.max_notify_size);
        hixl_metrics_count(engine->metrics, HIXL_MX_NOTIFY_DROPPED +
                           HIXL_STATS_DROPPED_TOO_LARGE, 1);
        return HIXL_PARAM_INVALID;
    }
    if (q->count >= engine->opts.notify_queue_depth) {
        hixl_log_info("notify from %s refused: queue full (%u, option "
                      "hixl.NotifyQueueDepth)", remote, q->count);
        hixl_metrics_count(engine->metrics, HIXL_MX_NOTIFY_DROPPED +
                           HIXL_STATS_DROPPED_QUEUE_FULL, 1);
        return HIXL_RESOURCE_EXHAUSTED;
    }
    node = malloc(sizeof(*node) + strlen(remote) + name->len + body->len + 3);
    if (node == NULL) {
        return HIXL_RESOURCE_EXHAUSTED;
    }
    node->next       = NULL;
    node->remote_len = strlen(remote);
    node->name_len   = name->len;
    node->msg_len    = body->len;
    p = node->data;
    memcpy(p, remote, node->remote_len + 1);
    p += node->remote_len + 1;
    memcpy(p, name->ptr, name->len);
    p[name->len] = '\0';
    p += name->len + 1;
    if (body->len) {
        memcpy(p, body->ptr, body->len);
    }
    p[body->len] = '\0';

    if (q->tail != NULL) {
        q->tail->next = node;
    } else {
        q->head = node;
    }
    q->tail = node;
    q->count++;
    hixl_metrics_count(engine->metrics, HIXL_MX_NOTIFY_RECEIVED, 1);
    pthread_cond_broadcast(&engine->cond);
    hixl_events_signal(&engine->events);
    return HIXL_SUCCESS;
}

static int hixl_on_notify(hixl_engine_t *engine, hixl_peer_t *peer,
                          const hixl_msg_t *msg)
{
    hixl_status_t status = hixl_notify_enqueue(engine, peer->name,
                                               &msg->u.notify.name,
                                               &msg->u.notify.msg);
    hixl_msg_t ack;

    memset(&ack, 0, sizeof(ack));
    ack.type                = CTRL_NOTIFY_ACK;
    ack.u.notify_ack.seq    = msg->u.notify.seq;
    ack.u.notify_ack.status = (uint32_t)status;
    hixl_ctrl_send(peer, &ack);
    return 0;
}

/* ---- per-transfer notifies -------------------------------------------------- */

hixl_status_t hixl_notify_check(const hixl_engine_t *engine,
                                const hixl_notify_desc_t *n, const char *what)
{
    size_t name_len;

    if ((n == NULL) || (n->name == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s%s is NULL", what,
                          n ? " name" : "");
    }
    name_len = strlen(n->name);
    if (name_len > HIXL_NOTIFY_NAME_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "%s name is %zu bytes, limit %d",
                          what, name_len, HIXL_NOTIFY_NAME_MAX);
    }
    if ((n->msg == NULL) && (n->msg_len != 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s msg is NULL with msg_len "
                          "%zu", what, n->msg_len);
    }
    if (n->msg_len > engine->opts.max_notify_size) {
        return hixl_error(HIXL_PARAM_INVALID, "%s msg is %zu bytes, larger "
                          "than hixl.MaxNotifySize (%u)", what, n->msg_len,
                          engine->opts.max_notify_size);
    }
    return HIXL_SUCCESS;
}

/* Every byte of req landed: send its notify (req->after_data). */
static void hixl_notify_send_after_data(hixl_request_t *req)
{
    hixl_msg_t msg;
    int one = 1;

    memset(&msg, 0, sizeof(msg));
    msg.type          = CTRL_NOTIFY;
    msg.u.notify.seq  = HIXL_SEQ_XFER | req->handle;
    msg.u.notify.name = hixl_msg_bytes(req->notify_name,
                                       strlen(req->notify_name));
    msg.u.notify.msg  = hixl_msg_bytes(req->notify_msg, req->notify_len);

    atomic_fetch_add(&req->pending, 1);   /* held until the answer */
    atomic_store(&req->await_ack, 1);
    if (hixl_ctrl_send(req->peer, &msg) == HIXL_SUCCESS) {
        hixl_metrics_count(req->engine->metrics, HIXL_MX_NOTIFY_SENT, 1);
    } else if (atomic_compare_exchange_strong(&req->await_ack, &one, 0)) {
        hixl_req_fail(req, HIXL_NOTIFY_FAILED, "data of the %s to %s landed, "
                      "but its notify could not be sent: %s",
                      hixl_req_op_name(req->op), req->peer->name,
                      hixl_error_message());
        hixl_req_complete_one(req);
    }
}

hixl_status_t hixl_notify_attach(hixl_request_t *req,
                                 const hixl_notify_desc_t *n)
{
    req->notify_name = strdup(n->name);
    req->notify_msg  = malloc(n->msg_len ? n->msg_len : 1);
    if ((req->notify_name == NULL) || (req->notify_msg == NULL)) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "transfer notify");
    }
    if (n->msg_len) {
        memcpy(req->notify_msg, n->msg, n->msg_len);
    }
    req->notify_len = n->msg_len;
    req->after_data = hixl_notify_send_after_data;
    return HIXL_SUCCESS;
}

/* NOTIFY_ACK for a per-transfer notify. */
static void hixl_notify_xfer_acked(hixl_engine_t *engine, uint64_t seq,
                                   hixl_status_t status)
{
    hixl_request_t *req;
    int one = 1;

    req = hixl_req_lookup(&engine->reqs, seq & ~HIXL_SEQ_XFER);
    if ((req == NULL) ||
        !atomic_compare_exchange_strong(&req->await_ack, &one, 0)) {
        hixl_log_debug("NOTIFY_ACK 0x%" PRIx64 " for no waiting request", seq);
        return;
    }
    if (status != HIXL_SUCCESS) {
        hixl_req_fail(req, status, "data of the %s to %s landed, but %s "
                      "refused its notify: %s", hixl_req_op_name(req->op),
                      req->peer->name, req->peer->name, hixl_strerror(status));
    }
    hixl_req_complete_one(req);
}

static int hixl_on_notify_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                              const hixl_msg_t *msg)
{
    uint64_t seq = msg->u.notify_ack.seq;
    hixl_notify_waiter_t **pp, *w;

    if (seq & HIXL_SEQ_XFER) {
        hixl_notify_xfer_acked(engine, seq,
                               (hixl_status_t)msg->u.notify_ack.status);
        return 0;
    }
    for (pp = &peer->notify->waiters; (w = *pp) != NULL; pp = &w->next) {
        if (w->seq == seq) {
            *pp       = w->next;
            w->done   = 1;
            w->status = (hixl_status_t)msg->u.notify_ack.status;
            pthread_cond_broadcast(&engine->cond);
            return 0;
        }
    }
    return 0;   /* the sender timed out and left: nothing to do */
}

/* A request still waiting for the answer to its notify fails with the
 * connection. */
static void hixl_notify_fail_awaiting(hixl_request_t *req, void *arg)
{
    hixl_peer_t *peer = arg;
    int one           = 1;

    if (atomic_compare_exchange_strong(&req->await_ack, &one, 0)) {
        hixl_req_fail(req, HIXL_NOTIFY_FAILED, "data of the %s to %s landed, "
                      "but the peer went away before it took the notify: %s",
                      hixl_req_op_name(req->op), peer->name,
                      peer->close_reason);
        hixl_req_complete_one(req);
    }
}

/* hixl.NotifyPeerEnded: tell the application a connection that was up
 * ended, and how, as a notify from the engine it was with. */
static void hixl_notify_peer_ended(hixl_engine_t *engine, hixl_peer_t *peer)
{
    /* the reasons the metrics count the close by */
    static const char *const how[HIXL_STATS_CLOSED_COUNT] = {
        [HIXL_STATS_CLOSED_DISCONNECT]   = "disconnected",
        [HIXL_STATS_CLOSED_PEER_TIMEOUT] = "unreachable",
        [HIXL_STATS_CLOSED_PEER_DEATH]   = "gone",
        [HIXL_STATS_CLOSED_ERROR]        = "failed",
    };
    char text[HIXL_ERROR_MSG_MAX + 32];
    hixl_msg_bytes_t name, body;
    int n;

    n = snprintf(text, sizeof(text), "%s: %s",
                 how[hixl_peer_closed_why(peer)],
                 peer->close_reason[0] ? peer->close_reason : "closed");
    name.ptr = (const uint8_t*)HIXL_NOTIFY_PEER_ENDED;
    name.len = (uint32_t)strlen(HIXL_NOTIFY_PEER_ENDED);
    body.ptr = (const uint8_t*)text;
    body.len = (uint32_t)((n < (int)sizeof(text)) ? n : (int)sizeof(text) - 1);
    if (hixl_notify_enqueue(engine, peer->name, &name, &body) !=
        HIXL_SUCCESS) {
        hixl_log_warn("%s: its end was not queued as a notify (queue full "
                      "or out of memory): %s", peer->name, text);
    }
}

static void hixl_notify_peer_closed(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_notify_waiter_t *w;

    if ((peer->notify != NULL) && engine->opts.notify_peer_ended) {
        hixl_notify_peer_ended(engine, peer);   /* it was up: READY */
    }
    if (peer->notify != NULL) {
        for (w = peer->notify->waiters; w != NULL; w = w->next) {
            w->done   = 1;
            w->status = HIXL_NOTIFY_FAILED;
        }
        peer->notify->waiters = NULL;
    }
    hixl_req_for_each(&engine->reqs, peer, hixl_notify_fail_awaiting, peer);
}

static hixl_status_t hixl_notify_peer_ready(hixl_engine_t *engine,
                                            hixl_peer_t *peer)
{
    (void)engine;
    peer->notify = calloc(1, sizeof(*peer->notify));
    return (peer->notify != NULL) ? HIXL_SUCCESS :
           hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a peer");
}

static void hixl_notify_peer_destroy(hixl_peer_t *peer)
{
    free(peer->notify);
    peer->notify = NULL;
}

static const hixl_peer_hooks_t hixl_notify_hooks = {
    .name    = "notify",
    .ready   = hixl_notify_peer_ready,
    .closed  = hixl_notify_peer_closed,
    .destroy = hixl_notify_peer_destroy,
};

/* ---- the calls --------------------------------------------------------------- */

static int hixl_notify_acked(void *arg)
{
    return ((hixl_notify_waiter_t*)arg)->done;
}

static void hixl_notify_unwait(hixl_peer_t *peer, hixl_notify_waiter_t *waiter)
{
    hixl_notify_waiter_t **pp;

    for (pp = &peer->notify->waiters; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == waiter) {
            *pp = waiter->next;
            return;
        }
    }
}

/* What the answer means for the caller. */
static hixl_status_t hixl_notify_outcome(hixl_peer_t *peer,
                                         const hixl_notify_waiter_t *waiter,
                                         int32_t timeout_ms)
{
    if (!waiter->done) {
        return hixl_error(HIXL_TIMEOUT, "notify to %s: no answer within %d ms",
                          peer->name, (int)timeout_ms);
    }
    switch (waiter->status) {
    case HIXL_SUCCESS:
        return HIXL_SUCCESS;
    case HIXL_RESOURCE_EXHAUSTED:
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "notify to %s refused: its "
                          "notify queue is full", peer->name);
    case HIXL_NOTIFY_FAILED:
        /* like a transfer in flight when its connection ends */
        return hixl_error(HIXL_FAILED, "notify to %s: the connection closed "
                          "before it was queued there: %s", peer->name,
                          peer->close_reason);
    default:
        return hixl_error(waiter->status, "notify to %s refused: %s",
                          peer->name, hixl_strerror(waiter->status));
    }
}

hixl_status_t hixl_send_notify(hixl_engine_t *engine, const char *remote,
                               const hixl_notify_desc_t *notify,
                               int32_t timeout_ms)
{
    hixl_notify_waiter_t waiter;
    hixl_peer_t *peer;
    hixl_status_t status;
    hixl_msg_t msg;

    status = hixl_check_remote(engine, remote);
    if (status == HIXL_SUCCESS) {
        status = hixl_notify_check(engine, notify, "notify");
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_check_timeout(timeout_ms);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }

    pthread_mutex_lock(&engine->lock);
    status = hixl_peer_lookup(engine, remote, 0, &peer);
    if (status != HIXL_SUCCESS) {
        goto out;
    }
    memset(&waiter, 0, sizeof(waiter));
    waiter.seq = ++peer->notify->next_seq;
    memset(&msg, 0, sizeof(msg));
    msg.type          = CTRL_NOTIFY;
    msg.u.notify.seq  = waiter.seq;
    msg.u.notify.name = hixl_msg_bytes(notify->name, strlen(notify->name));
    msg.u.notify.msg  = hixl_msg_bytes(notify->msg, notify->msg_len);
    status = hixl_ctrl_send(peer, &msg);
    if (status != HIXL_SUCCESS) {
        status = hixl_error(HIXL_FAILED, "notify to %s: %s", peer->name,
                            hixl_error_message());
        goto out;
    }
    hixl_metrics_count(engine->metrics, HIXL_MX_NOTIFY_SENT, 1);
    waiter.next           = peer->notify->waiters;
    peer->notify->waiters = &waiter;
    hixl_peer_retain(peer);
    hixl_progress_kick(engine);
    hixl_engine_wait(engine, hixl_deadline_ns(timeout_ms), hixl_notify_acked,
                     &waiter);
    if (!waiter.done) {
        hixl_notify_unwait(peer, &waiter);
    }
    status = hixl_notify_outcome(peer, &waiter, timeout_ms);
    hixl_peer_release(peer);
out:
    pthread_mutex_unlock(&engine->lock);
    return status;
}

hixl_status_t hixl_get_notifies(hixl_engine_t *engine,
                                hixl_notify_t **notifies_p, size_t *count_p)
{
    struct hixl_notifies *q;
    hixl_notify_node_t *node;
    hixl_notify_t *out;
    size_t count, bytes, i;
    char *p;

    if ((engine == NULL) || (notifies_p == NULL) || (count_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL", !engine ? "engine" :
                          !notifies_p ? "notifies_p" : "count_p");
    }
    *notifies_p = NULL;
    *count_p    = 0;
    hixl_progress_pass(engine, HIXL_PROGRESS_POLL_CONTROL);   /* a loop may poll this */

    pthread_mutex_lock(&engine->lock);
    q     = engine->notifies;
    count = q->count;
    if (count == 0) {
        pthread_mutex_unlock(&engine->lock);
        return HIXL_SUCCESS;
    }
    /* one block: the array, then every entry's strings */
    bytes = count * sizeof(*out);
    for (node = q->head; node != NULL; node = node->next) {
        bytes += node->remote_len + node->name_len + node->msg_len + 3;
    }
    out = malloc(bytes);
    if (out == NULL) {
        pthread_mutex_unlock(&engine->lock);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %zu "
                          "notifies", count);
    }
    p = (char*)(out + count);
    for (i = 0; i < count; ++i) {
        node    = q->head;
        q->head = node->next;
        bytes   = node->remote_len + node->name_len + node->msg_len + 3;
        memcpy(p, node->data, bytes);
        out[i].remote  = p;
        out[i].name    = p + node->remote_len + 1;
        out[i].msg     = p + node->remote_len + node->name_len + 2;
        out[i].msg_len = node->msg_len;
        p += bytes;
        free(node);
    }
    q->tail  = NULL;
    q->count = 0;
    pthread_mutex_unlock(&engine->lock);

    *notifies_p = out;
    *count_p    = count;
    return HIXL_SUCCESS;
}

void hixl_release_notifies(hixl_notify_t *notifies, size_t count)
{
    (void)count;
    free(notifies);
}

uint32_t hixl_notify_queued(const hixl_engine_t *engine)
{
    return engine->notifies->count;
}

/* ---- set-up ------------------------------------------------------------------ */

hixl_status_t hixl_notify_init(hixl_engine_t *engine)
{
    unsigned when = HIXL_CTRL_ON_EITHER | HIXL_CTRL_WHEN_READY;
    hixl_status_t status;

    engine->notifies = calloc(1, sizeof(*engine->notifies));
    if (engine->notifies == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    status = hixl_peer_hooks_add(engine, &hixl_notify_hooks);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_ctrl_handle(engine, CTRL_NOTIFY, hixl_on_notify, when);
    hixl_ctrl_handle(engine, CTRL_NOTIFY_ACK, hixl_on_notify_ack, when);
    return HIXL_SUCCESS;
}

void hixl_notify_cleanup(hixl_engine_t *engine)
{
    hixl_notify_node_t *node;

    if (engine->notifies == NULL) {
        return;
    }
    while ((node = engine->notifies->head) != NULL) {
        engine->notifies->head = node->next;
        free(node);
    }
    free(engine->notifies);
    engine->notifies = NULL;
}
