/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: what a channel counts and when its flush needs UCX's
 * (src/core/peer/channel.c), without UCX.
 *
 * Messages whose answer comes on the control connection (WRITEs) make
 * every progress call of an engine without a progress thread poll those
 * sockets until they are answered: a count that never returned to zero
 * would cost each progress call a system call for the rest of the
 * engine's life, and one that counted other answers too (READ_DATA over
 * UCX, same-host copies) would cost it while nothing on the sockets is
 * awaited.
 */
#include "config.h"
#include "unit_core.h"
#include "harness.h"
#include "core/peer/channel.h"
#include "core/peer/ep_flush.h"
#include "ep_flush_counted.h"

static atomic_int wanted;

static long due(hixl_engine_t *engine)
{
    return atomic_load(&engine->progress.ctrl_answers_due);
}

static hixl_chan_t *chan_new(hixl_engine_t *engine, hixl_peer_t *peer)
{
    peer->ep_flush = hixl_ep_flush_create(NULL, NULL, &wanted);
    ck_assert_ptr_nonnull(peer->ep_flush);
    hx_ok(hixl_chan_open(engine, peer));
    ck_assert_ptr_nonnull(peer->chan);
    return peer->chan;
}

static void chan_end(hixl_engine_t *engine, hixl_peer_t *peer)
{
    int has_ep = (peer->ep_flush->ep != NULL);

    if (atomic_load(&peer->chan->open)) {
        hixl_chan_stop(engine, peer->chan);
    }
    hixl_chan_close(engine, peer->chan);
    /* the close drops the owner's reference, except where the service
     * never had an endpoint (it returns at once) */
    hixl_ep_flush_close(peer->ep_flush, UCS_ERR_CANCELED);
    if (!has_ep) {
        hixl_ep_flush_release(peer->ep_flush);
    }
    peer->ep_flush = NULL;
    peer->chan = NULL;
}

static hixl_engine_t *engine_new(void)
{
    hixl_engine_t *engine = ut_engine_new(4);

    pthread_rwlock_init(&engine->serve_lock, NULL);
    return engine;
}

static void engine_free(hixl_engine_t *engine)
{
    hixl_chan_table_cleanup(&engine->chans);
    pthread_rwlock_destroy(&engine->serve_lock);
    ut_engine_free(engine);
}

START_TEST(test_only_control_answers_count)
{
    hixl_engine_t *engine = engine_new();
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_chan_t *chan     = chan_new(engine, peer);
    unsigned w1, w2, r, c;

    w1 = hixl_chan_post(chan, HIXL_ANSWER_ON_CONTROL);
    r  = hixl_chan_post(chan, HIXL_ANSWER_ELSEWHERE);
    c  = hixl_chan_post(chan, HIXL_ANSWER_ELSEWHERE);
    w2 = hixl_chan_post(chan, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 2);
    ck_assert_int_eq(atomic_load(&chan->epochs[w1].outstanding), 4);

    hixl_chan_answered(chan, r, HIXL_ANSWER_ELSEWHERE);
    hixl_chan_answered(chan, c, HIXL_ANSWER_ELSEWHERE);
    ck_assert_int_eq(due(engine), 2);
    hixl_chan_answered(chan, w1, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 1);
    hixl_chan_answered(chan, w2, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 0);
    ck_assert_int_eq(atomic_load(&chan->epochs[w1].outstanding), 0);

    chan_end(engine, peer);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    engine_free(engine);
}
END_TEST

/* An answer nothing awaits (a peer's duplicate, or one for a message it
 * was never sent) is not counted: the slot's next message still waits for
 * its own answer. */
START_TEST(test_duplicate_answer_ignored)
{
    hixl_engine_t *engine = engine_new();
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_chan_t *chan     = chan_new(engine, peer);
    unsigned r;

    r = hixl_chan_post(chan, HIXL_ANSWER_ELSEWHERE);
    hixl_chan_answered(chan, r, HIXL_ANSWER_ELSEWHERE);
    hixl_chan_answered(chan, r, HIXL_ANSWER_ELSEWHERE);   /* twice */
    hixl_chan_answered(chan, (r + 5) % HIXL_CHAN_EPOCHS,
                       HIXL_ANSWER_ELSEWHERE);            /* for nothing */
    ck_assert_int_eq(atomic_load(&chan->epochs[r].outstanding), 0);
    ck_assert_int_eq(
        atomic_load(&chan->epochs[(r + 5) % HIXL_CHAN_EPOCHS].outstanding),
        0);
    r = hixl_chan_post(chan, HIXL_ANSWER_ELSEWHERE);
    ck_assert_int_eq(atomic_load(&chan->epochs[r].outstanding), 1);
    hixl_chan_answered(chan, r, HIXL_ANSWER_ELSEWHERE);

    chan_end(engine, peer);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    engine_free(engine);
}
END_TEST

/* A channel that stops with answers due: the engine stops waiting for
 * them at once, and answers that come after (a late DATA_ACK) neither
 * count twice nor take another channel's due answers off. */
START_TEST(test_stop_takes_the_due_answers_off)
{
    hixl_engine_t *engine = engine_new();
    hixl_peer_t *a        = ut_peer_new(engine, 1, "10.0.0.2:1");
    hixl_peer_t *b        = ut_peer_new(engine, 1, "10.0.0.3:1");
    hixl_chan_t *ca       = chan_new(engine, a);
    hixl_chan_t *cb       = chan_new(engine, b);
    unsigned sa, sb;
    int i;

    for (i = 0; i < 3; ++i) {
        sa = hixl_chan_post(ca, HIXL_ANSWER_ON_CONTROL);
    }
    sb = hixl_chan_post(cb, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 4);

    hixl_chan_stop(engine, ca);
    ck_assert_int_eq(due(engine), 1);   /* b's WRITE still waits */
    hixl_chan_answered(ca, sa, HIXL_ANSWER_ON_CONTROL);
    hixl_chan_answered(ca, sa, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 1);
    hixl_chan_answered(cb, sb, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 0);

    /* the slot reused: it starts from nothing */
    chan_end(engine, a);
    ca = chan_new(engine, a);
    ck_assert_int_eq(atomic_load(&ca->ctrl_pending), 0);
    sa = hixl_chan_post(ca, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 1);
    hixl_chan_answered(ca, sa, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(due(engine), 0);

    chan_end(engine, a);
    chan_end(engine, b);
    hixl_peer_close(engine, a, HIXL_NOT_CONNECTED, "test over");
    hixl_peer_close(engine, b, HIXL_NOT_CONNECTED, "test over");
    engine_free(engine);
}
END_TEST

/* A channel that posted no put or get since UCX's last flush is flushed
 * without UCX: by the answers of its messages, or at once.  The endpoint
 * here is not UCX's, so a flush that reached UCX would crash the test.
 * And a put posted makes the next flush UCX's again. */
START_TEST(test_flush_without_puts_leaves_ucx_out)
{
    static int not_an_ep;
    hixl_engine_t *engine = engine_new();
    hixl_peer_t *peer     = ut_peer_new(engine, 1, "10.0.0.2:1");
    counted_t a, b;
    hixl_chan_t *chan;
    unsigned slot;

    counted_init(&a, 1);
    counted_init(&b, 1);

    peer->ep_flush = hixl_ep_flush_create(&not_an_ep, NULL, &wanted);
    ck_assert_ptr_nonnull(peer->ep_flush);
    hx_ok(hixl_chan_open(engine, peer));
    chan = peer->chan;
    /* a new endpoint's first flush is UCX's: it completes the wire-up */
    ck_assert_int_eq(atomic_load(&chan->ucx_ops), 1);
    atomic_store(&chan->ucx_ops, 0);   /* as once UCX's flush was posted */

    /* nothing in flight: done inside the call */
    hixl_ep_flush_add(peer->ep_flush, &a.w, 0);
    ck_assert_int_eq(atomic_load(&a.calls), 1);
    ck_assert_int_eq(a.status, UCS_OK);

    /* a WRITE in flight: done when its answer comes, not before */
    slot = hixl_chan_post(chan, HIXL_ANSWER_ON_CONTROL);
    hixl_ep_flush_add(peer->ep_flush, &b.w, 0);
    ck_assert_int_eq(atomic_load(&b.calls), 0);
    hixl_chan_answered(chan, slot, HIXL_ANSWER_ON_CONTROL);
    ck_assert_int_eq(atomic_load(&b.calls), 1);
    ck_assert_int_eq(b.status, UCS_OK);
    ck_assert_int_eq(atomic_load(&a.calls), 1);

    hixl_chan_rma_posted(chan);
    ck_assert_int_eq(atomic_load(&chan->ucx_ops), 1);
    hixl_chan_rma_posted(NULL);   /* a peer whose endpoint went: nothing */

    chan_end(engine, peer);
    hixl_peer_close(engine, peer, HIXL_NOT_CONNECTED, "test over");
    engine_free(engine);
}
END_TEST

static Suite *unit_channel_suite(void)
{
    Suite *s = suite_create("channel");
    TCase *tc = hx_tcase("channel");

    tcase_add_test(tc, test_only_control_answers_count);
    tcase_add_test(tc, test_duplicate_answer_ignored);
    tcase_add_test(tc, test_stop_takes_the_due_answers_off);
    tcase_add_test(tc, test_flush_without_puts_leaves_ucx_out);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_channel_suite());
}
