/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: the bare-UCX transfer baseline, the same fan-in and fan-out as the
 * engines run, with UCX's public API and nothing of hixl.
 *
 * The processes speak the engines' lines (fan_engine.c), so the coordinator
 * runs them with the same steps (fan_point.c): the same slices, sizes,
 * window, passes, deadline, CPU samples and verification of every byte.
 *
 *   decode   maps its region with ucp_mem_map(ALLOCATE), as hixl_alloc_mem
 *            does, and announces its worker address and the region's rkey
 *            on its READY line (ucx=ADDRHEX.RKEYHEX); it then sleeps in
 *            its worker's event fd (ucp_worker_arm), as a decode engine's
 *            progress thread does
 *   prefill  one endpoint per peer; a descriptor is one UCX operation, a
 *            transfer per_xfer of them, `window` transfers in flight per
 *            peer; it too sleeps in the worker's event fd when nothing
 *            completed
 *
 * The operation is what a UCX user would pick on the transport: a put
 * (ucp_put_nbx into the rkey) where the endpoint has lanes for puts (UCX
 * lists them as put[...] in ucp_ep_print_info: shared memory and RDMA), an
 * active message otherwise (tcp), whose handler copies an eager message
 * into place and receives a rendezvous one straight into it
 * (ucp_am_recv_data_nbx).  A transfer counts as done when its operations
 * completed locally; a peer's last completion is the end of a fence that
 * makes everything before it visible at the decode (an endpoint flush for
 * puts, a request and its answer for messages, which a peer's
 * earlier messages precede).
 */
#include "config.h"
#include "fan.h"
#include "fan_ucx.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

enum {
    FAN_UCX_AM_DATA      = 1,   /* hdr: where; payload: the bytes */
    FAN_UCX_AM_FENCE     = 2,   /* hdr: which peer; answered with ... */
    FAN_UCX_AM_FENCE_ACK = 3
};

typedef struct fan_ucx_hdr {
    uint64_t addr;                 /* DATA: destination address */
    uint64_t peer;                 /* FENCE(_ACK): the sender's peer index */
} fan_ucx_hdr_t;

/* Longest sleep in the event fd: the loops look at their deadlines. */
#define FAN_UCX_SLEEP_MS    100
/* After the RUN deadline: what is in flight must end by then. */
#define FAN_UCX_DRAIN_NS    (60ull * 1000000000ull)

typedef struct fan_ucx_proc {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    int           efd;
    ucp_mem_h     memh;
    uint8_t      *mem;
    size_t        len;
    ucs_status_t  failed;          /* a request nobody waits for failed */
} fan_ucx_proc_t;

static int fan_ucx_proc_init(fan_ucx_proc_t *u, size_t len, int fd)
{
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    ucs_status_t st;

    memset(u, 0, sizeof(*u));
    u->efd = -1;
    /* one thread drives the worker: UCX's fast path, as a user would */
    if (fan_ucx_open(fd, UCP_FEATURE_RMA | UCP_FEATURE_AM |
                     UCP_FEATURE_WAKEUP, UCS_THREAD_MODE_SINGLE, &u->ctx,
                     &u->worker) != 0) {
        return -1;
    }
    st = ucp_worker_get_efd(u->worker, &u->efd);
    if (st == UCS_OK) {
        memset(&mp, 0, sizeof(mp));
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mp.length     = len;
        mp.flags      = UCP_MEM_MAP_ALLOCATE;
        st = ucp_mem_map(u->ctx, &mp, &u->memh);
    }
    if (st == UCS_OK) {
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        st = ucp_mem_query(u->memh, &attr);
    }
    if (st != UCS_OK) {
        fan_child_send(fd, "ERR msg=UCX set-up: %s", ucs_status_string(st));
        return -1;
    }
    u->mem = attr.address;
    u->len = len;
    memset(u->mem, 0, len);        /* warm, as the engines' regions are */
    return 0;
}

static void fan_ucx_proc_fini(fan_ucx_proc_t *u)
{
    if (u->memh != NULL) {
        ucp_mem_unmap(u->ctx, u->memh);
    }
    if (u->worker != NULL) {
        ucp_worker_destroy(u->worker);
    }
    if (u->ctx != NULL) {
        ucp_cleanup(u->ctx);
    }
}

/* Progress; when that found nothing, sleep in the worker's event fd (and
 * the coordinator's socket, fd >= 0) for at most ms.  1 when the socket is
 * readable. */
static int fan_ucx_progress(fan_ucx_proc_t *u, int fd, int ms)
{
    struct pollfd p[2] = {{u->efd, POLLIN, 0}, {fd, POLLIN, 0}};
    ucs_status_t st;

    if (ucp_worker_progress(u->worker) != 0) {
        return (fd >= 0) && (poll(&p[1], 1, 0) > 0);
    }
    st = ucp_worker_arm(u->worker);
    if (st == UCS_ERR_BUSY) {      /* events came in meanwhile */
        return (fd >= 0) && (poll(&p[1], 1, 0) > 0);
    }
    if (poll(p, (fd >= 0) ? 2 : 1, ms) > 0) {
        return (fd >= 0) && (p[1].revents != 0);
    }
    return 0;
}

/* ---- decode --------------------------------------------------------------- */

/* Requests nobody waits for are released by their callbacks, not at
 * once: UCX 1.13 never completes a rendezvous whose request was released
 * while in flight (the transfer stalls on both sides). */
static void fan_ucx_free_cb(void *req, ucs_status_t st, size_t len,
                            void *arg)
{
    (void)len;
    *(ucs_status_t*)arg = (st != UCS_OK) ? st : *(ucs_status_t*)arg;
    ucp_request_free(req);
}

static void fan_ucx_send_cb(void *req, ucs_status_t st, void *arg)
{
    fan_ucx_free_cb(req, st, 0, arg);
}

/* A request whose callback releases it: only a failure to start is kept
 * (in *failed). */
static void fan_ucx_forget(ucs_status_ptr_t req, ucs_status_t *failed)
{
    if (UCS_PTR_IS_ERR(req)) {
        *failed = UCS_PTR_STATUS(req);
    }
}

static ucs_status_t fan_ucx_on_data(void *arg, const void *header,
                                    size_t header_length, void *data,
                                    size_t length,
                                    const ucp_am_recv_param_t *param)
{
    fan_ucx_proc_t *u = arg;
    ucp_request_param_t rp;
    fan_ucx_hdr_t h;
    uint8_t *dst;

    if (header_length != sizeof(h)) {
        return UCS_OK;
    }
    memcpy(&h, header, sizeof(h));
    dst = (uint8_t*)(uintptr_t)h.addr;
    /* bytes outside the region are dropped: verification reports them */
    if ((dst < u->mem) || (dst > u->mem + u->len) ||
        (length > (size_t)(u->mem + u->len - dst))) {
        return UCS_OK;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        memset(&rp, 0, sizeof(rp));
        rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
        rp.cb.recv_am   = fan_ucx_free_cb;
        rp.user_data    = &u->failed;
        fan_ucx_forget(ucp_am_recv_data_nbx(u->worker, data, dst, length,
                                            &rp), &u->failed);
        return UCS_OK;
    }
    memcpy(dst, data, length);
    return UCS_OK;
}

static ucs_status_t fan_ucx_on_fence(void *arg, const void *header,
                                     size_t header_length, void *data,
                                     size_t length,
                                     const ucp_am_recv_param_t *param)
{
    /* UCX 1.13 may read a header until the send completes: one per peer
     * index, which holds the same value for every answer to that index */
    static fan_ucx_hdr_t hdrs[FAN_MAX_N];
    fan_ucx_proc_t *u = arg;
    ucp_request_param_t rp;
    fan_ucx_hdr_t h;

    (void)data;
    (void)length;
    if ((header_length != sizeof(h)) ||
        !(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) {
        return UCS_OK;
    }
    memcpy(&h, header, sizeof(h));
    if (h.peer >= FAN_MAX_N) {
        return UCS_OK;
    }
    hdrs[h.peer] = h;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send      = fan_ucx_send_cb;
    rp.user_data    = &u->failed;
    fan_ucx_forget(ucp_am_send_nbx(param->reply_ep, FAN_UCX_AM_FENCE_ACK,
                                   &hdrs[h.peer], sizeof(h), NULL, 0, &rp),
                   &u->failed);
    return UCS_OK;
}

static int fan_ucx_set_handler(fan_ucx_proc_t *u, unsigned id,
                               ucp_am_recv_callback_t cb, void *arg)
{
    ucp_am_handler_param_t hp;

    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id  = id;
    hp.cb  = cb;
    hp.arg = arg;
    return (ucp_worker_set_am_recv_handler(u->worker, &hp) == UCS_OK) ? 0 :
           -1;
}

static int fan_ucx_decode_main(int fd, void *arg)
{
    const fan_engine_cfg_t *cfg = arg;
    fan_ucx_card_t card = {NULL, NULL};
    char *line, broken[120];
    fan_ucx_proc_t u;
    int rc = FAN_EXIT_ERROR, r;

    if (fan_ucx_proc_init(&u, cfg->region_len, fd) != 0) {
        goto out;
    }
    if ((fan_ucx_set_handler(&u, FAN_UCX_AM_DATA, fan_ucx_on_data, &u)) ||
        (fan_ucx_set_handler(&u, FAN_UCX_AM_FENCE, fan_ucx_on_fence, &u)) ||
        (fan_ucx_card_make(u.ctx, u.worker, u.memh, &card) != 0)) {
        fan_child_send(fd, "ERR msg=UCX set-up of the decode failed");
        goto out;
    }
    fan_child_send(fd, "READY engine=ucx addr=%" PRIu64 " len=%zu pid=%d "
                   "ucx=%s.%s", (uint64_t)(uintptr_t)u.mem, u.len,
                   (int)getpid(), card.addr_hex, card.rkey_hex);
    for (;;) {
        if (!fan_ucx_progress(&u, fd, -1)) {
            continue;
        }
        if (fan_child_recv(fd, &line) != 0) {
            break;
        }
        if (u.failed != UCS_OK) {
            snprintf(broken, sizeof(broken), "a receive failed: %s",
                     ucs_status_string(u.failed));
        }
        r = fan_decode_line(fd, line, u.mem, u.len,
                            (u.failed != UCS_OK) ? broken : NULL);
        if (r != 0) {
            rc = (r > 0) ? FAN_EXIT_OK : FAN_EXIT_ERROR;
            break;
        }
    }
out:
    fan_ucx_card_free(&card);
    fan_ucx_proc_fini(&u);
    return rc;
}

/* ---- prefill -------------------------------------------------------------- */

typedef struct fan_ucx_flow fan_ucx_flow_t;

typedef struct fan_ucx_peer {
    fan_peer_t     p;              /* name unused; remote, local, len */
    uint8_t       *waddr;          /* the decode's worker address */
    uint8_t       *rkbuf;
    size_t         waddr_len, rkbuf_len;
    ucp_ep_h       ep;
    ucp_rkey_h     rkey;
    unsigned       acks;           /* fence answers received */
} fan_ucx_peer_t;

typedef struct fan_ucx_prefill {
    const fan_engine_cfg_t *cfg;
    fan_ucx_proc_t u;
    fan_ucx_peer_t *peers;
    unsigned       num_peers;
    int            put;            /* puts, else active messages */
    int            fd;
} fan_ucx_prefill_t;

static ucs_status_t fan_ucx_on_ack(void *arg, const void *header,
                                   size_t header_length, void *data,
                                   size_t length,
                                   const ucp_am_recv_param_t *param)
{
    fan_ucx_prefill_t *pf = arg;
    fan_ucx_hdr_t h;

    (void)data;
    (void)length;
    (void)param;
    if (header_length == sizeof(h)) {
        memcpy(&h, header, sizeof(h));
        if (h.peer < pf->num_peers) {
            pf->peers[h.peer].acks++;
        }
    }
    return UCS_OK;
}

static int fan_ucx_prefill_peer(fan_ucx_prefill_t *pf, const char *line)
{
    uint64_t addr, len, off;
    const char *ucx = bc_kv(line, "ucx");
    const char *dot = (ucx != NULL) ? strchr(ucx, '.') : NULL;
    fan_ucx_peer_t *peer;
    size_t alen;

    if ((dot == NULL) || bc_kv_u64(line, "addr", &addr) ||
        bc_kv_u64(line, "len", &len) || bc_kv_u64(line, "off", &off) ||
        (off > pf->cfg->region_len) || (len > pf->cfg->region_len - off) ||
        (pf->num_peers == FAN_MAX_N)) {
        fan_child_send(pf->fd, "ERR msg=bad PEER line: %.80s", line);
        return -1;
    }
    peer = &pf->peers[pf->num_peers];
    memset(peer, 0, sizeof(*peer));
    alen         = (size_t)(dot - ucx);
    peer->waddr  = malloc(alen / 2 + 1);
    peer->rkbuf  = malloc(strlen(dot + 1) / 2 + 1);
    if ((peer->waddr == NULL) || (peer->rkbuf == NULL) ||
        fan_unhex_n(ucx, alen, peer->waddr, alen / 2 + 1,
                    &peer->waddr_len) ||
        fan_unhex_n(dot + 1, strlen(dot + 1), peer->rkbuf,
                    strlen(dot + 1) / 2 + 1, &peer->rkbuf_len)) {
        free(peer->waddr);
        free(peer->rkbuf);
        fan_child_send(pf->fd, "ERR msg=bad ucx= in PEER line");
        return -1;
    }
    peer->p.remote = addr;
    peer->p.local  = pf->u.mem + off;
    peer->p.len    = len;
    pf->num_peers++;
    return 0;
}

/* Whether UCX gave the endpoint lanes for puts (it lists them as
 * "put[...]" in its description; tcp has none and would emulate a put). */
static int fan_ucx_has_put_lanes(ucp_ep_h ep)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    int yes;

    if (f == NULL) {
        return 0;
    }
    ucp_ep_print_info(ep, f);
    fclose(f);
    yes = (text != NULL) && (strstr(text, "put[") != NULL);
    free(text);
    return yes;
}

/* The fence of a peer: an endpoint flush (puts) or a FENCE message that
 * the decode answers (messages, counted in peer->acks). */
static ucs_status_ptr_t fan_ucx_fence_post(fan_ucx_prefill_t *pf, unsigned i)
{
    static fan_ucx_hdr_t hdrs[FAN_MAX_N];
    ucp_request_param_t rp;

    memset(&rp, 0, sizeof(rp));
    if (pf->put) {
        return ucp_ep_flush_nbx(pf->peers[i].ep, &rp);
    }
    hdrs[i].addr = 0;
    hdrs[i].peer = i;
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags        = UCP_AM_SEND_FLAG_REPLY;
    return ucp_am_send_nbx(pf->peers[i].ep, FAN_UCX_AM_FENCE, &hdrs[i],
                           sizeof(hdrs[i]), NULL, 0, &rp);
}

/* Wait for a request and, for messages, the answer: 0, or -1. */
static int fan_ucx_fence_wait(fan_ucx_prefill_t *pf, unsigned i,
                              ucs_status_ptr_t req, unsigned acks,
                              uint64_t deadline)
{
    ucs_status_t st = UCS_OK;

    if (UCS_PTR_IS_ERR(req)) {
        return -1;
    }
    while ((req != NULL) &&
           ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) &&
           (bc_now_ns() < deadline)) {
        fan_ucx_progress(&pf->u, -1, FAN_UCX_SLEEP_MS);
    }
    if (req != NULL) {
        if (st == UCS_INPROGRESS) {
            ucp_request_cancel(pf->u.worker, req);
        }
        ucp_request_free(req);
        if (st != UCS_OK) {
            return -1;
        }
    }
    while (!pf->put && (pf->peers[i].acks < acks) &&
           (bc_now_ns() < deadline)) {
        fan_ucx_progress(&pf->u, -1, FAN_UCX_SLEEP_MS);
    }
    return (pf->put || (pf->peers[i].acks >= acks)) ? 0 : -1;
}

/* Endpoints and wire-up to every peer, one after the other from t0 (one
 * UCX worker, one thread): each connect is its endpoint and a fence. */
static int fan_ucx_connect(fan_ucx_prefill_t *pf, uint64_t t0, char *err,
                           size_t err_len)
{
    uint64_t start, deadline;
    fan_ucx_peer_t *peer;
    ucs_status_t st;
    unsigned i;

    bc_sleep_until_ns(t0);
    for (i = 0; i < pf->num_peers; ++i) {
        peer     = &pf->peers[i];
        start    = bc_now_ns();
        deadline = start + 60ull * 1000000000ull;
        st = fan_ucx_ep(pf->u.worker, (const ucp_address_t*)peer->waddr,
                        &peer->ep);
        if (st == UCS_OK) {
            st = ucp_ep_rkey_unpack(peer->ep, peer->rkbuf, &peer->rkey);
        }
        if (st != UCS_OK) {
            snprintf(err, err_len, "endpoint %u: %s", i,
                     ucs_status_string(st));
            return -1;
        }
        if (i == 0) {
            pf->put = fan_ucx_has_put_lanes(peer->ep);
        }
        if (fan_ucx_fence_wait(pf, i, fan_ucx_fence_post(pf, i),
                               peer->acks + 1, deadline) != 0) {
            snprintf(err, err_len, "wire-up of endpoint %u failed", i);
            return -1;
        }
        peer->p.connect_ms = (double)(bc_now_ns() - start) / 1e6;
        peer->p.late_ms    = (double)(start - t0) / 1e6;
    }
    return 0;
}

/* ---- prefill: transfers --------------------------------------------------- */

struct fan_ucx_flow {
    fan_ucx_prefill_t *pf;
    fan_ucx_peer_t    *peer;
    unsigned           index;
    size_t             ndesc;
    uint64_t           per_pass, total, next, completed;
    unsigned          *left;       /* ring: operations left per transfer */
    fan_ucx_hdr_t     *hdrs;       /* per_xfer per ring slot: UCX 1.13 may
                                    * read a header until its send ends */
    unsigned           head, tail, inflight;
    ucs_status_ptr_t   fence;
    unsigned           fence_acks; /* acks that end the fence */
    int                state;      /* 0 moving, 1 fencing, 2 finished */
};

static void fan_ucx_op_done(void *req, ucs_status_t st, void *arg)
{
    unsigned *left = arg;

    ucp_request_free(req);
    if (st != UCS_OK) {
        *left |= 1u << 31;        /* failed: reported by the poll */
    }
    --*left;
}

static size_t fan_ucx_desc_len(const fan_ucx_flow_t *f, size_t d,
                               size_t desc_size)
{
    size_t off = d * desc_size;

    return (f->peer->p.len - off < desc_size) ? f->peer->p.len - off :
           desc_size;
}

/* Post transfer f->next: per_xfer operations, counted down in its slot. */
static int fan_ucx_post(fan_ucx_flow_t *f, const fan_opts_t *o, char *err,
                        size_t err_len)
{
    fan_ucx_peer_t *peer = f->peer;
    size_t t = (size_t)(f->next % f->per_pass), d, last, len;
    unsigned *left = &f->left[f->head];
    ucp_request_param_t rp;
    fan_ucx_hdr_t *h = &f->hdrs[(size_t)f->head * o->per_xfer];
    ucs_status_ptr_t req;

    d    = t * o->per_xfer;
    last = (d + o->per_xfer < f->ndesc) ? d + o->per_xfer : f->ndesc;
    *left = (unsigned)(last - d) + 1;   /* +1 until all are posted */
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    rp.cb.send      = fan_ucx_op_done;
    rp.user_data    = left;
    for (; d < last; ++d) {
        len = fan_ucx_desc_len(f, d, o->desc_size);
        if (f->pf->put) {
            req = ucp_put_nbx(peer->ep, peer->p.local + d * o->desc_size,
                              len, peer->p.remote + d * o->desc_size,
                              peer->rkey, &rp);
        } else {
            h->addr = peer->p.remote + d * o->desc_size;
            h->peer = f->index;
            req = ucp_am_send_nbx(peer->ep, FAN_UCX_AM_DATA, h, sizeof(*h),
                                  peer->p.local + d * o->desc_size, len,
                                  &rp);
            ++h;
        }
        if (UCS_PTR_IS_ERR(req)) {
            snprintf(err, err_len, "%s to peer %u: %s", f->pf->put ?
                     "ucp_put_nbx" : "ucp_am_send_nbx", f->index,
                     ucs_status_string(UCS_PTR_STATUS(req)));
            return -1;
        }
        if (req == NULL) {
            --*left;               /* done inside the call; else the
                                    * callback counts and releases it */
        }
    }
    --*left;
    f->head = (f->head + 1) % o->window;
    f->inflight++;
    f->next++;
    return 0;
}

/* Transfers that completed, oldest first: how many, or -1 on a failure. */
static int fan_ucx_reap(fan_ucx_flow_t *f, const fan_opts_t *o, char *err,
                        size_t err_len)
{
    size_t t, d, last;
    int n = 0;

    while ((f->inflight > 0) && (f->left[f->tail] == 0)) {
        t    = (size_t)(f->completed % f->per_pass);
        last = (t * o->per_xfer + o->per_xfer < f->ndesc) ?
               t * o->per_xfer + o->per_xfer : f->ndesc;
        for (d = t * o->per_xfer; d < last; ++d) {
            f->peer->p.done += fan_ucx_desc_len(f, d, o->desc_size);
        }
        f->completed++;
        f->tail = (f->tail + 1) % o->window;
        f->inflight--;
        ++n;
    }
    if ((f->inflight > 0) && (f->left[f->tail] & (1u << 31))) {
        snprintf(err, err_len, "an operation to peer %u failed", f->index);
        return -1;
    }
    return n;
}

/* A flow whose transfers are all done fences; the fence's end is its
 * last completion.  1 when that changed the flow's state, -1 failed. */
static int fan_ucx_fence_step(fan_ucx_flow_t *f, char *err, size_t err_len)
{
    ucs_status_t st;

    if (f->state == 0) {
        f->fence_acks = f->peer->acks + 1;
        f->fence      = fan_ucx_fence_post(f->pf, f->index);
        f->state      = 1;
        if (UCS_PTR_IS_ERR(f->fence)) {
            snprintf(err, err_len, "fence to peer %u: %s", f->index,
                     ucs_status_string(UCS_PTR_STATUS(f->fence)));
            return -1;
        }
        return 1;
    }
    if (f->fence != NULL) {
        st = ucp_request_check_status(f->fence);
        if (st == UCS_INPROGRESS) {
            return 0;
        }
        ucp_request_free(f->fence);
        f->fence = NULL;
        if (st != UCS_OK) {
            snprintf(err, err_len, "fence to peer %u: %s", f->index,
                     ucs_status_string(st));
            return -1;
        }
    }
    if (!f->pf->put && (f->peer->acks < f->fence_acks)) {
        return 0;
    }
    f->peer->p.t_end = bc_now_ns();
    f->state         = 2;
    return 1;
}

static int fan_ucx_move(fan_ucx_prefill_t *pf, unsigned passes,
                        uint64_t deadline, char *err, size_t err_len)
{
    const fan_opts_t *o = pf->cfg->opts;
    fan_ucx_flow_t *flows = calloc(pf->num_peers, sizeof(*flows));
    fan_ucx_flow_t *f;
    unsigned i, active;
    int rc = -1, stop = 0, moved, r;

    if (flows == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (i = 0; i < pf->num_peers; ++i) {
        f        = &flows[i];
        f->pf    = pf;
        f->peer  = &pf->peers[i];
        f->index = i;
        f->ndesc = (f->peer->p.len + o->desc_size - 1) / o->desc_size;
        f->per_pass = (f->ndesc + o->per_xfer - 1) / o->per_xfer;
        f->total    = f->per_pass * passes;
        f->left     = calloc(o->window, sizeof(*f->left));
        f->hdrs     = calloc((size_t)o->window * o->per_xfer,
                             sizeof(*f->hdrs));
        f->peer->p.done    = 0;
        f->peer->p.t_end   = 0;
        f->peer->p.partial = 0;
        if ((f->left == NULL) || (f->hdrs == NULL)) {
            snprintf(err, err_len, "out of memory");
            goto out;
        }
    }
    for (;;) {
        moved  = 0;
        active = 0;
        for (i = 0; i < pf->num_peers; ++i) {
            f = &flows[i];
            if (f->state == 2) {
                continue;
            }
            ++active;
            if (f->state == 0) {
                while (!stop && (f->inflight < o->window) &&
                       (f->next < f->total)) {
                    if (fan_ucx_post(f, o, err, err_len) != 0) {
                        goto out;
                    }
                    moved = 1;
                }
                if ((r = fan_ucx_reap(f, o, err, err_len)) < 0) {
                    goto out;
                }
                moved |= (r > 0);
                if ((f->inflight > 0) || (!stop && (f->next < f->total))) {
                    continue;
                }
                f->peer->p.partial = (f->completed < f->total);
            }
            if ((r = fan_ucx_fence_step(f, err, err_len)) < 0) {
                goto out;
            }
            moved |= (r > 0);
        }
        if (active == 0) {
            break;
        }
        if (!stop && (bc_now_ns() >= deadline)) {
            stop = 1;
        }
        if (stop && (bc_now_ns() >= deadline + FAN_UCX_DRAIN_NS)) {
            snprintf(err, err_len, "operations still in flight %llu s "
                     "after the deadline",
                     (unsigned long long)(FAN_UCX_DRAIN_NS / 1000000000ull));
            goto out;
        }
        if (!moved) {
            fan_ucx_progress(&pf->u, -1, FAN_UCX_SLEEP_MS);
        }
    }
    rc = 0;
out:
    /* after a failure, operations still in flight complete into these at
     * some later progress: such a process only reports and exits, so they
     * are left to it */
    for (i = 0; (rc == 0) && (i < pf->num_peers); ++i) {
        free(flows[i].left);
        free(flows[i].hdrs);
    }
    if (rc == 0) {
        free(flows);
    }
    return rc;
}

/* ---- prefill: commands ---------------------------------------------------- */

static int fan_ucx_prefill_cmd(void *arg, const char *line)
{
    fan_ucx_prefill_t *pf = arg;
    static char a[FAN_LINE_MAX / 3], b[FAN_LINE_MAX / 3];
    uint64_t t0, seed, passes, deadline;
    fan_peer_t *list;
    fan_sample_t s0, s1;
    char err[256];
    unsigned i, partial = 0;
    int rc;

    if (!strncmp(line, "PEER ", 5)) {
        return fan_ucx_prefill_peer(pf, line);
    }
    if (!strncmp(line, "FILL ", 5) && !bc_kv_u64(line, "seed", &seed)) {
        for (i = 0; i < pf->num_peers; ++i) {
            bc_pattern_fill(pf->peers[i].p.local, pf->peers[i].p.len,
                            seed + i);
        }
        return fan_child_send(pf->fd, "FILLED");
    }
    list = calloc(pf->num_peers ? pf->num_peers : 1, sizeof(*list));
    if (list == NULL) {
        return fan_child_send(pf->fd, "ERR msg=out of memory");
    }
    if (!strncmp(line, "CONNECT ", 8) && !bc_kv_u64(line, "at", &t0)) {
        fan_proc_sample(getpid(), &s0);
        rc = fan_ucx_connect(pf, t0, err, sizeof(err));
        fan_proc_sample(getpid(), &s1);
        for (i = 0; i < pf->num_peers; ++i) {
            list[i] = pf->peers[i].p;
        }
        fan_peer_list(a, sizeof(a), list, pf->num_peers,
                      FAN_LIST_CONNECT_MS);
        fan_peer_list(b, sizeof(b), list, pf->num_peers,
                      FAN_LIST_LATE_MS);
        free(list);
        return (rc != 0) ? fan_child_send(pf->fd, "ERR msg=%s", err) :
               fan_child_send(pf->fd, "CONNECTED ms=%s late=%s cpu=%.9f "
                              "op=%s", a, b, fan_cpu_s(&s0, &s1),
                              pf->put ? "put" : "am");
    }
    if (!strncmp(line, "RUN ", 4) && !bc_kv_u64(line, "at", &t0) &&
        !bc_kv_u64(line, "passes", &passes) &&
        !bc_kv_u64(line, "deadline", &deadline)) {
        bc_sleep_until_ns(t0);
        fan_proc_sample(getpid(), &s0);
        rc = fan_ucx_move(pf, (unsigned)passes, deadline, err, sizeof(err));
        fan_proc_sample(getpid(), &s1);
        for (i = 0; i < pf->num_peers; ++i) {
            list[i]  = pf->peers[i].p;
            partial |= (unsigned)list[i].partial;
        }
        fan_peer_list(a, sizeof(a), list, pf->num_peers, FAN_LIST_END);
        fan_peer_list(b, sizeof(b), list, pf->num_peers, FAN_LIST_DONE);
        free(list);
        return (rc != 0) ? fan_child_send(pf->fd, "ERR msg=%s", err) :
               fan_child_send(pf->fd, "DONE cpu=%.9f ends=%s done=%s "
                              "partial=%u", fan_cpu_s(&s0, &s1), a, b,
                              partial);
    }
    free(list);
    fan_child_send(pf->fd, "ERR msg=unexpected line: %.80s", line);
    return -1;
}

/* Endpoints close flushing, bounded: a forced close would make the
 * decode's UCX log every connection it loses. */
static void fan_ucx_prefill_close(fan_ucx_prefill_t *pf)
{
    ucp_request_param_t rp;
    ucs_status_ptr_t req;
    uint64_t deadline = bc_now_ns() + 5000000000ull;
    unsigned i;

    memset(&rp, 0, sizeof(rp));
    for (i = 0; i < pf->num_peers; ++i) {
        if (pf->peers[i].rkey != NULL) {
            ucp_rkey_destroy(pf->peers[i].rkey);
        }
        if (pf->peers[i].ep != NULL) {
            req = ucp_ep_close_nbx(pf->peers[i].ep, &rp);
            while (UCS_PTR_IS_PTR(req) &&
                   (ucp_request_check_status(req) == UCS_INPROGRESS) &&
                   (bc_now_ns() < deadline)) {
                fan_ucx_progress(&pf->u, -1, FAN_UCX_SLEEP_MS);
            }
            if (UCS_PTR_IS_PTR(req)) {
                if (ucp_request_check_status(req) == UCS_INPROGRESS) {
                    ucp_request_cancel(pf->u.worker, req);
                }
                ucp_request_free(req);
            }
        }
        free(pf->peers[i].waddr);
        free(pf->peers[i].rkbuf);
    }
}

static int fan_ucx_prefill_main(int fd, void *arg)
{
    fan_ucx_prefill_t pf;
    int rc = FAN_EXIT_ERROR;

    memset(&pf, 0, sizeof(pf));
    pf.cfg   = arg;
    pf.fd    = fd;
    pf.peers = calloc(FAN_MAX_N, sizeof(*pf.peers));
    if ((pf.peers == NULL) ||
        (fan_ucx_proc_init(&pf.u, pf.cfg->region_len, fd) != 0) ||
        (fan_ucx_set_handler(&pf.u, FAN_UCX_AM_FENCE_ACK, fan_ucx_on_ack,
                             &pf) != 0)) {
        if (pf.peers == NULL) {
            fan_child_send(fd, "ERR msg=out of memory");
        }
        goto out;
    }
    fan_child_send(fd, "READY engine=ucx addr=%" PRIu64 " len=%zu pid=%d",
                   (uint64_t)(uintptr_t)pf.u.mem, pf.u.len, (int)getpid());
    rc = fan_child_serve(fd, fan_ucx_prefill_cmd, &pf);
out:
    if (pf.peers != NULL) {
        fan_ucx_prefill_close(&pf);
    }
    fan_ucx_proc_fini(&pf.u);
    free(pf.peers);
    return rc;
}

/* ---- coordinator ---------------------------------------------------------- */

int fan_ucx_point_run(const fan_opts_t *o, unsigned test, const char *tls,
                      unsigned n, unsigned rep, unsigned point_id,
                      fan_result_t *r)
{
    return fan_point_run_with(o, test, tls, n, rep, point_id, r,
                              fan_ucx_decode_main, fan_ucx_prefill_main);
}
