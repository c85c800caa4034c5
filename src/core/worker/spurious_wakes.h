/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wake-ups of an idle progress thread that bring nothing.
 *
 * UCX's event fd can stay readable while ucp_worker_progress has nothing
 * to do.  UCX 1.13's tcp endpoint does this while the peer has not yet
 * accepted its connection: the wire-up messages UCP queued on it stay
 * pending, and the endpoint keeps its level-triggered "writable" event on
 * a socket that is writable, so every epoll_wait returns at once and
 * arming the worker changes nothing (tcp's arm is empty).  When many
 * engines connect to one over tcp at once, each waiting engine wakes tens
 * of times a millisecond for nothing, and that CPU is what the accepting
 * engine needs to accept them.
 *
 * The progress thread counts sleeps that ended early, without a kick and
 * without socket traffic, after which a round found nothing.  After
 * HIXL_SPURIOUS_WAKES_MAX of them in a row it pauses instead of sleeping on the
 * fd, and tries the fd again after every pause, so the first sleep that
 * lasts, or a round that finds something, ends the pauses.  With nothing of
 * its own in flight a pause is HIXL_SPURIOUS_WAKES_PAUSE_NS, doubling to
 * HIXL_SPURIOUS_WAKES_PAUSE_MAX_NS; with transfers in flight (to other peers: a
 * connect that waits on a stalled listener) it stays at
 * HIXL_SPURIOUS_WAKES_PAUSE_NS, which is then the most their completions wait.
 * Where the fd behaves, the count never gets there: a lone connect woke
 * 4-5 times.
 */
#ifndef HIXL_CORE_SPURIOUS_WAKES_H
#define HIXL_CORE_SPURIOUS_WAKES_H

#include <stdint.h>

#define HIXL_SPURIOUS_WAKES_MAX          4
#define HIXL_SPURIOUS_WAKES_PAUSE_NS     100000ull   /* 100 us */
#define HIXL_SPURIOUS_WAKES_PAUSE_MAX_NS 1000000ull   /* 1 ms */

typedef struct hixl_spurious_wakes {
    unsigned fruitless;   /* early wake-ups in a row that brought nothing */
    unsigned pauses;      /* doublings of the pause so far (idle) */
    unsigned kicks;       /* the kick count when the last sleep began */
    int      early;       /* the last sleep ended early by itself */
    int      paused;      /* the last wait was a pause: sleep on the fd next */
} hixl_spurious_wakes_t;

/* A round of progress found n events; kicks: the kick count it began
 * with. */
void hixl_spurious_wakes_round(hixl_spurious_wakes_t *w, unsigned n,
                               unsigned kicks);

/* How long the thread should pause now instead of sleeping on the fd (busy:
 * work of this engine in flight: short pauses only); 0: sleep on the fd.
 * A pause is always followed by a try of the fd. */
uint64_t hixl_spurious_wakes_pause_ns(hixl_spurious_wakes_t *w, int busy);

/* The pause itself. */
void hixl_spurious_wakes_pause(uint64_t ns);

/* A sleep of at most timeout_ns began at t0 with the kick count kicks and
 * ended at t1; ctrl: socket events it handled. */
void hixl_spurious_wakes_slept(hixl_spurious_wakes_t *w, uint64_t t0,
                               uint64_t t1, uint64_t timeout_ns, unsigned kicks,
                               unsigned ctrl);

#endif
