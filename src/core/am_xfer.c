/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's data messages (see am_xfer.h).
 *
 * Threads: posting runs under engine->lock, and WRITEs that waited for
 * room in their channel's window are posted from a progress callback;
 * everything else runs in UCX callbacks (inside ucp_worker_progress of the
 * in or out worker), which never take engine->lock.  They take engine->serve_lock for reading while
 * they check a connection, a channel or a region and while they use an
 * endpoint that a close could otherwise free; closes and region changes
 * take it for writing and call no UCX function while they hold it.
 */
#include "config.h"
#include "core/am_xfer.h"
#include "core/ep_retire.h"
#include "core/engine.h"
#include "core/served.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HIXL_AM_CTX_CHUNK 256
#define HIXL_AM_CHUNK     (256 * 1024)
/* WRITE data copied into UCX's queues at most, per channel: enough to
 * keep a tcp connection busy (tens of milliseconds of data), little enough
 * to hold on to while a peer that cannot be reached keeps it
 * (ep_retire.h). */
#define HIXL_AM_WINDOW    (16u * 1024 * 1024)

/* What a send in flight needs: its header (UCX reads it until the send is
 * done) and what to do when it ends. */
typedef struct hixl_am_ctx {
    struct hixl_am_ctx *next;
    hixl_engine_t      *engine;
    hixl_am_hdr_t       hdr;
    void              (*on_done)(void *arg);
    void               *arg;
    void               *copy;     /* a WRITE's data, its own copy */
    const void         *payload;  /* what the send packs (pack_dt) */
    size_t              payload_len;
    hixl_chan_t        *chan;     /* whose window the copy counts in */
    uint64_t            chan_id;
} hixl_am_ctx_t;

/* A WRITE waiting for room in its channel's window (counted in the
 * channel's slot already, so the flush waits for it; dropped when the
 * channel closes). */
struct hixl_am_wait {
    hixl_am_wait_t      *next;
    hixl_request_t      *req;
    hixl_am_hdr_t        hdr;
    const void          *data;    /* the caller's: read when it is sent */
};

/* Free contexts: taken and returned from any thread, under a spinlock
 * (never held across anything else); chunks are freed at cleanup. */
typedef struct hixl_am_pool {
    pthread_spinlock_t lock;
    atomic_uint        live;      /* contexts of operations in flight */
    hixl_am_ctx_t     *free;
    void             **chunks;
    size_t             nchunks;
    /* channels with WRITEs waiting (under lock; chan->am_next links) */
    hixl_chan_t       *waiting;
    atomic_uint        nwaiting;
    ucp_datatype_t     pack_dt;   /* see hixl_am_pack_ops */
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
    memset(ctx, 0, sizeof(*ctx));
    ctx->engine = engine;
    atomic_fetch_add(&pool->live, 1);
    return ctx;
}

static void hixl_am_ctx_put(hixl_am_ctx_t *ctx)
{
    hixl_am_pool_t *pool = ctx->engine->am;

    pthread_spin_lock(&pool->lock);
    ctx->next  = pool->free;
    pool->free = ctx;
    pthread_spin_unlock(&pool->lock);
    atomic_fetch_sub(&pool->live, 1);
}

unsigned hixl_am_live(hixl_engine_t *engine)
{
    return (engine->am != NULL) ? atomic_load(&engine->am->live) : 0;
}

static unsigned hixl_am_progress(hixl_engine_t *engine);

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

static size_t hixl_am_pack(void *state, size_t offset, void *dest,
                           size_t max_length)
{
    const hixl_am_ctx_t *ctx = state;
    size_t n                 = ctx->payload_len - offset;

    if (n > max_length) {
        n = max_length;
    }
    memcpy(dest, (const char*)ctx->payload + offset, n);
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
    return hixl_progress_add(engine, hixl_am_progress);
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
    if (ctx->on_done != NULL) {
        ctx->on_done(ctx->arg);
    }
    if (ctx->copy != NULL) {
        free(ctx->copy);
        /* a channel closed since has a new window, or none */
        if (ctx->chan->id == ctx->chan_id) {
            atomic_fetch_sub(&ctx->chan->am_window, (long)ctx->hdr.len);
        }
    }
    hixl_am_ctx_put(ctx);
}

static void hixl_am_sent_cb(void *request, ucs_status_t status,
                            void *user_data)
{
    ucp_request_free(request);
    hixl_am_ctx_done(user_data);
}

/* Send ctx->hdr (+ data); ctx ends with the send.  Returns UCX's status:
 * UCS_OK once it is posted. */
static ucs_status_t hixl_am_post(ucp_ep_h ep, unsigned id, hixl_am_ctx_t *ctx,
                                 const void *data, size_t len,
                                 uint32_t flags)
{
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
        ctx->payload        = data;
        ctx->payload_len    = len;
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype      = ctx->engine->am->pack_dt;
        data                = ctx;
    }
    sp = ucp_am_send_nbx(ep, id, &ctx->hdr, sizeof(ctx->hdr), data, len,
                         &param);
    if (UCS_PTR_IS_PTR(sp)) {
        return UCS_OK;
    }
    hixl_am_ctx_done(ctx);
    return UCS_PTR_STATUS(sp);
}

void hixl_am_send_small(hixl_engine_t *engine, ucp_ep_h ep, unsigned id,
                        const hixl_am_hdr_t *hdr, const void *data,
                        size_t len, uint32_t flags,
                        void (*on_done)(void *arg), void *arg)
{
    hixl_am_ctx_t *ctx = hixl_am_ctx_get(engine);
    ucs_status_t ustatus;

    if (ctx == NULL) {
        hixl_log_warn("out of memory for an answer: the peer's operation "
                      "fails at its flush");
        if (on_done != NULL) {
            on_done(arg);
        }
        return;
    }
    ctx->hdr     = *hdr;
    ctx->on_done = on_done;
    ctx->arg     = arg;
    ustatus = hixl_am_post(ep, id, ctx, data, len, flags);
    if (ustatus != UCS_OK) {
        hixl_log_debug("active message %u not sent: %s", id,
                       ucs_status_string(ustatus));
    }
}

/* REPLY: the target checks that it arrives on the connection's endpoint */
#define HIXL_AM_DATA_FLAGS (UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER)

/*
 * Send a WRITE from a copy of its data: what UCX queues is the library's,
 * never the caller's, so a transfer that ends (its connection closed) lets
 * go of the caller's buffer at once although its endpoint may keep what is
 * queued until the network heals (ep_retire.h).  UCX's status: UCS_OK
 * once posted.
 */
static ucs_status_t hixl_am_post_copy(hixl_engine_t *engine,
                                      hixl_chan_t *chan,
                                      const hixl_am_hdr_t *hdr,
                                      const void *data)
{
    hixl_am_ctx_t *ctx = hixl_am_ctx_get(engine);

    if (ctx == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ctx->hdr  = *hdr;
    ctx->copy = malloc(hdr->len);
    if (ctx->copy == NULL) {
        hixl_am_ctx_put(ctx);
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(ctx->copy, data, hdr->len);
    ctx->chan    = chan;
    ctx->chan_id = chan->id;
    atomic_fetch_add(&chan->am_window, (long)hdr->len);
    return hixl_am_post(chan->ep, HIXL_AM_WRITE, ctx, ctx->copy, hdr->len,
                        HIXL_AM_DATA_FLAGS);
}

/* Whether a WRITE of len bytes may go now on chan: its window has room and
 * none of its earlier ones waits (they go in order). */
static int hixl_am_window_open(const hixl_chan_t *chan, size_t len)
{
    return (chan->am_wait_head == NULL) && (chan->am_draining == 0) &&
           (atomic_load(&chan->am_window) + (long)len <= HIXL_AM_WINDOW);
}

/* Queue a WRITE on chan until its window has room (pool lock held). */
static ucs_status_t hixl_am_wait(hixl_am_pool_t *pool, hixl_chan_t *chan,
                                 hixl_request_t *req, const hixl_am_hdr_t *hdr,
                                 const void *data)
{
    hixl_am_wait_t *w = malloc(sizeof(*w));

    if (w == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    w->next = NULL;
    w->req  = req;
    w->hdr  = *hdr;
    w->data = data;
    if (chan->am_wait_tail != NULL) {
        chan->am_wait_tail->next = w;
    } else {
        chan->am_wait_head = w;
        chan->am_next      = pool->waiting;   /* first one: list it */
        pool->waiting      = chan;
        atomic_fetch_add(&pool->nwaiting, 1);
    }
    chan->am_wait_tail = w;
    return UCS_OK;
}

/* A WRITE: sent now if the window lets it, else queued. */
static ucs_status_t hixl_am_send_write(hixl_engine_t *engine,
                                       hixl_chan_t *chan, hixl_request_t *req,
                                       const hixl_am_hdr_t *hdr,
                                       const void *data)
{
    hixl_am_pool_t *pool = engine->am;
    ucs_status_t ustatus;

    pthread_spin_lock(&pool->lock);
    if (!hixl_am_window_open(chan, hdr->len)) {
        ustatus = hixl_am_wait(pool, chan, req, hdr, data);
        pthread_spin_unlock(&pool->lock);
        return ustatus;
    }
    pthread_spin_unlock(&pool->lock);
    return hixl_am_post_copy(engine, chan, hdr, data);
}

void hixl_am_chan_closed(hixl_engine_t *engine, hixl_chan_t *chan)
{
    hixl_am_pool_t *pool = engine->am;
    hixl_am_wait_t *w, *next;
    hixl_chan_t **pp;

    pthread_spin_lock(&pool->lock);
    w = chan->am_wait_head;
    if (w != NULL) {
        for (pp = &pool->waiting; *pp != chan; pp = &(*pp)->am_next) {
        }
        *pp = chan->am_next;
        atomic_fetch_sub(&pool->nwaiting, 1);
    }
    chan->am_wait_head = chan->am_wait_tail = NULL;
    chan->am_draining  = 0;
    atomic_store(&chan->am_window, 0);
    pthread_spin_unlock(&pool->lock);
    for (; w != NULL; w = next) {   /* their transfers ended with it */
        next = w->next;
        free(w);
    }
}

/* The WRITEs of waiting channels whose windows have room now, taken off
 * their queues (pool lock held), in order, each with its channel. */
static hixl_am_wait_t *hixl_am_take_ready(hixl_am_pool_t *pool,
                                          hixl_chan_t **chans, size_t max,
                                          size_t *count)
{
    hixl_am_wait_t *out = NULL, **tail = &out, *w;
    hixl_chan_t **pp, *chan;
    long room;

    *count = 0;
    for (pp = &pool->waiting; ((chan = *pp) != NULL) && (*count < max);) {
        room = HIXL_AM_WINDOW - atomic_load(&chan->am_window);
        while (((w = chan->am_wait_head) != NULL) &&
               ((long)w->hdr.len <= room) && (*count < max)) {
            room              -= (long)w->hdr.len;
            chan->am_wait_head = w->next;
            w->next            = NULL;
            *tail              = w;
            tail               = &w->next;
            chans[(*count)++]  = chan;
            chan->am_draining++;   /* later WRITEs wait for these */
        }
        if (chan->am_wait_head == NULL) {
            chan->am_wait_tail = NULL;
            *pp = chan->am_next;
            atomic_fetch_sub(&pool->nwaiting, 1);
        } else {
            pp = &chan->am_next;
        }
    }
    return out;
}

#define HIXL_AM_BATCH 64

/* Send waiting WRITEs whose channel's window has room (a progress
 * callback). */
static unsigned hixl_am_progress(hixl_engine_t *engine)
{
    hixl_am_pool_t *pool = engine->am;
    hixl_chan_t *chans[HIXL_AM_BATCH];
    hixl_am_wait_t *w, *next;
    ucs_status_t ustatus;
    size_t i, n;

    if (atomic_load(&pool->nwaiting) == 0) {
        return 0;
    }
    /* serve_lock first: a close takes it for writing before the pool's
     * lock (hixl_am_chan_closed), so a channel taken here stays open
     * until its WRITEs are posted */
    pthread_rwlock_rdlock(&engine->serve_lock);
    pthread_spin_lock(&pool->lock);
    w = hixl_am_take_ready(pool, chans, HIXL_AM_BATCH, &n);
    pthread_spin_unlock(&pool->lock);
    for (i = 0; w != NULL; w = next, ++i) {
        next    = w->next;
        ustatus = hixl_am_post_copy(engine, chans[i], &w->hdr, w->data);
        pthread_spin_lock(&pool->lock);
        chans[i]->am_draining--;
        pthread_spin_unlock(&pool->lock);
        if (ustatus != UCS_OK) {
            hixl_req_fail(w->req, HIXL_FAILED, "a WRITE of %" PRIu64
                          " bytes to 0x%" PRIx64 " was not sent: %s",
                          w->hdr.len, w->hdr.addr,
                          ucs_status_string(ustatus));
            hixl_chan_answered(chans[i], w->hdr.flags);
        }
        free(w);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return (unsigned)n;
}

/* A WRITE or READ on the channel; the slot is counted before the send, so
 * an answer can never come first. */
static ucs_status_t hixl_am_request(hixl_engine_t *engine, hixl_chan_t *chan,
                                    hixl_request_t *req, unsigned id,
                                    uint64_t remote, uint64_t local,
                                    const void *data, size_t len)
{
    hixl_am_ctx_t *ctx;
    ucs_status_t ustatus;
    hixl_am_hdr_t hdr;
    unsigned slot;

    hixl_am_hdr_init(&hdr);
    slot       = hixl_chan_post(chan);
    hdr.flags  = (uint16_t)slot;
    hdr.conn   = chan->conn;
    hdr.chan   = chan->id;
    hdr.cookie = req->handle;
    hdr.addr   = remote;
    hdr.len    = len;
    hdr.local  = local;
    if (id == HIXL_AM_WRITE) {
        ustatus = hixl_am_send_write(engine, chan, req, &hdr, data);
    } else {
        ctx     = hixl_am_ctx_get(engine);
        ustatus = UCS_ERR_NO_MEMORY;
        if (ctx != NULL) {
            ctx->hdr = hdr;
            ustatus  = hixl_am_post(chan->ep, id, ctx, NULL, 0,
                                    HIXL_AM_DATA_FLAGS);
        }
    }
    if (ustatus != UCS_OK) {
        hixl_chan_answered(chan, slot);   /* no answer will come */
    }
    return ustatus;
}

/*
 * Large transfers go as several messages of at most HIXL_AM_CHUNK bytes,
 * each sent eagerly and answered on its own.  UCX's rendezvous would move
 * them with fewer copies (one CMA copy on one host), but UCX 1.13 does not
 * survive its peer going away in the middle of one: a send whose receiver
 * died is never called back or freed (tcp and shared memory alike), and a
 * receive whose sender closed its endpoint is left on UCX's own endpoint,
 * where worker destroy asserts on it.  A WRITE's data is copied first, so
 * what an endpoint still holds after its connection ended is never the
 * caller's; at most HIXL_AM_WINDOW bytes of copies per channel.
 */
static ucs_status_t hixl_am_chunks(hixl_engine_t *engine, hixl_chan_t *chan,
                                   hixl_request_t *req, unsigned id,
                                   uint64_t remote, uintptr_t local,
                                   size_t len)
{
    ucs_status_t ustatus = UCS_OK;
    size_t off, n;

    for (off = 0; (off < len) && (ustatus == UCS_OK); off += n) {
        n       = (len - off < HIXL_AM_CHUNK) ? len - off : HIXL_AM_CHUNK;
        ustatus = hixl_am_request(engine, chan, req, id, remote + off,
                                  local + off, (id == HIXL_AM_WRITE) ?
                                  (const void*)(local + off) : NULL, n);
    }
    return ustatus;
}

ucs_status_t hixl_am_write(hixl_engine_t *engine, hixl_chan_t *chan,
                           hixl_request_t *req, const void *local,
                           uint64_t remote, size_t len)
{
    return hixl_am_chunks(engine, chan, req, HIXL_AM_WRITE, remote,
                          (uintptr_t)local, len);
}

ucs_status_t hixl_am_read(hixl_engine_t *engine, hixl_chan_t *chan,
                          hixl_request_t *req, void *local, uint64_t remote,
                          size_t len)
{
    return hixl_am_chunks(engine, chan, req, HIXL_AM_READ, remote,
                          (uintptr_t)local, len);
}

/* ---- the target -------------------------------------------------------------- */

/* The registered host region holding [addr, +len), or NULL (serve_lock
 * held). */
static hixl_region_t *hixl_am_region(hixl_engine_t *engine, uint64_t addr,
                                     uint64_t len)
{
    hixl_region_t *region = (hixl_region_t*)hixl_range_lookup(
            &engine->mem.by_addr, addr, len);

    return ((region != NULL) && (region->type == HIXL_MEM_HOST)) ? region :
           NULL;
}

/* Answer h (WRITE_ACK or READ_DATA without data) on reply_ep. */
static void hixl_am_answer(hixl_engine_t *engine, ucp_ep_h reply_ep,
                           unsigned id, const hixl_am_hdr_t *h,
                           hixl_status_t status)
{
    hixl_am_hdr_t a = *h;

    a.status = (int32_t)status;
    hixl_am_send_small(engine, reply_ep, id, &a, NULL, 0, 0, NULL, NULL);
}

/*
 * A WRITE or READ that no live connection owns (serve_lock held, released
 * here) is dropped.  If no live connection has its endpoint either, the
 * endpoint is left from a connection that ended while its connector could
 * not tell us (a partition that healed, its queued messages arriving now):
 * retire it while UCX vouches for it (core/ep_retire.h), or it and its socket
 * stay until the engine goes.
 */
static void hixl_am_refuse(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                           ucp_ep_h reply_ep)
{
    int orphan = hixl_served_orphan(engine, reply_ep);

    pthread_rwlock_unlock(&engine->serve_lock);
    if (orphan) {
        hixl_retire_reply_ep(engine, reply_ep, h->conn, "a message of a "
                                "connection that ended");
    }
}

static ucs_status_t hixl_am_on_write(void *arg, const void *header,
                                     size_t header_length, void *data,
                                     size_t length,
                                     const ucp_am_recv_param_t *param)
{
    hixl_engine_t *engine  = arg;
    hixl_am_hdr_t hbuf;
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length, &hbuf);
    hixl_region_t *region;
    hixl_status_t status;

    if ((h == NULL) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;   /* not ours: dropped */
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* the library sends eagerly (hixl_am_chunks): not one of ours, and
         * its sender's call ends with this status */
        return UCS_ERR_UNSUPPORTED;
    }
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (!hixl_served_check(engine, h->conn, param->reply_ep)) {
        /* a connection that ended, or a stranger: nothing lands */
        hixl_log_debug("dropping a WRITE of %" PRIu64 " bytes: no live "
                       "connection %" PRIx64 " on its endpoint", h->len,
                       h->conn);
        hixl_am_refuse(engine, h, param->reply_ep);
        return UCS_OK;
    }
    region = (h->len == length) ? hixl_am_region(engine, h->addr, h->len) :
             NULL;
    if (region == NULL) {
        status = HIXL_PARAM_INVALID;
    } else {
        /* under serve_lock: deregistration waits for it */
        memcpy((void*)(uintptr_t)h->addr, data, length);
        status = HIXL_SUCCESS;
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    hixl_served_ack(engine, h->conn, h, status);
    return UCS_OK;
}

static void hixl_am_read_sent(void *arg)
{
    atomic_fetch_sub(&((hixl_region_t*)arg)->am_busy, 1);
}

static ucs_status_t hixl_am_on_read(void *arg, const void *header,
                                    size_t header_length, void *data,
                                    size_t length,
                                    const ucp_am_recv_param_t *param)
{
    hixl_engine_t *engine  = arg;
    hixl_am_hdr_t hbuf;
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length, &hbuf);
    hixl_region_t *region;
    hixl_am_hdr_t a;

    if ((h == NULL) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (!hixl_served_check(engine, h->conn, param->reply_ep)) {
        hixl_am_refuse(engine, h, param->reply_ep);
        return UCS_OK;
    }
    region = hixl_am_region(engine, h->addr, h->len);
    a      = *h;
    if (region == NULL) {
        hixl_am_answer(engine, param->reply_ep, HIXL_AM_READ_DATA, h,
                       HIXL_PARAM_INVALID);
    } else {
        /* the region stays until the data is out (deregistration waits) */
        atomic_fetch_add(&region->am_busy, 1);
        a.status = HIXL_SUCCESS;
        hixl_am_send_small(engine, param->reply_ep, HIXL_AM_READ_DATA, &a,
                           (const void*)(uintptr_t)h->addr, h->len,
                           UCP_AM_SEND_FLAG_EAGER, hixl_am_read_sent, region);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return UCS_OK;
}

/* ---- the initiator's side of the answers -------------------------------------- */

/* Record a refusal in the request it belongs to. */
static void hixl_am_refused(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                            const char *what)
{
    hixl_request_t *req = hixl_req_lookup(&engine->reqs, h->cookie);

    if (req != NULL) {
        hixl_req_fail(req, (h->status == HIXL_PARAM_INVALID) ?
                      HIXL_FAILED : (hixl_status_t)h->status,
                      "%s of [0x%" PRIx64 ", +%" PRIu64 ") refused by %s: %s",
                      what, h->addr, h->len, req->peer->name,
                      (h->status == HIXL_PARAM_INVALID) ?
                      "not inside a region it has registered (revoked?)" :
                      hixl_strerror((hixl_status_t)h->status));
    }
}

void hixl_am_acked(hixl_engine_t *engine, const hixl_am_hdr_t *h)
{
    hixl_chan_t *chan;

    pthread_rwlock_rdlock(&engine->serve_lock);
    chan = hixl_chan_lookup(engine, h->chan);
    if (chan != NULL) {
        if (h->status != HIXL_SUCCESS) {
            hixl_am_refused(engine, h, "WRITE");
        }
        hixl_chan_answered(chan, h->flags & HIXL_AM_FLAG_SLOT);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

/* READ_DATA into its local range (serve_lock held), if that is still a
 * registered region of ours and the request still waits for it. */
static void hixl_am_read_into(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                              const void *data, size_t length)
{
    hixl_region_t *region;

    region = (length == h->len) ? hixl_am_region(engine, h->local, h->len) :
             NULL;
    if ((region != NULL) &&
        (hixl_req_lookup(&engine->reqs, h->cookie) != NULL)) {
        memcpy((void*)(uintptr_t)h->local, data, length);
    }
}

static ucs_status_t hixl_am_on_read_data(void *arg, const void *header,
                                         size_t header_length, void *data,
                                         size_t length,
                                         const ucp_am_recv_param_t *param)
{
    hixl_engine_t *engine  = arg;
    hixl_am_hdr_t hbuf;
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length, &hbuf);
    hixl_chan_t *chan;

    if ((h == NULL) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        return (h == NULL) ? UCS_OK : UCS_ERR_UNSUPPORTED;
    }
    pthread_rwlock_rdlock(&engine->serve_lock);
    chan = hixl_chan_lookup(engine, h->chan);
    if (chan != NULL) {
        if (h->status != HIXL_SUCCESS) {
            hixl_am_refused(engine, h, "READ");
        } else {
            hixl_am_read_into(engine, h, data, length);
        }
        hixl_chan_answered(chan, h->flags & HIXL_AM_FLAG_SLOT);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return UCS_OK;
}

/* ---- handlers ------------------------------------------------------------------ */

hixl_status_t hixl_am_set_handler(hixl_engine_t *engine, ucp_worker_h worker,
                                  unsigned id, ucp_am_recv_callback_t cb)
{
    ucp_am_handler_param_t param;
    ucs_status_t ustatus;

    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG |
                       UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    param.id    = id;
    param.cb    = cb;
    param.arg   = engine;
    param.flags = UCP_AM_FLAG_WHOLE_MSG;
    ustatus = ucp_worker_set_am_recv_handler(worker, &param);
    if (ustatus != UCS_OK) {
        return hixl_error(HIXL_FAILED, "ucp_worker_set_am_recv_handler: %s",
                          ucs_status_string(ustatus));
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_am_handlers(hixl_engine_t *engine)
{
    hixl_status_t status;

    status = hixl_am_set_handler(engine, engine->ucp_worker,
                                 HIXL_AM_READ_DATA, hixl_am_on_read_data);
    if ((status == HIXL_SUCCESS) && (engine->ucp_worker_in != NULL)) {
        status = hixl_am_set_handler(engine, engine->ucp_worker_in,
                                     HIXL_AM_WRITE, hixl_am_on_write);
    }
    if ((status == HIXL_SUCCESS) && (engine->ucp_worker_in != NULL)) {
        status = hixl_am_set_handler(engine, engine->ucp_worker_in,
                                     HIXL_AM_READ, hixl_am_on_read);
    }
    return status;
}
