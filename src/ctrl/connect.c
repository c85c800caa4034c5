/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connector's side of a connection: hixl_connect, the answers to
 * HELLO (HELLO_ACK, AUTH_CHALLENGE), the end of the initial table, and the
 * UCX wire-up.
 */
#include "config.h"
#include "ctrl/ctrl.h"
#include "core/xfer/am_data.h"
#include "core/peer/cma.h"
#include "core/worker/ucx_tls.h"
#include "util/args.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the listener's answers ------------------------------------------------ */

/* The listener challenged us: prove the secret. */
static int hixl_on_auth_challenge(hixl_engine_t *engine, hixl_peer_t *peer,
                                  const hixl_msg_t *msg)
{
    struct hixl_handshake  *handshake = peer->handshake;
    const hixl_msg_bytes_t *data  = &msg->u.auth.data;
    uint8_t mac[HIXL_AUTH_MAC_LEN];

    if ((handshake->auth_state != HIXL_AUTH_NONE) ||
        (data->len != HIXL_AUTH_NONCE_LEN)) {
        return hixl_ctrl_protocol_error(engine, peer, msg, "out of order or "
                                        "malformed");
    }
    if (engine->opts.secret[0] == '\0') {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s requires "
                        "authentication: set hixl.Secret (HIXL_SECRET) to its "
                        "shared secret", peer->name);
        return 1;
    }
    memcpy(handshake->nonce_remote, data->ptr, HIXL_AUTH_NONCE_LEN);
    if (hixl_auth_mac(engine->opts.secret, "connector",
                      handshake->nonce_remote, handshake->nonce_local,
                      engine->name.canon, peer->name, mac) != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s",
                        hixl_error_message());
        return 1;
    }
    hixl_ctrl_send_auth(peer, CTRL_AUTH_RESPONSE, mac, sizeof(mac),
                        HIXL_AUTH_CHALLENGED);
    return 0;
}

/* With a secret, the listener must have proven it too. */
static int hixl_check_proof(hixl_engine_t *engine, hixl_peer_t *peer,
                            const hixl_msg_t *msg)
{
    struct hixl_handshake *handshake = peer->handshake;
    uint8_t want[HIXL_AUTH_MAC_LEN];

    if (engine->opts.secret[0] == '\0') {
        return 0;
    }
    if (handshake->auth_state != HIXL_AUTH_CHALLENGED) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s accepted without "
                        "authenticating (is hixl.Secret set there?); refusing "
                        "it", peer->name);
        return 1;
    }
    if ((hixl_auth_mac(engine->opts.secret, "listener", handshake->nonce_local,
                       handshake->nonce_remote, peer->name, engine->name.canon,
                       want) != HIXL_SUCCESS) ||
        !hixl_auth_mac_ok(msg->u.hello_ack.proof.ptr,
                          msg->u.hello_ack.proof.len, want)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s failed to prove the "
                        "shared secret; refusing it", peer->name);
        return 1;
    }
    handshake->auth_state = HIXL_AUTH_DONE;
    return 0;
}

/* Whether this engine may copy straight into the listener's memory
 * (core/peer/cma.h): same host, a transport list that allows it, and the pid it
 * gave really is the listener. */
static void hixl_connect_cma(hixl_engine_t *engine, hixl_peer_t *peer,
                             const hixl_msg_t *msg)
{
    static const char *const cma[] = {"cma", "sm"};
    int err;

    peer->cma_pid = 0;
    if (!hixl_peer_same_host(peer) ||
        (engine->opts.data_path == HIXL_DATA_PATH_RMA) ||
        (engine->opts.data_path == HIXL_DATA_PATH_AM) ||
        !hixl_ucx_tls_allows(cma, sizeof(cma) / sizeof(cma[0]))) {
        return;
    }
    err = hixl_cma_probe((pid_t)msg->u.hello_ack.pid, peer->conn.fd);
    if (err != 0) {
        hixl_log_info("%s: no same-host copies (process %u: %s); library "
                      "messages carry what UCX cannot put", peer->name,
                      msg->u.hello_ack.pid, (err == ESTALE) ?
                      "it does not hold our connection: another process, or "
                      "another pid namespace" :
                      strerror(err));
        return;
    }
    peer->cma_pid = (pid_t)msg->u.hello_ack.pid;
}

static int hixl_on_hello_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                             const hixl_msg_t *msg)
{
    const hixl_msg_bytes_t *name = &msg->u.hello_ack.name;
    hixl_status_t status     = (hixl_status_t)msg->u.hello_ack.status;
    const hixl_msg_bytes_t *host = &msg->u.hello_ack.host;

    if (peer->ep != NULL) {
        return hixl_ctrl_protocol_error(engine, peer, msg, "out of order");
    }
    if (status != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, (status == HIXL_ALREADY_CONNECTED) ?
                        HIXL_ALREADY_CONNECTED : HIXL_FAILED,
                        "%s refused the connection: %.*s", peer->name,
                        (int)msg->u.hello_ack.reason.len,
                        (const char*)msg->u.hello_ack.reason.ptr);
        return 1;
    }
    if (hixl_check_proof(engine, peer, msg) != 0) {
        return 1;
    }
    if ((name->len != strlen(peer->name)) ||
        memcmp(name->ptr, peer->name, name->len)) {
        hixl_log_warn("connected to %s, which calls itself %.*s", peer->name,
                      (int)name->len, (const char*)name->ptr);
    }
    peer->handshake->remote_max_streams = msg->u.hello_ack.max_streams;
    peer->handshake->remote_max_layers  = msg->u.hello_ack.max_layers;
    hixl_peer_mark(peer, HIXL_PEER_F_SAME_HOST,
                   (host->len == strlen(engine->host_id)) &&
                   !memcmp(host->ptr, engine->host_id, host->len));
    peer->conn_id   = msg->u.hello_ack.conn;
    if (msg->u.hello_ack.resume.len == HIXL_RESUME_LEN) {
        memcpy(peer->handshake->resume, msg->u.hello_ack.resume.ptr,
               HIXL_RESUME_LEN);
        peer->handshake->has_resume = 1;
    }
    hixl_connect_cma(engine, peer, msg);
    if (hixl_peer_ep_create(engine, peer, msg->u.hello_ack.worker_addr.ptr,
                            msg->u.hello_ack.worker_addr.len) !=
        HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s", hixl_error_message());
        return 1;
    }
    return 0;
}

/* The listener's initial region table is complete: the connection is up. */
static int hixl_on_table_end(hixl_engine_t *engine, hixl_peer_t *peer,
                             const hixl_msg_t *msg)
{
    if (peer->ep == NULL) {
        return hixl_ctrl_protocol_error(engine, peer, msg, "out of order");
    }
    if (hixl_peer_set_ready(engine, peer) != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "%s", hixl_error_message());
        return 1;
    }
    return 0;
}

/* The listener's answer to a library WRITE (core/xfer/am_data.h). */
static int hixl_on_data_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                            const hixl_msg_t *msg)
{
    hixl_am_hdr_t h;

    hixl_am_hdr_init(&h);
    h.chan   = msg->u.data_ack.chan;
    h.cookie = msg->u.data_ack.cookie;
    h.addr   = msg->u.data_ack.addr;
    h.len    = msg->u.data_ack.len;
    h.flags  = (uint16_t)msg->u.data_ack.flags;
    h.status = (int32_t)msg->u.data_ack.status;
    if ((peer->chan == NULL) || (h.chan != peer->chan->id)) {
        return hixl_ctrl_protocol_error(engine, peer, msg, "for another "
                                        "connection");
    }
    hixl_am_acked(engine, &h);
    return 0;
}

void hixl_connect_init(hixl_engine_t *engine)
{
    unsigned when = HIXL_CTRL_ON_OUTGOING | HIXL_CTRL_IN_HANDSHAKE;

    hixl_ctrl_handle(engine, CTRL_HELLO_ACK, hixl_on_hello_ack, when);
    hixl_ctrl_handle(engine, CTRL_AUTH_CHALLENGE, hixl_on_auth_challenge,
                     when);
    hixl_ctrl_handle(engine, CTRL_TABLE_END, hixl_on_table_end, when);
    hixl_ctrl_handle(engine, CTRL_DATA_ACK, hixl_on_data_ack,
                     HIXL_CTRL_ON_OUTGOING | HIXL_CTRL_WHEN_READY);
}

/* ---- connecting ----------------------------------------------------------- */

static int hixl_handshake_over(void *arg)
{
    return ((hixl_peer_t*)arg)->state != HIXL_PEER_HANDSHAKE;
}

static int hixl_bind_over(void *arg)
{
    hixl_peer_t *peer = arg;

    return (peer->state == HIXL_PEER_CLOSED) || (peer->chan == NULL) ||
           (atomic_load(&peer->chan->bound) != 0);
}

/* Wait for BIND_ACK: the listener owns the endpoint UCX made for this
 * connection (core/peer/inbound.h), and the answer came back through UCX, so
 * its lanes are wired up both ways: transfers start on a connected endpoint,
 * and a peer that dies meets an idle endpoint, not a wire-up in progress (UCX
 * 1.13 asserts on some wire-up messages from a vanished peer). Waited for as
 * control traffic, not as a transfer: the progress thread sleeps until UCX's
 * event fd or BIND_ACK's broadcast wakes it, instead of polling between the
 * wire-up's messages: when many engines connect at once, that polling is CPU
 * the other wire-ups need. */
static hixl_status_t hixl_connect_wire_up(hixl_engine_t *engine,
                                          hixl_peer_t *peer,
                                          uint64_t deadline)
{
    if (!hixl_engine_wait(engine, deadline, hixl_bind_over, peer)) {
        hixl_peer_close(engine, peer, HIXL_TIMEOUT, "UCX wire-up did not "
                        "finish in time");
        return hixl_error(HIXL_TIMEOUT, "connect to %s: UCX wire-up did not "
                          "finish within the timeout", peer->name);
    }
    if (peer->state == HIXL_PEER_CLOSED) {
        return hixl_error(peer->close_status, "connect to %s: %s", peer->name,
                          peer->close_reason);
    }
    if (atomic_load(&peer->chan->bound) < 0) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "the listener refused the "
                        "UCX endpoint of the connection");
        return hixl_error(HIXL_FAILED, "connect to %s: it refused the UCX "
                          "endpoint of the connection", peer->name);
    }
    return HIXL_SUCCESS;
}

static hixl_status_t hixl_send_hello(hixl_engine_t *engine, hixl_peer_t *peer)
{
    struct hixl_handshake *handshake = peer->handshake;
    uint8_t resume[HIXL_RESUME_LEN];
    hixl_status_t status;
    uint64_t instance;
    hixl_msg_t hello;

    memset(&hello, 0, sizeof(hello));
    hello.type             = CTRL_HELLO;
    hello.u.hello.name     = hixl_msg_bytes(engine->name.canon,
                                            strlen(engine->name.canon));
    if (hixl_ended_resume(&engine->ctrl->ended, peer->name, 1, resume,
                          &instance)) {
        hello.u.hello.resume = hixl_msg_bytes(resume, sizeof(resume));
    }
    hello.u.hello.host     = hixl_msg_bytes(engine->host_id,
                                            strlen(engine->host_id));
    hello.u.hello.flags    = engine->listening ? HIXL_HELLO_FLAG_LISTENING : 0;
    if (engine->opts.secret[0] != '\0') {
        status = hixl_auth_nonce(handshake->nonce_local);
        if (status != HIXL_SUCCESS) {
            return status;
        }
        hello.u.hello.nonce =
            hixl_msg_bytes(handshake->nonce_local, HIXL_AUTH_NONCE_LEN);
    }
    hello.u.hello.worker_addr = hixl_msg_bytes(engine->worker_addr,
                                               engine->worker_addr_len);
    return hixl_ctrl_send(peer, &hello);
}

/* The handshake from HELLO to READY and the wire-up (peer referenced). */
static hixl_status_t hixl_connect_run(hixl_engine_t *engine, hixl_peer_t *peer,
                                      uint64_t deadline, int32_t timeout_ms)
{
    hixl_status_t status;

    hixl_progress_kick(engine);
    hixl_engine_wait(engine, deadline, hixl_handshake_over, peer);
    if (peer->state == HIXL_PEER_CLOSED) {
        return hixl_error(peer->close_status, "connect to %s: %s", peer->name,
                          peer->close_reason);
    }
    if (peer->state != HIXL_PEER_READY) {
        hixl_peer_close(engine, peer, HIXL_TIMEOUT, "no handshake answer "
                        "within %d ms", (int)timeout_ms);
        return hixl_error(HIXL_TIMEOUT, "connect to %s: no handshake answer "
                          "within %d ms", peer->name, (int)timeout_ms);
    }
    status = hixl_connect_wire_up(engine, peer, deadline);
    if (status == HIXL_SUCCESS) {
        peer->handshake->app_owned = 1;
        hixl_ended_forget(&engine->ctrl->ended, peer->name, 1);
        hixl_log_info("connected to %s (%zu remote regions)", peer->name,
                      peer->rtab.count);
    }
    return status;
}

hixl_status_t hixl_connect_locked(hixl_engine_t *engine, const char *remote,
                                  int32_t timeout_ms)
{
    uint64_t deadline = hixl_deadline_ns(timeout_ms);
    hixl_peer_t *peer;
    hixl_name_t name;
    hixl_status_t status;
    int fd;

    hixl_assert_locked(&engine->lock);
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
    status = hixl_sock_connect(&name, deadline, engine->opts.peer_timeout_ms,
                               &fd);
    pthread_mutex_lock(&engine->lock);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (hixl_peer_find(engine, name.canon, 1) != NULL) {
        close(fd);
        return hixl_error(HIXL_ALREADY_CONNECTED, "%s was connected by "
                          "another call meanwhile", name.canon);
    }
    peer = hixl_ctrl_peer_create(engine, fd, 1, deadline);
    if (peer == NULL) {
        close(fd);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "%s", hixl_error_message());
    }
    snprintf(peer->name, sizeof(peer->name), "%s", name.canon);
    snprintf(peer->alias, sizeof(peer->alias), "%s", remote);
    hixl_peer_retain(peer);
    status = hixl_send_hello(engine, peer);
    if (status != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, status, "%s", hixl_error_message());
        status = hixl_error(status, "connect to %s: %s", peer->name,
                            peer->close_reason);
    } else {
        status = hixl_connect_run(engine, peer, deadline, timeout_ms);
    }
    hixl_peer_release(peer);
    return status;
}

hixl_status_t hixl_connect(hixl_engine_t *engine, const char *remote_engine,
                           int32_t timeout_ms)
{
    hixl_status_t status;

    status = hixl_check_remote_timeout(engine, remote_engine, timeout_ms);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&engine->lock);
    status = hixl_connect_locked(engine, remote_engine, timeout_ms);
    pthread_mutex_unlock(&engine->lock);
    return status;
}
