/*
 * Transfers: validation, posting and completion.
 *
 * A transfer is: every descriptor checked against the local region table
 * and the peer's remote table (nothing is posted if one is bad), then one
 * ucp_put_nbx / ucp_get_nbx per descriptor with the region's memh and the
 * cached rkey, then a ucp_ep_flush_nbx posted after them whose completion
 * proves every byte reached its destination.  The request completes on that
 * flush, so COMPLETED means "visible at the destination", not merely
 * "sent".  Transfers to one endpoint share flushes (flush_group.h).
 * Descriptors with device memory on either side go to device_path.c (IPC
 * copy or staging, see device.h); the request then also waits for that
 * device work.
 *
 * Per descriptor the hot path does two range lookups (usually the hint) and
 * one UCX call: no allocation, no lock, no system call of its own.
 */
#include "config.h"
#include "core/peer.h"
#include "util/args.h"
#include "util/clock.h"
#include "device/device.h"
#include "core/ep_flush.h"
#include "util/handle.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *hixl_op_name(hixl_transfer_op_t op)
{
    return (op == HIXL_WRITE) ? "WRITE" : "READ";
}

/* ---- completion ---------------------------------------------------------- */

static void hixl_xfer_release(hixl_engine_t *engine, hixl_request_t *req)
{
    hixl_peer_t *peer = req->peer;

    req->peer = NULL;
    hixl_req_put(&engine->reqs, req);
    if (peer != NULL) {
        hixl_peer_release(peer);
    }
}

static void hixl_xfer_wake(hixl_engine_t *engine)
{
    if (atomic_load(&engine->done_waiters) == 0) {
        return;
    }
    pthread_mutex_lock(&engine->done_lock);
    pthread_cond_broadcast(&engine->done_cond);
    pthread_mutex_unlock(&engine->done_lock);
}

void hixl_xfer_complete_one(hixl_engine_t *engine, hixl_request_t *req)
{
    unsigned expected = HIXL_REQ_ACTIVE;

    if (atomic_fetch_sub(&req->pending, 1) != 1) {
        return;
    }
    atomic_fetch_sub(&req->peer->inflight, 1);
    atomic_fetch_sub(&engine->busy, 1);
    if (atomic_compare_exchange_strong(&req->state, &expected,
                                       HIXL_REQ_DONE)) {
        hixl_xfer_wake(engine);
    } else {
        /* reported as TIMEOUT already: nobody will ask again */
        hixl_xfer_release(engine, req);
    }
}

/* Send the per-transfer notify now that the data is visible remotely. */
static void hixl_xfer_send_notify(hixl_engine_t *engine, hixl_request_t *req)
{
    ctrl_msg_t msg;
    int one = 1;

    memset(&msg, 0, sizeof(msg));
    msg.type           = CTRL_NOTIFY;
    msg.u.notify.seq   = HIXL_SEQ_XFER | req->handle;
    msg.u.notify.name  = ctrl_bytes(req->notify_name, strlen(req->notify_name));
    msg.u.notify.msg   = ctrl_bytes(req->notify_msg, req->notify_len);

    atomic_fetch_add(&req->pending, 1);
    atomic_store(&req->await_ack, 1);
    if ((ctrl_conn_send(&req->peer->conn, &msg) != HIXL_SUCCESS) &&
        atomic_compare_exchange_strong(&req->await_ack, &one, 0)) {
        hixl_req_fail(req, HIXL_NOTIFY_FAILED, "data of the %s to %s landed, "
                      "but its notify could not be sent: %s",
                      hixl_op_name(req->op), req->peer->name,
                      hixl_error_message());
        hixl_xfer_complete_one(engine, req);
    }
}

void hixl_xfer_flushed(hixl_engine_t *engine, hixl_request_t *req,
                       ucs_status_t ustatus)
{
    if (ustatus != UCS_OK) {
        hixl_req_fail(req, HIXL_FAILED, "%s of %zu descriptor(s) to %s "
                      "failed: %s%s%s", hixl_op_name(req->op), req->num_descs,
                      req->peer->name, ucs_status_string(ustatus),
                      req->peer->close_reason[0] ? "; " : "",
                      req->peer->close_reason);
    }
    hixl_xfer_data_done(engine, req);
}

void hixl_xfer_data_done(hixl_engine_t *engine, hixl_request_t *req)
{
    /* the last data-bearing completion (UCX flush, device copies, staged
     * chunks) sends the notify: it must not overtake any of them */
    if ((atomic_fetch_sub(&req->data_pending, 1) == 1) &&
        (req->notify_name != NULL) &&
        (atomic_load(&req->status) == HIXL_SUCCESS)) {
        hixl_xfer_send_notify(engine, req);
    }
    hixl_xfer_complete_one(engine, req);
}

/* Settle the flush of `req` if it is still the one `pending` names. */
static void hixl_xfer_flush_settle(hixl_engine_t *engine, hixl_request_t *req,
                                   unsigned pending, ucs_status_t ustatus)
{
    if (atomic_compare_exchange_strong(&req->flush_pending, &pending, 0)) {
        hixl_xfer_flushed(engine, req, ustatus);
    }
}

void hixl_xfer_notify_acked(hixl_engine_t *engine, uint64_t seq,
                            hixl_status_t status)
{
    hixl_request_t *req;
    int one = 1;

    req = hixl_req_lookup(&engine->reqs, engine->serial, seq & ~HIXL_SEQ_XFER);
    if ((req == NULL) ||
        !atomic_compare_exchange_strong(&req->await_ack, &one, 0)) {
        hixl_log_debug("NOTIFY_ACK 0x%" PRIx64 " for no waiting request", seq);
        return;
    }
    if (status != HIXL_SUCCESS) {
        hixl_req_fail(req, status, "data of the %s to %s landed, but %s "
                      "refused its notify: %s", hixl_op_name(req->op),
                      req->peer->name, req->peer->name, hixl_strerror(status));
    }
    hixl_xfer_complete_one(engine, req);
}

void hixl_xfer_peer_closed(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_request_t *req;
    unsigned pending;
    uint32_t i;
    int one;

    for (i = 0; i < engine->reqs.size; ++i) {
        req = &engine->reqs.reqs[i];
        if (req->peer != peer) {
            continue;
        }
        /* the forced close may not call its flush back before the worker
         * is destroyed: settle it here (FAILED, unless it already landed) */
        pending = atomic_load(&req->flush_pending);
        if (pending & 1) {
            hixl_xfer_flush_settle(engine, req, pending, UCS_ERR_CANCELED);
        }
        one = 1;
        if (
            atomic_compare_exchange_strong(&req->await_ack, &one, 0)) {
            hixl_req_fail(req, HIXL_NOTIFY_FAILED, "data of the %s to %s "
                          "landed, but the peer went away before it took the "
                          "notify: %s", hixl_op_name(req->op), peer->name,
                          peer->close_reason);
            hixl_xfer_complete_one(engine, req);
        }
    }
}

void hixl_xfer_abandon_all(hixl_engine_t *engine)
{
    hixl_request_t *req;
    uint32_t i;

    for (i = 0; i < engine->reqs.size; ++i) {
        req = &engine->reqs.reqs[i];
        if ((atomic_load(&req->state) != HIXL_REQ_FREE) &&
            (req->peer != NULL)) {
            hixl_peer_release(req->peer);
            req->peer = NULL;
        }
    }
}

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

/* PARAM_INVALID for a bad local side (final).  For a remote range not in
 * the peer's table: *remote_miss is set and PARAM_INVALID returned with the
 * message, so the caller may refresh the table and try once more. */
static hixl_status_t hixl_xfer_validate(hixl_engine_t *engine,
                                        hixl_peer_t *peer,
                                        const hixl_transfer_op_desc_t *descs,
                                        size_t num_descs, int *remote_miss,
                                        int *all_host)
{
    const hixl_transfer_op_desc_t *d;
    hixl_range_t *straddle;
    hixl_region_t *region;
    hixl_rregion_t *rr;
    hixl_status_t status;
    char owner[HIXL_ENGINE_NAME_MAX + 16];
    size_t i;

    *remote_miss = 0;
    *all_host    = 1;
    for (i = 0; i < num_descs; ++i) {
        d = &descs[i];
        if (d->len == 0) {
            continue;
        }
        straddle = NULL;
        region   = (hixl_region_t*)hixl_range_find(&engine->mem.by_addr,
                                                   d->local_addr, d->len,
                                                   &straddle);
        if (region == NULL) {
            return hixl_xfer_bad_desc(i, "local", d->local_addr, d->len,
                                      straddle, "with this engine");
        }
        straddle = NULL;
        rr       = (hixl_rregion_t*)hixl_range_find(&peer->rtab,
                                                    d->remote_addr, d->len,
                                                    &straddle);
        if (rr == NULL) {
            snprintf(owner, sizeof(owner), "by %s", peer->name);
            *remote_miss = (straddle == NULL) &&
                           (d->remote_addr + d->len >= d->remote_addr);
            return hixl_xfer_bad_desc(i, "remote", d->remote_addr, d->len,
                                      straddle, owner);
        }
        /* device memory on either side: some path must carry it, or the
         * whole transfer is refused before anything moves */
        if ((region->type != HIXL_MEM_HOST) ||
            (rr->mem_type != HIXL_MEM_HOST)) {
            *all_host = 0;
            status = hixl_dev_route(engine, peer, i, d, region, rr, NULL);
            if (status != HIXL_SUCCESS) {
                return status;
            }
        }
    }
    return HIXL_SUCCESS;
}

static int hixl_sync_acked(void *arg)
{
    hixl_peer_t *peer = ((void**)arg)[0];
    uint64_t token    = *(uint64_t*)((void**)arg)[1];

    return (peer->state == HIXL_PEER_CLOSED) || (peer->sync_acked >= token);
}

/* Ask the peer for everything it registered since it last told us, and wait
 * until its answer is in (engine->lock held; released while waiting). */
static hixl_status_t hixl_xfer_refresh(hixl_engine_t *engine,
                                       hixl_peer_t *peer, uint64_t deadline)
{
    uint64_t token = ++engine->next_token;
    void *arg[2]   = {peer, &token};
    ctrl_msg_t msg;
    hixl_status_t status;

    memset(&msg, 0, sizeof(msg));
    msg.type         = CTRL_SYNC;
    msg.u.sync.token = token;
    status = ctrl_conn_send(&peer->conn, &msg);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_peer_retain(peer);
    hixl_engine_wait(engine, deadline, hixl_sync_acked, arg);
    status = (peer->state == HIXL_PEER_CLOSED) ? HIXL_NOT_CONNECTED :
             (peer->sync_acked >= token) ? HIXL_SUCCESS : HIXL_TIMEOUT;
    hixl_peer_release(peer);
    return status;
}

/* ---- posting ------------------------------------------------------------- */

/* One put or get for a descriptor between host regions (region and rr
 * from the tables); UCX's error status, or UCS_OK once posted (completion
 * is proven by the flush that follows). */
static ucs_status_t hixl_xfer_rma(hixl_peer_t *peer, hixl_transfer_op_t op,
                                  const hixl_transfer_op_desc_t *d,
                                  const hixl_region_t *region,
                                  const hixl_rregion_t *rr)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
    param.memh         = region->memh;
    if (op == HIXL_WRITE) {
        sp = ucp_put_nbx(peer->ep, (void*)d->local_addr, d->len,
                         d->remote_addr, rr->rkey, &param);
    } else {
        sp = ucp_get_nbx(peer->ep, (void*)d->local_addr, d->len,
                         d->remote_addr, rr->rkey, &param);
    }
    if (UCS_PTR_IS_ERR(sp)) {
        return UCS_PTR_STATUS(sp);
    }
    if (sp != NULL) {
        ucp_request_free(sp);
    }
    return UCS_OK;
}

static void hixl_xfer_rma_failed(hixl_request_t *req, size_t i,
                                 ucs_status_t ustatus)
{
    hixl_req_fail(req, HIXL_FAILED, "descriptor %zu: %s failed: %s", i,
                  (req->op == HIXL_WRITE) ? "ucp_put_nbx" : "ucp_get_nbx",
                  ucs_status_string(ustatus));
}

/* The flush that completes req (after a failure too: what was posted must
 * be done before the request and the caller's buffers are released).
 * flush_pending carries the generation, so that whoever settles the flush
 * (its group, or hixl_xfer_peer_closed) does it once, for this use of the
 * slot; the request's holds were taken by hixl_req_get.  Returns 1 when
 * the flush completed here without error and its hold on req is the
 * caller's to drop (hixl_fg_add). */
static int hixl_xfer_flush(hixl_engine_t *engine, hixl_peer_t *peer,
                           hixl_request_t *req)
{
    atomic_store_explicit(&req->flush_pending, ((unsigned)req->gen << 1) | 1,
                          memory_order_release);
    return hixl_fg_add(engine, peer, req);
}

/* Post every descriptor (device ones through device_path.c), then the
 * flush; returns what hixl_xfer_flush does. */
static int hixl_xfer_post(hixl_engine_t *engine, hixl_peer_t *peer,
                          hixl_request_t *req,
                          const hixl_transfer_op_desc_t *descs,
                          size_t num_descs)
{
    const hixl_transfer_op_desc_t *d;
    hixl_dev_unit_t *unit = NULL;
    hixl_region_t *region;
    hixl_rregion_t *rr;
    ucs_status_t ustatus;
    size_t i;
    int rc;

    for (i = 0; i < num_descs; ++i) {
        d = &descs[i];
        if (d->len == 0) {
            continue;
        }
        region = (hixl_region_t*)hixl_range_find(&engine->mem.by_addr,
                                                 d->local_addr, d->len, NULL);
        rr     = (hixl_rregion_t*)hixl_range_find(&peer->rtab, d->remote_addr,
                                                  d->len, NULL);
        if ((region->type != HIXL_MEM_HOST) ||
            (rr->mem_type != HIXL_MEM_HOST)) {
            /* device memory: a device copy (IPC) or the staging pipeline,
             * or, when both sides are NIC-registered, the UCX call below */
            rc = hixl_dev_post(engine, peer, req, &unit, i, d, region, rr);
            if (rc < 0) {
                break;
            }
            if (rc > 0) {
                continue;
            }
        }
        ustatus = hixl_xfer_rma(peer, req->op, d, region, rr);
        if (ustatus != UCS_OK) {
            hixl_xfer_rma_failed(req, i, ustatus);
            break;
        }
    }

    if (unit != NULL) {
        hixl_dev_submit(engine, unit);   /* the request waits for it */
    }
    return hixl_xfer_flush(engine, peer, req);
}

/* The same for a transfer between host regions only, before it has a
 * request: what a peer polls for lands without waiting for our
 * bookkeeping.  *failed_at and *ustatus_p tell the first failure (the
 * caller records it in the request); the rest is not posted. */
static void hixl_xfer_post_host(hixl_engine_t *engine, hixl_peer_t *peer,
                                hixl_transfer_op_t op,
                                const hixl_transfer_op_desc_t *descs,
                                size_t num_descs, size_t *failed_at,
                                ucs_status_t *ustatus_p)
{
    const hixl_transfer_op_desc_t *d;
    size_t i;

    *ustatus_p = UCS_OK;
    for (i = 0; i < num_descs; ++i) {
        d = &descs[i];
        if (d->len == 0) {
            continue;
        }
        *ustatus_p = hixl_xfer_rma(peer, op, d,
                                   (hixl_region_t*)hixl_range_find(
                                       &engine->mem.by_addr, d->local_addr,
                                       d->len, NULL),
                                   (hixl_rregion_t*)hixl_range_find(
                                       &peer->rtab, d->remote_addr, d->len,
                                       NULL));
        if (*ustatus_p != UCS_OK) {
            *failed_at = i;
            return;
        }
    }
}

static hixl_status_t hixl_xfer_check_args(hixl_engine_t *engine,
                                          const char *remote,
                                          hixl_transfer_op_t op,
                                          const hixl_transfer_op_desc_t *descs,
                                          size_t num_descs)
{
    hixl_status_t status = hixl_check_remote(engine, remote);

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
    return HIXL_SUCCESS;
}

static hixl_status_t hixl_xfer_copy_notify(hixl_engine_t *engine,
                                           hixl_request_t *req,
                                           const hixl_notify_desc_t *n)
{
    size_t name_len;

    if (n->name == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "transfer notify has a NULL "
                          "name");
    }
    name_len = strlen(n->name);
    if (name_len > HIXL_NOTIFY_NAME_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "transfer notify name is %zu "
                          "bytes, limit %d", name_len, HIXL_NOTIFY_NAME_MAX);
    }
    if ((n->msg == NULL) && (n->msg_len != 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "transfer notify msg is NULL "
                          "with msg_len %zu", n->msg_len);
    }
    if (n->msg_len > engine->opts.max_notify_size) {
        return hixl_error(HIXL_PARAM_INVALID, "transfer notify msg is %zu "
                          "bytes, larger than hixl.MaxNotifySize (%u)",
                          n->msg_len, engine->opts.max_notify_size);
    }
    req->notify_name = strdup(n->name);
    req->notify_msg  = malloc(n->msg_len ? n->msg_len : 1);
    if ((req->notify_name == NULL) || (req->notify_msg == NULL)) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "transfer notify");
    }
    if (n->msg_len) {
        memcpy(req->notify_msg, n->msg, n->msg_len);
    }
    req->notify_len = n->msg_len;
    return HIXL_SUCCESS;
}

/* Validate and post; engine->lock held.  On success *req_p is in flight. */
static hixl_status_t hixl_xfer_start(hixl_engine_t *engine, const char *remote,
                                     hixl_transfer_op_t op,
                                     const hixl_transfer_op_desc_t *descs,
                                     size_t num_descs,
                                     const hixl_transfer_args_t *args,
                                     hixl_request_t **req_p)
{
    int64_t timeout_ms = engine->opts.transfer_timeout_ms;
    hixl_request_t *req;
    hixl_peer_t *peer;
    hixl_status_t status;
    int remote_miss, all_host, flushed;
    size_t failed_at = 0;
    ucs_status_t ustatus;

    if ((args != NULL) && (args->field_mask & HIXL_TRANSFER_ARG_TIMEOUT)) {
        if (args->timeout_ms <= 0) {
            return hixl_error(HIXL_PARAM_INVALID, "transfer timeout_ms %d is "
                              "not positive", (int)args->timeout_ms);
        }
        timeout_ms = args->timeout_ms;
    }

    status = hixl_peer_lookup(engine, remote, 1, &peer);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_xfer_validate(engine, peer, descs, num_descs, &remote_miss,
                                &all_host);
    if ((status != HIXL_SUCCESS) && remote_miss) {
        /* The peer may have registered it after our table was sent and its
         * announcement is still on the wire: ask before refusing. */
        hixl_peer_retain(peer);
        if (hixl_xfer_refresh(engine, peer, hixl_deadline_ns(
                engine->opts.connect_timeout_ms)) == HIXL_SUCCESS) {
            status = hixl_xfer_validate(engine, peer, descs, num_descs,
                                        &remote_miss, &all_host);
        } else {
            status = hixl_error(HIXL_NOT_CONNECTED, "%s: connection lost "
                                "while refreshing its memory table",
                                peer->name);
        }
        if (peer->state != HIXL_PEER_READY) {
            status = hixl_error(HIXL_NOT_CONNECTED, "%s disconnected: %s",
                                peer->name, peer->close_reason);
        }
        hixl_peer_release(peer);
    }
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
     * any completion from dropping those counts before we took them (their
     * readers hold engine->lock, or only decide whether to spin). */
    if (all_host &&
        ((args == NULL) || !(args->field_mask & HIXL_TRANSFER_ARG_NOTIFY))) {
        /* Host memory, no notify: the puts go out first, and the request
         * (available, checked above; we are its only taker) is filled in
         * after them, off the path a waiting peer sees. */
        hixl_xfer_post_host(engine, peer, op, descs, num_descs, &failed_at,
                            &ustatus);
        req            = hixl_req_get(&engine->reqs, engine->serial);
        req->op        = op;
        req->num_descs = num_descs;
        req->peer      = peer;
        if (ustatus != UCS_OK) {
            hixl_xfer_rma_failed(req, failed_at, ustatus);
        }
        flushed = hixl_xfer_flush(engine, peer, req);
    } else {
        req            = hixl_req_get(&engine->reqs, engine->serial);
        req->op        = op;
        req->num_descs = num_descs;
        if ((args != NULL) && (args->field_mask & HIXL_TRANSFER_ARG_NOTIFY)) {
            status = hixl_xfer_copy_notify(engine, req, &args->notify);
            if (status != HIXL_SUCCESS) {
                hixl_req_put(&engine->reqs, req);
                return status;
            }
        }
        req->peer = peer;
        flushed   = hixl_xfer_post(engine, peer, req, descs, num_descs);
    }
    *req_p = req;
    if (flushed && (req->notify_name == NULL) &&
        (atomic_load_explicit(&req->pending, memory_order_acquire) == 2)) {
        /* Everything completed inside the post (shared memory): only our
         * hold and the flush's are left, and nobody else can see the
         * request before its handle is returned, so it finishes with plain
         * stores, holding nothing (most of the cost of a small transfer
         * here was atomic read-modify-writes). */
        req->peer = NULL;
        atomic_store_explicit(&req->data_pending, 0, memory_order_relaxed);
        atomic_store_explicit(&req->pending, 0, memory_order_relaxed);
        atomic_store_explicit(&req->state, HIXL_REQ_DONE,
                              memory_order_release);
        return HIXL_SUCCESS;
    }
    hixl_peer_retain(peer);
    atomic_fetch_add(&peer->inflight, 1);
    atomic_fetch_add(&engine->busy, 1);
    if (flushed) {
        hixl_xfer_flushed(engine, req, UCS_OK);   /* the flush's hold */
    }
    /* only a request still in flight can time out: its clock starts now
     * (read only by the status and sync calls, after this returns) */
    req->deadline_ns = hixl_deadline_coarse_ns(timeout_ms);
    /* drop the poster's hold: the request may finish right here, and then
     * nobody needs waking */
    hixl_xfer_data_done(engine, req);
    if (atomic_load(&req->state) == HIXL_REQ_ACTIVE) {
        hixl_progress_kick(engine);
    }
    return HIXL_SUCCESS;
}

/* Report a finished request and release it. */
static hixl_status_t hixl_xfer_report(hixl_engine_t *engine,
                                      hixl_request_t *req,
                                      hixl_transfer_status_t *status_p)
{
    hixl_status_t status = (hixl_status_t)atomic_load(&req->status);

    if (status == HIXL_SUCCESS) {
        *status_p = HIXL_TRANSFER_COMPLETED;
    } else {
        *status_p = HIXL_TRANSFER_FAILED;
        hixl_error(status, "%s", req->errmsg);
    }
    hixl_xfer_release(engine, req);
    return status;
}

/* If the request is past its deadline, orphan it and report TIMEOUT.
 * Returns 1 when it did. */
static int hixl_xfer_expire(hixl_request_t *req, uint64_t now)
{
    unsigned expected = HIXL_REQ_ACTIVE;

    if ((now < req->deadline_ns) ||
        !atomic_compare_exchange_strong(&req->state, &expected,
                                        HIXL_REQ_ORPHAN)) {
        return 0;
    }
    hixl_error(HIXL_TIMEOUT, "%s of %zu descriptor(s) to %s did not complete "
               "within its timeout; its buffers stay in use until the "
               "transport gives them up", hixl_op_name(req->op),
               req->num_descs, req->peer->name);
    return 1;
}

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
    hixl_progress_control(engine);
    pthread_mutex_lock(&engine->lock);
    status = hixl_xfer_start(engine, remote, op, descs, num_descs, args, &req);
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
    req = hixl_req_lookup(&engine->reqs, engine->serial, (uintptr_t)req_h);
    if (req == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "request %p is not in flight on "
                          "this engine (already reported, or never issued by "
                          "it)", (void*)req_h);
    }
    /* Progress only for an answer not known yet: a window of requests that
     * one flush completed is reported without a system call each. */
    if (atomic_load(&req->state) == HIXL_REQ_DONE) {
        hixl_xfer_report(engine, req, status_p);
        return HIXL_SUCCESS;
    }
    if (!engine->opts.progress_thread) {
        hixl_progress(engine);
    }
    if (atomic_load(&req->state) == HIXL_REQ_DONE) {
        hixl_xfer_report(engine, req, status_p);
        return HIXL_SUCCESS;
    }
    if (hixl_xfer_expire(req, hixl_now_coarse_ns())) {
        *status_p = HIXL_TRANSFER_TIMEOUT;
        return HIXL_SUCCESS;
    }
    if (atomic_load(&req->state) == HIXL_REQ_DONE) {
        hixl_xfer_report(engine, req, status_p);
        return HIXL_SUCCESS;
    }
    *status_p = HIXL_TRANSFER_WAITING;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_transfer_sync(hixl_engine_t *engine, const char *remote,
                                 hixl_transfer_op_t op,
                                 const hixl_transfer_op_desc_t *descs,
                                 size_t num_descs, int32_t timeout_ms)
{
    hixl_transfer_args_t args;
    hixl_transfer_status_t xstatus;
    hixl_request_t *req;
    hixl_status_t status;
    struct timespec ts;
    uint64_t wake, now;

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

    hixl_progress_control(engine);
    pthread_mutex_lock(&engine->lock);
    status = hixl_xfer_start(engine, remote, op, descs, num_descs, &args, &req);
    pthread_mutex_unlock(&engine->lock);
    if (status != HIXL_SUCCESS) {
        return status;
    }

    for (;;) {
        if (atomic_load(&req->state) == HIXL_REQ_DONE) {
            return hixl_xfer_report(engine, req, &xstatus);
        }
        if (hixl_xfer_expire(req, hixl_now_coarse_ns())) {
            return HIXL_TIMEOUT;
        }
        if (!engine->opts.progress_thread) {
            hixl_progress(engine);
            continue;
        }
        /* Sleep until a completion or the deadline (see hixl_xfer_wake for
         * why no wake-up is lost). */
        pthread_mutex_lock(&engine->done_lock);
        atomic_fetch_add(&engine->done_waiters, 1);
        if (atomic_load(&req->state) != HIXL_REQ_DONE) {
            /* the deadline is on the coarse clock, which lags by up to a
             * tick: past it, sleep in 1 ms slices until it expires */
            wake = req->deadline_ns;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            now  = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
            if ((wake != UINT64_MAX) && (wake < now + 1000000ull)) {
                wake = now + 1000000ull;
            }
            if (wake != UINT64_MAX) {
                ts.tv_sec  = (time_t)(wake / 1000000000ull);
                ts.tv_nsec = (long)(wake % 1000000000ull);
            } else {
                ts.tv_sec += 1;
            }
            pthread_cond_timedwait(&engine->done_cond, &engine->done_lock,
                                   &ts);
        }
        atomic_fetch_sub(&engine->done_waiters, 1);
        pthread_mutex_unlock(&engine->done_lock);
    }
}
