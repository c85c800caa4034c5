/*
 * Coalesced transfer flushes (see flush_group.h).
 */
#include "config.h"
#include "core/ep_flush.h"

#include <string.h>

void hixl_fg_init(hixl_ep_ctx_t *ctx, ucp_ep_h ep)
{
    if (!ctx->fg_lock_init) {
        pthread_spin_init(&ctx->fg_lock, PTHREAD_PROCESS_PRIVATE);
        ctx->fg_lock_init = 1;
    }
    ctx->fg_ep = ep;
}

void hixl_fg_cleanup(hixl_ep_ctx_t *ctx)
{
    if (ctx->fg_lock_init) {
        pthread_spin_destroy(&ctx->fg_lock);
        ctx->fg_lock_init = 0;
    }
}

/* fg_lock held: if a flush is due, make the waiters its group. */
static int hixl_fg_take_waiters(hixl_ep_ctx_t *ctx)
{
    if (!ctx->fg_due || (ctx->fg_ep == NULL) || (ctx->fg_wait_head == NULL)) {
        return 0;
    }
    ctx->fg_group      = ctx->fg_wait_head;
    ctx->fg_wait_head  = ctx->fg_wait_tail = NULL;
    ctx->fg_due        = 0;
    return 1;
}

/*
 * The flush covering ctx->fg_group ended with ustatus: claim the group's
 * requests (under the lock, so that none can be settled or reused by
 * anyone else while this walks it), then complete them outside the lock.
 * Returns 1 when requests wait for the next flush (it is then due).
 *
 * exclusive: the caller holds engine->lock and the flush completed inside
 * its own ucp_ep_flush_nbx call, so no callback, post, close or issue can
 * touch ctx meanwhile and the spinlock is not needed.
 */
static int hixl_fg_finish(hixl_engine_t *engine, hixl_ep_ctx_t *ctx,
                          ucs_status_t ustatus, int exclusive,
                          hixl_request_t *own, int *own_done)
{
    hixl_request_t *r, *next, *claimed = NULL;
    unsigned pending;
    int due = 0;

    if (!exclusive) {
        pthread_spin_lock(&ctx->fg_lock);
    }
    for (r = ctx->fg_group; r != NULL; r = next) {
        next    = r->next_flush;
        pending = atomic_load_explicit(&r->flush_pending,
                                       memory_order_relaxed);
        /* 0 would mean it was settled elsewhere; hixl_fg_close empties the
         * lists before hixl_xfer_peer_closed settles, so it is not seen.
         * Exclusive, nobody else can settle it at all: a store will do. */
        if (!(pending & 1)) {
            continue;
        }
        if (exclusive) {
            atomic_store_explicit(&r->flush_pending, 0, memory_order_relaxed);
        } else if (!atomic_compare_exchange_strong(&r->flush_pending,
                                                   &pending, 0)) {
            continue;
        }
        r->next_flush = claimed;
        claimed       = r;
    }
    ctx->fg_group = NULL;
    if ((ctx->fg_ep != NULL) && (ctx->fg_wait_head != NULL)) {
        ctx->fg_due = 1;   /* fg_busy stays: the waiters are owed a flush */
        due         = 1;
    } else {
        atomic_store_explicit(&ctx->fg_busy, 0, memory_order_release);
    }
    if (!exclusive) {
        pthread_spin_unlock(&ctx->fg_lock);
    }

    for (r = claimed; r != NULL; r = next) {
        next          = r->next_flush;   /* r may be released below */
        r->next_flush = NULL;
        if ((r == own) && (ustatus == UCS_OK)) {
            *own_done = 1;   /* its poster drops the flush's hold */
            continue;
        }
        hixl_xfer_flushed(engine, r, ustatus);
    }
    return due;
}

static void hixl_fg_flush_cb(void *request, ucs_status_t ustatus,
                             void *user_data)
{
    hixl_ep_ctx_t *ctx = user_data;

    ucp_request_free(request);
    if (hixl_fg_finish(ctx->engine, ctx, ustatus, 0, NULL, NULL)) {
        /* engine->lock may not be taken here: the next flush is issued by
         * a caller that holds it (hixl_fg_progress, hixl_fg_add) */
        atomic_store(&ctx->engine->fg_wanted, 1);
    }
}

/* Flush for ctx->fg_group (engine->lock held, so the endpoint stays open);
 * a flush that completes at once finishes here, and the next with it.
 * Returns 1 when own (the poster's request, or NULL) was covered by a
 * flush that completed here without error: its flush hold is then left to
 * the poster, which may finish the request without atomics. */
static int hixl_fg_issue(hixl_engine_t *engine, hixl_ep_ctx_t *ctx,
                         hixl_request_t *own)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;
    int more, own_done = 0;

    do {
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = hixl_fg_flush_cb;
        param.user_data    = ctx;
        sp = ucp_ep_flush_nbx(ctx->fg_ep, &param);
        if (UCS_PTR_IS_PTR(sp)) {
            return own_done;   /* the rest: hixl_fg_flush_cb */
        }
        /* done at once (shared memory): nobody else can be at ctx */
        more = hixl_fg_finish(engine, ctx, UCS_PTR_STATUS(sp), 1, own,
                              &own_done) &&
               hixl_fg_take_waiters(ctx);
    } while (more);
    return own_done;
}

int hixl_fg_add(hixl_engine_t *engine, hixl_peer_t *peer,
                hixl_request_t *req)
{
    hixl_ep_ctx_t *ctx = peer->ep_ctx;
    int issue;

    req->next_flush = NULL;
    /* No flush out or due: only a holder of engine->lock (this caller) sets
     * fg_busy, and with no flush out no callback touches ctx, so it is ours
     * without the spinlock until a flush goes out. */
    if (atomic_load_explicit(&ctx->fg_busy, memory_order_acquire) == 0) {
        ctx->fg_group = req;
        atomic_store_explicit(&ctx->fg_busy, 1, memory_order_relaxed);
        return hixl_fg_issue(engine, ctx, req);
    }
    pthread_spin_lock(&ctx->fg_lock);
    if (!atomic_load(&ctx->fg_busy)) {
        ctx->fg_group = req;   /* a callback cleared it just now */
        atomic_store(&ctx->fg_busy, 1);
        issue = 1;
    } else {
        /* a flush in flight may predate our operations: the next one */
        if (ctx->fg_wait_tail != NULL) {
            ctx->fg_wait_tail->next_flush = req;
        } else {
            ctx->fg_wait_head = req;
        }
        ctx->fg_wait_tail = req;
        /* the flush in flight completed and nobody issued the next yet */
        issue = hixl_fg_take_waiters(ctx);
    }
    pthread_spin_unlock(&ctx->fg_lock);
    return issue ? hixl_fg_issue(engine, ctx, req) : 0;
}

void hixl_fg_progress(hixl_engine_t *engine)
{
    hixl_peer_t *peer;
    hixl_ep_ctx_t *ctx;
    int issue;

    pthread_mutex_lock(&engine->lock);
    atomic_store(&engine->fg_wanted, 0);
    for (peer = engine->peers; peer != NULL; peer = peer->next) {
        ctx = peer->ep_ctx;
        if ((ctx == NULL) || (peer->ep == NULL) || !ctx->fg_lock_init) {
            continue;
        }
        pthread_spin_lock(&ctx->fg_lock);
        issue = hixl_fg_take_waiters(ctx);
        pthread_spin_unlock(&ctx->fg_lock);
        if (issue) {
            hixl_fg_issue(engine, ctx, NULL);
        }
    }
    pthread_mutex_unlock(&engine->lock);
}

void hixl_fg_close(hixl_ep_ctx_t *ctx)
{
    if (!ctx->fg_lock_init) {
        return;
    }
    pthread_spin_lock(&ctx->fg_lock);
    ctx->fg_ep         = NULL;
    ctx->fg_group      = NULL;
    ctx->fg_wait_head  = ctx->fg_wait_tail = NULL;
    ctx->fg_due        = 0;
    pthread_spin_unlock(&ctx->fg_lock);
}
