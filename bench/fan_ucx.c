/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: the bare-UCX baseline, what N endpoints cost UCX itself.
 *
 * Two processes with the public UCP API only, set up as a hixl engine sets
 * up UCX (src/engine.c: RMA + WAKEUP features, a UCS_THREAD_MODE_MULTI
 * worker; src/peer.c: endpoints from the peer's worker address in error
 * mode PEER, or NONE where no transport can report peer failure):
 *
 *   target   maps one descriptor's size (-s) with ucp_mem_map(ALLOCATE),
 *            as hixl_alloc_mem, packs its rkey, and only progresses its
 *            worker (as a decode engine's progress thread)
 *   creator  creates N endpoints to the target's worker, unpacks the rkey
 *            on each (as a hixl peer does), puts one descriptor through
 *            each, all N in flight together, and flushes them: every
 *            endpoint is wired up and has moved a descriptor of the fan
 *            runs' size while the others did, so what UCX allocates for N
 *            concurrent large puts (tcp) is in its count as it is in the
 *            engines'
 *
 * The coordinator samples both processes' RSS and fds before and after:
 * growth / N is UCX's own cost per endpoint on the passive side (compare
 * the decode of fan-in) and on the creating side (the prefill of fan-out).
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
#include <ucs/config/global_opts.h>

/* what the processes get from the coordinator */
typedef struct fan_ucx_cfg {
    size_t len;                    /* one descriptor */
} fan_ucx_cfg_t;

typedef struct fan_ucx {
    ucp_context_h ctx;
    ucp_worker_h  worker;
} fan_ucx_t;

int fan_ucx_open(int fd, uint64_t features, ucs_thread_mode_t mode,
                 ucp_context_h *ctx, ucp_worker_h *worker)
{
    ucp_worker_params_t wparams;
    ucp_params_t params;
    ucs_status_t st;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
    params.features   = features;
    params.name       = "fan-ucx";
    st = ucp_init(&params, NULL, ctx);
    if (st != UCS_OK) {
        fan_child_send(fd, "ERR msg=ucp_init: %s", ucs_status_string(st));
        return -1;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = mode;
    st = ucp_worker_create(*ctx, &wparams, worker);
    if (st != UCS_OK) {
        fan_child_send(fd, "ERR msg=ucp_worker_create: %s",
                       ucs_status_string(st));
        ucp_cleanup(*ctx);
        *ctx = NULL;
        return -1;
    }
    return 0;
}

static int fan_ucx_init(fan_ucx_t *u, int fd)
{
    return fan_ucx_open(fd, UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP,
                        UCS_THREAD_MODE_MULTI, &u->ctx, &u->worker);
}

static void fan_ucx_fini(fan_ucx_t *u)
{
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->ctx);
}

char *fan_hex(const void *p, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *b = p;
    char *s = malloc(2 * len + 1);
    size_t i;

    for (i = 0; (s != NULL) && (i < len); ++i) {
        s[2 * i]     = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    if (s != NULL) {
        s[2 * len] = '\0';
    }
    return s;
}

int fan_unhex_n(const char *s, size_t n, uint8_t *out, size_t max,
                size_t *len)
{
    size_t i;
    unsigned v;

    if ((s == NULL) || (n % 2) || (n / 2 > max)) {
        return -1;
    }
    for (i = 0; i < n / 2; ++i) {
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            return -1;
        }
        out[i] = (uint8_t)v;
    }
    *len = n / 2;
    return 0;
}

static int fan_unhex(const char *s, uint8_t *out, size_t max, size_t *len)
{
    return fan_unhex_n(s, (s != NULL) ? strlen(s) : 1, out, max, len);
}

int fan_ucx_card_make(ucp_context_h ctx, ucp_worker_h worker,
                      ucp_mem_h memh, fan_ucx_card_t *card)
{
    ucp_address_t *addr = NULL;
    size_t addr_len, rkey_len;
    void *rkey = NULL;

    card->addr_hex = card->rkey_hex = NULL;
    if ((ucp_rkey_pack(ctx, memh, &rkey, &rkey_len) == UCS_OK) &&
        (ucp_worker_get_address(worker, &addr, &addr_len) == UCS_OK)) {
        card->addr_hex = fan_hex(addr, addr_len);
        card->rkey_hex = fan_hex(rkey, rkey_len);
    }
    if (addr != NULL) {
        ucp_worker_release_address(worker, addr);
    }
    if (rkey != NULL) {
        ucp_rkey_buffer_release(rkey);
    }
    if ((card->addr_hex == NULL) || (card->rkey_hex == NULL)) {
        fan_ucx_card_free(card);
        return -1;
    }
    return 0;
}

void fan_ucx_card_free(fan_ucx_card_t *card)
{
    free(card->addr_hex);
    free(card->rkey_hex);
    card->addr_hex = card->rkey_hex = NULL;
}

/* ---- target ------------------------------------------------------------- */

static int fan_ucx_target_main(int fd, void *arg)
{
    const fan_ucx_cfg_t *cfg = arg;
    ucp_mem_map_params_t mp;
    ucp_mem_attr_t attr;
    fan_ucx_card_t card = {NULL, NULL};
    char *line;
    struct pollfd pfd = {fd, POLLIN, 0};
    ucp_mem_h memh = NULL;
    fan_ucx_t u;
    int rc = FAN_EXIT_ERROR, busy;

    if (fan_ucx_init(&u, fd) != 0) {
        return FAN_EXIT_ERROR;
    }
    memset(&mp, 0, sizeof(mp));
    mp.field_mask  = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                     UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.length      = cfg->len;
    mp.flags       = UCP_MEM_MAP_ALLOCATE;
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    if ((ucp_mem_map(u.ctx, &mp, &memh) != UCS_OK) ||
        (ucp_mem_query(memh, &attr) != UCS_OK) ||
        (fan_ucx_card_make(u.ctx, u.worker, memh, &card) != 0)) {
        fan_child_send(fd, "ERR msg=UCX set-up of the target failed");
        goto out;
    }
    memset(attr.address, 0, cfg->len);
    /* the passive side: what fails is reported by the creator's statuses,
     * and a creator's exit makes UCX log each lost tcp connection here */
    ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
    fan_child_send(fd, "READY addr=%s rkey=%s base=%" PRIu64, card.addr_hex,
                   card.rkey_hex, (uint64_t)(uintptr_t)attr.address);
    /* progress until QUIT: a passive side over tcp must accept and answer
     * the wire-up; pause when there is nothing to do */
    for (;;) {
        busy = (int)ucp_worker_progress(u.worker);
        if (poll(&pfd, 1, busy ? 0 : 1) > 0) {
            if ((fan_child_recv(fd, &line) != 0) || !strcmp(line, "QUIT")) {
                rc = FAN_EXIT_OK;
                break;
            }
        }
    }
out:
    fan_ucx_card_free(&card);
    if (memh != NULL) {
        ucp_mem_unmap(u.ctx, memh);
    }
    fan_ucx_fini(&u);
    return rc;
}

/* ---- creator ------------------------------------------------------------ */

static void fan_ucx_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    (void)status;
}

/* Wait for a request within the deadline; UCS_OK or its error. */
static ucs_status_t fan_ucx_wait(ucp_worker_h w, ucs_status_ptr_t req,
                                 uint64_t deadline)
{
    ucs_status_t st;

    if (!UCS_PTR_IS_PTR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(w);
        if (bc_now_ns() > deadline) {
            /* a cancelled request completes at the next progress; if UCX
             * holds it longer, leave it to ucp_worker_destroy */
            ucp_request_cancel(w, req);
            deadline += 5000000000ull;
            while ((ucp_request_check_status(req) == UCS_INPROGRESS) &&
                   (bc_now_ns() < deadline)) {
                ucp_worker_progress(w);
            }
            if (ucp_request_check_status(req) != UCS_INPROGRESS) {
                ucp_request_free(req);
            }
            return UCS_ERR_TIMED_OUT;
        }
    }
    ucp_request_free(req);
    return st;
}

ucs_status_t fan_ucx_ep(ucp_worker_h worker, const ucp_address_t *addr,
                        ucp_ep_h *ep)
{
    ucp_ep_params_t ep_params;
    ucs_log_level_t saved;
    ucs_status_t st;

    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.address        = addr;
    ep_params.err_mode       = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = fan_ucx_err_cb;
    /* UCX logs the refusal of PEER mode as an ERROR although we fall back
     * from it, as src/peer.c does: keep it quiet for that one call */
    saved = ucs_global_opts.log_component.log_level;
    if (saved < UCS_LOG_LEVEL_DEBUG) {
        ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_FATAL;
    }
    st = ucp_ep_create(worker, &ep_params, ep);
    ucs_global_opts.log_component.log_level = saved;
    if (st == UCS_ERR_UNREACHABLE) {
        /* as hixl.ErrorMode auto: shared memory cannot report a dead peer */
        ep_params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        st = ucp_ep_create(worker, &ep_params, ep);
    }
    return st;
}

static int fan_ucx_creator_main(int fd, void *arg)
{
    const fan_ucx_cfg_t *cfg = arg;
    static uint8_t addr[65536], rkbuf[65536];
    ucp_request_param_t rp;
    ucp_ep_h *eps = NULL;
    ucp_rkey_h *rkeys = NULL;
    ucs_status_ptr_t *reqs = NULL;
    size_t addr_len, rk_len;
    uint64_t n = 0, base, i, deadline, t0;
    uint8_t *src = NULL;
    ucs_status_t st = UCS_OK;
    fan_ucx_t u;
    char *line;
    int rc = FAN_EXIT_ERROR;

    if (fan_ucx_init(&u, fd) != 0) {
        return FAN_EXIT_ERROR;
    }
    /* the source, touched before the coordinator's first sample */
    src = malloc(cfg->len);
    if (src == NULL) {
        fan_child_send(fd, "ERR msg=out of memory");
        goto out;
    }
    memset(src, 0x5a, cfg->len);
    fan_child_send(fd, "READY");
    if ((fan_child_recv(fd, &line) != 0) || strncmp(line, "EPS ", 4) ||
        bc_kv_u64(line, "n", &n) || (n == 0) || (n > FAN_MAX_N) ||
        bc_kv_u64(line, "base", &base) ||
        fan_unhex(bc_kv(line, "addr"), addr, sizeof(addr), &addr_len) ||
        fan_unhex(bc_kv(line, "rkey"), rkbuf, sizeof(rkbuf), &rk_len)) {
        fan_child_send(fd, "ERR msg=bad EPS line");
        goto out;
    }
    eps   = calloc(n, sizeof(*eps));
    rkeys = calloc(n, sizeof(*rkeys));
    reqs  = calloc(n, sizeof(*reqs));
    if ((eps == NULL) || (rkeys == NULL) || (reqs == NULL)) {
        fan_child_send(fd, "ERR msg=out of memory");
        goto out;
    }
    memset(&rp, 0, sizeof(rp));
    t0       = bc_now_ns();
    deadline = t0 + 60ull * 1000000000ull;
    /* every endpoint first, then a put on each, all in flight together
     * (as N engines writing at once: the target receives them together),
     * then a flush of each */
    for (i = 0; (i < n) && (st == UCS_OK); ++i) {
        st = fan_ucx_ep(u.worker, (const ucp_address_t*)addr, &eps[i]);
        if (st == UCS_OK) {
            st = ucp_ep_rkey_unpack(eps[i], rkbuf, &rkeys[i]);
        }
    }
    for (i = 0; (i < n) && (st == UCS_OK); ++i) {
        reqs[i] = ucp_put_nbx(eps[i], src, cfg->len, base, rkeys[i], &rp);
        st      = UCS_PTR_IS_ERR(reqs[i]) ? UCS_PTR_STATUS(reqs[i]) : UCS_OK;
    }
    for (i = 0; i < n; ++i) {
        if (!UCS_PTR_IS_ERR(reqs[i]) && (reqs[i] != NULL) &&
            (fan_ucx_wait(u.worker, reqs[i], deadline) != UCS_OK)) {
            st = UCS_ERR_TIMED_OUT;
        }
        reqs[i] = NULL;
    }
    for (i = 0; (i < n) && (st == UCS_OK); ++i) {
        reqs[i] = ucp_ep_flush_nbx(eps[i], &rp);
        st      = UCS_PTR_IS_ERR(reqs[i]) ? UCS_PTR_STATUS(reqs[i]) : UCS_OK;
    }
    for (i = 0; i < n; ++i) {
        if (!UCS_PTR_IS_ERR(reqs[i]) && (reqs[i] != NULL) &&
            (fan_ucx_wait(u.worker, reqs[i], deadline) != UCS_OK)) {
            st = UCS_ERR_TIMED_OUT;
        }
    }
    if (st != UCS_OK) {
        fan_child_send(fd, "ERR msg=%" PRIu64 " endpoints: %s", n,
                       ucs_status_string(st));
        goto out;
    }
    fan_child_send(fd, "DONE ms=%.3f", (double)(bc_now_ns() - t0) / 1e6);
    if ((fan_child_recv(fd, &line) == 0) && !strcmp(line, "QUIT")) {
        rc = FAN_EXIT_OK;
    }
out:
    /* a flushing close: a forced one makes the target's UCX log every
     * connection it loses as an ERROR */
    memset(&rp, 0, sizeof(rp));
    for (i = 0; (eps != NULL) && (i < n); ++i) {
        if (rkeys[i] != NULL) {
            ucp_rkey_destroy(rkeys[i]);
        }
        if (eps[i] != NULL) {
            fan_ucx_wait(u.worker, ucp_ep_close_nbx(eps[i], &rp),
                         bc_now_ns() + 5000000000ull);
        }
    }
    free(eps);
    free(rkeys);
    free(reqs);
    free(src);
    fan_ucx_fini(&u);
    return rc;
}

/* ---- coordinator -------------------------------------------------------- */

int fan_ucx_run(const fan_opts_t *o, unsigned n, fan_result_t *r)
{
    fan_child_t *c = fan_children(2);   /* [0] target, [1] creator */
    fan_ucx_cfg_t cfg = {o->desc_size};
    fan_sample_t t0, t1, c0, c1;
    const char *a, *k, *b;
    int rc = -1;

    r->base_ok = 0;
    if (c == NULL) {
        return -1;
    }
    if ((fan_spawn(&c[0], "ucx-target", o->pin_decode, fan_ucx_target_main,
                   &cfg) != 0) ||
        (fan_spawn(&c[1], "ucx-creator", o->pin_prefill, fan_ucx_creator_main,
                   &cfg) != 0) ||
        (fan_recv_all(c, 2, bc_now_ns() + 30000000000ull, "READY") != 0) ||
        (fan_proc_sample(c[0].pid, &t0) != 0) ||
        (fan_proc_sample(c[1].pid, &c0) != 0)) {
        goto out;
    }
    a = bc_kv(c[0].line, "addr");
    k = bc_kv(c[0].line, "rkey");
    b = bc_kv(c[0].line, "base");
    if ((a == NULL) || (k == NULL) || (b == NULL) ||
        (fan_send(&c[1], "EPS n=%u addr=%s rkey=%s base=%s", n, a, k,
                  b) != 0) ||
        (fan_recv_all(&c[1], 1, bc_now_ns() + 90000000000ull, "DONE") != 0)) {
        goto out;
    }
    /* let the target finish its side of the wire-up */
    bc_sleep_until_ns(bc_now_ns() + 100000000ull);
    if ((fan_proc_sample(c[0].pid, &t1) != 0) ||
        (fan_proc_sample(c[1].pid, &c1) != 0)) {
        goto out;
    }
    r->base_target_kb   = ((double)fan_private_kb(&t1) -
                           (double)fan_private_kb(&t0)) / n;
    r->base_creator_kb  = ((double)fan_private_kb(&c1) -
                           (double)fan_private_kb(&c0)) / n;
    r->base_target_fds  = ((double)t1.fds - (double)t0.fds) / n;
    r->base_creator_fds = ((double)c1.fds - (double)c0.fds) / n;
    rc = 0;
out:
    /* the creator first, so the target does not see its endpoints fail
     * while it is still being measured */
    if (fan_reap(&c[1], 1, bc_now_ns() + 10000000000ull) != 0) {
        rc = -1;
    }
    if (fan_reap(&c[0], 1, bc_now_ns() + 10000000000ull) != 0) {
        rc = -1;
    }
    free(c);
    r->base_ok = (rc == 0);
    return rc;
}
