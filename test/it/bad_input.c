/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input that needs no peer: every public call with NULL, empty and
 * out-of-range arguments, bad options at initialize, refused
 * registrations, stale and foreign handles, and connects that cannot work.
 *
 * Every refusal is checked for its status and for a message of its own in
 * hixl_last_error() (hx_expect puts a known text there first, so a call
 * that fails without writing one is caught), never a crash.
 */
#include "config.h"
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A client-only engine over tcp: enough for everything here. */
static hixl_engine_t *bad_engine(void)
{
    hx_use_tls(0);
    return hx_engine("127.0.0.1", NULL);
}

/* ---- initialize / finalize / names --------------------------------------- */

START_TEST(test_initialize_args)
{
    hixl_option_t opt[2];
    hixl_engine_t *const mark = (hixl_engine_t*)&opt;
    hixl_engine_t *e = mark;   /* a failed call leaves it as it was */

    hx_use_tls(0);
    hx_expect(hixl_initialize(NULL, NULL, 0, &e), HIXL_PARAM_INVALID, NULL);
    ck_assert_ptr_eq(e, mark);
    hx_expect(hixl_initialize("", NULL, 0, &e), HIXL_PARAM_INVALID, NULL);
    ck_assert_ptr_eq(e, mark);
    hx_expect(hixl_initialize("127.0.0.1", NULL, 0, NULL), HIXL_PARAM_INVALID,
              "engine_p");
    hx_expect(hixl_initialize("127.0.0.1", NULL, 2, &e), HIXL_PARAM_INVALID,
              NULL);
    ck_assert_ptr_eq(e, mark);
    opt[0].key = NULL; opt[0].value = "1";
    hx_expect(hixl_initialize("127.0.0.1", opt, 1, &e), HIXL_PARAM_INVALID,
              NULL);
    opt[0].key = "hixl.LogLevel"; opt[0].value = NULL;
    hx_expect(hixl_initialize("127.0.0.1", opt, 1, &e), HIXL_PARAM_INVALID,
              NULL);
    /* names: not numeric, hostnames, bad ports, too long */
    hx_expect(hixl_initialize("localhost", NULL, 0, &e), HIXL_PARAM_INVALID,
              "localhost");
    hx_expect(hixl_initialize("localhost:5000", NULL, 0, &e),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_initialize("127.0.0.1:65536", NULL, 0, &e),
              HIXL_PARAM_INVALID, "port");
    hx_expect(hixl_initialize("127.0.0.1:-1", NULL, 0, &e),
              HIXL_PARAM_INVALID, "port");
    hx_expect(hixl_initialize("[::1", NULL, 0, &e), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_initialize("1.2.3.4.5", NULL, 0, &e), HIXL_PARAM_INVALID,
              NULL);
    {
        char longname[300];

        memset(longname, '1', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        hx_expect(hixl_initialize(longname, NULL, 0, &e), HIXL_PARAM_INVALID,
                  NULL);
    }
    ck_assert_ptr_eq(e, mark);

    hx_expect(hixl_finalize(NULL), HIXL_PARAM_INVALID, NULL);
    ck_assert_str_eq(hixl_engine_name(NULL), "");
}
END_TEST

/* hixl_engine_name: the canonical name, with the real port after an
 * ephemeral listen; "ip:0" without hixl.ListenEphemeral is client-only. */
START_TEST(test_engine_names)
{
    hixl_engine_t *e;
    const char *n;

    hx_use_tls(0);
    e = hx_engine("127.0.0.1:0", NULL);
    ck_assert_str_eq(hixl_engine_name(e), "127.0.0.1");
    hx_ok(hixl_finalize(e));
    e = hx_engine("0::1", NULL);
    ck_assert_str_eq(hixl_engine_name(e), "[::1]");
    hx_ok(hixl_finalize(e));
    e = hx_engine("[0:0::1]:0", "hixl.ListenEphemeral", "1", NULL);
    n = hixl_engine_name(e);
    ck_assert_msg(!strncmp(n, "[::1]:", 6) && (atoi(n + 6) > 0) &&
                  (atoi(n + 6) < 65536), "ephemeral name \"%s\"", n);
    hx_ok(hixl_finalize(e));
    e = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    n = hixl_engine_name(e);
    ck_assert_msg(!strncmp(n, "127.0.0.1:", 10) && (atoi(n + 10) > 0),
                  "ephemeral name \"%s\"", n);
    hx_ok(hixl_finalize(e));
}
END_TEST

/* Option table errors reach hixl_initialize as PARAM_INVALID naming the
 * key; hixl.h: "An unknown key or a bad value is PARAM_INVALID". */
START_TEST(test_initialize_options)
{
    static const struct { const char *key, *value, *needle; } bad[] = {
        {"NoSuchOption", "1", "NoSuchOption"},
        {"hixl.progressthread", "1", "hixl.progressthread"},  /* case */
        {"hixl.ProgressThread", "maybe", "hixl.ProgressThread"},
        {"hixl.ProgressThread", "", "hixl.ProgressThread"},
        {"hixl.MaxRequests", "0", "hixl.MaxRequests"},
        {"hixl.MaxRequests", "abc", "hixl.MaxRequests"},
        {"hixl.MaxRequests", "16777217", "hixl.MaxRequests"},
        {"hixl.ConnectTimeoutMs", "0", "hixl.ConnectTimeoutMs"},
        {"hixl.TransferTimeoutMs", "-1", "hixl.TransferTimeoutMs"},
        {"hixl.NotifyQueueDepth", "0", "hixl.NotifyQueueDepth"},
        {"BufferPool", "1:0", "BufferPool"},
        {"BufferPool", "lots", "BufferPool"},
        {"RdmaTrafficClass", "5", "RdmaTrafficClass"},
        {"RdmaServiceLevel", "8", "RdmaServiceLevel"},
        {"hixl.LogLevel", "loud", "hixl.LogLevel"},
    };
    hixl_option_t opt[2];
    hixl_engine_t *e = NULL;
    size_t i;

    hx_use_tls(0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        opt[0].key   = "hixl.ProgressThread";   /* a good one first */
        opt[0].value = "1";
        opt[1].key   = bad[i].key;
        opt[1].value = bad[i].value;
        hx_expect(hixl_initialize("127.0.0.1", opt, 2, &e),
                  HIXL_PARAM_INVALID, bad[i].needle);
        ck_assert_ptr_null(e);
    }

    /* a bad environment twin is refused too, naming the variable */
    ck_assert_int_eq(setenv("HIXL_MAX_REQUESTS", "many", 1), 0);
    hx_expect(hixl_initialize("127.0.0.1", NULL, 0, &e), HIXL_PARAM_INVALID,
              "HIXL_MAX_REQUESTS");
    ck_assert_ptr_null(e);
    ck_assert_int_eq(unsetenv("HIXL_MAX_REQUESTS"), 0);

    /* and good ones work */
    e = hx_engine("127.0.0.1", "hixl.MaxRequests", "4",
                  "hixl.ProgressThread", "off", "BufferPool", "0:0",
                  "hixl.LogLevel", "ERROR", NULL);
    hx_ok(hixl_finalize(e));
}
END_TEST

/* Listening on an address this host does not have, or a port in use. */
START_TEST(test_initialize_cannot_listen)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    hixl_engine_t *e = NULL;
    char name[64];
    int fd;

    hx_use_tls(0);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr*)&sa, &len), 0);
    snprintf(name, sizeof(name), "127.0.0.1:%u", ntohs(sa.sin_port));
    hx_expect(hixl_initialize(name, NULL, 0, &e), HIXL_FAILED, NULL);
    ck_assert_ptr_null(e);
    close(fd);

    /* TEST-NET-1: documentation addresses no host has */
    hx_expect(hixl_initialize("192.0.2.1:4000", NULL, 0, &e), HIXL_FAILED,
              NULL);
    ck_assert_ptr_null(e);
}
END_TEST

/* ---- memory ----------------------------------------------------------------- */

START_TEST(test_register_args)
{
    hixl_engine_t *e = bad_engine();
    uint8_t *p = hx_alloc_pages(65536);
    hixl_mem_desc_t m = {(uintptr_t)p, 65536};
    hixl_mem_handle_t h = NULL;

    hx_expect(hixl_register_mem(NULL, &m, HIXL_MEM_HOST, &h),
              HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_register_mem(e, NULL, HIXL_MEM_HOST, &h),
              HIXL_PARAM_INVALID, "mem");
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, NULL),
              HIXL_PARAM_INVALID, "handle_p");
    m.addr = 0;
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h),
              HIXL_PARAM_INVALID, "address");
    m.addr = (uintptr_t)p;
    m.len  = 0;
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h),
              HIXL_PARAM_INVALID, "length");
    m.len = SIZE_MAX - 10;
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h),
              HIXL_PARAM_INVALID, "wraps");
    m.len = 65536;
    hx_expect(hixl_register_mem(e, &m, (hixl_mem_type_t)7, &h),
              HIXL_PARAM_INVALID, "7");
    hx_expect(hixl_register_mem(e, &m, (hixl_mem_type_t)-1, &h),
              HIXL_PARAM_INVALID, NULL);
    /* DEVICE memory: no plugin here, UNSUPPORTED with a reason */
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_DEVICE, &h),
              HIXL_UNSUPPORTED, "device");
    ck_assert_ptr_null(h);

    hx_expect(hixl_deregister_mem(NULL, h), HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_deregister_mem(e, NULL), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_deregister_mem(e, (hixl_mem_handle_t)(uintptr_t)0x1234567),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_deregister_mem(e, (hixl_mem_handle_t)(uintptr_t)UINT64_MAX),
              HIXL_PARAM_INVALID, NULL);

    /* after all that, the region registers fine */
    h = hx_register(e, p, 65536);
    hx_ok(hixl_deregister_mem(e, h));
    hx_ok(hixl_finalize(e));
    hx_free_pages(p, 65536);
}
END_TEST

START_TEST(test_alloc_args)
{
    hixl_engine_t *e = bad_engine();
    hixl_mem_handle_t h = NULL;
    void *p = NULL;

    hx_expect(hixl_alloc_mem(NULL, 4096, HIXL_MEM_HOST, &p, &h),
              HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_alloc_mem(e, 4096, HIXL_MEM_HOST, NULL, &h),
              HIXL_PARAM_INVALID, "addr_p");
    hx_expect(hixl_alloc_mem(e, 4096, HIXL_MEM_HOST, &p, NULL),
              HIXL_PARAM_INVALID, "handle_p");
    hx_expect(hixl_alloc_mem(e, 0, HIXL_MEM_HOST, &p, &h),
              HIXL_PARAM_INVALID, "length");
    hx_expect(hixl_alloc_mem(e, 4096, (hixl_mem_type_t)7, &p, &h),
              HIXL_PARAM_INVALID, "7");
    /* more than UCX can allocate: refused, not a crash */
    hx_expect(hixl_alloc_mem(e, SIZE_MAX / 2, HIXL_MEM_HOST, &p, &h),
              HIXL_RESOURCE_EXHAUSTED, NULL);
    ck_assert_ptr_null(h);
    /* and a real one, usable and freed by deregistration */
    hx_ok(hixl_alloc_mem(e, 4096, HIXL_MEM_HOST, &p, &h));
    memset(p, 0x5a, 4096);
    hx_ok(hixl_deregister_mem(e, h));
    hx_expect(hixl_deregister_mem(e, h), HIXL_PARAM_INVALID, NULL);
    ck_assert_uint_eq(hixl_engine_progress(NULL), 0);
    ck_assert_str_eq(hixl_engine_name(NULL), "");
    hx_ok(hixl_finalize(e));
}
END_TEST

/* Regions must not overlap (hixl.h); touching is fine; the same region
 * again is its own handle (as in hixl). */
START_TEST(test_register_overlap)
{
    hixl_engine_t *e = bad_engine();
    uint8_t *p = hx_alloc_pages(16 * 4096);
    uint8_t *r = p + 4 * 4096;   /* the region: [r, r + 4 pages) */
    const size_t rl = 4 * 4096;
    hixl_mem_handle_t h, h2, h3;
    hixl_mem_desc_t m;

    h = hx_register(e, r, rl);
    m.addr = (uintptr_t)r;                m.len = rl;
    hx_ok(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h2));
    ck_assert_ptr_eq(h2, h);
    m.addr = (uintptr_t)r;                m.len = rl - 1;   /* not the same */
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h2),
              HIXL_PARAM_INVALID, "overlaps");
    m.addr = (uintptr_t)(r + 100);        m.len = 100;      /* inside */
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h2),
              HIXL_PARAM_INVALID, "overlaps");
    m.addr = (uintptr_t)(r - 10);         m.len = 11;       /* first byte */
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h2),
              HIXL_PARAM_INVALID, "overlaps");
    m.addr = (uintptr_t)(r + rl - 1);     m.len = 10;       /* last byte */
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h2),
              HIXL_PARAM_INVALID, "overlaps");
    m.addr = (uintptr_t)p;                m.len = 16 * 4096; /* around */
    hx_expect(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h2),
              HIXL_PARAM_INVALID, "overlaps");

    /* right before and right after: accepted */
    h2 = hx_register(e, r - 4096, 4096);
    h3 = hx_register(e, r + rl, 4096);
    hx_ok(hixl_deregister_mem(e, h));
    /* the middle is free again */
    h = hx_register(e, r + 1, rl - 2);
    hx_ok(hixl_deregister_mem(e, h));
    hx_ok(hixl_deregister_mem(e, h2));
    hx_ok(hixl_deregister_mem(e, h3));
    hx_ok(hixl_finalize(e));
    hx_free_pages(p, 16 * 4096);
}
END_TEST

/* Deregistered, stale and foreign handles are PARAM_INVALID (hixl.h), and
 * refusing one leaves the valid ones alone. */
START_TEST(test_stale_and_foreign_handles)
{
    enum { N = 100 };
    hixl_engine_t *e = bad_engine();
    hixl_engine_t *e2 = hx_engine("127.0.0.1", NULL);
    uint8_t *p = hx_alloc_pages(N * 4096);
    hixl_mem_handle_t h[N], old, h2;
    uint64_t rng = 1;
    int order[N], i, j, tmp;

    old = hx_register(e, p, 4096);
    hx_ok(hixl_deregister_mem(e, old));
    hx_expect(hixl_deregister_mem(e, old), HIXL_PARAM_INVALID, NULL);
    /* the same memory again: a new handle; the old one stays dead even if
     * the slot is reused */
    h[0] = hx_register(e, p, 4096);
    ck_assert_ptr_ne(h[0], old);
    hx_expect(hixl_deregister_mem(e, old), HIXL_PARAM_INVALID, NULL);

    /* a handle of another engine, even one with the same slot number */
    h2 = hx_register(e2, p, 4096);
    hx_expect(hixl_deregister_mem(e2, h[0]), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_deregister_mem(e, h2), HIXL_PARAM_INVALID, NULL);

    /* many regions (the handle table grows), deregistered in random order,
     * each exactly once */
    for (i = 1; i < N; ++i) {
        h[i] = hx_register(e, p + i * 4096, 4096);
    }
    for (i = 0; i < N; ++i) {
        order[i] = i;
    }
    for (i = N; i > 1; --i) {
        j = (int)(hx_rand(&rng) % (uint64_t)i);
        tmp = order[i - 1]; order[i - 1] = order[j]; order[j] = tmp;
    }
    for (i = 0; i < N; ++i) {
        hx_ok(hixl_deregister_mem(e, h[order[i]]));
        hx_expect(hixl_deregister_mem(e, h[order[i]]), HIXL_PARAM_INVALID,
                  NULL);
    }
    hx_ok(hixl_deregister_mem(e2, h2));
    hx_ok(hixl_finalize(e2));
    hx_ok(hixl_finalize(e));
    hx_free_pages(p, N * 4096);
}
END_TEST

/* ---- connections ------------------------------------------------------------ */

START_TEST(test_connect_args)
{
    hixl_engine_t *e = bad_engine();

    hx_expect(hixl_connect(NULL, "127.0.0.1:9", 1000), HIXL_PARAM_INVALID,
              "engine");
    hx_expect(hixl_connect(e, NULL, 1000), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_connect(e, "", 1000), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_connect(e, "127.0.0.1:9", 0), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_connect(e, "127.0.0.1:9", -1), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_connect(e, "not-an-address:9", 1000), HIXL_PARAM_INVALID,
              NULL);
    hx_expect(hixl_connect(e, "localhost:9", 1000), HIXL_PARAM_INVALID,
              NULL);
    hx_expect(hixl_connect(e, "127.0.0.1:99999", 1000), HIXL_PARAM_INVALID,
              NULL);
    /* a client-only name cannot be connected to */
    hx_expect(hixl_connect(e, "127.0.0.1", 1000), HIXL_PARAM_INVALID,
              "client-only");
    hx_expect(hixl_connect(e, "::1", 1000), HIXL_PARAM_INVALID,
              "client-only");
    hx_expect(hixl_connect(e, "[::1]", 1000), HIXL_PARAM_INVALID,
              "client-only");

    hx_expect(hixl_disconnect(NULL, "127.0.0.1:9", 1000), HIXL_PARAM_INVALID,
              "engine");
    hx_expect(hixl_disconnect(e, NULL, 1000), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_disconnect(e, "", 1000), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_disconnect(e, "127.0.0.1:9", 0), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_disconnect(e, "127.0.0.1:9", 1000), HIXL_NOT_CONNECTED,
              "127.0.0.1:9");
    hx_expect(hixl_disconnect(e, "garbage", 1000), HIXL_NOT_CONNECTED, NULL);
    hx_ok(hixl_finalize(e));
}
END_TEST

/* A port nobody listens on: refused at once (FAILED), or TIMEOUT. */
START_TEST(test_connect_closed_port)
{
    hixl_engine_t *e = bad_engine();
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    hixl_status_t st;
    char name[64];
    int fd;

    /* a port that was free a moment ago */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr*)&sa, &len), 0);
    close(fd);
    snprintf(name, sizeof(name), "127.0.0.1:%u", ntohs(sa.sin_port));

    hx_mark_last_error();
    st = hixl_connect(e, name, 3000);
    ck_assert_msg((st == HIXL_FAILED) || (st == HIXL_TIMEOUT), "connect to a "
                  "closed port: %s: %s", hixl_strerror(st), hixl_last_error());
    ck_assert_str_ne(hixl_last_error(), "");
    ck_assert_str_ne(hixl_last_error(), "stream is NULL");
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), name));
    /* nothing is left half-connected */
    hx_expect(hixl_disconnect(e, name, 1000), HIXL_NOT_CONNECTED, NULL);
    hx_ok(hixl_finalize(e));
}
END_TEST

/* A listener that accepts (the kernel does, from the backlog) but never
 * speaks: TIMEOUT after the connect's timeout, nothing left behind. */
START_TEST(test_connect_silent_listener)
{
    hixl_engine_t *e = bad_engine();
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    char name[64];
    int fd;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(fd, 8), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr*)&sa, &len), 0);
    snprintf(name, sizeof(name), "127.0.0.1:%u", ntohs(sa.sin_port));

    hx_expect(hixl_connect(e, name, 300), HIXL_TIMEOUT, name);
    hx_expect(hixl_disconnect(e, name, 1000), HIXL_NOT_CONNECTED, NULL);
    /* and again: the failed attempt left no "connect in progress" */
    hx_expect(hixl_connect(e, name, 300), HIXL_TIMEOUT, NULL);
    close(fd);
    hx_ok(hixl_finalize(e));
}
END_TEST

typedef struct bad_server {
    int fd;
    const void *reply;
    size_t reply_len;
} bad_server_t;

/* Accept one connection, send the canned reply, keep it open a while. */
static void *bad_server_main(void *arg)
{
    bad_server_t *s = arg;
    int c = accept(s->fd, NULL, NULL);

    if (c >= 0) {
        if (write(c, s->reply, s->reply_len) < 0) {
            /* the test will notice: connect does not fail as expected */
        }
        usleep(500 * 1000);
        close(c);
    }
    return NULL;
}

/* A server that answers the HELLO with garbage: the connection is dropped
 * as malformed, connect FAILED with the reason, no waiting out the timeout
 * (not asserted: tests do not measure time), no crash. */
START_TEST(test_connect_garbage_server)
{
    static const char garbage[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
    hixl_engine_t *e;
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    bad_server_t srv;
    pthread_t th;
    char name[64];

    e = hx_engine("127.0.0.1", "hixl.ProgressThread", (_i == 0) ? "1" : "0",
                  NULL);
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(srv.fd, (struct sockaddr*)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(srv.fd, 8), 0);
    ck_assert_int_eq(getsockname(srv.fd, (struct sockaddr*)&sa, &len), 0);
    snprintf(name, sizeof(name), "127.0.0.1:%u", ntohs(sa.sin_port));
    srv.reply     = garbage;
    srv.reply_len = sizeof(garbage) - 1;
    ck_assert_int_eq(pthread_create(&th, NULL, bad_server_main, &srv), 0);

    hx_expect(hixl_connect(e, name, 20000), HIXL_FAILED,
              "not a hixl engine: it sent \"HTTP\" (0x50545448)");
    pthread_join(th, NULL);
    close(srv.fd);
    hx_ok(hixl_finalize(e));
}
END_TEST

/* ---- transfers, requests, notifies without a peer ------------------------------ */

START_TEST(test_transfer_args)
{
    hixl_engine_t *e = bad_engine();
    uint8_t *p = hx_alloc_pages(4096);
    hixl_transfer_op_desc_t d = {(uintptr_t)p, 0x1000, 16};
    hixl_transfer_args_t args;
    hixl_req_t req = NULL;
    const char *r = "127.0.0.1:9";

    hx_register(e, p, 4096);
    hx_expect(hixl_transfer_sync(NULL, r, HIXL_WRITE, &d, 1, 1000),
              HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_transfer_sync(e, NULL, HIXL_WRITE, &d, 1, 1000),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, "", HIXL_WRITE, &d, 1, 1000),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, r, (hixl_transfer_op_t)2, &d, 1, 1000),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, r, (hixl_transfer_op_t)-1, &d, 1, 1000),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, r, HIXL_WRITE, NULL, 1, 1000),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, r, HIXL_WRITE, &d, 0, 1000),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, r, HIXL_WRITE, &d, 1, 0),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_sync(e, r, HIXL_WRITE, &d, 1, -1),
              HIXL_PARAM_INVALID, NULL);
    /* well-formed, but to nobody */
    hx_expect(hixl_transfer_sync(e, r, HIXL_WRITE, &d, 1, 1000),
              HIXL_NOT_CONNECTED, r);
    hx_expect(hixl_transfer_sync(e, r, HIXL_READ, &d, 1, 1000),
              HIXL_NOT_CONNECTED, r);

    hx_expect(hixl_transfer_async(NULL, r, HIXL_WRITE, &d, 1, NULL, &req),
              HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_transfer_async(e, NULL, HIXL_WRITE, &d, 1, NULL, &req),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_async(e, r, (hixl_transfer_op_t)5, &d, 1, NULL,
                                  &req), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_async(e, r, HIXL_WRITE, NULL, 1, NULL, &req),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_async(e, r, HIXL_WRITE, &d, 0, NULL, &req),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_async(e, r, HIXL_WRITE, &d, 1, NULL, NULL),
              HIXL_PARAM_INVALID, "req_p");
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = 0;
    hx_expect(hixl_transfer_async(e, r, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, "timeout");
    args.timeout_ms = -100;
    hx_expect(hixl_transfer_async(e, r, HIXL_WRITE, &d, 1, &args, &req),
              HIXL_PARAM_INVALID, "timeout");
    hx_expect(hixl_transfer_async(e, r, HIXL_WRITE, &d, 1, NULL, &req),
              HIXL_NOT_CONNECTED, r);
    ck_assert_ptr_null(req);

    hx_ok(hixl_finalize(e));
    hx_free_pages(p, 4096);
}
END_TEST

START_TEST(test_status_args)
{
    hixl_engine_t *e = bad_engine();
    hixl_transfer_status_t ts;

    hx_expect(hixl_get_transfer_status(NULL, (hixl_req_t)(uintptr_t)1, &ts),
              HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_get_transfer_status(e, NULL, &ts), HIXL_PARAM_INVALID,
              NULL);
    hx_expect(hixl_get_transfer_status(e, (hixl_req_t)(uintptr_t)1, NULL),
              HIXL_PARAM_INVALID, "status_p");
    /* never issued: garbage of every shape */
    hx_expect(hixl_get_transfer_status(e, (hixl_req_t)(uintptr_t)1, &ts),
              HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_get_transfer_status(e, (hixl_req_t)(uintptr_t)UINT64_MAX,
                                       &ts), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_get_transfer_status(e, (hixl_req_t)(uintptr_t)
                                       0x0001000100000001ull, &ts),
              HIXL_PARAM_INVALID, NULL);
    hx_ok(hixl_finalize(e));
}
END_TEST

START_TEST(test_notify_args)
{
    hixl_engine_t *e = bad_engine();
    hixl_notify_desc_t nd = {"n", "m", 1};
    char longname[HIXL_NOTIFY_NAME_MAX + 2];
    hixl_notify_t *n = (hixl_notify_t*)&nd;
    size_t count = 5;
    const char *r = "127.0.0.1:9";

    hx_expect(hixl_send_notify(NULL, r, &nd, 1000), HIXL_PARAM_INVALID,
              "engine");
    hx_expect(hixl_send_notify(e, NULL, &nd, 1000), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_send_notify(e, "", &nd, 1000), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_send_notify(e, r, NULL, 1000), HIXL_PARAM_INVALID, NULL);
    nd.name = NULL;
    hx_expect(hixl_send_notify(e, r, &nd, 1000), HIXL_PARAM_INVALID, "name");
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';   /* 1025 bytes: one too many */
    nd.name = longname;
    hx_expect(hixl_send_notify(e, r, &nd, 1000), HIXL_PARAM_INVALID, "1025");
    nd.name = "n"; nd.msg = NULL; nd.msg_len = 3;
    hx_expect(hixl_send_notify(e, r, &nd, 1000), HIXL_PARAM_INVALID, NULL);
    nd.msg = malloc(65537); nd.msg_len = 65537;   /* > hixl.MaxNotifySize */
    ck_assert_ptr_nonnull(nd.msg);
    hx_expect(hixl_send_notify(e, r, &nd, 1000), HIXL_PARAM_INVALID,
              "MaxNotifySize");
    free((void*)nd.msg);
    nd.msg = "m"; nd.msg_len = 1;
    hx_expect(hixl_send_notify(e, r, &nd, 0), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_send_notify(e, r, &nd, -7), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_send_notify(e, r, &nd, 1000), HIXL_NOT_CONNECTED, r);

    hx_expect(hixl_get_notifies(NULL, &n, &count), HIXL_PARAM_INVALID,
              "engine");
    hx_expect(hixl_get_notifies(e, NULL, &count), HIXL_PARAM_INVALID,
              "notifies_p");
    hx_expect(hixl_get_notifies(e, &n, NULL), HIXL_PARAM_INVALID, "count_p");
    hx_ok(hixl_get_notifies(e, &n, &count));
    ck_assert_uint_eq(count, 0);
    ck_assert_ptr_null(n);
    hixl_release_notifies(NULL, 0);   /* harmless */
    hx_ok(hixl_finalize(e));
}
END_TEST

/* ---- diagnostics -------------------------------------------------------------- */

START_TEST(test_strerror_version)
{
    static const struct { hixl_status_t st; const char *name; int num; } s[] = {
        {HIXL_SUCCESS, "HIXL_SUCCESS", 0},
        {HIXL_PARAM_INVALID, "HIXL_PARAM_INVALID", 103900},
        {HIXL_TIMEOUT, "HIXL_TIMEOUT", 103901},
        {HIXL_NOT_CONNECTED, "HIXL_NOT_CONNECTED", 103902},
        {HIXL_ALREADY_CONNECTED, "HIXL_ALREADY_CONNECTED", 103903},
        {HIXL_NOTIFY_FAILED, "HIXL_NOTIFY_FAILED", 103904},
        {HIXL_UNSUPPORTED, "HIXL_UNSUPPORTED", 103905},
        {HIXL_RESOURCE_EXHAUSTED, "HIXL_RESOURCE_EXHAUSTED", 203900},
        {HIXL_FAILED, "HIXL_FAILED", 503900},
    };
    char v[32];
    size_t i;

    /* the numbers and enum orders are CANN hixl's (DESIGN.md section 3) */
    for (i = 0; i < sizeof(s) / sizeof(s[0]); ++i) {
        ck_assert_int_eq((int)s[i].st, s[i].num);
        ck_assert_str_eq(hixl_strerror(s[i].st), s[i].name);
    }
    ck_assert_int_eq(HIXL_MEM_DEVICE, 0);
    ck_assert_int_eq(HIXL_MEM_HOST, 1);
    ck_assert_int_eq(HIXL_READ, 0);
    ck_assert_int_eq(HIXL_WRITE, 1);
    ck_assert_int_eq(HIXL_TRANSFER_WAITING, 0);
    ck_assert_int_eq(HIXL_TRANSFER_COMPLETED, 1);
    ck_assert_int_eq(HIXL_TRANSFER_TIMEOUT, 2);
    ck_assert_int_eq(HIXL_TRANSFER_FAILED, 3);
    ck_assert_str_eq(hixl_strerror((hixl_status_t)-1), "HIXL_UNKNOWN_STATUS");
    ck_assert_str_eq(hixl_strerror((hixl_status_t)1), "HIXL_UNKNOWN_STATUS");
    ck_assert_str_eq(hixl_strerror((hixl_status_t)103906),
                     "HIXL_UNKNOWN_STATUS");

    snprintf(v, sizeof(v), "%d.%d.%d", HIXL_VERSION_MAJOR, HIXL_VERSION_MINOR,
             HIXL_VERSION_PATCH);
    ck_assert_str_eq(hixl_version(), v);
    ck_assert_str_eq(hixl_version(), PACKAGE_VERSION);
}
END_TEST

static void *bad_thread_fails(void *arg)
{
    char *out = arg;

    /* a fresh thread has no last error */
    snprintf(out, 256, "%s", hixl_last_error());
    if (out[0] != '\0') {
        return NULL;
    }
    hixl_finalize(NULL);   /* "engine is NULL" in this thread only */
    snprintf(out, 256, "%s", hixl_last_error());
    return NULL;
}

/* hixl_last_error() is per thread: another thread's failure does not
 * overwrite this thread's message. */
START_TEST(test_last_error_per_thread)
{
    char other[256] = "unset";
    pthread_t th;
    hixl_engine_t *e = NULL;

    hx_use_tls(0);
    hx_expect(hixl_initialize("no.such.name", NULL, 0, &e),
              HIXL_PARAM_INVALID, "no.such.name");
    ck_assert_int_eq(pthread_create(&th, NULL, bad_thread_fails, other), 0);
    pthread_join(th, NULL);
    ck_assert_str_eq(other, "engine is NULL");
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), "no.such.name"));

    /* a successful call does not clear it ("of the last failed call") */
    e = hx_engine("127.0.0.1", NULL);
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), "no.such.name"));
    hx_ok(hixl_finalize(e));
}
END_TEST

/* The last error is that of the last *failed* call: a whole session of
 * successful calls (two engines whose plugin cannot open, connect,
 * transfers both ways, notifies, layer signals, disconnect from both
 * sides, finalize) leaves it as it was, on every transport. */
static void expect_unchanged(const char *after)
{
    ck_assert_msg(strcmp(hixl_last_error(), "stream is NULL") == 0,
                  "after a successful %s the last error reads \"%s\"",
                  after, hixl_last_error());
}

#define KEEP(_call) do { hx_ok(_call); expect_unchanged(#_call); } while (0)

START_TEST(test_last_error_successful_session)
{
    const size_t len = 1 << 20;
    char *a = hx_alloc_pages(len), *b = hx_alloc_pages(len);
    hixl_transfer_op_desc_t d;
    hixl_transfer_status_t ts;
    hixl_notify_desc_t nd = {"n", "m", 1};
    hixl_notify_t *got = NULL;
    hixl_engine_t *srv, *cli;
    hixl_mem_handle_t hs, hc;
    const char *srv_name;
    size_t count = 0;
    hixl_req_t req;
    int ready = 0;

    hx_use_tls(_i);
    /* a failed call's message, then only successful calls */
    hx_mark_last_error();
    /* the build's Ascend plugin, which cannot open here (no ACL runtime):
     * an engine without it is still a success */
    srv = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                    "hixl.PluginDir", HX_PLUGIN_DIR, NULL);
    cli = hx_engine("127.0.0.1", "hixl.PluginDir", HX_PLUGIN_DIR, NULL);
    srv_name = hixl_engine_name(srv);
    expect_unchanged("hixl_initialize");
    KEEP(hixl_register_mem(srv, &(hixl_mem_desc_t){(uintptr_t)a, len},
                           HIXL_MEM_HOST, &hs));
    KEEP(hixl_register_mem(cli, &(hixl_mem_desc_t){(uintptr_t)b, len},
                           HIXL_MEM_HOST, &hc));
    KEEP(hixl_connect(cli, srv_name, HX_OP_TIMEOUT_MS));
    d.local_addr  = (uintptr_t)b;
    d.remote_addr = (uintptr_t)a;
    d.len         = len;
    KEEP(hixl_transfer_sync(cli, srv_name, HIXL_WRITE, &d, 1,
                            HX_OP_TIMEOUT_MS));
    KEEP(hixl_transfer_async(cli, srv_name, HIXL_READ, &d, 1, NULL, &req));
    do {
        KEEP(hixl_get_transfer_status(cli, req, &ts));
    } while (ts == HIXL_TRANSFER_WAITING);
    ck_assert_int_eq(ts, HIXL_TRANSFER_COMPLETED);
    KEEP(hixl_send_notify(cli, srv_name, &nd, HX_OP_TIMEOUT_MS));
    KEEP(hixl_get_notifies(srv, &got, &count));
    hixl_release_notifies(got, count);
    KEEP(hixl_flush_layer(cli, srv_name, 0, 1, 0));
    KEEP(hixl_wait_layer(srv, hixl_engine_name(cli), 0, 1, 0,
                         HX_OP_TIMEOUT_MS));
    KEEP(hixl_test_layer(srv, hixl_engine_name(cli), 0, 1, 0, &ready));
    KEEP(hixl_disconnect(cli, srv_name, HX_OP_TIMEOUT_MS));
    /* the server's side ended by the other: owed one SUCCESS, eventually */
    while (hixl_disconnect(srv, hixl_engine_name(cli), 1000) !=
           HIXL_SUCCESS) {
        hx_mark_last_error();
        usleep(1000);
    }
    expect_unchanged("hixl_disconnect of the other side");
    KEEP(hixl_deregister_mem(srv, hs));
    KEEP(hixl_deregister_mem(cli, hc));
    KEEP(hixl_finalize(cli));
    KEEP(hixl_finalize(srv));
    hx_free_pages(a, len);
    hx_free_pages(b, len);
}
END_TEST

START_TEST(test_config_print_args)
{
    hixl_option_t opt = {"hixl.MaxRequests", "zero"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f;

    /* (this is the call hx_expect uses as its mark: check it plainly) */
    ck_assert_int_eq(hixl_config_print(NULL, NULL, 0), HIXL_PARAM_INVALID);
    ck_assert_str_eq(hixl_last_error(), "stream is NULL");
    f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    hx_expect(hixl_config_print(f, &opt, 1), HIXL_PARAM_INVALID,
              "hixl.MaxRequests");
    hx_expect(hixl_config_print(f, NULL, 1), HIXL_PARAM_INVALID, NULL);
    opt.key = "Nope";
    hx_expect(hixl_config_print(f, &opt, 1), HIXL_PARAM_INVALID, "Nope");
    fclose(f);
    free(buf);
}
END_TEST

static Suite *bad_input_suite(void)
{
    Suite *s = suite_create("bad_input");
    TCase *tc;

    tc = hx_tcase("engine");
    tcase_add_test(tc, test_initialize_args);
    tcase_add_test(tc, test_engine_names);
    tcase_add_test(tc, test_initialize_options);
    tcase_add_test(tc, test_initialize_cannot_listen);
    suite_add_tcase(s, tc);

    tc = hx_tcase("memory");
    tcase_add_test(tc, test_register_args);
    tcase_add_test(tc, test_alloc_args);
    tcase_add_test(tc, test_register_overlap);
    tcase_add_test(tc, test_stale_and_foreign_handles);
    suite_add_tcase(s, tc);

    tc = hx_tcase("connect");
    tcase_add_test(tc, test_connect_args);
    tcase_add_test(tc, test_connect_closed_port);
    tcase_add_test(tc, test_connect_silent_listener);
    tcase_add_loop_test(tc, test_connect_garbage_server, 0, 2);
    suite_add_tcase(s, tc);

    tc = hx_tcase("calls");
    tcase_add_test(tc, test_transfer_args);
    tcase_add_test(tc, test_status_args);
    tcase_add_test(tc, test_notify_args);
    suite_add_tcase(s, tc);

    tc = hx_tcase("diagnostics");
    tcase_add_test(tc, test_strerror_version);
    tcase_add_test(tc, test_last_error_per_thread);
    tcase_add_loop_test(tc, test_last_error_successful_session, 0,
                        hx_tls_count);
    tcase_add_test(tc, test_config_print_args);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(bad_input_suite());
}
