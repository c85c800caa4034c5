/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan -t cold: a KV cache written into FRESHLY allocated decode memory, the
 * first transfer against the second into the same memory, and the
 * machine's own reference, a one-core memcpy into a freshly mapped buffer
 * against the same buffer once touched.
 *
 * Per case, new processes: a decode engine allocates -T bytes and does not
 * touch them, either with hixl_alloc_mem (UCX allocates; on one host, shared
 * memory that the prefill maps) or as anonymous memory registered with
 * hixl_register_mem ("mmap"); a prefill engine with a warm source connects
 * and writes the whole region twice, each time as a timed pass of
 * -s descriptors, each pass verified byte for byte by the decode before the
 * next.  Minor page faults of both processes during each pass (from
 * /proc/<pid>/stat) show where the first pass's extra time goes: the
 * decode's pages (first touch of the memory) or the prefill's mapping of
 * them (shared memory: the initiator maps the target's pages).
 *
 * Engine options pass through (-O, --decode-opt), so the same command shows
 * a pre-faulting option's effect (e.g. -O hixl.PrefaultMem=1 once the
 * library has one).
 */
#include "config.h"
#include "fan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int fan_cold_pass(fan_pt_t *p, unsigned pass, double *gbs,
                         double *dflt, double *pflt)
{
    fan_sample_t d0, d1, p0, p1;
    int v;

    if ((fan_pt_fill(p, pass) != 0) ||
        (fan_proc_sample(p->dec[0].pid, &d0) != 0) ||
        (fan_proc_sample(p->pre[0].pid, &p0) != 0) ||
        (fan_pt_run(p, 1) != 0) ||
        (fan_proc_sample(p->dec[0].pid, &d1) != 0) ||
        (fan_proc_sample(p->pre[0].pid, &p1) != 0)) {
        return -1;
    }
    fan_pt_results(p);
    *gbs  = p->r->agg_gbs;
    *dflt = (double)(d1.minflt - d0.minflt);
    *pflt = (double)(p1.minflt - p0.minflt);
    if (p->r->partial) {
        snprintf(p->r->err, sizeof(p->r->err), "pass %u did not complete "
                 "within --point-timeout", pass);
        return -1;
    }
    v = fan_pt_verify(p, pass);
    return (v == 0) ? 0 : -1;
}

int fan_cold_run(const fan_opts_t *o, const char *tls, int alloc,
                 unsigned rep, unsigned point_id, fan_cold_result_t *c)
{
    fan_engine_cfg_t dcfg, pcfg;
    fan_result_t r;
    fan_pt_t p;
    int rc = -1;

    memset(c, 0, sizeof(*c));
    memset(&r, 0, sizeof(r));
    c->tls   = tls;
    c->alloc = alloc;
    c->rep   = rep;
    r.tls    = tls;
    r.rep    = rep;
    if (fan_pt_init(&p, o, &r, FAN_T_IN, 1, point_id) == 0) {
        memset(&dcfg, 0, sizeof(dcfg));
        dcfg.opts       = o;
        dcfg.region_len = p.share;
        dcfg.alloc      = alloc;
        dcfg.touch      = 0;           /* the point: fresh memory */
        pcfg            = dcfg;
        pcfg.alloc      = FAN_ALLOC_HIXL;
        if ((fan_pt_spawn(&p, &dcfg, &pcfg) == 0) &&
            (fan_pt_connect(&p) == 0) &&
            (fan_cold_pass(&p, 1, &c->first_gbs, &c->dec_flt_first,
                           &c->pre_flt_first) == 0) &&
            (fan_cold_pass(&p, 2, &c->second_gbs, &c->dec_flt_second,
                           &c->pre_flt_second) == 0)) {
            rc = 0;
        }
    }
    rc = fan_pt_fini(&p, rc);
    c->ok = (rc == 0);
    snprintf(c->err, sizeof(c->err), "%s", r.err);
    free(r.connect_ms);
    return rc;
}

/* ---- the machine's reference: memcpy ------------------------------------ */

typedef struct fan_memcpy_cfg {
    size_t len;
    int    shared;
} fan_memcpy_cfg_t;

static int fan_memcpy_main(int fd, void *arg)
{
    const fan_memcpy_cfg_t *cfg = arg;
    fan_sample_t s0, s1, s2;
    uint64_t t0, t1, t2, t3;
    uint8_t *src, *dst;
    char *line;

    src = mmap(NULL, cfg->len, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* MAP_SHARED anonymous memory is shmem, as UCX's posix/sysv segments */
    dst = mmap(NULL, cfg->len, PROT_READ | PROT_WRITE,
               (cfg->shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1,
               0);
    if ((src == MAP_FAILED) || (dst == MAP_FAILED)) {
        fan_child_send(fd, "ERR msg=mmap of 2 x %zu bytes failed", cfg->len);
        return FAN_EXIT_ERROR;
    }
    bc_pattern_fill(src, cfg->len, 1);    /* the source is warm */
    fan_proc_sample(getpid(), &s0);
    t0 = bc_now_ns();
    memcpy(dst, src, cfg->len);
    t1 = bc_now_ns();
    fan_proc_sample(getpid(), &s1);
    memset(dst, 0, 64);                    /* the second copy has work too */
    t2 = bc_now_ns();
    memcpy(dst, src, cfg->len);
    t3 = bc_now_ns();
    fan_proc_sample(getpid(), &s2);
    if (memcmp(dst, src, cfg->len) != 0) {
        fan_child_send(fd, "ERR msg=memcpy result differs");
        return FAN_EXIT_CORRUPT;
    }
    fan_child_send(fd, "DONE first=%llu second=%llu flt1=%llu flt2=%llu",
                   (unsigned long long)(t1 - t0),
                   (unsigned long long)(t3 - t2),
                   (unsigned long long)(s1.minflt - s0.minflt),
                   (unsigned long long)(s2.minflt - s1.minflt));
    munmap(src, cfg->len);
    munmap(dst, cfg->len);
    /* wait for QUIT, as every child does */
    return ((fan_child_recv(fd, &line) == 0) && !strcmp(line, "QUIT")) ?
           FAN_EXIT_OK : FAN_EXIT_ERROR;
}

void fan_memcpy_run(const fan_opts_t *o, int shared, unsigned rep,
                    fan_cold_result_t *c)
{
    fan_child_t *ch = fan_children(1);
    fan_memcpy_cfg_t cfg;
    uint64_t first = 0, second = 0, f1 = 0, f2 = 0;

    memset(c, 0, sizeof(*c));
    c->tls    = "-";
    c->alloc  = -1;
    c->shared = shared;
    c->rep    = rep;
    cfg.len    = o->total;
    cfg.shared = shared;
    if ((ch != NULL) &&
        (fan_spawn(ch, "memcpy", o->pin_prefill, fan_memcpy_main,
                   &cfg) == 0) &&
        (fan_recv_all(ch, 1, bc_now_ns() + 120000000000ull, "DONE") == 0) &&
        !bc_kv_u64(ch->line, "first", &first) &&
        !bc_kv_u64(ch->line, "second", &second) &&
        !bc_kv_u64(ch->line, "flt1", &f1) &&
        !bc_kv_u64(ch->line, "flt2", &f2) && first && second) {
        c->ok             = 1;
        c->first_gbs      = (double)o->total / (double)first;
        c->second_gbs     = (double)o->total / (double)second;
        c->dec_flt_first  = (double)f1;    /* the copying process's */
        c->dec_flt_second = (double)f2;
    } else {
        snprintf(c->err, sizeof(c->err), "memcpy reference failed");
    }
    if ((ch != NULL) && fan_reap(ch, 1, bc_now_ns() + 10000000000ull)) {
        c->ok = 0;
    }
    free(ch);
}
