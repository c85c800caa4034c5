/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: connection life cycles and transfers that do not simply
 * complete.
 *
 *  - an initiator that connects and leaves (finalize or disconnect) before
 *    moving any data must not take its target down: targets are long-lived
 *    services and initiators come and go;
 *  - hixl_disconnect waits for the transfers in flight ("waits up to
 *    timeout_ms for the transfers in flight to the remote, then closes"),
 *    same-host copies queued to the copier thread included
 *    (hixl.AsyncCopy=thread: the last two modes);
 *  - hixl_finalize with transfers in flight neither hangs nor crashes
 *    either side;
 *  - a transfer that cannot finish in time ends TIMEOUT (sync and async),
 *    its handle is released by that report, and the engine goes on working;
 *  - a connection the other side ended is still the application's to
 *    disconnect: that disconnect succeeds once, the next is NOT_CONNECTED
 *    (an orderly shutdown must not depend on which side is faster).
 */
#include "config.h"
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct it_mode {
    int tls;
    int init_progress;
    int copier;          /* hixl.AsyncCopy=thread (same-host copies) */
} it_mode_t;

static const it_mode_t it_modes[] = {
    {0, 1, 0}, {1, 1, 0}, {2, 1, 0}, {0, 0, 0}, {1, 0, 0}, {2, 0, 0},
    {1, 1, 1}, {2, 1, 1},
};
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

static void it_start(int i, hx_target_t *t, size_t region_len)
{
    hx_target_cfg_t cfg;

    hx_use_tls(it_modes[i].tls);
    hx_target_cfg_init(&cfg, region_len);
    cfg.init_seed = 3;
    hx_target_start(t, &cfg);
}

static hixl_engine_t *it_engine(int i)
{
    return hx_engine("127.0.0.1", "hixl.ProgressThread",
                     it_modes[i].init_progress ? "1" : "0",
                     "hixl.AsyncCopy",
                     it_modes[i].copier ? "thread" : "inline", NULL);
}

/* Fail with the target's fate if it is gone. */
static void it_assert_alive(hx_target_t *t, const char *after)
{
    char why[128];

    ck_assert_msg(hx_target_alive(t, why, sizeof(why)), "the target %s "
                  "after %s [%s]", why, after, hx_tls_label());
    /* and it still answers (a fill and a check of its own memory) */
    hx_target_fill(t, 0, 0, 64, 3, 0);
    hx_target_verify(t, 0, 0, 64, 3, 0);
}

/* Connect; when that fails, say first whether the target is still there
 * (a target that died makes the connect fail for that reason). */
static void it_connect(hixl_engine_t *e, hx_target_t *t, const char *after)
{
    hixl_status_t st = hixl_connect(e, t->name, HX_OP_TIMEOUT_MS);
    char why[128];

    if (st == HIXL_SUCCESS) {
        return;
    }
    usleep(100 * 1000);   /* let a dying target finish dying */
    ck_assert_msg(hx_target_alive(t, why, sizeof(why)), "the target %s "
                  "after %s [%s] (connect: %s)", why, after, hx_tls_label(),
                  hixl_last_error());
    ck_abort_msg("connect [%s]: %s: %s", hx_tls_label(), hixl_strerror(st),
                 hixl_last_error());
}

/*
 * Twenty initiators in a row connect and finalize without moving a byte.
 * The target must outlive all of them and then finalize cleanly itself.
 * (UCX 1.13 aborts a process whose endpoint still has wire-up messages
 * queued when the peer vanishes, "got REP message" in ucp_request.c: so
 * hixl_connect must return only on a wired-up endpoint.)
 */
START_TEST(test_connect_then_finalize)
{
    hx_target_t t;
    hixl_engine_t *e;
    char after[64];
    int k;

    it_start(_i, &t, 4096);
    snprintf(after, sizeof(after), "it started");
    for (k = 0; k < 20; ++k) {
        e = it_engine(_i);
        it_connect(e, &t, after);
        hx_ok(hixl_finalize(e));
        snprintf(after, sizeof(after), "initiator %d connected and "
                 "finalized", k);
        it_assert_alive(&t, after);
    }
    hx_target_stop(&t);
}
END_TEST

/* The same with one engine connecting and disconnecting twenty times. */
START_TEST(test_connect_then_disconnect)
{
    hx_target_t t;
    hixl_engine_t *e;
    char after[64];
    int k;

    it_start(_i, &t, 4096);
    e = it_engine(_i);
    snprintf(after, sizeof(after), "it started");
    for (k = 0; k < 20; ++k) {
        it_connect(e, &t, after);
        hx_ok(hixl_disconnect(e, t.name, HX_OP_TIMEOUT_MS));
        snprintf(after, sizeof(after), "connect/disconnect %d", k);
        it_assert_alive(&t, after);
    }
    hx_ok(hixl_finalize(e));
    it_assert_alive(&t, "the initiator finalized");
    hx_target_stop(&t);
}
END_TEST

/*
 * Disconnect right after posting 32 MiB in 16 transfers: the disconnect
 * waits for all of them (also those that wait for a flush shared with
 * later ones), so every request then reports COMPLETED and every byte is
 * there.
 */
#define IT_DW_PARTS 16

START_TEST(test_disconnect_waits_for_inflight)
{
    const size_t len = 32 * HX_MIB, part = len / IT_DW_PARTS;
    hixl_transfer_op_desc_t d;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t req[IT_DW_PARTS];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int k;

    it_start(_i, &t, len);
    e = it_engine(_i);
    hx_ok(hixl_connect(e, t.name, HX_OP_TIMEOUT_MS));
    local = hx_alloc_pages(len);
    hx_register(e, local, len);
    hx_pat_fill(local, len, 8, 0);

    for (k = 0; k < IT_DW_PARTS; ++k) {
        d.local_addr  = (uintptr_t)local + (size_t)k * part;
        d.remote_addr = t.addr[0] + (uint64_t)k * part;
        d.len         = part;
        hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, NULL,
                                  &req[k]));
    }
    hx_ok(hixl_disconnect(e, t.name, HX_OP_TIMEOUT_MS));
    for (k = 0; k < IT_DW_PARTS; ++k) {
        ts = hx_wait_req(e, req[k], &st);
        ck_assert_msg((st == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_COMPLETED),
                      "request %d of %d in flight during a disconnect that "
                      "waited for them [%s]: status %d, %s: %s", k,
                      IT_DW_PARTS, hx_tls_label(), (int)ts,
                      hixl_strerror(st), hixl_last_error());
    }
    hx_target_verify(&t, 0, 0, len, 8, 0);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, len);
}
END_TEST

/*
 * Finalize with requests in flight: no hang, no crash, and the target
 * neither; the memory is released only after (it is ours to unmap).
 * (UCX 1.13 completes requests queued on an endpoint that a forced close
 * did not cancel only inside ucp_worker_destroy: their callbacks must not
 * find the requests already freed.)
 */
START_TEST(test_finalize_with_inflight)
{
    enum { NR = 8 };
    const size_t piece = 4 * HX_MIB;
    hixl_transfer_op_desc_t d[NR];
    hixl_req_t req[NR];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int k;

    it_start(_i, &t, NR * piece);
    e = it_engine(_i);
    hx_ok(hixl_connect(e, t.name, HX_OP_TIMEOUT_MS));
    local = hx_alloc_pages(NR * piece);
    hx_register(e, local, NR * piece);
    for (k = 0; k < NR; ++k) {
        d[k].local_addr  = (uintptr_t)(local + (size_t)k * piece);
        d[k].remote_addr = t.addr[0] + (size_t)k * piece;
        d[k].len         = piece;
        hx_ok(hixl_transfer_async(e, t.name, (k & 1) ? HIXL_READ : HIXL_WRITE,
                                  &d[k], 1, NULL, &req[k]));
    }
    hx_ok(hixl_finalize(e));
    it_assert_alive(&t, "an initiator finalized with transfers in flight");
    hx_target_stop(&t);
    hx_free_pages(local, NR * piece);
}
END_TEST

/*
 * TIMEOUT: a tcp target without a progress thread that stops calling into
 * its engine cannot complete puts.  A sync transfer ends TIMEOUT; an async
 * one reports TIMEOUT once, after which its handle is refused; when the
 * target wakes up the engine works as before.
 */
START_TEST(test_transfer_timeout)
{
    const size_t len = 8 * HX_MIB;
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t req;
    hx_target_cfg_t cfg;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;

    hx_use_tls(0);   /* tcp: puts need the target's progress */
    hx_target_cfg_init(&cfg, len);
    cfg.progress = 0;
    hx_target_start(&t, &cfg);
    e = hx_engine("127.0.0.1", "hixl.ProgressThread", _i ? "1" : "0", NULL);
    hx_ok(hixl_connect(e, t.name, HX_OP_TIMEOUT_MS));
    local = hx_alloc_pages(len);
    hx_register(e, local, len);
    hx_pat_fill(local, len, 12, 0);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = len;
    /* the connection works */
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 0);

    hx_target_stall(&t, 3000);
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1, 300),
              HIXL_TIMEOUT, "timeout");

    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = 300;
    hx_ok(hixl_transfer_async(e, t.name, HIXL_READ, &d, 1, &args, &req));
    hx_mark_last_error();
    ts = hx_wait_req(e, req, &st);
    ck_assert_msg((st == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_TIMEOUT),
                  "stalled READ: status %d, %s: %s", (int)ts,
                  hixl_strerror(st), hixl_last_error());
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), "timeout"));
    hx_expect(hixl_get_transfer_status(e, req, &ts), HIXL_PARAM_INVALID,
              NULL);

    /* "After a TIMEOUT the buffers may still be in use by the transport
     * until the peer is disconnected": wait for the target to wake up,
     * disconnect (which lets the stragglers finish), connect again, and
     * the engine works as before */
    hx_target_verify(&t, 0, 0, 64, 12, 0);
    hx_ok(hixl_disconnect(e, t.name, HX_OP_TIMEOUT_MS));
    hx_ok(hixl_connect(e, t.name, HX_OP_TIMEOUT_MS));
    hx_pat_fill(local, len, 13, 0);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 1);
    hx_target_verify(&t, 0, 0, len, 13, 0);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, len);
}
END_TEST

/* Poll until remote has gone from e's point of view: a notify to it is
 * refused NOT_CONNECTED, with the reason its connection ended. */
static void it_wait_gone(hixl_engine_t *e, const char *remote)
{
    hixl_notify_desc_t nd = {"ping", "x", 1};
    hixl_status_t st = HIXL_SUCCESS;
    int spins;

    for (spins = 0; spins < 20000; ++spins) {
        st = hixl_send_notify(e, remote, &nd, HX_OP_TIMEOUT_MS);
        /* FAILED: the connection closed while this one was out */
        if ((st != HIXL_SUCCESS) && (st != HIXL_FAILED)) {
            break;
        }
        usleep(1000);
    }
    ck_assert_msg(st == HIXL_NOT_CONNECTED, "%s never saw %s go [%s]: %s: %s",
                  hixl_engine_name(e), remote, hx_tls_label(),
                  hixl_strerror(st), hixl_last_error());
    ck_assert_msg(strstr(hixl_last_error(), "closed") != NULL, "no reason "
                  "in \"%s\"", hixl_last_error());
}

/*
 * b connects to a (two listening engines in this process).  Whichever side
 * ends the connection, the other side's hixl_disconnect succeeds once, and
 * a new connection afterwards works and owes nothing from the old one.
 */
START_TEST(test_disconnect_after_peer_left)
{
    hixl_transfer_op_desc_t d;
    hixl_engine_t *a, *b;
    char name_a[80], name_b[80];
    uint8_t *mem;
    int round;

    hx_use_tls(_i);
    a = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    b = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    snprintf(name_a, sizeof(name_a), "%s", hixl_engine_name(a));
    snprintf(name_b, sizeof(name_b), "%s", hixl_engine_name(b));
    mem = hx_alloc_pages(2 * 4096);
    hx_register(a, mem, 4096);
    hx_register(b, mem + 4096, 4096);
    d.local_addr  = (uintptr_t)(mem + 4096);
    d.remote_addr = (uintptr_t)mem;
    d.len         = 4096;

    for (round = 0; round < 2; ++round) {
        hx_ok(hixl_connect(b, name_a, HX_OP_TIMEOUT_MS));
        hx_pat_fill(mem + 4096, 4096, 40 + round, 0);
        hx_transfer(b, name_a, HIXL_WRITE, &d, 1, 0);
        hx_pat_assert(mem, 4096, 40 + round, 0, "the region b wrote");
        if (round == 0) {
            /* the listener ends it: the connector's disconnect is owed */
            hx_ok(hixl_disconnect(a, name_b, HX_OP_TIMEOUT_MS));
            it_wait_gone(b, name_a);
            hx_expect(hixl_transfer_sync(b, name_a, HIXL_WRITE, &d, 1,
                                         HX_OP_TIMEOUT_MS),
                      HIXL_NOT_CONNECTED, "closed");
            hx_ok(hixl_disconnect(b, name_a, HX_OP_TIMEOUT_MS));
            hx_expect(hixl_disconnect(b, name_a, HX_OP_TIMEOUT_MS),
                      HIXL_NOT_CONNECTED, name_a);
            hx_expect(hixl_disconnect(a, name_b, HX_OP_TIMEOUT_MS),
                      HIXL_NOT_CONNECTED, name_b);
        } else {
            /* the connector ends it: the listener's disconnect is owed */
            hx_ok(hixl_disconnect(b, name_a, HX_OP_TIMEOUT_MS));
            it_wait_gone(a, name_b);
            hx_ok(hixl_disconnect(a, name_b, HX_OP_TIMEOUT_MS));
            hx_expect(hixl_disconnect(a, name_b, HX_OP_TIMEOUT_MS),
                      HIXL_NOT_CONNECTED, name_b);
            hx_expect(hixl_disconnect(b, name_a, HX_OP_TIMEOUT_MS),
                      HIXL_NOT_CONNECTED, name_a);
        }
    }

    /* a peer that finalizes: the same */
    hx_ok(hixl_connect(b, name_a, HX_OP_TIMEOUT_MS));
    hx_transfer(b, name_a, HIXL_WRITE, &d, 1, 1);
    hx_ok(hixl_finalize(a));
    it_wait_gone(b, name_a);
    hx_ok(hixl_disconnect(b, name_a, HX_OP_TIMEOUT_MS));
    hx_expect(hixl_disconnect(b, name_a, HX_OP_TIMEOUT_MS),
              HIXL_NOT_CONNECTED, name_a);
    hx_ok(hixl_finalize(b));
    hx_free_pages(mem, 2 * 4096);
}
END_TEST

static Suite *it_lifecycle_suite(void)
{
    Suite *s = suite_create("it_lifecycle");
    TCase *tc;

    tc = hx_tcase("connect_then_finalize");
    tcase_add_loop_test(tc, test_connect_then_finalize, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("connect_then_disconnect");
    tcase_add_loop_test(tc, test_connect_then_disconnect, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("disconnect_waits");
    tcase_add_loop_test(tc, test_disconnect_waits_for_inflight, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("finalize_with_inflight");
    tcase_add_loop_test(tc, test_finalize_with_inflight, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("disconnect_after_peer_left");
    tcase_add_loop_test(tc, test_disconnect_after_peer_left, 0, 3);
    suite_add_tcase(s, tc);

    tc = hx_tcase("transfer_timeout");
    tcase_add_loop_test(tc, test_transfer_timeout, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_lifecycle_suite());
}
