/*
 * Progress: UCX worker progress plus the control sockets, driven either by
 * the engine's progress thread or, without one, from inside hixl calls.
 *
 * The thread polls while anything is in flight (engine->busy) and for
 * hixl.ProgressSpinUs after the last activity, then sleeps in epoll on the
 * control sockets and UCX's event fd (armed with ucp_worker_arm), so an idle
 * engine costs no CPU and a passive target still progresses incoming puts
 * on transports that need it (tcp).  Work posted while it sleeps wakes it
 * with ucp_worker_signal().
 */
#include "config.h"
#include "core/peer.h"
#include "util/clock.h"
#include "device/device.h"
#include "core/ep_flush.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#define HIXL_POLL_BATCH      32
#define HIXL_POLL_PERIOD     256   /* data-loop calls per socket look */
#define HIXL_REAP_PERIOD_NS  100000000ull   /* handshake deadlines: 100 ms */

static hixl_peer_t *hixl_peer_by_serial(hixl_engine_t *engine, uint64_t serial)
{
    hixl_peer_t *peer;

    for (peer = engine->peers; peer != NULL; peer = peer->next) {
        if (peer->serial == serial) {
            return peer;
        }
    }
    return NULL;
}

/* Drop accepted connections that never completed a handshake in time (a
 * port scanner, a stuck client) and connects that got no answer. */
static void hixl_reap_handshakes(hixl_engine_t *engine, uint64_t now)
{
    hixl_peer_t *peer, *next;

    for (peer = engine->peers; peer != NULL; peer = next) {
        next = peer->next;
        if ((peer->state == HIXL_PEER_HANDSHAKE) &&
            (now > peer->handshake_deadline)) {
            hixl_peer_close(engine, peer, HIXL_TIMEOUT, "no handshake within "
                            "%d ms", engine->opts.connect_timeout_ms);
        }
    }
}

static unsigned hixl_handle_events(hixl_engine_t *engine,
                                   const struct epoll_event *evs, int n)
{
    hixl_peer_t *peer;
    unsigned kind;
    int i;

    pthread_mutex_lock(&engine->lock);
    for (i = 0; i < n; ++i) {
        kind = (unsigned)(evs[i].data.u64 >> 56);
        if (kind == HIXL_POLL_LISTEN) {
            hixl_accept(engine);
        } else if (kind == HIXL_POLL_PEER) {
            peer = hixl_peer_by_serial(engine, evs[i].data.u64 &
                                               ((1ull << 56) - 1));
            if (peer != NULL) {
                hixl_ctrl_event(engine, peer, evs[i].events);
            }
        }
        /* HIXL_POLL_WORKER: UCX has events; ucp_worker_progress takes them */
    }
    pthread_mutex_unlock(&engine->lock);
    return (unsigned)n;
}

/* Control sockets and housekeeping; timeout_ms as for epoll_wait. */
static unsigned hixl_poll_control(hixl_engine_t *engine, int timeout_ms)
{
    struct epoll_event evs[HIXL_POLL_BATCH];
    unsigned count = 0;
    uint64_t now;
    int n;

    if (pthread_mutex_trylock(&engine->poll_lock) != 0) {
        return 0;   /* another thread is at it */
    }
    n = epoll_wait(engine->epfd, evs, HIXL_POLL_BATCH, timeout_ms);
    if (n > 0) {
        count = hixl_handle_events(engine, evs, n);
    }
    now = hixl_now_ns();
    if ((now >= engine->next_reap_ns) ||
        atomic_exchange(&engine->peer_errors, 0)) {
        engine->next_reap_ns = now + HIXL_REAP_PERIOD_NS;
        pthread_mutex_lock(&engine->lock);
        hixl_peer_reap_errors(engine);
        hixl_reap_handshakes(engine, now);
        pthread_mutex_unlock(&engine->lock);
    }
    pthread_mutex_unlock(&engine->poll_lock);
    return count;
}

/* weight: how much this call counts towards looking at the sockets. */
static unsigned hixl_progress_weighted(hixl_engine_t *engine, unsigned weight)
{
    unsigned n = ucp_worker_progress(engine->ucp_worker);

    /* device copies and staging (a no-op while none is in flight) */
    n += hixl_dev_progress(engine);
    /* transfer flushes their groups' callbacks left due (flush_group.h) */
    if (atomic_load(&engine->fg_wanted)) {
        hixl_fg_progress(engine);
        ++n;
    }
    /* Sockets carry only control traffic: a system call per progress call
     * would double the cost of a polling loop (measured: 160-435 ns against
     * 25-72 ns).  Look at them once per HIXL_POLL_PERIOD calls of a data
     * loop (a ping-pong on shared memory measurably waits out the system
     * calls at 64), or once per 8 calls of a loop waiting for control
     * traffic itself. */
    engine->poll_count += weight;
    if ((engine->poll_count >= HIXL_POLL_PERIOD) ||
        atomic_load(&engine->peer_errors)) {
        engine->poll_count = 0;
        n += hixl_poll_control(engine, 0);
    }
    return n;
}

unsigned hixl_progress(hixl_engine_t *engine)
{
    return hixl_progress_weighted(engine, 1);
}

unsigned hixl_progress_for_control(hixl_engine_t *engine)
{
    return hixl_progress_weighted(engine, HIXL_POLL_PERIOD / 8);
}

void hixl_progress_control(hixl_engine_t *engine)
{
    /* counts like hixl_progress: not a system call per transfer */
    if (!engine->progress_running &&
        (++engine->poll_count >= HIXL_POLL_PERIOD)) {
        engine->poll_count = 0;
        hixl_poll_control(engine, 0);
    }
}

unsigned hixl_engine_progress(hixl_engine_t *engine)
{
    return (engine != NULL) ? hixl_progress(engine) : 0;
}

void hixl_progress_kick(hixl_engine_t *engine)
{
    if (engine->progress_running && atomic_load(&engine->progress_sleeping)) {
        ucp_worker_signal(engine->ucp_worker);
    }
}

static void *hixl_progress_main(void *arg)
{
    hixl_engine_t *engine = arg;
    uint64_t spin_ns      = (uint64_t)engine->opts.progress_spin_us * 1000ull;
    uint64_t last_active  = hixl_now_ns();
    ucs_status_t ustatus;
    unsigned n;

    n = 0;
    while (!atomic_load(&engine->progress_stop)) {
        /* busy: a data loop; idle: waiting, maybe for control traffic */
        n = hixl_progress_weighted(engine,
                                   (n == 0) ? HIXL_POLL_PERIOD / 8 : 1);
        if ((n > 0) || (atomic_load(&engine->busy) > 0)) {
            last_active = hixl_now_ns();
            continue;
        }
        if (hixl_now_ns() - last_active < spin_ns) {
            continue;
        }
        if (engine->worker_efd >= 0) {
            ustatus = ucp_worker_arm(engine->ucp_worker);
            if (ustatus == UCS_ERR_BUSY) {
                continue;   /* events arrived meanwhile: progress them */
            }
        }
        /* Announce the sleep, then re-check: a poster either sees the flag
         * (and signals the worker) or its work is seen here. */
        atomic_store(&engine->progress_sleeping, 1);
        if ((atomic_load(&engine->busy) == 0) &&
            !atomic_load(&engine->progress_stop)) {
            hixl_poll_control(engine, (engine->worker_efd >= 0) ? 100 : 1);
        }
        atomic_store(&engine->progress_sleeping, 0);
        last_active = hixl_now_ns();
    }
    return NULL;
}

hixl_status_t hixl_progress_start(hixl_engine_t *engine)
{
    int rc;

    atomic_store(&engine->progress_stop, 0);
    rc = pthread_create(&engine->progress_thread, NULL, hixl_progress_main,
                        engine);
    if (rc != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "cannot start the progress "
                          "thread: %s", strerror(rc));
    }
    engine->progress_running = 1;
    return HIXL_SUCCESS;
}

void hixl_progress_stop(hixl_engine_t *engine)
{
    if (!engine->progress_running) {
        return;
    }
    atomic_store(&engine->progress_stop, 1);
    ucp_worker_signal(engine->ucp_worker);
    pthread_join(engine->progress_thread, NULL);
    engine->progress_running = 0;
}

int hixl_engine_wait(hixl_engine_t *engine, uint64_t deadline_ns,
                     int (*pred)(void *arg), void *arg)
{
    struct timespec ts;
    uint64_t now, wake;

    while (!pred(arg)) {
        now = hixl_now_ns();
        if (now >= deadline_ns) {
            return 0;
        }
        if (!engine->progress_running) {
            pthread_mutex_unlock(&engine->lock);
            hixl_progress_for_control(engine);
            pthread_mutex_lock(&engine->lock);
            continue;
        }
        /* State changes broadcast engine->cond; the 1 ms slice bounds the
         * wait for conditions nobody broadcasts (UCX request completion). */
        wake = now + 1000000ull;
        if (wake > deadline_ns) {
            wake = deadline_ns;
        }
        ts.tv_sec  = (time_t)(wake / 1000000000ull);
        ts.tv_nsec = (long)(wake % 1000000000ull);
        pthread_cond_timedwait(&engine->cond, &engine->lock, &ts);
    }
    return 1;
}
