/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: statistics, tables, CSV and the plot.
 *
 * Every run (one N of one test over one UCX_TLS, one repetition) is kept
 * and, with --out, written at once as a row of the raw CSV, so an
 * interrupted sweep still leaves its data.  At the end, per (test, UCX_TLS,
 * N): medians over the repetitions with [min-max] of the headline figure;
 * connect times pooled over the repetitions (median, p99 by nearest rank,
 * max); the tables, a summary CSV, the targets the library aims at
 * (throughput kept as N grows, connect time, memory per peer, idle CPU,
 * cold memory; reported, not enforced) and, when gnuplot is installed, a
 * PNG.
 */
#include "config.h"
#include "fan.h"
#include "common/which.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct fan_report {
    const fan_opts_t  *o;
    fan_result_t      *res;
    unsigned           nres, capres;
    fan_cold_result_t *cold;
    unsigned           ncold, capcold;
    const char        *tls[16];        /* in order of appearance */
    unsigned           ntls;
    char               base[512];      /* out_dir/fan-STAMP, or "" */
    FILE              *raw, *cold_raw;
    FILE              *out;            /* tables: stdout (and .txt) */
    FILE              *txt;
};

/* ---- helpers ------------------------------------------------------------ */

static const char *fan_test_name(unsigned test)
{
    return (test == FAN_T_IN) ? "fan_in" : (test == FAN_T_OUT) ? "fan_out" :
           "ucx_ep";
}

static const char *fan_alloc_name(const fan_cold_result_t *c)
{
    if (c->alloc < 0) {
        return c->shared ? "memcpy, fresh shared" : "memcpy, fresh private";
    }
    return (c->alloc == FAN_ALLOC_HIXL) ? "hixl_alloc_mem" : "mmap+register";
}

/* Room for one more of n kept results (doubling from first); -1 when out
 * of memory, the result is then not kept. */
static int fan_grow(void **v, unsigned n, unsigned *cap, size_t size,
                    unsigned first)
{
    unsigned want = *cap ? 2 * *cap : first;
    void *p;

    if (n < *cap) {
        return 0;
    }
    p = realloc(*v, want * size);
    if (p == NULL) {
        return -1;
    }
    *v   = p;
    *cap = want;
    return 0;
}

/* Both stdout and the .txt copy. */
static void fan_out(fan_report_t *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fan_out(fan_report_t *rep, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfprintf(rep->out, fmt, ap);
    va_end(ap);
    if (rep->txt != NULL) {
        va_start(ap, fmt);
        vfprintf(rep->txt, fmt, ap);
        va_end(ap);
    }
}

static void fan_note_tls(fan_report_t *rep, const char *tls)
{
    unsigned i;

    for (i = 0; i < rep->ntls; ++i) {
        if (!strcmp(rep->tls[i], tls)) {
            return;
        }
    }
    if (rep->ntls < sizeof(rep->tls) / sizeof(rep->tls[0])) {
        rep->tls[rep->ntls++] = tls;
    }
}

/* ---- open --------------------------------------------------------------- */

static const char fan_raw_header[] =
    "test,tls,n,rep,ok,partial,corrupt,desc_size,share,bytes,run_s,agg_gbs,"
    "peer_min_gbs,peer_max_gbs,share_min,share_max,jain,finish,"
    "connect_med_ms,connect_p99_ms,connect_max_ms,late_max_ms,"
    "hub_conn_cpu_ms,pre_conn_cpu_ms,hub_kb_connect,"
    "hub_kb_per_peer,hub_kb_rss,hub_fds_per_peer,hub_rss_mb,hub_threads,"
    "dec_busy_mean,dec_busy_max,pre_busy_mean,pre_busy_max,dec_idle_mean,"
    "dec_idle_max,pre_idle_mean,pre_idle_max,base_ok,base_target_kb,"
    "base_creator_kb,base_target_fds,base_creator_fds,wall_s,host_busy,"
    "error,ucx_xfer_ok,ucx_op,ucx_gbs,ucx_dec_busy,ucx_pre_busy\n";

static const char fan_cold_header[] =
    "tls,memory,rep,ok,first_gbs,second_gbs,ratio,dec_faults_first,"
    "dec_faults_second,pre_faults_first,pre_faults_second,host_busy,error\n";

fan_report_t *fan_report_open(const fan_opts_t *o, int argc, char **argv)
{
    fan_report_t *rep = calloc(1, sizeof(*rep));
    char stamp[32], path[600];
    time_t now = time(NULL);
    struct tm tm;
    int i;

    if (rep == NULL) {
        return NULL;
    }
    rep->o   = o;
    rep->out = stdout;
    if ((o->out_dir == NULL) || (o->out_dir[0] == '\0')) {
        return rep;
    }
    if ((mkdir(o->out_dir, 0777) != 0) && (errno != EEXIST)) {
        fprintf(stderr, "fan: cannot create %s: %s (no files written)\n",
                o->out_dir, strerror(errno));
        return rep;
    }
    localtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
    snprintf(rep->base, sizeof(rep->base), "%s/fan-%s", o->out_dir, stamp);
    snprintf(path, sizeof(path), "%s-raw.csv", rep->base);
    rep->raw = fopen(path, "w");
    snprintf(path, sizeof(path), "%s-cold-raw.csv", rep->base);
    rep->cold_raw = fopen(path, "w");
    snprintf(path, sizeof(path), "%s.txt", rep->base);
    rep->txt = fopen(path, "w");
    if ((rep->raw == NULL) || (rep->cold_raw == NULL) || (rep->txt == NULL)) {
        fprintf(stderr, "fan: cannot write under %s: %s\n", o->out_dir,
                strerror(errno));
    }
    if (rep->raw != NULL) {
        fputs(fan_raw_header, rep->raw);
    }
    if (rep->cold_raw != NULL) {
        fputs(fan_cold_header, rep->cold_raw);
    }
    if (rep->txt != NULL) {
        fprintf(rep->txt, "command:");
        for (i = 0; i < argc; ++i) {
            fprintf(rep->txt, " %s", argv[i]);
        }
        fprintf(rep->txt, "\n");
    }
    return rep;
}

/* ---- per run ------------------------------------------------------------ */

static void fan_connect_stats(const fan_result_t *r, double *med, double *p99,
                              double *max)
{
    double *v = malloc((r->n ? r->n : 1) * sizeof(*v));

    *med = *p99 = *max = NAN;
    if ((v == NULL) || (r->connect_ms == NULL) || !r->ok) {
        free(v);
        return;
    }
    memcpy(v, r->connect_ms, r->n * sizeof(*v));
    *med = bc_median(v, r->n);
    *p99 = bc_percentile(v, r->n, 99.0);
    *max = v[r->n - 1];
    free(v);
}

void fan_report_point(fan_report_t *rep, const fan_result_t *r)
{
    double med, p99, max;

    if (fan_grow((void**)&rep->res, rep->nres, &rep->capres,
                 sizeof(*rep->res), 64) != 0) {
        return;
    }
    rep->res[rep->nres++] = *r;
    fan_note_tls(rep, r->tls);
    fan_connect_stats(r, &med, &p99, &max);
    if (!rep->o->quiet) {
        if (r->test == FAN_T_UCX) {
            fprintf(stderr, "[rep %u] %-7s %-8s N=%-3u %s: target %.1f KiB/ep"
                    ", creator %.1f KiB/ep\n", r->rep + 1,
                    fan_test_name(r->test), r->tls, r->n,
                    r->base_ok ? "ok" : "FAILED", r->base_target_kb,
                    r->base_creator_kb);
        } else {
            fprintf(stderr, "[rep %u] %-7s %-8s N=%-3u %s: %.3f GB/s, connect "
                    "med %.1f p99 %.1f ms, hub %.1f KiB/peer, %.1f s%s%s\n",
                    r->rep + 1, fan_test_name(r->test), r->tls, r->n,
                    r->ok ? (r->partial ? "PARTIAL" : "ok") :
                    (r->corrupt ? "CORRUPT" : "FAILED"), r->agg_gbs, med,
                    p99, r->hub_kb_per_peer, r->wall_s,
                    r->err[0] ? ": " : "", r->err);
        }
    }
    if (rep->raw == NULL) {
        return;
    }
    fprintf(rep->raw, "%s,%s,%u,%u,%d,%d,%d,%zu,%zu,%llu,%.6f,%.4f,%.4f,"
            "%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.2f,%.2f,%.2f,%.3f,%.1f,%u,"
            "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d,%.2f,%.2f,%.3f,%.3f,"
            "%.2f,%.2f,\"%s\",%d,%s,%.4f,%.4f,%.4f\n",
            fan_test_name(r->test), r->tls, r->n, r->rep + 1, r->ok,
            r->partial, r->corrupt, r->desc_size, r->share,
            (unsigned long long)r->bytes, r->run_s, r->agg_gbs,
            r->peer_min_gbs, r->peer_max_gbs, r->share_min, r->share_max,
            r->jain, r->finish, med, p99, max, r->late_max_ms,
            r->hub_conn_cpu_ms, r->pre_conn_cpu_ms, r->hub_kb_connect,
            r->hub_kb_per_peer, r->hub_kb_rss, r->hub_fds_per_peer,
            r->hub_rss_mb, r->hub_threads, r->dec_busy_mean, r->dec_busy_max,
            r->pre_busy_mean, r->pre_busy_max, r->dec_idle_mean,
            r->dec_idle_max, r->pre_idle_mean, r->pre_idle_max, r->base_ok,
            r->base_target_kb, r->base_creator_kb, r->base_target_fds,
            r->base_creator_fds, r->wall_s, r->host_busy, r->err,
            r->base_xfer_ok, r->base_op ? r->base_op : "", r->base_gbs,
            r->base_dec_busy, r->base_pre_busy);
    fflush(rep->raw);
}

void fan_report_cold(fan_report_t *rep, const fan_cold_result_t *c)
{
    if (fan_grow((void**)&rep->cold, rep->ncold, &rep->capcold,
                 sizeof(*rep->cold), 32) != 0) {
        return;
    }
    rep->cold[rep->ncold++] = *c;
    if (!rep->o->quiet) {
        fprintf(stderr, "[rep %u] cold    %-8s %-22s %s: first %.3f GB/s, "
                "second %.3f GB/s, first/second %.3f%s%s\n", c->rep + 1,
                c->tls, fan_alloc_name(c), c->ok ? "ok" : "FAILED",
                c->first_gbs, c->second_gbs,
                (c->second_gbs > 0) ? c->first_gbs / c->second_gbs : 0.0,
                c->err[0] ? ": " : "", c->err);
    }
    if (rep->cold_raw == NULL) {
        return;
    }
    fprintf(rep->cold_raw, "%s,%s,%u,%d,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.0f,"
            "%.2f,\"%s\"\n", c->tls, fan_alloc_name(c), c->rep + 1, c->ok,
            c->first_gbs, c->second_gbs,
            (c->second_gbs > 0) ? c->first_gbs / c->second_gbs : 0.0,
            c->dec_flt_first, c->dec_flt_second, c->pre_flt_first,
            c->pre_flt_second, c->host_busy, c->err);
    fflush(rep->cold_raw);
}

/* ---- summaries ---------------------------------------------------------- */

typedef struct fan_row {
    unsigned test, n, reps, ok, partial;
    const char *tls;
    double agg, agg_min, agg_max, x1;
    double share_min, share_max, jain, finish;
    double c_med, c_p99, c_max, late;
    double hub_kb, hub_kb_conn, beyond, fds, rss_mb;
    double dec_busy, pre_busy, dec_idle, pre_idle, dec_idle_max, pre_idle_max;
    double base_t, base_c, base_tf, base_cf;
    double ucx_gbs, x_ucx, ucx_dec_busy, ucx_pre_busy;   /* bare UCX */
    const char *ucx_op;
    double done_frac;              /* of the bytes asked for */
    double hub_conn_cpu, pre_conn_cpu;   /* ms per connect */
} fan_row_t;

/* median over the ok runs of one field, given as an offset */
static double fan_med_field(fan_result_t **runs, unsigned n, size_t off,
                            double *min, double *max)
{
    double v[64];
    unsigned i, k = 0;

    for (i = 0; (i < n) && (k < 64); ++i) {
        v[k++] = *(const double*)((const char*)runs[i] + off);
    }
    if (k == 0) {
        return NAN;
    }
    bc_sort_double(v, k);
    if (min != NULL) {
        *min = v[0];
        *max = v[k - 1];
    }
    return bc_median(v, k);
}

#define FAN_MED(_runs, _k, _field) \
    fan_med_field(_runs, _k, offsetof(fan_result_t, _field), NULL, NULL)

static int fan_summarize(fan_report_t *rep, unsigned test, const char *tls,
                         unsigned n, fan_row_t *row)
{
    fan_result_t *runs[64], *base[64], *xfer[64];
    double *pool, v[64];
    unsigned i, k = 0, nb = 0, nx = 0, np = 0, reps = 0, partial = 0;

    memset(row, 0, sizeof(*row));
    for (i = 0; i < rep->nres; ++i) {
        fan_result_t *r = &rep->res[i];

        if ((r->test != test) || strcmp(r->tls, tls) || (r->n != n)) {
            continue;
        }
        ++reps;
        if (r->ok && (k < 64)) {
            runs[k++] = r;
            partial  += (unsigned)r->partial;
        }
        if (r->base_ok && (nb < 64)) {
            base[nb++] = r;
        }
        if (r->base_xfer_ok && (nx < 64)) {
            xfer[nx++]  = r;
            row->ucx_op = r->base_op;
        }
    }
    if (reps == 0) {
        return -1;
    }
    row->test = test;
    row->tls  = tls;
    row->n    = n;
    row->reps = reps;
    row->ok   = k;
    row->partial = partial;
    row->agg = fan_med_field(runs, k, offsetof(fan_result_t, agg_gbs),
                             &row->agg_min, &row->agg_max);
    row->share_min = FAN_MED(runs, k, share_min);
    row->share_max = FAN_MED(runs, k, share_max);
    row->jain      = FAN_MED(runs, k, jain);
    row->finish    = FAN_MED(runs, k, finish);
    pool = malloc((size_t)(k ? k : 1) * n * sizeof(*pool));
    for (i = 0; (pool != NULL) && (i < k); ++i) {
        memcpy(pool + np, runs[i]->connect_ms, n * sizeof(*pool));
        np += n;
    }
    if (pool != NULL) {
        row->c_med = bc_median(pool, np);
        row->c_p99 = bc_percentile(pool, np, 99.0);
        row->c_max = np ? pool[np - 1] : NAN;
        free(pool);
    }
    for (i = 0; i < k; ++i) {
        v[i] = (double)runs[i]->bytes / ((double)runs[i]->share * n *
                                         rep->o->passes);
    }
    row->done_frac    = bc_median(v, k);
    row->late         = FAN_MED(runs, k, late_max_ms);
    row->hub_conn_cpu = FAN_MED(runs, k, hub_conn_cpu_ms);
    row->pre_conn_cpu = FAN_MED(runs, k, pre_conn_cpu_ms);
    row->hub_kb       = FAN_MED(runs, k, hub_kb_per_peer);
    row->hub_kb_conn  = FAN_MED(runs, k, hub_kb_connect);
    row->fds          = FAN_MED(runs, k, hub_fds_per_peer);
    row->rss_mb       = FAN_MED(runs, k, hub_rss_mb);
    row->dec_busy     = FAN_MED(runs, k, dec_busy_mean);
    row->pre_busy     = FAN_MED(runs, k, pre_busy_mean);
    row->dec_idle     = FAN_MED(runs, k, dec_idle_mean);
    row->pre_idle     = FAN_MED(runs, k, pre_idle_mean);
    row->dec_idle_max = FAN_MED(runs, k, dec_idle_max);
    row->pre_idle_max = FAN_MED(runs, k, pre_idle_max);
    row->base_t       = FAN_MED(base, nb, base_target_kb);
    row->base_c       = FAN_MED(base, nb, base_creator_kb);
    row->base_tf      = FAN_MED(base, nb, base_target_fds);
    row->base_cf      = FAN_MED(base, nb, base_creator_fds);
    row->beyond       = row->hub_kb - ((test == FAN_T_IN) ? row->base_t :
                                       row->base_c);
    row->ucx_gbs      = FAN_MED(xfer, nx, base_gbs);
    row->ucx_dec_busy = FAN_MED(xfer, nx, base_dec_busy);
    row->ucx_pre_busy = FAN_MED(xfer, nx, base_pre_busy);
    /* medians of the two: each run of one is paired with a run of the
     * other right after it, and the host's noise moves both */
    row->x_ucx        = row->agg / row->ucx_gbs;
    return 0;
}

static void fan_num(char *buf, size_t len, double v, const char *fmt)
{
    if (isnan(v)) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, fmt, v);
    }
}

/* Least squares of the total growth G(N) = per_peer(N) * N against N over
 * the rows: the slope is the cost of one more peer, the intercept what the
 * first connection costs once (UCX loading a transport, a mapping), which
 * "per peer" at small N includes. */
static int fan_slope(const fan_row_t *rows, unsigned n, size_t off,
                     double *slope, double *fixed)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, x, y, k = 0, d;
    unsigned i;

    for (i = 0; i < n; ++i) {
        y = *(const double*)((const char*)&rows[i] + off);
        /* (a bare-UCX row has no fan run to be ok) */
        if ((!rows[i].ok && (rows[i].test != FAN_T_UCX)) || isnan(y)) {
            continue;
        }
        x    = rows[i].n;
        y   *= x;
        sx  += x;
        sy  += y;
        sxx += x * x;
        sxy += x * y;
        k   += 1;
    }
    d = k * sxx - sx * sx;
    if ((k < 3) || (d <= 0)) {
        return -1;
    }
    *slope = (k * sxy - sx * sy) / d;
    *fixed = (sy - *slope * sx) / k;
    return 0;
}

static void fan_print_slope(fan_report_t *rep, const fan_row_t *rows,
                            unsigned n, const char *side, size_t base_off)
{
    double s, f, bs, bf;

    if (fan_slope(rows, n, offsetof(fan_row_t, hub_kb), &s, &f) != 0) {
        return;
    }
    fan_out(rep, "      %s private RSS, least squares over N: %.1f KiB per "
            "peer + %.0f KiB once", side, s, f);
    if (fan_slope(rows, n, base_off, &bs, &bf) == 0) {
        fan_out(rep, "; bare UCX: %.1f KiB per endpoint + %.0f KiB once; "
                "beyond UCX: %.1f KiB per peer", bs, bf, s - bs);
    }
    fan_out(rep, "\n");
}

static void fan_print_fan(fan_report_t *rep, unsigned test, const char *tls,
                          fan_row_t *rows, unsigned nrows)
{
    const fan_opts_t *o = rep->o;
    char ds[32], ts[32], a[48], x[16], sh[48], c[40], cpu[24], cpu2[24];
    char mem[40], fd[16], ux[40], xu[16];
    unsigned i;
    int in = (test == FAN_T_IN);

    bc_size_str(o->desc_size, ds, sizeof(ds));
    bc_size_str(o->total, ts, sizeof(ts));
    fan_out(rep, "\n%s over UCX_TLS=%s: %s written per pass, split over N "
            "peers, in %s descriptors (%u per transfer, %u in flight per "
            "peer), %u timed pass(es) after %u warm-up; %u rep(s): medians, "
            "[min-max] over reps\n", in ? "fan-in (N prefill -> 1 decode)" :
            "fan-out (1 prefill -> N decode)", tls, ts, ds, o->per_xfer,
            o->window, o->passes, o->warmup, o->reps);
    fan_out(rep, "%4s  %-22s %5s  %-19s %5s  %-15s  %-18s  %-10s  %-10s  "
            "%-22s %-5s %s\n", "N", "aggregate GB/s", "xN=1",
            "bare UCX GB/s", "xUCX", "fairness", "connect ms", "decode",
            "prefill", in ? "decode KiB/peer" : "prefill KiB/peer", "fds",
            "ok");
    fan_out(rep, "%4s  %-22s %5s  %-19s %5s  %-15s  %-18s  %-10s  %-10s  "
            "%-22s %-5s\n", "", "", "", "(op, decode busy)", "",
            "Jain (min-max)", "med/p99/max", "busy/idle", "busy/idle",
            "all (UCX; beyond)", "/peer");
    for (i = 0; i < nrows; ++i) {
        fan_row_t *r = &rows[i];

        if (r->ok == 0) {
            fan_out(rep, "%4u  all %u run(s) failed\n", r->n, r->reps);
            continue;
        }
        snprintf(a, sizeof(a), "%.3f [%.3f-%.3f]", r->agg, r->agg_min,
                 r->agg_max);
        fan_num(x, sizeof(x), r->x1, "%.2f");
        snprintf(sh, sizeof(sh), "%.2f (%.2f-%.2f)", r->jain, r->share_min,
                 r->share_max);
        snprintf(c, sizeof(c), "%.1f/%.1f/%.1f", r->c_med, r->c_p99,
                 r->c_max);
        snprintf(cpu, sizeof(cpu), "%.2f/%.3f", r->dec_busy, r->dec_idle);
        snprintf(cpu2, sizeof(cpu2), "%.2f/%.3f", r->pre_busy, r->pre_idle);
        if (isnan(r->beyond)) {
            snprintf(mem, sizeof(mem), "%.1f", r->hub_kb);
        } else {
            snprintf(mem, sizeof(mem), "%.1f (%.1f; %.1f)", r->hub_kb,
                     in ? r->base_t : r->base_c, r->beyond);
        }
        snprintf(fd, sizeof(fd), "%.2f", r->fds);
        if (isnan(r->ucx_gbs)) {
            snprintf(ux, sizeof(ux), "-");
        } else {
            snprintf(ux, sizeof(ux), "%.3f (%s, %.2f)", r->ucx_gbs,
                     r->ucx_op ? r->ucx_op : "-", r->ucx_dec_busy);
        }
        fan_num(xu, sizeof(xu), r->x_ucx, "%.2f");
        fan_out(rep, "%4u  %-22s %5s  %-19s %5s  %-15s  %-18s  %-10s  %-10s  "
                "%-22s %-5s %u/%u", r->n, a, x, ux, xu, sh, c, cpu, cpu2, mem,
                fd, r->ok, r->reps);
        if (r->partial) {
            fan_out(rep, " PARTIAL (%u; %.0f%% done)", r->partial,
                    100 * r->done_frac);
        }
        fan_out(rep, "\n");
    }
    fan_print_slope(rep, rows, nrows, in ? "decode" : "prefill",
                    in ? offsetof(fan_row_t, base_t) :
                    offsetof(fan_row_t, base_c));
}

static void fan_print_ucx(fan_report_t *rep, const char *tls, fan_row_t *rows,
                          unsigned nrows)
{
    double ts, tf, cs, cf;
    unsigned i;

    fan_out(rep, "\nbare UCX over UCX_TLS=%s: N endpoints between two "
            "processes (public UCP API, set up as a hixl engine), one "
            "descriptor put through each, all in flight together; private "
            "RSS and fds growth / N; medians\n", tls);
    fan_out(rep, "%4s  %-16s %-16s %-14s %-14s\n", "N", "target KiB/ep",
            "creator KiB/ep", "target fds/ep", "creator fds/ep");
    for (i = 0; i < nrows; ++i) {
        fan_out(rep, "%4u  %-16.1f %-16.1f %-14.2f %-14.2f\n", rows[i].n,
                rows[i].base_t, rows[i].base_c, rows[i].base_tf,
                rows[i].base_cf);
    }
    if ((fan_slope(rows, nrows, offsetof(fan_row_t, base_t), &ts, &tf) ==
         0) &&
        (fan_slope(rows, nrows, offsetof(fan_row_t, base_c), &cs, &cf) ==
         0)) {
        fan_out(rep, "      least squares over N: target %.1f KiB per "
                "endpoint + %.0f KiB once, creator %.1f KiB per endpoint + "
                "%.0f KiB once\n", ts, tf, cs, cf);
    }
}

static void fan_summary_csv(FILE *f, const fan_row_t *r)
{
    fprintf(f, "%s,%s,%u,%u,%u,%u,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,"
            "%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.2f,%.2f,%.2f,%.3f,%.1f,"
            "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f,%.3f,%.3f",
            fan_test_name(r->test), r->tls, r->n, r->reps, r->ok, r->partial,
            r->done_frac, r->agg, r->agg_min, r->agg_max, r->x1,
            r->share_min, r->share_max, r->jain, r->finish, r->c_med,
            r->c_p99, r->c_max,
            r->late, r->hub_conn_cpu, r->pre_conn_cpu, r->hub_kb_conn,
            r->hub_kb, r->beyond, r->fds, r->rss_mb, r->dec_busy,
            r->pre_busy, r->dec_idle, r->dec_idle_max, r->pre_idle,
            r->pre_idle_max, r->base_t, r->base_c, r->base_tf, r->base_cf);
    fprintf(f, ",%s,%.4f,%.3f,%.3f,%.3f\n", r->ucx_op ? r->ucx_op : "",
            r->ucx_gbs, r->x_ucx, r->ucx_dec_busy, r->ucx_pre_busy);
}

static const char fan_summary_header[] =
    "test,tls,n,reps,ok,partial,done_frac,agg_gbs,agg_min,agg_max,x_n1,"
    "share_min,share_max,jain,finish,connect_med_ms,connect_p99_ms,connect_max_ms,"
    "late_max_ms,hub_conn_cpu_ms,pre_conn_cpu_ms,hub_kb_connect,"
    "hub_kb_per_peer,beyond_ucx_kb,hub_fds_per_peer,hub_rss_mb,dec_busy,"
    "pre_busy,dec_idle,dec_idle_max,pre_idle,pre_idle_max,base_target_kb,base_creator_kb,base_target_fds,"
    "base_creator_fds,ucx_op,ucx_gbs,x_ucx,ucx_dec_busy,ucx_pre_busy\n";

/* ---- cold --------------------------------------------------------------- */

typedef struct fan_cold_row {
    const fan_cold_result_t *c;        /* the first run of the case */
    unsigned k;                        /* ok runs */
    double first, second, ratio, rmin, rmax, df, df2, pf, pf2;
} fan_cold_row_t;

/* One row per (UCX_TLS, memory) in order of appearance; the count. */
static unsigned fan_cold_rows(const fan_report_t *rep, fan_cold_row_t *rows)
{
    double v[7][64];
    unsigned i, j, k, n = 0, seen;
    const fan_cold_result_t *c, *d;

    for (i = 0; i < rep->ncold; ++i) {
        c = &rep->cold[i];
        for (j = 0, seen = 0; j < i; ++j) {
            d = &rep->cold[j];
            seen |= !strcmp(c->tls, d->tls) && (c->alloc == d->alloc) &&
                    (c->shared == d->shared);
        }
        if (seen) {
            continue;
        }
        for (j = i, k = 0; (j < rep->ncold) && (k < 64); ++j) {
            d = &rep->cold[j];
            if (strcmp(c->tls, d->tls) || (c->alloc != d->alloc) ||
                (c->shared != d->shared) || !d->ok) {
                continue;
            }
            v[0][k] = d->first_gbs;
            v[1][k] = d->second_gbs;
            v[2][k] = d->first_gbs / d->second_gbs;
            v[3][k] = d->dec_flt_first;
            v[4][k] = d->dec_flt_second;
            v[5][k] = d->pre_flt_first;
            v[6][k++] = d->pre_flt_second;
        }
        memset(&rows[n], 0, sizeof(rows[n]));
        rows[n].c = c;
        rows[n].k = k;
        if (k > 0) {
            rows[n].first  = bc_median(v[0], k);
            rows[n].second = bc_median(v[1], k);
            rows[n].ratio  = bc_median(v[2], k);   /* sorts: [0], [k-1] */
            rows[n].rmin   = v[2][0];
            rows[n].rmax   = v[2][k - 1];
            rows[n].df     = bc_median(v[3], k);
            rows[n].df2    = bc_median(v[4], k);
            rows[n].pf     = bc_median(v[5], k);
            rows[n].pf2    = bc_median(v[6], k);
        }
        ++n;
    }
    return n;
}

static void fan_print_cold(fan_report_t *rep, const fan_cold_row_t *rows,
                           unsigned n)
{
    char ds[32], ts[32], r[40], f1[32], f2[32];
    unsigned i;

    if (n == 0) {
        return;
    }
    bc_size_str(rep->o->desc_size, ds, sizeof(ds));
    bc_size_str(rep->o->total, ts, sizeof(ts));
    fan_out(rep, "\ncold memory: %s written into freshly allocated memory "
            "(%s descriptors), then again into the same memory; %u rep(s): "
            "medians, [min-max] of the ratio\n", ts, ds, rep->o->reps);
    fan_out(rep, "%-8s %-22s %-9s %-9s %-22s %-17s %s\n", "UCX_TLS",
            "memory", "1st GB/s", "2nd GB/s", "1st/2nd", "minor faults",
            "minor faults");
    fan_out(rep, "%-8s %-22s %-9s %-9s %-22s %-17s %s\n", "", "", "", "", "",
            "1st/2nd: decode", "1st/2nd: prefill");
    for (i = 0; i < n; ++i) {
        const fan_cold_row_t *w = &rows[i];

        if (w->k == 0) {
            fan_out(rep, "%-8s %-22s every run failed\n", w->c->tls,
                    fan_alloc_name(w->c));
            continue;
        }
        snprintf(r, sizeof(r), "%.3f [%.3f-%.3f]", w->ratio, w->rmin,
                 w->rmax);
        snprintf(f1, sizeof(f1), "%.0f/%.0f", w->df, w->df2);
        if (w->c->alloc < 0) {
            snprintf(f2, sizeof(f2), "(memcpy)");
        } else {
            snprintf(f2, sizeof(f2), "%.0f/%.0f", w->pf, w->pf2);
        }
        fan_out(rep, "%-8s %-22s %-9.3f %-9.3f %-22s %-17s %s\n", w->c->tls,
                fan_alloc_name(w->c), w->first, w->second, r, f1, f2);
    }
}

/* ---- targets ------------------------------------------------------------ */

static const fan_row_t *fan_find(const fan_row_t *rows, unsigned n,
                                 unsigned test, const char *tls, unsigned N)
{
    unsigned i;

    for (i = 0; i < n; ++i) {
        if ((rows[i].test == test) && !strcmp(rows[i].tls, tls) &&
            (rows[i].n == N) && rows[i].ok) {
            return &rows[i];
        }
    }
    return NULL;
}

static void fan_targets(fan_report_t *rep, const fan_row_t *rows,
                        unsigned nrows, const fan_cold_row_t *cold,
                        unsigned ncold)
{
    const fan_row_t *r;
    double worst_beyond = -1e30, idle = 0;
    unsigned i, t;

    fan_out(rep, "\ntargets (reported, not enforced):\n");
    for (t = 0; t < rep->ntls; ++t) {
        r = fan_find(rows, nrows, FAN_T_IN, rep->tls[t], 16);
        if ((r != NULL) && !isnan(r->x1)) {
            double want = strstr(rep->tls[t], "tcp") ? 0.7 : 0.9;

            fan_out(rep, "  fan-in %-8s aggregate N=16 / N=1 >= %.1f: %.2f  "
                    "%s\n", rep->tls[t], want, r->x1,
                    (r->x1 >= want) ? "met" : "MISSED");
        }
        r = fan_find(rows, nrows, FAN_T_IN, rep->tls[t], 32);
        if (r != NULL) {
            fan_out(rep, "  fan-in %-8s connect p99 at N=32 <= 50 ms (or "
                    "at least <= 100 ms): %.1f ms  %s\n", rep->tls[t],
                    r->c_p99, (r->c_p99 <= 50) ? "met" :
                    (r->c_p99 <= 100) ? "met for 100 ms only" : "MISSED");
        }
    }
    for (i = 0; i < nrows; ++i) {
        if ((rows[i].test == FAN_T_IN) && rows[i].ok &&
            !isnan(rows[i].beyond)) {
            worst_beyond = (rows[i].beyond > worst_beyond) ? rows[i].beyond :
                           worst_beyond;
        }
        if ((rows[i].test != FAN_T_UCX) && rows[i].ok) {
            idle = (rows[i].dec_idle_max > idle) ? rows[i].dec_idle_max : idle;
            idle = (rows[i].pre_idle_max > idle) ? rows[i].pre_idle_max : idle;
        }
    }
    if (worst_beyond > -1e30) {
        fan_out(rep, "  decode memory per peer beyond UCX's own <= 1024 KiB: "
                "worst point %.1f KiB  %s\n", worst_beyond,
                (worst_beyond <= 1024) ? "met" : "MISSED");
    }
    for (t = 0; t < rep->ntls; ++t) {
        fan_row_t sel[64];
        double s, f, bs, bf;
        unsigned k = 0;

        for (i = 0; (i < nrows) && (k < 64); ++i) {
            if ((rows[i].test == FAN_T_IN) && !strcmp(rows[i].tls,
                                                      rep->tls[t])) {
                sel[k++] = rows[i];
            }
        }
        if ((fan_slope(sel, k, offsetof(fan_row_t, hub_kb), &s, &f) == 0) &&
            (fan_slope(sel, k, offsetof(fan_row_t, base_t), &bs, &bf) ==
             0)) {
            fan_out(rep, "  fan-in %-8s decode memory per added peer beyond "
                    "UCX's own <= 1024 KiB: %.1f KiB  %s\n", rep->tls[t],
                    s - bs, (s - bs <= 1024) ? "met" : "MISSED");
        }
    }
    if ((rep->o->idle_s > 0) && (nrows > 0) &&
        (rep->o->tests & (FAN_T_IN | FAN_T_OUT))) {
        fan_out(rep, "  an idle connected engine < 1%% of a core: worst "
                "%.1f%% %s\n", idle * 100, (idle < 0.01) ? "met" : "MISSED");
    }
    for (i = 0; i < ncold; ++i) {
        if ((cold[i].c->alloc >= 0) && cold[i].k) {
            fan_out(rep, "  cold %-8s %-15s first/second >= 0.8: %.3f  %s\n",
                    cold[i].c->tls, fan_alloc_name(cold[i].c), cold[i].ratio,
                    (cold[i].ratio >= 0.8) ? "met" : "MISSED");
        }
    }
}

/* ---- plot --------------------------------------------------------------- */

static void fan_plot(fan_report_t *rep, const fan_row_t *rows, unsigned nrows)
{
    const char *gp = bc_which("gnuplot");
    char dat[600], png[600], cmd[700];
    unsigned i, t, test, blocks = 0;
    FILE *f, *g;
    int first;

    if (rep->base[0] == '\0') {
        return;
    }
    if (gp == NULL) {
        fan_out(rep, "plot:        skipped: gnuplot not found (Debian/Ubuntu: "
                "apt-get install gnuplot-nox)\n");
        return;
    }
    snprintf(dat, sizeof(dat), "%s.dat", rep->base);
    snprintf(png, sizeof(png), "%s.png", rep->base);
    f = fopen(dat, "w");
    if (f == NULL) {
        return;
    }
    snprintf(cmd, sizeof(cmd), "'%s' > /dev/null 2>&1", gp);
    g = popen(cmd, "w");
    if (g == NULL) {
        fclose(f);
        return;
    }
    fprintf(g, "set terminal pngcairo size 1300,550 noenhanced\n"
            "set output '%s'\nset multiplot layout 1,2\n"
            "set logscale x 2\nset xlabel 'N (peers)'\nset grid\n"
            "set key left top\nset title 'aggregate GB/s (medians)'\n"
            "set ylabel 'GB/s'\nplot ", png);
    for (test = FAN_T_IN, first = 1; test <= FAN_T_OUT; test <<= 1) {
        for (t = 0; t < rep->ntls; ++t) {
            unsigned cnt = 0;

            for (i = 0; i < nrows; ++i) {
                if ((rows[i].test == test) && !strcmp(rows[i].tls,
                                                      rep->tls[t]) &&
                    rows[i].ok) {
                    fprintf(f, "%u %.4f %.3f\n", rows[i].n, rows[i].agg,
                            rows[i].c_p99);
                    ++cnt;
                }
            }
            if (cnt == 0) {
                continue;
            }
            fprintf(f, "\n\n");
            fprintf(g, "%s'%s' index %u using 1:2 with linespoints lw 2 "
                    "title '%s %s'", first ? "" : ", ", dat, blocks,
                    fan_test_name(test), rep->tls[t]);
            first = 0;
            ++blocks;
        }
    }
    fprintf(g, "\nset title 'connect p99 (ms)'\nset ylabel 'ms'\n"
            "set logscale y 10\nplot ");
    for (i = 0; i < blocks; ++i) {
        fprintf(g, "%s'%s' index %u using 1:3 with linespoints lw 2 "
                "notitle", i ? ", " : "", dat, i);
    }
    fprintf(g, "\nunset multiplot\n");
    fclose(f);
    if ((blocks == 0) || (pclose(g) != 0)) {
        if (blocks) {
            fan_out(rep, "plot:        gnuplot failed\n");
        }
        return;
    }
    fan_out(rep, "plot:        %s\n", png);
}

/* ---- close -------------------------------------------------------------- */

unsigned fan_report_close(fan_report_t *rep)
{
    fan_row_t *rows = calloc(rep->nres + 1, sizeof(*rows));
    fan_cold_row_t *cold = calloc(rep->ncold + 1, sizeof(*cold));
    unsigned i, t, test, nrows = 0, ncold = 0, failed = 0, start;
    int header = 0;
    const fan_row_t *one;
    char path[600];
    FILE *sum = NULL;

    for (i = 0; i < rep->nres; ++i) {
        failed += !rep->res[i].ok && (rep->res[i].test != FAN_T_UCX);
        failed += (rep->res[i].test == FAN_T_UCX) && !rep->res[i].base_ok;
        /* the bare-UCX transfers of a point that ran */
        failed += rep->o->baseline && rep->res[i].ok &&
                  (rep->res[i].test != FAN_T_UCX) &&
                  !rep->res[i].base_xfer_ok;
    }
    for (i = 0; i < rep->ncold; ++i) {
        failed += !rep->cold[i].ok;
    }
    if (rep->base[0] != '\0') {
        snprintf(path, sizeof(path), "%s.csv", rep->base);
        sum = fopen(path, "w");
        if (sum != NULL) {
            fputs(fan_summary_header, sum);
        }
    }
    for (test = FAN_T_IN; (rows != NULL) && (test <= FAN_T_UCX); test <<= 1) {
        for (t = 0; t < rep->ntls; ++t) {
            start = nrows;
            for (i = 0; i < rep->o->num_ns; ++i) {
                if (fan_summarize(rep, test, rep->tls[t], rep->o->ns[i],
                                  &rows[nrows]) == 0) {
                    ++nrows;
                }
            }
            if (nrows == start) {
                continue;
            }
            one = fan_find(rows + start, nrows - start, test, rep->tls[t], 1);
            for (i = start; i < nrows; ++i) {
                rows[i].x1 = (one != NULL) ? rows[i].agg / one->agg : NAN;
                if (sum != NULL) {
                    fan_summary_csv(sum, &rows[i]);
                }
                if (rep->o->csv) {
                    if (!header++) {
                        fputs(fan_summary_header, stdout);
                    }
                    fan_summary_csv(stdout, &rows[i]);
                }
            }
            if (rep->o->csv) {
                continue;
            }
            if (test == FAN_T_UCX) {
                fan_print_ucx(rep, rep->tls[t], rows + start, nrows - start);
            } else {
                fan_print_fan(rep, test, rep->tls[t], rows + start,
                              nrows - start);
            }
        }
    }
    if (rep->o->csv && (cold != NULL)) {
        ncold = fan_cold_rows(rep, cold);
        if (ncold > 0) {
            fputs("cold_tls,memory,ok,first_gbs,second_gbs,ratio,ratio_min,"
                  "ratio_max,dec_faults_first,dec_faults_second,"
                  "pre_faults_first,pre_faults_second\n", stdout);
        }
        for (i = 0; i < ncold; ++i) {
            printf("%s,%s,%u,%.4f,%.4f,%.4f,%.4f,%.4f,%.0f,%.0f,%.0f,%.0f\n",
                   cold[i].c->tls, fan_alloc_name(cold[i].c), cold[i].k,
                   cold[i].first, cold[i].second, cold[i].ratio,
                   cold[i].rmin, cold[i].rmax, cold[i].df, cold[i].df2,
                   cold[i].pf, cold[i].pf2);
        }
    }
    if (!rep->o->csv) {
        if ((nrows > 0) && (rep->o->tests & (FAN_T_IN | FAN_T_OUT))) {
            fan_out(rep, "\naggregate: every byte of the timed pass(es) / "
                    "(last completion - common start).  fairness: Jain's "
                    "index of the peers' own GB/s (1.00 all equal, 1/N one "
                    "peer got everything), and the slowest and fastest peer "
                    "over the mean.  connect: one "
                    "hixl_connect per peer, all started together, pooled over "
                    "reps.  cores: user+sys CPU time of the whole process "
                    "(every thread; the process CPU clock, /proc/<pid>/stat's "
                    "utime+stime at ns resolution) over wall time; busy: the "
                    "timed pass; idle: --idle s connected with nothing in "
                    "flight; per engine, the mean over the N engines of a "
                    "side.  KiB/peer: growth of the private RSS (anonymous + "
                    "file, without the shared-memory KV mappings) of the "
                    "engine every peer talks to, / N, after the transfers; in "
                    "brackets bare UCX's per-endpoint growth on the same side "
                    "(target for fan-in, creator for fan-out) and what lies "
                    "beyond it.  fds/peer: open descriptors of that engine, "
                    "growth / N.\n");
        }
        if (cold != NULL) {
            ncold = fan_cold_rows(rep, cold);
        }
        fan_print_cold(rep, cold, ncold);
        fan_targets(rep, rows, nrows, cold, ncold);
    }
    if (sum != NULL) {
        fclose(sum);
        fan_out(rep, "summary:     %s.csv\nraw:         %s-raw.csv, "
                "%s-cold-raw.csv\n", rep->base, rep->base, rep->base);
    }
    if (!rep->o->csv) {
        fan_plot(rep, rows, nrows);
    }
    if (rep->raw != NULL) {
        fclose(rep->raw);
    }
    if (rep->cold_raw != NULL) {
        fclose(rep->cold_raw);
    }
    if (rep->txt != NULL) {
        fclose(rep->txt);
    }
    for (i = 0; i < rep->nres; ++i) {
        free(rep->res[i].connect_ms);
    }
    free(rep->res);
    free(rep->cold);
    free(cold);
    free(rows);
    free(rep);
    return failed;
}
