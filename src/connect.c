/*
 * Connections: hixl_connect / hixl_disconnect, accepting, and the
 * handshake.
 *
 *   connector                              listener
 *   TCP connect  --------------------->    accept (peer in HANDSHAKE)
 *   HELLO(name, worker address) ------>    check the name; refuse a
 *                                          duplicate of a live peer
 *                 <--------------------    HELLO_ACK(status, name, worker
 *   create the UCX endpoint                address)
 *                 <--------------------    MEM_ADD x regions, TABLE_END
 *   unpack rkeys; READY: connect returns
 *
 * Engine names travel in the handshake, so a peer is known by the name it
 * gave itself, and the endpoint is created from the listener's worker
 * address exchanged here: this works with any UCX_TLS, including sm-only
 * and tcp-only, unlike UCX's sockaddr client/server path.
 */
#include "config.h"
#include "peer.h"
#include "clock.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HIXL_HELLO_FLAG_LISTENING 1u
#define HIXL_MAX_PEERS            4096

/* ---- accepting ------------------------------------------------------------ */

static unsigned hixl_peer_count(hixl_engine_t *engine)
{
    hixl_peer_t *peer;
    unsigned n = 0;

    for (peer = engine->peers; peer != NULL; peer = peer->next) {
        ++n;
    }
    return n;
}

void hixl_accept(hixl_engine_t *engine)
{
    hixl_peer_t *peer;
    int fd;

    for (;;) {
        fd = accept4(engine->listen_fd, NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if ((errno != EAGAIN) && (errno != EWOULDBLOCK) &&
                (errno != EINTR)) {
                hixl_log_warn("accept on %s: %s", engine->name.canon,
                              strerror(errno));
            }
            return;
        }
        if (hixl_peer_count(engine) >= HIXL_MAX_PEERS) {
            hixl_log_warn("refusing a connection: %d peers already",
                          HIXL_MAX_PEERS);
            close(fd);
            continue;
        }
        ctrl_sock_setup(fd);
        peer = hixl_peer_create(engine, fd, 0);
        if (peer == NULL) {
            close(fd);
            continue;
        }
        peer->handshake_deadline = hixl_deadline_ns(
                engine->opts.connect_timeout_ms);
        if (hixl_peer_add(engine, peer) != HIXL_SUCCESS) {
            hixl_peer_release(peer);
        }
    }
}

/* Is the old connection of a peer that says hello again still alive?  A
 * restarted engine reconnects before we may have read the EOF of its old
 * connection; peek for it rather than refuse the new one. */
static int hixl_conn_alive(hixl_peer_t *peer)
{
    char c;
    ssize_t n;

    if (peer->conn.fd < 0) {
        return 0;
    }
    n = recv(peer->conn.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return (n > 0) || ((n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK)));
}

static int hixl_refuse_hello(hixl_engine_t *engine, hixl_peer_t *peer,
                             hixl_status_t status, const char *reason)
{
    ctrl_msg_t ack;

    hixl_log_info("refusing a connection: %s", reason);
    memset(&ack, 0, sizeof(ack));
    ack.type                 = CTRL_HELLO_ACK;
    ack.u.hello_ack.status   = (uint32_t)status;
    ack.u.hello_ack.name     = ctrl_bytes(engine->name.canon,
                                          strlen(engine->name.canon));
    ack.u.hello_ack.reason   = ctrl_bytes(reason, strlen(reason));
    ctrl_conn_send(&peer->conn, &ack);
    hixl_peer_close(engine, peer, status, "%s", reason);
    return 1;
}

int hixl_handshake_hello(hixl_engine_t *engine, hixl_peer_t *peer,
                         const ctrl_msg_t *msg)
{
    char text[CTRL_MAX_NAME + 1], reason[512];
    hixl_peer_t *old;
    hixl_name_t name;
    ctrl_msg_t ack;

    if (peer->outgoing || (peer->state != HIXL_PEER_HANDSHAKE)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: HELLO "
                        "out of order");
        return 1;
    }
    memcpy(text, msg->u.hello.name.ptr, msg->u.hello.name.len);
    text[msg->u.hello.name.len] = '\0';
    if ((strlen(text) != msg->u.hello.name.len) ||
        (hixl_name_parse(text, &name) != HIXL_SUCCESS)) {
        snprintf(reason, sizeof(reason), "bad engine name in HELLO: %s",
                 hixl_error_message());
        return hixl_refuse_hello(engine, peer, HIXL_PARAM_INVALID, reason);
    }
    old = hixl_peer_find(engine, name.canon, 0);
    if ((old != NULL) && (old != peer)) {
        if (hixl_conn_alive(old)) {
            snprintf(reason, sizeof(reason), "an engine named %s is already "
                     "connected to %s (engine names must be unique)",
                     name.canon, engine->name.canon);
            return hixl_refuse_hello(engine, peer, HIXL_ALREADY_CONNECTED,
                                     reason);
        }
        hixl_peer_close(engine, old, HIXL_FAILED, "replaced by a new "
                        "connection from the same engine name");
    }

    snprintf(peer->name, sizeof(peer->name), "%s", name.canon);
    snprintf(peer->alias, sizeof(peer->alias), "%s", name.canon);
    peer->state = HIXL_PEER_READY;

    memset(&ack, 0, sizeof(ack));
    ack.type                    = CTRL_HELLO_ACK;
    ack.u.hello_ack.status      = HIXL_SUCCESS;
    ack.u.hello_ack.name        = ctrl_bytes(engine->name.canon,
                                             strlen(engine->name.canon));
    ack.u.hello_ack.worker_addr = ctrl_bytes(engine->worker_addr,
                                             engine->worker_addr_len);
    if ((ctrl_conn_send(&peer->conn, &ack) != HIXL_SUCCESS) ||
        (hixl_mem_announce(engine, peer) != HIXL_SUCCESS)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "handshake: %s",
                        hixl_error_message());
        return 1;
    }
    memset(&ack, 0, sizeof(ack));
    ack.type = CTRL_TABLE_END;
    ctrl_conn_send(&peer->conn, &ack);
    hixl_log_info("accepted %s", peer->name);
    return 0;
}

int hixl_handshake_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                       const ctrl_msg_t *msg)
{
    const ctrl_bytes_t *name = &msg->u.hello_ack.name;
    hixl_status_t status     = (hixl_status_t)msg->u.hello_ack.status;

    if (!peer->outgoing || (peer->state != HIXL_PEER_HANDSHAKE) ||
        (peer->ep != NULL)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: "
                        "HELLO_ACK out of order");
        return 1;
    }
    if (status != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, (status == HIXL_ALREADY_CONNECTED) ?
                        HIXL_ALREADY_CONNECTED : HIXL_FAILED,
                        "%s refused the connection: %.*s", peer->name,
                        (int)msg->u.hello_ack.reason.len,
                        (const char*)msg->u.hello_ack.reason.ptr);
        return 1;
    }
    if ((name->len != strlen(peer->name)) ||
        memcmp(name->ptr, peer->name, name->len)) {
        hixl_log_warn("connected to %s, which calls itself %.*s", peer->name,
                      (int)name->len, (const char*)name->ptr);
    }
    if (hixl_peer_create_ep(engine, peer, &msg->u.hello_ack.worker_addr) !=
        HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s", hixl_error_message());
        return 1;
    }
    return 0;
}

/* ---- connecting ----------------------------------------------------------- */

static int hixl_handshake_over(void *arg)
{
    return ((hixl_peer_t*)arg)->state != HIXL_PEER_HANDSHAKE;
}

hixl_status_t hixl_connect_locked(hixl_engine_t *engine, const char *remote,
                                  int32_t timeout_ms)
{
    uint64_t deadline = hixl_deadline_ns(timeout_ms);
    hixl_peer_t *peer;
    hixl_name_t name;
    hixl_status_t status;
    ctrl_msg_t hello;
    int fd;

    status = hixl_name_parse(remote, &name);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (name.port == 0) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is a client-only engine name "
                          "(no port): only listening engines (\"ip:port\") "
                          "can be connected to", remote);
    }
    peer = hixl_peer_find(engine, name.canon, 1);
    if (peer != NULL) {
        return hixl_error(HIXL_ALREADY_CONNECTED, "%s %s", name.canon,
                          (peer->state == HIXL_PEER_READY) ?
                          "is already connected" :
                          "is being connected by another call");
    }

    pthread_mutex_unlock(&engine->lock);
    status = ctrl_sock_connect(&name, deadline, &fd);
    pthread_mutex_lock(&engine->lock);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (hixl_peer_find(engine, name.canon, 1) != NULL) {
        close(fd);
        return hixl_error(HIXL_ALREADY_CONNECTED, "%s was connected by "
                          "another call meanwhile", name.canon);
    }

    peer = hixl_peer_create(engine, fd, 1);
    if (peer == NULL) {
        close(fd);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a peer");
    }
    snprintf(peer->name, sizeof(peer->name), "%s", name.canon);
    snprintf(peer->alias, sizeof(peer->alias), "%s", remote);
    peer->handshake_deadline = deadline;

    memset(&hello, 0, sizeof(hello));
    hello.type                = CTRL_HELLO;
    hello.u.hello.name        = ctrl_bytes(engine->name.canon,
                                           strlen(engine->name.canon));
    hello.u.hello.flags       = engine->listening ? HIXL_HELLO_FLAG_LISTENING : 0;
    hello.u.hello.worker_addr = ctrl_bytes(engine->worker_addr,
                                           engine->worker_addr_len);
    status = ctrl_conn_send(&peer->conn, &hello);
    if (status == HIXL_SUCCESS) {
        status = hixl_peer_add(engine, peer);
    }
    if (status != HIXL_SUCCESS) {
        hixl_peer_release(peer);
        return status;
    }

    hixl_peer_retain(peer);
    hixl_progress_kick(engine);
    hixl_engine_wait(engine, deadline, hixl_handshake_over, peer);
    if (peer->state == HIXL_PEER_READY) {
        status = HIXL_SUCCESS;
        hixl_log_info("connected to %s (%zu remote regions)", peer->name,
                      peer->rtab_count);
    } else if (peer->state == HIXL_PEER_CLOSED) {
        status = hixl_error(peer->close_status, "connect to %s: %s",
                            peer->name, peer->close_reason);
    } else {
        hixl_peer_close(engine, peer, HIXL_TIMEOUT, "no handshake answer "
                        "within %d ms", (int)timeout_ms);
        status = hixl_error(HIXL_TIMEOUT, "connect to %s: no handshake answer "
                            "within %d ms", peer->name, (int)timeout_ms);
    }
    hixl_peer_release(peer);
    return status;
}

hixl_status_t hixl_peer_lookup(hixl_engine_t *engine, const char *remote,
                               int want_outgoing, hixl_peer_t **peer_p)
{
    hixl_peer_t *peer = hixl_peer_find(engine, remote, want_outgoing ? 1 : -1);
    hixl_status_t status;

    if ((peer == NULL) && want_outgoing && engine->opts.auto_connect) {
        status = hixl_connect_locked(engine, remote,
                                     engine->opts.connect_timeout_ms);
        if ((status != HIXL_SUCCESS) && (status != HIXL_ALREADY_CONNECTED)) {
            return hixl_error(status, "AutoConnect: %s", hixl_error_message());
        }
        peer = hixl_peer_find(engine, remote, 1);
    }
    if (peer == NULL) {
        return hixl_error(HIXL_NOT_CONNECTED, "not connected to %s%s", remote,
                          want_outgoing ? " (call hixl_connect first, or set "
                          "AutoConnect)" : "");
    }
    if (peer->state != HIXL_PEER_READY) {
        return hixl_error(HIXL_NOT_CONNECTED, "connect to %s is still in "
                          "progress", remote);
    }
    *peer_p = peer;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_connect(hixl_engine_t *engine, const char *remote_engine,
                           int32_t timeout_ms)
{
    hixl_status_t status;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((remote_engine == NULL) || (*remote_engine == '\0')) {
        return hixl_error(HIXL_PARAM_INVALID, "remote engine name is %s",
                          remote_engine ? "empty" : "NULL");
    }
    if (timeout_ms <= 0) {
        return hixl_error(HIXL_PARAM_INVALID, "timeout_ms %d is not positive",
                          (int)timeout_ms);
    }
    pthread_mutex_lock(&engine->lock);
    status = hixl_connect_locked(engine, remote_engine, timeout_ms);
    pthread_mutex_unlock(&engine->lock);
    return status;
}

/* ---- disconnecting ------------------------------------------------------- */

static int hixl_request_done(void *arg)
{
    return ucp_request_check_status(arg) != UCS_INPROGRESS;
}

hixl_status_t hixl_disconnect(hixl_engine_t *engine, const char *remote_engine,
                              int32_t timeout_ms)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    hixl_peer_t *peer;
    hixl_status_t status = HIXL_SUCCESS;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((remote_engine == NULL) || (*remote_engine == '\0')) {
        return hixl_error(HIXL_PARAM_INVALID, "remote engine name is %s",
                          remote_engine ? "empty" : "NULL");
    }
    if (timeout_ms <= 0) {
        return hixl_error(HIXL_PARAM_INVALID, "timeout_ms %d is not positive",
                          (int)timeout_ms);
    }

    pthread_mutex_lock(&engine->lock);
    peer = hixl_peer_find(engine, remote_engine, -1);
    if (peer == NULL) {
        pthread_mutex_unlock(&engine->lock);
        return hixl_error(HIXL_NOT_CONNECTED, "not connected to %s",
                          remote_engine);
    }
    hixl_peer_retain(peer);
    if (peer->ep != NULL) {
        /* let what is in flight finish, within the timeout */
        memset(&param, 0, sizeof(param));
        sp = ucp_ep_flush_nbx(peer->ep, &param);
        if (UCS_PTR_IS_PTR(sp)) {
            atomic_fetch_add(&engine->busy, 1);
            hixl_progress_kick(engine);
            if (!hixl_engine_wait(engine, hixl_deadline_ns(timeout_ms),
                                  hixl_request_done, sp)) {
                status = hixl_error(HIXL_TIMEOUT, "disconnect from %s: "
                                    "transfers still in flight after %d ms "
                                    "were failed", peer->name,
                                    (int)timeout_ms);
            }
            atomic_fetch_sub(&engine->busy, 1);
            ucp_request_free(sp);
        }
    }
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED,
                    "disconnected by the application");
    hixl_peer_release(peer);
    pthread_mutex_unlock(&engine->lock);
    return status;
}
