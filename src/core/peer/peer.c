/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The peer table, peers' lifecycle and their hooks.
 */
#include "config.h"
#include "core/peer/peer.h"
#include "core/engine.h"
#include "util/array.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hixl_status_t hixl_peer_hooks_add(hixl_engine_t *engine,
                                  const hixl_peer_hooks_t *hooks)
{
    hixl_peer_table_t *t = &engine->peers;

    /* grows rather than drops: a module left out would never learn of a
     * peer's end and leak what it holds for it */
    if (hixl_array_reserve(&t->hooks, &t->hooks_cap, t->nhooks + 1,
                           sizeof(*t->hooks), 8) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "peer hooks of %s", hooks->name);
    }
    t->hooks[t->nhooks++] = hooks;
    return HIXL_SUCCESS;
}

void hixl_peer_hooks_cleanup(hixl_engine_t *engine)
{
    hixl_peer_table_t *t = &engine->peers;

    free(t->hooks);
    t->hooks     = NULL;
    t->hooks_cap = 0;
    t->nhooks    = 0;
}

hixl_peer_t *hixl_peer_create(hixl_engine_t *engine, int fd, int outgoing)
{
    hixl_peer_table_t *t = &engine->peers;
    hixl_peer_t *peer    = calloc(1, sizeof(*peer));

    hixl_assert_locked(&engine->lock);
    if (peer == NULL) {
        hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a peer");
        return NULL;
    }
    peer->engine   = engine;
    hixl_peer_mark(peer, HIXL_PEER_F_OUTGOING, outgoing);
    peer->state    = HIXL_PEER_HANDSHAKE;
    peer->serial   = ++t->next_serial;
    atomic_init(&peer->refcount, 1);
    atomic_init(&peer->inflight, 0);
    hixl_conn_init(&peer->conn, fd);
    if (hixl_conn_watch(&peer->conn, engine->progress.epfd,
                        HIXL_POLL_DATA(HIXL_POLL_PEER, peer->serial)) !=
        HIXL_SUCCESS) {
        peer->conn.fd = -1;   /* the caller still owns the socket */
        hixl_conn_cleanup(&peer->conn);
        free(peer);
        return NULL;
    }
    peer->next = t->head;
    t->head    = peer;
    t->count++;
    return peer;
}

/* The ready (or accepted) hooks in registration order; the first refusal
 * stops them. */
static hixl_status_t hixl_peer_hooks_open(hixl_engine_t *engine,
                                          hixl_peer_t *peer, int accepted)
{
    hixl_peer_table_t *t = &engine->peers;
    hixl_status_t (*fn)(hixl_engine_t *, hixl_peer_t *);
    hixl_status_t status;
    unsigned i;

    for (i = 0; i < t->nhooks; ++i) {
        fn = accepted ? t->hooks[i]->accepted : t->hooks[i]->ready;
        if ((fn != NULL) && ((status = fn(engine, peer)) != HIXL_SUCCESS)) {
            return status;
        }
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_peer_set_ready(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_status_t status = hixl_peer_hooks_open(engine, peer, 0);

    if (status == HIXL_SUCCESS) {
        peer->state = HIXL_PEER_READY;
        pthread_cond_broadcast(&engine->cond);
        hixl_metrics_count(engine->metrics, hixl_peer_outgoing(peer) ?
                           HIXL_MX_CONNECTED : HIXL_MX_ACCEPTED, 1);
    }
    return status;
}

hixl_status_t hixl_peer_accepted(hixl_engine_t *engine, hixl_peer_t *peer)
{
    return hixl_peer_hooks_open(engine, peer, 1);
}

void hixl_peer_retain(hixl_peer_t *peer)
{
    unsigned before = atomic_fetch_add(&peer->refcount, 1);

    hixl_assert(before >= 1);   /* a peer is never revived */
    (void)before;
}

/* What a peer marked gone is refused and closed with. */
static const char hixl_peer_gone_why[] = "its process is gone (the kernel "
                                         "said so to a same-host copy)";

void hixl_peer_gone(hixl_peer_t *peer)
{
    if (atomic_exchange(&peer->gone, 1) == 0) {
        hixl_progress_urgent(peer->engine);   /* closed by the next pass */
    }
}

void hixl_peer_release(hixl_peer_t *peer)
{
    hixl_peer_table_t *t;
    unsigned i;
    unsigned before = atomic_fetch_sub(&peer->refcount, 1);

    hixl_assert(before >= 1);
    if (before != 1) {
        return;
    }
    hixl_assert(peer->state == HIXL_PEER_CLOSED);   /* closing holds one */
    hixl_assert(atomic_load(&peer->inflight) == 0);
    /* closed before its last reference went: nothing of UCX is left */
    t = &peer->engine->peers;
    for (i = t->nhooks; i-- > 0;) {
        if (t->hooks[i]->destroy != NULL) {
            t->hooks[i]->destroy(peer);
        }
    }
    hixl_conn_cleanup(&peer->conn);
    free(peer);
}

static void hixl_peer_unlink(hixl_peer_table_t *t, hixl_peer_t *peer)
{
    hixl_peer_t **pp;

    for (pp = &t->head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == peer) {
            hixl_assert(t->count >= 1);
            *pp = peer->next;
            t->count--;
            return;
        }
    }
}

hixl_stats_closed_t hixl_peer_closed_why(const hixl_peer_t *peer)
{
    if (peer->close_why > 0) {
        return (hixl_stats_closed_t)(peer->close_why - 1);
    }
    if (atomic_load(&peer->gone)) {
        return HIXL_STATS_CLOSED_PEER_DEATH;
    }
    switch (peer->end) {
    case HIXL_PEER_END_ORDERLY:
        return HIXL_STATS_CLOSED_DISCONNECT;
    case HIXL_PEER_END_CUT:
        return HIXL_STATS_CLOSED_PEER_TIMEOUT;
    default:
        return HIXL_STATS_CLOSED_ERROR;
    }
}

/* Count a connection's end (core/worker/metrics.h). */
static void hixl_peer_count_close(hixl_engine_t *engine,
                                  const hixl_peer_t *peer)
{
    if (peer->state == HIXL_PEER_READY) {
        hixl_metrics_count(engine->metrics, (hixl_mx_counter_t)
                           (HIXL_MX_CLOSED + hixl_peer_closed_why(peer)), 1);
    } else if (hixl_peer_outgoing(peer)) {
        hixl_metrics_count(engine->metrics, HIXL_MX_CONNECT_FAILED, 1);
    }
}

void hixl_peer_close(hixl_engine_t *engine, hixl_peer_t *peer,
                     hixl_status_t status, const char *fmt, ...)
{
    hixl_peer_table_t *t = &engine->peers;
    va_list ap;
    unsigned i;

    hixl_assert_locked(&engine->lock);
    if (peer->state == HIXL_PEER_CLOSED) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(peer->close_reason, sizeof(peer->close_reason), fmt, ap);
    va_end(ap);
    hixl_peer_count_close(engine, peer);
    peer->close_status = status;
    peer->state        = HIXL_PEER_CLOSED;
    hixl_log_info("peer %s (%s): closed: %s", peer->name[0] ? peer->name :
                  "(handshake)",
                  hixl_peer_outgoing(peer) ? "outgoing" : "accepted",
                  peer->close_reason);

    for (i = t->nhooks; i-- > 0;) {
        if (t->hooks[i]->closing != NULL) {
            t->hooks[i]->closing(engine, peer);
        }
    }
    hixl_conn_close(&peer->conn);
    /* The forced close cancels what is in flight; the flush service
     * settles every waiter (transfers, layer signals, revoke answers)
     * before this goes on.  rkeys go after the endpoint, so that no
     * operation still queued on it can use one. */
    hixl_peer_ep_close(engine, peer, UCS_ERR_CANCELED);
    hixl_rtable_cleanup(engine, &peer->rtab);
    for (i = t->nhooks; i-- > 0;) {
        if (t->hooks[i]->closed != NULL) {
            t->hooks[i]->closed(engine, peer);
        }
    }
    hixl_peer_unlink(t, peer);
    pthread_cond_broadcast(&engine->cond);
    hixl_peer_release(peer);
}

hixl_peer_t *hixl_peer_find(hixl_engine_t *engine, const char *remote,
                            int outgoing)
{
    hixl_peer_t *peer, *found = NULL;
    hixl_name_t canon;
    const char *name;
    int pass;

    hixl_name_for_each_spelling(name, remote, &canon, pass) {
        for (peer = engine->peers.head; peer != NULL; peer = peer->next) {
            if ((peer->state == HIXL_PEER_CLOSED) ||
                ((outgoing >= 0) &&
                 (hixl_peer_outgoing(peer) != outgoing))) {
                continue;
            }
            if (strcmp(peer->alias, name) && strcmp(peer->name, name)) {
                continue;
            }
            if (hixl_peer_outgoing(peer) || (outgoing == 0)) {
                return peer;
            }
            found = peer;   /* accepted; keep looking for an outgoing one */
        }
        if (found != NULL) {
            return found;
        }
    }
    return NULL;
}

hixl_peer_t *hixl_peer_by_serial(hixl_engine_t *engine, uint64_t serial)
{
    hixl_peer_t *peer;

    for (peer = engine->peers.head; peer != NULL; peer = peer->next) {
        if (peer->serial == serial) {
            return peer;
        }
    }
    return NULL;
}

/* ": its connection was closed: <why>" when a connection to remote ended
 * lately, else "". */
static const char *hixl_peer_closed_reason(hixl_engine_t *engine,
                                           const char *remote,
                                           int want_outgoing)
{
    static __thread char text[320];
    const char *reason = NULL;

    if (engine->peers.ended_reason != NULL) {
        reason = engine->peers.ended_reason(engine, remote,
                                            want_outgoing ? 1 : -1);
    }
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

    if ((peer == NULL) && want_outgoing && engine->opts.auto_connect &&
        (engine->peers.connect != NULL)) {
        status = engine->peers.connect(engine, remote);
        if ((status != HIXL_SUCCESS) && (status != HIXL_ALREADY_CONNECTED)) {
            return hixl_error(status, "AutoConnect: %s", hixl_error_message());
        }
        peer = hixl_peer_find(engine, remote, 1);
    }
    if (peer == NULL) {
        return hixl_error(HIXL_NOT_CONNECTED, "not connected to %s%s%s",
                          remote, hixl_peer_closed_reason(engine, remote,
                                                          want_outgoing),
                          want_outgoing ? " (call hixl_connect first, or set "
                          "AutoConnect)" : "");
    }
    if (peer->state != HIXL_PEER_READY) {
        return hixl_error(HIXL_NOT_CONNECTED, "connect to %s is still in "
                          "progress", remote);
    }
    if (atomic_load(&peer->gone)) {
        return hixl_error(HIXL_NOT_CONNECTED, "%s: %s", remote,
                          hixl_peer_gone_why);
    }
    *peer_p = peer;
    return HIXL_SUCCESS;
}

/* How long a UCX endpoint error waits for the control connection's end,
 * to tell a dead peer from a transport failure: a process's sockets close
 * one after the other as it exits, UCX's may go first.  It is waited under
 * the engine lock, so it is a budget for a whole periodic pass: once one
 * wait used it up, the other peers of the pass are looked at without
 * waiting (many peers failing at once must not hold the lock for long). */
#define HIXL_PEER_DEATH_WAIT_MS 20

/* Whether the peer's control connection has ended from its side (shut
 * down or reset, unread bytes or not), waiting up to *budget_ms for it
 * (a wait that ran out leaves no budget): then its process is gone.
 * Reads nothing. */
static int hixl_peer_conn_ended(const hixl_peer_t *peer, int *budget_ms)
{
    struct pollfd pfd;
    int n;

    if (peer->conn.fd < 0) {
        return 0;
    }
    pfd.fd     = peer->conn.fd;
    pfd.events = POLLRDHUP;
    n          = poll(&pfd, 1, *budget_ms);
    if (n == 0) {
        *budget_ms = 0;
    }
    return (n == 1) && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* periodic: close peers whose UCX endpoint reported an error */
static void hixl_peers_reap_errors(hixl_engine_t *engine, uint64_t now_ns)
{
    int budget_ms = HIXL_PEER_DEATH_WAIT_MS;
    hixl_peer_t *peer, *next;
    ucs_status_t err;

    for (peer = engine->peers.head; peer != NULL; peer = next) {
        next = peer->next;
        err  = hixl_peer_ep_error(peer);
        if (err != UCS_OK) {
            hixl_log_warn("peer %s: UCX endpoint error: %s", peer->name,
                          ucs_status_string(err));
            if ((err == UCS_ERR_CONNECTION_RESET) ||
                hixl_peer_conn_ended(peer, &budget_ms)) {
                /* UCX says "endpoint timeout" for a dead peer's tcp
                 * connection too: its control socket tells */
                hixl_peer_close_why(peer, HIXL_STATS_CLOSED_PEER_DEATH);
            }
            hixl_peer_close(engine, peer, HIXL_FAILED, "transport error "
                            "from UCX: %s", ucs_status_string(err));
        } else if (atomic_load(&peer->gone)) {
            hixl_log_warn("peer %s: its process is gone", peer->name);
            hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "%s",
                            hixl_peer_gone_why);
        } else if ((peer->rtab.dead != NULL) &&
                   (atomic_load(&peer->inflight) == 0)) {
            hixl_rtable_reap(engine, &peer->rtab);
        }
    }
}

/* issue the endpoint flushes that completions left due */
static void hixl_peers_flush_due(hixl_engine_t *engine)
{
    hixl_peer_t *peer;

    for (peer = engine->peers.head; peer != NULL; peer = peer->next) {
        if (peer->ep_flush != NULL) {
            hixl_ep_flush_progress(peer->ep_flush);
        }
    }
}

hixl_status_t hixl_peers_init(hixl_engine_t *engine)
{
    hixl_progress_on_flush_due(engine, hixl_peers_flush_due);
    return hixl_progress_periodic(engine, hixl_peers_reap_errors);
}
