/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input and refused operations that involve a peer: descriptors outside
 * or across registered regions on either side, request handles used twice
 * or on the wrong engine, connecting twice, notifies too large or into a
 * full queue, transfers the wrong way round.
 *
 * Each refusal: the expected status, a message of its own naming what was
 * wrong, and nothing moved (the target's memory is verified unchanged after
 * every refused batch).
 *
 * Transport: tcp.  These tests are about refusals, not transports, and tcp
 * keeps them deterministic.
 */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TGT_SEED 0xbadu
#define REGION   (64 * 1024)

static hixl_engine_t *bad_setup(hx_target_t *t, hx_target_cfg_t *cfg)
{
    hixl_engine_t *e;

    hx_use_tls(0);
    hx_target_start(t, cfg);
    e = hx_engine("127.0.0.1", NULL);
    hx_connect(e, t->name);
    return e;
}

static hixl_engine_t *bad_setup_default(hx_target_t *t)
{
    hx_target_cfg_t cfg;

    hx_target_cfg_init(&cfg, REGION);
    cfg.init_seed = TGT_SEED;
    return bad_setup(t, &cfg);
}

/* ---- descriptors ------------------------------------------------------------ */

typedef struct bad_case {
    const char *what;
    int         local;      /* 1: the local side is bad, 0: the remote */
    int         absolute;   /* off is an address, not region-relative */
    int64_t     off;        /* start relative to the region */
    uint64_t    len;
    const char *needle;     /* in the message besides "descriptor 3" */
} bad_case_t;

/*
 * A batch of 5 whose descriptor 3 is bad, for every way of being bad, both
 * ops, sync and async: PARAM_INVALID naming descriptor 3 (and the side),
 * and descriptors 0..2 were not posted either ("Every descriptor is checked
 * before anything is posted").
 */
START_TEST(test_bad_descriptor)
{
    /* A length too large for the remote region is also too large for the
     * local one, and the local side is checked first: remote overflow is
     * reached through an address near the top instead. */
    static const bad_case_t cases[] = {
        {"local before the region", 1, 0, -100, 10, "local"},
        {"local straddles the start", 1, 0, -1, 10, "local"},
        {"local straddles the end", 1, 0, REGION - 5, 10, "local"},
        {"local one past the end", 1, 0, REGION, 1, "local"},
        {"local far away", 1, 0, 1 << 30, 10, "local"},
        {"local addr+len overflows", 1, 0, 10, UINT64_MAX - 5, "overflow"},
        {"local len huge", 1, 0, 0, UINT64_MAX, "local"},
        {"local at the top wraps", 1, 1, -6, 10, "overflow"},
        {"remote before the region", 0, 0, -100, 10, "remote"},
        {"remote straddles the start", 0, 0, -1, 10, "remote"},
        {"remote straddles the end", 0, 0, REGION - 5, 10, "remote"},
        {"remote one past the end", 0, 0, REGION, 1, "remote"},
        {"remote far away", 0, 0, 1 << 30, 10, "remote"},
        {"remote at the top wraps", 0, 1, -6, 10, "overflow"},
        {"remote at address 0", 0, 1, 0, 10, "remote"},
    };
    hixl_transfer_op_desc_t d[5];
    hixl_req_t req;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *map, *local;
    size_t c, k;
    int op, async;
    char needle[] = "descriptor 3";

    /* guard pages around the local region: nothing may touch them */
    map   = hx_alloc_pages(REGION + 2 * 65536);
    local = map + 65536;
    e     = bad_setup_default(&t);
    hx_register(e, local, REGION);
    hx_pat_fill(local, REGION, 1, 0);

    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
        for (op = 0; op < 2; ++op) {
            for (async = 0; async < 2; ++async) {
                hixl_status_t st;

                for (k = 0; k < 5; ++k) {
                    d[k].local_addr  = (uintptr_t)(local + k * 1000);
                    d[k].remote_addr = t.addr[0] + k * 1000;
                    d[k].len         = 1000;
                }
                if (cases[c].absolute) {
                    /* -6: six bytes below the top of the address space */
                    if (cases[c].local) {
                        d[3].local_addr = (uintptr_t)cases[c].off;
                    } else {
                        d[3].remote_addr = (uint64_t)cases[c].off;
                    }
                } else if (cases[c].local) {
                    d[3].local_addr = (uintptr_t)(local + cases[c].off);
                } else {
                    d[3].remote_addr = t.addr[0] + (uint64_t)cases[c].off;
                }
                d[3].len = cases[c].len;

                hx_mark_last_error();
                req = NULL;
                st = async ? hixl_transfer_async(e, t.name,
                                                 (hixl_transfer_op_t)op, d, 5,
                                                 NULL, &req)
                           : hixl_transfer_sync(e, t.name,
                                                (hixl_transfer_op_t)op, d, 5,
                                                HX_OP_TIMEOUT_MS);
                ck_assert_msg(st == HIXL_PARAM_INVALID, "%s (%s, %s): %s: %s",
                              cases[c].what, op ? "WRITE" : "READ",
                              async ? "async" : "sync", hixl_strerror(st),
                              hixl_last_error());
                ck_assert_msg(strstr(hixl_last_error(), needle) &&
                              strstr(hixl_last_error(), cases[c].needle),
                              "%s: message \"%s\" should name \"%s\" and "
                              "\"%s\"", cases[c].what, hixl_last_error(),
                              needle, cases[c].needle);
                ck_assert_ptr_null(req);
            }
        }
        /* nothing of the good descriptors moved either way */
        hx_target_verify(&t, 0, 0, REGION, TGT_SEED, 0);
        hx_pat_assert(local, REGION, 1, 0, cases[c].what);
    }

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(map, REGION + 2 * 65536);
}
END_TEST

/*
 * A remote range across two adjacent regions is refused: a descriptor
 * must lie inside ONE region (each has its own key).  Likewise locally.
 */
START_TEST(test_descriptor_spans_two_regions)
{
    hixl_transfer_op_desc_t d;
    hx_target_cfg_t cfg;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int r1;

    hx_target_cfg_init(&cfg, REGION);
    cfg.init_seed = TGT_SEED;
    e = bad_setup(&t, &cfg);
    /* the target's second region right behind the first, if the kernel
     * places it there; otherwise the range is simply outside */
    r1 = hx_target_register(&t, REGION, 0);
    local = hx_alloc_pages(2 * REGION);
    hx_register(e, local, REGION);
    hx_register(e, local + REGION, REGION);

    d.local_addr  = (uintptr_t)(local + 100);
    d.remote_addr = t.addr[0] + REGION - 10;
    d.len         = 20;
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 0");
    d.remote_addr = t.addr[r1] - 10;
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 0");
    /* local: two regions registered back to back */
    d.local_addr  = (uintptr_t)(local + REGION - 10);
    d.remote_addr = t.addr[0];
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_READ, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "local");
    hx_target_verify(&t, 0, 0, REGION, TGT_SEED, 0);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, 2 * REGION);
}
END_TEST

/* ---- requests ----------------------------------------------------------------- */

/*
 * A request handle is good for one report: after COMPLETED it is
 * PARAM_INVALID; another engine's handle is PARAM_INVALID and asking the
 * wrong engine does not release it.
 */
START_TEST(test_request_handles)
{
    hixl_transfer_op_desc_t d;
    hixl_transfer_status_t ts;
    hixl_req_t req, req2;
    hx_target_t t;
    hixl_engine_t *e, *e2;
    uint8_t *local;

    local = hx_alloc_pages(REGION);
    e     = bad_setup_default(&t);
    e2    = hx_engine("::1", NULL);   /* a second, unconnected engine */
    hx_register(e, local, REGION);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = REGION;

    hx_ok(hixl_transfer_async(e, t.name, HIXL_READ, &d, 1, NULL, &req));
    /* the wrong engine refuses it and leaves it alone */
    hx_expect(hixl_get_transfer_status(e2, req, &ts), HIXL_PARAM_INVALID,
              NULL);
    ck_assert_int_eq(hx_wait_req(e, req, NULL), HIXL_TRANSFER_COMPLETED);
    /* reported: released */
    hx_expect(hixl_get_transfer_status(e, req, &ts), HIXL_PARAM_INVALID,
              NULL);
    hx_expect(hixl_get_transfer_status(e, req, &ts), HIXL_PARAM_INVALID,
              NULL);

    /* the next request probably reuses the slot; the old handle must still
     * be refused, and must not report the new request */
    hx_ok(hixl_transfer_async(e, t.name, HIXL_READ, &d, 1, NULL, &req2));
    ck_assert_ptr_ne(req, req2);
    hx_expect(hixl_get_transfer_status(e, req, &ts), HIXL_PARAM_INVALID,
              NULL);
    ck_assert_int_eq(hx_wait_req(e, req2, NULL), HIXL_TRANSFER_COMPLETED);

    hx_ok(hixl_finalize(e2));
    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, REGION);
}
END_TEST

/* hixl.MaxRequests bounds the requests not yet reported: one more is
 * RESOURCE_EXHAUSTED, and reporting one makes room. */
START_TEST(test_max_requests)
{
    hixl_transfer_op_desc_t d;
    hixl_req_t req[3];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;

    hx_use_tls(0);
    {
        hx_target_cfg_t cfg;

        hx_target_cfg_init(&cfg, REGION);
        hx_target_start(&t, &cfg);
    }
    e = hx_engine("127.0.0.1", "hixl.MaxRequests", "2", NULL);
    hx_connect(e, t.name);
    local = hx_alloc_pages(REGION);
    hx_register(e, local, REGION);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = 1000;

    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, NULL, &req[0]));
    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, NULL, &req[1]));
    hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, NULL, &req[2]),
              HIXL_RESOURCE_EXHAUSTED, "MaxRequests");
    /* a sync transfer needs a request too */
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_RESOURCE_EXHAUSTED, "MaxRequests");
    ck_assert_int_eq(hx_wait_req(e, req[0], NULL), HIXL_TRANSFER_COMPLETED);
    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, NULL, &req[2]));
    ck_assert_int_eq(hx_wait_req(e, req[1], NULL), HIXL_TRANSFER_COMPLETED);
    ck_assert_int_eq(hx_wait_req(e, req[2], NULL), HIXL_TRANSFER_COMPLETED);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, REGION);
}
END_TEST

/* Non-positive timeouts are PARAM_INVALID everywhere they are given; a
 * timeout_ms whose bit is not set in field_mask is not looked at. */
START_TEST(test_nonpositive_timeouts)
{
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_notify_desc_t nd = {"n", "m", 1};
    hixl_req_t req = NULL;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;

    local = hx_alloc_pages(REGION);
    e     = bad_setup_default(&t);
    hx_register(e, local, REGION);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = 100;

    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1, 0),
              HIXL_PARAM_INVALID, "timeout");
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_READ, &d, 1, -1),
              HIXL_PARAM_INVALID, "timeout");
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_READ, &d, 1, INT32_MIN),
              HIXL_PARAM_INVALID, "timeout");
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = 0;
    hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, "timeout");
    args.timeout_ms = -1;
    hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, "timeout");
    ck_assert_ptr_null(req);
    hx_expect(hixl_send_notify(e, t.name, &nd, 0), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_disconnect(e, t.name, 0), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_disconnect(e, t.name, -5), HIXL_PARAM_INVALID, NULL);
    hx_target_verify(&t, 0, 0, REGION, TGT_SEED, 0);

    /* the bit not set: timeout_ms is ignored */
    args.field_mask = 0;
    args.timeout_ms = -1;
    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req));
    ck_assert_int_eq(hx_wait_req(e, req, NULL), HIXL_TRANSFER_COMPLETED);
    /* and still connected after all the refusals */
    hx_ok(hixl_disconnect(e, t.name, HX_OP_TIMEOUT_MS));

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, REGION);
}
END_TEST

/* ---- connections ---------------------------------------------------------------- */

/* A second connect to the same engine, however it is spelled, is
 * ALREADY_CONNECTED and leaves the first connection working. */
START_TEST(test_connect_twice)
{
    hixl_transfer_op_desc_t d;
    hx_target_cfg_t cfg;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    char alias[128];
    const char *port;

    hx_target_cfg_init(&cfg, REGION);
    cfg.name = "[::1]:0";
    e = bad_setup(&t, &cfg);
    hx_expect(hixl_connect(e, t.name, HX_OP_TIMEOUT_MS),
              HIXL_ALREADY_CONNECTED, NULL);
    /* "[0:0::1]:port" is the same engine as "[::1]:port" */
    port = strrchr(t.name, ':');
    ck_assert_ptr_nonnull(port);
    snprintf(alias, sizeof(alias), "[0:0::1]%s", port);
    hx_expect(hixl_connect(e, alias, HX_OP_TIMEOUT_MS),
              HIXL_ALREADY_CONNECTED, NULL);

    local = hx_alloc_pages(REGION);
    hx_register(e, local, REGION);
    hx_pat_fill(local, REGION, 3, 0);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = REGION;
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 0);
    hx_target_verify(&t, 0, 0, REGION, 3, 0);
    /* the other spelling names the same peer in every call */
    hx_pat_fill(local, REGION, 4, 0);
    hx_transfer(e, alias, HIXL_WRITE, &d, 1, 1);
    hx_target_verify(&t, 0, 0, REGION, 4, 0);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, REGION);
}
END_TEST

/* Two engines with the same name at one target: the second is refused
 * (engine names must be unique among engines that talk to each other),
 * with FAILED and when to retry: ALREADY_CONNECTED means "this engine is
 * connected already", which the second one is not. */
START_TEST(test_duplicate_engine_name)
{
    hx_target_t t;
    hixl_engine_t *e, *e2;

    e  = bad_setup_default(&t);
    e2 = hx_engine("127.0.0.1", NULL);
    hx_expect(hixl_connect(e2, t.name, HX_OP_TIMEOUT_MS), HIXL_FAILED,
              "engine names must be unique");
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), "retry after"));
    /* the hint for client-only engines, whole */
    ck_assert_msg(strstr(hixl_last_error(), "(\"ip:0\", "
                         "hixl.ListenEphemeral=1)") != NULL, "%s",
                  hixl_last_error());
    /* after the first one leaves, the name is free again */
    hx_ok(hixl_finalize(e));
    {
        hixl_status_t st = HIXL_FAILED;
        int tries;

        /* the target learns of the departure asynchronously */
        for (tries = 0; tries < 200; ++tries) {
            st = hixl_connect(e2, t.name, HX_OP_TIMEOUT_MS);
            if (st == HIXL_SUCCESS) {
                break;
            }
            ck_assert_msg(st == HIXL_FAILED, "%s: %s",
                          hixl_strerror(st), hixl_last_error());
            usleep(10000);
        }
        ck_assert_msg(st == HIXL_SUCCESS, "the name stayed taken: %s",
                      hixl_last_error());
    }
    hx_ok(hixl_finalize(e2));
    hx_target_stop(&t);
}
END_TEST

/*
 * Direction: after B connects to A, A may notify B but not transfer to B
 * (it must connect itself, and B is client-only so it cannot).  Two engines
 * in this process.
 */
START_TEST(test_wrong_direction)
{
    hixl_transfer_op_desc_t d;
    hixl_notify_desc_t nd = {"hello", "x", 1};
    hixl_engine_t *a, *b;
    hixl_notify_t *n = NULL;
    uint8_t *mem;
    size_t count = 0;
    int spins;

    hx_use_tls(0);
    a = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    b = hx_engine("127.0.0.1", NULL);
    mem = hx_alloc_pages(2 * REGION);
    hx_register(a, mem, REGION);
    hx_register(b, mem + REGION, REGION);
    hx_ok(hixl_connect(b, hixl_engine_name(a), HX_OP_TIMEOUT_MS));

    d.local_addr  = (uintptr_t)mem;
    d.remote_addr = (uintptr_t)(mem + REGION);
    d.len         = 10;
    hx_expect(hixl_transfer_sync(a, hixl_engine_name(b), HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_NOT_CONNECTED, "127.0.0.1");
    hx_expect(hixl_connect(a, hixl_engine_name(b), HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "client-only");
    /* notifies go both ways */
    hx_ok(hixl_send_notify(a, hixl_engine_name(b), &nd, HX_OP_TIMEOUT_MS));
    for (spins = 0; (count == 0) && (spins < 100000); ++spins) {
        hx_ok(hixl_get_notifies(b, &n, &count));
    }
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(n[0].remote, hixl_engine_name(a));
    ck_assert_str_eq(n[0].name, "hello");
    hixl_release_notifies(n, count);
    /* b's transfer to a works */
    d.local_addr  = (uintptr_t)(mem + REGION);
    d.remote_addr = (uintptr_t)mem;
    hx_transfer(b, hixl_engine_name(a), HIXL_WRITE, &d, 1, 0);

    hx_ok(hixl_finalize(b));
    hx_ok(hixl_finalize(a));
    hx_free_pages(mem, 2 * REGION);
}
END_TEST

/* ---- notifies ------------------------------------------------------------------- */

/* Too large for the sender's limit, or for the receiver's: PARAM_INVALID,
 * and the receiver holds nothing. */
START_TEST(test_notify_oversize)
{
    hixl_notify_desc_t nd;
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_req_t req = NULL;
    hx_target_cfg_t cfg;
    hx_notify_t *got;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local, buf[64];
    size_t count;

    hx_target_cfg_init(&cfg, REGION);
    hx_target_cfg_opt(&cfg, "hixl.MaxNotifySize", "16");
    e = bad_setup(&t, &cfg);
    memset(buf, 0xab, sizeof(buf));

    nd.name = "big"; nd.msg = buf; nd.msg_len = 17;   /* target takes 16 */
    hx_expect(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, t.name);
    nd.msg_len = 16;
    hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));
    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, 1);
    ck_assert_uint_eq(got[0].msg_len, 16);
    hx_notifies_free(got, count);

    /* per-transfer notify arguments are checked before posting */
    local = hx_alloc_pages(REGION);
    hx_register(e, local, REGION);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = 100;
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_NOTIFY;
    args.notify.name = NULL;
    hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, "name");
    {
        char longname[HIXL_NOTIFY_NAME_MAX + 2];

        memset(longname, 'q', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        args.notify.name = longname;
        hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args,
                                      &req), HIXL_PARAM_INVALID, "1025");
    }
    args.notify.name    = "n";
    args.notify.msg     = NULL;
    args.notify.msg_len = 4;
    hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, NULL);
    args.notify.msg     = malloc(65537);
    args.notify.msg_len = 65537;   /* over our own hixl.MaxNotifySize */
    hx_expect(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, "MaxNotifySize");
    free((void*)args.notify.msg);
    ck_assert_ptr_null(req);
    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, 0);
    hx_notifies_free(got, count);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, REGION);
}
END_TEST

/*
 * A full notify queue (hixl.NotifyQueueDepth=4 on a target that does not
 * take its notifies): the fifth is RESOURCE_EXHAUSTED; a transfer's notify
 * into the full queue fails its request though its data landed; once the
 * target takes them, there is room again.
 */
START_TEST(test_notify_queue_full)
{
    hixl_notify_desc_t nd;
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t req;
    hx_target_cfg_t cfg;
    hx_notify_t *got;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    char name[16];
    size_t count, i;

    hx_target_cfg_init(&cfg, REGION);
    cfg.init_seed = TGT_SEED;
    cfg.no_drain  = 1;
    hx_target_cfg_opt(&cfg, "hixl.NotifyQueueDepth", "4");
    e = bad_setup(&t, &cfg);
    local = hx_alloc_pages(REGION);
    hx_register(e, local, REGION);
    hx_pat_fill(local, REGION, 5, 0);

    for (i = 0; i < 4; ++i) {
        snprintf(name, sizeof(name), "q%zu", i);
        nd.name = name; nd.msg = name; nd.msg_len = strlen(name);
        hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));
    }
    nd.name = "q4"; nd.msg = "q4"; nd.msg_len = 2;
    hx_expect(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS),
              HIXL_RESOURCE_EXHAUSTED, "full");

    /* a transfer with a notify: data lands, the notify is refused */
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = REGION;
    memset(&args, 0, sizeof(args));
    args.field_mask     = HIXL_TRANSFER_ARG_NOTIFY;
    args.notify.name    = "xfer";
    args.notify.msg     = NULL;
    args.notify.msg_len = 0;
    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req));
    /* the status call succeeds and reports FAILED, "the reason ... in
     * hixl_last_error()" */
    hx_mark_last_error();
    ts = hx_wait_req(e, req, &st);
    ck_assert_msg((st == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_FAILED),
                  "transfer whose notify found a full queue: status %d (%s): "
                  "%s", (int)ts, hixl_strerror(st), hixl_last_error());
    ck_assert_msg(strstr(hixl_last_error(), "HIXL_RESOURCE_EXHAUSTED") &&
                  strstr(hixl_last_error(), "notify"), "reason: \"%s\"",
                  hixl_last_error());
    hx_target_verify(&t, 0, 0, REGION, 5, 0);

    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, 4);
    for (i = 0; i < 4; ++i) {
        snprintf(name, sizeof(name), "q%zu", i);
        ck_assert_str_eq(got[i].name, name);
    }
    hx_notifies_free(got, count);
    /* room again */
    hx_ok(hixl_send_notify(e, t.name, &nd, HX_OP_TIMEOUT_MS));
    got = hx_target_notifies(&t, &count);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(got[0].name, "q4");
    hx_notifies_free(got, count);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, REGION);
}
END_TEST

static Suite *bad_remote_suite(void)
{
    Suite *s = suite_create("bad_remote");
    TCase *tc;

    tc = hx_tcase("descriptors");
    tcase_add_test(tc, test_bad_descriptor);
    tcase_add_test(tc, test_descriptor_spans_two_regions);
    suite_add_tcase(s, tc);

    tc = hx_tcase("requests");
    tcase_add_test(tc, test_request_handles);
    tcase_add_test(tc, test_max_requests);
    tcase_add_test(tc, test_nonpositive_timeouts);
    suite_add_tcase(s, tc);

    tc = hx_tcase("connections");
    tcase_add_test(tc, test_connect_twice);
    tcase_add_test(tc, test_duplicate_engine_name);
    tcase_add_test(tc, test_wrong_direction);
    suite_add_tcase(s, tc);

    tc = hx_tcase("notifies");
    tcase_add_test(tc, test_notify_oversize);
    tcase_add_test(tc, test_notify_queue_full);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(bad_remote_suite());
}
