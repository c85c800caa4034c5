/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wake-ups of an idle progress thread that bring nothing.  See
 * spurious_wakes.h.
 */
#include "config.h"
#include "core/worker/spurious_wakes.h"

#include <errno.h>
#include <time.h>

void hixl_spurious_wakes_round(hixl_spurious_wakes_t *w, unsigned n,
                               unsigned kicks)
{
    if ((n > 0) || (w->early && (kicks != w->kicks))) {
        w->fruitless = w->pauses = 0;   /* something came: the fd is honest */
    } else if (w->early) {
        ++w->fruitless;
    }
    w->early = 0;
}

uint64_t hixl_spurious_wakes_pause_ns(hixl_spurious_wakes_t *w, int busy)
{
    uint64_t ns;

    if (w->paused || (w->fruitless < HIXL_SPURIOUS_WAKES_MAX)) {
        w->paused = 0;
        return 0;
    }
    w->paused = 1;
    if (busy) {
        /* its own completions wait on it */
        return HIXL_SPURIOUS_WAKES_PAUSE_NS;
    }
    /* doubles with each pause in a row; pauses stops counting at the most */
    ns = HIXL_SPURIOUS_WAKES_PAUSE_NS << w->pauses;
    if (ns >= HIXL_SPURIOUS_WAKES_PAUSE_MAX_NS) {
        return HIXL_SPURIOUS_WAKES_PAUSE_MAX_NS;
    }
    ++w->pauses;
    return ns;
}

void hixl_spurious_wakes_pause(uint64_t ns)
{
    struct timespec ts;

    ts.tv_sec  = (time_t)(ns / 1000000000ull);
    ts.tv_nsec = (long)(ns % 1000000000ull);
    while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
    }
}

void hixl_spurious_wakes_slept(hixl_spurious_wakes_t *w, uint64_t t0,
                               uint64_t t1, uint64_t timeout_ns, unsigned kicks,
                               unsigned ctrl)
{
    w->kicks = kicks;
    w->early = (ctrl == 0) && (t1 - t0 < timeout_ns / 2);
    if (!w->early) {
        w->fruitless = w->pauses = 0;   /* a sleep that lasted, or traffic */
    }
}
