/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The staging path: local device memory to and from remote UCX-reachable
 * memory through a pool of registered host buffers (hixl's BufferPool
 * option, "count:MiB": count buffers of MiB each).
 *
 *   WRITE  per chunk: device-to-host copy into a free buffer (async, on the
 *          plugin's stream) -> ucp_put_nbx from the buffer -> the buffer is
 *          free again when UCX reports the put locally complete.
 *   READ   per chunk: ucp_get_nbx into a free buffer -> host-to-device copy
 *          out of it -> free when the copy's event completes.
 *
 * With several buffers, the device copy of one chunk overlaps the network
 * transfer of another.  Jobs (one per transfer) take buffers in order of
 * posting.  A WRITE job ends with ucp_ep_flush_nbx after its last put,
 * so "done" means the bytes are in the remote memory; only then does its
 * unit let the request, a layer signal or a revoke answer go on.
 *
 * The CPU never touches device memory: it only hands addresses to the
 * plugin's copy engine and to UCX, which reads and writes the host buffers.
 *
 * Everything here runs under engine->lock and dev->lock (posting to an
 * endpoint needs the peer to be alive, which engine->lock guarantees);
 * UCX callbacks only set the buffer's or job's completion flag.
 */
#include "config.h"
#include "device/staging.h"
#include "util/array.h"
#include "core/engine.h"
#include "util/log.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef enum hixl_stage_state {
    HIXL_STAGE_FREE,
    HIXL_STAGE_D2H,     /* WRITE: device -> buffer copy queued */
    HIXL_STAGE_PUT,     /* WRITE: put from the buffer in flight */
    HIXL_STAGE_GET,     /* READ: get into the buffer in flight */
    HIXL_STAGE_H2D,     /* READ: buffer -> device copy queued */
    HIXL_STAGE_LOST     /* its peer closed with a UCX operation on it in
                           flight: unused until UCX gives it back */
} hixl_stage_state_t;

typedef struct hixl_stage_buf {
    struct hixl_stage_buf *next_free;
    uint8_t               *addr;
    hixl_stage_state_t     state;
    hixl_stage_job_t      *job;
    uint64_t               local;     /* device address of the chunk */
    uint64_t               remote;
    size_t                 len;
    ucp_rkey_h             rkey;      /* of the chunk's remote region */
    void                  *token;
    atomic_int             ucx_done;
    atomic_int             ucx_status;
} hixl_stage_buf_t;

struct hixl_stage {
    hixl_dev_plugin_t *host_dp;    /* whose host_alloc made mem, or NULL */
    uint8_t           *mem;
    size_t             mem_len;
    ucp_mem_h          memh;
    size_t             buf_len;
    unsigned           nbufs;
    hixl_stage_buf_t  *bufs;
    hixl_stage_buf_t  *free;
    hixl_stage_job_t  *queue_head;  /* jobs with chunks left to start */
    hixl_stage_job_t  *queue_tail;
};

typedef struct hixl_stage_desc {
    uint64_t   local;
    uint64_t   remote;
    uint64_t   len;
    ucp_rkey_h rkey;
} hixl_stage_desc_t;

struct hixl_stage_job {
    hixl_stage_job_t  *next;       /* in the queue */
    hixl_dev_unit_t   *unit;
    hixl_transfer_op_t op;
    hixl_dev_plugin_t *dp;
    int32_t            device;
    hixl_stage_desc_t *descs;
    size_t             n, cap;
    size_t             cur;        /* next chunk: descs[cur] at off */
    uint64_t           off;
    unsigned           inflight;   /* chunks started, not finished */
    int                queued;     /* in the pool's queue */
    int                failed;
    int                flush;      /* 0 not posted, 1 in flight, 2 done */
    hixl_ep_flush_waiter_t fw;         /* its final flush (WRITE) */
    atomic_int         fl_done;
    atomic_int         fl_status;
    int                done;
};

/* ---- the pool ----------------------------------------------------------- */

hixl_status_t hixl_stage_ready(hixl_engine_t *engine, hixl_dev_plugin_t *dp)
{
    hixl_dev_t *dev = engine->dev;
    ucp_mem_map_params_t params;
    hixl_stage_t *st;
    ucs_status_t ustatus;
    unsigned i;

    if (dev->stage != NULL) {
        return HIXL_SUCCESS;
    }
    if (engine->opts.buffer_pool_count == 0) {
        return hixl_error(HIXL_UNSUPPORTED, "the staging pool is disabled "
                          "(BufferPool 0:0)");
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    st->nbufs   = engine->opts.buffer_pool_count;
    st->buf_len = (size_t)engine->opts.buffer_pool_mib << 20;
    st->mem_len = st->buf_len * st->nbufs;
    st->bufs    = calloc(st->nbufs, sizeof(*st->bufs));
    /* page-locked memory from the device runtime where it offers it:
     * device DMA to and from it is asynchronous and full speed */
    if ((st->bufs != NULL) && (dp->ops->host_alloc != NULL) &&
        (dp->ops->host_alloc(dp->ctx, st->mem_len, (void**)&st->mem) ==
         HIXL_SUCCESS)) {
        st->host_dp = dp;
    } else if (st->bufs != NULL) {
        st->mem = mmap(NULL, st->mem_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (st->mem == MAP_FAILED) {
            st->mem = NULL;
        }
    }
    if (st->mem == NULL) {
        free(st->bufs);
        free(st);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "cannot allocate the "
                          "staging pool (BufferPool %u:%u, %zu bytes)",
                          engine->opts.buffer_pool_count,
                          engine->opts.buffer_pool_mib,
                          (size_t)engine->opts.buffer_pool_count *
                          ((size_t)engine->opts.buffer_pool_mib << 20));
    }
    memset(&params, 0, sizeof(params));
    params.field_mask  = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                         UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    params.address     = st->mem;
    params.length      = st->mem_len;
    params.memory_type = UCS_MEMORY_TYPE_HOST;
    ustatus = ucp_mem_map(engine->ucp_context, &params, &st->memh);
    if (ustatus != UCS_OK) {
        dev->stage = st;   /* let cleanup free what we have */
        st->memh   = NULL;
        hixl_stage_cleanup(engine);
        return hixl_error(HIXL_FAILED, "ucp_mem_map of the staging pool: %s",
                          ucs_status_string(ustatus));
    }
    for (i = st->nbufs; i-- > 0;) {
        st->bufs[i].addr      = st->mem + (size_t)i * st->buf_len;
        st->bufs[i].next_free = st->free;
        st->free              = &st->bufs[i];
    }
    dev->stage = st;
    hixl_log_info("staging pool: %u buffers of %zu bytes (%s)", st->nbufs,
                  st->buf_len, st->host_dp ? "page-locked by the device "
                  "runtime" : "anonymous memory");
    return HIXL_SUCCESS;
}

void hixl_stage_cleanup(hixl_engine_t *engine)
{
    hixl_stage_t *st = engine->dev->stage;

    if (st == NULL) {
        return;
    }
    if (st->memh != NULL) {
        ucp_mem_unmap(engine->ucp_context, st->memh);
    }
    if (st->host_dp != NULL) {
        st->host_dp->ops->host_free(st->host_dp->ctx, st->mem);
    } else if (st->mem != NULL) {
        munmap(st->mem, st->mem_len);
    }
    free(st->bufs);
    free(st);
    engine->dev->stage = NULL;
}

/* ---- jobs --------------------------------------------------------------- */

hixl_status_t hixl_stage_add(hixl_dev_unit_t *unit, hixl_transfer_op_t op,
                             hixl_dev_plugin_t *dp, int32_t device,
                             uint64_t local, uint64_t remote, uint64_t len,
                             ucp_rkey_h rkey)
{
    hixl_stage_job_t *job = unit->job;

    if (job == NULL) {
        job = calloc(1, sizeof(*job));
        if (job == NULL) {
            return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for "
                              "a staging job");
        }
        job->unit = unit;
        job->op   = op;
        unit->job = job;
    }
    if ((job->n > 0) && ((job->dp != dp) || (job->device != device))) {
        /* one job per (plugin, device); a transfer from several local
         * devices through staging is rare enough to refuse clearly */
        return hixl_error(HIXL_UNSUPPORTED, "staged descriptors of one "
                          "transfer must come from one device (device %d "
                          "after %d)", device, job->device);
    }
    if (hixl_array_reserve(&job->descs, &job->cap, job->n + 1,
                           sizeof(*job->descs), 8) != 0) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for "
                          "staged descriptors");
    }
    job->dp                    = dp;
    job->device                = device;
    job->descs[job->n].local   = local;
    job->descs[job->n].remote  = remote;
    job->descs[job->n].len     = len;
    job->descs[job->n].rkey    = rkey;
    job->n++;
    return HIXL_SUCCESS;
}

void hixl_stage_queue(hixl_engine_t *engine, hixl_stage_job_t *job)
{
    hixl_stage_t *st = engine->dev->stage;

    job->queued = 1;
    if (st->queue_tail != NULL) {
        st->queue_tail->next = job;
    } else {
        st->queue_head = job;
    }
    st->queue_tail = job;
}

void hixl_stage_job_free(hixl_stage_job_t *job)
{
    /* a final flush still queued was settled when its peer closed, which
     * comes before any job is freed */
    free(job->descs);
    free(job);
}

static void hixl_stage_fail(hixl_stage_job_t *job, hixl_status_t status,
                            const char *what, const char *why)
{
    hixl_req_fail(job->unit->req, status, "staged %s to %s failed: %s: %s",
                  (job->op == HIXL_WRITE) ? "WRITE" : "READ",
                  job->unit->peer->name, what, why);
    job->failed = 1;
}

static void hixl_stage_unqueue(hixl_stage_t *st, hixl_stage_job_t *job)
{
    hixl_stage_job_t **pp, *prev = NULL;

    for (pp = &st->queue_head; *pp != NULL; prev = *pp, pp = &(*pp)->next) {
        if (*pp == job) {
            *pp = job->next;
            if (st->queue_tail == job) {
                st->queue_tail = prev;
            }
            break;
        }
    }
    job->next   = NULL;
    job->queued = 0;
}

/* The peer can still be posted to (engine->lock held). */
static int hixl_stage_peer_ok(hixl_stage_job_t *job)
{
    hixl_peer_t *peer = job->unit->peer;

    if ((peer->state == HIXL_PEER_READY) && (peer->ep != NULL)) {
        return 1;
    }
    if (!job->failed) {
        hixl_stage_fail(job, HIXL_FAILED, "the connection closed",
                        peer->close_reason[0] ? peer->close_reason :
                        "disconnected");
    }
    return 0;
}

static void hixl_stage_ucx_cb(void *request, ucs_status_t ustatus,
                              void *user_data)
{
    hixl_stage_buf_t *buf = user_data;

    atomic_store(&buf->ucx_status, (int)ustatus);
    atomic_store(&buf->ucx_done, 1);
    ucp_request_free(request);
}

/* The job's final flush completed (or its endpoint closed: the flush
 * service calls back before the close returns, so the job is still
 * there). */
static void hixl_stage_flushed(hixl_ep_flush_waiter_t *w, ucs_status_t ustatus)
{
    hixl_stage_job_t *job = (hixl_stage_job_t*)((char*)w -
                                                offsetof(hixl_stage_job_t, fw));

    atomic_store(&job->fl_status, (int)ustatus);
    atomic_store(&job->fl_done, 1);
}

static void hixl_stage_buf_free(hixl_stage_t *st, hixl_stage_buf_t *buf)
{
    buf->job->inflight--;
    buf->job       = NULL;
    buf->state     = HIXL_STAGE_FREE;
    buf->next_free = st->free;
    st->free       = buf;
}

/* Post a put or get of the buffer; 1 in flight, 0 done at once, -1 failed
 * (job failed). */
static int hixl_stage_ucx(hixl_stage_t *st, hixl_stage_buf_t *buf)
{
    hixl_stage_job_t *job = buf->job;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (!hixl_stage_peer_ok(job)) {
        return -1;
    }
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
    param.cb.send      = hixl_stage_ucx_cb;
    param.user_data    = buf;
    param.memh         = st->memh;
    atomic_store(&buf->ucx_done, 0);
    if (job->op == HIXL_WRITE) {
        sp = ucp_put_nbx(job->unit->peer->ep, buf->addr, buf->len,
                         buf->remote, buf->rkey, &param);
    } else {
        sp = ucp_get_nbx(job->unit->peer->ep, buf->addr, buf->len,
                         buf->remote, buf->rkey, &param);
    }
    if (UCS_PTR_IS_ERR(sp)) {
        hixl_stage_fail(job, HIXL_FAILED, (job->op == HIXL_WRITE) ?
                        "ucp_put_nbx" : "ucp_get_nbx",
                        ucs_status_string(UCS_PTR_STATUS(sp)));
        return -1;
    }
    hixl_chan_rma_posted(job->unit->peer->chan);   /* for the flush */
    return (sp != NULL);
}

/* Queue a device copy between the buffer and device memory, and its
 * completion token; 0 or -1 (job failed). */
static int hixl_stage_copy(hixl_stage_buf_t *buf, int to_device)
{
    hixl_stage_job_t *job = buf->job;
    hixl_mem_copy_t c;

    c.len         = buf->len;
    c.exec_device = job->device;
    if (to_device) {
        c.dst        = (void*)(uintptr_t)buf->local;
        c.dst_device = job->device;
        c.src        = buf->addr;
        c.src_device = -1;
    } else {
        c.dst        = buf->addr;
        c.dst_device = -1;
        c.src        = (const void*)(uintptr_t)buf->local;
        c.src_device = job->device;
    }
    if ((job->dp->ops->copy(job->dp->ctx, &c) != HIXL_SUCCESS) ||
        (job->dp->ops->mark(job->dp->ctx, job->device, &buf->token) !=
         HIXL_SUCCESS)) {
        hixl_stage_fail(job, HIXL_FAILED, "device copy",
                        hixl_error_message());
        return -1;
    }
    return 0;
}

/* Start the next chunk of job in buf. */
static void hixl_stage_start(hixl_stage_t *st, hixl_stage_job_t *job,
                             hixl_stage_buf_t *buf)
{
    const hixl_stage_desc_t *d = &job->descs[job->cur];
    int rc;

    buf->job    = job;
    buf->local  = d->local + job->off;
    buf->remote = d->remote + job->off;
    buf->len    = (d->len - job->off < st->buf_len) ? d->len - job->off :
                  st->buf_len;
    buf->rkey   = d->rkey;
    buf->token  = NULL;
    job->inflight++;
    job->off += buf->len;
    if (job->off == d->len) {
        job->cur++;
        job->off = 0;
    }
    if (job->op == HIXL_WRITE) {
        buf->state = HIXL_STAGE_D2H;
        if (hixl_stage_copy(buf, 0) != 0) {
            hixl_stage_buf_free(st, buf);
        }
        return;
    }
    buf->state = HIXL_STAGE_GET;
    rc         = hixl_stage_ucx(st, buf);
    if (rc < 0) {
        hixl_stage_buf_free(st, buf);
    } else if (rc == 0) {
        atomic_store(&buf->ucx_status, UCS_OK);
        atomic_store(&buf->ucx_done, 1);
    }
}

/* Move a busy buffer on; 1 when its state changed. */
static int hixl_stage_advance(hixl_stage_t *st, hixl_stage_buf_t *buf)
{
    hixl_stage_job_t *job = buf->job;
    hixl_status_t status;
    int done = 0, rc;

    switch (buf->state) {
    case HIXL_STAGE_D2H:
    case HIXL_STAGE_H2D:
        status = job->dp->ops->test(job->dp->ctx, buf->token, &done);
        if (status != HIXL_SUCCESS) {
            hixl_stage_fail(job, status, "device copy", hixl_error_message());
            hixl_stage_buf_free(st, buf);
            return 1;
        }
        if (!done) {
            return 0;
        }
        buf->token = NULL;
        if ((buf->state == HIXL_STAGE_H2D) || job->failed) {
            hixl_stage_buf_free(st, buf);
            return 1;
        }
        buf->state = HIXL_STAGE_PUT;
        rc         = hixl_stage_ucx(st, buf);
        if (rc <= 0) {
            hixl_stage_buf_free(st, buf);   /* put done at once, or failed */
        }
        return 1;
    case HIXL_STAGE_PUT:
    case HIXL_STAGE_GET:
        if (!atomic_load(&buf->ucx_done)) {
            if (job->unit->peer->state != HIXL_PEER_CLOSED) {
                return 0;
            }
            /* cancelled by the close, called back maybe much later */
            hixl_stage_peer_ok(job);
            job->inflight--;
            buf->job   = NULL;
            buf->state = HIXL_STAGE_LOST;
            return 1;
        }
        if (atomic_load(&buf->ucx_status) != UCS_OK) {
            hixl_stage_fail(job, HIXL_FAILED, (buf->state == HIXL_STAGE_PUT) ?
                            "put" : "get", ucs_status_string(
                            (ucs_status_t)atomic_load(&buf->ucx_status)));
        }
        if ((buf->state == HIXL_STAGE_PUT) || job->failed) {
            hixl_stage_buf_free(st, buf);
            return 1;
        }
        buf->state = HIXL_STAGE_H2D;
        if (hixl_stage_copy(buf, 1) != 0) {
            hixl_stage_buf_free(st, buf);
        }
        return 1;
    case HIXL_STAGE_LOST:
        if (!atomic_load(&buf->ucx_done)) {
            return 0;
        }
        buf->state     = HIXL_STAGE_FREE;
        buf->next_free = st->free;
        st->free       = buf;
        return 1;
    case HIXL_STAGE_FREE:
        break;
    }
    return 0;
}

unsigned hixl_stage_progress(hixl_engine_t *engine)
{
    hixl_stage_t *st = engine->dev->stage;
    hixl_stage_job_t *job;
    hixl_stage_buf_t *buf;
    unsigned n = 0, i;

    if (st == NULL) {
        return 0;
    }
    for (i = 0; i < st->nbufs; ++i) {
        if (st->bufs[i].state != HIXL_STAGE_FREE) {
            n += hixl_stage_advance(st, &st->bufs[i]);
        }
    }
    while ((job = st->queue_head) != NULL) {
        if (job->failed || (job->cur == job->n)) {
            hixl_stage_unqueue(st, job);   /* everything started */
            continue;
        }
        if ((buf = st->free) == NULL) {
            break;
        }
        if ((job->op == HIXL_WRITE) || hixl_stage_peer_ok(job)) {
            st->free = buf->next_free;
            hixl_stage_start(st, job, buf);
            ++n;
        }
    }
    return n;
}

int hixl_stage_job_poll(hixl_engine_t *engine, hixl_stage_job_t *job)
{
    ucs_status_t ustatus;

    if (job->done) {
        return 1;
    }
    if ((!job->failed && (job->cur < job->n)) || (job->inflight > 0)) {
        return 0;
    }
    if (job->queued) {
        hixl_stage_unqueue(engine->dev->stage, job);   /* failed early */
    }
    if ((job->op == HIXL_WRITE) && !job->failed && (job->flush == 0)) {
        /* the puts are locally complete; the flush proves them remote */
        if (!hixl_stage_peer_ok(job)) {
            job->done = 1;
            return 1;
        }
        job->fw.cb = hixl_stage_flushed;
        atomic_store(&job->fl_done, 0);
        job->flush = 1;
        hixl_ep_flush_add(job->unit->peer->ep_flush, &job->fw, 0);
    }
    if (job->flush == 1) {
        if (!atomic_load(&job->fl_done)) {
            return 0;
        }
        ustatus = (ucs_status_t)atomic_load(&job->fl_status);
        if (ustatus != UCS_OK) {
            hixl_stage_fail(job, HIXL_FAILED, "flush",
                            ucs_status_string(ustatus));
        }
        job->flush = 2;
    }
    job->done = 1;
    return 1;
}
