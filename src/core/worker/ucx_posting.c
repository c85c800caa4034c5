/* SPDX-License-Identifier: BSD-3-Clause */
/* Progress that gives way to threads posting into UCX (see ucx_posting.h). */
#include "config.h"
#include "core/worker/ucx_posting.h"

#include <sched.h>

int hixl_ucx_progress_yields(hixl_ucx_posting_t *up)
{
    unsigned ended;

    if (atomic_load_explicit(&up->posting, memory_order_relaxed) == 0) {
        if (atomic_load_explicit(&up->yielded, memory_order_relaxed) != 0) {
            atomic_store_explicit(&up->yielded, 0, memory_order_relaxed);
        }
        return 0;
    }
    /* The same post as last time (none ended since): its thread holds
     * UCX's lock and may be waiting for this core; always give way.  A
     * new one counts: posters that never pause get progress anyway, and
     * then UCX's lock decides who goes first. */
    ended = atomic_load_explicit(&up->ended, memory_order_relaxed);
    if (atomic_exchange_explicit(&up->seen, ended, memory_order_relaxed) !=
        ended) {
        if (atomic_fetch_add_explicit(&up->yielded, 1, memory_order_relaxed)
            >= HIXL_UCX_YIELDS_MAX) {
            atomic_store_explicit(&up->yielded, 0, memory_order_relaxed);
            return 0;
        }
    }
    sched_yield();
    return 1;
}
