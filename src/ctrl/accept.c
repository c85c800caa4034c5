/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The listener's side of a connection: the listening socket, accepting,
 * HELLO and the authentication of the connector, and the acceptance.
 */
#include "config.h"
#include "ctrl/ctrl.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* The socket core bound when the engine was created (core/engine.h). */
hixl_status_t hixl_accept_listen(hixl_engine_t *engine)
{
    hixl_assert(engine->name_fd >= 0);
    engine->ctrl->listen_fd = engine->name_fd;
    engine->name_fd         = -1;
    return hixl_progress_watch(engine, engine->ctrl->listen_fd,
                               HIXL_POLL_LISTEN, 0);
}

/* The oldest accepted connection still in its handshake, preferring one
 * that has not even said HELLO (an idle socket over a slow engine), and
 * how many there are. */
static hixl_peer_t *hixl_accept_oldest(hixl_engine_t *engine, unsigned *n_p)
{
    hixl_peer_t *peer, *silent = NULL, *any = NULL;
    unsigned n = 0;

    for (peer = engine->peers.head; peer != NULL; peer = peer->next) {
        if (hixl_peer_outgoing(peer) || (peer->state != HIXL_PEER_HANDSHAKE) ||
            (peer->handshake == NULL)) {
            continue;
        }
        ++n;
        if ((any == NULL) ||
            (peer->handshake->deadline_ns < any->handshake->deadline_ns)) {
            any = peer;
        }
        if ((peer->handshake->claimed[0] == '\0') &&
            ((silent == NULL) || (peer->handshake->deadline_ns <
                                  silent->handshake->deadline_ns))) {
            silent = peer;
        }
    }
    *n_p = n;
    return (silent != NULL) ? silent : any;
}

/* Room for one more handshake: a full table gives up its oldest entry.
 * Real engines say HELLO right after connecting and leave the table within
 * a round trip, so what is oldest is what stalls. */
static void hixl_accept_make_room(hixl_engine_t *engine)
{
    hixl_peer_t *victim;
    unsigned n;

    victim = hixl_accept_oldest(engine, &n);
    if ((n >= HIXL_MAX_HANDSHAKES) && (victim != NULL)) {
        hixl_log_info("%u connections in their handshake: closing the "
                      "oldest to take a new one", n);
        hixl_metrics_count(engine->metrics, HIXL_MX_EVICTED +
                           HIXL_STATS_EVICTED_FULL, 1);
        hixl_peer_close(engine, victim, HIXL_RESOURCE_EXHAUSTED, "evicted: "
                        "%d connections were in their handshake and this one "
                        "was the oldest", HIXL_MAX_HANDSHAKES);
    }
}

static void hixl_accept_event(hixl_engine_t *engine, uint64_t key,
                              uint32_t events)
{
    hixl_peer_t *peer;
    unsigned i;
    int fd;

    for (i = 0; i < HIXL_ACCEPT_BATCH; ++i) {
        fd = accept4(engine->ctrl->listen_fd, NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if ((errno != EAGAIN) && (errno != EWOULDBLOCK) &&
                (errno != EINTR)) {
                hixl_log_warn("accept on %s: %s", engine->name.canon,
                              strerror(errno));
            }
            return;
        }
        hixl_accept_make_room(engine);
        if (engine->peers.count >= HIXL_MAX_PEERS) {
            hixl_log_warn("refusing a connection: %d peers already",
                          HIXL_MAX_PEERS);
            hixl_metrics_count(engine->metrics, HIXL_MX_REFUSED +
                               HIXL_STATS_REFUSED_ADMISSION, 1);
            close(fd);
            continue;
        }
        hixl_sock_setup(fd, engine->opts.peer_timeout_ms);
        peer = hixl_ctrl_peer_create(engine, fd, 0, hixl_deadline_ns(
                engine->opts.handshake_timeout_ms));
        if (peer == NULL) {
            close(fd);
            continue;
        }
        /* a stranger until it has said who it is (and proven it) */
        hixl_conn_expect(&peer->conn, (1ull << CTRL_HELLO) |
                                      (1ull << CTRL_AUTH_RESPONSE));
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

/* Refuse a connector, telling it why, and count it under why. */
static int hixl_refuse_hello(hixl_engine_t *engine, hixl_peer_t *peer,
                             hixl_stats_refused_t why, hixl_status_t status,
                             const char *reason)
{
    hixl_msg_t ack;

    hixl_log_info("refusing a connection: %s", reason);
    hixl_metrics_count(engine->metrics, HIXL_MX_REFUSED + why, 1);
    memset(&ack, 0, sizeof(ack));
    ack.type               = CTRL_HELLO_ACK;
    ack.u.hello_ack.status = (uint32_t)status;
    ack.u.hello_ack.name   = hixl_msg_bytes(engine->name.canon,
                                            strlen(engine->name.canon));
    ack.u.hello_ack.reason = hixl_msg_bytes(reason, strlen(reason));
    hixl_ctrl_send(peer, &ack);
    hixl_peer_close(engine, peer, status, "%s", reason);
    return 1;
}

/* The acceptance: our name, worker address, host and limits, and our
 * proof when the connector authenticated. */
static hixl_status_t hixl_send_hello_ack(hixl_engine_t *engine,
                                         hixl_peer_t *peer)
{
    struct hixl_handshake *handshake = peer->handshake;
    uint8_t proof[HIXL_AUTH_MAC_LEN];
    hixl_msg_t ack;

    memset(&ack, 0, sizeof(ack));
    ack.type                    = CTRL_HELLO_ACK;
    ack.u.hello_ack.status      = HIXL_SUCCESS;
    ack.u.hello_ack.name        = hixl_msg_bytes(engine->name.canon,
                                                 strlen(engine->name.canon));
    ack.u.hello_ack.worker_addr = hixl_msg_bytes(engine->worker_addr,
                                                 engine->worker_addr_len);
    ack.u.hello_ack.host        = hixl_msg_bytes(engine->host_id,
                                                 strlen(engine->host_id));
    ack.u.hello_ack.max_streams = engine->opts.max_streams;
    ack.u.hello_ack.max_layers  = engine->opts.max_layers;
    ack.u.hello_ack.conn        = peer->conn_id;
    ack.u.hello_ack.pid =
        handshake->same_host ? (uint32_t)getpid() : 0;
    if (hixl_ctrl_random(handshake->resume, sizeof(handshake->resume)) ==
        HIXL_SUCCESS) {
        handshake->has_resume = 1;
        ack.u.hello_ack.resume =
            hixl_msg_bytes(handshake->resume, sizeof(handshake->resume));
    }
    if (handshake->auth_state == HIXL_AUTH_DONE) {
        if (hixl_auth_mac(engine->opts.secret, "listener",
                          handshake->nonce_remote, handshake->nonce_local,
                          engine->name.canon, peer->name,
                          proof) != HIXL_SUCCESS) {
            return HIXL_FAILED;
        }
        ack.u.hello_ack.proof = hixl_msg_bytes(proof, sizeof(proof));
    }
    return hixl_ctrl_send(peer, &ack);
}

/* Whether the token the connector presented is the one this listener
 * issued to the connection ref (a live peer's handshake, or an ended
 * record's). */
static int hixl_resume_matches(const struct hixl_handshake *handshake,
                               const uint8_t               *issued)
{
    return handshake->claimed_has_resume &&
           hixl_ctrl_token_eq(issued, handshake->claimed_resume,
                              HIXL_RESUME_LEN);
}

/*
 * A connector says hello under a name that has a connection here already. The
 * engine that held the old connection proves it is the same by the resume token
 * this listener issued to that connection alone: it has given the old
 * connection up (it can hold only one to us), so the new one replaces it, and
 * the old one is closed first, endpoint included, so that nothing it still
 * sends can land (core/peer/inbound.h).  The same goes when the old connection
 * is dead.  Anyone else under the same name while the old connection lives is
 * refused, saying when the old one would be given up if it is silent.  Returns
 * 1 when peer was refused; *instance_p is the old connection's remote_instance
 * when the same engine is back, else 0.
 */
static int hixl_handshake_replace(hixl_engine_t *engine, hixl_peer_t *peer,
                                  uint64_t *instance_p)
{
    struct hixl_handshake *handshake = peer->handshake;
    uint8_t issued[HIXL_RESUME_LEN];
    char reason[640];
    hixl_name_t claimed;
    hixl_peer_t *old;
    uint64_t ended_instance;
    int same;

    *instance_p = 0;
    old         = hixl_peer_find(engine, handshake->claimed, 0);
    if ((old == NULL) || (old == peer)) {
        /* a connection that ended already: the same engine, if it holds
         * that connection's token */
        if (hixl_ended_resume(&engine->ctrl->ended, handshake->claimed, 0,
                              issued, &ended_instance) &&
            hixl_resume_matches(handshake, issued)) {
            *instance_p = ended_instance;
        }
        return 0;
    }
    same = (old->handshake != NULL) && old->handshake->has_resume &&
           hixl_resume_matches(handshake, old->handshake->resume);
    if (!same && hixl_conn_alive(old)) {
        int client_only =
            (hixl_name_parse(handshake->claimed, &claimed) == HIXL_SUCCESS) &&
            (claimed.port == 0);

        snprintf(reason, sizeof(reason), "another engine named %s is "
                 "connected to %s (engine names must be unique); if it is "
                 "gone, it is dropped within hixl.PeerTimeoutMs (%d ms) of "
                 "its last sign of life: retry after that%s",
                 handshake->claimed, engine->name.canon,
                 engine->opts.peer_timeout_ms, client_only ?
                 ". Client-only engines of one host get names of their own "
                 "by listening (\"ip:0\", hixl.ListenEphemeral=1)" : "");
        return hixl_refuse_hello(engine, peer,
                                 HIXL_STATS_REFUSED_DUPLICATE_NAME,
                                 HIXL_FAILED, reason);
    }
    *instance_p = same ? old->remote_instance : 0;
    hixl_peer_close_why(old, same ? HIXL_STATS_CLOSED_DISCONNECT :
                                    HIXL_STATS_CLOSED_PEER_DEATH);
    hixl_peer_close(engine, old, HIXL_FAILED, "replaced by a new connection "
                    "from %s", same ? "the same engine" :
                    "an engine of the same name");
    return 0;
}

/* Everything after the connector is known (and authenticated, when the
 * engine has a secret): take its name, answer, send the table. */
static int hixl_handshake_accept(hixl_engine_t *engine, hixl_peer_t *peer)
{
    struct hixl_handshake *handshake = peer->handshake;
    uint64_t instance;
    char reason[512];
    hixl_msg_t end;

    if (hixl_handshake_replace(engine, peer, &instance)) {
        return 1;
    }

    snprintf(peer->name, sizeof(peer->name), "%s", handshake->claimed);
    snprintf(peer->alias, sizeof(peer->alias), "%s", handshake->claimed);
    /* the engine behind the name, as far as this listener can tell: the
     * same as before only when it proved so (ops/layer_wait.c keeps a
     * source's layer signals across its reconnects, not across engines) */
    peer->remote_instance = (instance != 0) ? instance :
                            ++engine->ctrl->next_instance;
    if (hixl_peer_set_ready(engine, peer) != HIXL_SUCCESS) {
        snprintf(reason, sizeof(reason), "%s", hixl_error_message());
        return hixl_refuse_hello(engine, peer, HIXL_STATS_REFUSED_ADMISSION,
                                 HIXL_RESOURCE_EXHAUSTED, reason);
    }
    handshake->app_owned = 1;
    hixl_ended_forget(&engine->ctrl->ended, peer->name, 0);
    hixl_conn_expect(&peer->conn, 0);   /* known now: every message */

    if ((hixl_inbound_open(engine, peer) != HIXL_SUCCESS) ||
        (hixl_send_hello_ack(engine, peer) != HIXL_SUCCESS) ||
        (hixl_peer_accepted(engine, peer) != HIXL_SUCCESS)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "handshake: %s",
                        hixl_error_message());
        return 1;
    }
    /* the region table the accepted hook queued leaves with it */
    memset(&end, 0, sizeof(end));
    end.type = CTRL_TABLE_END;
    hixl_ctrl_send(peer, &end);
    hixl_log_info("accepted %s%s", peer->name,
                  (handshake->auth_state == HIXL_AUTH_DONE) ?
                      " (authenticated)" :
                      "");
    return 0;
}

static int hixl_on_hello(hixl_engine_t *engine, hixl_peer_t *peer,
                         const hixl_msg_t *msg)
{
    struct hixl_handshake *handshake = peer->handshake;
    char text[CTRL_MAX_NAME + 1], reason[512];
    hixl_name_t name;

    if (handshake->claimed[0] != '\0') {
        return hixl_ctrl_protocol_error(engine, peer, msg, "out of order");
    }
    memcpy(text, msg->u.hello.name.ptr, msg->u.hello.name.len);
    text[msg->u.hello.name.len] = '\0';
    if ((strlen(text) != msg->u.hello.name.len) ||
        (hixl_name_parse(text, &name) != HIXL_SUCCESS)) {
        snprintf(reason, sizeof(reason), "bad engine name in HELLO: %s",
                 hixl_error_message());
        return hixl_refuse_hello(engine, peer, HIXL_STATS_REFUSED_INVALID,
                                 HIXL_PARAM_INVALID, reason);
    }
    snprintf(handshake->claimed, sizeof(handshake->claimed), "%s", name.canon);
    handshake->claimed_has_resume =
        (msg->u.hello.resume.len == HIXL_RESUME_LEN);
    if (handshake->claimed_has_resume) {
        memcpy(handshake->claimed_resume, msg->u.hello.resume.ptr,
               HIXL_RESUME_LEN);
    }
    handshake->same_host =
        (msg->u.hello.host.len == strlen(engine->host_id)) &&
        !memcmp(msg->u.hello.host.ptr, engine->host_id, msg->u.hello.host.len);
    if (engine->opts.secret[0] == '\0') {
        return hixl_handshake_accept(engine, peer);
    }

    /* Nothing that grants access leaves before the peer proves the secret */
    if (msg->u.hello.nonce.len != HIXL_AUTH_NONCE_LEN) {
        return hixl_refuse_hello(engine, peer,
                                 HIXL_STATS_REFUSED_AUTHENTICATION,
                                 HIXL_FAILED, "authentication "
                                 "required: this engine has hixl.Secret set "
                                 "and the connecting engine has not");
    }
    memcpy(handshake->nonce_remote, msg->u.hello.nonce.ptr,
           HIXL_AUTH_NONCE_LEN);
    if (hixl_auth_nonce(handshake->nonce_local) != HIXL_SUCCESS) {
        snprintf(reason, sizeof(reason), "%s", hixl_error_message());
        return hixl_refuse_hello(engine, peer, HIXL_STATS_REFUSED_ADMISSION,
                                 HIXL_FAILED, reason);
    }
    hixl_ctrl_send_auth(peer, CTRL_AUTH_CHALLENGE, handshake->nonce_local,
                        HIXL_AUTH_NONCE_LEN, HIXL_AUTH_CHALLENGED);
    return 0;
}

/* The connector's proof of the secret. */
static int hixl_on_auth_response(hixl_engine_t *engine, hixl_peer_t *peer,
                                 const hixl_msg_t *msg)
{
    struct hixl_handshake *handshake = peer->handshake;
    uint8_t mac[HIXL_AUTH_MAC_LEN];

    if (handshake->auth_state != HIXL_AUTH_CHALLENGED) {
        return hixl_ctrl_protocol_error(engine, peer, msg, "out of order");
    }
    if ((hixl_auth_mac(engine->opts.secret, "connector",
                       handshake->nonce_local, handshake->nonce_remote,
                       handshake->claimed, engine->name.canon,
                       mac) != HIXL_SUCCESS) ||
        !hixl_auth_mac_ok(msg->u.auth.data.ptr, msg->u.auth.data.len, mac)) {
        hixl_log_warn("%s failed to authenticate (wrong hixl.Secret)",
                      handshake->claimed);
        return hixl_refuse_hello(engine, peer,
                                 HIXL_STATS_REFUSED_AUTHENTICATION,
                                 HIXL_FAILED, "authentication "
                                 "failed: the engines' hixl.Secret values "
                                 "differ");
    }
    handshake->auth_state = HIXL_AUTH_DONE;
    return hixl_handshake_accept(engine, peer);
}

void hixl_accept_init(hixl_engine_t *engine)
{
    hixl_progress_on_socket(engine, HIXL_POLL_LISTEN, hixl_accept_event);
    hixl_ctrl_handle(engine, CTRL_HELLO, hixl_on_hello,
                     HIXL_CTRL_ON_ACCEPTED | HIXL_CTRL_IN_HANDSHAKE);
    hixl_ctrl_handle(engine, CTRL_AUTH_RESPONSE, hixl_on_auth_response,
                     HIXL_CTRL_ON_ACCEPTED | HIXL_CTRL_IN_HANDSHAKE);
}
