/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-channel messages: the handshake, memory tables, notifies and layer
 * signals that engines exchange over their TCP control connection.
 *
 * Wire format, all integers little-endian:
 *
 *   header  u32 magic "HIXL" | u16 version | u16 type | u32 payload length
 *   payload fixed fields of the type; strings and blobs are a u32 length
 *           followed by that many bytes (no terminator)
 *
 * The decoder checks everything before anything is used: magic, version,
 * type, payload length against CTRL_MAX_PAYLOAD, every field against the
 * payload end, every string/blob against its own limit, and that the payload
 * holds no trailing bytes.  Decoded strings and blobs point into the input
 * buffer (no copies).  It is the target of test/fuzz_ctrl_msg.
 */
#ifndef HIXL_CTRL_MSG_H_
#define HIXL_CTRL_MSG_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>

#define CTRL_MAGIC        0x4c584948u   /* "HIXL" read as little-endian */
/* Any change of a message's layout, the active messages' included
 * (core/am/am_proto.h), changes the version: a peer of another version is
 * refused with both numbers named (ctrl/dispatch.c). */
#define CTRL_VERSION      5
#define CTRL_HDR_LEN      12
#define CTRL_MAX_NAME     255           /* engine names, host ids */
#define CTRL_MAX_NOTIFY_NAME 1024       /* hixl's limit (HIXL_NOTIFY_NAME_MAX) */
#define CTRL_MAX_REASON   1024
#define CTRL_MAX_ADDR     (64 * 1024)   /* UCX worker address */
#define CTRL_MAX_RKEY     (64 * 1024)   /* packed UCX remote key */
#define CTRL_MAX_DEVKEY   1024          /* device part of a composite key */
#define CTRL_MAX_AUTH     64            /* nonces, MACs, resume tokens */
#define CTRL_MAX_NOTIFY   (16 * 1024 * 1024)
#define CTRL_MAX_PAYLOAD  (CTRL_MAX_NOTIFY + 4096)

typedef enum hixl_msg_type {
    CTRL_HELLO = 1,   /* connector -> listener: who I am */
    CTRL_HELLO_ACK,   /* listener -> connector: accepted or refused */
    CTRL_MEM_ADD,     /* listener -> connector: a region and its rkey */
    CTRL_MEM_DEL,     /* listener -> connector: a region is revoked */
    CTRL_TABLE_END,   /* listener -> connector: initial table complete */
    CTRL_SYNC,        /* either way: answer with SYNC_ACK once all before it
                         is processed (table refresh, revoke barrier) */
    CTRL_SYNC_ACK,
    CTRL_NOTIFY,      /* either way: a named message */
    CTRL_NOTIFY_ACK,  /* queued or refused */
    CTRL_LAYER,       /* connector -> listener: stream/layer is visible */
    CTRL_BYE,         /* either way: closing, with the reason */
    CTRL_AUTH_CHALLENGE, /* listener -> connector: prove the secret */
    CTRL_AUTH_RESPONSE,  /* connector -> listener: the proof */
    CTRL_DATA_ACK,       /* listener -> connector: the bytes of a library
                            WRITE are in memory, or why not */
    CTRL_MSG_TYPE_LAST
} hixl_msg_type_t;

typedef struct hixl_msg_bytes {
    const uint8_t *ptr;
    uint32_t       len;
} hixl_msg_bytes_t;

typedef struct hixl_msg {
    uint16_t type;
    union {
        struct {
            hixl_msg_bytes_t name;         /* sender's engine name */
            hixl_msg_bytes_t resume;       /* the token this listener issued to
                                          the sender's previous connection
                                          (ctrl/ctrl.h), or empty */
            hixl_msg_bytes_t host;         /* host identity (boot id) */
            uint32_t     flags;
            hixl_msg_bytes_t worker_addr;  /* sender's UCX worker address */
            hixl_msg_bytes_t nonce;        /* for authentication (auth.h) */
        } hello;
        struct {
            uint32_t     status;       /* hixl_status_t */
            hixl_msg_bytes_t name;         /* listener's engine name */
            hixl_msg_bytes_t reason;       /* why, when refused */
            hixl_msg_bytes_t worker_addr;
            hixl_msg_bytes_t host;         /* host identity (boot id) */
            uint32_t     max_streams;  /* layer signals it accepts */
            uint32_t     max_layers;
            hixl_msg_bytes_t proof;        /* listener's MAC, when
                                          authenticated */
            uint64_t         conn;         /* the connection's id: BIND names it
                                          (core/peer/inbound.h) */
            /* same-host copies (core/peer/cma.h): the listener's process, sent
             * only to a connector of the same host, which then asks the
             * kernel whether that process holds the other end */
            uint32_t     pid;
            hixl_msg_bytes_t resume;       /* issued to this connection only:
                                          proves a reconnect is the same
                                          engine (ctrl/ctrl.h) */
        } hello_ack;
        struct {
            uint64_t     id;
            uint64_t     addr;
            uint64_t     len;
            uint32_t     mem_type;
            hixl_msg_bytes_t rkey;         /* UCX part: empty for device memory
                                          that is not NIC-registered */
            hixl_msg_bytes_t dev_key;      /* device part (dev_key.h): empty
                                          for host memory */
        } mem_add;
        struct {
            uint64_t id;
            uint64_t addr;
        } mem_del;
        struct {
            uint64_t token;            /* TABLE_END, SYNC, SYNC_ACK */
        } sync;
        struct {
            uint64_t     seq;
            uint32_t     flags;
            hixl_msg_bytes_t name;
            hixl_msg_bytes_t msg;
        } notify;
        struct {
            uint64_t seq;
            uint32_t status;
        } notify_ack;
        struct {
            uint32_t stream;
            uint32_t layer;
            uint64_t gen;
        } layer;
        struct {
            uint32_t     status;
            hixl_msg_bytes_t reason;
        } bye;
        struct {
            hixl_msg_bytes_t data;         /* AUTH_CHALLENGE: nonce;
                                          AUTH_RESPONSE: MAC */
        } auth;
        struct {
            uint64_t chan;             /* echoed from the WRITE */
            uint64_t cookie;
            uint64_t addr;
            uint64_t len;
            uint32_t flags;
            uint32_t status;           /* hixl_status_t */
        } data_ack;
    } u;
} hixl_msg_t;

typedef enum hixl_msg_decode_result {
    CTRL_DECODE_OK,
    CTRL_DECODE_NEED_MORE,   /* a message has started but is incomplete */
    CTRL_DECODE_ERROR        /* malformed: the connection must be dropped */
} hixl_msg_decode_result_t;

/* Growable output buffer. */
typedef struct hixl_msg_buf {
    uint8_t *data;
    size_t   len;
    size_t   cap;
} hixl_msg_buf_t;

/* The longest payload a message of this type can have (every bytes field
 * at its limit), or 0 for no such type. */
uint32_t hixl_msg_max_payload(uint16_t type);

/* Decode the message at the start of buf.  On OK, *consumed is its length.
 * On ERROR, err (errlen bytes) says what is wrong. */
hixl_msg_decode_result_t hixl_msg_decode(const uint8_t *buf, size_t len,
                                     hixl_msg_t *msg, size_t *consumed,
                                     char *err, size_t errlen);

/* Append the encoding of msg to out.  RESOURCE_EXHAUSTED when out of memory,
 * PARAM_INVALID when a field exceeds its limit. */
hixl_status_t hixl_msg_encode(hixl_msg_buf_t *out, const hixl_msg_t *msg);

const char *hixl_msg_type_name(uint16_t type);

void hixl_buf_cleanup(hixl_msg_buf_t *buf);

static inline hixl_msg_bytes_t hixl_msg_bytes(const void *ptr, size_t len)
{
    hixl_msg_bytes_t b = {(const uint8_t*)ptr, (uint32_t)len};
    return b;
}

#endif
