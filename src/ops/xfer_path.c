/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The path table (xfer_path.h): choosing a descriptor's path, and posting
 * on each.
 */
#include "config.h"
#include "ops/xfer_path.h"
#include "ops/copier.h"
#include "ops/copy_batch.h"
#include "core/xfer/am_data.h"
#include "core/worker/ucx_tls.h"
#include "device/device_path.h"
#include "util/copy.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- choosing ---------------------------------------------------------------- */

/*
 * How transfers reach a remote host region (core/xfer/am_data.h): UCX puts and
 * gets where it has RDMA lanes; a plain memcpy where UCX maps the memory
 * here (ucp_rkey_ptr: shared memory it allocated; what UCX's own put would
 * do, but the library can do it off the caller's thread: ops/copier.h).
 * Elsewhere UCX would emulate puts with messages, whose handler aborts the
 * target when this engine dies (tcp) or which fill a shared-memory queue
 * that a death can block for good (memory UCX did not allocate): kernel
 * copies to a process of this host that allows them (core/peer/cma.h), else
 * the library's own messages.  hixl.DataPath forces one.
 */
hixl_path_t hixl_xfer_path_of_region(hixl_engine_t *engine,
                                     hixl_peer_t *peer, hixl_rregion_t *rr)
{
    static const char *const sm[] = {"sm", "posix", "sysv", "mm"};
    hixl_path_t other = peer->cma_pid ? HIXL_PATH_CMA : HIXL_PATH_AM;

    if ((rr->mem_type != HIXL_MEM_HOST) || (rr->rkey == NULL)) {
        return HIXL_PATH_RMA;   /* device memory: hixl_xfer_path_choose */
    }
    /* UCX maps memory it allocated whatever UCX_TLS says: use the mapping
     * only where the user's transports include shared memory */
    if (!hixl_ucx_tls_allows(sm, sizeof(sm) / sizeof(sm[0])) ||
        (ucp_rkey_ptr(rr->rkey, rr->range.addr, &rr->mapped) != UCS_OK)) {
        rr->mapped = NULL;
    }
    switch (engine->opts.data_path) {
    case HIXL_DATA_PATH_RMA:
        return HIXL_PATH_RMA;
    case HIXL_DATA_PATH_AM:
        return HIXL_PATH_AM;
    case HIXL_DATA_PATH_CMA:
        return other;
    default:
        return hixl_peer_is(peer, HIXL_PEER_F_EP_RDMA) ? HIXL_PATH_RMA :
               (rr->mapped != NULL) ? HIXL_PATH_MAP : other;
    }
}

hixl_status_t hixl_xfer_path_choose(hixl_engine_t *engine, hixl_peer_t *peer,
                                    size_t i, const hixl_transfer_op_desc_t *d,
                                    hixl_xfer_slot_t *s)
{
    hixl_assert_locked(&engine->lock);
    hixl_assert((s->local != NULL) && (s->remote != NULL));   /* resolved */
    if ((s->local->type == HIXL_MEM_HOST) &&
        (s->remote->mem_type == HIXL_MEM_HOST)) {
        s->path = s->remote->path;   /* chosen when it was announced */
        return HIXL_SUCCESS;
    }
    /* device memory on either side: some path must carry it, or the
     * whole transfer is refused before anything moves */
    return hixl_dev_route(engine, peer, i, d, s->local, s->remote, &s->path);
}

/* ---- rma: UCX puts and gets ------------------------------------------------ */

/* Completion is proven by the flush that follows. */
ucs_status_t hixl_xfer_rma(hixl_engine_t *engine, hixl_peer_t *peer,
                           hixl_transfer_op_t op,
                           const hixl_transfer_op_desc_t *d,
                           const hixl_xfer_slot_t *s)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    /* validated: both ends inside their regions */
    hixl_assert((s->local != NULL) && (s->remote != NULL));
    hixl_assert(d->len > 0);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMH;
    param.memh         = s->local->memh;
    hixl_ucx_post_begin(&engine->progress.ucx_posting);
    if (op == HIXL_WRITE) {
        sp = ucp_put_nbx(peer->ep, (void*)d->local_addr, d->len,
                         d->remote_addr, s->remote->rkey, &param);
    } else {
        sp = ucp_get_nbx(peer->ep, (void*)d->local_addr, d->len,
                         d->remote_addr, s->remote->rkey, &param);
    }
    hixl_ucx_post_end(&engine->progress.ucx_posting);
    if (UCS_PTR_IS_ERR(sp)) {
        return UCS_PTR_STATUS(sp);
    }
    if (sp != NULL) {
        ucp_request_free(sp);
    }
    hixl_chan_rma_posted(peer->chan);   /* the flush must be UCX's too */
    return UCS_OK;
}

void hixl_xfer_rma_failed(hixl_request_t *req, size_t i,
                          ucs_status_t ustatus)
{
    hixl_req_fail(req, HIXL_FAILED, "descriptor %zu: %s failed: %s", i,
                  (req->op == HIXL_WRITE) ? "ucp_put_nbx" : "ucp_get_nbx",
                  ucs_status_string(ustatus));
}


static ucs_status_t hixl_path_rma_post(hixl_xfer_ctx_t *x, size_t i,
                                       const hixl_transfer_op_desc_t *d,
                                       const hixl_xfer_slot_t *s)
{
    ucs_status_t ustatus;

    hixl_assert(s->path == HIXL_PATH_RMA);
    ustatus = hixl_xfer_rma(x->engine, x->peer, x->req->op, d, s);

    if (ustatus != UCS_OK) {
        hixl_xfer_rma_failed(x->req, i, ustatus);
    }
    return ustatus;
}

/* ---- map and cma: same-host copies ------------------------------------------ */

/* In this thread for a blocking call or without a progress thread, else
 * by the engine's copier thread (ops/copier.h), counted in the
 * connection's channel so that the request's flush waits for it. */
static int hixl_path_copy_async(const hixl_xfer_ctx_t *x)
{
    return !x->blocking && hixl_copier_enabled(x->engine);
}

/* A copy that failed (the reason is the last error, naming the
 * descriptor) fails its request; the peer is gone when the kernel said
 * so. */
static ucs_status_t hixl_path_copy_failed(hixl_xfer_ctx_t *x,
                                          hixl_status_t status)
{
    if (status == HIXL_NOT_CONNECTED) {
        hixl_peer_gone(x->peer);
    }
    hixl_req_fail(x->req, status, "%s", hixl_error_message());
    return UCS_ERR_IO_ERROR;
}

/* Run or queue the copies gathered so far. */
static ucs_status_t hixl_path_copy_flush(hixl_xfer_ctx_t *x)
{
    hixl_copy_batch_t *b = x->copies;
    hixl_status_t status;

    x->copies = NULL;
    if (b == NULL) {
        return UCS_OK;
    }
    if (b->count == 0) {
        status = HIXL_SUCCESS;
        free(b);
    } else if (hixl_path_copy_async(x)) {
        status = hixl_copier_post(x->engine, x->peer->chan, x->req, b);
    } else {
        status = hixl_copy_batch_run(b, 0, b->count);
        free(b);
    }
    return (status == HIXL_SUCCESS) ? UCS_OK :
           hixl_path_copy_failed(x, status);
}

/* Gather descriptor i (pid: cma's, 0: map), running the batch whenever it
 * fills up.  Out of memory for a batch, the caller's thread copies it. */
static ucs_status_t hixl_path_copy_gather(hixl_xfer_ctx_t *x, size_t i,
                                          pid_t pid, void *local,
                                          uint64_t remote, size_t len,
                                          int stream)
{
    int write = (x->req->op == HIXL_WRITE);
    char why[HIXL_ERROR_MSG_MAX];
    size_t off = 0, cap;
    hixl_status_t status;
    ucs_status_t ustatus;

    if ((x->copies != NULL) && (x->copies->pid != pid)) {
        ustatus = hixl_path_copy_flush(x);   /* a batch is of one path */
        if (ustatus != UCS_OK) {
            return ustatus;
        }
    }
    while (off < len) {
        if (x->copies == NULL) {
            /* room for the rest of the request, up to one kernel call */
            cap = x->num_descs - i + (len - off) / HIXL_COPY_PIECE_MAX;
            cap = (cap > HIXL_COPY_BATCH_MAX) ? HIXL_COPY_BATCH_MAX : cap;
            x->copies = hixl_copy_batch_new(cap, write, pid);
        }
        if (x->copies == NULL) {
            status = hixl_copy_now(write, pid, (char*)local + off,
                                   remote + off, len - off, stream);
            if (status == HIXL_SUCCESS) {
                return UCS_OK;
            }
            snprintf(why, sizeof(why), "%s", hixl_error_message());
            hixl_error(status, "descriptor %zu: %s", i, why);
            return hixl_path_copy_failed(x, status);
        }
        off += hixl_copy_batch_add(x->copies, i, (char*)local + off,
                                   remote + off, len - off, stream);
        if (hixl_copy_batch_full(x->copies)) {
            ustatus = hixl_path_copy_flush(x);
            if (ustatus != UCS_OK) {
                return ustatus;
            }
        }
    }
    return UCS_OK;
}

static ucs_status_t hixl_path_copy_post(hixl_xfer_ctx_t *x, size_t i,
                                        const hixl_transfer_op_desc_t *d,
                                        const hixl_xfer_slot_t *s)
{
    const hixl_rregion_t *rr = s->remote;
    int write                = (x->req->op == HIXL_WRITE);
    void *local              = (void*)(uintptr_t)d->local_addr;
    uint64_t remote;
    int stream;

    hixl_assert((s->path == HIXL_PATH_MAP) || (s->path == HIXL_PATH_CMA));
    if (s->path == HIXL_PATH_CMA) {
        hixl_assert(x->peer->cma_pid > 0);
        return hixl_path_copy_gather(x, i, x->peer->cma_pid, local,
                                     d->remote_addr, d->len, 0);
    }
    hixl_assert(rr->mapped != NULL);
    remote = (uint64_t)(uintptr_t)rr->mapped +
             (d->remote_addr - rr->range.addr);
    /* a WRITE into a peer's KV cache sweeps it, a READ sweeps our own
     * (util/copy.h): the destination's region decides */
    stream = hixl_copy_sweeps(d->len, write ? rr->range.len :
                              s->local->range.len);
    if (!hixl_path_copy_async(x)) {
        /* a memcpy gains nothing from company: now, without a batch */
        (void)hixl_copy_now(write, 0, local, remote, d->len, stream);
        return UCS_OK;
    }
    return hixl_path_copy_gather(x, i, 0, local, remote, d->len, stream);
}

/* After the last descriptor: what was gathered goes, unless the request
 * failed meanwhile (a later descriptor on another path): then nothing
 * gathered was posted, and no byte of it has been read. */
static void hixl_path_copy_submit(hixl_xfer_ctx_t *x)
{
    if ((x->copies != NULL) &&
        (atomic_load(&x->req->status) != HIXL_SUCCESS)) {
        free(x->copies);
        x->copies = NULL;
    }
    (void)hixl_path_copy_flush(x);   /* a failure is in the request */
}

/* ---- am: the library's messages ---------------------------------------------- */

/* Gathered into messages of several pieces (core/xfer/am_data.h); a full
 * one goes at once. */
static ucs_status_t hixl_path_am_post(hixl_xfer_ctx_t *x, size_t i,
                                      const hixl_transfer_op_desc_t *d,
                                      const hixl_xfer_slot_t *s)
{
    ucs_status_t ustatus;

    hixl_assert((s->path == HIXL_PATH_AM) && (x->peer->chan != NULL));
    ustatus = hixl_am_batch_add(x->engine, &x->am, x->peer->chan, x->req,
                                (x->req->op == HIXL_WRITE) ? HIXL_AM_WRITE :
                                HIXL_AM_READ, d->local_addr, d->remote_addr,
                                d->len);
    if (ustatus != UCS_OK) {
        hixl_req_fail(x->req, HIXL_FAILED, "descriptor %zu: the library's "
                      "%s message was not sent: %s", i,
                      (x->req->op == HIXL_WRITE) ? "WRITE" : "READ",
                      ucs_status_string(ustatus));
    }
    return ustatus;
}

/* The last message of the request. */
static void hixl_path_am_submit(hixl_xfer_ctx_t *x)
{
    ucs_status_t ustatus = hixl_am_batch_flush(x->engine, &x->am);

    if (ustatus != UCS_OK) {
        hixl_req_fail(x->req, HIXL_FAILED, "the library's last %s message "
                      "was not sent: %s",
                      (x->req->op == HIXL_WRITE) ? "WRITE" : "READ",
                      ucs_status_string(ustatus));
    }
}

/* ---- ipc and stage: device memory ---------------------------------------------- */

static ucs_status_t hixl_path_dev_post(hixl_xfer_ctx_t *x, size_t i,
                                       const hixl_transfer_op_desc_t *d,
                                       const hixl_xfer_slot_t *s)
{
    hixl_assert((s->path == HIXL_PATH_IPC) || (s->path == HIXL_PATH_STAGE));
    /* the request holds the reason when it fails */
    return (hixl_dev_post(x->engine, x->peer, x->req, &x->unit, i, d,
                          s->local, s->remote, s->path) < 0) ?
           UCS_ERR_IO_ERROR : UCS_OK;
}

static void hixl_path_dev_submit(hixl_xfer_ctx_t *x)
{
    if (x->unit != NULL) {
        hixl_dev_submit(x->engine, x->unit);   /* the request waits for it */
        x->unit = NULL;
    }
}

/* ---- the table ------------------------------------------------------------------ */

const hixl_path_ops_t hixl_paths[HIXL_PATH_COUNT] = {
    [HIXL_PATH_RMA]   = {"rma", hixl_path_rma_post, NULL},
    [HIXL_PATH_AM]    = {"am", hixl_path_am_post, hixl_path_am_submit},
    [HIXL_PATH_CMA]   = {"cma", hixl_path_copy_post, hixl_path_copy_submit},
    [HIXL_PATH_MAP]   = {"map", hixl_path_copy_post, hixl_path_copy_submit},
    [HIXL_PATH_IPC]   = {"ipc", hixl_path_dev_post, hixl_path_dev_submit},
    [HIXL_PATH_STAGE] = {"staging", hixl_path_dev_post, hixl_path_dev_submit},
};
