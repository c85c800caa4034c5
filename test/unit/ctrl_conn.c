/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: one control connection (src/wire/ctrl_conn.c) over a socket pair:
 * messages framed and handed over whole, in order, however the bytes
 * arrive (one at a time, several messages in one read); a peer closing
 * between messages and in the middle of one; lengths no message can have,
 * refused from the header alone while only the handshake is expected;
 * sends the socket does not take at once, queued and written by flushes
 * with EPOLLOUT armed exactly while something is queued; a closed
 * connection and a peer that went away refuse sends.
 */
#include "config.h"
#include "harness.h"
#include "wire/ctrl_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* What the handler saw: each message re-encoded, so that it can be
 * compared after the receive buffer moved on. */
typedef struct seen {
    int            count;
    int            stop_at;    /* stop after this many (0: never) */
    hixl_msg_buf_t enc;
    uint16_t       types[64];
} seen_t;

static int on_msg(void *arg, const hixl_msg_t *msg)
{
    seen_t *s = arg;

    if (s->count < 64) {
        s->types[s->count] = msg->type;
    }
    ++s->count;
    ck_assert_int_eq(hixl_msg_encode(&s->enc, msg), HIXL_SUCCESS);
    return (s->stop_at != 0) && (s->count >= s->stop_at);
}

static void nonblock(int fd)
{
    ck_assert_int_eq(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/* conn on sv[0], the raw peer on sv[1] */
static void pair(hixl_conn_t *conn, int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    nonblock(sv[0]);
    hixl_conn_init(conn, sv[0]);
}

static void notify_msg(hixl_msg_t *m, uint64_t seq, const char *name,
                       const void *body, uint32_t len)
{
    memset(m, 0, sizeof(*m));
    m->type                 = CTRL_NOTIFY;
    m->u.notify.seq         = seq;
    m->u.notify.name.ptr    = (const uint8_t*)name;
    m->u.notify.name.len    = (uint32_t)strlen(name);
    m->u.notify.msg.ptr     = body;
    m->u.notify.msg.len     = len;
}

static void sync_msg(hixl_msg_t *m, uint64_t token)
{
    memset(m, 0, sizeof(*m));
    m->type         = CTRL_SYNC;
    m->u.sync.token = token;
}

/* Three messages' encoding, one after another. */
static void three(hixl_msg_buf_t *out)
{
    hixl_msg_t m;

    memset(out, 0, sizeof(*out));
    notify_msg(&m, 7, "kv.ready", "layer 3", 7);
    ck_assert_int_eq(hixl_msg_encode(out, &m), HIXL_SUCCESS);
    sync_msg(&m, 0x1122334455667788ull);
    ck_assert_int_eq(hixl_msg_encode(out, &m), HIXL_SUCCESS);
    memset(&m, 0, sizeof(m));
    m.type             = CTRL_BYE;
    m.u.bye.status     = HIXL_FAILED;
    m.u.bye.reason.ptr = (const uint8_t*)"done";
    m.u.bye.reason.len = 4;
    ck_assert_int_eq(hixl_msg_encode(out, &m), HIXL_SUCCESS);
}

static void write_all(int fd, const void *p, size_t len)
{
    ck_assert_int_eq(write(fd, p, len), (ssize_t)len);
}

START_TEST(test_send_receive)
{
    hixl_conn_t a, b;
    int sa[2];
    seen_t s;
    hixl_msg_buf_t want;
    hixl_msg_t m;
    char err[256] = "";

    /* two connections joined: what one sends the other receives */
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sa), 0);
    nonblock(sa[0]);
    nonblock(sa[1]);
    hixl_conn_init(&a, sa[0]);
    hixl_conn_init(&b, sa[1]);
    memset(&s, 0, sizeof(s));
    three(&want);
    notify_msg(&m, 7, "kv.ready", "layer 3", 7);
    hx_ok(hixl_conn_send(&a, &m));
    sync_msg(&m, 0x1122334455667788ull);
    hx_ok(hixl_conn_send(&a, &m));
    memset(&m, 0, sizeof(m));
    m.type             = CTRL_BYE;
    m.u.bye.status     = HIXL_FAILED;
    m.u.bye.reason.ptr = (const uint8_t*)"done";
    m.u.bye.reason.len = 4;
    /* queued, then written with one flush */
    ck_assert_int_eq(hixl_conn_queue(&a, &m), 1);
    ck_assert_int_eq(hixl_conn_flush(&a, err, sizeof(err)), 0);
    ck_assert_int_eq(hixl_conn_receive(&b, on_msg, &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.count, 3);
    ck_assert_uint_eq(s.enc.len, want.len);
    ck_assert_mem_eq(s.enc.data, want.data, want.len);
    ck_assert_uint_eq(b.rx_len, 0);
    /* nothing more: still alive */
    ck_assert_int_eq(hixl_conn_receive(&b, on_msg, &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.count, 3);
    hixl_buf_cleanup(&want);
    hixl_buf_cleanup(&s.enc);
    hixl_conn_cleanup(&a);
    hixl_conn_cleanup(&b);
}
END_TEST

START_TEST(test_byte_by_byte)
{
    hixl_conn_t c;
    int sv[2];
    seen_t s;
    hixl_msg_buf_t want;
    char err[256] = "";
    size_t i;

    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    three(&want);
    for (i = 0; i < want.len; ++i) {
        write_all(sv[1], want.data + i, 1);
        ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)),
                         0);
        /* a message is handed over only once its last byte is in */
        ck_assert_uint_eq(s.enc.len <= i + 1, 1);
    }
    ck_assert_int_eq(s.count, 3);
    ck_assert_int_eq(s.types[0], CTRL_NOTIFY);
    ck_assert_int_eq(s.types[1], CTRL_SYNC);
    ck_assert_int_eq(s.types[2], CTRL_BYE);
    ck_assert_uint_eq(s.enc.len, want.len);
    ck_assert_mem_eq(s.enc.data, want.data, want.len);
    ck_assert_uint_eq(c.rx_len, 0);
    hixl_buf_cleanup(&want);
    hixl_buf_cleanup(&s.enc);
    hixl_conn_cleanup(&c);
    close(sv[1]);
}
END_TEST

START_TEST(test_handler_stops)
{
    hixl_conn_t c;
    int sv[2];
    seen_t s;
    hixl_msg_buf_t msgs;
    char err[256] = "";

    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    s.stop_at = 1;
    three(&msgs);
    write_all(sv[1], msgs.data, msgs.len);
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), -1);
    ck_assert_int_eq(s.count, 1);   /* nothing after the stop */
    ck_assert_ptr_nonnull(strstr(err, "closed after"));
    hixl_buf_cleanup(&msgs);
    hixl_buf_cleanup(&s.enc);
    hixl_conn_cleanup(&c);
    close(sv[1]);
}
END_TEST

START_TEST(test_peer_closes)
{
    hixl_conn_t c;
    int sv[2];
    seen_t s;
    hixl_msg_buf_t msgs;
    char err[256] = "";

    /* between messages: every whole one first, then a plain hang-up */
    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    three(&msgs);
    write_all(sv[1], msgs.data, msgs.len);
    close(sv[1]);
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), -1);
    ck_assert_int_eq(s.count, 3);
    ck_assert_str_eq(err, "connection closed by peer");
    hixl_buf_cleanup(&s.enc);
    hixl_conn_cleanup(&c);

    /* in the middle of the second message: the first only, and said so */
    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    write_all(sv[1], msgs.data, msgs.len - 20);
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), 0);
    ck_assert_int_eq(s.count, 2);
    close(sv[1]);
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), -1);
    ck_assert_int_eq(s.count, 2);
    ck_assert_str_eq(err, "connection closed in the middle of a message");
    hixl_buf_cleanup(&s.enc);
    hixl_buf_cleanup(&msgs);
    hixl_conn_cleanup(&c);
}
END_TEST

/* A header: magic, version, type, payload length (little-endian). */
static void header(uint8_t *h, uint16_t version, uint16_t type, uint32_t len)
{
    uint32_t magic = CTRL_MAGIC;
    int i;

    for (i = 0; i < 4; ++i) {
        h[i]     = (uint8_t)(magic >> (8 * i));
        h[8 + i] = (uint8_t)(len >> (8 * i));
    }
    h[4] = (uint8_t)version;
    h[5] = (uint8_t)(version >> 8);
    h[6] = (uint8_t)type;
    h[7] = (uint8_t)(type >> 8);
}

START_TEST(test_oversized_length)
{
    hixl_conn_t c;
    int sv[2];
    seen_t s;
    uint8_t h[CTRL_HDR_LEN];
    char err[256] = "";

    /* any type: a length beyond every message is malformed at once */
    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    header(h, CTRL_VERSION, CTRL_NOTIFY, CTRL_MAX_PAYLOAD + 1u);
    write_all(sv[1], h, sizeof(h));
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), -1);
    ck_assert_int_eq(s.count, 0);
    hixl_conn_cleanup(&c);
    close(sv[1]);

    /* before the handshake: a HELLO longer than any HELLO can be is
     * refused from its header, before its payload is read */
    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    hixl_conn_expect(&c, 1ull << CTRL_HELLO);
    header(h, CTRL_VERSION, CTRL_HELLO, hixl_msg_max_payload(CTRL_HELLO) + 1);
    write_all(sv[1], h, sizeof(h));
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), -1);
    ck_assert_int_eq(s.count, 0);
    ck_assert_ptr_nonnull(strstr(err, "longer than any"));
    hixl_conn_cleanup(&c);
    close(sv[1]);

    /* and a message of a type not expected yet, whatever its length */
    pair(&c, sv);
    memset(&s, 0, sizeof(s));
    hixl_conn_expect(&c, 1ull << CTRL_HELLO);
    header(h, CTRL_VERSION, CTRL_NOTIFY, 16);
    write_all(sv[1], h, sizeof(h));
    ck_assert_int_eq(hixl_conn_receive(&c, on_msg, &s, err, sizeof(err)), -1);
    ck_assert_int_eq(s.count, 0);
    ck_assert_ptr_nonnull(strstr(err, "before the handshake"));
    hixl_conn_cleanup(&c);
    close(sv[1]);
}
END_TEST

/* Read what is there from fd into out (non-blocking). */
static void drain(int fd, hixl_msg_buf_t *out)
{
    uint8_t buf[65536];
    ssize_t n;

    while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
        if (out->len + (size_t)n > out->cap) {
            out->cap  = (out->len + (size_t)n) * 2;
            out->data = realloc(out->data, out->cap);
            ck_assert_ptr_nonnull(out->data);
        }
        memcpy(out->data + out->len, buf, (size_t)n);
        out->len += (size_t)n;
    }
}

START_TEST(test_partial_writes)
{
    const size_t body_len = 4u << 20;   /* far beyond the socket's buffers */
    hixl_conn_t c;
    int sv[2], epfd, small = 4096, n;
    struct epoll_event ev;
    uint8_t *body = malloc(body_len);
    hixl_msg_buf_t got, want;
    hixl_msg_t m, back;
    size_t consumed;
    char err[256] = "";

    ck_assert_ptr_nonnull(body);
    hx_pat_fill(body, body_len, 11, 0);
    pair(&c, sv);
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    epfd = epoll_create1(EPOLL_CLOEXEC);
    ck_assert_int_ge(epfd, 0);
    hx_ok(hixl_conn_watch(&c, epfd, 42));
    ck_assert_int_eq(c.pollout, 0);

    notify_msg(&m, 9, "big", body, (uint32_t)body_len);
    memset(&want, 0, sizeof(want));
    ck_assert_int_eq(hixl_msg_encode(&want, &m), HIXL_SUCCESS);
    /* the socket takes a part: the rest is queued, EPOLLOUT armed */
    hx_ok(hixl_conn_send(&c, &m));
    ck_assert_uint_gt(c.tx.len, c.tx_off);
    ck_assert_int_eq(c.pollout, 1);
    n = epoll_wait(epfd, &ev, 1, 0);
    ck_assert_int_eq(n, 0);   /* the peer reads nothing yet: not writable */
    /* a second message queued behind it: not the caller's to flush */
    sync_msg(&m, 5);
    ck_assert_int_eq(hixl_conn_queue(&c, &m), 0);
    ck_assert_int_eq(hixl_msg_encode(&want, &m), HIXL_SUCCESS);

    memset(&got, 0, sizeof(got));
    while (c.tx.len > c.tx_off) {
        drain(sv[1], &got);
        ck_assert_int_eq(hixl_conn_flush(&c, err, sizeof(err)), 0);
    }
    drain(sv[1], &got);
    /* all written: disarmed */
    ck_assert_int_eq(c.pollout, 0);
    ck_assert_uint_eq(c.tx.len, 0);
    ck_assert_uint_eq(got.len, want.len);
    ck_assert_mem_eq(got.data, want.data, want.len);
    ck_assert_int_eq(hixl_msg_decode(got.data, got.len, &back, &consumed,
                                     err, sizeof(err)), CTRL_DECODE_OK);
    ck_assert_uint_eq(back.u.notify.msg.len, body_len);
    hx_pat_assert(back.u.notify.msg.ptr, body_len, 11, 0, "notify body");

    hixl_buf_cleanup(&got);
    hixl_buf_cleanup(&want);
    hixl_conn_cleanup(&c);
    close(sv[1]);
    close(epfd);
    free(body);
}
END_TEST

START_TEST(test_closed_refuses)
{
    hixl_conn_t c;
    int sv[2];
    hixl_msg_t m;
    char err[256] = "";

    /* closed here: sends fail, the socket is gone */
    pair(&c, sv);
    sync_msg(&m, 1);
    hixl_conn_close(&c);
    ck_assert_int_eq(c.fd, -1);
    hx_expect(hixl_conn_send(&c, &m), HIXL_FAILED, "closed");
    ck_assert_int_eq(hixl_conn_queue(&c, &m), -1);
    ck_assert_int_eq(hixl_conn_flush(&c, err, sizeof(err)), 0);
    hixl_conn_cleanup(&c);
    close(sv[1]);

    /* the peer went away: the write fails (no SIGPIPE), and says so */
    pair(&c, sv);
    close(sv[1]);
    hx_expect(hixl_conn_send(&c, &m), HIXL_FAILED, "control connection");
    hixl_conn_cleanup(&c);
}
END_TEST

static Suite *ctrl_conn_suite(void)
{
    Suite *s  = suite_create("ctrl_conn");
    TCase *tc = hx_tcase("conn");

    tcase_add_test(tc, test_send_receive);
    tcase_add_test(tc, test_byte_by_byte);
    tcase_add_test(tc, test_handler_stops);
    tcase_add_test(tc, test_peer_closes);
    tcase_add_test(tc, test_oversized_length);
    tcase_add_test(tc, test_partial_writes);
    tcase_add_test(tc, test_closed_refuses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(ctrl_conn_suite());
}
