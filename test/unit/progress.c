/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the registrations of progress (src/core/worker/progress.c), without
 * UCX. Their tables once held 8 callbacks each and dropped the ninth without a
 * word: a module whose progress never runs leaves its operations pending for
 * good.  They grow: every callback registered stays, in order. And the count of
 * a progress thread's wake-ups that bring nothing
 * (src/core/worker/spurious_wakes.c): when it pauses, and what ends the pauses.
 */
#include "config.h"
#include "harness.h"
#include "unit_core.h"
#include "core/worker/spurious_wakes.h"
#include "util/clock.h"

#define MANY 40   /* five times the old limit */

static unsigned periodic_runs;

static void count_periodic(hixl_engine_t *engine, uint64_t now_ns)
{
    (void)engine;
    (void)now_ns;
    ++periodic_runs;
}

static unsigned count_progress(hixl_engine_t *engine)
{
    (void)engine;
    return 1;
}

static unsigned last_progress(hixl_engine_t *engine)
{
    (void)engine;
    return 1000;
}

START_TEST(test_many_progress_callbacks)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_progress_t *p    = &engine->progress;
    unsigned i, sum = 0;

    for (i = 0; i < MANY; ++i) {
        hx_ok(hixl_progress_add(engine, count_progress));
    }
    hx_ok(hixl_progress_add(engine, last_progress));
    ck_assert_uint_eq(p->nfns, MANY + 1);
    /* hixl_progress_pass needs a UCX worker: run the table as it does */
    for (i = 0; i < p->nfns; ++i) {
        sum += p->fns[i](engine);
    }
    ck_assert_uint_eq(sum, MANY + 1000);
    ck_assert_ptr_eq(p->fns[MANY], last_progress);
    ut_engine_free(engine);
}
END_TEST

START_TEST(test_many_periodic_callbacks)
{
    hixl_engine_t *engine = ut_engine_new(4);
    unsigned i;

    for (i = 0; i < MANY; ++i) {
        hx_ok(hixl_progress_periodic(engine, count_periodic));
    }
    ck_assert_uint_eq(engine->progress.nperiodic, MANY);
    /* the periodic work is due at once (never run yet); without a
     * progress thread the sockets are looked at every 256th call */
    periodic_runs = 0;
    pthread_mutex_unlock(&engine->lock);   /* progress takes it itself */
    for (i = 0; (i < 256) && (periodic_runs == 0); ++i) {
        hixl_progress_before_post(engine);
    }
    pthread_mutex_lock(&engine->lock);
    ck_assert_uint_eq(periodic_runs, MANY);
    ut_engine_free(engine);
}
END_TEST

/* One sleep that ends at once (1 us of 100 ms) with the given kick count
 * and socket events, then a round that found n events. */
static void wake(hixl_spurious_wakes_t *w, unsigned kicks_then,
                 unsigned kicks_after, unsigned ctrl, unsigned n)
{
    hixl_spurious_wakes_slept(w, 1000, 2000, 100 * HIXL_NS_PER_MS, kicks_then,
                              ctrl);
    hixl_spurious_wakes_round(w, n, kicks_after);
}

START_TEST(test_spurious_wakes)
{
    hixl_spurious_wakes_t w = {0};
    unsigned i;

    /* fewer than the limit: sleep on the fd */
    for (i = 0; i < HIXL_SPURIOUS_WAKES_MAX - 1; ++i) {
        wake(&w, 0, 0, 0, 0);
        ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0), 0);
    }
    wake(&w, 0, 0, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0),
                      HIXL_SPURIOUS_WAKES_PAUSE_NS);
    /* after a pause the fd is tried again; a fruitless wake pauses again */
    hixl_spurious_wakes_round(&w, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0), 0);
    wake(&w, 0, 0, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0),
                      2 * HIXL_SPURIOUS_WAKES_PAUSE_NS);
    hixl_spurious_wakes_round(&w, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0), 0);
    /* with transfers in flight the pauses stay short: they do not grow */
    wake(&w, 0, 0, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 1),
                      HIXL_SPURIOUS_WAKES_PAUSE_NS);
    hixl_spurious_wakes_round(&w, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0), 0);
    /* and grow again without them, up to the most */
    for (i = 0; i < 8; ++i) {
        wake(&w, 0, 0, 0, 0);
        ck_assert_uint_ne(hixl_spurious_wakes_pause_ns(&w, 0), 0);
        hixl_spurious_wakes_round(&w, 0, 0);
        ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0), 0);
    }
    wake(&w, 0, 0, 0, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0),
                      HIXL_SPURIOUS_WAKES_PAUSE_MAX_NS);

    /* what ends the pauses: a kick, socket traffic, events, a long sleep */
    wake(&w, 0, 1, 0, 0);
    ck_assert_uint_eq(w.fruitless, 0);
    for (i = 0; i < HIXL_SPURIOUS_WAKES_MAX; ++i) {
        wake(&w, 1, 1, 0, 0);
    }
    wake(&w, 1, 1, 1, 0);
    ck_assert_uint_eq(w.fruitless, 0);
    for (i = 0; i < HIXL_SPURIOUS_WAKES_MAX; ++i) {
        wake(&w, 1, 1, 0, 0);
    }
    wake(&w, 1, 1, 0, 3);
    ck_assert_uint_eq(w.fruitless, 0);
    for (i = 0; i < HIXL_SPURIOUS_WAKES_MAX; ++i) {
        wake(&w, 1, 1, 0, 0);
    }
    hixl_spurious_wakes_slept(&w, 0, 60 * HIXL_NS_PER_MS, 100 * HIXL_NS_PER_MS,
                              1, 0);
    hixl_spurious_wakes_round(&w, 0, 1);
    ck_assert_uint_eq(w.fruitless, 0);
    ck_assert_uint_eq(hixl_spurious_wakes_pause_ns(&w, 0), 0);
}
END_TEST

static Suite *unit_progress_suite(void)
{
    Suite *s  = suite_create("progress");
    TCase *tc = hx_tcase("registrations");

    tcase_add_test(tc, test_many_progress_callbacks);
    tcase_add_test(tc, test_many_periodic_callbacks);
    tcase_add_test(tc, test_spurious_wakes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_progress_suite());
}
