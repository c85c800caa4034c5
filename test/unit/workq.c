/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the one-thread work queue (src/util/workq.c).  Items run in the
 * order posted, on a thread that is not the poster's; stopping waits for
 * the item being run and hands every item never run to the drop function;
 * a stopped queue refuses new items; a background queue's thread runs at
 * the lowest priority, and an ordinary one at the poster's.
 */
#include "config.h"
#include "harness.h"
#include "util/workq.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ITEMS 64

typedef struct item {
    hixl_work_t work;
    int         id;
    pthread_t   ran_on;
} item_t;

static int order[ITEMS];
static atomic_int nran, ndropped, started, gate_closed;

static void run_item(hixl_work_t *w)
{
    item_t *it = (item_t*)w;
    int i;

    atomic_store(&started, 1);
    /* a test closes the gate to keep the thread in this item (bounded) */
    for (i = 0; (i < 5000) && atomic_load(&gate_closed); ++i) {
        usleep(1000);
    }
    it->ran_on = pthread_self();
    order[atomic_fetch_add(&nran, 1)] = it->id;
}

static void drop_item(hixl_work_t *w)
{
    (void)w;
    atomic_fetch_add(&ndropped, 1);
}

START_TEST(test_runs_in_order_off_thread)
{
    static item_t items[ITEMS];
    hixl_workq_t q;
    int i;

    atomic_store(&nran, 0);
    hixl_workq_init(&q);
    for (i = 0; i < ITEMS; ++i) {
        items[i].id       = i;
        items[i].work.run = run_item;
        ck_assert_int_eq(hixl_workq_post(&q, &items[i].work), 0);
    }
    for (i = 0; (i < 5000) && (atomic_load(&nran) < ITEMS); ++i) {
        usleep(1000);   /* bounded: 5 s */
    }
    ck_assert_int_eq(atomic_load(&nran), ITEMS);
    for (i = 0; i < ITEMS; ++i) {
        ck_assert_int_eq(order[i], i);
        ck_assert(!pthread_equal(items[i].ran_on, pthread_self()));
    }
    hixl_workq_stop(&q, NULL);
}
END_TEST

static void *open_gate_later(void *arg)
{
    (void)arg;
    usleep(50000);
    atomic_store(&gate_closed, 0);
    return NULL;
}

START_TEST(test_stop_drops_what_never_ran)
{
    static item_t items[ITEMS];
    hixl_workq_t q;
    pthread_t opener;
    int i;

    atomic_store(&nran, 0);
    atomic_store(&ndropped, 0);
    atomic_store(&started, 0);
    atomic_store(&gate_closed, 1);
    hixl_workq_init(&q);
    for (i = 0; i < ITEMS; ++i) {
        items[i].id       = i;
        items[i].work.run = run_item;
        ck_assert_int_eq(hixl_workq_post(&q, &items[i].work), 0);
    }
    for (i = 0; (i < 5000) && !atomic_load(&started); ++i) {
        usleep(1000);
    }
    ck_assert(atomic_load(&started));
    /* the thread is inside item 0: stop must wait for it, run no other,
     * and hand the other 63 back */
    ck_assert_int_eq(pthread_create(&opener, NULL, open_gate_later, NULL), 0);
    hixl_workq_stop(&q, drop_item);
    pthread_join(opener, NULL);
    ck_assert_int_eq(atomic_load(&nran), 1);
    ck_assert_int_eq(order[0], 0);
    ck_assert_int_eq(atomic_load(&ndropped), ITEMS - 1);

    hixl_workq_init(&q);
    hixl_workq_stop(&q, drop_item);   /* never started: nothing to join */
    ck_assert_int_eq(atomic_load(&ndropped), ITEMS - 1);
}
END_TEST

START_TEST(test_stopped_queue_refuses)
{
    item_t it = {.work = {.run = run_item}, .id = 0};
    hixl_workq_t q;

    hixl_workq_init(&q);
    pthread_mutex_lock(&q.lock);
    q.stop = 1;   /* as hixl_workq_stop sets it before joining */
    pthread_mutex_unlock(&q.lock);
    ck_assert_int_eq(hixl_workq_post(&q, &it.work), -1);
    hixl_workq_stop(&q, NULL);
}
END_TEST

typedef struct nice_item {
    hixl_work_t work;
    atomic_int  nice;   /* INT_MIN until it ran */
} nice_item_t;

static void run_nice_item(hixl_work_t *w)
{
    nice_item_t *it = (nice_item_t*)w;

    errno = 0;
    atomic_store(&it->nice, getpriority(PRIO_PROCESS,
                                        (id_t)syscall(SYS_gettid)));
}

/* The nice value the queue's thread runs items at. */
static int nice_of_queue(int background)
{
    nice_item_t it = {.work = {.run = run_nice_item}};
    hixl_workq_t *q = hixl_workq_new(background);
    int i;

    ck_assert_ptr_nonnull(q);
    atomic_store(&it.nice, INT_MIN);
    ck_assert_int_eq(hixl_workq_post(q, &it.work), 0);
    for (i = 0; (i < 5000) && (atomic_load(&it.nice) == INT_MIN); ++i) {
        usleep(1000);
    }
    hixl_workq_free(q, NULL);
    ck_assert_int_ne(atomic_load(&it.nice), INT_MIN);
    return atomic_load(&it.nice);
}

START_TEST(test_background_runs_at_lowest_priority)
{
    int mine = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));

    ck_assert_int_eq(nice_of_queue(1), 19);
    ck_assert_int_eq(nice_of_queue(0), mine);
    /* lowering a thread's priority is its own: the poster's is unchanged */
    ck_assert_int_eq(getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)),
                     mine);
}
END_TEST

static Suite *unit_workq_suite(void)
{
    Suite *s = suite_create("workq");
    TCase *tc = hx_tcase("workq");

    tcase_add_test(tc, test_runs_in_order_off_thread);
    tcase_add_test(tc, test_stop_drops_what_never_ran);
    tcase_add_test(tc, test_stopped_queue_refuses);
    tcase_add_test(tc, test_background_runs_at_lowest_priority);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_workq_suite());
}
