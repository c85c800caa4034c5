/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Layer-signal semantics (hixl_flush_layer / hixl_wait_layer /
 * hixl_test_layer): bounds, timeouts, generations, a source that connects
 * late, disconnects or restarts.  A prefill and a decode engine live in this
 * one process (two UCX contexts talking over loopback): these tests are
 * about what the calls return.  That the data is in memory when a signal is
 * seen is proven across processes by it_layer_order.
 */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAYER_WAIT_MS 10000

typedef struct pair {
    hixl_engine_t *decode;
    hixl_engine_t *prefill;
    char           decode_name[HIXL_ENGINE_NAME_MAX + 1];
    char           prefill_name[HIXL_ENGINE_NAME_MAX + 1];
} pair_t;

/* Decode accepts 4 streams x 8 layers, so bounds are easy to cross. */
static void pair_start_decode(pair_t *p)
{
    p->decode = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                          "hixl.MaxStreams", "4", "hixl.MaxLayers", "8", NULL);
    snprintf(p->decode_name, sizeof(p->decode_name), "%s",
             hixl_engine_name(p->decode));
}

static void pair_start_prefill(pair_t *p)
{
    p->prefill = hx_engine("127.0.0.1", NULL);
    snprintf(p->prefill_name, sizeof(p->prefill_name), "%s",
             hixl_engine_name(p->prefill));
    hx_ok(hixl_connect(p->prefill, p->decode_name, HX_OP_TIMEOUT_MS));
}

static void pair_start(pair_t *p)
{
    pair_start_decode(p);
    pair_start_prefill(p);
}

static void pair_stop(pair_t *p)
{
    if (p->prefill != NULL) {
        hx_ok(hixl_finalize(p->prefill));
    }
    hx_ok(hixl_finalize(p->decode));
}

START_TEST(test_signal_seen)
{
    pair_t p = {0};
    int ready = -1;

    pair_start(&p);
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 1, 7, 0));
    hx_ok(hixl_wait_layer(p.decode, p.prefill_name, 1, 7, 0, LAYER_WAIT_MS));
    hx_ok(hixl_test_layer(p.decode, p.prefill_name, 1, 7, 0, &ready));
    ck_assert_int_eq(ready, 1);
    /* another layer, stream or generation is not ready */
    hx_ok(hixl_test_layer(p.decode, p.prefill_name, 1, 7, 1, &ready));
    ck_assert_int_eq(ready, 0);
    hx_ok(hixl_test_layer(p.decode, p.prefill_name, 2, 7, 0, &ready));
    ck_assert_int_eq(ready, 0);
    hx_ok(hixl_test_layer(p.decode, p.prefill_name, 1, 8, 0, &ready));
    ck_assert_int_eq(ready, 0);
    /* layers may be signalled in any order */
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 1, 7, 7));
    hx_ok(hixl_wait_layer(p.decode, p.prefill_name, 1, 7, 7, LAYER_WAIT_MS));
    pair_stop(&p);
}
END_TEST

START_TEST(test_out_of_range_refused)
{
    pair_t p = {0};

    pair_start(&p);
    hx_expect(hixl_flush_layer(p.prefill, p.decode_name, 4, 1, 0),
              HIXL_PARAM_INVALID, "stream 4");
    hx_expect(hixl_flush_layer(p.prefill, p.decode_name, 0, 1, 8),
              HIXL_PARAM_INVALID, "layer 8");
    hx_expect(hixl_flush_layer(p.prefill, p.decode_name, 0, UINT64_MAX, 0),
              HIXL_PARAM_INVALID, "generation");
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 4, 1, 0, 100),
              HIXL_PARAM_INVALID, "stream 4");
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 0, 1, 8, 100),
              HIXL_PARAM_INVALID, "layer 8");
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 0, 1, 0, 0),
              HIXL_PARAM_INVALID, "timeout");
    hx_expect(hixl_test_layer(p.decode, p.prefill_name, 0, 1, 0, NULL),
              HIXL_PARAM_INVALID, "ready_p");
    hx_expect(hixl_wait_layer(p.decode, "not-an-ip", 0, 1, 0, 100),
              HIXL_PARAM_INVALID, "not-an-ip");
    hx_expect(hixl_flush_layer(NULL, p.decode_name, 0, 1, 0),
              HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_flush_layer(p.prefill, "", 0, 1, 0), HIXL_PARAM_INVALID,
              "empty");
    hx_expect(hixl_flush_layer(p.prefill, "127.0.0.1:1", 0, 1, 0),
              HIXL_NOT_CONNECTED, "127.0.0.1:1");
    /* a generation older than one flushed on the stream is refused */
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 2, 5, 0));
    hx_expect(hixl_flush_layer(p.prefill, p.decode_name, 2, 4, 0),
              HIXL_PARAM_INVALID, "older");
    /* the same generation again (another layer) is fine */
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 2, 5, 1));
    pair_stop(&p);
}
END_TEST

START_TEST(test_never_comes_times_out)
{
    pair_t p = {0};

    pair_start(&p);
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 0, 1, 0, 200),
              HIXL_TIMEOUT, "no signal");
    /* a source that never connected times out too, and says so */
    hx_expect(hixl_wait_layer(p.decode, "127.0.0.2", 0, 1, 0, 200),
              HIXL_TIMEOUT, "never connected");
    pair_stop(&p);
}
END_TEST

START_TEST(test_newer_generation_supersedes)
{
    pair_t p = {0};

    pair_start(&p);
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 3, 1, 0));
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 3, 2, 1));
    hx_ok(hixl_wait_layer(p.decode, p.prefill_name, 3, 2, 1, LAYER_WAIT_MS));
    /* generation 1 is gone: its waiters learn it, they do not hang */
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 3, 1, 0,
                              LAYER_WAIT_MS), HIXL_FAILED, "superseded");
    /* generation 2 starts empty: layer 0 of it was never signalled */
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 3, 2, 0, 200),
              HIXL_TIMEOUT, NULL);
    pair_stop(&p);
}
END_TEST

typedef struct waiter {
    pair_t       *p;
    hixl_status_t status;
} waiter_t;

static void *wait_thread(void *arg)
{
    waiter_t *w = arg;

    w->status = hixl_wait_layer(w->p->decode, "127.0.0.1", 0, 1, 2,
                                LAYER_WAIT_MS);
    return NULL;
}

START_TEST(test_wait_before_source_connects)
{
    pair_t p = {0};
    waiter_t w = {&p, HIXL_FAILED};
    pthread_t tid;

    pair_start_decode(&p);
    ck_assert_int_eq(pthread_create(&tid, NULL, wait_thread, &w), 0);
    usleep(100 * 1000);   /* the waiter is waiting on an unknown source */
    pair_start_prefill(&p);
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 0, 1, 2));
    ck_assert_int_eq(pthread_join(tid, NULL), 0);
    ck_assert_msg(w.status == HIXL_SUCCESS, "wait ended %s",
                  hixl_strerror(w.status));
    pair_stop(&p);
}
END_TEST

START_TEST(test_source_disconnects)
{
    pair_t p = {0};

    pair_start(&p);
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 0, 1, 0));
    hx_ok(hixl_disconnect(p.prefill, p.decode_name, HX_OP_TIMEOUT_MS));
    /* what arrived before the disconnect stays visible ... */
    hx_ok(hixl_wait_layer(p.decode, p.prefill_name, 0, 1, 0, LAYER_WAIT_MS));
    /* ... and a layer that can no longer come fails at once, not at the
     * timeout (the bound here is the Check timeout) */
    hx_expect(hixl_wait_layer(p.decode, p.prefill_name, 0, 1, 1, 100000),
              HIXL_FAILED, "disconnected");
    pair_stop(&p);
}
END_TEST

START_TEST(test_restarted_source_starts_fresh)
{
    pair_t p = {0};

    pair_start(&p);
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 0, 9, 0));
    hx_ok(hixl_wait_layer(p.decode, p.prefill_name, 0, 9, 0, LAYER_WAIT_MS));
    hx_ok(hixl_finalize(p.prefill));
    /* a new engine under the same name counts generations from scratch:
     * its generation 1 is not "older than 9" */
    pair_start_prefill(&p);
    hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 0, 1, 0));
    hx_ok(hixl_wait_layer(p.decode, p.prefill_name, 0, 1, 0, LAYER_WAIT_MS));
    pair_stop(&p);
}
END_TEST

START_TEST(test_decode_without_progress_thread)
{
    pair_t p = {0};

    p.decode = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                         "hixl.ProgressThread", "0", NULL);
    snprintf(p.decode_name, sizeof(p.decode_name), "%s",
             hixl_engine_name(p.decode));
    /* nobody progresses decode while prefill connects: a thread does */
    p.prefill = hx_engine("127.0.0.1", "AutoConnect", "1", NULL);
    snprintf(p.prefill_name, sizeof(p.prefill_name), "%s",
             hixl_engine_name(p.prefill));
    {
        pthread_t tid;
        waiter_t w = {&p, HIXL_FAILED};

        /* the wait itself drives decode's progress: accept, handshake,
         * signal */
        ck_assert_int_eq(pthread_create(&tid, NULL, wait_thread, &w), 0);
        hx_ok(hixl_flush_layer(p.prefill, p.decode_name, 0, 1, 2));
        ck_assert_int_eq(pthread_join(tid, NULL), 0);
        ck_assert_msg(w.status == HIXL_SUCCESS, "wait ended %s",
                      hixl_strerror(w.status));
    }
    pair_stop(&p);
}
END_TEST

int main(void)
{
    Suite *s  = suite_create("layer_api");
    TCase *tc = hx_tcase("layer_api");

    tcase_add_test(tc, test_signal_seen);
    tcase_add_test(tc, test_out_of_range_refused);
    tcase_add_test(tc, test_never_comes_times_out);
    tcase_add_test(tc, test_newer_generation_supersedes);
    tcase_add_test(tc, test_wait_before_source_connects);
    tcase_add_test(tc, test_source_disconnects);
    tcase_add_test(tc, test_restarted_source_starts_fresh);
    tcase_add_test(tc, test_decode_without_progress_thread);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
