/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Progress: UCX worker progress, the engine's sockets and housekeeping,
 * driven by the engine's progress thread or, without one, from inside hixl
 * calls.
 *
 * Other layers plug in instead of being called by name (the shape of UCX's
 * callback queue):
 *  - progress callbacks run on every pass after ucp_worker_progress (device
 *    copies, staging);
 *  - socket kinds: the engine's epoll set carries (kind, key) per socket,
 *    and the handler registered for a kind gets the events (the listening
 *    socket, peers' control connections: ctrl/);
 *  - periodic callbacks run every HIXL_PERIODIC_NS or sooner when asked
 *    (handshake deadlines, endpoint errors).
 * Socket handlers and periodic callbacks run with engine->lock held.
 *
 * The thread polls while anything is in flight (busy) and for
 * hixl.ProgressSpinUs after the last data activity, then sleeps in epoll on
 * the sockets and UCX's event fd (armed with ucp_worker_arm), so an idle engine
 * costs no CPU and a passive target still progresses incoming puts on
 * transports that need it (tcp).  Work posted while it sleeps wakes it with
 * ucp_worker_signal().
 *
 * The ways in, by who calls them:
 *  - a thread that waits or polls for its work: hixl_progress_pass, told
 *    which kind of caller it is (hixl_progress_caller_t);
 *  - a blocking call in an engine without a progress thread:
 *    hixl_progress_block; a caller about to sleep on the engine's event
 *    fd: hixl_progress_ready_to_sleep; a post: hixl_progress_before_post;
 *  - a wait with engine->lock held: hixl_engine_wait, _wait_busy;
 *  - UCX alone (settling closed endpoints, device staging):
 *    hixl_progress_ucx; the copier thread, for flushes its copies left
 *    due: hixl_progress_flush_due;
 *  - signals to the thread, from anywhere: hixl_progress_kick (work was
 *    posted), _urgent (run periodic work now), _data_seen (keep polling).
 * The rest is set-up: the thread's start and stop, and the plug-ins.
 */
#ifndef HIXL_CORE_PROGRESS_H_
#define HIXL_CORE_PROGRESS_H_

#include "core/worker/spurious_wakes.h"
#include "core/worker/ucx_posting.h"

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct hixl_engine hixl_engine_t;

/* What an epoll event belongs to: the kind in the top byte of its data,
 * a key below (a peer's serial, not a pointer, so that an event for a peer
 * closed meanwhile finds nothing). */
typedef enum hixl_poll_kind {
    HIXL_POLL_WORKER,
    HIXL_POLL_LISTEN,
    HIXL_POLL_PEER,
    HIXL_POLL_KINDS
} hixl_poll_kind_t;

#define HIXL_POLL_DATA(_kind, _key) \
    (((uint64_t)(_kind) << 56) | ((_key) & ((1ull << 56) - 1)))

typedef unsigned (*hixl_progress_fn_t)(hixl_engine_t *engine);
typedef void (*hixl_poll_fn_t)(hixl_engine_t *engine, uint64_t key,
                               uint32_t events);
typedef void (*hixl_periodic_fn_t)(hixl_engine_t *engine, uint64_t now_ns);
typedef void (*hixl_flush_due_fn_t)(hixl_engine_t *engine);
typedef void (*hixl_in_worker_fn_t)(hixl_engine_t *engine, int quiet);

#define HIXL_PERIODIC_NS      100000000ull   /* 100 ms */

typedef struct hixl_progress {
    int                epfd;
    int                 worker_efd; /* -1: UCX gave no event fd (either
                                         worker): pause instead of sleep */
    int                worker_efd_in;
    pthread_mutex_t    poll_lock;     /* one thread reads the sockets */
    unsigned           poll_count;
    atomic_uint_fast64_t polled_ns;   /* when the sockets were last read */
    uint64_t           next_periodic_ns;
    pthread_t          thread;
    int                running;
    atomic_int         stop;
    atomic_int         sleeping;
    atomic_uint        kicks;         /* hixl_progress_kick calls, ever */
    atomic_uint        busy;          /* work in flight: keep polling */
    atomic_int         urgent;        /* run periodic work at once */
    atomic_int         data_seen;     /* a data message was handled
                                         (hixl_progress_data_seen) */
    atomic_long        ctrl_answers_due; /* answers due on the control
                                         connections: WRITEs not answered
                                         yet (core/peer/channel.h) */
    atomic_int         flush_wanted;  /* an endpoint flush is due */
    hixl_ucx_posting_t ucx_posting;   /* threads posting on the out worker
                                         (core/worker/ucx_posting.h) */
    uint64_t           gap_ns;        /* between events, smoothed (the
                                         thread's own) */
    hixl_progress_fn_t *fns;          /* grows (util/array.h) */
    size_t             fns_cap;
    unsigned           nfns;
    hixl_poll_fn_t     poll_fns[HIXL_POLL_KINDS];
    hixl_periodic_fn_t *periodic;     /* grows (util/array.h) */
    size_t             periodic_cap;
    hixl_flush_due_fn_t flush_due;    /* issues the flushes left due */
    hixl_in_worker_fn_t after_in;     /* after each progress of the in
                                         worker (hixl_progress_after_in) */
    unsigned           nperiodic;
} hixl_progress_t;

/* The epoll set and UCX's event fd (engine->ucp_worker exists).  Cleanup
 * also forgets the plug-ins, which may be added before init. */
hixl_status_t hixl_progress_init(hixl_engine_t *engine);
void hixl_progress_cleanup(hixl_engine_t *engine);

/* ucp_worker_progress of both workers. */
unsigned hixl_progress_ucx(hixl_engine_t *engine);

/* Plug in (engine set-up, before the thread starts and before any call
 * progresses: the tables may move).  Adding a progress or a periodic
 * callback returns RESOURCE_EXHAUSTED, with the last error set, when its
 * table cannot grow: the caller's set-up fails. */
hixl_status_t hixl_progress_add(hixl_engine_t *engine, hixl_progress_fn_t fn);
void hixl_progress_on_socket(hixl_engine_t *engine, hixl_poll_kind_t kind,
                             hixl_poll_fn_t fn);
hixl_status_t hixl_progress_periodic(hixl_engine_t *engine,
                                     hixl_periodic_fn_t fn);

/* Add a socket to the epoll set for input (kind, key). */
hixl_status_t hixl_progress_watch(hixl_engine_t *engine, int fd,
                                  hixl_poll_kind_t kind, uint64_t key);

hixl_status_t hixl_progress_start(hixl_engine_t *engine);
void hixl_progress_stop(hixl_engine_t *engine);

/* Who asks for a pass of progress, which decides how it is done. */
typedef enum hixl_progress_caller {
    /* a call that waits for its own transfer: UCX, plug-ins, and the
     * sockets once in HIXL_POLL_PERIOD passes */
    HIXL_PROGRESS_WAIT_DATA,
    /* a call that waits for control traffic (notifies, layer signals,
     * handshakes): the sockets eight times as often */
    HIXL_PROGRESS_WAIT_CONTROL,
    /* an application's polling loop on a transfer (its status,
     * hixl_engine_progress): a pass here only when no progress thread
     * runs or it sleeps; while it is awake, the caller gives it the CPU
     * instead of taking a core from it (the pass returns 0) */
    HIXL_PROGRESS_POLL_DATA,
    /* the same for a loop polling for control traffic (a layer's
     * signal, notifies) */
    HIXL_PROGRESS_POLL_CONTROL
} hixl_progress_caller_t;

/* One pass of progress for a calling thread; returns events handled.
 * Never call it with engine->lock held: socket handlers take it. */
unsigned hixl_progress_pass(hixl_engine_t *engine,
                            hixl_progress_caller_t caller);

/* A post, in an engine without a progress thread: read the sockets now
 * and then, so that a revocation or a close already sent to us takes
 * effect before the post. */
void hixl_progress_before_post(hixl_engine_t *engine);

/* Issue the endpoint flushes that completions left due (ep_flush.h), under
 * engine->lock, which the caller must not hold; 1 if there were any.  The
 * progress thread does this; a thread that completed flushes itself (the
 * copier, ops/copier.c) may too, instead of waking the progress thread. */
unsigned hixl_progress_flush_due(hixl_engine_t *engine);

/* Who issues them (the peer table: core/peer/peer.h; engine set-up, one). */
void hixl_progress_on_flush_due(hixl_engine_t *engine,
                                hixl_flush_due_fn_t fn);

/* What runs after every progress of the in worker, told whether that pass
 * brought nothing (quiet): the inbound table writes the answers its
 * handlers queued (core/peer/inbound.h; engine set-up, one). */
void hixl_progress_after_in(hixl_engine_t *engine, hixl_in_worker_fn_t fn);

/* Without a progress thread, for a caller about to sleep on the engine's
 * epoll set (directly or nested in the application's event fd): progress
 * UCX, plug-ins and the sockets, then arm UCX's event fds.  1 when that
 * found nothing to do and the fds are armed, 0 when the caller should look
 * at its condition and call again. */
int hixl_progress_ready_to_sleep(hixl_engine_t *engine);

/* Without a progress thread, a blocking call's turn: progress, and when
 * nothing happened sleep in epoll on the engine's sockets and UCX's event fds
 * until one fires, deadline_ns passes, or at most 1 ms with work in flight (100
 * ms idle), as the progress thread would.  wakes is the caller's, kept across
 * the turns of one wait (zeroed at its start): where UCX's fd wakes the sleeper
 * for nothing, turns pause instead, as the thread does
 * (core/worker/spurious_wakes.h).  Returns 0 after a sleep or pause that saw
 * nothing, else non-zero (work was found and progressed). */
unsigned hixl_progress_block(hixl_engine_t *engine, uint64_t deadline_ns,
                             hixl_spurious_wakes_t *wakes);

/* Work was posted: make sure a sleeping progress thread wakes for it. */
void hixl_progress_kick(hixl_engine_t *engine);

/* Ask for periodic work at once (a UCX endpoint reported an error). */
void hixl_progress_urgent(hixl_engine_t *engine);

/* A data message was served here (a WRITE or a READ): the idle spin
 * after it is worth its CPU, as after a transfer of this engine's own. */
void hixl_progress_data_seen(hixl_engine_t *engine);

/* Wait (engine->lock held) until pred(arg) or the deadline; progresses
 * when there is no progress thread.  Returns pred's last value.  State
 * changes broadcast engine->cond. */
int hixl_engine_wait(hixl_engine_t *engine, uint64_t deadline_ns,
                     int (*pred)(void *arg), void *arg);

/* The same with the engine's busy count raised: for waits on UCX
 * operations, which need the progress thread to poll, not sleep. */
int hixl_engine_wait_busy(hixl_engine_t *engine, uint64_t deadline_ns,
                          int (*pred)(void *arg), void *arg);

#endif
