/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_disconnect: let what is in flight to the peer finish, within the
 * timeout, then close the connection; or acknowledge one the other side
 * already ended.
 */
#include "config.h"
#include "ctrl/ctrl.h"
#include "util/args.h"
#include "util/clock.h"
#include "util/log.h"

#define HIXL_DISCONNECT_SETTLE_MIN_NS  2000000ull   /* 2 ms */
#define HIXL_DISCONNECT_SETTLE_MAX_NS 20000000ull   /* 20 ms */

typedef struct hixl_disconnect_wait {
    hixl_flush_wait_t fw;     /* our flush */
    hixl_peer_t      *peer;
} hixl_disconnect_wait_t;

static int hixl_disconnect_unbound(void *arg)
{
    hixl_disconnect_wait_t *w = arg;

    return hixl_ep_close_done(w->peer->engine, w->peer->close_id);
}

/*
 * The endpoint is closed; UCX lets its transport endpoints go (a tcp
 * socket: once the other side's close came in too) in later progress
 * calls.  Give it those, briefly, so that what this connection held is
 * gone when hixl_disconnect returns rather than some time after.
 */
static void hixl_disconnect_settle(hixl_engine_t *engine)
{
    uint64_t start = hixl_now_ns(), now = start;
    unsigned idle  = 0;

    while (((idle < 2) || (now - start < HIXL_DISCONNECT_SETTLE_MIN_NS)) &&
           (now - start < HIXL_DISCONNECT_SETTLE_MAX_NS)) {
        idle = (hixl_progress_ucx(engine) == 0) ? idle + 1 : 0;
        now  = hixl_now_ns();
    }
}

static int hixl_disconnect_drained(void *arg)
{
    hixl_disconnect_wait_t *w = arg;

    if (w->peer->state == HIXL_PEER_CLOSED) {
        return 1;   /* the other side ended it meanwhile */
    }
    return hixl_flush_wait_done(&w->fw) &&
           (atomic_load(&w->peer->inflight) == 0);
}

/* No live connection: one the other side (or an error) ended while the
 * application still held it is owed this call. */
static hixl_status_t hixl_disconnect_ended(hixl_engine_t *engine,
                                           const char *remote)
{
    char reason[HIXL_ERROR_MSG_MAX];

    if (hixl_ended_acknowledge(&engine->ctrl->ended, remote, reason,
                               sizeof(reason))) {
        hixl_log_info("disconnect from %s: its connection had already "
                      "ended: %s", remote, reason);
        return HIXL_SUCCESS;
    }
    reason[0] = '\0';
    if (hixl_ended_reason(&engine->ctrl->ended, remote, -1) != NULL) {
        snprintf(reason, sizeof(reason), ": its connection was closed: %s",
                 hixl_ended_reason(&engine->ctrl->ended, remote, -1));
    }
    return hixl_error(HIXL_NOT_CONNECTED, "not connected to %s%s", remote,
                      reason);
}

hixl_status_t hixl_disconnect(hixl_engine_t *engine, const char *remote_engine,
                              int32_t timeout_ms)
{
    hixl_disconnect_wait_t wait;
    hixl_peer_t *peer;
    hixl_status_t status;
    uint64_t deadline;

    status = hixl_check_remote_timeout(engine, remote_engine, timeout_ms);
    if (status != HIXL_SUCCESS) {
        return status;
    }

    pthread_mutex_lock(&engine->lock);
    peer = hixl_peer_find(engine, remote_engine, -1);
    if (peer == NULL) {
        status = hixl_disconnect_ended(engine, remote_engine);
        pthread_mutex_unlock(&engine->lock);
        return status;
    }
    /* ended by the application: nothing owed */
    peer->handshake->app_owned = 0;
    hixl_peer_retain(peer);
    deadline  = hixl_deadline_ns(timeout_ms);
    wait.peer = peer;
    if (peer->ep_flush != NULL) {
        /* Let what is in flight finish, within the timeout: our own flush
         * covers every operation posted so far, and the transfers' own
         * completions (their shared flushes, device work) must have come
         * in too, or they would be failed by the close below although
         * their data landed. */
        hixl_flush_wait_start(engine, peer, &wait.fw);
        if (!hixl_engine_wait_busy(engine, deadline, hixl_disconnect_drained,
                                   &wait)) {
            status = hixl_error(HIXL_TIMEOUT, "disconnect from %s: "
                                "transfers still in flight after %d ms "
                                "were failed", peer->name, (int)timeout_ms);
        }
    }
    /* also settles our flush waiter if it is still queued */
    peer->end = hixl_peer_end_by_us(peer);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED,
                    "disconnected by the application");
    /* the other side closes its endpoint of it, then ours goes
     * (core/peer/ep_close.h); what is left of the timeout bounds the wait */
    if (peer->close_id != 0) {
        hixl_engine_wait_busy(engine, deadline, hixl_disconnect_unbound,
                              &wait);
        hixl_disconnect_settle(engine);
    }
    hixl_peer_release(peer);
    pthread_mutex_unlock(&engine->lock);
    return status;
}
