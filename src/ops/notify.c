/*
 * Notifies: named messages between connected engines, over the control
 * connection (so they are ordered per peer on every transport), into a
 * bounded queue that hixl_get_notifies() drains.  Every notify is answered
 * with a NOTIFY_ACK carrying whether it was queued, so a sender learns that
 * the receiver's queue is full instead of the notify vanishing.
 */
#include "config.h"
#include "core/peer.h"
#include "util/args.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

struct hixl_notify_node {
    hixl_notify_node_t *next;
    size_t              remote_len;
    size_t              name_len;
    size_t              msg_len;
    char                data[];     /* remote \0 name \0 msg \0 */
};

hixl_status_t hixl_notify_enqueue(hixl_engine_t *engine, const char *remote,
                                  const ctrl_msg_t *msg)
{
    const ctrl_bytes_t *name = &msg->u.notify.name, *body = &msg->u.notify.msg;
    hixl_notify_node_t *node;
    char *p;

    if (body->len > engine->opts.max_notify_size) {
        hixl_log_warn("notify \"%.*s\" from %s: %u bytes exceed "
                      "hixl.MaxNotifySize %u; refused", (int)name->len,
                      (const char*)name->ptr, remote, body->len,
                      engine->opts.max_notify_size);
        return HIXL_PARAM_INVALID;
    }
    if (engine->notify_count >= engine->opts.notify_queue_depth) {
        hixl_log_info("notify from %s refused: queue full (%u, option "
                      "hixl.NotifyQueueDepth)", remote, engine->notify_count);
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

    if (engine->notify_tail != NULL) {
        engine->notify_tail->next = node;
    } else {
        engine->notify_head = node;
    }
    engine->notify_tail = node;
    engine->notify_count++;
    pthread_cond_broadcast(&engine->cond);
    return HIXL_SUCCESS;
}

void hixl_notify_queue_cleanup(hixl_engine_t *engine)
{
    hixl_notify_node_t *node;

    while ((node = engine->notify_head) != NULL) {
        engine->notify_head = node->next;
        free(node);
    }
    engine->notify_tail  = NULL;
    engine->notify_count = 0;
}

static int hixl_notify_acked(void *arg)
{
    return ((hixl_notify_waiter_t*)arg)->done;
}

static void hixl_notify_unwait(hixl_peer_t *peer, hixl_notify_waiter_t *waiter)
{
    hixl_notify_waiter_t **pp;

    for (pp = &peer->notify_waiters; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == waiter) {
            *pp = waiter->next;
            return;
        }
    }
}

hixl_status_t hixl_send_notify(hixl_engine_t *engine, const char *remote,
                               const hixl_notify_desc_t *notify,
                               int32_t timeout_ms)
{
    hixl_notify_waiter_t waiter;
    hixl_peer_t *peer;
    hixl_status_t status;
    ctrl_msg_t msg;
    size_t name_len;

    status = hixl_check_remote(engine, remote);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if ((notify == NULL) || (notify->name == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "notify%s is NULL",
                          notify ? " name" : "");
    }
    name_len = strlen(notify->name);
    if (name_len > HIXL_NOTIFY_NAME_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "notify name is %zu bytes, "
                          "limit %d", name_len, HIXL_NOTIFY_NAME_MAX);
    }
    if ((notify->msg == NULL) && (notify->msg_len != 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "notify msg is NULL with "
                          "msg_len %zu", notify->msg_len);
    }
    if (notify->msg_len > engine->opts.max_notify_size) {
        return hixl_error(HIXL_PARAM_INVALID, "notify msg is %zu bytes, "
                          "larger than hixl.MaxNotifySize (%u)",
                          notify->msg_len, engine->opts.max_notify_size);
    }
    status = hixl_check_timeout(timeout_ms);
    if (status != HIXL_SUCCESS) {
        return status;
    }

    pthread_mutex_lock(&engine->lock);
    status = hixl_peer_lookup(engine, remote, 0, &peer);
    if (status != HIXL_SUCCESS) {
        goto out;
    }
    memset(&waiter, 0, sizeof(waiter));
    waiter.seq = ++peer->next_seq;
    memset(&msg, 0, sizeof(msg));
    msg.type          = CTRL_NOTIFY;
    msg.u.notify.seq  = waiter.seq;
    msg.u.notify.name = ctrl_bytes(notify->name, name_len);
    msg.u.notify.msg  = ctrl_bytes(notify->msg, notify->msg_len);
    status = ctrl_conn_send(&peer->conn, &msg);
    if (status != HIXL_SUCCESS) {
        status = hixl_error(HIXL_NOTIFY_FAILED, "notify to %s: %s", peer->name,
                            hixl_error_message());
        goto out;
    }
    waiter.next          = peer->notify_waiters;
    peer->notify_waiters = &waiter;
    hixl_peer_retain(peer);
    hixl_progress_kick(engine);
    hixl_engine_wait(engine, hixl_deadline_ns(timeout_ms), hixl_notify_acked,
                     &waiter);
    if (!waiter.done) {
        hixl_notify_unwait(peer, &waiter);
        status = hixl_error(HIXL_TIMEOUT, "notify to %s: no answer within "
                            "%d ms", peer->name, (int)timeout_ms);
    } else if (waiter.status == HIXL_RESOURCE_EXHAUSTED) {
        status = hixl_error(HIXL_RESOURCE_EXHAUSTED, "notify to %s refused: "
                            "its notify queue is full", peer->name);
    } else if (waiter.status == HIXL_NOTIFY_FAILED) {
        status = hixl_error(HIXL_NOTIFY_FAILED, "notify to %s: connection "
                            "closed: %s", peer->name, peer->close_reason);
    } else if (waiter.status != HIXL_SUCCESS) {
        status = hixl_error(waiter.status, "notify to %s refused: %s",
                            peer->name, hixl_strerror(waiter.status));
    } else {
        status = HIXL_SUCCESS;
    }
    hixl_peer_release(peer);
out:
    pthread_mutex_unlock(&engine->lock);
    return status;
}

hixl_status_t hixl_get_notifies(hixl_engine_t *engine,
                                hixl_notify_t **notifies_p, size_t *count_p)
{
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
    if (!engine->opts.progress_thread) {
        hixl_progress_for_control(engine);
    }

    pthread_mutex_lock(&engine->lock);
    count = engine->notify_count;
    if (count == 0) {
        pthread_mutex_unlock(&engine->lock);
        return HIXL_SUCCESS;
    }
    /* one block: the array, then every entry's strings */
    bytes = count * sizeof(*out);
    for (node = engine->notify_head; node != NULL; node = node->next) {
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
        node                = engine->notify_head;
        engine->notify_head = node->next;
        bytes = node->remote_len + node->name_len + node->msg_len + 3;
        memcpy(p, node->data, bytes);
        out[i].remote  = p;
        out[i].name    = p + node->remote_len + 1;
        out[i].msg     = p + node->remote_len + node->name_len + 2;
        out[i].msg_len = node->msg_len;
        p += bytes;
        free(node);
    }
    engine->notify_tail  = NULL;
    engine->notify_count = 0;
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
