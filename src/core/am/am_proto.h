/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's active messages: what engines send each other through UCX
 * itself (the control connection carries the rest).
 *
 *   BIND       connector -> listener's in worker, with UCX's REPLY flag:
 *              "the endpoint this arrives on serves connection <conn>"
 *   BIND_ACK   back on it: the listener owns that endpoint now
 *   WRITE      (am data path) pieces of data for connection <conn>: a
 *              table of the pieces (hixl_am_piece_t x count), their data
 *              back to back, then the seal (HIXL_AM_SEAL); the answer (the
 *              bytes are in memory, or why not) comes on the control
 *              connection (DATA_ACK), as UCX may destroy the endpoint
 *              before a rendezvous receive ends
 *   READ       (am data path) send me these pieces: the table alone
 *   READ_DATA  the table again and the pieces' data, or why not
 *   UNBIND     connector -> listener, REPLY flag, when the connector ends
 *              the connection: "close the endpoint this arrives on"
 *   UNBIND_ACK back on it, just before the listener closes it
 *              (core/peer/ep_close.h)
 *
 * Every message has the same fixed header, checked before use (magic,
 * version, length): a message from something that is not this library is
 * dropped.  Both sides run the same library on the same architecture, so
 * the header is in host byte order.
 */
#ifndef HIXL_CORE_AM_PROTO_H_
#define HIXL_CORE_AM_PROTO_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    HIXL_AM_BIND = 1,
    HIXL_AM_BIND_ACK,
    HIXL_AM_WRITE,
    HIXL_AM_READ,
    HIXL_AM_READ_DATA,
    HIXL_AM_UNBIND,
    HIXL_AM_UNBIND_ACK,
    HIXL_AM_LAST
};

#define HIXL_AM_MAGIC   0x4d415848u   /* "HXAM" */
/* Any change of a message's layout changes this and the control
 * protocol's version (wire/ctrl_msg.h), so that the handshake refuses a
 * peer of another version. */
#define HIXL_AM_VERSION 3

/* The last bytes of a guarded send's payload (core/am/am.h): intact, or
 * broken when its sender stopped reading the data part-way. */
#define HIXL_AM_SEAL        UINT64_C(0x4c41455358414948)   /* "HIXSEAL" */
#define HIXL_AM_SEAL_BROKEN UINT64_C(0)
#define HIXL_AM_SEAL_LEN    sizeof(uint64_t)

/* flags */
#define HIXL_AM_FLAG_SLOT      0x3fu  /* the epoch slot of the operation
                                         (core/peer/channel.h), a mask */
#define HIXL_AM_FLAG_ERR_PEER  0x40u  /* BIND: the endpoint is in PEER mode */
/* WRITE: more of its request follows at once, so its answer may wait
 * to go out with theirs (core/peer/inbound.h) */
#define HIXL_AM_FLAG_MORE      0x80u

typedef struct hixl_am_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t flags;
    uint64_t conn;     /* the listener's id of the connection */
    uint64_t chan;     /* the connector's id of it (echoed in answers) */
    uint64_t cookie;   /* the connector's request handle (echoed) */
    uint64_t addr;     /* WRITE, READ: the first piece's, in the listener's
                          memory; answers: the piece refused */
    uint64_t len;      /* the pieces' bytes (a refused piece's) */
    uint32_t count;    /* pieces in the table */
    int32_t  status;   /* answers: hixl_status_t */
} hixl_am_hdr_t;

/* One piece of a WRITE, READ or READ_DATA: bytes [remote, +len) of the
 * listener's memory and [local, +len) of the connector's. */
typedef struct hixl_am_piece {
    uint64_t remote;
    uint64_t local;
    uint64_t len;
} hixl_am_piece_t;

/* A message's data at most, and its table and data together at most:
 * with the headers and the seal they fit one of the 64 KiB segments the
 * library gives UCX's tcp (core/worker/ucx_settings.c), so the receiver's
 * UCX hands the handler its receive buffer instead of reassembling
 * fragments into a buffer of its own first (a malloc and a copy per
 * message). */
#define HIXL_AM_CHUNK       (60 * 1024)
#define HIXL_AM_PAYLOAD_MAX (63 * 1024)
/* Pieces in a message at most: bounds what a receiver walks per message
 * and the table's share of small pieces' messages. */
#define HIXL_AM_MAX_PIECES  256
/* A descriptor is cut across messages at multiples of this from its
 * start, so that a WRITE cut short (its connection ended) leaves whole
 * pages of it old or new, never a page torn at a message's edge. */
#define HIXL_AM_CUT         4096

static inline void hixl_am_hdr_init(hixl_am_hdr_t *h)
{
    *h         = (hixl_am_hdr_t){0};
    h->magic   = HIXL_AM_MAGIC;
    h->version = HIXL_AM_VERSION;
}

/* The header of a message, copied into *buf (UCX passes it at whatever
 * alignment it lands), or NULL when it is not one of the library's. */
static inline const hixl_am_hdr_t *hixl_am_hdr_check(const void *header,
                                                     size_t length,
                                                     hixl_am_hdr_t *buf)
{
    if (length != sizeof(*buf)) {
        return NULL;
    }
    memcpy(buf, header, sizeof(*buf));
    if ((buf->magic != HIXL_AM_MAGIC) || (buf->version != HIXL_AM_VERSION)) {
        return NULL;
    }
    return buf;
}

#endif
