/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control layer: connections between engines over their own TCP
 * sockets (connect, accept, the handshake and its authentication,
 * disconnect), the dispatch of control messages by type, and what is
 * remembered of connections that ended.
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
 * With hixl.Secret set, an AUTH_CHALLENGE / AUTH_RESPONSE exchange comes
 * between HELLO and HELLO_ACK, and the ACK carries the listener's proof
 * (util/auth.h).
 *
 * Engine names travel in the handshake, so a peer is known by the name it
 * gave itself, and endpoints are created from worker addresses exchanged
 * here: this works with any UCX_TLS, including sm-only and tcp-only,
 * unlike UCX's sockaddr client/server path.
 */
#ifndef HIXL_CTRL_CTRL_H_
#define HIXL_CTRL_CTRL_H_

#include "core/engine.h"
#include "ctrl/dispatch.h"
#include "ctrl/peer_ended.h"
#include "util/auth.h"

#define HIXL_HELLO_FLAG_LISTENING 1u
#define HIXL_MAX_PEERS            4096
/* Accepted connections still in their handshake at once.  With the
 * per-connection receive gate (wire/ctrl_conn.h) this bounds what strangers
 * can make a listener hold: about 64 KiB each.  The listener never stops
 * accepting: a new connection that finds the table full evicts the oldest
 * one still in its handshake (accept.c), so no number of idle or slow
 * connections keeps a real engine out, whose HELLO follows its connect at
 * once; and each is closed at hixl.HandshakeTimeoutMs anyway. */
#define HIXL_MAX_HANDSHAKES       64
/* Connections accepted per readiness of the listening socket before the
 * other sockets get their turn: a burst of connects cannot hold back the
 * HELLOs of the connections already accepted (epoll reports the rest of
 * the backlog again). */
#define HIXL_ACCEPT_BATCH         16
typedef enum hixl_auth_state {
    HIXL_AUTH_NONE,        /* no challenge sent or received (yet) */
    HIXL_AUTH_CHALLENGED,  /* listener: challenge sent, answer awaited;
                              connector: challenge answered */
    HIXL_AUTH_DONE
} hixl_auth_state_t;

/* The control layer's record of a peer (peer->handshake, for the peer's life):
 * what an accepted peer claimed in HELLO, kept until it has authenticated,
 * both sides' nonces, the connection's resume token (the one this
 * listener issued, or the one a connector was issued), what the handshake
 * settled, and whether the application owns the connection. */
struct hixl_handshake {
    uint64_t deadline_ns;
    char     claimed[HIXL_ENGINE_NAME_MAX + 1];
    uint8_t  claimed_resume[HIXL_RESUME_LEN];
    int      claimed_has_resume;
    int      auth_state;   /* hixl_auth_state_t */
    uint8_t  nonce_local[HIXL_AUTH_NONCE_LEN];
    uint8_t  nonce_remote[HIXL_AUTH_NONCE_LEN];
    uint8_t  resume[HIXL_RESUME_LEN];
    int      has_resume;
    int      same_host;    /* listener: the connector said our host id */
    /* connector: the listener's limits, announced in HELLO_ACK (layer
     * signals it accepts: ops/layer_flush.c) */
    uint32_t remote_max_streams;
    uint32_t remote_max_layers;
    /* the application saw this connection up and has not disconnected it:
     * if it ends otherwise, its hixl_disconnect() is owed (peer_ended.h) */
    int      app_owned;
};

struct hixl_ctrl {
    int               listen_fd;
    uint64_t          next_instance;   /* remote_instance of a new engine */
    hixl_ctrl_rule_t  rules[CTRL_MSG_TYPE_LAST];
    hixl_ended_list_t ended;
};

/* Set up: state, handlers, hooks, socket handlers; listen when the
 * engine's name has a port.  Cleanup after the worker is gone. */
hixl_status_t hixl_ctrl_init(hixl_engine_t *engine);
void hixl_ctrl_stop_listening(hixl_engine_t *engine);
void hixl_ctrl_cleanup(hixl_engine_t *engine);

/* A new peer around a connected socket with its handshake record
 * (engine->lock held); NULL with the caller's last error. */
hixl_peer_t *hixl_ctrl_peer_create(hixl_engine_t *engine, int fd,
                                   int outgoing, uint64_t deadline_ns);

/* Fill buf with len random bytes (getrandom). */
hixl_status_t hixl_ctrl_random(uint8_t *buf, size_t len);

/* Compare two tokens in time that does not depend on where they differ. */
int hixl_ctrl_token_eq(const uint8_t *a, const uint8_t *b, size_t len);

/* Send an AUTH_CHALLENGE (nonce) or AUTH_RESPONSE (MAC) and move the
 * handshake to `state`. */
void hixl_ctrl_send_auth(hixl_peer_t *peer, uint16_t type, const void *data,
                         size_t len, int state);

/* ---- accept.c ---- */
void hixl_accept_init(hixl_engine_t *engine);
hixl_status_t hixl_accept_listen(hixl_engine_t *engine);

/* ---- connect.c ---- */
void hixl_connect_init(hixl_engine_t *engine);
/* hixl_connect with engine->lock held (released while waiting). */
hixl_status_t hixl_connect_locked(hixl_engine_t *engine, const char *remote,
                                  int32_t timeout_ms);

/* ---- dispatch.c ---- */
/* Socket events of a peer's control connection (engine->lock held). */
void hixl_ctrl_event(hixl_engine_t *engine, uint64_t serial, uint32_t events);
void hixl_dispatch_init(hixl_engine_t *engine);

#endif
