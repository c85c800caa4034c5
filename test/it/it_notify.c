/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: notifies between engines in different processes.
 *
 *  - hixl_send_notify: many in a row arrive complete and in order, binary
 *    messages (NULs, every byte value) intact, names up to the limit, empty
 *    messages; hixl_get_notifies names the sender by its engine name;
 *  - the other direction: an accepted peer may notify the engine that
 *    connected to it;
 *  - per-transfer notifies (HIXL_TRANSFER_ARG_NOTIFY): the target checks the
 *    transfer's bytes the moment the notify shows up in hixl_get_notifies(),
 *    and the request completes only once the notify is queued there.
 *
 * The target takes notifies from its engine itself (harness.c) and hands
 * them over the pipe, so content is compared here byte for byte.
 */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct it_mode {
    int tls;
    int init_progress;
    int tgt_progress;
} it_mode_t;

static const it_mode_t it_modes[] = {
    {0, 1, 1}, {1, 1, 1}, {2, 1, 1},
    {0, 0, 1}, {1, 0, 0}, {2, 1, 0},
};
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

static hixl_engine_t *it_setup(int i, hx_target_t *t, size_t region_len,
                               const char *init_name)
{
    const it_mode_t *m = &it_modes[i];
    hx_target_cfg_t cfg;
    hixl_engine_t *e;

    hx_use_tls(m->tls);
    hx_target_cfg_init(&cfg, region_len);
    cfg.progress = m->tgt_progress;
    hx_target_start(t, &cfg);
    e = hx_engine(init_name, "hixl.ProgressThread",
                  m->init_progress ? "1" : "0", NULL);
    hx_connect(e, t->name);
    return e;
}

/* The message of notify i: i % 300 bytes of pattern i, so lengths vary,
 * 0 included, and bytes include NULs. */
static size_t it_msg(size_t i, uint8_t *buf)
{
    size_t len = i % 300;

    hx_pat_fill(buf, len, 7000 + i, 0);
    if (len > 2) {
        buf[1] = 0;   /* an embedded NUL for sure */
    }
    return len;
}

/*
 * 2000 notifies sent one after the other arrive in order and intact.
 */
START_TEST(test_order)
{
    enum { N = 2000 };
    uint8_t buf[512];
    char name[64];
    hixl_notify_desc_t nd;
    hx_notify_t *got;
    hx_target_t t;
    hixl_engine_t *e;
    size_t i, count, len;

    e = it_setup(_i, &t, 4096, "127.0.0.1");
    for (i = 0; i < N; ++i) {
        snprintf(name, sizeof(name), "n.%zu", i);
        len        = it_msg(i, buf);
        nd.name    = name;
        nd.msg     = len ? buf : NULL;
        nd.msg_len = len;
        hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));
    }
    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, N);
    for (i = 0; i < N; ++i) {
        snprintf(name, sizeof(name), "n.%zu", i);
        ck_assert_msg(!strcmp(got[i].name, name), "notify %zu is \"%s\", "
                      "expected \"%s\" [%s]", i, got[i].name, name,
                      hx_tls_label());
        ck_assert_str_eq(got[i].remote, "127.0.0.1");
        len = it_msg(i, buf);
        ck_assert_uint_eq(got[i].msg_len, len);
        ck_assert_mem_eq(got[i].msg, buf, len);
        ck_assert_msg(got[i].verified == 0, "%s", got[i].note);
    }
    hx_notifies_free(got, count);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
}
END_TEST

/*
 * The edges of a notify: the longest name, a message of exactly
 * hixl.MaxNotifySize bytes with every byte value, an empty message with a
 * NULL pointer, an empty name.  And the sender's name as the target knows
 * it: an IPv6 client-only engine is "[::1]".
 */
START_TEST(test_limits)
{
    const size_t max = 65536;   /* default hixl.MaxNotifySize */
    char longname[HIXL_NOTIFY_NAME_MAX + 1];
    uint8_t *big;
    hixl_notify_desc_t nd;
    hx_notify_t *got;
    hx_target_t t;
    hixl_engine_t *e;
    size_t i, count;

    big = malloc(max);
    ck_assert_ptr_nonnull(big);
    for (i = 0; i < max; ++i) {
        big[i] = (uint8_t)(i * 7 + (i >> 8));   /* every value, NULs too */
    }
    memset(longname, 'x', HIXL_NOTIFY_NAME_MAX);
    longname[HIXL_NOTIFY_NAME_MAX] = '\0';

    e = it_setup(_i, &t, 4096, "::1");
    nd.name = longname; nd.msg = big; nd.msg_len = max;
    hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));
    nd.name = "empty"; nd.msg = NULL; nd.msg_len = 0;
    hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));
    nd.name = ""; nd.msg = "x"; nd.msg_len = 1;
    hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));

    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, 3);
    ck_assert_str_eq(got[0].name, longname);
    ck_assert_uint_eq(got[0].msg_len, max);
    ck_assert_mem_eq(got[0].msg, big, max);
    ck_assert_str_eq(got[1].name, "empty");
    ck_assert_uint_eq(got[1].msg_len, 0);
    ck_assert_str_eq(got[2].name, "");
    ck_assert_uint_eq(got[2].msg_len, 1);
    for (i = 0; i < 3; ++i) {
        ck_assert_str_eq(got[i].remote, "[::1]");
        ck_assert_msg(got[i].verified == 0, "%s", got[i].note);
    }
    hx_notifies_free(got, count);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    free(big);
}
END_TEST

/* Notifies this process took, wherever it took them: while waiting for the
 * target (idle, which keeps an engine without a progress thread going so it
 * can acknowledge the target's notifies) or in the test itself. */
typedef struct it_inbox {
    hixl_engine_t *e;
    hixl_notify_t *n[64];
    size_t         count[64];
    size_t         batches;
    size_t         total;
} it_inbox_t;

static void it_inbox_take(void *arg)
{
    it_inbox_t *in = arg;
    hixl_notify_t *n = NULL;
    size_t count = 0;

    if ((hixl_get_notifies(in->e, &n, &count) != HIXL_SUCCESS) ||
        (count == 0)) {
        return;
    }
    if (in->batches == 64) {
        hixl_release_notifies(n, count);   /* more than expected: lost */
        in->total += count;
        return;
    }
    in->n[in->batches]     = n;
    in->count[in->batches] = count;
    in->batches++;
    in->total += count;
}

/*
 * The target notifies the engine that connected to it (hixl.h: B "may send
 * notifies back to A"), here the reverse of the data direction.
 */
START_TEST(test_back_to_initiator)
{
    enum { N = 50 };
    hixl_status_t st;
    hx_target_t t;
    it_inbox_t in;
    uint8_t buf[512];
    char name[32], err[512];
    size_t i, b, got = 0, len;
    int spins;

    memset(&in, 0, sizeof(in));
    in.e = it_setup(_i, &t, 4096, "127.0.0.1");
    hx_target_set_idle(it_inbox_take, &in);
    for (i = 0; i < N; ++i) {
        snprintf(name, sizeof(name), "back.%zu", i);
        len = it_msg(i, buf);
        /* the target knows us by our (client-only) engine name */
        st = hx_target_send_notify(&t, "127.0.0.1", name, buf, len, err,
                                   sizeof(err));
        ck_assert_msg(st == HIXL_SUCCESS, "target's notify %zu [%s]: %s: %s",
                      i, hx_tls_label(), hixl_strerror(st), err);
    }
    hx_target_set_idle(NULL, NULL);
    /* each was queued here before the target's send returned */
    for (spins = 0; (in.total < N) && (spins < 1000); ++spins) {
        it_inbox_take(&in);
    }
    ck_assert_uint_eq(in.total, N);
    for (b = 0; b < in.batches; ++b) {
        for (i = 0; i < in.count[b]; ++i, ++got) {
            const hixl_notify_t *n = &in.n[b][i];

            snprintf(name, sizeof(name), "back.%zu", got);
            ck_assert_str_eq(n->name, name);
            ck_assert_str_eq(n->remote, t.name);
            len = it_msg(got, buf);
            ck_assert_uint_eq(n->msg_len, len);
            ck_assert_mem_eq(n->msg, buf, len);
            ck_assert_int_eq(((const char*)n->msg)[len], '\0');
        }
        hixl_release_notifies(in.n[b], in.count[b]);
    }
    ck_assert_uint_eq(got, N);

    /* nothing left, and an empty take says so with NULL */
    {
        hixl_notify_t *n = (hixl_notify_t*)&in;
        size_t count = 99;

        hx_ok(hixl_get_notifies(in.e, &n, &count));
        ck_assert_uint_eq(count, 0);
        ck_assert_ptr_null(n);
    }

    hx_ok(hixl_finalize(in.e));
    hx_target_stop(&t);
}
END_TEST

/*
 * Per-transfer notifies: 8 async WRITEs of 4 MiB, each carrying a notify
 * that describes its bytes; the target checks them the moment each notify
 * is taken from hixl_get_notifies().  Then a plain notify sent after the
 * transfers completed arrives after all of theirs.
 */
START_TEST(test_transfer_notify)
{
    enum { NX = 8 };
    const size_t piece = 4 * HX_MIB + 3;
    const size_t region = NX * piece;
    hixl_transfer_op_desc_t d[NX];
    hixl_transfer_args_t args[NX];
    hx_verify_spec_t spec[NX];
    hixl_req_t req[NX];
    hixl_transfer_status_t ts;
    hixl_notify_desc_t nd;
    hixl_status_t st;
    hx_notify_t *got;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t k, count, seen;

    local = hx_alloc_pages(region);
    e     = it_setup(_i, &t, region, "127.0.0.1");
    hx_register(e, local, region);
    hx_pat_fill(local, region, 4242, 0);

    /* the target spins on hixl_get_notifies from now on */
    hx_target_watch_begin(&t, NX, HX_REPLY_TIMEOUT_MS - 10000);
    for (k = 0; k < NX; ++k) {
        d[k].local_addr  = (uintptr_t)(local + k * piece);
        d[k].remote_addr = t.addr[0] + k * piece;
        d[k].len         = piece;
        memset(&spec[k], 0, sizeof(spec[k]));
        spec[k].region = 0;
        spec[k].off    = k * piece;
        spec[k].len    = piece;
        spec[k].seed   = 4242;
        spec[k].idx    = k * piece;
        memset(&args[k], 0, sizeof(args[k]));
        args[k].field_mask     = HIXL_TRANSFER_ARG_NOTIFY;
        args[k].notify.name    = HX_VERIFY_NOTIFY;
        args[k].notify.msg     = &spec[k];
        args[k].notify.msg_len = sizeof(spec[k]);
        st = hixl_transfer_async(e, t.name, HIXL_WRITE, &d[k], 1, &args[k],
                                 &req[k]);
        ck_assert_msg(st == HIXL_SUCCESS, "post %zu [%s]: %s: %s", k,
                      hx_tls_label(), hixl_strerror(st), hixl_last_error());
        /* the library copies the notify: scribble on ours */
        memset(&spec[k], 0xee, sizeof(spec[k]));
    }
    for (k = 0; k < NX; ++k) {
        ts = hx_wait_req(e, req[k], &st);
        ck_assert_msg((st == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_COMPLETED),
                      "transfer %zu with notify [%s]: status %d, %s: %s", k,
                      hx_tls_label(), (int)ts, hixl_strerror(st),
                      hixl_last_error());
    }
    seen = hx_target_watch_end(&t);
    ck_assert_uint_eq(seen, NX);

    nd.name    = "after";
    nd.msg     = "z";
    nd.msg_len = 1;
    hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));

    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, NX + 1);
    for (k = 0; k < NX; ++k) {
        ck_assert_str_eq(got[k].name, HX_VERIFY_NOTIFY);
        ck_assert_str_eq(got[k].remote, "127.0.0.1");
        ck_assert_msg(got[k].verified == 1, "per-transfer notify %zu [%s]: "
                      "%s", k, hx_tls_label(), got[k].note ? got[k].note :
                      "not checked");
    }
    ck_assert_str_eq(got[NX].name, "after");
    hx_notifies_free(got, count);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, region);
}
END_TEST

/*
 * "The request completes once the remote has queued it": right after a
 * request with a notify reports COMPLETED, the target's very next
 * hixl_get_notifies() has it.  Repeated, with READs as well as WRITEs.
 */
START_TEST(test_transfer_notify_queued_at_completion)
{
    const size_t len = 100000;
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t req;
    hx_notify_t *got;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    char name[32];
    size_t count;
    int k;

    local = hx_alloc_pages(len);
    e     = it_setup(_i, &t, len, "127.0.0.1");
    hx_register(e, local, len);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = len;

    for (k = 0; k < 20; ++k) {
        snprintf(name, sizeof(name), "done.%d", k);
        memset(&args, 0, sizeof(args));
        args.field_mask     = HIXL_TRANSFER_ARG_NOTIFY |
                              HIXL_TRANSFER_ARG_TIMEOUT;
        args.timeout_ms     = HX_OP_TIMEOUT_MS;
        args.notify.name    = name;
        args.notify.msg     = name;
        args.notify.msg_len = strlen(name);
        st = hixl_transfer_async(e, t.name, (k & 1) ? HIXL_READ : HIXL_WRITE,
                                 &d, 1, &args, &req);
        ck_assert_msg(st == HIXL_SUCCESS, "[%s] %s: %s", hx_tls_label(),
                      hixl_strerror(st), hixl_last_error());
        ts = hx_wait_req(e, req, &st);
        ck_assert_msg((st == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_COMPLETED),
                      "[%s] status %d, %s: %s", hx_tls_label(), (int)ts,
                      hixl_strerror(st), hixl_last_error());
        got = hx_target_notifies(&t, &count);
        ck_assert_msg(count == 1, "after request %d completed the target "
                      "holds %zu notifies [%s]", k, count, hx_tls_label());
        ck_assert_str_eq(got[0].name, name);
        ck_assert_uint_eq(got[0].msg_len, strlen(name));
        ck_assert_mem_eq(got[0].msg, name, strlen(name));
        hx_notifies_free(got, count);
    }

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, len);
}
END_TEST

static Suite *it_notify_suite(void)
{
    Suite *s = suite_create("it_notify");
    TCase *tc;

    tc = hx_tcase("order");
    tcase_add_loop_test(tc, test_order, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("limits");
    tcase_add_loop_test(tc, test_limits, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("back_to_initiator");
    tcase_add_loop_test(tc, test_back_to_initiator, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("transfer_notify");
    tcase_add_loop_test(tc, test_transfer_notify, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("transfer_notify_queued");
    tcase_add_loop_test(tc, test_transfer_notify_queued_at_completion, 0,
                        IT_NMODES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_notify_suite());
}
