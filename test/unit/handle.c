/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: opaque handles (src/handle.h) and the two tables that issue them,
 * the local region table (src/mem_table.c) and the request pool
 * (src/request.c).  A handle packs engine serial, slot generation and slot
 * index so that a handle used after release, from another engine or made
 * up is refused, never dereferenced: these tests try exactly those.
 */
#include "config.h"
#include "harness.h"
#include "util/handle.h"
#include "core/xfer/mem_table.h"
#include "core/xfer/request.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_encoding)
{
    uint64_t h = hixl_handle_make(0xabcd, 0x1234, 0x56789);

    ck_assert_uint_eq(hixl_handle_engine(h), 0xabcd);
    ck_assert_uint_eq(hixl_handle_gen(h), 0x1234);
    ck_assert_uint_eq(hixl_handle_index(h), 0x56789);
    /* index + 1 is stored: slot 0 of serial 0 gen 0 is still not 0/NULL */
    ck_assert_uint_ne(hixl_handle_make(0, 0, 0), 0);
    ck_assert_uint_eq(hixl_handle_index(hixl_handle_make(0, 0, 0)), 0);
    /* the largest index round-trips; NULL has no index */
    h = hixl_handle_make(0xffff, 0xffff, UINT32_MAX - 1);
    ck_assert_uint_eq(hixl_handle_index(h), UINT32_MAX - 1);
    ck_assert_uint_eq(hixl_handle_engine(h), 0xffff);
    ck_assert_uint_eq(hixl_handle_index(0), UINT32_MAX);
    /* generations skip 0 */
    ck_assert_uint_eq(hixl_gen_next(0), 1);
    ck_assert_uint_eq(hixl_gen_next(1), 2);
    ck_assert_uint_eq(hixl_gen_next(0xfffe), 0xffff);
    ck_assert_uint_eq(hixl_gen_next(0xffff), 1);
}
END_TEST

static hixl_region_t *region_new(uint64_t addr, uint64_t len)
{
    hixl_region_t *r = calloc(1, sizeof(*r));

    ck_assert_ptr_nonnull(r);
    r->range.addr = addr;
    r->range.len  = len;
    r->type       = HIXL_MEM_HOST;
    return r;
}

START_TEST(test_mem_table)
{
    enum { N = 40 };   /* past the first growth (16 slots) twice */
    hixl_mem_table_t t;
    hixl_region_t *r[N], *again;
    uint64_t old;
    int i;

    memset(&t, 0, sizeof(t));
    for (i = 0; i < N; ++i) {
        r[i] = region_new(0x100000 + (uint64_t)i * 0x1000, 0x1000);
        hx_ok(hixl_mem_table_insert(&t, 7, r[i]));
        ck_assert_uint_ne(r[i]->handle, 0);
        ck_assert_uint_eq(hixl_handle_engine(r[i]->handle), 7);
    }
    ck_assert_uint_eq(t.count, N);
    for (i = 0; i < N; ++i) {
        ck_assert_ptr_eq(hixl_mem_table_get(&t, 7, r[i]->handle), r[i]);
        /* another engine's serial, or a neighbour's generation: refused */
        ck_assert_ptr_null(hixl_mem_table_get(&t, 8, r[i]->handle));
        ck_assert_ptr_null(hixl_mem_table_get(&t, 7, r[i]->handle ^
                                              (1ull << 32)));
        ck_assert_ptr_eq(hixl_range_find(&t.by_addr, r[i]->range.addr, 1,
                                         NULL), &r[i]->range);
    }
    /* made-up handles */
    ck_assert_ptr_null(hixl_mem_table_get(&t, 7, 0));
    ck_assert_ptr_null(hixl_mem_table_get(&t, 7, UINT64_MAX));
    ck_assert_ptr_null(hixl_mem_table_get(&t, 7, hixl_handle_make(7, 1,
                                                                   100000)));

    /* remove one; its handle dies; a new region takes the slot with a new
     * generation, and the old handle stays dead */
    old = r[5]->handle;
    hixl_mem_table_remove(&t, r[5]);
    ck_assert_uint_eq(t.count, N - 1);
    ck_assert_ptr_null(hixl_mem_table_get(&t, 7, old));
    ck_assert_ptr_null(hixl_range_find(&t.by_addr, r[5]->range.addr, 1, NULL));
    again = region_new(r[5]->range.addr, 0x1000);
    hx_ok(hixl_mem_table_insert(&t, 7, again));
    ck_assert_uint_eq(hixl_handle_index(again->handle),
                      hixl_handle_index(old));
    ck_assert_uint_ne(again->handle, old);
    ck_assert_ptr_null(hixl_mem_table_get(&t, 7, old));
    ck_assert_ptr_eq(hixl_mem_table_get(&t, 7, again->handle), again);
    free(r[5]);
    r[5] = again;

    for (i = 0; i < N; ++i) {
        hixl_mem_table_remove(&t, r[i]);
        ck_assert_ptr_null(hixl_mem_table_get(&t, 7, r[i]->handle));
        free(r[i]);
    }
    ck_assert_uint_eq(t.count, 0);
    hixl_mem_table_cleanup(&t);
}
END_TEST

START_TEST(test_request_pool)
{
    hixl_req_pool_t pool;
    hixl_request_t *a, *b, *c;
    uint64_t ha, hb;

    hx_ok(hixl_req_pool_init(&pool, 2, 3));
    a = hixl_req_get(&pool, NULL);
    b = hixl_req_get(&pool, NULL);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_ne(a, b);
    ck_assert_ptr_null(hixl_req_get(&pool, NULL));   /* exhausted */
    /* held by its poster and by its flush */
    ck_assert_uint_eq(atomic_load(&a->pending), 2);
    ck_assert_uint_eq(atomic_load(&a->data_pending), 2);
    ck_assert_uint_eq(atomic_load(&a->state), HIXL_REQ_ACTIVE);
    ha = a->handle;
    hb = b->handle;
    ck_assert_uint_ne(ha, hb);
    ck_assert_ptr_eq(hixl_req_lookup(&pool, ha), a);
    ck_assert_ptr_eq(hixl_req_lookup(&pool, hb), b);
    ck_assert_ptr_null(hixl_req_lookup(&pool, hixl_handle_make(4, hixl_handle_gen(ha),
                                               hixl_handle_index(ha))));   /* other engine */
    ck_assert_ptr_null(hixl_req_lookup(&pool, 0));
    ck_assert_ptr_null(hixl_req_lookup(&pool, UINT64_MAX));
    ck_assert_ptr_null(hixl_req_lookup(&pool, hixl_handle_make(3,
                       hixl_handle_gen(ha), 2)));        /* past the pool */

    /* DONE is still looked up (not yet reported), ORPHAN is not */
    atomic_store(&a->state, HIXL_REQ_DONE);
    ck_assert_ptr_eq(hixl_req_lookup(&pool, ha), a);
    atomic_store(&a->state, HIXL_REQ_ORPHAN);
    ck_assert_ptr_null(hixl_req_lookup(&pool, ha));

    /* released: the handle dies; the slot comes back with a new handle */
    atomic_store(&a->state, HIXL_REQ_DONE);
    hixl_req_put(&pool, a);
    ck_assert_ptr_null(hixl_req_lookup(&pool, ha));
    c = hixl_req_get(&pool, NULL);
    ck_assert_ptr_eq(c, a);
    ck_assert_uint_ne(c->handle, ha);
    ck_assert_ptr_null(hixl_req_lookup(&pool, ha));
    ck_assert_ptr_eq(hixl_req_lookup(&pool, c->handle), c);

    /* the first failure wins */
    hixl_req_fail(c, HIXL_TIMEOUT, "first %d", 1);
    hixl_req_fail(c, HIXL_FAILED, "second %d", 2);
    ck_assert_int_eq(atomic_load(&c->status), HIXL_TIMEOUT);
    ck_assert_str_eq(c->errmsg, "first 1");
    /* and a fresh request starts clean */
    hixl_req_put(&pool, c);
    c = hixl_req_get(&pool, NULL);
    ck_assert_int_eq(atomic_load(&c->status), HIXL_SUCCESS);
    ck_assert_str_eq(c->errmsg, "");

    hixl_req_put(&pool, b);
    hixl_req_put(&pool, c);
    /* both are back, and only both */
    a = hixl_req_get(&pool, NULL);
    b = hixl_req_get(&pool, NULL);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_ne(a, b);
    ck_assert_ptr_null(hixl_req_get(&pool, NULL));
    hixl_req_pool_cleanup(&pool);
}
END_TEST

/* Requests come back from any thread (status calls, UCX callbacks) while
 * the one taker takes: none may be lost or handed out twice. */
#define POOL_N       1024
#define POOL_THREADS 4

typedef struct {
    hixl_req_pool_t *pool;
    hixl_request_t **reqs;
} pool_putter_t;

static void *pool_putter(void *arg)
{
    pool_putter_t *p = arg;
    int i;

    for (i = 0; i < POOL_N / POOL_THREADS; ++i) {
        hixl_req_put(p->pool, p->reqs[i]);
    }
    return NULL;
}

START_TEST(test_request_pool_threads)
{
    static hixl_request_t *held[POOL_N], *taken[POOL_N];
    pool_putter_t putter[POOL_THREADS];
    pthread_t tid[POOL_THREADS];
    hixl_req_pool_t pool;
    hixl_request_t *r;
    unsigned char seen[POOL_N];
    int round, i, t, got;

    hx_ok(hixl_req_pool_init(&pool, POOL_N, 1));
    for (i = 0; i < POOL_N; ++i) {
        held[i] = hixl_req_get(&pool, NULL);
        ck_assert_ptr_nonnull(held[i]);
    }
    for (round = 0; round < 50; ++round) {
        for (t = 0; t < POOL_THREADS; ++t) {
            putter[t].pool = &pool;
            putter[t].reqs = &held[t * (POOL_N / POOL_THREADS)];
            ck_assert_int_eq(pthread_create(&tid[t], NULL, pool_putter,
                                            &putter[t]), 0);
        }
        /* take while they put */
        memset(seen, 0, sizeof(seen));
        got = 0;
        while (got < POOL_N) {
            r = hixl_req_get(&pool, NULL);
            if (r == NULL) {
                continue;
            }
            ck_assert_msg(!seen[r->index], "request %u handed out twice",
                          r->index);
            seen[r->index] = 1;
            taken[got++]   = r;
        }
        for (t = 0; t < POOL_THREADS; ++t) {
            pthread_join(tid[t], NULL);
        }
        memcpy(held, taken, sizeof(held));
        ck_assert_ptr_null(hixl_req_get(&pool, NULL));
    }
    hixl_req_pool_cleanup(&pool);
}
END_TEST

static Suite *unit_handle_suite(void)
{
    Suite *s = suite_create("handle");
    TCase *tc = hx_tcase("handles");

    tcase_add_test(tc, test_encoding);
    tcase_add_test(tc, test_mem_table);
    tcase_add_test(tc, test_request_pool);
    tcase_add_test(tc, test_request_pool_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_handle_suite());
}
