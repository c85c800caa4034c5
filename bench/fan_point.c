/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: one fan-in or fan-out measurement, as the coordinator runs it.
 *
 *   fan-in:  N prefill processes -> 1 decode process; prefill i writes
 *            slice i of the decode region (total / N bytes each)
 *   fan-out: 1 prefill process -> N decode processes; slice j of the
 *            prefill's source goes to decode j
 *
 * The "hub" is the one engine all N peers talk to (the decode in fan-in,
 * the prefill in fan-out): its RSS and fd growth divided by N is the
 * per-peer cost.  Sequence:
 *
 *   spawn all, READY            hub sampled (before)
 *   PEER lines, CONNECT at t0   every connect starts at t0; hub sampled
 *   warm-up passes              untimed: faults in the initiators' mappings
 *                               of the targets (shared memory), so that the
 *                               timed pass measures contention, not first
 *                               touch (that is the cold test's subject)
 *   FILL a fresh pattern        decodes sampled
 *   RUN at t0                   timed pass(es); decodes and hub sampled
 *   idle                        all connected, nothing in flight: CPU of
 *                               every engine over --idle seconds
 *   VERIFY every slice          every byte the timed pass completed
 *   QUIT, reap
 */
#include "config.h"
#include "fan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAN_SETUP_S     30.0    /* + 0.5 s per process: engine start-up */
#define FAN_GRACE_S     60.0    /* after the transfer budget: drain, answer */


static uint64_t fan_after(double s)
{
    return bc_now_ns() + (uint64_t)(s * 1e9);
}

/* Seed of peer k's slice in pass `pass`; FILL sends the first slice's. */
static uint64_t fan_slice_seed(const fan_pt_t *p, unsigned pass, unsigned k)
{
    return p->in ? fan_seed(p->point_id, pass, k) :
                   fan_seed(p->point_id, pass, 0) + k;
}

/* a comma list of numbers into v (at most n); the count */
static unsigned fan_parse_list(const char *s, double *v, unsigned n)
{
    unsigned k = 0;
    char *end;

    while ((s != NULL) && (*s != '\0') && (k < n)) {
        v[k++] = strtod(s, &end);
        if (end == s) {
            return k - 1;
        }
        s = (*end == ',') ? end + 1 : end;
    }
    return k;
}

int fan_pt_spawn(fan_pt_t *p, fan_engine_cfg_t *dcfg,
                        fan_engine_cfg_t *pcfg)
{
    const fan_opts_t *o = p->o;
    char name[32];
    const char *s;
    unsigned i;

    for (i = 0; i < p->ndec; ++i) {
        snprintf(name, sizeof(name), "decode[%u]", i);
        if (fan_spawn(&p->dec[i], name, o->pin_decode, p->dec_main,
                      dcfg) != 0) {
            return -1;
        }
    }
    for (i = 0; i < p->npre; ++i) {
        snprintf(name, sizeof(name), "prefill[%u]", i);
        if (fan_spawn(&p->pre[i], name, o->pin_prefill, p->pre_main,
                      pcfg) != 0) {
            return -1;
        }
    }
    if ((fan_recv_all(p->dec, p->ndec, fan_after(FAN_SETUP_S + 0.5 * p->n),
                      "READY") != 0) ||
        (fan_recv_all(p->pre, p->npre, fan_after(FAN_SETUP_S + 0.5 * p->n),
                      "READY") != 0)) {
        return -1;
    }
    for (i = 0; i < p->ndec; ++i) {
        s = bc_kv(p->dec[i].line, "engine");
        if ((s == NULL) || (strlen(s) > HIXL_ENGINE_NAME_MAX) ||
            bc_kv_u64(p->dec[i].line, "addr", &p->dec_addr[i])) {
            fprintf(stderr, "fan: %s: bad READY: %.100s\n", p->dec[i].name,
                    p->dec[i].line);
            return -1;
        }
        snprintf(p->dec_name[i], sizeof(p->dec_name[i]), "%s", s);
        /* bare UCX: the decode's worker address and rkey, for its PEERs */
        s = bc_kv(p->dec[i].line, "ucx");
        if ((s != NULL) && ((p->dec_ucx[i] = strdup(s)) == NULL)) {
            return -1;
        }
    }
    return 0;
}

int fan_pt_connect(fan_pt_t *p)
{
    fan_result_t *r = p->r;
    double late[FAN_MAX_N], cpu = 0;
    unsigned i, got = 0;
    uint64_t t0;

    for (i = 0; i < p->n; ++i) {
        unsigned d = p->in ? 0 : i;

        if (fan_send(&p->pre[p->in ? i : 0], "PEER name=%s addr=%" PRIu64
                     " len=%zu off=%zu%s%s", p->dec_name[d],
                     p->dec_addr[d] + (p->in ? i * p->share : 0),
                     p->share, p->in ? 0 : i * p->share,
                     p->dec_ucx[d] ? " ucx=" : "",
                     p->dec_ucx[d] ? p->dec_ucx[d] : "") != 0) {
            return -1;
        }
    }
    /* time for the line to reach every process before t0 */
    t0 = fan_after(0.02 + 0.002 * p->n);
    for (i = 0; i < p->npre; ++i) {
        if (fan_send(&p->pre[i], "CONNECT at=%" PRIu64, t0) != 0) {
            return -1;
        }
    }
    if (fan_recv_all(p->pre, p->npre, t0 + (uint64_t)((p->o->point_timeout +
                     FAN_GRACE_S) * 1e9), "CONNECTED") != 0) {
        return -1;
    }
    for (i = 0; i < p->npre; ++i) {
        if (bc_kv(p->pre[i].line, "cpu") != NULL) {
            cpu += strtod(bc_kv(p->pre[i].line, "cpu"), NULL);
        }
        got += fan_parse_list(bc_kv(p->pre[i].line, "ms"),
                              r->connect_ms + got, p->n - got);
        fan_parse_list(bc_kv(p->pre[i].line, "late"),
                       late + (p->in ? i : 0), p->in ? 1 : p->n);
    }
    if (got != p->n) {
        fprintf(stderr, "fan: %u connect times for %u peers\n", got, p->n);
        return -1;
    }
    r->pre_conn_cpu_ms = cpu * 1e3 / p->n;
    /* bare UCX says which operation its endpoints take */
    if (bc_kv(p->pre[0].line, "op") != NULL) {
        r->base_op = strcmp(bc_kv(p->pre[0].line, "op"), "put") ? "am" :
                     "put";
    }
    for (i = 0; i < p->n; ++i) {
        r->late_max_ms = (late[i] > r->late_max_ms) ? late[i] :
                         r->late_max_ms;
    }
    return 0;
}

int fan_pt_fill(fan_pt_t *p, unsigned pass)
{
    unsigned i;

    for (i = 0; i < p->npre; ++i) {
        if (fan_send(&p->pre[i], "FILL seed=%" PRIu64,
                     fan_slice_seed(p, pass, p->in ? i : 0)) != 0) {
            return -1;
        }
    }
    return fan_recv_all(p->pre, p->npre, fan_after(FAN_SETUP_S + p->n),
                        "FILLED");
}

int fan_pt_run(fan_pt_t *p, unsigned passes)
{
    double budget = p->o->point_timeout;
    unsigned i;

    p->t0 = fan_after(0.01 + 0.001 * p->n);
    for (i = 0; i < p->npre; ++i) {
        if (fan_send(&p->pre[i], "RUN at=%" PRIu64 " passes=%u deadline=%"
                     PRIu64, p->t0, passes,
                     p->t0 + (uint64_t)(budget * 1e9)) != 0) {
            return -1;
        }
    }
    return fan_recv_all(p->pre, p->npre, p->t0 + (uint64_t)((budget * 1.5 +
                        FAN_GRACE_S) * 1e9), "DONE");
}

/* Fairness of the peers' rates (each its bytes over its own time from t0;
 * the peers move equal bytes, so a rate is 1 / its finishing time): min
 * and max over the mean, Jain's index (sum x)^2 / (n sum x^2), 1 when all
 * are equal, 1/n when one peer got everything, and how early the first
 * peer finished against the last. */
static void fan_pt_fairness(fan_pt_t *p)
{
    fan_result_t *r = p->r;
    double gbs, sum = 0, sum2 = 0;
    uint64_t first = UINT64_MAX, last = 0;
    unsigned k;

    r->peer_min_gbs = -1;
    r->peer_max_gbs = 0;
    for (k = 0; k < p->n; ++k) {
        gbs = (p->end[k] > p->t0) ? (double)p->done[k] /
              (double)(p->end[k] - p->t0) : 0.0;     /* bytes/ns = GB/s */
        sum  += gbs;
        sum2 += gbs * gbs;
        r->peer_max_gbs = (gbs > r->peer_max_gbs) ? gbs : r->peer_max_gbs;
        if ((r->peer_min_gbs < 0) || (gbs < r->peer_min_gbs)) {
            r->peer_min_gbs = gbs;
        }
        if (p->end[k] > p->t0) {
            first = (p->end[k] < first) ? p->end[k] : first;
            last  = (p->end[k] > last) ? p->end[k] : last;
        }
    }
    r->share_min = (sum > 0) ? r->peer_min_gbs * p->n / sum : 0;
    r->share_max = (sum > 0) ? r->peer_max_gbs * p->n / sum : 0;
    r->jain      = (sum2 > 0) ? sum * sum / (p->n * sum2) : 0;
    r->finish    = (last > p->t0) ? (double)(first - p->t0) /
                   (double)(last - p->t0) : 0;
}

/* The timed pass's DONE lines: throughput, fairness, prefill CPU. */
void fan_pt_results(fan_pt_t *p)
{
    fan_result_t *r = p->r;
    double v[FAN_MAX_N], sum_cores = 0, cores;
    uint64_t last = 0, bytes = 0, ticks, mine;
    unsigned i, k, cnt;

    r->partial      = 0;
    r->pre_busy_max = 0;
    for (i = 0; i < p->npre; ++i) {
        k   = p->in ? i : 0;
        cnt = p->in ? 1 : p->n;
        fan_parse_list(bc_kv(p->pre[i].line, "ends"), v, cnt);
        for (mine = 0; cnt-- > 0;) {
            p->end[k + cnt] = (uint64_t)v[cnt];
            mine = (p->end[k + cnt] > mine) ? p->end[k + cnt] : mine;
        }
        cnt = p->in ? 1 : p->n;
        fan_parse_list(bc_kv(p->pre[i].line, "done"), v, cnt);
        while (cnt-- > 0) {
            p->done[k + cnt] = (uint64_t)v[cnt];
        }
        if (!bc_kv_u64(p->pre[i].line, "partial", &ticks) && ticks) {
            r->partial = 1;
        }
        /* this engine's CPU over its own busy time, t0 to its last end */
        if ((bc_kv(p->pre[i].line, "cpu") != NULL) && (mine > p->t0)) {
            cores = strtod(bc_kv(p->pre[i].line, "cpu"), NULL) /
                    ((double)(mine - p->t0) * 1e-9);
            sum_cores += cores;
            r->pre_busy_max = (cores > r->pre_busy_max) ? cores :
                              r->pre_busy_max;
        }
    }
    r->pre_busy_mean = sum_cores / p->npre;
    fan_pt_fairness(p);
    for (k = 0; k < p->n; ++k) {
        bytes += p->done[k];
        last   = (p->end[k] > last) ? p->end[k] : last;
    }
    r->bytes   = bytes;
    r->agg_gbs = (last > p->t0) ? (double)bytes / (double)(last - p->t0) :
                 0.0;
    r->run_s   = (last > p->t0) ? (double)(last - p->t0) * 1e-9 : 0.0;
}

/* Idle: everyone connected, nothing in flight. */
static void fan_pt_idle(fan_pt_t *p)
{
    fan_sample_t *a = calloc(p->ndec + p->npre, sizeof(*a));
    fan_sample_t *b = calloc(p->ndec + p->npre, sizeof(*b));
    fan_child_t *c;
    double cores, dsum = 0, psum = 0;
    unsigned i, all = p->ndec + p->npre;
    fan_result_t *r = p->r;

    if ((a == NULL) || (b == NULL) || (p->o->idle_s <= 0)) {
        free(a);
        free(b);
        return;
    }
    for (i = 0; i < all; ++i) {
        c = (i < p->ndec) ? &p->dec[i] : &p->pre[i - p->ndec];
        fan_proc_sample(c->pid, &a[i]);
    }
    bc_sleep_until_ns(fan_after(p->o->idle_s));
    for (i = 0; i < all; ++i) {
        c = (i < p->ndec) ? &p->dec[i] : &p->pre[i - p->ndec];
        fan_proc_sample(c->pid, &b[i]);
        cores = fan_cores(&a[i], &b[i]);
        if (i < p->ndec) {
            dsum += cores;
            r->dec_idle_max = (cores > r->dec_idle_max) ? cores :
                              r->dec_idle_max;
        } else {
            psum += cores;
            r->pre_idle_max = (cores > r->pre_idle_max) ? cores :
                              r->pre_idle_max;
        }
    }
    r->dec_idle_mean = dsum / p->ndec;
    r->pre_idle_mean = psum / p->npre;
    free(a);
    free(b);
}

/* Every byte the timed pass completed, checked by the decode that holds
 * it.  Returns 0, -1 on an error, 1 on bad data. */
int fan_pt_verify(fan_pt_t *p, unsigned pass)
{
    fan_child_t *d;
    uint64_t len;
    const char *ok;
    unsigned k;

    for (k = 0; k < p->n; ++k) {
        /* what completed is a prefix of the slice (or all of it) */
        len = (p->done[k] < p->share) ? p->done[k] : p->share;
        if (len == 0) {
            continue;
        }
        d = &p->dec[p->in ? 0 : k];
        if ((fan_send(d, "VERIFY off=%zu len=%" PRIu64 " seed=%" PRIu64,
                      p->in ? k * p->share : 0, len,
                      fan_slice_seed(p, pass, k)) != 0) ||
            (fan_recv_all(d, 1, fan_after(FAN_SETUP_S), "VERIFIED") != 0)) {
            return -1;
        }
        ok = bc_kv(d->line, "ok");
        if ((ok == NULL) || strcmp(ok, "1")) {
            snprintf(p->r->err, sizeof(p->r->err), "peer %u's slice at %s: "
                     "%s", k, d->name, strstr(d->line, "msg=") ?
                     strstr(d->line, "msg=") + 4 : d->line);
            return 1;
        }
    }
    return 0;
}

static int fan_pt_measure(fan_pt_t *p)
{
    fan_sample_t h0, h1, h2, *d0, *d1;
    fan_child_t *hub = p->in ? &p->dec[0] : &p->pre[0];
    fan_result_t *r = p->r;
    double cores, sum = 0;
    unsigned i;
    int rc = -1, v;

    d0 = calloc(p->ndec, sizeof(*d0));
    d1 = calloc(p->ndec, sizeof(*d1));
    if ((d0 == NULL) || (d1 == NULL) ||
        (fan_proc_sample(hub->pid, &h0) != 0) || (fan_pt_connect(p) != 0) ||
        (fan_proc_sample(hub->pid, &h1) != 0)) {
        goto out;
    }
    if (p->o->warmup && ((fan_pt_fill(p, 0) != 0) ||
                         (fan_pt_run(p, p->o->warmup) != 0))) {
        goto out;
    }
    if (fan_pt_fill(p, 1) != 0) {
        goto out;
    }
    for (i = 0; i < p->ndec; ++i) {
        fan_proc_sample(p->dec[i].pid, &d0[i]);
    }
    if (fan_pt_run(p, p->o->passes) != 0) {
        goto out;
    }
    for (i = 0; i < p->ndec; ++i) {
        fan_proc_sample(p->dec[i].pid, &d1[i]);
        cores = fan_cores(&d0[i], &d1[i]);
        sum  += cores;
        r->dec_busy_max = (cores > r->dec_busy_max) ? cores : r->dec_busy_max;
    }
    r->dec_busy_mean = sum / p->ndec;
    fan_proc_sample(hub->pid, &h2);
    fan_pt_results(p);
    r->hub_kb_connect   = ((double)fan_private_kb(&h1) -
                           (double)fan_private_kb(&h0)) / p->n;
    r->hub_kb_per_peer  = ((double)fan_private_kb(&h2) -
                           (double)fan_private_kb(&h0)) / p->n;
    r->hub_kb_rss       = ((double)h2.rss_kb - (double)h0.rss_kb) / p->n;
    /* what serializes connects: the hub's CPU per peer while they came in */
    r->hub_conn_cpu_ms  = fan_cpu_s(&h0, &h1) * 1e3 / p->n;
    r->hub_fds_per_peer = ((double)h1.fds - (double)h0.fds) / p->n;
    r->hub_rss_mb       = (double)h2.rss_kb / 1024.0;
    r->hub_threads      = h2.threads;
    fan_pt_idle(p);
    v = fan_pt_verify(p, 1);
    if (v > 0) {
        r->corrupt = 1;
        goto out;
    }
    rc = v;
out:
    free(d0);
    free(d1);
    return rc;
}

int fan_pt_init(fan_pt_t *p, const fan_opts_t *o, fan_result_t *r,
                unsigned test, unsigned n, unsigned point_id)
{
    memset(p, 0, sizeof(*p));
    p->o        = o;
    p->r        = r;
    p->in       = (test == FAN_T_IN);
    p->n        = n;
    p->ndec     = p->in ? 1 : n;
    p->npre     = p->in ? n : 1;
    p->point_id = point_id;
    p->dec_main = fan_decode_main;
    p->pre_main = fan_prefill_main;
    p->share    = (o->total / n) & ~(size_t)4095;   /* whole pages each */
    p->start    = bc_now_ns();
    r->test      = test;
    r->n         = n;
    r->share     = p->share;
    r->desc_size = (o->desc_size < p->share) ? o->desc_size : p->share;
    r->connect_ms = calloc(n, sizeof(*r->connect_ms));
    p->dec      = fan_children(p->ndec);
    p->pre      = fan_children(p->npre);
    p->dec_name = calloc(p->ndec, sizeof(*p->dec_name));
    p->dec_addr = calloc(p->ndec, sizeof(*p->dec_addr));
    p->dec_ucx  = calloc(p->ndec, sizeof(*p->dec_ucx));
    p->end      = calloc(n, sizeof(*p->end));
    p->done     = calloc(n, sizeof(*p->done));
    if (!r->connect_ms || !p->dec || !p->pre || !p->dec_name ||
        !p->dec_addr || !p->dec_ucx || !p->end || !p->done) {
        snprintf(r->err, sizeof(r->err), "out of memory");
        return -1;
    }
    if (p->share == 0) {
        snprintf(r->err, sizeof(r->err), "-T %zu is less than a page per "
                 "peer at N=%u", o->total, n);
        return -1;
    }
    return 0;
}

int fan_pt_fini(fan_pt_t *p, int rc)
{
    fan_result_t *r = p->r;
    unsigned bad, i;

    if ((rc != 0) && (r->err[0] == '\0')) {
        snprintf(r->err, sizeof(r->err), "failed (see the messages above)");
    }
    /* prefills first: a decode that quits first would fail their peers */
    bad  = fan_reap(p->pre, p->pre ? p->npre : 0,
                    fan_after((rc == 0) ? FAN_SETUP_S : 2.0));
    bad += fan_reap(p->dec, p->dec ? p->ndec : 0,
                    fan_after((rc == 0) ? FAN_SETUP_S : 2.0));
    if ((rc == 0) && bad) {
        snprintf(r->err, sizeof(r->err), "%u engine process(es) did not exit "
                 "cleanly", bad);
        rc = -1;
    }
    r->ok     = (rc == 0);
    r->wall_s = (double)(bc_now_ns() - p->start) * 1e-9;
    free(p->dec);
    free(p->pre);
    free(p->dec_name);
    free(p->dec_addr);
    for (i = 0; (p->dec_ucx != NULL) && (i < p->ndec); ++i) {
        free(p->dec_ucx[i]);
    }
    free(p->dec_ucx);
    free(p->end);
    free(p->done);
    return rc;
}

int fan_point_run_with(const fan_opts_t *o, unsigned test, const char *tls,
                       unsigned n, unsigned rep, unsigned point_id,
                       fan_result_t *r, fan_child_fn_t dec_main,
                       fan_child_fn_t pre_main)
{
    fan_engine_cfg_t dcfg, pcfg;
    fan_pt_t p;
    int rc = -1;

    memset(r, 0, sizeof(*r));
    r->tls = tls;
    r->rep = rep;
    if (fan_pt_init(&p, o, r, test, n, point_id) == 0) {
        p.dec_main      = dec_main;
        p.pre_main      = pre_main;
        memset(&dcfg, 0, sizeof(dcfg));
        dcfg.opts       = o;
        dcfg.region_len = p.in ? n * p.share : p.share;
        dcfg.alloc      = FAN_ALLOC_HIXL;
        dcfg.touch      = 1;
        pcfg            = dcfg;
        pcfg.region_len = p.in ? p.share : n * p.share;
        if ((fan_pt_spawn(&p, &dcfg, &pcfg) == 0) &&
            (fan_pt_measure(&p) == 0)) {
            rc = 0;
        }
    }
    return fan_pt_fini(&p, rc);
}

int fan_point_run(const fan_opts_t *o, unsigned test, const char *tls,
                  unsigned n, unsigned rep, unsigned point_id,
                  fan_result_t *r)
{
    return fan_point_run_with(o, test, tls, n, rep, point_id, r,
                              fan_decode_main, fan_prefill_main);
}
