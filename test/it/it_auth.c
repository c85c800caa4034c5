/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Authenticated peers (option hixl.Secret): engines with the same secret
 * connect; any mismatch, or a secret on one side only, fails with a clear
 * message; a client that cannot prove the secret receives nothing that grants
 * access (no worker address, no MEM_ADD and so no remote key) — proven by a
 * raw socket client that records every byte the listener sends.
 */
#include "harness.h"
#include "wire/ctrl_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static hixl_engine_t *listener(const char *secret, void **mem)
{
    hixl_engine_t *e;
    hixl_mem_handle_t h;

    if (secret != NULL) {
        e = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                      "hixl.Secret", secret, NULL);
    } else {
        e = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    }
    hx_ok(hixl_alloc_mem(e, 4096, HIXL_MEM_HOST, mem, &h));
    return e;
}

static hixl_engine_t *connector(const char *secret)
{
    if (secret != NULL) {
        return hx_engine("127.0.0.1", "hixl.Secret", secret, NULL);
    }
    return hx_engine("127.0.0.1", NULL);
}

START_TEST(test_same_secret_connects_and_moves_data)
{
    void *mem;
    hixl_engine_t *l = listener("s3cret-A", &mem);
    hixl_engine_t *c = connector("s3cret-A");
    char src[64];
    hixl_transfer_op_desc_t d = {(uintptr_t)src, (uintptr_t)mem, sizeof(src)};

    hx_pat_fill(src, sizeof(src), 11, 0);
    hx_register(c, src, sizeof(src));
    hx_ok(hixl_connect(c, hixl_engine_name(l), HX_OP_TIMEOUT_MS));
    hx_ok(hixl_transfer_sync(c, hixl_engine_name(l), HIXL_WRITE, &d, 1,
                             HX_OP_TIMEOUT_MS));
    hx_pat_assert(mem, sizeof(src), 11, 0, "listener memory");
    hx_ok(hixl_finalize(c));
    hx_ok(hixl_finalize(l));
}
END_TEST

START_TEST(test_wrong_secret_fails)
{
    void *mem;
    hixl_engine_t *l = listener("s3cret-A", &mem);
    hixl_engine_t *c = connector("s3cret-B");

    hx_expect(hixl_connect(c, hixl_engine_name(l), HX_OP_TIMEOUT_MS),
              HIXL_FAILED, "authentication failed");
    hx_ok(hixl_finalize(c));
    hx_ok(hixl_finalize(l));
}
END_TEST

START_TEST(test_listener_only_secret_fails)
{
    void *mem;
    hixl_engine_t *l = listener("s3cret-A", &mem);
    hixl_engine_t *c = connector(NULL);

    hx_expect(hixl_connect(c, hixl_engine_name(l), HX_OP_TIMEOUT_MS),
              HIXL_FAILED, "hixl.Secret");
    hx_ok(hixl_finalize(c));
    hx_ok(hixl_finalize(l));
}
END_TEST

START_TEST(test_connector_only_secret_fails)
{
    void *mem;
    hixl_engine_t *l = listener(NULL, &mem);
    hixl_engine_t *c = connector("s3cret-A");

    /* the connector will not use a listener that cannot prove the secret */
    hx_expect(hixl_connect(c, hixl_engine_name(l), HX_OP_TIMEOUT_MS),
              HIXL_FAILED, "without authenticating");
    hx_ok(hixl_finalize(c));
    hx_ok(hixl_finalize(l));
}
END_TEST

START_TEST(test_secret_never_printed)
{
    hixl_option_t opt = {"hixl.Secret", "do-not-print-me"};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    hx_ok(hixl_config_print(f, &opt, 1));
    fclose(f);
    ck_assert_ptr_null(strstr(buf, "do-not-print-me"));
    ck_assert_ptr_nonnull(strstr(buf, "(set)"));
    free(buf);
}
END_TEST

/* ---- a client without the secret ------------------------------------------ */

static void raw_send(int fd, const hixl_msg_t *msg)
{
    hixl_msg_buf_t buf = {NULL, 0, 0};

    ck_assert(hixl_msg_encode(&buf, msg) == HIXL_SUCCESS);
    ck_assert(write(fd, buf.data, buf.len) == (ssize_t)buf.len);
    hixl_buf_cleanup(&buf);
}

/* Everything the listener sends until it closes the connection. */
static size_t raw_read_all(int fd, uint8_t *buf, size_t cap)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    size_t len = 0;
    ssize_t n;

    while ((len < cap) && (poll(&pfd, 1, HX_OP_TIMEOUT_MS) == 1)) {
        n = read(fd, buf + len, cap - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    return len;
}

static void raw_hello(int fd, const uint8_t *nonce, size_t nonce_len)
{
    static const char addr[] = "not-a-worker-address";
    hixl_msg_t hello;

    memset(&hello, 0, sizeof(hello));
    hello.type                = CTRL_HELLO;
    hello.u.hello.name        = hixl_msg_bytes("127.0.0.9", 9);
    hello.u.hello.host        = hixl_msg_bytes("intruder", 8);
    hello.u.hello.worker_addr = hixl_msg_bytes(addr, sizeof(addr));
    hello.u.hello.nonce       = hixl_msg_bytes(nonce, nonce_len);
    raw_send(fd, &hello);
}

/* What the listener sent: no HELLO_ACK carrying its worker address, no
 * MEM_ADD (no remote key), no TABLE_END. */
static void assert_nothing_granted(const uint8_t *buf, size_t len,
                                   int *challenges)
{
    size_t off = 0, used;
    hixl_msg_t msg;
    char err[128];

    *challenges = 0;
    while (off < len) {
        ck_assert_int_eq(hixl_msg_decode(buf + off, len - off, &msg, &used,
                                         err, sizeof(err)), CTRL_DECODE_OK);
        off += used;
        ck_assert_msg(msg.type != CTRL_MEM_ADD, "listener sent a remote key "
                      "to an unauthenticated client");
        ck_assert_msg(msg.type != CTRL_TABLE_END, "listener sent its table");
        if (msg.type == CTRL_HELLO_ACK) {
            ck_assert_int_ne(msg.u.hello_ack.status, HIXL_SUCCESS);
            ck_assert_uint_eq(msg.u.hello_ack.worker_addr.len, 0);
        }
        *challenges += (msg.type == CTRL_AUTH_CHALLENGE);
    }
}

START_TEST(test_no_rkey_without_the_secret)
{
    static const uint8_t nonce[32] = {1, 2, 3};
    static const uint8_t bad_mac[32] = {9, 9, 9};
    uint8_t buf[65536];
    void *mem;
    hixl_engine_t *l = listener("s3cret-A", &mem);
    hixl_msg_t resp;
    size_t len;
    int fd, challenges;

    /* a HELLO without a nonce: refused at once */
    fd = hx_raw_connect(hixl_engine_name(l));
    raw_hello(fd, NULL, 0);
    len = raw_read_all(fd, buf, sizeof(buf));
    close(fd);
    ck_assert_uint_gt(len, 0);
    assert_nothing_granted(buf, len, &challenges);
    ck_assert_int_eq(challenges, 0);

    /* a HELLO with a nonce, then a wrong answer to the challenge */
    fd = hx_raw_connect(hixl_engine_name(l));
    raw_hello(fd, nonce, sizeof(nonce));
    memset(&resp, 0, sizeof(resp));
    resp.type        = CTRL_AUTH_RESPONSE;
    resp.u.auth.data = hixl_msg_bytes(bad_mac, sizeof(bad_mac));
    raw_send(fd, &resp);
    len = raw_read_all(fd, buf, sizeof(buf));
    close(fd);
    assert_nothing_granted(buf, len, &challenges);
    ck_assert_int_eq(challenges, 1);

    /* and the engine still serves a client that knows the secret */
    {
        hixl_engine_t *c = connector("s3cret-A");

        hx_ok(hixl_connect(c, hixl_engine_name(l), HX_OP_TIMEOUT_MS));
        hx_ok(hixl_finalize(c));
    }
    hx_ok(hixl_finalize(l));
}
END_TEST

int main(void)
{
    Suite *s  = suite_create("auth");
    TCase *tc = hx_tcase("auth");

    tcase_add_test(tc, test_same_secret_connects_and_moves_data);
    tcase_add_test(tc, test_wrong_secret_fails);
    tcase_add_test(tc, test_listener_only_secret_fails);
    tcase_add_test(tc, test_connector_only_secret_fails);
    tcase_add_test(tc, test_secret_never_printed);
    tcase_add_test(tc, test_no_rkey_without_the_secret);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
