/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control message codec.  Each type's payload is described once, as a list
 * of fields (ctrl_layouts); the encoder and the decoder both walk that list,
 * so they cannot disagree about the format.
 */
#include "config.h"
#include "wire/ctrl_msg.h"
#include "util/byteorder.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum ctrl_field_kind {
    CTRL_F_U32,
    CTRL_F_U64,
    CTRL_F_BYTES
} ctrl_field_kind_t;

typedef struct ctrl_field {
    ctrl_field_kind_t kind;
    uint32_t          limit;    /* CTRL_F_BYTES: longest accepted */
    size_t            offset;   /* into hixl_msg_t */
    const char       *name;
} ctrl_field_t;

#define F_U32(_t, _m)    {CTRL_F_U32, 0, offsetof(hixl_msg_t, u._t._m), #_m}
#define F_U64(_t, _m)    {CTRL_F_U64, 0, offsetof(hixl_msg_t, u._t._m), #_m}
#define F_B(_t, _m, _l)  {CTRL_F_BYTES, _l, offsetof(hixl_msg_t, u._t._m), #_m}

static const ctrl_field_t ctrl_f_hello[] = {
    F_B(hello, name, CTRL_MAX_NAME), F_B(hello, resume, CTRL_MAX_AUTH),
    F_B(hello, host, CTRL_MAX_NAME), F_U32(hello, flags),
    F_B(hello, worker_addr, CTRL_MAX_ADDR), F_B(hello, nonce, CTRL_MAX_AUTH)};
static const ctrl_field_t ctrl_f_hello_ack[] = {
    F_U32(hello_ack, status), F_B(hello_ack, name, CTRL_MAX_NAME),
    F_B(hello_ack, reason, CTRL_MAX_REASON),
    F_B(hello_ack, worker_addr, CTRL_MAX_ADDR),
    F_B(hello_ack, host, CTRL_MAX_NAME), F_U32(hello_ack, max_streams),
    F_U32(hello_ack, max_layers), F_B(hello_ack, proof, CTRL_MAX_AUTH),
    F_U64(hello_ack, conn), F_U32(hello_ack, pid),
    F_B(hello_ack, resume, CTRL_MAX_AUTH)};
static const ctrl_field_t ctrl_f_mem_add[] = {
    F_U64(mem_add, id), F_U64(mem_add, addr), F_U64(mem_add, len),
    F_U32(mem_add, mem_type), F_B(mem_add, rkey, CTRL_MAX_RKEY),
    F_B(mem_add, dev_key, CTRL_MAX_DEVKEY)};
static const ctrl_field_t ctrl_f_mem_del[] = {
    F_U64(mem_del, id), F_U64(mem_del, addr)};
static const ctrl_field_t ctrl_f_sync[] = {F_U64(sync, token)};
static const ctrl_field_t ctrl_f_notify[] = {
    F_U64(notify, seq), F_U32(notify, flags),
    F_B(notify, name, CTRL_MAX_NOTIFY_NAME),
    F_B(notify, msg, CTRL_MAX_NOTIFY)};
static const ctrl_field_t ctrl_f_notify_ack[] = {
    F_U64(notify_ack, seq), F_U32(notify_ack, status)};
static const ctrl_field_t ctrl_f_layer[] = {
    F_U32(layer, stream), F_U32(layer, layer), F_U64(layer, gen)};
static const ctrl_field_t ctrl_f_bye[] = {
    F_U32(bye, status), F_B(bye, reason, CTRL_MAX_REASON)};
static const ctrl_field_t ctrl_f_auth[] = {F_B(auth, data, CTRL_MAX_AUTH)};
static const ctrl_field_t ctrl_f_data_ack[] = {
    F_U64(data_ack, chan), F_U64(data_ack, cookie), F_U64(data_ack, addr),
    F_U64(data_ack, len), F_U32(data_ack, flags), F_U32(data_ack, status)};

#define LAYOUT(_n, _f) {_n, _f, sizeof(_f) / sizeof(_f[0])}

static const struct {
    const char         *name;
    const ctrl_field_t *fields;
    size_t              count;
} ctrl_layouts[CTRL_MSG_TYPE_LAST] = {
    [CTRL_HELLO]      = LAYOUT("HELLO", ctrl_f_hello),
    [CTRL_HELLO_ACK]  = LAYOUT("HELLO_ACK", ctrl_f_hello_ack),
    [CTRL_MEM_ADD]    = LAYOUT("MEM_ADD", ctrl_f_mem_add),
    [CTRL_MEM_DEL]    = LAYOUT("MEM_DEL", ctrl_f_mem_del),
    [CTRL_TABLE_END]  = LAYOUT("TABLE_END", ctrl_f_sync),
    [CTRL_SYNC]       = LAYOUT("SYNC", ctrl_f_sync),
    [CTRL_SYNC_ACK]   = LAYOUT("SYNC_ACK", ctrl_f_sync),
    [CTRL_NOTIFY]     = LAYOUT("NOTIFY", ctrl_f_notify),
    [CTRL_NOTIFY_ACK] = LAYOUT("NOTIFY_ACK", ctrl_f_notify_ack),
    [CTRL_LAYER]      = LAYOUT("LAYER", ctrl_f_layer),
    [CTRL_BYE]        = LAYOUT("BYE", ctrl_f_bye),
    [CTRL_AUTH_CHALLENGE] = LAYOUT("AUTH_CHALLENGE", ctrl_f_auth),
    [CTRL_AUTH_RESPONSE]  = LAYOUT("AUTH_RESPONSE", ctrl_f_auth),
    [CTRL_DATA_ACK]       = LAYOUT("DATA_ACK", ctrl_f_data_ack),
};

const char *hixl_msg_type_name(uint16_t type)
{
    if ((type == 0) || (type >= CTRL_MSG_TYPE_LAST)) {
        return "UNKNOWN";
    }
    return ctrl_layouts[type].name;
}

/* What the other side sent instead of a hixl message, said plainly: an
 * HTTP server, a TLS one or anything else on that port is "not a hixl
 * engine", with its first bytes as text where they are text. */
static void hixl_msg_not_hixl(const uint8_t *buf, char *err, size_t errlen)
{
    char what[32];
    int i, printable = 1;

    for (i = 0; i < 4; ++i) {
        printable &= (buf[i] >= 0x20) && (buf[i] < 0x7f);
    }
    if (printable) {
        snprintf(what, sizeof(what), "\"%.4s\" (0x%08x)", (const char*)buf,
                 hixl_get_le32(buf));
    } else {
        snprintf(what, sizeof(what), "0x%08x", hixl_get_le32(buf));
    }
    snprintf(err, errlen, "not a hixl engine: it sent %s where every hixl "
             "message starts with the magic \"HIXL\"", what);
}

uint32_t hixl_msg_max_payload(uint16_t type)
{
    const ctrl_field_t *f;
    uint64_t max = 0;
    size_t i;

    if ((type == 0) || (type >= CTRL_MSG_TYPE_LAST)) {
        return 0;
    }
    for (i = 0; i < ctrl_layouts[type].count; ++i) {
        f    = &ctrl_layouts[type].fields[i];
        max += (f->kind == CTRL_F_U32) ? 4 : (f->kind == CTRL_F_U64) ? 8 :
               4ull + f->limit;
    }
    return (max > CTRL_MAX_PAYLOAD) ? CTRL_MAX_PAYLOAD : (uint32_t)max;
}

hixl_msg_decode_result_t hixl_msg_decode(const uint8_t *buf, size_t len,
                                     hixl_msg_t *msg, size_t *consumed,
                                     char *err, size_t errlen)
{
    const ctrl_field_t *f;
    const uint8_t *p, *end;
    uint32_t magic, payload_len, blen;
    uint16_t version, type;
    size_t i;

    if (len < CTRL_HDR_LEN) {
        /* Reject a bad magic early, so a non-hixl client is dropped on its
         * first bytes instead of being waited for. */
        if ((len >= 4) && (hixl_get_le32(buf) != CTRL_MAGIC)) {
            hixl_msg_not_hixl(buf, err, errlen);
            return CTRL_DECODE_ERROR;
        }
        return CTRL_DECODE_NEED_MORE;
    }
    magic       = hixl_get_le32(buf);
    version     = (uint16_t)(buf[4] | (buf[5] << 8));
    type        = (uint16_t)(buf[6] | (buf[7] << 8));
    payload_len = hixl_get_le32(buf + 8);
    if (magic != CTRL_MAGIC) {
        hixl_msg_not_hixl(buf, err, errlen);
        return CTRL_DECODE_ERROR;
    }
    if (version != CTRL_VERSION) {
        snprintf(err, errlen, "the peer speaks hixl control protocol "
                 "version %u, this engine version %u (a library of another "
                 "release: give both ends the same one)", version,
                 CTRL_VERSION);
        return CTRL_DECODE_ERROR;
    }
    if ((type == 0) || (type >= CTRL_MSG_TYPE_LAST)) {
        snprintf(err, errlen, "unknown message type %u", type);
        return CTRL_DECODE_ERROR;
    }
    if (payload_len > CTRL_MAX_PAYLOAD) {
        snprintf(err, errlen, "%s payload of %u bytes exceeds %u",
                 ctrl_layouts[type].name, payload_len, CTRL_MAX_PAYLOAD);
        return CTRL_DECODE_ERROR;
    }
    if (len - CTRL_HDR_LEN < payload_len) {
        return CTRL_DECODE_NEED_MORE;
    }

    memset(msg, 0, sizeof(*msg));
    msg->type = type;
    p         = buf + CTRL_HDR_LEN;
    end       = p + payload_len;
    for (i = 0; i < ctrl_layouts[type].count; ++i) {
        f = &ctrl_layouts[type].fields[i];
        switch (f->kind) {
        case CTRL_F_U32:
            if ((size_t)(end - p) < 4) {
                goto truncated;
            }
            *(uint32_t*)((char*)msg + f->offset) = hixl_get_le32(p);
            p += 4;
            break;
        case CTRL_F_U64:
            if ((size_t)(end - p) < 8) {
                goto truncated;
            }
            *(uint64_t*)((char*)msg + f->offset) = hixl_get_le64(p);
            p += 8;
            break;
        case CTRL_F_BYTES:
            if ((size_t)(end - p) < 4) {
                goto truncated;
            }
            blen = hixl_get_le32(p);
            p += 4;
            if (blen > f->limit) {
                snprintf(err, errlen, "%s.%s is %u bytes, limit %u",
                         ctrl_layouts[type].name, f->name, blen, f->limit);
                return CTRL_DECODE_ERROR;
            }
            if ((size_t)(end - p) < blen) {
                goto truncated;
            }
            ((hixl_msg_bytes_t*)((char*)msg + f->offset))->ptr = p;
            ((hixl_msg_bytes_t*)((char*)msg + f->offset))->len = blen;
            p += blen;
            break;
        }
    }
    if (p != end) {
        snprintf(err, errlen, "%s has %zu trailing bytes",
                 ctrl_layouts[type].name, (size_t)(end - p));
        return CTRL_DECODE_ERROR;
    }
    *consumed = CTRL_HDR_LEN + payload_len;
    return CTRL_DECODE_OK;

truncated:
    snprintf(err, errlen, "%s truncated at field %s (payload %u bytes)",
             ctrl_layouts[type].name, f->name, payload_len);
    return CTRL_DECODE_ERROR;
}

static hixl_status_t ctrl_buf_reserve(hixl_msg_buf_t *out, size_t extra)
{
    size_t cap;
    uint8_t *data;

    if (out->len + extra <= out->cap) {
        return HIXL_SUCCESS;
    }
    cap = out->cap ? out->cap : 256;
    while (cap < out->len + extra) {
        cap *= 2;
    }
    data = realloc(out->data, cap);
    if (data == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "%zu-byte control message", extra);
    }
    out->data = data;
    out->cap  = cap;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_msg_encode(hixl_msg_buf_t *out, const hixl_msg_t *msg)
{
    const ctrl_field_t *f;
    const hixl_msg_bytes_t *b;
    size_t payload = 0, i;
    hixl_status_t status;
    uint8_t *p;

    if ((msg->type == 0) || (msg->type >= CTRL_MSG_TYPE_LAST)) {
        return hixl_error(HIXL_PARAM_INVALID, "internal: encoding message "
                          "type %u", msg->type);
    }
    for (i = 0; i < ctrl_layouts[msg->type].count; ++i) {
        f = &ctrl_layouts[msg->type].fields[i];
        if (f->kind == CTRL_F_BYTES) {
            b = (const hixl_msg_bytes_t*)((const char*)msg + f->offset);
            if (b->len > f->limit) {
                return hixl_error(HIXL_PARAM_INVALID, "%s.%s is %u bytes, "
                                  "limit %u", ctrl_layouts[msg->type].name,
                                  f->name, b->len, f->limit);
            }
            payload += 4 + b->len;
        } else {
            payload += (f->kind == CTRL_F_U32) ? 4 : 8;
        }
    }

    status = ctrl_buf_reserve(out, CTRL_HDR_LEN + payload);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    p = out->data + out->len;
    hixl_put_le32(p, CTRL_MAGIC);
    p[4] = (uint8_t)CTRL_VERSION;
    p[5] = (uint8_t)(CTRL_VERSION >> 8);
    p[6] = (uint8_t)msg->type;
    p[7] = (uint8_t)(msg->type >> 8);
    hixl_put_le32(p + 8, (uint32_t)payload);
    p += CTRL_HDR_LEN;
    for (i = 0; i < ctrl_layouts[msg->type].count; ++i) {
        f = &ctrl_layouts[msg->type].fields[i];
        switch (f->kind) {
        case CTRL_F_U32:
            hixl_put_le32(p, *(const uint32_t*)((const char*)msg + f->offset));
            p += 4;
            break;
        case CTRL_F_U64:
            hixl_put_le64(p, *(const uint64_t*)((const char*)msg + f->offset));
            p += 8;
            break;
        case CTRL_F_BYTES:
            b = (const hixl_msg_bytes_t*)((const char*)msg + f->offset);
            hixl_put_le32(p, b->len);
            if (b->len) {
                memcpy(p + 4, b->ptr, b->len);
            }
            p += 4 + b->len;
            break;
        }
    }
    out->len += CTRL_HDR_LEN + payload;
    return HIXL_SUCCESS;
}

void hixl_buf_cleanup(hixl_msg_buf_t *buf)
{
    free(buf->data);
    buf->data = NULL;
    buf->len  = 0;
    buf->cap  = 0;
}
