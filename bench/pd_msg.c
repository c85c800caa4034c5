/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: encoding and checked decoding of the notify messages
 * (format in pd_msg.h).  Byte order is fixed (little-endian) because the
 * two roles may run on different machines.
 */
#include "pd_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fixed fields of a LAYOUT body before its two arrays. */
#define PD_LAYOUT_FIXED (6u * 4u + 8u + 4u + 2u + 2u)
#define PD_RESULT_FIXED (4u + 4u + 8u + 8u + 8u + 8u + 4u)

typedef struct pd_wr {
    uint8_t *p;
    size_t   cap;
    size_t   len;
} pd_wr_t;

typedef struct pd_rd {
    const uint8_t *p;
    size_t         len;
    size_t         off;
} pd_rd_t;

static void pd_put(pd_wr_t *w, uint64_t v, unsigned bytes)
{
    unsigned i;

    if (w->len + bytes > w->cap) {
        w->len = w->cap + 1;   /* overflowed: the encoder returns 0 */
        return;
    }
    for (i = 0; i < bytes; ++i) {
        w->p[w->len++] = (uint8_t)(v >> (8 * i));
    }
}

static void pd_put_bytes(pd_wr_t *w, const void *src, size_t n)
{
    if (w->len + n > w->cap) {
        w->len = w->cap + 1;
        return;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}

/* Callers check the body length first, so reads never run past it. */
static uint64_t pd_get(pd_rd_t *r, unsigned bytes)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < bytes; ++i) {
        v |= (uint64_t)r->p[r->off + i] << (8 * i);
    }
    r->off += bytes;
    return v;
}

static void pd_header(pd_wr_t *w, pd_msg_type_t type, uint32_t body_len)
{
    pd_put(w, PD_MSG_MAGIC, 4);
    pd_put(w, PD_MSG_VERSION, 2);
    pd_put(w, type, 2);
    pd_put(w, body_len, 4);
    pd_put(w, 0, 4);
}

static size_t pd_done(const pd_wr_t *w)
{
    return (w->len <= w->cap) ? w->len : 0;
}

static int pd_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if ((err != NULL) && (errlen > 0)) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *pd_msg_type_name(unsigned type)
{
    static const char *const names[] = {"?", "HELLO", "LAYOUT", "START", "GO",
                                        "RESULT", "QUIT", "REFUSE"};

    return (type < sizeof(names) / sizeof(names[0])) ? names[type] : "?";
}

size_t pd_msg_hello(uint8_t *buf, size_t cap, uint32_t modes,
                    uint32_t prefill_compute_us)
{
    pd_wr_t w = {buf, cap, 0};

    pd_header(&w, PD_MSG_HELLO, 8);
    pd_put(&w, modes, 4);
    pd_put(&w, prefill_compute_us, 4);
    return pd_done(&w);
}

size_t pd_msg_layout(uint8_t *buf, size_t cap, const pd_layout_t *l)
{
    pd_wr_t w = {buf, cap, 0};
    const pd_shape_t *s = &l->shape;
    unsigned i;

    if (pd_layout_check(l, NULL, 0) != 0) {
        return 0;
    }
    pd_header(&w, PD_MSG_LAYOUT, PD_LAYOUT_FIXED + s->layers * 8u +
              l->blocks * 4u);
    pd_put(&w, s->layers, 4);
    pd_put(&w, s->kv_heads, 4);
    pd_put(&w, s->head_dim, 4);
    pd_put(&w, s->seq_len, 4);
    pd_put(&w, s->dtype_bytes, 4);
    pd_put(&w, s->block_tokens, 4);
    pd_put(&w, l->block_bytes, 8);
    pd_put(&w, l->blocks, 4);
    pd_put(&w, l->staged_port, 2);
    pd_put(&w, 0, 2);
    for (i = 0; i < s->layers; ++i) {
        pd_put(&w, l->layer_addr[i], 8);
    }
    for (i = 0; i < l->blocks; ++i) {
        pd_put(&w, l->slot[i], 4);
    }
    return pd_done(&w);
}

size_t pd_msg_start(uint8_t *buf, size_t cap, pd_msg_type_t type,
                    uint32_t mode, uint64_t run)
{
    pd_wr_t w = {buf, cap, 0};

    if ((type != PD_MSG_START) && (type != PD_MSG_GO)) {
        return 0;
    }
    pd_header(&w, type, 16);
    pd_put(&w, mode, 4);
    pd_put(&w, 0, 4);
    pd_put(&w, run, 8);
    return pd_done(&w);
}

static void pd_put_text(pd_wr_t *w, const char *text)
{
    size_t n = (text != NULL) ? strlen(text) : 0;

    n = (n > PD_MSG_TEXT_MAX) ? PD_MSG_TEXT_MAX : n;   /* truncated */
    pd_put(w, n, 4);
    pd_put_bytes(w, text, n);
}

static uint32_t pd_text_len(const char *text)
{
    size_t n = (text != NULL) ? strlen(text) : 0;

    return (uint32_t)((n > PD_MSG_TEXT_MAX) ? PD_MSG_TEXT_MAX : n);
}

size_t pd_msg_result(uint8_t *buf, size_t cap, uint32_t mode, uint32_t failed,
                     uint64_t run, uint64_t bad_bytes, uint64_t total_ns,
                     uint64_t layer0_ns, const char *text)
{
    pd_wr_t w = {buf, cap, 0};

    pd_header(&w, PD_MSG_RESULT, PD_RESULT_FIXED + pd_text_len(text));
    pd_put(&w, mode, 4);
    pd_put(&w, failed, 4);
    pd_put(&w, run, 8);
    pd_put(&w, bad_bytes, 8);
    pd_put(&w, total_ns, 8);
    pd_put(&w, layer0_ns, 8);
    pd_put_text(&w, text);
    return pd_done(&w);
}

size_t pd_msg_quit(uint8_t *buf, size_t cap)
{
    pd_wr_t w = {buf, cap, 0};

    pd_header(&w, PD_MSG_QUIT, 0);
    return pd_done(&w);
}

size_t pd_msg_refuse(uint8_t *buf, size_t cap, const char *text)
{
    pd_wr_t w = {buf, cap, 0};

    pd_header(&w, PD_MSG_REFUSE, 4 + pd_text_len(text));
    pd_put_text(&w, text);
    return pd_done(&w);
}

/* ---- layout checks -------------------------------------------------------- */

static int pd_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;

    return (x > y) - (x < y);
}

static int pd_layout_check_shape(const pd_layout_t *l, uint64_t *layer_bytes,
                                 char *err, size_t errlen)
{
    const pd_shape_t *s = &l->shape;
    const unsigned dims[] = {s->layers, s->kv_heads, s->head_dim, s->seq_len,
                             s->dtype_bytes, s->block_tokens};
    uint64_t bb, blocks, lb, total;
    unsigned i;

    for (i = 0; i < sizeof(dims) / sizeof(dims[0]); ++i) {
        if ((dims[i] == 0) || (dims[i] > PD_MAX_DIM)) {
            return pd_fail(err, errlen, "shape number %u is %u, outside "
                           "1..%u", i, dims[i], PD_MAX_DIM);
        }
    }
    if (s->layers > PD_MAX_LAYERS) {
        return pd_fail(err, errlen, "%u layers, at most %u", s->layers,
                       PD_MAX_LAYERS);
    }
    /* each factor < 2^25: two products fit 64 bits, the third is checked */
    bb = (uint64_t)s->kv_heads * s->head_dim;
    if (__builtin_mul_overflow(bb, (uint64_t)s->block_tokens * s->dtype_bytes,
                               &bb) || (bb != l->block_bytes)) {
        return pd_fail(err, errlen, "block bytes %llu do not match the shape",
                       (unsigned long long)l->block_bytes);
    }
    blocks = 2 * (((uint64_t)s->seq_len + s->block_tokens - 1) /
                  s->block_tokens);
    if ((blocks != l->blocks) || (blocks > PD_MAX_BLOCKS)) {
        return pd_fail(err, errlen, "%u blocks per layer: the shape gives "
                       "%llu (at most %u)", l->blocks,
                       (unsigned long long)blocks, PD_MAX_BLOCKS);
    }
    if (__builtin_mul_overflow(blocks, bb, &lb) ||
        __builtin_mul_overflow(lb, (uint64_t)s->layers, &total) ||
        (total > ((uint64_t)1 << 46))) {
        return pd_fail(err, errlen, "the cache is larger than 64 TiB");
    }
    *layer_bytes = lb;
    return 0;
}

int pd_layout_check(const pd_layout_t *l, char *err, size_t errlen)
{
    uint64_t lb = 0, *sorted;
    uint8_t *seen;
    unsigned i;

    if (pd_layout_check_shape(l, &lb, err, errlen) != 0) {
        return -1;
    }
    for (i = 0; i < l->shape.layers; ++i) {
        if ((l->layer_addr[i] == 0) ||
            (l->layer_addr[i] > UINT64_MAX - lb)) {
            return pd_fail(err, errlen, "layer %u at 0x%llx cannot hold %llu "
                           "bytes", i, (unsigned long long)l->layer_addr[i],
                           (unsigned long long)lb);
        }
    }
    sorted = malloc(l->shape.layers * sizeof(*sorted));
    seen   = calloc(l->blocks, 1);
    if ((sorted == NULL) || (seen == NULL)) {
        free(sorted);
        free(seen);
        return pd_fail(err, errlen, "out of memory");
    }
    memcpy(sorted, l->layer_addr, l->shape.layers * sizeof(*sorted));
    qsort(sorted, l->shape.layers, sizeof(*sorted), pd_cmp_u64);
    for (i = 0; i + 1 < l->shape.layers; ++i) {
        if (sorted[i] + lb > sorted[i + 1]) {
            pd_fail(err, errlen, "layers at 0x%llx and 0x%llx overlap",
                    (unsigned long long)sorted[i],
                    (unsigned long long)sorted[i + 1]);
            goto err;
        }
    }
    for (i = 0; i < l->blocks; ++i) {
        if ((l->slot[i] >= l->blocks) || seen[l->slot[i]]) {
            pd_fail(err, errlen, "block table: slot %u of block %u is out of "
                    "range or taken twice", l->slot[i], i);
            goto err;
        }
        seen[l->slot[i]] = 1;
    }
    free(sorted);
    free(seen);
    return 0;

err:
    free(sorted);
    free(seen);
    return -1;
}

/* ---- decoding --------------------------------------------------------------- */

static void pd_get_text(pd_rd_t *r, char *text, size_t n)
{
    memcpy(text, r->p + r->off, n);
    text[n] = '\0';
    r->off += n;
}

static int pd_decode_layout(pd_rd_t *r, uint32_t body_len, pd_layout_t *l,
                            char *err, size_t errlen)
{
    pd_shape_t *s = &l->shape;
    unsigned i;

    if (body_len < PD_LAYOUT_FIXED) {
        return pd_fail(err, errlen, "LAYOUT of %u bytes is too short",
                       body_len);
    }
    s->layers       = (unsigned)pd_get(r, 4);
    s->kv_heads     = (unsigned)pd_get(r, 4);
    s->head_dim     = (unsigned)pd_get(r, 4);
    s->seq_len      = (unsigned)pd_get(r, 4);
    s->dtype_bytes  = (unsigned)pd_get(r, 4);
    s->block_tokens = (unsigned)pd_get(r, 4);
    l->block_bytes  = pd_get(r, 8);
    l->blocks       = (uint32_t)pd_get(r, 4);
    l->staged_port  = (uint16_t)pd_get(r, 2);
    if (pd_get(r, 2) != 0) {
        return pd_fail(err, errlen, "LAYOUT: reserved field is not zero");
    }
    /* sizes before arrays: layers and blocks are bounded by now */
    if ((s->layers == 0) || (s->layers > PD_MAX_LAYERS) ||
        (l->blocks == 0) || (l->blocks > PD_MAX_BLOCKS)) {
        return pd_fail(err, errlen, "LAYOUT: %u layers, %u blocks (at most "
                       "%u and %u)", s->layers, l->blocks, PD_MAX_LAYERS,
                       PD_MAX_BLOCKS);
    }
    if (body_len != PD_LAYOUT_FIXED + s->layers * 8u + l->blocks * 4u) {
        return pd_fail(err, errlen, "LAYOUT: body of %u bytes, %u layers and "
                       "%u blocks need %u", body_len, s->layers, l->blocks,
                       PD_LAYOUT_FIXED + s->layers * 8u + l->blocks * 4u);
    }
    l->layer_addr = calloc(s->layers, sizeof(*l->layer_addr));
    l->slot       = calloc(l->blocks, sizeof(*l->slot));
    if ((l->layer_addr == NULL) || (l->slot == NULL)) {
        return pd_fail(err, errlen, "out of memory");
    }
    for (i = 0; i < s->layers; ++i) {
        l->layer_addr[i] = pd_get(r, 8);
    }
    for (i = 0; i < l->blocks; ++i) {
        l->slot[i] = (uint32_t)pd_get(r, 4);
    }
    return pd_layout_check(l, err, errlen);
}

static int pd_decode_body(pd_rd_t *r, uint32_t body_len, pd_msg_t *m,
                          char *err, size_t errlen)
{
    static const uint32_t fixed[] = {0, 8, 0, 16, 16, 0, 0, 0};
    uint32_t n;

    if ((fixed[m->type] != 0) && (body_len != fixed[m->type])) {
        return pd_fail(err, errlen, "%s: body of %u bytes, expected %u",
                       pd_msg_type_name(m->type), body_len, fixed[m->type]);
    }
    switch (m->type) {
    case PD_MSG_HELLO:
        m->u.hello.modes              = (uint32_t)pd_get(r, 4);
        m->u.hello.prefill_compute_us = (uint32_t)pd_get(r, 4);
        return 0;
    case PD_MSG_LAYOUT:
        return pd_decode_layout(r, body_len, &m->u.layout, err, errlen);
    case PD_MSG_START:
    case PD_MSG_GO:
        m->u.start.mode = (uint32_t)pd_get(r, 4);
        if (pd_get(r, 4) != 0) {
            return pd_fail(err, errlen, "%s: reserved field is not zero",
                           pd_msg_type_name(m->type));
        }
        m->u.start.run = pd_get(r, 8);
        return 0;
    case PD_MSG_RESULT:
        if (body_len < PD_RESULT_FIXED) {
            return pd_fail(err, errlen, "RESULT of %u bytes is too short",
                           body_len);
        }
        m->u.result.mode      = (uint32_t)pd_get(r, 4);
        m->u.result.failed    = (uint32_t)pd_get(r, 4);
        m->u.result.run       = pd_get(r, 8);
        m->u.result.bad_bytes = pd_get(r, 8);
        m->u.result.total_ns  = pd_get(r, 8);
        m->u.result.layer0_ns = pd_get(r, 8);
        n = (uint32_t)pd_get(r, 4);
        if ((n > PD_MSG_TEXT_MAX) || (body_len != PD_RESULT_FIXED + n)) {
            return pd_fail(err, errlen, "RESULT: text of %u bytes in a body "
                           "of %u", n, body_len);
        }
        pd_get_text(r, m->u.result.text, n);
        return 0;
    case PD_MSG_QUIT:
        return (body_len == 0) ? 0 : pd_fail(err, errlen, "QUIT with a body "
                                             "of %u bytes", body_len);
    case PD_MSG_REFUSE:
        if (body_len < 4) {
            return pd_fail(err, errlen, "REFUSE of %u bytes is too short",
                           body_len);
        }
        n = (uint32_t)pd_get(r, 4);
        if ((n > PD_MSG_TEXT_MAX) || (body_len != 4 + n)) {
            return pd_fail(err, errlen, "REFUSE: text of %u bytes in a body "
                           "of %u", n, body_len);
        }
        pd_get_text(r, m->u.refuse.text, n);
        return 0;
    }
    return pd_fail(err, errlen, "unknown message type %u", m->type);
}

int pd_msg_decode(const void *buf, size_t len, pd_msg_t *m, char *err,
                  size_t errlen)
{
    pd_rd_t r = {buf, len, 0};
    uint32_t magic, version, type, body_len;

    memset(m, 0, sizeof(*m));
    if ((buf == NULL) || (len < PD_MSG_HDR)) {
        return pd_fail(err, errlen, "message of %zu bytes, shorter than its "
                       "header", len);
    }
    magic    = (uint32_t)pd_get(&r, 4);
    version  = (uint32_t)pd_get(&r, 2);
    type     = (uint32_t)pd_get(&r, 2);
    body_len = (uint32_t)pd_get(&r, 4);
    if (magic != PD_MSG_MAGIC) {
        return pd_fail(err, errlen, "not a pd_pipeline message (magic "
                       "0x%08x)", magic);
    }
    if (version != PD_MSG_VERSION) {
        return pd_fail(err, errlen, "message version %u; this pd_pipeline "
                       "speaks version %u", version, PD_MSG_VERSION);
    }
    if (pd_get(&r, 4) != 0) {
        return pd_fail(err, errlen, "reserved header field is not zero");
    }
    if ((type < PD_MSG_HELLO) || (type > PD_MSG_REFUSE)) {
        return pd_fail(err, errlen, "unknown message type %u", type);
    }
    if ((size_t)body_len != len - PD_MSG_HDR) {
        return pd_fail(err, errlen, "%s: header says %u body bytes, %zu "
                       "arrived", pd_msg_type_name(type), body_len,
                       len - PD_MSG_HDR);
    }
    m->type = (pd_msg_type_t)type;
    if (pd_decode_body(&r, body_len, m, err, errlen) != 0) {
        pd_msg_clear(m);
        return -1;
    }
    return 0;
}

void pd_msg_clear(pd_msg_t *m)
{
    if (m->type == PD_MSG_LAYOUT) {
        free(m->u.layout.layer_addr);
        free(m->u.layout.slot);
    }
    memset(m, 0, sizeof(*m));
}
