/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the seed corpus of fuzz_ctrl_msg: one valid message of every type
 * (so the fuzzer starts from the real format), a few multi-message streams
 * and known-bad inputs.  Run by hand when the format changes:
 *   ./corpus_gen corpus/ctrl_msg
 */
#include "wire/ctrl_msg.h"

#include <stdio.h>
#include <string.h>

static int corpus_write(const char *dir, const char *name, const void *data,
                        size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if ((f == NULL) || (fwrite(data, 1, len, f) != len)) {
        perror(path);
        return -1;
    }
    fclose(f);
    return 0;
}

static int corpus_msg(const char *dir, const char *name, const hixl_msg_t *m)
{
    hixl_msg_buf_t buf = {NULL, 0, 0};
    int rc;

    if (hixl_msg_encode(&buf, m) != HIXL_SUCCESS) {
        return -1;
    }
    rc = corpus_write(dir, name, buf.data, buf.len);
    hixl_buf_cleanup(&buf);
    return rc;
}

int main(int argc, char **argv)
{
    static const uint8_t nonce[32] = {7};
    hixl_msg_buf_t stream = {NULL, 0, 0};
    hixl_msg_t m;
    const char *dir = (argc > 1) ? argv[1] : ".";
    char name[64];
    uint16_t t;
    int rc = 0;

    for (t = 1; t < CTRL_MSG_TYPE_LAST; ++t) {
        memset(&m, 0, sizeof(m));
        m.type = t;
        switch (t) {
        case CTRL_HELLO:
            m.u.hello.name        = hixl_msg_bytes("127.0.0.1", 9);
            m.u.hello.resume      = hixl_msg_bytes(nonce, 16);
            m.u.hello.host        = hixl_msg_bytes("boot-id", 7);
            m.u.hello.worker_addr = hixl_msg_bytes("\x01\x02\x03\x04", 4);
            m.u.hello.nonce       = hixl_msg_bytes(nonce, sizeof(nonce));
            break;
        case CTRL_HELLO_ACK:
            m.u.hello_ack.name        = hixl_msg_bytes("127.0.0.1:5000", 14);
            m.u.hello_ack.worker_addr = hixl_msg_bytes("\x05\x06", 2);
            m.u.hello_ack.max_streams = 1024;
            m.u.hello_ack.max_layers  = 256;
            m.u.hello_ack.resume      = hixl_msg_bytes(nonce, 16);
            break;
        case CTRL_MEM_ADD:
            m.u.mem_add.id   = 0x1000000000001ull;
            m.u.mem_add.addr = 0x7f0000000000ull;
            m.u.mem_add.len  = 1 << 20;
            m.u.mem_add.rkey = hixl_msg_bytes("rkey-bytes", 10);
            m.u.mem_add.dev_key = hixl_msg_bytes("dev-key", 7);
            break;
        case CTRL_NOTIFY:
            m.u.notify.seq  = 3;
            m.u.notify.name = hixl_msg_bytes("done", 4);
            m.u.notify.msg  = hixl_msg_bytes("7:1", 3);
            break;
        case CTRL_LAYER:
            m.u.layer.stream = 7;
            m.u.layer.layer  = 3;
            m.u.layer.gen    = 1;
            break;
        case CTRL_BYE:
            m.u.bye.reason = hixl_msg_bytes("finalizing", 10);
            break;
        case CTRL_AUTH_CHALLENGE:
        case CTRL_AUTH_RESPONSE:
            m.u.auth.data = hixl_msg_bytes(nonce, sizeof(nonce));
            break;
        default:
            m.u.sync.token = 5;   /* MEM_DEL, SYNC, ... fixed fields */
            break;
        }
        snprintf(name, sizeof(name), "type-%02u-%s", t, hixl_msg_type_name(t));
        rc |= corpus_msg(dir, name, &m);
        hixl_msg_encode(&stream, &m);
    }
    rc |= corpus_write(dir, "stream-all-types", stream.data, stream.len);
    rc |= corpus_write(dir, "bad-magic", "NOPE\x01\x00\x01\x00\x00\x00\x00\x00",
                       12);
    rc |= corpus_write(dir, "bad-version", "HIXL\x09\x00\x01\x00\x00\x00\x00\x00",
                       12);
    rc |= corpus_write(dir, "huge-length", "HIXL\x01\x00\x08\x00\xff\xff\xff\x7f",
                       12);
    rc |= corpus_write(dir, "truncated-hello", stream.data, 20);
    hixl_buf_cleanup(&stream);
    return rc ? 1 : 0;
}
