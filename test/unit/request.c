/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: request completion (src/core/xfer/request.c), without UCX.  A request
 * is held by its poster, its flush, device work and a notify's answer;
 * these tests drop those holds in every order that matters and check
 * when it finishes, what its status says, when the after-data step runs
 * (once, only on success, before the request can be reported), and what
 * the engine's counts and the peer's references are afterwards.
 */
#include "config.h"
#include "harness.h"
#include "unit_core.h"
#include "util/handle.h"

#include <string.h>

static int after_data_calls;
static unsigned pending_at_after_data;

static void count_after_data(hixl_request_t *req)
{
    ++after_data_calls;
    pending_at_after_data = atomic_load(&req->pending);
}

/* A request as a transfer post leaves it: in flight to peer. */
static hixl_request_t *posted(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_request_t *req = hixl_req_get(&engine->reqs, engine);

    ck_assert_ptr_nonnull(req);
    req->op        = HIXL_WRITE;
    req->num_descs = 1;
    req->peer      = peer;
    req->deadline_ns = UINT64_MAX;
    hixl_req_inflight(req);
    return req;
}

START_TEST(test_completes_after_every_hold)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_transfer_status_t ts;
    hixl_request_t *req   = posted(engine, peer);

    ck_assert_uint_eq(atomic_load(&peer->refcount), 2);
    ck_assert_uint_eq(atomic_load(&peer->inflight), 1);
    ck_assert_uint_eq(atomic_load(&engine->progress.busy), 1);
    /* the flush lands first: still the poster's */
    hixl_req_flushed(&req->flush, UCS_OK);
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_ACTIVE);
    /* the poster lets go: done */
    hixl_req_data_done(req);
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_DONE);
    ck_assert_uint_eq(atomic_load(&peer->inflight), 0);
    ck_assert_uint_eq(atomic_load(&engine->progress.busy), 0);
    /* reported COMPLETED and released with its peer reference */
    ck_assert_int_eq(hixl_req_report(req, &ts), HIXL_SUCCESS);
    ck_assert_int_eq(ts, HIXL_TRANSFER_COMPLETED);
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_FREE);
    ck_assert_uint_eq(atomic_load(&peer->refcount), 1);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    ut_engine_free(engine);
}
END_TEST

START_TEST(test_failure_wins_and_is_reported)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_transfer_status_t ts;
    hixl_request_t *req   = posted(engine, peer);

    req->after_data = count_after_data;
    after_data_calls = 0;
    hixl_req_flushed(&req->flush, UCS_ERR_ENDPOINT_TIMEOUT);
    hixl_req_fail(req, HIXL_TIMEOUT, "a later failure does not win");
    hixl_req_data_done(req);
    /* no notify after data that did not land */
    ck_assert_int_eq(after_data_calls, 0);
    hx_mark_last_error();
    ck_assert_int_eq(hixl_req_report(req, &ts), HIXL_FAILED);
    ck_assert_int_eq(ts, HIXL_TRANSFER_FAILED);
    ck_assert_msg(strstr(hixl_last_error(), "10.0.0.2:1") != NULL &&
                  strstr(hixl_last_error(), "timeout") != NULL,
                  "last error: %s", hixl_last_error());
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    ut_engine_free(engine);
}
END_TEST

START_TEST(test_after_data_once_before_done)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_transfer_status_t ts;
    hixl_request_t *req   = posted(engine, peer);

    req->after_data = count_after_data;
    after_data_calls = 0;
    /* device work holds data too (device/device.c takes these) */
    atomic_fetch_add(&req->pending, 1);
    atomic_fetch_add(&req->data_pending, 1);
    hixl_req_data_done(req);                   /* the poster */
    hixl_req_flushed(&req->flush, UCS_OK);     /* the flush */
    ck_assert_int_eq(after_data_calls, 0);     /* device still moving */
    hixl_req_data_done(req);                   /* the device unit */
    ck_assert_int_eq(after_data_calls, 1);
    /* it ran while the last data hold was still counted in pending */
    ck_assert_uint_eq(pending_at_after_data, 1);
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_DONE);
    ck_assert_int_eq(hixl_req_report(req, &ts), HIXL_SUCCESS);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    ut_engine_free(engine);
}
END_TEST

/* after_data that takes a hold of its own (the notify's answer): the
 * request is done only once that hold is dropped too. */
static void hold_for_answer(hixl_request_t *req)
{
    ++after_data_calls;
    atomic_fetch_add(&req->pending, 1);
}

START_TEST(test_answer_hold)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_transfer_status_t ts;
    hixl_request_t *req   = posted(engine, peer);

    req->after_data  = hold_for_answer;
    after_data_calls = 0;
    hixl_req_flushed(&req->flush, UCS_OK);
    hixl_req_data_done(req);
    ck_assert_int_eq(after_data_calls, 1);
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_ACTIVE);
    hixl_req_complete_one(req);                /* the answer came */
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_DONE);
    ck_assert_int_eq(hixl_req_report(req, &ts), HIXL_SUCCESS);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    ut_engine_free(engine);
}
END_TEST

START_TEST(test_timeout_orphan_returns_when_done)
{
    hixl_engine_t *engine = ut_engine_new(1);
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_request_t *req   = posted(engine, peer);
    uint64_t handle       = req->handle;

    req->deadline_ns = 10;
    ck_assert_int_eq(hixl_req_expire(req, 5), 0);       /* not yet */
    hx_mark_last_error();
    ck_assert_int_eq(hixl_req_expire(req, 11), 1);
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), "timeout"));
    /* reported TIMEOUT: the handle is dead, the slot is still busy */
    ck_assert_ptr_null(hixl_req_lookup(&engine->reqs, handle));
    ck_assert_ptr_null(hixl_req_get(&engine->reqs, engine));
    /* the transport gives the buffers up: the slot and the peer return */
    hixl_req_flushed(&req->flush, UCS_ERR_CANCELED);
    hixl_req_data_done(req);
    ck_assert_uint_eq(atomic_load(&req->state), HIXL_REQ_FREE);
    ck_assert_uint_eq(atomic_load(&peer->refcount), 1);
    ck_assert_uint_eq(atomic_load(&engine->progress.busy), 0);
    ck_assert_ptr_eq(hixl_req_get(&engine->reqs, engine), req);
    hixl_req_discard(req);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    ut_engine_free(engine);
}
END_TEST

static void count_req(hixl_request_t *req, void *arg)
{
    (void)req;
    ++*(int*)arg;
}

START_TEST(test_for_each_finds_the_peers_requests)
{
    hixl_engine_t *engine = ut_engine_new(8);
    hixl_peer_t *a        = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_peer_t *b        = ut_peer_new(engine, 1, "10.0.0.3:1");
    hixl_transfer_status_t ts;
    hixl_request_t *r[3];
    int i, na = 0, nb = 0;

    r[0] = posted(engine, a);
    r[1] = posted(engine, b);
    r[2] = posted(engine, a);
    /* what a module does for a closed peer's requests (ops/notify.c) */
    hixl_req_for_each(&engine->reqs, a, count_req, &na);
    hixl_req_for_each(&engine->reqs, b, count_req, &nb);
    ck_assert_int_eq(na, 2);
    ck_assert_int_eq(nb, 1);
    for (i = 0; i < 3; ++i) {
        hixl_req_flushed(&r[i]->flush, UCS_OK);
        hixl_req_data_done(r[i]);
        hixl_req_report(r[i], &ts);
    }
    na = 0;
    hixl_req_for_each(&engine->reqs, a, count_req, &na);
    ck_assert_int_eq(na, 0);
    hixl_peer_close(engine, a, HIXL_NOT_CONNECTED, "test over");
    hixl_peer_close(engine, b, HIXL_NOT_CONNECTED, "test over");
    ut_engine_free(engine);
}
END_TEST

/* Slots are handed out in index order and made ready only when first
 * taken: a handle naming one never taken finds nothing, the pool runs out
 * at its size, and a steady window reuses the slots it returned. */
START_TEST(test_pool_takes_fresh_slots_in_order)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_req_pool_t *pool = &engine->reqs;
    hixl_request_t *r[4];
    uint32_t i;

    ck_assert_uint_eq(atomic_load(&pool->used), 0);
    ck_assert_ptr_null(hixl_req_lookup(pool, hixl_handle_make(pool->serial,
                                                               0, 2)));
    ck_assert_ptr_null(hixl_req_lookup(pool, hixl_handle_make(pool->serial,
                                                               1, 2)));
    for (i = 0; i < 4; ++i) {
        ck_assert(hixl_req_available(pool));
        r[i] = hixl_req_get(pool, engine);
        ck_assert_ptr_eq(r[i], &pool->reqs[i]);
        ck_assert_uint_eq(r[i]->index, i);
        ck_assert_ptr_eq(r[i]->flush.cb, hixl_req_flushed);
        ck_assert_ptr_eq(hixl_req_lookup(pool, r[i]->handle), r[i]);
        ck_assert_uint_eq(atomic_load(&pool->used), i + 1);
    }
    ck_assert(!hixl_req_available(pool));
    ck_assert_ptr_null(hixl_req_get(pool, engine));
    hixl_req_discard(r[1]);
    ck_assert(hixl_req_available(pool));
    ck_assert_ptr_eq(hixl_req_get(pool, engine), r[1]);
    for (i = 0; i < 4; ++i) {
        hixl_req_discard(r[i]);
    }
    ut_engine_free(engine);
}
END_TEST

static Suite *unit_request_suite(void)
{
    Suite *s = suite_create("request");
    TCase *tc = hx_tcase("completion");

    tcase_add_test(tc, test_completes_after_every_hold);
    tcase_add_test(tc, test_failure_wins_and_is_reported);
    tcase_add_test(tc, test_after_data_once_before_done);
    tcase_add_test(tc, test_answer_hold);
    tcase_add_test(tc, test_timeout_orphan_returns_when_done);
    tcase_add_test(tc, test_for_each_finds_the_peers_requests);
    tcase_add_test(tc, test_pool_takes_fresh_slots_in_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_request_suite());
}
