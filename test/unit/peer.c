/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the peer table and the lifecycle hooks modules plug into it
 * (src/core/peer/peer.c), without UCX.  Modules keep per-peer state behind
 * their own pointers and rely on the hooks' order and count: ready and
 * accepted in registration order, the first refusal stopping them;
 * closing, closed and destroy in reverse order, once each; a closed peer
 * leaves the table at once and its memory goes with its last reference.
 */
#include "config.h"
#include "harness.h"
#include "unit_core.h"
#include "util/log.h"

#include <string.h>

static char trail[256];      /* which hook ran, in order */
static int  refuse_in;       /* module index whose ready refuses, or -1 */

#define HOOK(_m, _what) \
    static hixl_status_t _m##_##_what(hixl_engine_t *e, hixl_peer_t *p) \
    { \
        (void)e; (void)p; \
        strcat(trail, #_m "." #_what " "); \
        return (refuse_in == _m##_index) && !strcmp(#_what, "ready") ? \
               hixl_error(HIXL_RESOURCE_EXHAUSTED, #_m " refuses") : \
               HIXL_SUCCESS; \
    }

#define HOOKV(_m, _what) \
    static void _m##_##_what(hixl_engine_t *e, hixl_peer_t *p) \
    { \
        (void)e; (void)p; \
        strcat(trail, #_m "." #_what " "); \
    }

#define HOOKD(_m) \
    static void _m##_destroy(hixl_peer_t *p) \
    { \
        (void)p; \
        strcat(trail, #_m ".destroy "); \
    }

enum { a_index, b_index };
HOOK(a, ready) HOOK(a, accepted) HOOKV(a, closing) HOOKV(a, closed) HOOKD(a)
HOOK(b, ready) HOOKV(b, closed) HOOKD(b)

static const hixl_peer_hooks_t hooks_a = {
    "a", a_ready, a_accepted, a_closing, a_closed, a_destroy
};
static const hixl_peer_hooks_t hooks_b = {
    .name = "b", .ready = b_ready, .closed = b_closed, .destroy = b_destroy
};

static hixl_engine_t *hooked_engine(void)
{
    hixl_engine_t *engine = ut_engine_new(4);

    hx_ok(hixl_peer_hooks_add(engine, &hooks_a));
    hx_ok(hixl_peer_hooks_add(engine, &hooks_b));
    trail[0]  = '\0';
    refuse_in = -1;
    return engine;
}

START_TEST(test_order)
{
    hixl_engine_t *engine = hooked_engine();
    hixl_peer_t *peer     = ut_peer_new(engine, 0, "10.0.0.9:7");

    ck_assert_uint_eq(engine->peers.count, 1);
    ck_assert_int_eq(peer->state, HIXL_PEER_HANDSHAKE);
    hx_ok(hixl_peer_set_ready(engine, peer));
    hx_ok(hixl_peer_accepted(engine, peer));
    ck_assert_int_eq(peer->state, HIXL_PEER_READY);
    ck_assert_str_eq(trail, "a.ready b.ready a.accepted ");
    trail[0] = '\0';
    hixl_peer_retain(peer);   /* a record still waiting on it */
    hixl_peer_close(engine, peer, HIXL_FAILED, "closed by %s", "the test");
    ck_assert_str_eq(trail, "a.closing b.closed a.closed ");
    ck_assert_int_eq(peer->state, HIXL_PEER_CLOSED);
    ck_assert_str_eq(peer->close_reason, "closed by the test");
    ck_assert_int_eq(peer->close_status, HIXL_FAILED);
    ck_assert_uint_eq(engine->peers.count, 0);
    ck_assert_ptr_null(hixl_peer_find(engine, "10.0.0.9:7", -1));
    /* idempotent: nothing runs twice */
    hixl_peer_close(engine, peer, HIXL_FAILED, "again");
    ck_assert_str_eq(trail, "a.closing b.closed a.closed ");
    /* the last reference destroys it */
    hixl_peer_release(peer);
    ck_assert_str_eq(trail, "a.closing b.closed a.closed b.destroy "
                     "a.destroy ");
    ut_engine_free(engine);
}
END_TEST

START_TEST(test_refusal_stops_the_hooks)
{
    hixl_engine_t *engine = hooked_engine();
    hixl_peer_t *peer     = ut_peer_new(engine, 0, "10.0.0.9:7");

    refuse_in = a_index;
    hx_mark_last_error();
    ck_assert_int_eq(hixl_peer_set_ready(engine, peer),
                     HIXL_RESOURCE_EXHAUSTED);
    ck_assert_str_eq(hixl_last_error(), "a refuses");
    ck_assert_str_eq(trail, "a.ready ");
    ck_assert_int_eq(peer->state, HIXL_PEER_HANDSHAKE);
    /* a refused peer still closes through every hook (they cope with a
     * peer they never saw ready) */
    hixl_peer_close(engine, peer, HIXL_RESOURCE_EXHAUSTED, "refused");
    ck_assert_str_eq(trail, "a.ready a.closing b.closed a.closed b.destroy "
                     "a.destroy ");
    ut_engine_free(engine);
}
END_TEST

/* Hooks that only count, registered many times over. */
static unsigned counted_ready, counted_destroy;

static hixl_status_t count_ready(hixl_engine_t *e, hixl_peer_t *p)
{
    (void)e;
    (void)p;
    ++counted_ready;
    return HIXL_SUCCESS;
}

static void count_destroy(hixl_peer_t *p)
{
    (void)p;
    ++counted_destroy;
}

static const hixl_peer_hooks_t hooks_count = {
    .name = "count", .ready = count_ready, .destroy = count_destroy
};

/* The table once held 8 hooks and dropped the ninth without a word; a
 * module left out never learns of a peer's end.  It grows: every hook
 * registered runs, in order, and the last registered still runs last. */
START_TEST(test_many_hooks)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_peer_t *peer;
    unsigned i;

    hx_ok(hixl_peer_hooks_add(engine, &hooks_a));
    for (i = 0; i < 40; ++i) {
        hx_ok(hixl_peer_hooks_add(engine, &hooks_count));
    }
    hx_ok(hixl_peer_hooks_add(engine, &hooks_b));
    ck_assert_uint_eq(engine->peers.nhooks, 42);
    trail[0]        = '\0';
    refuse_in       = -1;
    counted_ready   = 0;
    counted_destroy = 0;
    peer = ut_peer_new(engine, 0, "10.0.0.9:7");
    hx_ok(hixl_peer_set_ready(engine, peer));
    ck_assert_str_eq(trail, "a.ready b.ready ");
    ck_assert_uint_eq(counted_ready, 40);
    hixl_peer_close(engine, peer, HIXL_FAILED, "done");
    ck_assert_uint_eq(counted_destroy, 40);
    ck_assert_str_eq(trail, "a.ready b.ready a.closing b.closed a.closed "
                     "b.destroy a.destroy ");
    ut_engine_free(engine);
}
END_TEST

static int connects;

static hixl_status_t fake_connect(hixl_engine_t *engine, const char *remote)
{
    ++connects;
    ut_peer_new(engine, 1, remote)->state = HIXL_PEER_READY;
    return HIXL_SUCCESS;
}

static const char *fake_ended(hixl_engine_t *engine, const char *remote,
                              int outgoing)
{
    (void)engine;
    (void)outgoing;
    return !strcmp(remote, "10.0.0.8:1") ? "it said BYE" : NULL;
}

START_TEST(test_lookup)
{
    hixl_engine_t *engine = hooked_engine();
    hixl_peer_t *in       = ut_peer_new(engine, 0, "10.0.0.7:1");
    hixl_peer_t *out, *found;

    engine->peers.ended_reason = fake_ended;
    /* accepted peers serve notifies, never transfers */
    in->state = HIXL_PEER_READY;
    hx_ok(hixl_peer_lookup(engine, "10.0.0.7:1", 0, &found));
    ck_assert_ptr_eq(found, in);
    hx_expect(hixl_peer_lookup(engine, "10.0.0.7:1", 1, &found),
              HIXL_NOT_CONNECTED, "call hixl_connect first");
    /* the spelling of the name does not matter */
    out = ut_peer_new(engine, 1, "[::1]:3");
    out->state = HIXL_PEER_READY;
    hx_ok(hixl_peer_lookup(engine, "[0:0::1]:3", 1, &found));
    ck_assert_ptr_eq(found, out);
    /* why a connection is gone comes from the ended records */
    hx_expect(hixl_peer_lookup(engine, "10.0.0.8:1", 1, &found),
              HIXL_NOT_CONNECTED, "it said BYE");
    /* AutoConnect goes through the injected connect */
    engine->peers.connect    = fake_connect;
    engine->opts.auto_connect = 1;
    connects = 0;
    hx_ok(hixl_peer_lookup(engine, "10.0.0.6:1", 1, &found));
    ck_assert_int_eq(connects, 1);
    ck_assert_str_eq(found->name, "10.0.0.6:1");
    hixl_engine_close_peers(engine);
    ck_assert_uint_eq(engine->peers.count, 0);
    ut_engine_free(engine);
}
END_TEST

static Suite *unit_peer_hooks_suite(void)
{
    Suite *s = suite_create("peer");
    TCase *tc = hx_tcase("peers");

    tcase_add_test(tc, test_order);
    tcase_add_test(tc, test_refusal_stops_the_hooks);
    tcase_add_test(tc, test_lookup);
    tcase_add_test(tc, test_many_hooks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_peer_hooks_suite());
}
