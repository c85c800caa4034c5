/*
 * The library's data messages (see am_xfer.h).
 *
 * Threads: posting runs under engine->lock; everything else runs in UCX
 * callbacks (inside ucp_worker_progress of the in or out worker), which
 * never take engine->lock.  They take engine->serve_lock for reading while
 * they check a connection, a channel or a region and while they use an
 * endpoint that a close could otherwise free; closes and region changes
 * take it for writing and call no UCX function while they hold it.
 */
#include "config.h"
#include "core/am_xfer.h"
#include "core/engine.h"
#include "core/served.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HIXL_AM_CTX_CHUNK 256
#define HIXL_AM_CHUNK     (256 * 1024)

/* What a send in flight needs: its header (UCX reads it until the send is
 * done) and what to do when it ends. */
typedef struct hixl_am_ctx {
    struct hixl_am_ctx *next;
    hixl_engine_t      *engine;
    hixl_am_hdr_t       hdr;
    void              (*on_done)(void *arg);
    void               *arg;
} hixl_am_ctx_t;

/* Free contexts: taken and returned from any thread, under a spinlock
 * (never held across anything else); chunks are freed at cleanup. */
typedef struct hixl_am_pool {
    pthread_spinlock_t lock;
    atomic_uint        live;      /* contexts of operations in flight */
    hixl_am_ctx_t     *free;
    void             **chunks;
    size_t             nchunks;
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

hixl_status_t hixl_am_init(hixl_engine_t *engine)
{
    engine->am = calloc(1, sizeof(*engine->am));
    if (engine->am == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    pthread_spin_init(&engine->am->lock, PTHREAD_PROCESS_PRIVATE);
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

/* A WRITE or READ on the channel; the slot is counted before the send, so
 * an answer can never come first. */
static ucs_status_t hixl_am_request(hixl_engine_t *engine, hixl_chan_t *chan,
                                    hixl_request_t *req, unsigned id,
                                    uint64_t remote, uint64_t local,
                                    const void *data, size_t len)
{
    hixl_am_ctx_t *ctx = hixl_am_ctx_get(engine);
    ucs_status_t ustatus;
    unsigned slot;

    if (ctx == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    hixl_am_hdr_init(&ctx->hdr);
    slot             = hixl_chan_post(chan);
    ctx->hdr.flags   = (uint16_t)slot;
    ctx->hdr.conn    = chan->conn;
    ctx->hdr.chan    = chan->id;
    ctx->hdr.cookie  = req->handle;
    ctx->hdr.addr    = remote;
    ctx->hdr.len     = len;
    ctx->hdr.local   = local;
    /* REPLY: the target checks that it arrives on the connection's
     * endpoint */
    ustatus = hixl_am_post(chan->ep, id, ctx, data, (data != NULL) ? len : 0,
                           UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER);
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
 * where worker destroy asserts on it.  Eager sends are queued on the
 * endpoint, and its forced close cancels them.
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

static ucs_status_t hixl_am_on_write(void *arg, const void *header,
                                     size_t header_length, void *data,
                                     size_t length,
                                     const ucp_am_recv_param_t *param)
{
    hixl_engine_t *engine  = arg;
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length);
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
        pthread_rwlock_unlock(&engine->serve_lock);
        hixl_log_debug("dropping a WRITE of %" PRIu64 " bytes: no live "
                       "connection %" PRIx64 " on its endpoint", h->len,
                       h->conn);
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
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length);
    hixl_region_t *region;
    hixl_am_hdr_t a;

    if ((h == NULL) || !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (!hixl_served_check(engine, h->conn, param->reply_ep)) {
        pthread_rwlock_unlock(&engine->serve_lock);
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
    const hixl_am_hdr_t *h = hixl_am_hdr_check(header, header_length);
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
