/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wake-ups of an idle progress thread that bring nothing.  See
 * idle_wakes.h.
 */
#include "config.h"
#include "core/worker/idle_wakes.h"

#include <errno.h>
#include <time.h>

void hixl_idle_wakes_round(hixl_idle_wakes_t *w, unsigned n, unsigned kicks)
{
    if ((n > 0) || (w->early && (kicks != w->kicks))) {
        w->fruitless = w->naps = 0;   /* something came: the fd is honest */
    } else if (w->early) {
        ++w->fruitless;
    }
    w->early = 0;
}

uint64_t hixl_idle_wakes_nap_ns(hixl_idle_wakes_t *w, int busy)
{
    uint64_t ns;

    if (w->napped || (w->fruitless < HIXL_IDLE_WAKES_MAX)) {
        w->napped = 0;
        return 0;
    }
    w->napped = 1;
    if (busy) {
        return HIXL_IDLE_WAKES_NAP_NS;   /* its own completions wait on it */
    }
    /* doubles with each nap in a row; naps stops counting at the most */
    ns = HIXL_IDLE_WAKES_NAP_NS << w->naps;
    if (ns >= HIXL_IDLE_WAKES_NAP_MAX_NS) {
        return HIXL_IDLE_WAKES_NAP_MAX_NS;
    }
    ++w->naps;
    return ns;
}

void hixl_idle_wakes_nap(uint64_t ns)
{
    struct timespec ts;

    ts.tv_sec  = (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
    }
}

void hixl_idle_wakes_slept(hixl_idle_wakes_t *w, uint64_t t0, uint64_t t1,
                           uint64_t timeout_ns, unsigned kicks, unsigned ctrl)
{
    w->kicks = kicks;
    w->early = (ctrl == 0) && (t1 - t0 < timeout_ns / 2);
    if (!w->early) {
        w->fruitless = w->naps = 0;   /* a sleep that lasted, or traffic */
    }
}
