/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Threads posting into UCX, so that a thread about to progress the same
 * engine can give way to them instead of spinning on UCX's lock.
 *
 * UCX serialises a multi-threaded worker with a spinlock.  A send that
 * packs and writes a 60 KiB message holds it for tens of microseconds.
 * Where the progress thread and the thread posting transfers share a core
 * (a process pinned to one core, or kept to one by its container's
 * cpuset; a host whose cores are all busy), the scheduler often preempts
 * the poster inside its send, typically for the progress thread that the
 * filling socket woke, and the progress thread then spins on UCX's lock
 * for its whole time slice while the holder cannot run.  A prefill pinned
 * to one core, pausing between its status polls, spent a third of its
 * CPU there.  (A CPU quota on a host with free cores does not do it: the
 * two threads run side by side until the whole group is throttled.)
 *
 * A poster announces itself around its UCX call; a progress pass that
 * finds one yields the core instead of entering UCX, so the holder
 * finishes and leaves.  This is a hint, not a lock: UCX's own lock still
 * serialises the worker, and a pass that races with a new post just waits
 * for UCX as before.  A pass gives way for as long as one post lasts
 * (each is one UCX call), and across at most HIXL_UCX_YIELDS_MAX posts in
 * a row, so that threads posting without pause cannot starve progress.
 */
#ifndef HIXL_CORE_UCX_POSTING_H_
#define HIXL_CORE_UCX_POSTING_H_

#include <stdatomic.h>

/* posts in a row that progress gives way to */
#define HIXL_UCX_YIELDS_MAX 16u

typedef struct hixl_ucx_posting {
    atomic_uint posting;   /* threads inside a UCX post now */
    atomic_uint ended;     /* posts ended, ever */
    atomic_uint seen;      /* ended when progress last gave way */
    atomic_uint yielded;   /* posts given way to in a row */
} hixl_ucx_posting_t;

static inline void hixl_ucx_post_begin(hixl_ucx_posting_t *up)
{
    atomic_fetch_add_explicit(&up->posting, 1, memory_order_relaxed);
}

static inline void hixl_ucx_post_end(hixl_ucx_posting_t *up)
{
    atomic_fetch_sub_explicit(&up->posting, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&up->ended, 1, memory_order_relaxed);
}

/* Called before a progress pass enters UCX: 1 when it gave way to a
 * poster (it yielded the core; progress nothing this time), 0 to go on. */
int hixl_ucx_progress_yields(hixl_ucx_posting_t *up);

#endif
