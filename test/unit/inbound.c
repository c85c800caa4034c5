/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the inbound table (src/core/peer/inbound.c) on a bare engine, without
 * UCX (inbound.h): slots opened for accepted connections with ids that name
 * only them; a message belongs to a connection only while it is bound to the
 * endpoint it arrived on; an endpoint no live connection is bound to is an
 * orphan; the peer's closing frees the slot, drops its reference and its queued
 * answers, and its id names nothing from then on.  The answers to WRITEs
 * (DATA_ACK) go out on the connection's control connection: a failure or a last
 * WRITE's at the next send, the others held until then or a quiet pass.
 *
 * BIND arrives in a UCX callback (with the endpoint UCX made for the
 * connector); here the slot is bound as that handler binds it, to an
 * endpoint value that is only ever compared.
 */
#include "config.h"
#include "harness.h"
#include "unit_core.h"
#include "core/am/am.h"
#include "core/peer/inbound.h"
#include "wire/ctrl_msg.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define EP_A ((ucp_ep_h)(uintptr_t)0x1000)
#define EP_B ((ucp_ep_h)(uintptr_t)0x2000)
#define EP_X ((ucp_ep_h)(uintptr_t)0x3000)

static hixl_engine_t *inbound_engine(void)
{
    hixl_engine_t *engine = ut_engine_new(4);

    ck_assert_int_eq(pthread_rwlock_init(&engine->serve_lock, NULL), 0);
    /* no in worker: the peer hook only */
    hx_ok(hixl_inbound_init(engine));
    return engine;
}

static void inbound_engine_free(hixl_engine_t *engine)
{
    hixl_inbound_cleanup(engine);
    pthread_rwlock_destroy(&engine->serve_lock);
    ut_engine_free(engine);
}

static hixl_inbound_slot_t *slot_of(hixl_engine_t *engine, uint64_t id)
{
    size_t index = (size_t)(uint32_t)id - 1;

    ck_assert_uint_lt(index, engine->inbound.cap);
    return &engine->inbound.slots[index];
}

/* What the BIND handler does for a pending slot. */
static void slot_bind(hixl_engine_t *engine, uint64_t id, ucp_ep_h ep)
{
    hixl_inbound_slot_t *slot = slot_of(engine, id);

    ck_assert_int_eq(slot->state, HIXL_INBOUND_PENDING);
    slot->state = HIXL_INBOUND_BOUND;
    slot->ep    = ep;
}

START_TEST(test_open_bind_check)
{
    hixl_engine_t *engine   = inbound_engine();
    hixl_peer_t *a        = ut_peer_new(engine, 0, "10.0.0.1:1");
    hixl_peer_t *b        = ut_peer_new(engine, 0, "10.0.0.2:1");
    uint64_t ida, idb;
    unsigned refs;

    refs = atomic_load(&a->refcount);
    hx_ok(hixl_inbound_open(engine, a));
    hx_ok(hixl_inbound_open(engine, b));
    ida = a->conn_id;
    idb = b->conn_id;
    /* slot + 1 in the low half, a tag never 0 in the high one */
    ck_assert_uint_eq((uint32_t)ida, 1);
    ck_assert_uint_eq((uint32_t)idb, 2);
    ck_assert_uint_ne(ida >> 32, 0);
    ck_assert_uint_ne(idb >> 32, 0);
    ck_assert_ptr_eq(slot_of(engine, ida)->peer, a);
    ck_assert_uint_eq(atomic_load(&a->refcount), refs + 1);

    /* pending: no message belongs to it yet, whatever endpoint */
    ck_assert_int_eq(hixl_inbound_check(engine, ida, NULL), 0);
    ck_assert_int_eq(hixl_inbound_check(engine, ida, EP_A), 0);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_A), 1);

    slot_bind(engine, ida, EP_A);
    slot_bind(engine, idb, EP_B);
    ck_assert_int_eq(hixl_inbound_check(engine, ida, EP_A), 1);
    ck_assert_int_eq(hixl_inbound_check(engine, idb, EP_B), 1);
    /* another connection's endpoint, a made-up tag, no slot, id 0 */
    ck_assert_int_eq(hixl_inbound_check(engine, ida, EP_B), 0);
    ck_assert_int_eq(hixl_inbound_check(engine, ida ^ (1ull << 40), EP_A), 0);
    ck_assert_int_eq(hixl_inbound_check(engine, (ida & ~0xffffffffull) | 9,
                                        EP_A),
                     0);
    ck_assert_int_eq(hixl_inbound_check(engine, 0, EP_A), 0);
    ck_assert_int_eq(hixl_inbound_check(engine, ida >> 32 << 32, EP_A), 0);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_A), 0);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_B), 0);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_X), 1);

    /* an UNBIND takes the endpoint off: not bound, an orphan */
    slot_of(engine, idb)->state = HIXL_INBOUND_UNBOUND;
    slot_of(engine, idb)->ep    = NULL;
    ck_assert_int_eq(hixl_inbound_check(engine, idb, EP_B), 0);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_B), 1);

    hixl_peer_close(engine, a, HIXL_FAILED, "test");
    hixl_peer_close(engine, b, HIXL_FAILED, "test");
    inbound_engine_free(engine);
}
END_TEST

START_TEST(test_close_frees)
{
    hixl_engine_t *engine   = inbound_engine();
    hixl_peer_t *a        = ut_peer_new(engine, 0, "10.0.0.1:1");
    hixl_peer_t *b        = ut_peer_new(engine, 0, "10.0.0.2:1");
    hixl_peer_t *c, *out;
    uint64_t ida, idb, idc;
    unsigned refs;

    hx_ok(hixl_inbound_open(engine, a));
    hx_ok(hixl_inbound_open(engine, b));
    ida = a->conn_id;
    idb = b->conn_id;
    slot_bind(engine, ida, EP_A);
    slot_bind(engine, idb, EP_B);

    hixl_peer_retain(a);   /* to look at it after its close */
    refs = atomic_load(&a->refcount);
    hixl_peer_close(engine, a, HIXL_FAILED, "closed by the test");
    /* the slot is free, its reference dropped, its id names nothing */
    ck_assert_uint_eq(a->conn_id, 0);
    ck_assert_int_eq(slot_of(engine, ida)->state, HIXL_INBOUND_FREE);
    ck_assert_ptr_null(slot_of(engine, ida)->peer);
    ck_assert_uint_lt(atomic_load(&a->refcount), refs);
    ck_assert_int_eq(hixl_inbound_check(engine, ida, EP_A), 0);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_A), 1);
    /* the other connection is untouched */
    ck_assert_int_eq(hixl_inbound_check(engine, idb, EP_B), 1);
    hixl_peer_release(a);

    /* the free slot is taken again, under another id */
    c = ut_peer_new(engine, 0, "10.0.0.3:1");
    hx_ok(hixl_inbound_open(engine, c));
    idc = c->conn_id;
    ck_assert_uint_eq((uint32_t)idc, (uint32_t)ida);
    slot_bind(engine, idc, EP_A);
    ck_assert_int_eq(hixl_inbound_check(engine, idc, EP_A), 1);
    if (idc != ida) {   /* the same 31 random bits: once in 2^31 */
        ck_assert_int_eq(hixl_inbound_check(engine, ida, EP_A), 0);
    }

    /* an outgoing peer's closing leaves the table alone */
    out = ut_peer_new(engine, 1, "10.0.0.4:1");
    out->conn_id = idb;   /* as if it carried one: it is not the table's */
    hixl_peer_close(engine, out, HIXL_FAILED, "test");
    ck_assert_int_eq(hixl_inbound_check(engine, idb, EP_B), 1);

    hixl_peer_close(engine, b, HIXL_FAILED, "test");
    hixl_peer_close(engine, c, HIXL_FAILED, "test");
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_A), 1);
    ck_assert_int_eq(hixl_inbound_orphan(engine, EP_B), 1);
    inbound_engine_free(engine);
}
END_TEST

/* An accepted peer whose control connection's other end is *fd_p. */
static hixl_peer_t *live_peer(hixl_engine_t *engine, const char *name,
                              int *fd_p)
{
    hixl_peer_t *peer;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(fcntl(sv[0], F_SETFL,
                           fcntl(sv[0], F_GETFL) | O_NONBLOCK), 0);
    peer = hixl_peer_create(engine, sv[0], 0);
    ck_assert_ptr_nonnull(peer);
    snprintf(peer->name, sizeof(peer->name), "%s", name);
    snprintf(peer->alias, sizeof(peer->alias), "%s", name);
    *fd_p = sv[1];
    return peer;
}

static void write_hdr(hixl_am_hdr_t *h, uint64_t cookie, uint16_t flags)
{
    hixl_am_hdr_init(h);
    h->chan   = 0xc4a9;
    h->cookie = cookie;
    h->addr   = 0x7000 + cookie;
    h->len    = 60 * 1024;
    h->flags  = flags;
}

/* The DATA_ACKs readable on fd now, their cookies and statuses in order. */
static int read_acks(int fd, uint64_t *cookies, uint32_t *statuses, int max)
{
    static uint8_t buf[4096];
    size_t len = 0, off = 0, consumed;
    hixl_msg_t msg;
    char err[128];
    ssize_t n;
    int count = 0;

    while ((n = recv(fd, buf + len, sizeof(buf) - len, MSG_DONTWAIT)) > 0) {
        len += (size_t)n;
    }
    while (off < len) {
        ck_assert_int_eq(hixl_msg_decode(buf + off, len - off, &msg,
                                         &consumed, err, sizeof(err)),
                         CTRL_DECODE_OK);
        ck_assert_int_eq(msg.type, CTRL_DATA_ACK);
        ck_assert_uint_eq(msg.u.data_ack.chan, 0xc4a9);
        ck_assert_uint_eq(msg.u.data_ack.addr, 0x7000 + msg.u.data_ack.cookie);
        ck_assert_uint_eq(msg.u.data_ack.len, 60 * 1024);
        ck_assert_int_lt(count, max);
        cookies[count]  = msg.u.data_ack.cookie;
        statuses[count] = msg.u.data_ack.status;
        ++count;
        off += consumed;
    }
    return count;
}

START_TEST(test_acks)
{
    hixl_engine_t  *engine = inbound_engine();
    hixl_inbound_t *t      = &engine->inbound;
    uint64_t cookies[8];
    uint32_t statuses[8];
    hixl_am_hdr_t h;
    hixl_peer_t *p;
    uint64_t id;
    int fd;

    p = live_peer(engine, "10.0.0.5:1", &fd);
    hx_ok(hixl_inbound_open(engine, p));
    id = p->conn_id;
    slot_bind(engine, id, EP_A);

    /* a connection that is not (any more): nothing queued */
    write_hdr(&h, 1, 0);
    hixl_inbound_ack(engine, id ^ (1ull << 40), &h, HIXL_SUCCESS);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 0);
    hixl_inbound_acks_send(engine, 1);
    ck_assert_int_eq(read_acks(fd, cookies, statuses, 8), 0);

    /* more of the descriptor follows: held, not due */
    write_hdr(&h, 2, HIXL_AM_FLAG_MORE);
    hixl_inbound_ack(engine, id, &h, HIXL_SUCCESS);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 1);
    ck_assert_uint_eq(atomic_load(&t->acks_due), 0);
    ck_assert_int_eq(atomic_load(&slot_of(engine, id)->ack_queued),
                     HIXL_ACKS_HELD);
    /* a failure is due at once, whatever its flags; it takes the held
     * one along, in order */
    write_hdr(&h, 3, HIXL_AM_FLAG_MORE);
    hixl_inbound_ack(engine, id, &h, HIXL_PARAM_INVALID);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 1);
    ck_assert_uint_eq(atomic_load(&t->acks_due), 1);
    hixl_inbound_acks_send(engine, 0);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 0);
    ck_assert_uint_eq(atomic_load(&t->acks_due), 0);
    ck_assert_int_eq(read_acks(fd, cookies, statuses, 8), 2);
    ck_assert_uint_eq(cookies[0], 2);
    ck_assert_uint_eq(statuses[0], HIXL_SUCCESS);
    ck_assert_uint_eq(cookies[1], 3);
    ck_assert_uint_eq(statuses[1], HIXL_PARAM_INVALID);

    /* the last WRITE of a descriptor is due */
    write_hdr(&h, 4, 0);
    hixl_inbound_ack(engine, id, &h, HIXL_SUCCESS);
    ck_assert_uint_eq(atomic_load(&t->acks_due), 1);
    hixl_inbound_acks_send(engine, 0);
    ck_assert_int_eq(read_acks(fd, cookies, statuses, 8), 1);
    ck_assert_uint_eq(cookies[0], 4);

    /* a held one goes with a quiet pass */
    write_hdr(&h, 5, HIXL_AM_FLAG_MORE);
    hixl_inbound_ack(engine, id, &h, HIXL_SUCCESS);
    hixl_inbound_acks_send(engine, 1);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 0);
    ck_assert_int_eq(read_acks(fd, cookies, statuses, 8), 1);
    ck_assert_uint_eq(cookies[0], 5);

    /* the connection ends with one held: its mark goes with it */
    write_hdr(&h, 6, HIXL_AM_FLAG_MORE);
    hixl_inbound_ack(engine, id, &h, HIXL_SUCCESS);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 1);
    hixl_peer_close(engine, p, HIXL_FAILED, "test");
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 0);
    ck_assert_uint_eq(atomic_load(&t->acks_due), 0);
    hixl_inbound_ack(engine, id, &h, HIXL_SUCCESS);
    ck_assert_uint_eq(atomic_load(&t->acks_queued), 0);

    close(fd);
    inbound_engine_free(engine);
}
END_TEST

static Suite *inbound_suite(void)
{
    Suite *s  = suite_create("inbound");
    TCase *tc = hx_tcase("inbound");

    tcase_add_test(tc, test_open_bind_check);
    tcase_add_test(tc, test_close_frees);
    tcase_add_test(tc, test_acks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(inbound_suite());
}
