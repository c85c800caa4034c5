/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfers: validation, posting and the status calls.
 *
 * A transfer is: every descriptor resolved once against the local region
 * table and the peer's remote table, and its path chosen (nothing is
 * posted if one is bad); then each posted by its path (ops/xfer_path.h:
 * a UCX put or get with the region's memh and the cached rkey, a
 * same-host copy, the library's messages, device work); then the request
 * joins its endpoint's flush group, whose flush proves every byte reached
 * its destination.  The request completes on that flush (and on its
 * device work), so COMPLETED means "visible at the destination", not
 * merely "sent".
 *
 * Per descriptor the hot path does one lookup per side (usually the
 * index's hint) and one UCX call: no allocation, no lock, no system call
 * of its own.  The resolution lives in a per-engine array, used under the
 * engine lock and grown when a bigger batch comes.
 */
#include "config.h"
#include "ops/transfer.h"
#include "ops/memory.h"
#include "ops/notify.h"
#include "ops/xfer_path.h"
#include "util/args.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct hixl_xfer {
    hixl_xfer_slot_t *slots;   /* engine->lock */
    size_t            cap;
};

/* What validation found. */
typedef struct hixl_xfer_plan {
    hixl_xfer_slot_t *slots;
    int               rma_only;      /* every descriptor a UCX put or get
                                        between host regions: posted
                                        before the request is filled in */
    int               remote_miss;   /* a remote range not in the table:
                                        the peer may have to be asked */
    unsigned          paths;         /* the paths taken, and their bytes */
    uint64_t          bytes[HIXL_PATH_COUNT];   /* (for the metrics) */
} hixl_xfer_plan_t;

/* ---- validation ---------------------------------------------------------- */

static hixl_status_t hixl_xfer_bad_desc(size_t i, const char *side,
                                        uint64_t addr, uint64_t len,
                                        const hixl_range_t *straddle,
                                        const char *owner)
{
    if (addr + len < addr) {
        return hixl_error(HIXL_PARAM_INVALID, "descriptor %zu: %s address "
                          "0x%" PRIx64 " + length %" PRIu64 " overflows", i,
                          side, addr, len);
    }
    if (straddle != NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "descriptor %zu: %s range "
                          "[0x%" PRIx64 ", +%" PRIu64 ") straddles the end of "
                          "region [0x%" PRIx64 ", +%" PRIu64 ") registered %s",
                          i, side, addr, len, straddle->addr, straddle->len,
                          owner);
    }
    return hixl_error(HIXL_PARAM_INVALID, "descriptor %zu: %s range "
                      "[0x%" PRIx64 ", +%" PRIu64 ") is not inside any region "
                      "registered %s", i, side, addr, len, owner);
}

/* Resolve descriptor i into s (engine->lock held). */
static hixl_status_t hixl_xfer_resolve(hixl_engine_t *engine,
                                       hixl_peer_t *peer, size_t i,
                                       const hixl_transfer_op_desc_t *d,
                                       hixl_xfer_slot_t *s,
                                       hixl_xfer_plan_t *plan)
{
    hixl_range_t *straddle = NULL;
    char owner[HIXL_ENGINE_NAME_MAX + 16];
    hixl_status_t status;

    hixl_assert_locked(&engine->lock);
    s->local = (hixl_region_t*)hixl_range_find(&engine->mem.by_addr,
                                               d->local_addr, d->len,
                                               &straddle);
    if (s->local == NULL) {
        return hixl_xfer_bad_desc(i, "local", d->local_addr, d->len,
                                  straddle, "with this engine");
    }
    straddle  = NULL;
    s->remote = hixl_rtable_find(&peer->rtab, d->remote_addr, d->len,
                                 &straddle);
    if (s->remote == NULL) {
        snprintf(owner, sizeof(owner), "by %s", peer->name);
        plan->remote_miss = (straddle == NULL) &&
                            (d->remote_addr + d->len >= d->remote_addr);
        return hixl_xfer_bad_desc(i, "remote", d->remote_addr, d->len,
                                  straddle, owner);
    }
    status = hixl_xfer_path_choose(engine, peer, i, d, s);
    plan->rma_only &= (status == HIXL_SUCCESS) && (s->path == HIXL_PATH_RMA) &&
                      (s->local->type == HIXL_MEM_HOST) &&
                      (s->remote->mem_type == HIXL_MEM_HOST);
    return status;
}

/* PARAM_INVALID (or UNSUPPORTED) naming the first bad descriptor; with
 * plan->remote_miss set when the peer may have to be asked first. */
static hixl_status_t hixl_xfer_validate(hixl_engine_t *engine,
                                        hixl_peer_t *peer,
                                        const hixl_transfer_op_desc_t *descs,
                                        size_t num_descs,
                                        hixl_xfer_plan_t *plan)
{
    struct hixl_xfer *x = engine->xfer;
    hixl_status_t status;
    size_t i;

    if (hixl_array_reserve(&x->slots, &x->cap, num_descs, sizeof(*x->slots),
                           64) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %zu "
                          "descriptors", num_descs);
    }
    plan->slots       = x->slots;
    plan->rma_only    = 1;
    plan->remote_miss = 0;
    plan->paths       = 0;
    memset(plan->bytes, 0, sizeof(plan->bytes));
    for (i = 0; i < num_descs; ++i) {
        if (descs[i].len == 0) {
            x->slots[i].local = NULL;
            continue;
        }
        status = hixl_xfer_resolve(engine, peer, i, &descs[i], &x->slots[i],
                                   plan);
        if (status != HIXL_SUCCESS) {
            return status;
        }
        plan->paths                   |= 1u << x->slots[i].path;
        plan->bytes[x->slots[i].path] += descs[i].len;
    }
    return HIXL_SUCCESS;
}

/* ---- posting ------------------------------------------------------------- */

/* Post every descriptor of a plan by its path (ops/xfer_path.h).  The
 * first failure is recorded in req and the rest is not posted; what was
 * posted is still flushed before the request ends. */
static void hixl_xfer_post(hixl_engine_t *engine, hixl_peer_t *peer,
                           hixl_request_t *req,
                           const hixl_transfer_op_desc_t *descs,
                           size_t num_descs, const hixl_xfer_plan_t *plan,
                           int blocking)
{
    hixl_xfer_ctx_t x = {.engine    = engine,
                         .peer      = peer,
                         .req       = req,
                         .blocking  = blocking,
                         .num_descs = num_descs};
    unsigned used     = 0;
    const hixl_xfer_slot_t *s;
    size_t i;
    int p;

    for (i = 0; i < num_descs; ++i) {
        s = &plan->slots[i];
        if (s->local == NULL) {
            continue;
        }
        hixl_assert(s->path < HIXL_PATH_COUNT);
        used |= 1u << s->path;
        if (hixl_paths[s->path].post(&x, i, &descs[i], s) != UCS_OK) {
            break;
        }
    }
    for (p = 0; p < HIXL_PATH_COUNT; ++p) {   /* what was posted goes */
        if ((used & (1u << p)) && (hixl_paths[p].submit != NULL)) {
            hixl_paths[p].submit(&x);
        }
    }
}

/* The same for host regions only, before the transfer has a request: what
 * a peer polls for lands without waiting for our bookkeeping.  Returns
 * UCS_OK, or the first failure with its index in *failed_at (the rest is
 * not posted). */
static ucs_status_t hixl_xfer_post_host(hixl_engine_t *engine,
                                        hixl_peer_t *peer,
                                        hixl_transfer_op_t op,
                                        const hixl_transfer_op_desc_t *descs,
                                        size_t num_descs,
                                        const hixl_xfer_plan_t *plan,
                                        size_t *failed_at)
{
    ucs_status_t ustatus;
    size_t i;

    for (i = 0; i < num_descs; ++i) {
        if (plan->slots[i].local == NULL) {
            continue;
        }
        hixl_assert(plan->slots[i].path == HIXL_PATH_RMA);   /* rma_only */
        ustatus = hixl_xfer_rma(engine, peer, op, &descs[i],
                                &plan->slots[i]);
        if (ustatus != UCS_OK) {
            *failed_at = i;
            return ustatus;
        }
    }
    return UCS_OK;
}

/* ---- starting a transfer ------------------------------------------------- */

static hixl_status_t hixl_xfer_check_args(hixl_engine_t *engine,
                                          const char *remote,
                                          hixl_transfer_op_t op,
                                          const hixl_transfer_op_desc_t *descs,
                                          size_t num_descs)
{
    hixl_status_t status = hixl_check_remote(engine, remote);
    size_t i;

    if (status != HIXL_SUCCESS) {
        return status;
    }
    if ((op != HIXL_READ) && (op != HIXL_WRITE)) {
        return hixl_error(HIXL_PARAM_INVALID, "transfer op %d is neither "
                          "HIXL_READ (0) nor HIXL_WRITE (1)", (int)op);
    }
    if (descs == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "descriptor array is NULL");
    }
    if (num_descs == 0) {
        return hixl_error(HIXL_PARAM_INVALID, "no descriptors (num_descs 0)");
    }
    /* as hixl does, before any connect: a null address is a bug of the
     * caller's whatever the length */
    for (i = 0; i < num_descs; ++i) {
        if ((descs[i].local_addr == 0) || (descs[i].remote_addr == 0)) {
            return hixl_error(HIXL_PARAM_INVALID, "descriptor %zu: %s address "
                              "is 0", i, descs[i].local_addr ? "remote" :
                              "local");
        }
    }
    return HIXL_SUCCESS;
}

/* The peer and a valid plan (engine->lock held).  A remote range missing
 * from the peer's table may be a region registered after its table was
 * sent, still on the wire: the peer is asked (the lock is released while
 * waiting) and the descriptors resolved again. */
static hixl_status_t hixl_xfer_plan(hixl_engine_t *engine, const char *remote,
                                    const hixl_transfer_op_desc_t *descs,
                                    size_t num_descs, uint64_t deadline,
                                    hixl_peer_t **peer_p,
                                    hixl_xfer_plan_t *plan)
{
    hixl_peer_t *peer;
    hixl_status_t status;
    uint64_t refresh;

    hixl_assert_locked(&engine->lock);
    status = hixl_peer_lookup(engine, remote, 1, &peer);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_xfer_validate(engine, peer, descs, num_descs, plan);
    if ((status != HIXL_SUCCESS) && plan->remote_miss) {
        /* read the clock only here: a full clock read was a tenth of a
         * small transfer's cost */
        refresh = hixl_deadline_ns(engine->opts.connect_timeout_ms);
        hixl_peer_retain(peer);
        /* within the transfer's own time */
        status = hixl_memory_refresh(engine, peer, (refresh < deadline) ?
                                     refresh : deadline);
        if (peer->state != HIXL_PEER_READY) {
            status = hixl_error(HIXL_NOT_CONNECTED, "%s disconnected: %s",
                                peer->name, peer->close_reason);
        } else if (status == HIXL_SUCCESS) {
            status = hixl_xfer_validate(engine, peer, descs, num_descs, plan);
        } else {
            status = hixl_error(HIXL_NOT_CONNECTED, "%s: no answer while "
                                "refreshing its memory table", peer->name);
        }
        hixl_peer_release(peer);
    }
    *peer_p = peer;
    return status;
}

/* Everything completed inside the post (shared memory): only the poster's
 * hold and the flush's are left, and nobody else can see the request
 * before its handle is returned, so it finishes with plain stores, holding
 * nothing (most of the cost of a small transfer here was atomic
 * read-modify-writes). */
static int hixl_xfer_done_in_post(hixl_request_t *req, int flushed)
{
    if (!flushed || (req->after_data != NULL) ||
        (atomic_load_explicit(&req->pending, memory_order_acquire) != 2)) {
        return 0;
    }
    req->peer = NULL;
    hixl_req_mark_done(req);
    atomic_store_explicit(&req->data_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&req->pending, 0, memory_order_relaxed);
    atomic_store_explicit(&req->state, HIXL_REQ_DONE, memory_order_release);
    hixl_events_signal(&req->engine->events);
    return 1;
}

/*
 * A transfer to a peer on this host completes when its bytes are in the
 * peer's shared memory, which stays mapped here after the peer died: a
 * transfer that ran after the death would report SUCCESS into memory
 * nobody reads.  The peer's control socket has seen EOF the moment it died
 * (the kernel closes a dead process's sockets): look before reporting, so
 * that a blocking transfer never reports SUCCESS to a peer that was dead
 * when it completed.  (The progress thread notices the EOF too, but only
 * at its next look at the sockets.)
 */
static void hixl_xfer_check_alive(hixl_request_t *req, hixl_peer_t *peer)
{
    char c;

    if ((peer == NULL) || !hixl_peer_same_host(peer) ||
        (atomic_load(&req->status) != HIXL_SUCCESS) || (peer->conn.fd < 0) ||
        (recv(peer->conn.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) != 0)) {
        return;
    }
    hixl_req_fail(req, HIXL_FAILED, "%s of %zu descriptor(s) to %s: the "
                  "peer's process ended while it ran (its control "
                  "connection closed); its bytes went to memory nobody "
                  "reads", hixl_req_op_name(req->op), req->num_descs,
                  peer->name);
}

/* Validate and post; engine->lock held.  On success *req_p is in flight
 * (or already done).  blocking: a transfer_sync, which reports SUCCESS only
 * for a peer still alive (hixl_xfer_check_alive). */
static hixl_status_t hixl_xfer_start(hixl_engine_t *engine, const char *remote,
                                     hixl_transfer_op_t op,
                                     const hixl_transfer_op_desc_t *descs,
                                     size_t num_descs,
                                     const hixl_transfer_args_t *args,
                                     int blocking, hixl_request_t **req_p)
{
    int64_t timeout_ms = engine->opts.transfer_timeout_ms;
    const hixl_notify_desc_t *notify = NULL;
    uint64_t deadline, post_ns;
    hixl_xfer_plan_t plan;
    hixl_request_t *req;
    hixl_peer_t *peer;
    hixl_status_t status;
    ucs_status_t ustatus = UCS_OK;
    size_t failed_at = 0;
    int flushed, fast;

    hixl_assert_locked(&engine->lock);
    if ((args != NULL) && (args->field_mask & HIXL_TRANSFER_ARG_TIMEOUT)) {
        if (args->timeout_ms <= 0) {
            return hixl_error(HIXL_PARAM_INVALID, "transfer timeout_ms %d is "
                              "not positive", (int)args->timeout_ms);
        }
        timeout_ms = args->timeout_ms;
    }
    if ((args != NULL) && (args->field_mask & HIXL_TRANSFER_ARG_NOTIFY)) {
        notify = &args->notify;
        status = hixl_notify_check(engine, notify, "transfer notify");
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    /* the transfer's time runs from this call: waits on the way (a memory
     * table refresh, copies done while posting) count in it */
    deadline = hixl_deadline_coarse_ns(timeout_ms);
    status   = hixl_xfer_plan(engine, remote, descs, num_descs, deadline,
                              &peer, &plan);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (!hixl_req_available(&engine->reqs)) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "all %u requests are in "
                          "flight (option hixl.MaxRequests)",
                          engine->reqs.size);
    }
    /* The request names its peer before its flush is posted (completions
     * use it), but takes its reference and its places in the in-flight
     * counts only after, and only if it is still in flight: until this
     * returns, engine->lock keeps the peer alive, and our own hold keeps
     * any completion from dropping those counts before we took them. */
    fast    = plan.rma_only && (notify == NULL);
    post_ns = hixl_metrics_post_clock();
    if (fast) {
        /* The puts go out first, and the request (available, checked
         * above; we are its only taker) is filled in after them, off the
         * path a waiting peer sees. */
        ustatus = hixl_xfer_post_host(engine, peer, op, descs, num_descs,
                                      &plan, &failed_at);
    }
    req            = hixl_req_get(&engine->reqs, engine);
    hixl_assert(req != NULL);   /* one was available, and we hold the lock */
    hixl_assert(atomic_load(&req->state) == HIXL_REQ_ACTIVE);
    req->op        = op;
    req->num_descs = num_descs;
    req->post_ns   = post_ns;
    req->paths     = plan.paths;
    memcpy(req->path_bytes, plan.bytes, sizeof(plan.bytes));
    if ((args != NULL) && (args->field_mask & HIXL_TRANSFER_ARG_USER_DATA)) {
        req->user_data = args->user_data;
    }
    if (notify != NULL) {
        /* nothing is posted yet on this path */
        status = hixl_notify_attach(req, notify);
        if (status != HIXL_SUCCESS) {
            hixl_req_discard(req);
            return status;
        }
    }
    hixl_assert((peer->state == HIXL_PEER_READY) && (peer->ep_flush != NULL));
    req->peer = peer;
    if (ustatus != UCS_OK) {
        hixl_xfer_rma_failed(req, failed_at, ustatus);
    } else if (!fast) {
        hixl_xfer_post(engine, peer, req, descs, num_descs, &plan, blocking);
    }
    /* what was posted is flushed, after a failure too: it must be done
     * before the request and the caller's buffers are released */
    flushed = hixl_ep_flush_add(peer->ep_flush, &req->flush, 1);
    *req_p  = req;
    if (hixl_xfer_done_in_post(req, flushed)) {
        if (blocking) {
            hixl_xfer_check_alive(req, peer);
        }
        return HIXL_SUCCESS;
    }
    hixl_req_inflight(req);
    if (flushed) {
        hixl_req_flushed(&req->flush, UCS_OK);   /* the flush's hold */
    }
    /* only a request still in flight can time out (read only by the
     * status and sync calls, after this returns) */
    req->deadline_ns = deadline;
    /* drop the poster's hold: the request may finish right here, and then
     * nobody needs waking */
    hixl_req_data_done(req);
    if (atomic_load(&req->state) == HIXL_REQ_ACTIVE) {
        hixl_progress_kick(engine);
    }
    return HIXL_SUCCESS;
}

/* ---- the calls ------------------------------------------------------------ */

static hixl_transfer_status_t hixl_xfer_status(hixl_request_t *req);

hixl_status_t hixl_transfer_async(hixl_engine_t *engine, const char *remote,
                                  hixl_transfer_op_t op,
                                  const hixl_transfer_op_desc_t *descs,
                                  size_t num_descs,
                                  const hixl_transfer_args_t *args,
                                  hixl_req_t *req_p)
{
    hixl_request_t *req;
    hixl_status_t status;

    status = hixl_xfer_check_args(engine, remote, op, descs, num_descs);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (req_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "req_p is NULL");
    }
    hixl_progress_before_post(engine);
    pthread_mutex_lock(&engine->lock);
    status = hixl_xfer_start(engine, remote, op, descs, num_descs, args, 0,
                             &req);
    pthread_mutex_unlock(&engine->lock);
    if (status == HIXL_SUCCESS) {
        *req_p = (hixl_req_t)(uintptr_t)req->handle;
    }
    return status;
}

hixl_status_t hixl_get_transfer_status(hixl_engine_t *engine, hixl_req_t req_h,
                                       hixl_transfer_status_t *status_p)
{
    hixl_request_t *req;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if (status_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "status_p is NULL");
    }
    req = hixl_req_lookup(&engine->reqs, (uintptr_t)req_h);
    if (req == NULL) {
        /* FAILED, as in hixl: a polling loop that ignores the return value
         * ends instead of spinning on WAITING */
        *status_p = HIXL_TRANSFER_FAILED;
        return hixl_error(HIXL_PARAM_INVALID, "request %p is not in flight on "
                          "this engine (already reported, or never issued by "
                          "it)", (void*)req_h);
    }
    /* Progress only for an answer not known yet: a window of requests that
     * one flush completed is reported without a system call each. */
    if (atomic_load(&req->state) != HIXL_REQ_DONE) {
        hixl_progress_pass(engine, HIXL_PROGRESS_POLL_DATA);
    }
    *status_p = hixl_xfer_status(req);
    return HIXL_SUCCESS;
}

/* The status of a request in flight, reporting (and releasing) it when it
 * ended. */
static hixl_transfer_status_t hixl_xfer_status(hixl_request_t *req)
{
    hixl_transfer_status_t status;

    if (atomic_load(&req->state) == HIXL_REQ_DONE) {
        hixl_req_report(req, &status);
        return status;
    }
    if (hixl_req_expire(req, hixl_now_coarse_ns())) {
        return HIXL_TRANSFER_TIMEOUT;
    }
    if (atomic_load(&req->state) == HIXL_REQ_DONE) {
        hixl_req_report(req, &status);
        return status;
    }
    return HIXL_TRANSFER_WAITING;
}

static int hixl_xfer_by_seq(const void *a, const void *b)
{
    const hixl_request_t *ra = *(hixl_request_t *const *)a;
    const hixl_request_t *rb = *(hixl_request_t *const *)b;

    return (ra->seq > rb->seq) - (ra->seq < rb->seq);
}

/* The requests in flight, oldest first; NULL and *n 0 when none. */
static hixl_request_t **hixl_xfer_in_flight(hixl_engine_t *engine, size_t *n)
{
    hixl_req_pool_t *pool = &engine->reqs;
    uint32_t i, used      = atomic_load(&pool->used);   /* the rest: FREE */
    hixl_request_t **list;
    unsigned state;

    *n   = 0;
    list = malloc((used ? used : 1) * sizeof(*list));
    if (list == NULL) {
        return NULL;
    }
    for (i = 0; i < used; ++i) {
        state = atomic_load(&pool->reqs[i].state);
        if ((state == HIXL_REQ_ACTIVE) || (state == HIXL_REQ_DONE)) {
            list[(*n)++] = &pool->reqs[i];
        }
    }
    qsort(list, *n, sizeof(*list), hixl_xfer_by_seq);
    return list;
}

hixl_status_t hixl_get_all_transfer_status(hixl_engine_t *engine,
                                           uint32_t max_query_count,
                                           int skip_waiting,
                                           hixl_transfer_result_t **results_p,
                                           size_t *count_p)
{
    hixl_transfer_result_t *out;
    hixl_transfer_status_t status;
    hixl_request_t **list, *req;
    const void *user_data;
    size_t n, i, count = 0;
    uint64_t handle;

    if ((engine == NULL) || (results_p == NULL) || (count_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL", !engine ?
                          "engine" : !results_p ? "results_p" : "count_p");
    }
    *results_p = NULL;
    *count_p   = 0;
    if (max_query_count == 0) {
        return HIXL_SUCCESS;
    }
    hixl_progress_pass(engine, HIXL_PROGRESS_POLL_DATA);
    list = hixl_xfer_in_flight(engine, &n);
    out  = malloc((n ? n : 1) * sizeof(*out));
    if ((list == NULL) || (out == NULL)) {
        free(list);
        free(out);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "status of %u requests", engine->reqs.size);
    }
    for (i = 0; (i < n) && (count < max_query_count); ++i) {
        /* read before a report releases it */
        handle    = list[i]->handle;
        user_data = list[i]->user_data;
        req       = hixl_req_lookup(&engine->reqs, handle);
        if (req == NULL) {
            continue;   /* reported by another call meanwhile */
        }
        status = hixl_xfer_status(req);
        if (skip_waiting && (status == HIXL_TRANSFER_WAITING)) {
            continue;
        }
        out[count].req       = (hixl_req_t)(uintptr_t)handle;
        out[count].user_data = user_data;
        out[count].status    = status;
        ++count;
    }
    free(list);
    if (count == 0) {
        free(out);
        return HIXL_SUCCESS;
    }
    *results_p = out;
    *count_p   = count;
    return HIXL_SUCCESS;
}

void hixl_release_transfer_results(hixl_transfer_result_t *results,
                                   size_t count)
{
    (void)count;
    free(results);
}

/*
 * How long hixl_transfer_sync watches its request before it sleeps on it.
 * A short transfer over tcp completes tens of microseconds after its post,
 * when the progress thread reads the target's answer; a caller already
 * asleep then waits for a wake-up and a reschedule on top (about as long
 * again on a busy host).  The watch yields the core at every look, so a
 * progress thread that shares it runs; a longer transfer costs the caller
 * this much CPU once.
 */
#define HIXL_SYNC_SPIN_NS 50000ull   /* 50 us */

hixl_status_t hixl_transfer_sync(hixl_engine_t *engine, const char *remote,
                                 hixl_transfer_op_t op,
                                 const hixl_transfer_op_desc_t *descs,
                                 size_t num_descs, int32_t timeout_ms)
{
    hixl_transfer_args_t args;
    hixl_transfer_status_t xstatus;
    hixl_request_t *req;
    hixl_status_t status;
    uint64_t spin_end;

    status = hixl_xfer_check_args(engine, remote, op, descs, num_descs);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_check_timeout(timeout_ms);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = timeout_ms;

    hixl_progress_before_post(engine);
    pthread_mutex_lock(&engine->lock);
    status = hixl_xfer_start(engine, remote, op, descs, num_descs, &args, 1,
                             &req);
    pthread_mutex_unlock(&engine->lock);
    if (status != HIXL_SUCCESS) {
        return status;
    }

    spin_end = hixl_now_ns() + HIXL_SYNC_SPIN_NS;
    for (;;) {
        if (atomic_load(&req->state) == HIXL_REQ_DONE) {
            hixl_xfer_check_alive(req, req->peer);
            return hixl_req_report(req, &xstatus);
        }
        if (hixl_req_expire(req, hixl_now_coarse_ns())) {
            return HIXL_TIMEOUT;
        }
        if (!engine->progress.running) {
            hixl_progress_pass(engine, HIXL_PROGRESS_WAIT_DATA);
            continue;
        }
        if (hixl_now_ns() < spin_end) {
            sched_yield();
            continue;
        }
        hixl_req_sleep(&engine->reqs, req, req->deadline_ns);
    }
}

/* ---- set-up ----------------------------------------------------------------- */

hixl_status_t hixl_transfer_init(hixl_engine_t *engine)
{
    engine->xfer = calloc(1, sizeof(*engine->xfer));
    if (engine->xfer == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    return HIXL_SUCCESS;
}

void hixl_transfer_cleanup(hixl_engine_t *engine)
{
    if (engine->xfer != NULL) {
        free(engine->xfer->slots);
        free(engine->xfer);
        engine->xfer = NULL;
    }
}
