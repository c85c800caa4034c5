/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Progress (see progress.h).
 */
#include "config.h"
#include "core/worker/progress.h"
#include "core/engine.h"
#include "core/worker/spurious_wakes.h"
#include "util/array.h"
#include "util/debug.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define HIXL_POLL_BATCH      32
#define HIXL_POLL_PERIOD     256   /* data-loop calls per socket look */
/* A progress thread whose engine awaits answers on the control
 * connections reads the sockets at least this often, however busy its
 * data loop: a pass that sends a window's worth of WRITEs is long, and
 * the answers that end a layer's flush waited behind the whole request. */
#define HIXL_ANSWER_POLL_NS  100000ull   /* 100 us */

/* ---- set-up ---------------------------------------------------------------- */

/* A worker's event fd into the epoll set; -1 when UCX gives none. */
static int hixl_progress_efd(hixl_engine_t *engine, ucp_worker_h worker)
{
    struct epoll_event ev;
    int efd;

    if ((worker == NULL) || (ucp_worker_get_efd(worker, &efd) != UCS_OK)) {
        return -1;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.u64 = HIXL_POLL_DATA(HIXL_POLL_WORKER, 0);
    if (epoll_ctl(engine->progress.epfd, EPOLL_CTL_ADD, efd, &ev) != 0) {
        return -1;
    }
    return efd;
}

hixl_status_t hixl_progress_init(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    pthread_mutex_init(&p->poll_lock, NULL);
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (p->epfd < 0) {
        return hixl_error(HIXL_FAILED, "epoll_create1: %s", strerror(errno));
    }
    /* without event fds the progress thread pauses instead of sleeping */
    p->worker_efd    = hixl_progress_efd(engine, engine->ucp_worker);
    p->worker_efd_in = hixl_progress_efd(engine, engine->ucp_worker_in);
    if ((engine->ucp_worker_in != NULL) && (p->worker_efd_in < 0)) {
        p->worker_efd = -1;
    }
    return HIXL_SUCCESS;
}

unsigned hixl_progress_ucx(hixl_engine_t *engine)
{
    unsigned n = 0;
    unsigned in;

    /* the out worker is the one the application's threads post on */
    if (!hixl_ucx_progress_yields(&engine->progress.ucx_posting)) {
        n = ucp_worker_progress(engine->ucp_worker);
    }

    if (engine->ucp_worker_in != NULL) {
        in = ucp_worker_progress(engine->ucp_worker_in);
        if (engine->progress.after_in != NULL) {
            engine->progress.after_in(engine, in == 0);
        }
        n += in;
    }
    return n;
}

/* Arm both workers' event fds: UCS_ERR_BUSY when events arrived meanwhile
 * (progress them instead of sleeping). */
static ucs_status_t hixl_progress_arm(hixl_engine_t *engine)
{
    ucs_status_t ustatus;

    if (hixl_ucx_progress_yields(&engine->progress.ucx_posting)) {
        return UCS_ERR_BUSY;   /* a post is under way: not idle */
    }
    ustatus = ucp_worker_arm(engine->ucp_worker);
    if ((ustatus == UCS_OK) && (engine->ucp_worker_in != NULL)) {
        ustatus = ucp_worker_arm(engine->ucp_worker_in);
    }
    return ustatus;
}

void hixl_progress_cleanup(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    if (p->epfd >= 0) {
        close(p->epfd);
        p->epfd = -1;
    }
    pthread_mutex_destroy(&p->poll_lock);
    free(p->fns);
    free(p->periodic);
    p->fns      = NULL;
    p->periodic = NULL;
    p->fns_cap  = p->periodic_cap = 0;
    p->nfns     = p->nperiodic    = 0;
}

/* The tables grow rather than drop a callback: a module whose progress
 * never ran would leave its operations pending for good. */
hixl_status_t hixl_progress_add(hixl_engine_t *engine, hixl_progress_fn_t fn)
{
    hixl_progress_t *p = &engine->progress;

    if (hixl_array_reserve(&p->fns, &p->fns_cap, p->nfns + 1,
                           sizeof(*p->fns), 8) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "progress callback");
    }
    p->fns[p->nfns++] = fn;
    return HIXL_SUCCESS;
}

void hixl_progress_on_socket(hixl_engine_t *engine, hixl_poll_kind_t kind,
                             hixl_poll_fn_t fn)
{
    engine->progress.poll_fns[kind] = fn;
}

hixl_status_t hixl_progress_periodic(hixl_engine_t *engine,
                                     hixl_periodic_fn_t fn)
{
    hixl_progress_t *p = &engine->progress;

    if (hixl_array_reserve(&p->periodic, &p->periodic_cap, p->nperiodic + 1,
                           sizeof(*p->periodic), 8) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "periodic callback");
    }
    p->periodic[p->nperiodic++] = fn;
    return HIXL_SUCCESS;
}

void hixl_progress_on_flush_due(hixl_engine_t *engine,
                                hixl_flush_due_fn_t fn)
{
    engine->progress.flush_due = fn;
}

void hixl_progress_after_in(hixl_engine_t *engine, hixl_in_worker_fn_t fn)
{
    engine->progress.after_in = fn;
}

hixl_status_t hixl_progress_watch(hixl_engine_t *engine, int fd,
                                  hixl_poll_kind_t kind, uint64_t key)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.u64 = HIXL_POLL_DATA(kind, key);
    if (epoll_ctl(engine->progress.epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return hixl_error(HIXL_FAILED, "epoll_ctl: %s", strerror(errno));
    }
    return HIXL_SUCCESS;
}

/* ---- one pass ---------------------------------------------------------------- */

static unsigned hixl_handle_events(hixl_engine_t *engine,
                                   const struct epoll_event *evs, int n)
{
    hixl_progress_t *p = &engine->progress;
    unsigned kind, count = 0;
    int i;

    pthread_mutex_lock(&engine->lock);
    for (i = 0; i < n; ++i) {
        kind = (unsigned)(evs[i].data.u64 >> 56);
        /* HIXL_POLL_WORKER: UCX has events; ucp_worker_progress takes and
         * counts them (the fd can be readable for nothing, spurious_wakes.h) */
        if ((kind < HIXL_POLL_KINDS) && (kind != HIXL_POLL_WORKER) &&
            (p->poll_fns[kind] != NULL)) {
            p->poll_fns[kind](engine, evs[i].data.u64 & ((1ull << 56) - 1),
                              evs[i].events);
            ++count;
        }
    }
    pthread_mutex_unlock(&engine->lock);
    return count;
}

static void hixl_run_periodic(hixl_engine_t *engine, uint64_t now)
{
    hixl_progress_t *p = &engine->progress;
    unsigned i;

    pthread_mutex_lock(&engine->lock);
    for (i = 0; i < p->nperiodic; ++i) {
        p->periodic[i](engine, now);
    }
    pthread_mutex_unlock(&engine->lock);
}

/*
 * The sockets and periodic work; timeout_ms as for epoll_wait.
 *
 * A sleep happens outside poll_lock, and what woke it is read afresh under
 * the lock: a thread that sleeps here (the progress thread, for up to
 * 100 ms) must not keep the sockets from a thread that polls them at the
 * same time.  Holding the lock across the sleep made an application
 * thread that polls its transfer wait for the progress thread to be
 * scheduled, which on a host with fewer cores than busy threads is the
 * scheduler's wake-up granularity (put_lat 8 B over tcp with a progress
 * thread, 2 cores: 1-2 ms per message).  Every descriptor in the set is
 * level-triggered, so looking without handling loses nothing.
 */
static unsigned hixl_poll_control(hixl_engine_t *engine, int timeout_ms)
{
    struct epoll_event evs[HIXL_POLL_BATCH];
    hixl_progress_t *p = &engine->progress;
    unsigned count     = 0;
    uint64_t now;
    int n;

    if (timeout_ms != 0) {
        epoll_wait(p->epfd, evs, 1, timeout_ms);
    }
    if (pthread_mutex_trylock(&p->poll_lock) != 0) {
        return 0;   /* another thread is at it */
    }
    n = epoll_wait(p->epfd, evs, HIXL_POLL_BATCH, 0);
    if (n > 0) {
        count = hixl_handle_events(engine, evs, n);
    }
    now = hixl_now_ns();
    atomic_store_explicit(&p->polled_ns, now, memory_order_relaxed);
    if ((now >= p->next_periodic_ns) || atomic_exchange(&p->urgent, 0)) {
        p->next_periodic_ns = now + HIXL_PERIODIC_NS;
        hixl_run_periodic(engine, now);
    }
    pthread_mutex_unlock(&p->poll_lock);
    return count;
}

unsigned hixl_progress_flush_due(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    /* endpoint flushes their completions left due (ep_flush.h) */
    if (!atomic_load(&p->flush_wanted)) {
        return 0;
    }
    pthread_mutex_lock(&engine->lock);
    atomic_store(&p->flush_wanted, 0);
    if (p->flush_due != NULL) {
        p->flush_due(engine);
    }
    pthread_mutex_unlock(&engine->lock);
    return 1;
}

/* weight: how much this call counts towards looking at the sockets. */
static unsigned hixl_progress_weighted(hixl_engine_t *engine, unsigned weight)
{
    hixl_progress_t *p = &engine->progress;
    unsigned n = hixl_progress_ucx(engine);
    unsigned i;

    for (i = 0; i < p->nfns; ++i) {
        n += p->fns[i](engine);
    }
    n += hixl_progress_flush_due(engine);
    /* Sockets carry only control traffic: a system call per progress call
     * would cost a polling loop several times its own cost.  Look at them
     * once per HIXL_POLL_PERIOD calls of a data loop (a ping-pong on
     * shared memory waits out the system calls at a shorter period), or
     * once per 8 calls of a loop waiting for control traffic itself --
     * and, in an engine without a progress thread, on every call while
     * WRITEs wait for their answers, which come on the control
     * connections: a loop that polls a tcp transfer would otherwise wait
     * HIXL_POLL_PERIOD calls for each answer.  Where a progress thread
     * runs, at least every HIXL_ANSWER_POLL_NS while answers are due: an
     * answer wakes it when it sleeps, and a system call on every round of
     * its data loop takes the CPU a fan-in's receiver needs (a receiver
     * awaits no answers). */
    if (atomic_load_explicit(&p->ctrl_answers_due, memory_order_relaxed) >
        0) {
        if (!p->running ||
            (hixl_now_ns() - atomic_load_explicit(&p->polled_ns,
                                                  memory_order_relaxed) >=
             HIXL_ANSWER_POLL_NS)) {
            weight = HIXL_POLL_PERIOD;
        }
    }
    p->poll_count += weight;
    if ((p->poll_count >= HIXL_POLL_PERIOD) || atomic_load(&p->urgent)) {
        p->poll_count = 0;
        n += hixl_poll_control(engine, 0);
    }
    return n;
}


/*
 * A thread polling its transfer's status (or calling hixl_engine_progress
 * in a loop) competes for the cores with the progress thread that must
 * bring the answer.  While that thread sleeps, the caller does the
 * progress itself (the sockets included: the sleep does not hold their
 * lock), so an answer is handled by whichever thread runs first; while it
 * is awake, the caller yields.  On a host with fewer cores than polling
 * threads (2 cores, a prefill and a decode each polling beside its
 * progress thread) a thread woken for an answer otherwise waited out the
 * scheduler's wake-up granularity behind the pollers.  Where cores are
 * free the yield returns at once.
 */
static unsigned hixl_progress_polled(hixl_engine_t *engine, unsigned weight)
{
    hixl_progress_t *p = &engine->progress;

    if (!p->running || atomic_load(&p->sleeping)) {
        return hixl_progress_weighted(engine, weight);
    }
    sched_yield();
    return 0;
}

unsigned hixl_progress_pass(hixl_engine_t *engine,
                            hixl_progress_caller_t caller)
{
    switch (caller) {
    case HIXL_PROGRESS_WAIT_DATA:
        return hixl_progress_weighted(engine, 1);
    case HIXL_PROGRESS_WAIT_CONTROL:
        return hixl_progress_weighted(engine, HIXL_POLL_PERIOD / 8);
    case HIXL_PROGRESS_POLL_DATA:
        return hixl_progress_polled(engine, 1);
    case HIXL_PROGRESS_POLL_CONTROL:
        return hixl_progress_polled(engine, HIXL_POLL_PERIOD / 8);
    }
    hixl_assert(0);   /* a caller this switch does not know */
    return 0;
}

void hixl_progress_before_post(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    /* counts like a data pass: not a system call per transfer */
    if (!p->running && (++p->poll_count >= HIXL_POLL_PERIOD)) {
        p->poll_count = 0;
        hixl_poll_control(engine, 0);
    }
}

void hixl_progress_kick(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    /* counted first: a thread about to sleep sees the count change, or
     * this sees it sleeping (both sequentially consistent) */
    atomic_fetch_add(&p->kicks, 1);
    if (p->running && atomic_load(&p->sleeping)) {
        ucp_worker_signal(engine->ucp_worker);
    }
}

void hixl_progress_urgent(hixl_engine_t *engine)
{
    atomic_store(&engine->progress.urgent, 1);
    hixl_progress_kick(engine);
}

void hixl_progress_data_seen(hixl_engine_t *engine)
{
    atomic_store_explicit(&engine->progress.data_seen, 1,
                          memory_order_relaxed);
}

/* ---- the thread -------------------------------------------------------------- */

/*
 * How long to keep polling after the last event before sleeping.  Idle:
 * hixl.ProgressSpinUs after the last data activity (a transfer of this
 * engine in flight, or a data message served), so that the next transfer
 * of a loop, or the next message of a stream, finds the thread awake; not
 * after control traffic alone: when many engines connect at once, every
 * engine spinning after each of its handshake and wire-up messages takes
 * the CPU the others need for theirs.  With work in flight, polling pays
 * only while events come faster than a sleep and a wake-up cost (tens of
 * microseconds, HIXL_SPIN_WAKE_NS); a thread that polls between
 * events that come slower takes a core from everything else on the host
 * (the receiving side of a tcp fan-in, the inference beside a prefill).
 * So: twice the recent gap between events, at least HIXL_SPIN_MIN_NS, at
 * most the idle spin.
 */
#define HIXL_SPIN_MIN_NS   5000ull      /* 5 us */
#define HIXL_SPIN_WAKE_NS  20000ull     /* what a sleep and wake-up cost */
#define HIXL_BUSY_PAUSE_MS 1            /* longest sleep with work in flight */
/* longest sleep with nothing in flight: a socket or UCX event wakes the
 * thread sooner; periodic work needs it at least this often */
#define HIXL_IDLE_PAUSE_MS 100

/* The longest sleep on the fds now (the thread's, and a blocking call's
 * without one): without UCX event fds nothing but the sockets would wake
 * the sleeper, so 1 ms. */
static int hixl_progress_sleep_ms(hixl_progress_t *p)
{
    return (p->worker_efd < 0)         ? 1 :
           (atomic_load(&p->busy) > 0) ? HIXL_BUSY_PAUSE_MS :
                                         HIXL_IDLE_PAUSE_MS;
}

static uint64_t hixl_progress_spin_ns(const hixl_progress_t *p, int busy,
                                      uint64_t idle_spin_ns)
{
    uint64_t spin;

    if (!busy) {
        return 0;   /* the idle spin is counted from the data (below) */
    }
    if (p->gap_ns > HIXL_SPIN_WAKE_NS) {
        return HIXL_SPIN_MIN_NS;   /* events come slower than a wake-up */
    }
    spin = 2 * p->gap_ns;
    spin = (spin < HIXL_SPIN_MIN_NS) ? HIXL_SPIN_MIN_NS : spin;
    return (spin > idle_spin_ns) ? idle_spin_ns : spin;
}

/* The gap between events, smoothed (1/8 of each new one). */
static void hixl_progress_event(hixl_progress_t *p, uint64_t now,
                                uint64_t last)
{
    uint64_t gap = now - last;

    p->gap_ns = p->gap_ns - (p->gap_ns >> 3) + (gap >> 3);
}

static void *hixl_progress_main(void *arg)
{
    hixl_engine_t *engine = arg;
    hixl_progress_t *p    = &engine->progress;
    uint64_t idle_spin_ns = (uint64_t)engine->opts.progress_spin_us *
                            HIXL_NS_PER_US;
    uint64_t last_active  = hixl_now_ns(), now;
    uint64_t last_data    = 0;   /* no data yet: no idle spin */
    hixl_spurious_wakes_t wakes        = {0};
    uint64_t              slept_at, pause_ns;
    ucs_status_t ustatus;
    unsigned n = 0, kicks, ctrl;
    int busy, sleep_ms;

    while (!atomic_load(&p->stop)) {
        kicks = atomic_load(&p->kicks);   /* what this round will see */
        /* busy: a data loop; idle: waiting, maybe for control traffic */
        n    = hixl_progress_weighted(engine,
                                      (n == 0) ? HIXL_POLL_PERIOD / 8 : 1);
        now  = hixl_now_ns();
        busy = (atomic_load(&p->busy) > 0);
        if (busy || atomic_exchange_explicit(&p->data_seen, 0,
                                             memory_order_relaxed)) {
            last_data = now;
        }
        hixl_spurious_wakes_round(&wakes, n, kicks);
        if (n > 0) {
            hixl_progress_event(p, now, last_active);
            last_active = now;
            continue;
        }
        if ((now - last_active < hixl_progress_spin_ns(p, busy,
                                                       idle_spin_ns)) ||
            (!busy && (now - last_data < idle_spin_ns))) {
            /* polling for what may come: a thread of this host with
             * work to do goes first (where a core is free this returns
             * at once) */
            sched_yield();
            continue;
        }
        pause_ns = (p->worker_efd >= 0) ?
                       hixl_spurious_wakes_pause_ns(&wakes, busy) :
                       0;
        if (pause_ns > 0) {
            /* UCX's fd wakes us for nothing: look again later.  Counted as
             * a sleep, so that a thread polling its transfer meanwhile
             * progresses the engine itself rather than yield to us. */
            atomic_store(&p->sleeping, 1);
            hixl_spurious_wakes_pause(pause_ns);
            atomic_store(&p->sleeping, 0);
            continue;
        }
        if (p->worker_efd >= 0) {
            ustatus = hixl_progress_arm(engine);
            if (ustatus == UCS_ERR_BUSY) {
                continue;   /* events arrived meanwhile: progress them */
            }
        }
        /* Announce the sleep, then re-check: a kick either sees the flag
         * (and signals the worker) or its count is seen here, and the
         * round runs again.  (Without the re-check a kick between this
         * round's work and the flag was lost for the whole sleep: a
         * millisecond per same-host copy, half the copier's speed.) */
        atomic_store(&p->sleeping, 1);
        if (atomic_load(&p->kicks) != kicks) {
            atomic_store(&p->sleeping, 0);
            continue;
        }
        if (!atomic_load(&p->stop)) {
            sleep_ms = hixl_progress_sleep_ms(p);
            slept_at = hixl_now_ns();
            ctrl     = hixl_poll_control(engine, sleep_ms);
            hixl_spurious_wakes_slept(&wakes, slept_at, hixl_now_ns(),
                                      (uint64_t)sleep_ms * HIXL_NS_PER_MS,
                                      kicks, ctrl);
        }
        atomic_store(&p->sleeping, 0);
        hixl_metrics_count(engine->metrics, HIXL_MX_WAKEUPS, 1);
        now = hixl_now_ns();
        hixl_progress_event(p, now, last_active);
        last_active = now;
    }
    return NULL;
}

hixl_status_t hixl_progress_start(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;
    int rc;

    atomic_store(&p->stop, 0);
    rc = pthread_create(&p->thread, NULL, hixl_progress_main, engine);
    if (rc != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "cannot start the progress "
                          "thread: %s", strerror(rc));
    }
    p->running = 1;
    return HIXL_SUCCESS;
}

void hixl_progress_stop(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    if (!p->running) {
        return;
    }
    atomic_store(&p->stop, 1);
    ucp_worker_signal(engine->ucp_worker);
    pthread_join(p->thread, NULL);
    p->running = 0;
}

/* ---- sleeping without a thread ------------------------------------------------ */

int hixl_progress_ready_to_sleep(hixl_engine_t *engine)
{
    hixl_progress_t *p = &engine->progress;

    if (hixl_progress_pass(engine, HIXL_PROGRESS_WAIT_CONTROL) > 0) {
        return 0;
    }
    /* the sockets now (what they bring wakes the sleeper anyway: level
     * triggered); UCX's event fd stays readable until armed, so its count
     * says nothing here -- the arm below answers for UCX */
    hixl_poll_control(engine, 0);
    /* without UCX event fds nothing would wake the sleeper: never sleep */
    return (p->worker_efd >= 0) && (hixl_progress_arm(engine) == UCS_OK);
}

unsigned hixl_progress_block(hixl_engine_t *engine, uint64_t deadline_ns,
                             hixl_spurious_wakes_t *wakes)
{
    hixl_progress_t *p = &engine->progress;
    uint64_t         now, cap_ns, pause_ns, slept_at;
    unsigned n;
    int ms;

    /* nobody kicks a thread that is not there: kick counts play no part */
    if (!hixl_progress_ready_to_sleep(engine)) {
        hixl_spurious_wakes_round(wakes, 1, 0);
        return 1;
    }
    hixl_spurious_wakes_round(wakes, 0, 0);
    now = hixl_now_ns();
    if (deadline_ns <= now) {
        return 0;
    }
    cap_ns = (uint64_t)hixl_progress_sleep_ms(p) * HIXL_NS_PER_MS;
    if (deadline_ns - now < cap_ns) {
        cap_ns = deadline_ns - now;
    }
    pause_ns = hixl_spurious_wakes_pause_ns(wakes, atomic_load(&p->busy) > 0);
    if (pause_ns > 0) {
        hixl_spurious_wakes_pause((pause_ns < cap_ns) ? pause_ns : cap_ns);
        return 0;
    }
    ms       = (int)((cap_ns + HIXL_NS_PER_MS - 1) / HIXL_NS_PER_MS);
    slept_at = hixl_now_ns();
    n        = hixl_poll_control(engine, ms);
    hixl_spurious_wakes_slept(wakes, slept_at, hixl_now_ns(),
                              (uint64_t)ms * HIXL_NS_PER_MS, 0, n);
    return n;
}

/* ---- waiting ------------------------------------------------------------------ */

/* Longest sleep of a waiter between checks of its condition: state changes
 * broadcast engine->cond, UCX completions do not. */
#define HIXL_WAIT_SLICE_NS HIXL_NS_PER_MS

/* Without a progress thread the waiter progresses the engine itself: it
 * polls while events came within hixl.ProgressSpinUs, as the thread
 * would, then sleeps on the engine's fds between them.  (It polled for
 * the whole wait: a connect to a listener whose UCX never answered took a
 * core for the connect's whole timeout.)  *spin_end: when polling stops
 * unless something comes; 0 at the start of a wait. */
static void hixl_engine_wait_turn(hixl_engine_t *engine, uint64_t deadline_ns,
                                  uint64_t              *spin_end,
                                  hixl_spurious_wakes_t *wakes)
{
    uint64_t spin_ns = (uint64_t)engine->opts.progress_spin_us *
                       HIXL_NS_PER_US;
    uint64_t now     = hixl_now_ns();
    uint64_t wake;

    if (*spin_end == 0) {
        *spin_end = now + spin_ns;
    }
    if (now < *spin_end) {
        if (hixl_progress_pass(engine, HIXL_PROGRESS_WAIT_CONTROL) > 0) {
            *spin_end = hixl_now_ns() + spin_ns;
        }
        return;
    }
    /* a slice at most: what the caller waits for may be a change another
     * thread makes without an event (it broadcasts engine->cond) */
    wake = (deadline_ns - now > HIXL_WAIT_SLICE_NS) ?
           now + HIXL_WAIT_SLICE_NS : deadline_ns;
    if (hixl_progress_block(engine, wake, wakes) > 0) {
        *spin_end = hixl_now_ns() + spin_ns;
    }
}

int hixl_engine_wait(hixl_engine_t *engine, uint64_t deadline_ns,
                     int (*pred)(void *arg), void *arg)
{
    hixl_spurious_wakes_t wakes          = {0};
    uint64_t spin_end       = 0;
    struct timespec ts;
    uint64_t now, wake;

    hixl_assert_locked(&engine->lock);   /* the condition variable's mutex */
    while (!pred(arg)) {
        now = hixl_now_ns();
        if (now >= deadline_ns) {
            return 0;
        }
        if (!engine->progress.running) {
            pthread_mutex_unlock(&engine->lock);
            hixl_engine_wait_turn(engine, deadline_ns, &spin_end, &wakes);
            pthread_mutex_lock(&engine->lock);
            continue;
        }
        wake = now + HIXL_WAIT_SLICE_NS;
        if (wake > deadline_ns) {
            wake = deadline_ns;
        }
        hixl_timespec_at(&ts, wake);
        pthread_cond_timedwait(&engine->cond, &engine->lock, &ts);
    }
    return 1;
}

int hixl_engine_wait_busy(hixl_engine_t *engine, uint64_t deadline_ns,
                          int (*pred)(void *arg), void *arg)
{
    int done;

    atomic_fetch_add(&engine->progress.busy, 1);
    hixl_progress_kick(engine);
    done = hixl_engine_wait(engine, deadline_ns, pred, arg);
    hixl_assert(atomic_load(&engine->progress.busy) >= 1);   /* ours */
    atomic_fetch_sub(&engine->progress.busy, 1);
    return done;
}
