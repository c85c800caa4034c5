/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the control-message decoder (src/ctrl_msg.c), the code
 * that reads whatever a peer sends before anything else looks at it.
 *
 * Built two ways:
 *  - `make fuzz`: with clang -fsanitize=fuzzer,address,undefined as a
 *    libFuzzer binary (test/fuzz_ctrl_msg), run on test/corpus/ctrl_msg;
 *  - in `make check`: with the normal compiler and fuzz_replay.c as main(),
 *    replaying every file of the corpus (so a crash the fuzzer once found
 *    stays fixed).
 *
 * Beyond "no crash", it checks what the decoder promises: a message it
 * accepts re-encodes to exactly the bytes it consumed, every string and blob
 * lies inside the input, and an incomplete prefix of a valid message is
 * never accepted.
 */
#include "wire/ctrl_msg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check_inside(const hixl_msg_bytes_t *b, const uint8_t *data,
                              size_t size)
{
    if ((b->len != 0) &&
        ((b->ptr < data) || (b->ptr + b->len > data + size))) {
        fprintf(stderr, "fuzz: decoded field points outside the input\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hixl_msg_buf_t out = {NULL, 0, 0};
    size_t consumed, off = 0;
    hixl_msg_t msg;
    char err[256];
    const hixl_msg_bytes_t *fields[8];
    size_t nfields, i;

    /* the input may hold several messages, like a socket buffer */
    while (off < size) {
        if (hixl_msg_decode(data + off, size - off, &msg, &consumed, err,
                            sizeof(err)) != CTRL_DECODE_OK) {
            break;
        }
        nfields = 0;
        switch (msg.type) {
        case CTRL_HELLO:
            fields[nfields++] = &msg.u.hello.name;
            fields[nfields++] = &msg.u.hello.host;
            fields[nfields++] = &msg.u.hello.worker_addr;
            fields[nfields++] = &msg.u.hello.nonce;
            break;
        case CTRL_HELLO_ACK:
            fields[nfields++] = &msg.u.hello_ack.name;
            fields[nfields++] = &msg.u.hello_ack.reason;
            fields[nfields++] = &msg.u.hello_ack.worker_addr;
            fields[nfields++] = &msg.u.hello_ack.host;
            fields[nfields++] = &msg.u.hello_ack.proof;
            break;
        case CTRL_MEM_ADD:
            fields[nfields++] = &msg.u.mem_add.rkey;
            fields[nfields++] = &msg.u.mem_add.dev_key;
            break;
        case CTRL_NOTIFY:
            fields[nfields++] = &msg.u.notify.name;
            fields[nfields++] = &msg.u.notify.msg;
            break;
        case CTRL_BYE:
            fields[nfields++] = &msg.u.bye.reason;
            break;
        case CTRL_AUTH_CHALLENGE:
        case CTRL_AUTH_RESPONSE:
            fields[nfields++] = &msg.u.auth.data;
            break;
        }
        for (i = 0; i < nfields; ++i) {
            fuzz_check_inside(fields[i], data + off, consumed);
        }
        /* what was accepted must re-encode to the same bytes */
        out.len = 0;
        if ((hixl_msg_encode(&out, &msg) != HIXL_SUCCESS) ||
            (out.len != consumed) || memcmp(out.data, data + off, consumed)) {
            fprintf(stderr, "fuzz: %s does not re-encode to its bytes\n",
                    hixl_msg_type_name(msg.type));
            abort();
        }
        /* and no proper prefix of it decodes as a message */
        for (i = CTRL_HDR_LEN; i < consumed; i += 1 + consumed / 16) {
            if (hixl_msg_decode(data + off, i, &msg, &consumed, err,
                                sizeof(err)) == CTRL_DECODE_OK) {
                fprintf(stderr, "fuzz: a %zu-byte prefix decoded\n", i);
                abort();
            }
        }
        off += out.len;
    }
    hixl_buf_cleanup(&out);
    return 0;
}
