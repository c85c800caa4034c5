/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the control message codec (src/ctrl_msg.c), which reads bytes from
 * the network: it must take every well-formed message back exactly and
 * refuse everything else without reading a byte beyond what it was given.
 *
 * Inputs handed to the decoder are copied into buffers of exactly their
 * length, so in a sanitizer build (--enable-sanitizers) an over-read is a
 * crash here rather than a silent pass.
 *
 * Round trips compare the decoded fields this file knows and, to cover
 * fields added later, re-encode the decoded message and compare bytes.
 */
#include "config.h"
#include "harness.h"
#include "wire/ctrl_msg.h"

#include <stdlib.h>
#include <string.h>

/* Decode from an exact-size heap copy of buf[0, len). */
static hixl_msg_decode_result_t decode_exact(const uint8_t *buf, size_t len,
                                         hixl_msg_t *msg, size_t *consumed,
                                         char *err, size_t errlen,
                                         uint8_t **copy_p)
{
    uint8_t *copy = malloc(len ? len : 1);
    hixl_msg_decode_result_t res;

    ck_assert_ptr_nonnull(copy);
    memcpy(copy, buf, len);
    err[0] = '\0';
    res = hixl_msg_decode(copy, len, msg, consumed, err, errlen);
    if (copy_p != NULL) {
        *copy_p = copy;   /* decoded bytes point into it */
    } else {
        free(copy);
    }
    return res;
}

static void encode(hixl_msg_buf_t *out, const hixl_msg_t *msg)
{
    hixl_status_t st = hixl_msg_encode(out, msg);

    ck_assert_msg(st == HIXL_SUCCESS, "encode %s: %s",
                  hixl_msg_type_name(msg->type), hixl_last_error());
}

static uint8_t name_buf[CTRL_MAX_NAME], addr_buf[4096], reason_buf[CTRL_MAX_REASON];
static uint8_t *big_buf;

static void fill_bufs(void)
{
    hx_pat_fill(name_buf, sizeof(name_buf), 1, 0);
    hx_pat_fill(addr_buf, sizeof(addr_buf), 2, 0);
    hx_pat_fill(reason_buf, sizeof(reason_buf), 3, 0);
}

#define MAX_MSGS 32

/* One message of every type, with recognizable fields; variant v changes
 * byte lengths (0: empty fields, 1: typical, 2: at the limits). */
static size_t make_msgs(hixl_msg_t *m, int v)
{
    size_t n = 0;
    uint32_t nl = (v == 0) ? 0 : (v == 1) ? 9 : CTRL_MAX_NAME;
    uint32_t al = (v == 0) ? 0 : (v == 1) ? 300 : sizeof(addr_buf);
    uint32_t rl = (v == 0) ? 0 : (v == 1) ? 17 : CTRL_MAX_REASON;
    unsigned t;

    fill_bufs();
    memset(m, 0, MAX_MSGS * sizeof(*m));

    m[n].type = CTRL_HELLO;
    m[n].u.hello.name        = hixl_msg_bytes(name_buf, nl);
    m[n].u.hello.flags       = 0x80000001u;
    m[n].u.hello.worker_addr = hixl_msg_bytes(addr_buf, al);
    ++n;
    m[n].type = CTRL_HELLO_ACK;
    m[n].u.hello_ack.status      = HIXL_ALREADY_CONNECTED;
    m[n].u.hello_ack.name        = hixl_msg_bytes(name_buf, nl);
    m[n].u.hello_ack.reason      = hixl_msg_bytes(reason_buf, rl);
    m[n].u.hello_ack.worker_addr = hixl_msg_bytes(addr_buf, al);
    ++n;
    m[n].type = CTRL_MEM_ADD;
    m[n].u.mem_add.id       = 0x0102030405060708ull;
    m[n].u.mem_add.addr     = UINT64_MAX - 4096;
    m[n].u.mem_add.len      = 4096;
    m[n].u.mem_add.mem_type = HIXL_MEM_HOST;
    m[n].u.mem_add.rkey     = hixl_msg_bytes(addr_buf, al);
    ++n;
    m[n].type = CTRL_MEM_DEL;
    m[n].u.mem_del.id   = 7;
    m[n].u.mem_del.addr = 0x7fff00001000ull;
    ++n;
    m[n].type = CTRL_TABLE_END;
    m[n].u.sync.token = 0;
    ++n;
    m[n].type = CTRL_SYNC;
    m[n].u.sync.token = UINT64_MAX;
    ++n;
    m[n].type = CTRL_SYNC_ACK;
    m[n].u.sync.token = 42;
    ++n;
    m[n].type = CTRL_NOTIFY;
    m[n].u.notify.seq   = 1ull << 63 | 5;
    m[n].u.notify.flags = 3;
    m[n].u.notify.name  = hixl_msg_bytes(name_buf, nl);
    m[n].u.notify.msg   = (v == 2) ? hixl_msg_bytes(big_buf, CTRL_MAX_NOTIFY)
                                   : hixl_msg_bytes(addr_buf, al);
    ++n;
    m[n].type = CTRL_NOTIFY_ACK;
    m[n].u.notify_ack.seq    = 99;
    m[n].u.notify_ack.status = HIXL_RESOURCE_EXHAUSTED;
    ++n;
    m[n].type = CTRL_LAYER;
    m[n].u.layer.stream = 1023;
    m[n].u.layer.layer  = 255;
    m[n].u.layer.gen    = 0xdeadbeefcafef00dull;
    ++n;
    m[n].type = CTRL_BYE;
    m[n].u.bye.status = HIXL_FAILED;
    m[n].u.bye.reason = hixl_msg_bytes(reason_buf, rl);
    ++n;
    /* types added after this file was written: all fields zero (empty
     * strings), which every layout can encode; checked by re-encoding */
    for (t = CTRL_BYE + 1; t < CTRL_MSG_TYPE_LAST; ++t) {
        ck_assert_uint_lt(n, MAX_MSGS);
        m[n].type = (uint16_t)t;
        ++n;
    }
    return n;
}

static void bytes_eq(hixl_msg_bytes_t a, hixl_msg_bytes_t b, const char *what)
{
    ck_assert_msg(a.len == b.len, "%s: length %u, expected %u", what, a.len,
                  b.len);
    if (a.len) {
        ck_assert_msg(!memcmp(a.ptr, b.ptr, a.len), "%s differs", what);
    }
}

/* Field-by-field comparison of the fields this file knows. */
static void msg_eq(const hixl_msg_t *a, const hixl_msg_t *e)
{
    ck_assert_uint_eq(a->type, e->type);
    switch (e->type) {
    case CTRL_HELLO:
        bytes_eq(a->u.hello.name, e->u.hello.name, "hello.name");
        ck_assert_uint_eq(a->u.hello.flags, e->u.hello.flags);
        bytes_eq(a->u.hello.worker_addr, e->u.hello.worker_addr,
                 "hello.worker_addr");
        break;
    case CTRL_HELLO_ACK:
        ck_assert_uint_eq(a->u.hello_ack.status, e->u.hello_ack.status);
        bytes_eq(a->u.hello_ack.name, e->u.hello_ack.name, "ack.name");
        bytes_eq(a->u.hello_ack.reason, e->u.hello_ack.reason, "ack.reason");
        bytes_eq(a->u.hello_ack.worker_addr, e->u.hello_ack.worker_addr,
                 "ack.worker_addr");
        break;
    case CTRL_MEM_ADD:
        ck_assert_uint_eq(a->u.mem_add.id, e->u.mem_add.id);
        ck_assert_uint_eq(a->u.mem_add.addr, e->u.mem_add.addr);
        ck_assert_uint_eq(a->u.mem_add.len, e->u.mem_add.len);
        ck_assert_uint_eq(a->u.mem_add.mem_type, e->u.mem_add.mem_type);
        bytes_eq(a->u.mem_add.rkey, e->u.mem_add.rkey, "mem_add.rkey");
        break;
    case CTRL_MEM_DEL:
        ck_assert_uint_eq(a->u.mem_del.id, e->u.mem_del.id);
        ck_assert_uint_eq(a->u.mem_del.addr, e->u.mem_del.addr);
        break;
    case CTRL_TABLE_END:
    case CTRL_SYNC:
    case CTRL_SYNC_ACK:
        ck_assert_uint_eq(a->u.sync.token, e->u.sync.token);
        break;
    case CTRL_NOTIFY:
        ck_assert_uint_eq(a->u.notify.seq, e->u.notify.seq);
        ck_assert_uint_eq(a->u.notify.flags, e->u.notify.flags);
        bytes_eq(a->u.notify.name, e->u.notify.name, "notify.name");
        bytes_eq(a->u.notify.msg, e->u.notify.msg, "notify.msg");
        break;
    case CTRL_NOTIFY_ACK:
        ck_assert_uint_eq(a->u.notify_ack.seq, e->u.notify_ack.seq);
        ck_assert_uint_eq(a->u.notify_ack.status, e->u.notify_ack.status);
        break;
    case CTRL_LAYER:
        ck_assert_uint_eq(a->u.layer.stream, e->u.layer.stream);
        ck_assert_uint_eq(a->u.layer.layer, e->u.layer.layer);
        ck_assert_uint_eq(a->u.layer.gen, e->u.layer.gen);
        break;
    case CTRL_BYE:
        ck_assert_uint_eq(a->u.bye.status, e->u.bye.status);
        bytes_eq(a->u.bye.reason, e->u.bye.reason, "bye.reason");
        break;
    default:
        break;   /* a later type: the re-encoding comparison covers it */
    }
}

static void setup_big(void)
{
    big_buf = malloc(CTRL_MAX_NOTIFY);
    ck_assert_ptr_nonnull(big_buf);
    hx_pat_fill(big_buf, CTRL_MAX_NOTIFY, 4, 0);
}

/* Every type, three size variants: decode gives the fields back, consumes
 * exactly the encoding, and re-encoding gives the same bytes. */
START_TEST(test_round_trip)
{
    hixl_msg_t m[MAX_MSGS], d;
    hixl_msg_buf_t out, again;
    uint8_t *copy;
    size_t n, i, consumed;
    char err[256];
    int v;

    setup_big();
    for (v = 0; v < 3; ++v) {
        n = make_msgs(m, v);
        ck_assert_uint_eq(n, CTRL_MSG_TYPE_LAST - 1);   /* every type */
        for (i = 0; i < n; ++i) {
            memset(&out, 0, sizeof(out));
            memset(&again, 0, sizeof(again));
            encode(&out, &m[i]);
            consumed = 0;
            ck_assert_msg(decode_exact(out.data, out.len, &d, &consumed, err,
                                       sizeof(err), &copy) == CTRL_DECODE_OK,
                          "%s (variant %d): %s", hixl_msg_type_name(m[i].type),
                          v, err);
            ck_assert_uint_eq(consumed, out.len);
            msg_eq(&d, &m[i]);
            encode(&again, &d);
            ck_assert_uint_eq(again.len, out.len);
            ck_assert_mem_eq(again.data, out.data, out.len);
            free(copy);
            hixl_buf_cleanup(&out);
            hixl_buf_cleanup(&again);
        }
    }
    free(big_buf);
}
END_TEST

/* The documented wire format: little-endian header magic "HIXL", version,
 * type, payload length, then the fields. */
START_TEST(test_wire_format)
{
    static const uint8_t sync[] = {
        'H', 'I', 'X', 'L', CTRL_VERSION, 0, CTRL_SYNC, 0, 8, 0, 0, 0,
        0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01
    };
    static const uint8_t ack[] = {
        'H', 'I', 'X', 'L', CTRL_VERSION, 0, CTRL_NOTIFY_ACK, 0, 12, 0, 0, 0,
        0x11, 0, 0, 0, 0, 0, 0, 0x80,   /* seq */
        0xdc, 0x95, 0x01, 0             /* status 103900 = 0x0195dc */
    };
    hixl_msg_t m, d;
    hixl_msg_buf_t out;
    size_t consumed;
    char err[256];

    memset(&m, 0, sizeof(m));
    memset(&out, 0, sizeof(out));
    m.type = CTRL_SYNC;
    m.u.sync.token = 0x0102030405060708ull;
    encode(&out, &m);
    ck_assert_uint_eq(out.len, sizeof(sync));
    ck_assert_mem_eq(out.data, sync, sizeof(sync));
    hixl_buf_cleanup(&out);

    ck_assert_int_eq(decode_exact(ack, sizeof(ack), &d, &consumed, err,
                                  sizeof(err), NULL), CTRL_DECODE_OK);
    ck_assert_uint_eq(d.type, CTRL_NOTIFY_ACK);
    ck_assert_uint_eq(d.u.notify_ack.seq, 0x8000000000000011ull);
    ck_assert_uint_eq(d.u.notify_ack.status, HIXL_PARAM_INVALID);
    ck_assert_uint_eq(consumed, sizeof(ack));
    ck_assert_uint_eq(CTRL_MAGIC, 0x4c584948u);
}
END_TEST

/* Every proper prefix of a valid message: NEED_MORE (a message split by
 * TCP must not drop the connection), never OK, never a read beyond. */
START_TEST(test_prefixes)
{
    hixl_msg_t m[MAX_MSGS], d;
    hixl_msg_buf_t out;
    size_t n, i, cut, consumed;
    char err[256];
    hixl_msg_decode_result_t res;

    setup_big();
    n = make_msgs(m, 1);
    for (i = 0; i < n; ++i) {
        memset(&out, 0, sizeof(out));
        encode(&out, &m[i]);
        for (cut = 0; cut < out.len; ++cut) {
            res = decode_exact(out.data, cut, &d, &consumed, err, sizeof(err),
                               NULL);
            ck_assert_msg(res == CTRL_DECODE_NEED_MORE, "%s cut at %zu of "
                          "%zu: %d (%s)", hixl_msg_type_name(m[i].type), cut,
                          out.len, (int)res, err);
        }
        hixl_buf_cleanup(&out);
    }
    free(big_buf);
}
END_TEST

/* Decoding b[0, len) must fail with a reason mentioning needle. */
#define EXPECT_ERROR(_len, _needle) \
    do { \
        ck_assert_int_eq(decode_exact(b, (_len), &d, &consumed, err, \
                                      sizeof(err), NULL), CTRL_DECODE_ERROR); \
        ck_assert_msg(strstr(err, (_needle)) != NULL, "error \"%s\" should " \
                      "mention \"%s\"", err, (_needle)); \
    } while (0)

/* Header errors are found on the header alone, without waiting for (or
 * buffering) the payload it announces. */
START_TEST(test_bad_header)
{
    hixl_msg_t m, d;
    hixl_msg_buf_t out;
    uint8_t *b;
    size_t consumed, cut;
    char err[256];

    memset(&m, 0, sizeof(m));
    memset(&out, 0, sizeof(out));
    m.type = CTRL_SYNC;
    encode(&out, &m);
    b = out.data;

    /* bad magic: refused from the 4th byte on, at any length */
    b[0] = 'X';
    for (cut = 4; cut <= out.len; ++cut) {
        EXPECT_ERROR(cut, "magic");
    }
    b[0] = 'H';
    b[4] = CTRL_VERSION + 1;
    EXPECT_ERROR(CTRL_HDR_LEN, "version");
    EXPECT_ERROR(out.len, "version");
    b[4] = CTRL_VERSION;
    b[5] = 1;   /* version 257 */
    EXPECT_ERROR(out.len, "version");
    b[5] = 0;
    b[6] = 0;
    EXPECT_ERROR(out.len, "type");
    b[6] = CTRL_MSG_TYPE_LAST;
    EXPECT_ERROR(out.len, "type");
    b[6] = 0xff; b[7] = 0xff;
    EXPECT_ERROR(CTRL_HDR_LEN, "type");
    b[6] = CTRL_SYNC; b[7] = 0;
    /* a payload beyond CTRL_MAX_PAYLOAD: refused now, not NEED_MORE */
    b[8] = 0xff; b[9] = 0xff; b[10] = 0xff; b[11] = 0xff;
    EXPECT_ERROR(CTRL_HDR_LEN, "exceeds");
    b[8]  = (uint8_t)(CTRL_MAX_PAYLOAD + 1);
    b[9]  = (uint8_t)((CTRL_MAX_PAYLOAD + 1) >> 8);
    b[10] = (uint8_t)((CTRL_MAX_PAYLOAD + 1) >> 16);
    b[11] = (uint8_t)((CTRL_MAX_PAYLOAD + 1) >> 24);
    EXPECT_ERROR(CTRL_HDR_LEN, "exceeds");
    hixl_buf_cleanup(&out);
}
END_TEST

/* Payload errors: a declared payload length that does not match the
 * fields (too short: truncated field; too long: trailing bytes); a string
 * longer than its limit; a string length pointing past the payload. */
START_TEST(test_bad_payload)
{
    hixl_msg_t m, d;
    hixl_msg_buf_t out;
    uint8_t *b;
    size_t consumed, i;
    char err[256];

    memset(&m, 0, sizeof(m));
    memset(&out, 0, sizeof(out));
    m.type = CTRL_SYNC;
    encode(&out, &m);
    b = out.data;
    /* SYNC announcing 4 bytes of payload: its u64 token does not fit */
    b[8] = 4;
    EXPECT_ERROR(CTRL_HDR_LEN + 4, "truncated");
    b[8] = 0;
    EXPECT_ERROR(CTRL_HDR_LEN, "truncated");
    hixl_buf_cleanup(&out);

    /* one byte more than the fields: trailing bytes */
    memset(&out, 0, sizeof(out));
    encode(&out, &m);
    b = malloc(out.len + 1);
    ck_assert_ptr_nonnull(b);
    memcpy(b, out.data, out.len);
    b[out.len] = 0xaa;
    b[8] = 9;
    EXPECT_ERROR(out.len + 1, "trailing");
    free(b);
    hixl_buf_cleanup(&out);

    /* BYE whose reason says 0xffffffff bytes; and one byte over its limit */
    memset(&m, 0, sizeof(m));
    memset(&out, 0, sizeof(out));
    m.type = CTRL_BYE;
    m.u.bye.reason = hixl_msg_bytes("why", 3);
    encode(&out, &m);
    b = out.data;
    for (i = 0; i < 4; ++i) {
        b[CTRL_HDR_LEN + 4 + i] = 0xff;
    }
    EXPECT_ERROR(out.len, "reason");
    b[CTRL_HDR_LEN + 4] = (uint8_t)(CTRL_MAX_REASON + 1);
    b[CTRL_HDR_LEN + 5] = (uint8_t)((CTRL_MAX_REASON + 1) >> 8);
    b[CTRL_HDR_LEN + 6] = 0;
    b[CTRL_HDR_LEN + 7] = 0;
    EXPECT_ERROR(out.len, "reason");
    /* a length within the limit but past the payload end */
    b[CTRL_HDR_LEN + 4] = 4;
    b[CTRL_HDR_LEN + 5] = 0;
    EXPECT_ERROR(out.len, "truncated");
    hixl_buf_cleanup(&out);
}
END_TEST

/* The encoder refuses fields over their limits and bad types. */
START_TEST(test_encode_limits)
{
    static uint8_t name[CTRL_MAX_NAME + 1];
    hixl_msg_t m;
    hixl_msg_buf_t out;

    memset(&out, 0, sizeof(out));
    memset(&m, 0, sizeof(m));
    m.type = CTRL_HELLO;
    m.u.hello.name = hixl_msg_bytes(name, sizeof(name));
    hx_expect(hixl_msg_encode(&out, &m), HIXL_PARAM_INVALID, "name");
    m.type = CTRL_NOTIFY;
    m.u.notify.name = hixl_msg_bytes(name, CTRL_MAX_NAME);
    m.u.notify.msg  = hixl_msg_bytes(name, 0);
    m.u.notify.msg.len = CTRL_MAX_NOTIFY + 1;   /* never read: refused */
    hx_expect(hixl_msg_encode(&out, &m), HIXL_PARAM_INVALID, "msg");
    m.type = 0;
    hx_expect(hixl_msg_encode(&out, &m), HIXL_PARAM_INVALID, NULL);
    m.type = CTRL_MSG_TYPE_LAST;
    hx_expect(hixl_msg_encode(&out, &m), HIXL_PARAM_INVALID, NULL);
    ck_assert_uint_eq(out.len, 0);   /* nothing half-written */
    hixl_buf_cleanup(&out);

    ck_assert_str_eq(hixl_msg_type_name(CTRL_HELLO), "HELLO");
    ck_assert_str_eq(hixl_msg_type_name(CTRL_BYE), "BYE");
    ck_assert_str_eq(hixl_msg_type_name(0), "UNKNOWN");
    ck_assert_str_eq(hixl_msg_type_name(CTRL_MSG_TYPE_LAST), "UNKNOWN");
    ck_assert_str_eq(hixl_msg_type_name(0xffff), "UNKNOWN");
}
END_TEST

/* A stream of messages in one buffer, as TCP delivers them: decoded one
 * after the other, each consuming exactly its own bytes; the appended
 * encodings do not disturb what was already in the buffer. */
START_TEST(test_stream)
{
    hixl_msg_t m[MAX_MSGS], d;
    hixl_msg_buf_t out;
    size_t n, i, off = 0, consumed;
    char err[256];
    int v;

    setup_big();
    memset(&out, 0, sizeof(out));
    for (v = 0; v < 2; ++v) {
        n = make_msgs(m, v);
        for (i = 0; i < n; ++i) {
            encode(&out, &m[i]);
        }
    }
    for (v = 0; v < 2; ++v) {
        n = make_msgs(m, v);
        for (i = 0; i < n; ++i) {
            ck_assert_int_eq(hixl_msg_decode(out.data + off, out.len - off,
                                             &d, &consumed, err, sizeof(err)),
                             CTRL_DECODE_OK);
            msg_eq(&d, &m[i]);
            off += consumed;
        }
    }
    ck_assert_uint_eq(off, out.len);
    hixl_buf_cleanup(&out);
    free(big_buf);
}
END_TEST

/* Random corruption of valid messages: any result but a crash or an
 * over-read; an OK must consume no more than given and re-encode to the
 * very bytes it consumed (the decoder accepts one spelling only). */
START_TEST(test_fuzz)
{
    hixl_msg_t m[MAX_MSGS], d;
    hixl_msg_buf_t out, again;
    uint64_t rng = 12345;
    uint8_t *buf, *copy;
    size_t n, it, k, len, consumed;
    char err[256];
    hixl_msg_decode_result_t res;

    setup_big();
    n = make_msgs(m, 1);
    for (it = 0; it < 30000; ++it) {
        const hixl_msg_t *src = &m[hx_rand(&rng) % n];

        memset(&out, 0, sizeof(out));
        encode(&out, src);
        len = out.len;
        buf = out.data;
        for (k = hx_rand(&rng) % 4; k-- > 0;) {
            size_t pos = hx_rand(&rng) % len;

            switch (hx_rand(&rng) % 3) {
            case 0: buf[pos] ^= (uint8_t)(1u << (hx_rand(&rng) % 8)); break;
            case 1: buf[pos] = (uint8_t)hx_rand(&rng); break;
            default: buf[pos] = (hx_rand(&rng) & 1) ? 0xff : 0; break;
            }
        }
        if (hx_rand(&rng) % 4 == 0) {
            len = hx_rand(&rng) % (len + 1);   /* and sometimes cut */
        }
        consumed = SIZE_MAX;
        res = decode_exact(buf, len, &d, &consumed, err, sizeof(err), &copy);
        ck_assert(res == CTRL_DECODE_OK || res == CTRL_DECODE_NEED_MORE ||
                  res == CTRL_DECODE_ERROR);
        if (res == CTRL_DECODE_ERROR) {
            ck_assert_msg(err[0] != '\0', "ERROR without a reason");
        }
        if (res == CTRL_DECODE_OK) {
            ck_assert_uint_le(consumed, len);
            memset(&again, 0, sizeof(again));
            encode(&again, &d);
            ck_assert_uint_eq(again.len, consumed);
            ck_assert_mem_eq(again.data, copy, consumed);
            hixl_buf_cleanup(&again);
        }
        free(copy);
        hixl_buf_cleanup(&out);
    }
    free(big_buf);
}
END_TEST

static Suite *unit_codec_suite(void)
{
    Suite *s = suite_create("ctrl_msg");
    TCase *tc = hx_tcase("codec");

    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_wire_format);
    tcase_add_test(tc, test_prefixes);
    tcase_add_test(tc, test_bad_header);
    tcase_add_test(tc, test_bad_payload);
    tcase_add_test(tc, test_encode_limits);
    tcase_add_test(tc, test_stream);
    tcase_add_test(tc, test_fuzz);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_codec_suite());
}
