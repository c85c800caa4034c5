/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the endpoint-flush service (src/core/peer/ep_flush.c), without UCX: the
 * flush is a test function that completes at once, fails, or stays out
 * until the test completes it.  What is checked is the contract every user
 * of the service relies on: a waiter is called back only by a flush posted
 * after it was added, exactly once, by close at the latest, and a late
 * completion after close finds nothing.
 */
#include "config.h"
#include "harness.h"
#include "core/peer/ep_flush.h"
#include "ep_flush_counted.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <ucs/type/status.h>

/* ---- the fake flush ----------------------------------------------------- */

enum { FLUSH_INLINE_OK, FLUSH_INLINE_ERROR, FLUSH_PENDING };

static int         flush_mode;
static int         flushes_posted;
static int         flushes_out;     /* posted with FLUSH_PENDING */
static atomic_int  wanted;
/* the groups of the flushes out, in the order they were posted */
static hixl_ep_flush_group_t *out_groups[HIXL_EP_FLUSH_MAX_DEPTH + 1];

static ucs_status_ptr_t fake_flush(hixl_ep_flush_t *ep_flush, void *ep,
                                   hixl_ep_flush_group_t *group)
{
    (void)ep_flush;
    ck_assert_ptr_eq(ep, (void*)0x1234);
    ++flushes_posted;
    switch (flush_mode) {
    case FLUSH_INLINE_OK:
        return NULL;
    case FLUSH_INLINE_ERROR:
        return UCS_STATUS_PTR(UCS_ERR_IO_ERROR);
    default:
        ck_assert_int_le(flushes_out, HIXL_EP_FLUSH_MAX_DEPTH);
        out_groups[flushes_out++] = group;
        return (ucs_status_ptr_t)(uintptr_t)0x1;   /* "a request" */
    }
}

/* The k-th pending flush (0: the oldest) completes, as UCX's callback
 * would. */
static void complete_nth(int k, ucs_status_t status)
{
    hixl_ep_flush_group_t *g;

    ck_assert_int_gt(flushes_out, k);
    g = out_groups[k];
    memmove(&out_groups[k], &out_groups[k + 1],
            (size_t)(flushes_out - k - 1) * sizeof(out_groups[0]));
    --flushes_out;
    hixl_ep_flush_completed(g, status);
}

/* The oldest pending flush completes. */
static void complete_one(hixl_ep_flush_t *ep_flush, ucs_status_t status)
{
    (void)ep_flush;
    complete_nth(0, status);
}

static hixl_ep_flush_t *new_ep_flush(int mode)
{
    hixl_ep_flush_t *ep_flush;

    flush_mode     = mode;
    flushes_posted = 0;
    flushes_out    = 0;
    atomic_store(&wanted, 0);
    ep_flush = hixl_ep_flush_create((void *)0x1234, fake_flush, &wanted);
    ck_assert_ptr_nonnull(ep_flush);
    return ep_flush;
}

/* ---- tests -------------------------------------------------------------- */

START_TEST(test_inline_completion)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_INLINE_OK);
    counted_t c[2];

    counted_init(c, 2);
    /* a flush that completes at once calls its waiter back inside add */
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[0].w, 0), 0);
    ck_assert_int_eq(atomic_load(&c[0].calls), 1);
    ck_assert_int_eq(c[0].status, UCS_OK);
    /* own_fast: the poster is told instead, and no callback runs */
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[1].w, 1), 1);
    ck_assert_int_eq(atomic_load(&c[1].calls), 0);
    ck_assert_int_eq(flushes_posted, 2);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(atomic_load(&c[0].calls), 1);
    ck_assert_int_eq(atomic_load(&c[1].calls), 0);
}
END_TEST

START_TEST(test_inline_error)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_INLINE_ERROR);
    counted_t c;

    counted_init(&c, 1);
    /* an error is never the poster's to swallow: the callback gets it */
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c.w, 1), 0);
    ck_assert_int_eq(atomic_load(&c.calls), 1);
    ck_assert_int_eq(c.status, UCS_ERR_IO_ERROR);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(atomic_load(&c.calls), 1);
}
END_TEST

/* The idle test: what it vouches for is finished without a flush (and
 * without the flush's reference); otherwise the flush runs as before. */
static int idle_says;
static int idle_asked;

static int fake_idle(hixl_ep_flush_t *ep_flush)
{
    (void)ep_flush;
    ++idle_asked;
    return idle_says;
}

START_TEST(test_idle_skips_the_flush)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[4];

    counted_init(c, 4);
    ep_flush->idle = fake_idle;
    idle_asked = 0;
    idle_says  = 1;
    /* the poster's */
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[0].w, 1), 1);
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[1].w, 0), 0);
    ck_assert_int_eq(atomic_load(&c[0].calls), 0);
    ck_assert_int_eq(atomic_load(&c[1].calls), 1);
    ck_assert_int_eq(c[1].status, UCS_OK);
    ck_assert_int_eq(flushes_posted, 0);
    ck_assert_int_eq(idle_asked, 2);
    ck_assert_uint_eq(atomic_load(&ep_flush->refs), 1);   /* the owner's */

    /* not idle: a real flush; a waiter added meanwhile while the endpoint
     * is idle (nothing posted since that flush went out, or all of it
     * done) joins the flush out, which covers its operations */
    idle_says = 0;
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[2].w, 1), 0);
    ck_assert_int_eq(flushes_posted, 1);
    idle_says = 1;
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[3].w, 1), 0);
    ck_assert_int_eq(atomic_load(&c[3].calls), 0);
    complete_one(ep_flush, UCS_OK);
    ck_assert_int_eq(atomic_load(&c[2].calls), 1);
    ck_assert_int_eq(atomic_load(&c[3].calls), 1);
    ck_assert_int_eq(c[3].status, UCS_OK);
    ck_assert_int_eq(atomic_load(&wanted), 0);   /* nothing left waiting */
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 0);
    ck_assert_int_eq(flushes_posted, 1);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(atomic_load(&c[1].calls) + atomic_load(&c[2].calls) +
                     atomic_load(&c[3].calls), 3);
}
END_TEST

/* A waiter joins the flush out only while the endpoint is idle when it is
 * added: one added while it was not waits for the next flush even if the
 * endpoint is idle by the time the flush out completes; joiners are called
 * back after the group they join, in the order they came. */
static int order_log[8];
static int order_n;

typedef struct {
    hixl_ep_flush_waiter_t w;
    int                    id;
} ordered_t;

static void ordered_cb(hixl_ep_flush_waiter_t *w, ucs_status_t status)
{
    ck_assert_int_eq(status, UCS_OK);
    ck_assert_int_lt(order_n, 8);
    order_log[order_n++] = ((ordered_t*)w)->id;
}

/* The same, whatever the status (a close's). */
static void ordered_cb_any(hixl_ep_flush_waiter_t *w, ucs_status_t status)
{
    (void)status;
    ck_assert_int_lt(order_n, 8);
    order_log[order_n++] = ((ordered_t*)w)->id;
}

START_TEST(test_idle_joins_the_flush_out)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    ordered_t o[5];
    int i;

    for (i = 0; i < 5; ++i) {
        o[i].w.cb = ordered_cb;
        o[i].id   = i;
    }
    order_n        = 0;
    ep_flush->idle = fake_idle;
    idle_says      = 0;
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &o[0].w, 0), 0);  /* #1 */
    idle_says = 1;
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &o[1].w, 1), 0);  /* joins */
    idle_says = 0;
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &o[2].w, 0), 0);  /* waits */
    idle_says = 1;
    /* joins #1 too: what came between it and o2 is o2's business */
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &o[3].w, 0), 0);
    ck_assert_int_eq(flushes_posted, 1);
    ck_assert_int_eq(order_n, 0);
    complete_one(ep_flush, UCS_OK);
    ck_assert_int_eq(order_n, 3);
    ck_assert_int_eq(order_log[0], 0);
    ck_assert_int_eq(order_log[1], 1);
    ck_assert_int_eq(order_log[2], 3);
    /* o2 is owed a flush after it (the endpoint is idle now: none posted) */
    ck_assert_int_eq(atomic_load(&wanted), 1);
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 1);
    ck_assert_int_eq(order_n, 4);
    ck_assert_int_eq(order_log[3], 2);
    /* no flush out: an idle endpoint finishes a waiter at once */
    ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &o[4].w, 0), 0);
    ck_assert_int_eq(order_n, 5);
    ck_assert_int_eq(flushes_posted, 1);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(order_n, 5);
}
END_TEST

START_TEST(test_group_commit)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[4];
    int i;

    counted_init(c, 4);
    hixl_ep_flush_add(ep_flush, &c[0].w, 0);   /* flush #1 covers c0 */
    ck_assert_int_eq(flushes_posted, 1);
    for (i = 1; i < 4; ++i) {               /* added after #1 went out */
        ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &c[i].w, 1), 0);
    }
    ck_assert_int_eq(flushes_posted, 1);    /* they wait: one flush out */

    complete_one(ep_flush, UCS_OK);
    ck_assert_int_eq(atomic_load(&c[0].calls), 1);
    for (i = 1; i < 4; ++i) {               /* #1 predates them */
        ck_assert_int_eq(atomic_load(&c[i].calls), 0);
    }
    /* the completion may not issue the next flush itself: it asks */
    ck_assert_int_eq(atomic_load(&wanted), 1);
    ck_assert_int_eq(flushes_posted, 1);
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 1);
    ck_assert_int_eq(flushes_posted, 2);    /* one flush for all three */
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 0);

    complete_one(ep_flush, UCS_OK);
    for (i = 1; i < 4; ++i) {
        ck_assert_int_eq(atomic_load(&c[i].calls), 1);
        ck_assert_int_eq(c[i].status, UCS_OK);
    }
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    for (i = 0; i < 4; ++i) {
        ck_assert_int_eq(atomic_load(&c[i].calls), 1);
    }
}
END_TEST

START_TEST(test_due_flush_taken_by_add)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[3];

    counted_init(c, 3);
    hixl_ep_flush_add(ep_flush, &c[0].w, 0);
    hixl_ep_flush_add(ep_flush, &c[1].w, 0);
    complete_one(ep_flush, UCS_OK);   /* c1's flush is now due */
    /* the next add issues it (and c2 rides along) instead of progress */
    hixl_ep_flush_add(ep_flush, &c[2].w, 0);
    ck_assert_int_eq(flushes_posted, 2);
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 0);
    complete_one(ep_flush, UCS_ERR_ENDPOINT_TIMEOUT);
    ck_assert_int_eq(c[1].status, UCS_ERR_ENDPOINT_TIMEOUT);
    ck_assert_int_eq(c[2].status, UCS_ERR_ENDPOINT_TIMEOUT);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(atomic_load(&c[0].calls) + atomic_load(&c[1].calls) +
                     atomic_load(&c[2].calls), 3);
}
END_TEST

START_TEST(test_close_settles_everything_once)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[3], late;
    int i;

    counted_init(c, 3);
    counted_init(&late, 1);
    hixl_ep_flush_add(ep_flush, &c[0].w, 0);   /* in flight */
    hixl_ep_flush_add(ep_flush, &c[1].w, 0);   /* waiting */
    hixl_ep_flush_add(ep_flush, &c[2].w, 0);
    hixl_ep_flush_retain(ep_flush);   /* keep it to look at it */
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    for (i = 0; i < 3; ++i) {
        ck_assert_int_eq(atomic_load(&c[i].calls), 1);
        ck_assert_int_eq(c[i].status, UCS_ERR_CANCELED);
    }
    /* the flush UCX still holds completes late: nobody is called again */
    complete_one(ep_flush, UCS_OK);
    for (i = 0; i < 3; ++i) {
        ck_assert_int_eq(atomic_load(&c[i].calls), 1);
    }
    /* closed: a new waiter is settled at once, no flush is posted */
    hixl_ep_flush_add(ep_flush, &late.w, 1);
    ck_assert_int_eq(atomic_load(&late.calls), 1);
    ck_assert_int_eq(late.status, UCS_ERR_CANCELED);
    ck_assert_int_eq(flushes_posted, 1);
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 0);
    /* only the test's reference is left */
    ck_assert_uint_eq(atomic_load(&ep_flush->refs), 1);
    hixl_ep_flush_release(ep_flush);
}
END_TEST

/* ---- several flushes in flight (the channel's epoch slots) ---------------- */

/* Each waiter gets a flush of its own at once, and groups are called
 * back in the order their flushes went out, whatever order those
 * complete in. */
START_TEST(test_pipelined_in_order)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    ordered_t o[4];
    int i;

    hixl_ep_flush_set_depth(ep_flush, 4);
    for (i = 0; i < 4; ++i) {
        o[i].w.cb = ordered_cb;
        o[i].id   = i;
        ck_assert_int_eq(hixl_ep_flush_add(ep_flush, &o[i].w, 0), 0);
    }
    order_n = 0;
    ck_assert_int_eq(flushes_posted, 4);   /* none waited */
    complete_nth(2, UCS_OK);               /* o2's: earlier ones out */
    complete_nth(1, UCS_OK);               /* o1's */
    ck_assert_int_eq(order_n, 0);
    complete_nth(0, UCS_OK);               /* o0's: o0, o1, o2 go */
    ck_assert_int_eq(order_n, 3);
    for (i = 0; i < 3; ++i) {
        ck_assert_int_eq(order_log[i], i);
    }
    complete_nth(0, UCS_OK);
    ck_assert_int_eq(order_n, 4);
    ck_assert_int_eq(order_log[3], 3);
    ck_assert_int_eq(atomic_load(&ep_flush->busy), 0);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(order_n, 4);
}
END_TEST

/* With depth flushes out, later waiters form one group under the next
 * flush, issued when one completes (from the owner's progress). */
START_TEST(test_pipelined_depth_full)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[5];
    int i;

    counted_init(c, 5);
    hixl_ep_flush_set_depth(ep_flush, 2);
    for (i = 0; i < 5; ++i) {
        hixl_ep_flush_add(ep_flush, &c[i].w, 0);
    }
    ck_assert_int_eq(flushes_posted, 2);   /* c2..c4 wait */
    complete_nth(1, UCS_OK);               /* c1's, before c0's */
    ck_assert_int_eq(atomic_load(&c[1].calls), 0);
    ck_assert_int_eq(atomic_load(&wanted), 0);   /* no room yet */
    complete_nth(0, UCS_OK);
    ck_assert_int_eq(atomic_load(&c[0].calls), 1);
    ck_assert_int_eq(atomic_load(&c[1].calls), 1);
    ck_assert_int_eq(atomic_load(&wanted), 1);
    ck_assert_int_eq(hixl_ep_flush_progress(ep_flush), 1);
    ck_assert_int_eq(flushes_posted, 3);   /* one for the three */
    complete_one(ep_flush, UCS_OK);
    for (i = 2; i < 5; ++i) {
        ck_assert_int_eq(atomic_load(&c[i].calls), 1);
        ck_assert_int_eq(c[i].status, UCS_OK);
    }
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
}
END_TEST

/* A flush that fails fails the groups issued while it was out, which
 * cover its operations; one issued after they were all called back
 * starts afresh. */
START_TEST(test_pipelined_failure_carries)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[4];

    counted_init(c, 4);
    hixl_ep_flush_set_depth(ep_flush, 3);
    hixl_ep_flush_add(ep_flush, &c[0].w, 0);
    hixl_ep_flush_add(ep_flush, &c[1].w, 0);
    hixl_ep_flush_add(ep_flush, &c[2].w, 0);
    complete_nth(2, UCS_OK);
    complete_nth(1, UCS_OK);
    complete_nth(0, UCS_ERR_ENDPOINT_TIMEOUT);
    ck_assert_int_eq(c[0].status, UCS_ERR_ENDPOINT_TIMEOUT);
    ck_assert_int_eq(c[1].status, UCS_ERR_ENDPOINT_TIMEOUT);
    ck_assert_int_eq(c[2].status, UCS_ERR_ENDPOINT_TIMEOUT);
    hixl_ep_flush_add(ep_flush, &c[3].w, 0);
    complete_one(ep_flush, UCS_OK);
    ck_assert_int_eq(atomic_load(&c[3].calls), 1);
    ck_assert_int_eq(c[3].status, UCS_OK);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
}
END_TEST

/* The failure is not carried past the groups that were out with the
 * failed flush: a group issued after it was called back, while one of
 * those was still out, ends with its own flush's status. */
START_TEST(test_pipelined_failure_ends)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    counted_t c[4];

    counted_init(c, 4);
    hixl_ep_flush_set_depth(ep_flush, 3);
    hixl_ep_flush_add(ep_flush, &c[0].w, 0);
    hixl_ep_flush_add(ep_flush, &c[1].w, 0);
    complete_nth(0, UCS_ERR_IO_ERROR);         /* c0's: called back */
    ck_assert_int_eq(c[0].status, UCS_ERR_IO_ERROR);
    ck_assert_int_eq(atomic_load(&c[1].calls), 0);
    hixl_ep_flush_add(ep_flush, &c[2].w, 0);   /* after it */
    complete_nth(0, UCS_OK);                   /* c1's: out with c0's */
    ck_assert_int_eq(atomic_load(&c[1].calls), 1);
    ck_assert_int_eq(c[1].status, UCS_ERR_IO_ERROR);
    hixl_ep_flush_add(ep_flush, &c[3].w, 0);
    complete_nth(0, UCS_OK);
    complete_nth(0, UCS_OK);
    ck_assert_int_eq(atomic_load(&c[2].calls), 1);
    ck_assert_int_eq(c[2].status, UCS_OK);
    ck_assert_int_eq(atomic_load(&c[3].calls), 1);
    ck_assert_int_eq(c[3].status, UCS_OK);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
}
END_TEST

/* Close with several flushes out and waiters queued: everyone once, in
 * order, and the late completions call nobody. */
START_TEST(test_pipelined_close)
{
    hixl_ep_flush_t *ep_flush = new_ep_flush(FLUSH_PENDING);
    ordered_t o[5];
    int i;

    hixl_ep_flush_set_depth(ep_flush, 3);
    order_n = 0;
    for (i = 0; i < 5; ++i) {
        o[i].w.cb = ordered_cb_any;
        o[i].id   = i;
        hixl_ep_flush_add(ep_flush, &o[i].w, 0);
    }
    ck_assert_int_eq(flushes_posted, 3);
    complete_nth(1, UCS_OK);   /* done, but o0's is not: not called */
    hixl_ep_flush_retain(ep_flush);
    hixl_ep_flush_close(ep_flush, UCS_ERR_CANCELED);
    ck_assert_int_eq(order_n, 5);
    for (i = 0; i < 5; ++i) {
        ck_assert_int_eq(order_log[i], i);
    }
    while (flushes_out > 0) {
        complete_one(ep_flush, UCS_OK);
    }
    ck_assert_int_eq(order_n, 5);
    ck_assert_uint_eq(atomic_load(&ep_flush->refs), 1);
    hixl_ep_flush_release(ep_flush);
}
END_TEST

/* Completions from another thread while the owner adds and finally
 * closes: every waiter is called back exactly once, whatever the
 * interleaving (the close waits for callbacks running elsewhere). */
#define RACE_WAITERS 20000

typedef struct race {
    hixl_ep_flush_t *ep_flush;
    atomic_int      stop;
    pthread_mutex_t out_lock;   /* guards flushes_out between threads */
} race_t;

static race_t race;

static ucs_status_ptr_t race_flush(hixl_ep_flush_t *ep_flush, void *ep,
                                   hixl_ep_flush_group_t *group)
{
    (void)ep_flush;
    (void)ep;
    pthread_mutex_lock(&race.out_lock);
    ck_assert_int_le(flushes_out, HIXL_EP_FLUSH_MAX_DEPTH);
    out_groups[flushes_out++] = group;
    pthread_mutex_unlock(&race.out_lock);
    return (ucs_status_ptr_t)(uintptr_t)0x1;
}

/* A flush out completes: the newest or the oldest, by turns, so that
 * completions also come out of order. */
static int race_complete_one(int newest)
{
    hixl_ep_flush_group_t *g = NULL;
    int k;

    pthread_mutex_lock(&race.out_lock);
    if (flushes_out > 0) {
        k = newest ? flushes_out - 1 : 0;
        g = out_groups[k];
        memmove(&out_groups[k], &out_groups[k + 1],
                (size_t)(flushes_out - k - 1) * sizeof(out_groups[0]));
        --flushes_out;
    }
    pthread_mutex_unlock(&race.out_lock);
    if (g != NULL) {
        hixl_ep_flush_completed(g, UCS_OK);
    }
    return g != NULL;
}

static void *race_completer(void *arg)
{
    int turn = 0;

    (void)arg;
    while (!atomic_load(&race.stop)) {
        if (!race_complete_one(turn++ & 1)) {
            sched_yield();
        }
    }
    return NULL;
}

START_TEST(test_threads_exactly_once)
{
    static counted_t c[RACE_WAITERS];
    pthread_t tid;
    int i, spins, total = 0;

    counted_init(c, RACE_WAITERS);
    flushes_out = 0;
    atomic_store(&wanted, 0);
    pthread_mutex_init(&race.out_lock, NULL);
    atomic_store(&race.stop, 0);
    race.ep_flush = hixl_ep_flush_create((void *)0x1, race_flush, &wanted);
    ck_assert_ptr_nonnull(race.ep_flush);
    hixl_ep_flush_set_depth(race.ep_flush, _i ? 7 : 1);
    /* the completer may run after close */
    hixl_ep_flush_retain(race.ep_flush);
    ck_assert_int_eq(pthread_create(&tid, NULL, race_completer, NULL), 0);
    for (i = 0; i < RACE_WAITERS; ++i) {
        hixl_ep_flush_add(race.ep_flush, &c[i].w, 0);
        if (atomic_exchange(&wanted, 0)) {
            hixl_ep_flush_progress(race.ep_flush);
        }
        /* now and then let the completer catch up, so that completions
         * really interleave with adds (bounded: the machine may be busy) */
        for (spins = 0; ((i % 64) == 63) && (spins < 100000) &&
                        (atomic_load(&c[i - 63].calls) == 0); ++spins) {
            if (atomic_exchange(&wanted, 0)) {
                hixl_ep_flush_progress(race.ep_flush);
            }
            sched_yield();
        }
    }
    hixl_ep_flush_close(race.ep_flush, UCS_ERR_CANCELED);
    atomic_store(&race.stop, 1);
    pthread_join(tid, NULL);
    while (race_complete_one(0)) {   /* late completions after the close */
    }
    for (i = 0; i < RACE_WAITERS; ++i) {
        ck_assert_msg(atomic_load(&c[i].calls) == 1, "waiter %d called back "
                      "%d times", i, atomic_load(&c[i].calls));
        total += (c[i].status == UCS_OK);
    }
    ck_assert_int_gt(total, 0);   /* flushes did complete before the close */
    ck_assert_uint_eq(atomic_load(&race.ep_flush->refs), 1);
    hixl_ep_flush_release(race.ep_flush);
    pthread_mutex_destroy(&race.out_lock);
}
END_TEST

static Suite *unit_ep_flush_suite(void)
{
    Suite *s = suite_create("ep_flush");
    TCase *tc = hx_tcase("ep_flush");

    tcase_add_test(tc, test_inline_completion);
    tcase_add_test(tc, test_inline_error);
    tcase_add_test(tc, test_idle_skips_the_flush);
    tcase_add_test(tc, test_idle_joins_the_flush_out);
    tcase_add_test(tc, test_group_commit);
    tcase_add_test(tc, test_due_flush_taken_by_add);
    tcase_add_test(tc, test_close_settles_everything_once);
    tcase_add_test(tc, test_pipelined_in_order);
    tcase_add_test(tc, test_pipelined_depth_full);
    tcase_add_test(tc, test_pipelined_failure_carries);
    tcase_add_test(tc, test_pipelined_failure_ends);
    tcase_add_test(tc, test_pipelined_close);
    tcase_add_loop_test(tc, test_threads_exactly_once, 0, 2);   /* depth
                                                                   1, 7 */
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_ep_flush_suite());
}
