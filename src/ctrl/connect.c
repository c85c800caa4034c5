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
#include "core/peer.h"
#include "ctrl/peer_ended.h"
#include "util/args.h"
#include "util/auth.h"
#include "util/clock.h"
#include "util/log.h"

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

/* Everything after the connector is known (and authenticated, when the
 * engine has a secret): take its name, answer, send the table. */
static int hixl_handshake_accept(hixl_engine_t *engine, hixl_peer_t *peer)
{
    uint8_t proof[HIXL_AUTH_MAC_LEN];
    char reason[512];
    hixl_peer_t *old;
    ctrl_msg_t ack;

    old = hixl_peer_find(engine, peer->claimed, 0);
    if ((old != NULL) && (old != peer)) {
        if (hixl_conn_alive(old)) {
            snprintf(reason, sizeof(reason), "an engine named %s is already "
                     "connected to %s (engine names must be unique)",
                     peer->claimed, engine->name.canon);
            return hixl_refuse_hello(engine, peer, HIXL_ALREADY_CONNECTED,
                                     reason);
        }
        hixl_peer_close(engine, old, HIXL_FAILED, "replaced by a new "
                        "connection from the same engine name");
    }

    snprintf(peer->name, sizeof(peer->name), "%s", peer->claimed);
    snprintf(peer->alias, sizeof(peer->alias), "%s", peer->claimed);
    if (hixl_layer_peer_ready(engine, peer, peer->claimed_instance) !=
        HIXL_SUCCESS) {
        return hixl_refuse_hello(engine, peer, HIXL_RESOURCE_EXHAUSTED,
                                 hixl_error_message());
    }
    peer->state     = HIXL_PEER_READY;
    peer->app_owned = 1;
    hixl_ended_forget(engine, peer->name, 0);

    memset(&ack, 0, sizeof(ack));
    ack.type                    = CTRL_HELLO_ACK;
    ack.u.hello_ack.status      = HIXL_SUCCESS;
    ack.u.hello_ack.name        = ctrl_bytes(engine->name.canon,
                                             strlen(engine->name.canon));
    ack.u.hello_ack.worker_addr = ctrl_bytes(engine->worker_addr,
                                             engine->worker_addr_len);
    ack.u.hello_ack.host        = ctrl_bytes(engine->host_id,
                                             strlen(engine->host_id));
    ack.u.hello_ack.max_streams = engine->opts.max_streams;
    ack.u.hello_ack.max_layers  = engine->opts.max_layers;
    if (peer->auth_state == HIXL_AUTH_DONE) {
        if (hixl_auth_mac(engine->opts.secret, "listener",
                          peer->nonce_remote, peer->nonce_local,
                          engine->name.canon, peer->name, proof) !=
            HIXL_SUCCESS) {
            hixl_peer_close(engine, peer, HIXL_FAILED, "%s",
                            hixl_error_message());
            return 1;
        }
        ack.u.hello_ack.proof = ctrl_bytes(proof, sizeof(proof));
    }
    if ((ctrl_conn_send(&peer->conn, &ack) != HIXL_SUCCESS) ||
        (hixl_mem_announce(engine, peer) != HIXL_SUCCESS)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "handshake: %s",
                        hixl_error_message());
        return 1;
    }
    memset(&ack, 0, sizeof(ack));
    ack.type = CTRL_TABLE_END;
    ctrl_conn_send(&peer->conn, &ack);
    hixl_log_info("accepted %s%s", peer->name,
                  (peer->auth_state == HIXL_AUTH_DONE) ? " (authenticated)" :
                  "");
    return 0;
}

int hixl_handshake_hello(hixl_engine_t *engine, hixl_peer_t *peer,
                         const ctrl_msg_t *msg)
{
    char text[CTRL_MAX_NAME + 1], reason[512];
    hixl_name_t name;
    ctrl_msg_t challenge;

    if (peer->outgoing || (peer->state != HIXL_PEER_HANDSHAKE) ||
        (peer->claimed[0] != '\0')) {
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
    snprintf(peer->claimed, sizeof(peer->claimed), "%s", name.canon);
    peer->claimed_instance = msg->u.hello.instance;
    if (engine->opts.secret[0] == '\0') {
        return hixl_handshake_accept(engine, peer);
    }

    /* Nothing that grants access leaves before the peer proves the secret */
    if (msg->u.hello.nonce.len != HIXL_AUTH_NONCE_LEN) {
        return hixl_refuse_hello(engine, peer, HIXL_FAILED, "authentication "
                                 "required: this engine has hixl.Secret set "
                                 "and the connecting engine has not");
    }
    memcpy(peer->nonce_remote, msg->u.hello.nonce.ptr, HIXL_AUTH_NONCE_LEN);
    if (hixl_auth_nonce(peer->nonce_local) != HIXL_SUCCESS) {
        return hixl_refuse_hello(engine, peer, HIXL_FAILED,
                                 hixl_error_message());
    }
    memset(&challenge, 0, sizeof(challenge));
    challenge.type        = CTRL_AUTH_CHALLENGE;
    challenge.u.auth.data = ctrl_bytes(peer->nonce_local, HIXL_AUTH_NONCE_LEN);
    peer->auth_state      = HIXL_AUTH_CHALLENGED;
    ctrl_conn_send(&peer->conn, &challenge);
    return 0;
}

int hixl_handshake_auth(hixl_engine_t *engine, hixl_peer_t *peer,
                        const ctrl_msg_t *msg)
{
    const ctrl_bytes_t *data = &msg->u.auth.data;
    uint8_t mac[HIXL_AUTH_MAC_LEN];
    ctrl_msg_t response;

    if (msg->type == CTRL_AUTH_RESPONSE) {
        /* listener: check the connector's proof */
        if (peer->outgoing || (peer->auth_state != HIXL_AUTH_CHALLENGED)) {
            hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: "
                            "AUTH_RESPONSE out of order");
            return 1;
        }
        if ((hixl_auth_mac(engine->opts.secret, "connector",
                           peer->nonce_local, peer->nonce_remote,
                           peer->claimed, engine->name.canon, mac) !=
             HIXL_SUCCESS) || !hixl_auth_mac_ok(data->ptr, data->len, mac)) {
            hixl_log_warn("%s failed to authenticate (wrong hixl.Secret)",
                          peer->claimed);
            return hixl_refuse_hello(engine, peer, HIXL_FAILED,
                                     "authentication failed: the engines' "
                                     "hixl.Secret values differ");
        }
        peer->auth_state = HIXL_AUTH_DONE;
        return hixl_handshake_accept(engine, peer);
    }

    /* connector: answer the listener's challenge */
    if (!peer->outgoing || (peer->state != HIXL_PEER_HANDSHAKE) ||
        (peer->auth_state != HIXL_AUTH_NONE) ||
        (data->len != HIXL_AUTH_NONCE_LEN)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: "
                        "AUTH_CHALLENGE out of order or malformed");
        return 1;
    }
    if (engine->opts.secret[0] == '\0') {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s requires "
                        "authentication: set hixl.Secret (HIXL_SECRET) to its "
                        "shared secret", peer->name);
        return 1;
    }
    memcpy(peer->nonce_remote, data->ptr, HIXL_AUTH_NONCE_LEN);
    if (hixl_auth_mac(engine->opts.secret, "connector", peer->nonce_remote,
                      peer->nonce_local, engine->name.canon, peer->name,
                      mac) != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s",
                        hixl_error_message());
        return 1;
    }
    memset(&response, 0, sizeof(response));
    response.type        = CTRL_AUTH_RESPONSE;
    response.u.auth.data = ctrl_bytes(mac, sizeof(mac));
    peer->auth_state     = HIXL_AUTH_CHALLENGED;
    ctrl_conn_send(&peer->conn, &response);
    return 0;
}

/* Connector: with a secret, the listener must have proven it too. */
static int hixl_handshake_check_proof(hixl_engine_t *engine,
                                      hixl_peer_t *peer, const ctrl_msg_t *msg)
{
    uint8_t want[HIXL_AUTH_MAC_LEN];

    if (engine->opts.secret[0] == '\0') {
        return 0;
    }
    if (peer->auth_state != HIXL_AUTH_CHALLENGED) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s accepted without "
                        "authenticating (is hixl.Secret set there?); refusing "
                        "it", peer->name);
        return 1;
    }
    if ((hixl_auth_mac(engine->opts.secret, "listener", peer->nonce_local,
                       peer->nonce_remote, peer->name, engine->name.canon,
                       want) != HIXL_SUCCESS) ||
        !hixl_auth_mac_ok(msg->u.hello_ack.proof.ptr,
                          msg->u.hello_ack.proof.len, want)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s failed to prove the "
                        "shared secret; refusing it", peer->name);
        return 1;
    }
    peer->auth_state = HIXL_AUTH_DONE;
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
    if (hixl_handshake_check_proof(engine, peer, msg) != 0) {
        return 1;
    }
    if ((name->len != strlen(peer->name)) ||
        memcmp(name->ptr, peer->name, name->len)) {
        hixl_log_warn("connected to %s, which calls itself %.*s", peer->name,
                      (int)name->len, (const char*)name->ptr);
    }
    peer->remote_max_streams = msg->u.hello_ack.max_streams;
    peer->remote_max_layers  = msg->u.hello_ack.max_layers;
    peer->same_host = (msg->u.hello_ack.host.len == strlen(engine->host_id)) &&
                      !memcmp(msg->u.hello_ack.host.ptr, engine->host_id,
                              msg->u.hello_ack.host.len);
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

static int hixl_request_done(void *arg)
{
    return ucp_request_check_status(arg) != UCS_INPROGRESS;
}

/* Flush the new endpoint: it completes once UCX has finished wiring up
 * its lanes with the peer, so transfers start on a connected endpoint and a
 * peer that dies meets an idle endpoint, not a wire-up in progress (UCX
 * 1.13 asserts on some wire-up messages from a vanished peer). */
static hixl_status_t hixl_connect_wire_up(hixl_engine_t *engine,
                                          hixl_peer_t *peer,
                                          uint64_t deadline)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    ucs_status_t ustatus;

    memset(&param, 0, sizeof(param));
    sp = ucp_ep_flush_nbx(peer->ep, &param);
    if (sp == NULL) {
        return HIXL_SUCCESS;
    }
    if (UCS_PTR_IS_ERR(sp)) {
        ustatus = UCS_PTR_STATUS(sp);
        goto failed;
    }
    atomic_fetch_add(&engine->busy, 1);
    hixl_progress_kick(engine);
    hixl_engine_wait(engine, deadline, hixl_request_done, sp);
    atomic_fetch_sub(&engine->busy, 1);
    ustatus = ucp_request_check_status(sp);
    ucp_request_free(sp);
    if (ustatus == UCS_OK) {
        return HIXL_SUCCESS;
    }
    if (ustatus == UCS_INPROGRESS) {
        hixl_peer_close(engine, peer, HIXL_TIMEOUT, "UCX wire-up did not "
                        "finish in time");
        return hixl_error(HIXL_TIMEOUT, "connect to %s: UCX wire-up did not "
                          "finish within the timeout", peer->name);
    }
failed:
    hixl_peer_close(engine, peer, HIXL_FAILED, "UCX wire-up failed: %s",
                    ucs_status_string(ustatus));
    return hixl_error(HIXL_FAILED, "connect to %s: UCX wire-up failed: %s",
                      peer->name, ucs_status_string(ustatus));
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
    hello.u.hello.instance    = engine->instance;
    hello.u.hello.host        = ctrl_bytes(engine->host_id,
                                           strlen(engine->host_id));
    hello.u.hello.flags       = engine->listening ? HIXL_HELLO_FLAG_LISTENING : 0;
    if (engine->opts.secret[0] != '\0') {
        status = hixl_auth_nonce(peer->nonce_local);
        if (status != HIXL_SUCCESS) {
            hixl_peer_release(peer);
            return status;
        }
        hello.u.hello.nonce = ctrl_bytes(peer->nonce_local,
                                         HIXL_AUTH_NONCE_LEN);
    }
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
        status = hixl_connect_wire_up(engine, peer, deadline);
        if (status == HIXL_SUCCESS) {
            peer->app_owned = 1;
            hixl_ended_forget(engine, peer->name, 1);
            hixl_log_info("connected to %s (%zu remote regions)", peer->name,
                          peer->rtab_count);
        }
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

/* ": its connection was closed: <why>" when a connection to remote ended
 * lately, else "". */
static const char *hixl_closed_reason(hixl_engine_t *engine,
                                      const char *remote, int want_outgoing)
{
    static __thread char text[320];
    const char *reason = hixl_ended_reason(engine, remote,
                                           want_outgoing ? 1 : -1);

    if (reason == NULL) {
        return "";
    }
    snprintf(text, sizeof(text), ": its connection was closed: %s", reason);
    return text;
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
        return hixl_error(HIXL_NOT_CONNECTED, "not connected to %s%s%s",
                          remote, hixl_closed_reason(engine, remote,
                                                     want_outgoing),
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

    status = hixl_check_remote(engine, remote_engine);
    if (status == HIXL_SUCCESS) {
        status = hixl_check_timeout(timeout_ms);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&engine->lock);
    status = hixl_connect_locked(engine, remote_engine, timeout_ms);
    pthread_mutex_unlock(&engine->lock);
    return status;
}

/* ---- disconnecting ------------------------------------------------------- */

typedef struct hixl_disconnect_wait {
    ucs_status_ptr_t sp;     /* our flush, NULL when it completed at once */
    hixl_peer_t     *peer;
} hixl_disconnect_wait_t;

static int hixl_disconnect_drained(void *arg)
{
    hixl_disconnect_wait_t *w = arg;

    if (w->peer->state == HIXL_PEER_CLOSED) {
        return 1;   /* the other side ended it meanwhile */
    }
    return ((w->sp == NULL) || hixl_request_done(w->sp)) &&
           (atomic_load(&w->peer->inflight) == 0);
}

hixl_status_t hixl_disconnect(hixl_engine_t *engine, const char *remote_engine,
                              int32_t timeout_ms)
{
    hixl_disconnect_wait_t wait;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    hixl_peer_t *peer;
    hixl_status_t status = HIXL_SUCCESS;

    status = hixl_check_remote(engine, remote_engine);
    if (status == HIXL_SUCCESS) {
        status = hixl_check_timeout(timeout_ms);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }

    pthread_mutex_lock(&engine->lock);
    peer = hixl_peer_find(engine, remote_engine, -1);
    if (peer == NULL) {
        char reason[256];

        /* Ended from the other side (or by an error) while the application
         * still held it: the disconnect it owes is what ends it here. */
        if (hixl_ended_acknowledge(engine, remote_engine, reason,
                                   sizeof(reason))) {
            pthread_mutex_unlock(&engine->lock);
            hixl_log_info("disconnect from %s: its connection had already "
                          "ended: %s", remote_engine, reason);
            return HIXL_SUCCESS;
        }
        status = hixl_error(HIXL_NOT_CONNECTED, "not connected to %s%s",
                            remote_engine,
                            hixl_closed_reason(engine, remote_engine, 0));
        pthread_mutex_unlock(&engine->lock);
        return status;
    }
    peer->app_owned = 0;   /* ended by the application: nothing owed */
    hixl_peer_retain(peer);
    if (peer->ep != NULL) {
        /* Let what is in flight finish, within the timeout: our own flush
         * covers every operation posted so far, and the transfers' own
         * completions (their shared flushes, device work) must have come
         * in too, or they would be failed by the close below although
         * their data landed. */
        memset(&param, 0, sizeof(param));
        sp = ucp_ep_flush_nbx(peer->ep, &param);
        wait.sp   = UCS_PTR_IS_PTR(sp) ? sp : NULL;
        wait.peer = peer;
        atomic_fetch_add(&engine->busy, 1);
        hixl_progress_kick(engine);
        if (!hixl_engine_wait(engine, hixl_deadline_ns(timeout_ms),
                              hixl_disconnect_drained, &wait)) {
            status = hixl_error(HIXL_TIMEOUT, "disconnect from %s: "
                                "transfers still in flight after %d ms "
                                "were failed", peer->name, (int)timeout_ms);
        }
        atomic_fetch_sub(&engine->busy, 1);
        if (wait.sp != NULL) {
            ucp_request_free(wait.sp);
        }
    }
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED,
                    "disconnected by the application");
    hixl_peer_release(peer);
    pthread_mutex_unlock(&engine->lock);
    return status;
}
