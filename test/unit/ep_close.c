/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: closing endpoints (src/core/peer/ep_close.c).  Its ids first, on a
 * bare engine: id 0 (no closing: out of memory) and an id no
 * closing has are done, whether the list is empty or not.  Then with
 * UCX, two engines of this process over tcp: an orderly disconnect
 * closes the connector's endpoint (its id is one), with UNBIND (the
 * listener's end of it is no longer bound: nothing more of the
 * connection is accepted there), and the disconnect returns only once
 * that closing is done; the list empties and the endpoints go with
 * it, connection after connection.  The due rule itself (flushed, then
 * answered or past HIXL_EP_CLOSE_WAIT_MS, or UCX's error) runs inside the
 * engine's progress: what it decides shows here as done ids and an empty
 * list, never as a time.
 */
#include "config.h"
#include "harness.h"
#include "unit_core.h"
#include "core/engine.h"
#include "core/peer/ep_close.h"
#include "core/peer/peer.h"
#include "core/peer/inbound.h"

#include <stdlib.h>
#include <string.h>

START_TEST(test_ids_on_a_bare_engine)
{
    hixl_engine_t *engine = ut_engine_new(4);
    hixl_ep_closer_t *l      = &engine->ep_closer;

    pthread_mutex_init(&l->lock, NULL);
    ck_assert_int_eq(hixl_ep_close_done(engine, 0), 1);
    ck_assert_int_eq(hixl_ep_close_done(engine, 1), 1);
    ck_assert_int_eq(hixl_ep_close_done(engine, 77), 1);
    /* the list holds none of them (count alone says nothing of ids) */
    atomic_store(&l->count, 1);
    ck_assert_int_eq(hixl_ep_close_done(engine, 0), 1);
    ck_assert_int_eq(hixl_ep_close_done(engine, 77), 1);
    atomic_store(&l->count, 0);
    hixl_ep_close_cleanup(engine);   /* nothing to free: nothing breaks */
    ck_assert_ptr_null(l->head);
    pthread_mutex_destroy(&l->lock);
    ut_engine_free(engine);
}
END_TEST

/* The listener's inbound slot of the connection with id (or NULL). */
static hixl_inbound_slot_t *inbound_slot(hixl_engine_t *engine, uint64_t id)
{
    size_t i;

    for (i = 0; i < engine->inbound.cap; ++i) {
        if ((engine->inbound.slots[i].id == id) &&
            (engine->inbound.slots[i].state != HIXL_INBOUND_FREE)) {
            return &engine->inbound.slots[i];
        }
    }
    return NULL;
}

START_TEST(test_disconnect_closes)
{
    hixl_engine_t *listener, *client;
    hixl_inbound_slot_t *slot;
    const char *lname;
    hixl_peer_t *peer;
    uint64_t conn, seen[3] = {0, 0, 0};
    ucp_ep_h             inbound_ep;
    int round;

    setenv("UCX_TLS", "tcp", 1);
    listener = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    client   = hx_engine("127.0.0.1", NULL);
    lname    = hixl_engine_name(listener);
    for (round = 0; round < 3; ++round) {
        hx_connect(client, lname);
        pthread_mutex_lock(&client->lock);
        peer = hixl_peer_find(client, lname, 1);
        ck_assert_ptr_nonnull(peer);
        hixl_peer_retain(peer);   /* to read its close_id after the end */
        conn = peer->conn_id;
        pthread_mutex_unlock(&client->lock);
        ck_assert_uint_ne(conn, 0);
        ck_assert_uint_eq(peer->close_id, 0);

        /* the listener's end is bound to the endpoint BIND came on */
        pthread_rwlock_rdlock(&listener->serve_lock);
        slot = inbound_slot(listener, conn);
        ck_assert_ptr_nonnull(slot);
        ck_assert_int_eq(slot->state, HIXL_INBOUND_BOUND);
        inbound_ep = slot->ep;
        ck_assert_ptr_nonnull(inbound_ep);
        ck_assert_int_eq(hixl_inbound_check(listener, conn, inbound_ep), 1);
        pthread_rwlock_unlock(&listener->serve_lock);

        /* in order, nothing in flight: flushed, UNBIND, answered, closed */
        hx_ok(hixl_disconnect(client, lname, HX_OP_TIMEOUT_MS));
        pthread_mutex_lock(&client->lock);
        ck_assert_uint_ne(peer->close_id, 0);
        seen[round] = peer->close_id;
        ck_assert_int_eq(hixl_ep_close_done(client, peer->close_id), 1);
        pthread_mutex_unlock(&client->lock);
        hixl_peer_release(peer);
        /* each closing its own id */
        if (round > 0) {
            ck_assert_uint_ne(seen[round], seen[round - 1]);
        }
        /* the listener: nothing naming the connection is accepted now */
        pthread_rwlock_rdlock(&listener->serve_lock);
        ck_assert_int_eq(hixl_inbound_check(listener, conn, inbound_ep), 0);
        pthread_rwlock_unlock(&listener->serve_lock);
    }
    /* every connector endpoint closed: none left on the list */
    ck_assert_uint_eq(atomic_load(&client->ep_closer.count), 0);
    ck_assert_ptr_null(client->ep_closer.head);
    hx_ok(hixl_finalize(client));
    hx_ok(hixl_finalize(listener));
}
END_TEST

static Suite *ep_close_suite(void)
{
    Suite *s  = suite_create("ep_close");
    TCase *tc = hx_tcase("close");

    tcase_add_test(tc, test_ids_on_a_bare_engine);
    tcase_add_test(tc, test_disconnect_closes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(ep_close_suite());
}
