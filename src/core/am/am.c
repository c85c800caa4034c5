/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's active-message transport (am.h).
 */
#include "config.h"
#include "core/am/am.h"
#include "core/engine.h"
#include "util/debug.h"
#include "util/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HIXL_AM_CTX_CHUNK 256

/* What a send in flight needs: its header (UCX reads it until the send is
 * done), its payload and what to do when it ends. */
typedef struct hixl_am_ctx {
    struct hixl_am_ctx *next;
    hixl_engine_t      *engine;
    hixl_am_hdr_t       hdr;
    hixl_am_done_fn_t   on_done;
    void               *arg;
    hixl_am_payload_t   payload;  /* what the send packs (pack_dt) */
    struct iovec        one;      /* the part of a payload in one piece */
    size_t              payload_len;   /* with the seal of a guarded one */
    size_t              cur_part; /* where packing is: parts[cur_part], */
    size_t              cur_base; /* which starts at this offset of them */
    hixl_am_guard_t     guard;    /* begin NULL: unguarded */
    int                 broken;   /* a guarded send's data was let go */
    int                 taken;    /* out of the pool: ends exactly once */
} hixl_am_ctx_t;

/* A message id's handler: what the dispatcher checks, whom it calls. */
typedef struct hixl_am_handler {
    hixl_engine_t     *engine;
    hixl_am_recv_fn_t  cb;
    unsigned           flags;
} hixl_am_handler_t;

/* Free contexts: taken and returned from any thread, under a spinlock
 * (never held across anything else); chunks are freed at cleanup. */
typedef struct hixl_am_pool {
    pthread_spinlock_t lock;
    atomic_uint        live;      /* contexts of operations in flight */
    hixl_am_ctx_t     *free;
    void             **chunks;
    size_t             nchunks;
    ucp_datatype_t     pack_dt;   /* see hixl_am_pack_ops */
    hixl_am_handler_t  handlers[HIXL_AM_LAST];
} hixl_am_pool_t;

/* ---- contexts -------------------------------------------------------------- */

static hixl_am_ctx_t *hixl_am_ctx_get(hixl_engine_t *engine)
{
    hixl_am_pool_t *pool = engine->am;
    hixl_am_ctx_t *ctx, *chunk;
    void **chunks;
    size_t i;

    pthread_spin_lock(&pool->lock);
    ctx = pool->free;
    if (ctx != NULL) {
        pool->free = ctx->next;
        pthread_spin_unlock(&pool->lock);
        goto out;
    }
    pthread_spin_unlock(&pool->lock);
    /* grow: allocation only when the pool runs dry */
    chunk  = calloc(HIXL_AM_CTX_CHUNK, sizeof(*chunk));
    if (chunk == NULL) {
        return NULL;
    }
    pthread_spin_lock(&pool->lock);
    chunks = realloc(pool->chunks, (pool->nchunks + 1) * sizeof(*chunks));
    if (chunks == NULL) {
        pthread_spin_unlock(&pool->lock);
        free(chunk);
        return NULL;
    }
    pool->chunks                  = chunks;
    pool->chunks[pool->nchunks++] = chunk;
    for (i = 1; i < HIXL_AM_CTX_CHUNK; ++i) {
        chunk[i].next = pool->free;
        pool->free    = &chunk[i];
    }
    pthread_spin_unlock(&pool->lock);
    ctx = &chunk[0];
out:
    hixl_assert(!ctx->taken);   /* a free context is not in flight */
    memset(ctx, 0, sizeof(*ctx));
    ctx->engine = engine;
    ctx->taken  = 1;
    atomic_fetch_add(&pool->live, 1);
    return ctx;
}

static void hixl_am_ctx_put(hixl_am_ctx_t *ctx)
{
    hixl_am_pool_t *pool = ctx->engine->am;
    unsigned before;

    hixl_assert(ctx->taken);    /* a send ends exactly once */
    ctx->taken = 0;
    pthread_spin_lock(&pool->lock);
    ctx->next  = pool->free;
    pool->free = ctx;
    pthread_spin_unlock(&pool->lock);
    before = atomic_fetch_sub(&pool->live, 1);
    hixl_assert(before >= 1);   /* never below zero */
    (void)before;
}

unsigned hixl_am_live(hixl_engine_t *engine)
{
    return (engine->am != NULL) ? atomic_load(&engine->am->live) : 0;
}

/*
 * Every payload goes out as a UCX "generic" datatype that packs from the
 * context's payload, which keeps UCX on its copying (bcopy) protocols for
 * the library's messages.  Its zero-copy ones are unsafe on tcp: in UCX
 * 1.13 up to at least 1.22, a send error in the middle of an am_zcopy
 * completes the operation twice (uct_tcp_ep_sendv, once through the
 * endpoint purge and once more itself), which aborts a process built with
 * UCX's assertions, as Debian's is, whenever the peer dies while a large
 * message is half out.  tcp copies into its socket buffer anyway; the
 * price is one copy per byte into UCX's segment.
 */
static void *hixl_am_pack_start(void *context, const void *buffer,
                                size_t count)
{
    return (void*)buffer;   /* the hixl_am_ctx_t */
}

static size_t hixl_am_pack_size(void *state)
{
    return ((const hixl_am_ctx_t*)state)->payload_len;
}

/* n bytes of the parts from offset off of them into dest.  UCX packs in
 * order, so a cursor finds the part; it may start a send again from its
 * beginning (a send it had to retry), which sets the cursor back. */
static void hixl_am_pack_parts(hixl_am_ctx_t *ctx, size_t off, char *dest,
                               size_t n)
{
    const struct iovec *parts = ctx->payload.parts;
    size_t in, k;

    if (off < ctx->cur_base) {
        ctx->cur_part = 0;
        ctx->cur_base = 0;
    }
    while (n > 0) {
        hixl_assert(ctx->cur_part < ctx->payload.num_parts);
        in = off - ctx->cur_base;
        if (in >= parts[ctx->cur_part].iov_len) {
            ctx->cur_base += parts[ctx->cur_part].iov_len;
            ctx->cur_part++;
            continue;
        }
        k = parts[ctx->cur_part].iov_len - in;
        if (k > n) {
            k = n;
        }
        memcpy(dest, (const char*)parts[ctx->cur_part].iov_base + in, k);
        dest += k;
        off  += k;
        n    -= k;
    }
}

/* n bytes of the parts of a guarded payload: the data while its guard lets
 * it be read, zeros once it does not (core/am/am.h). */
static void hixl_am_pack_guarded(hixl_am_ctx_t *ctx, size_t off, char *dest,
                                 size_t n)
{
    if (!ctx->broken &&
        ctx->guard.begin(ctx->engine, ctx->guard.arg, &ctx->hdr)) {
        hixl_am_pack_parts(ctx, off, dest, n);
        ctx->guard.end(ctx->guard.arg);
    } else {
        ctx->broken = 1;
        memset(dest, 0, n);
    }
}

/* The payload is head, parts, and the seal of a guarded one: n bytes of it
 * from offset. */
static size_t hixl_am_pack(void *state, size_t offset, void *dest,
                           size_t max_length)
{
    hixl_am_ctx_t *ctx           = state;
    const hixl_am_payload_t *pl  = &ctx->payload;
    size_t data_end              = pl->head_len + pl->parts_len;
    char *out                    = dest;
    size_t n, end, k;
    uint64_t seal;

    hixl_assert(ctx->taken && (offset <= ctx->payload_len));
    n   = ctx->payload_len - offset;
    n   = (n > max_length) ? max_length : n;
    end = offset + n;
    if (offset < pl->head_len) {
        k = ((end < pl->head_len) ? end : pl->head_len) - offset;
        memcpy(out, (const char*)pl->head + offset, k);
        out    += k;
        offset += k;
    }
    if ((offset < end) && (offset < data_end)) {
        k = ((end < data_end) ? end : data_end) - offset;
        if (ctx->guard.begin != NULL) {
            hixl_am_pack_guarded(ctx, offset - pl->head_len, out, k);
        } else {
            hixl_am_pack_parts(ctx, offset - pl->head_len, out, k);
        }
        out    += k;
        offset += k;
    }
    if (offset < end) {
        /* only a guarded payload has bytes past its data: the seal */
        hixl_assert((ctx->guard.begin != NULL) &&
                    (end - data_end <= HIXL_AM_SEAL_LEN));
        seal = ctx->broken ? HIXL_AM_SEAL_BROKEN : HIXL_AM_SEAL;
        memcpy(out, (const char*)&seal + (offset - data_end), end - offset);
    }
    return n;
}

static void hixl_am_pack_finish(void *state)
{
}

static const ucp_generic_dt_ops_t hixl_am_pack_ops = {
    .start_pack  = hixl_am_pack_start,
    .packed_size = hixl_am_pack_size,
    .pack        = hixl_am_pack,
    .finish      = hixl_am_pack_finish,
};

hixl_status_t hixl_am_init(hixl_engine_t *engine)
{
    ucs_status_t ustatus;

    engine->am = calloc(1, sizeof(*engine->am));
    if (engine->am == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    pthread_spin_init(&engine->am->lock, PTHREAD_PROCESS_PRIVATE);
    ustatus = ucp_dt_create_generic(&hixl_am_pack_ops, NULL,
                                    &engine->am->pack_dt);
    if (ustatus != UCS_OK) {
        engine->am->pack_dt = 0;
        return hixl_error(HIXL_FAILED, "cannot create a UCX datatype: %s",
                          ucs_status_string(ustatus));
    }
    return HIXL_SUCCESS;
}

void hixl_am_cleanup(hixl_engine_t *engine)
{
    size_t i;

    if (engine->am == NULL) {
        return;
    }
    for (i = 0; i < engine->am->nchunks; ++i) {
        free(engine->am->chunks[i]);
    }
    free(engine->am->chunks);
    if (engine->am->pack_dt != 0) {
        ucp_dt_destroy(engine->am->pack_dt);
    }
    pthread_spin_destroy(&engine->am->lock);
    free(engine->am);
    engine->am = NULL;
}

/* ---- sending ----------------------------------------------------------------- */

static void hixl_am_ctx_done(hixl_am_ctx_t *ctx)
{
    hixl_assert(ctx->taken);
    if (ctx->on_done != NULL) {
        ctx->on_done(ctx->arg, &ctx->hdr);
    }
    hixl_am_ctx_put(ctx);
}

static void hixl_am_sent_cb(void *request, ucs_status_t status,
                            void *user_data)
{
    ucp_request_free(request);
    hixl_am_ctx_done(user_data);
}

/* Send ctx->hdr and ctx->payload; ctx ends with the send.  Returns UCX's
 * status: UCS_OK once it is posted. */
static ucs_status_t hixl_am_post(ucp_ep_h ep, unsigned id, hixl_am_ctx_t *ctx,
                                 uint32_t flags)
{
    const hixl_am_payload_t *pl = &ctx->payload;
    size_t len                  = pl->head_len + pl->parts_len;
    const void *data            = NULL;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = hixl_am_sent_cb;
    param.user_data    = ctx;
    param.flags        = flags;
    if (len > 0) {
        /* copied out, never zero-copy (hixl_am_pack_ops) */
        ctx->payload_len    = len + ((ctx->guard.begin != NULL) ?
                                     HIXL_AM_SEAL_LEN : 0);
        len                 = ctx->payload_len;
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype      = ctx->engine->am->pack_dt;
        data                = ctx;
    }
    hixl_ucx_post_begin(&ctx->engine->progress.ucx_posting);
    sp = ucp_am_send_nbx(ep, id, &ctx->hdr, sizeof(ctx->hdr), data, len,
                         &param);
    hixl_ucx_post_end(&ctx->engine->progress.ucx_posting);
    if (UCS_PTR_IS_PTR(sp)) {
        return UCS_OK;
    }
    hixl_am_ctx_done(ctx);
    return UCS_PTR_STATUS(sp);
}

/* A context for a send of hdr, or NULL (on_done has run then). */
static hixl_am_ctx_t *hixl_am_ctx_for(hixl_engine_t *engine,
                                      const hixl_am_hdr_t *hdr,
                                      hixl_am_done_fn_t on_done, void *arg)
{
    hixl_am_ctx_t *ctx = hixl_am_ctx_get(engine);

    if (ctx == NULL) {
        if (on_done != NULL) {
            on_done(arg, hdr);
        }
        return NULL;
    }
    ctx->hdr     = *hdr;
    ctx->on_done = on_done;
    ctx->arg     = arg;
    return ctx;
}

/* A payload of len bytes at data, in one part. */
static void hixl_am_ctx_one(hixl_am_ctx_t *ctx, const void *data, size_t len)
{
    ctx->one.iov_base          = (void*)data;
    ctx->one.iov_len           = len;
    ctx->payload.parts         = &ctx->one;
    ctx->payload.num_parts     = (len > 0) ? 1 : 0;
    ctx->payload.parts_len     = len;
}

ucs_status_t hixl_am_send(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                          const hixl_am_hdr_t *hdr, const void *data,
                          size_t len, uint32_t flags,
                          const hixl_am_guard_t *guard,
                          hixl_am_done_fn_t on_done, void *arg)
{
    hixl_am_ctx_t *ctx;

    hixl_assert((ep != NULL) && (hdr != NULL) && ((len == 0) || (data != NULL)));
    hixl_assert((id > 0) && (id < HIXL_AM_LAST));
    ctx = hixl_am_ctx_for(engine, hdr, on_done, arg);
    if (ctx == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    hixl_am_ctx_one(ctx, data, len);
    if ((guard != NULL) && (len > 0)) {
        ctx->guard = *guard;
    }
    return hixl_am_post(ep, id, ctx, flags);
}

ucs_status_t hixl_am_sendv(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                           const hixl_am_hdr_t *hdr,
                           const hixl_am_payload_t *payload, uint32_t flags,
                           const hixl_am_guard_t *guard,
                           hixl_am_done_fn_t on_done, void *arg)
{
    hixl_am_ctx_t *ctx;

    hixl_assert((ep != NULL) && (hdr != NULL) && (payload != NULL));
    hixl_assert((payload->head_len == 0) || (payload->head != NULL));
    hixl_assert((payload->parts_len == 0) || (payload->num_parts > 0));
    hixl_assert((id > 0) && (id < HIXL_AM_LAST));
    ctx = hixl_am_ctx_for(engine, hdr, on_done, arg);
    if (ctx == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ctx->payload = *payload;
    if ((guard != NULL) && (payload->parts_len > 0)) {
        ctx->guard = *guard;
    }
    return hixl_am_post(ep, id, ctx, flags);
}

void hixl_am_send_small(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                        const hixl_am_hdr_t *hdr, const void *data,
                        size_t len, uint32_t flags,
                        hixl_am_done_fn_t on_done, void *arg)
{
    hixl_am_ctx_t *ctx;
    ucs_status_t ustatus;

    hixl_assert((ep != NULL) && (hdr != NULL) && ((len == 0) || (data != NULL)));
    hixl_assert((id > 0) && (id < HIXL_AM_LAST));
    ctx = hixl_am_ctx_for(engine, hdr, on_done, arg);
    if (ctx == NULL) {
        hixl_log_warn("out of memory for an answer: the peer's operation "
                      "fails at its flush");
        return;
    }
    hixl_am_ctx_one(ctx, data, len);
    ustatus = hixl_am_post(ep, id, ctx, flags);
    if (ustatus != UCS_OK) {
        hixl_log_debug("active message %u not sent: %s", id,
                       ucs_status_string(ustatus));
    }
}

/* ---- receiving: the one dispatcher ------------------------------------------ */

/* Whether data ends with an intact seal (core/am/am.h); if so, *length is
 * the data's without it. */
static int hixl_am_unseal(const void *data, size_t *length)
{
    uint64_t seal;

    if ((data == NULL) || (*length < HIXL_AM_SEAL_LEN)) {
        return 0;
    }
    memcpy(&seal, (const char*)data + *length - HIXL_AM_SEAL_LEN,
           sizeof(seal));
    if (seal != HIXL_AM_SEAL) {
        return 0;
    }
    *length -= HIXL_AM_SEAL_LEN;
    return 1;
}

/* Every handler's checks, once (am.h); arg is the id's hixl_am_handler_t. */
static ucs_status_t hixl_am_dispatch(void *arg, const void *header,
                                     size_t header_length, void *data,
                                     size_t length,
                                     const ucp_am_recv_param_t *param)
{
    const hixl_am_handler_t *hd = arg;
    hixl_am_hdr_t hbuf;
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length, &hbuf);
    int has_reply = !!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP);

    hixl_assert(hd->cb != NULL);   /* set before the handler was */
    if (h == NULL) {
        return UCS_OK;   /* not ours: dropped */
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* the library sends every message eagerly: not one of ours, and
         * its sender's call ends with this status.  (data is UCX's
         * descriptor of the rendezvous here, not the payload.) */
        return UCS_ERR_UNSUPPORTED;
    }
    if ((hd->flags & HIXL_AM_RECV_REPLY_EP) && !has_reply) {
        return UCS_OK;   /* it cannot be answered or placed: dropped */
    }
    if ((hd->flags & HIXL_AM_RECV_SEALED) && !hixl_am_unseal(data, &length)) {
        data   = NULL;   /* its sender let its data go part-way */
        length = 0;
    }
    return hd->cb(hd->engine, h, data, length,
                  has_reply ? param->reply_ep : NULL);
}

hixl_status_t hixl_am_set_handler(hixl_engine_t *engine, ucp_worker_h worker,
                                  unsigned id, unsigned flags,
                                  hixl_am_recv_fn_t cb)
{
    hixl_am_handler_t *hd;
    ucp_am_handler_param_t param;
    ucs_status_t ustatus;

    if ((id == 0) || (id >= HIXL_AM_LAST)) {
        return hixl_error(HIXL_PARAM_INVALID, "no active message %u", id);
    }
    hixl_assert(cb != NULL);
    hd         = &engine->am->handlers[id];
    hd->engine = engine;
    hd->cb     = cb;
    hd->flags  = flags;
    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG |
                       UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    param.id    = id;
    param.cb    = hixl_am_dispatch;
    param.arg   = hd;
    param.flags = UCP_AM_FLAG_WHOLE_MSG;
    ustatus = ucp_worker_set_am_recv_handler(worker, &param);
    if (ustatus != UCS_OK) {
        return hixl_error(HIXL_FAILED, "ucp_worker_set_am_recv_handler: %s",
                          ucs_status_string(ustatus));
    }
    return HIXL_SUCCESS;
}
