/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw: statistics and output, in the format of ucx_perftest 1.13
 * (src/tools/perf/perftest_run.c: print_header, print_progress), so that
 * scripts which parse ucx_perftest output parse this too:
 *
 *  - the client prints the results table, the server the test description;
 *  - a row about every second, "[thread 0]" in front like the OpenMP build
 *    of ucx_perftest that distributions ship, then a "Final:" row;
 *  - latency columns in usec (per iteration; half a round trip for the
 *    ping-pong tests), bandwidth in MB/s with MB = 2^20, message rate in
 *    transfers per second; "average" covers the last report interval,
 *    "overall" the whole measurement; the percentile is over the last 2048
 *    iterations, as ucx_perftest's timing queue;
 *  - -f prints the final row only (labelled with the message size in a
 *    sweep), -v prints CSV with ucx_perftest's header.
 */
#include "config.h"
#include "put_bw.h"
#include "common/clock.h"
#include "common/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define BENCH_HAVE_TSC 1
#endif

static double bench_tick_rate = 1e9;   /* ticks per second */

uint64_t bench_ticks(void)
{
#ifdef BENCH_HAVE_TSC
    /* per-iteration stamps: the TSC, as ucx_perftest's ucs_get_time() */
    return __rdtsc();
#else
    return bc_now_ns();
#endif
}

double bench_ticks_per_sec(void)
{
    return bench_tick_rate;
}

void bench_clock_init(void)
{
#ifdef BENCH_HAVE_TSC
    double t0, t1;
    uint64_t c0, c1;

    t0 = bc_now_s();
    c0 = bench_ticks();
    do {
        t1 = bc_now_s();
    } while (t1 - t0 < 0.02);
    c1 = bench_ticks();
    bench_tick_rate = (double)(c1 - c0) / (t1 - t0);
#endif
}

void bench_stats_start(bench_stats_t *st, const bench_opts_t *opts,
                       const bench_run_t *run)
{
    memset(st, 0, sizeof(*st));
    st->opts           = opts;
    st->run            = run;
    st->factor         = bench_tests[opts->test].pingpong ? 2.0 : 1.0;
    st->interval_ticks = (uint64_t)(opts->report_interval *
                                    bench_ticks_per_sec());
    st->start          = bc_now_s();
    st->cur.time       = st->start;
    st->prev.time      = st->start;
    st->prev_tick      = bench_ticks();
    st->report_tick    = st->prev_tick;
}

static double bench_percentile(const bench_stats_t *st)
{
    uint64_t sorted[BENCH_TIMING_QUEUE];
    size_t n = (st->cur.iters < BENCH_TIMING_QUEUE) ? st->cur.iters :
               BENCH_TIMING_QUEUE;

    /* the ring fills from index 0, so the first n entries are the valid ones
     * until it wraps, and all of them after */
    memcpy(sorted, st->queue, n * sizeof(*sorted));
    return (double)bc_percentile_floor_u64(sorted, n, st->opts->percentile) /
           bench_ticks_per_sec();
}

void bench_stats_report(bench_stats_t *st, int final)
{
    const bench_opts_t *opts = st->opts;
    double lat_pct, lat_avg, lat_all, bw_avg, bw_all, mr_avg, mr_all;
    double dt, dt_all, f = st->factor;
    uint64_t di;

    st->cur.time = bc_now_s();
    dt     = st->cur.time - st->prev.time;
    dt_all = st->cur.time - st->start;
    di     = st->cur.iters - st->prev.iters;

    lat_pct = bench_percentile(st) / f;
    lat_avg = di ? dt / (double)di / f : 0.0;
    lat_all = st->cur.iters ? dt_all / (double)st->cur.iters / f : 0.0;
    bw_avg  = (dt > 0) ? (double)(st->cur.bytes - st->prev.bytes) / dt * f :
              0.0;
    bw_all  = (dt_all > 0) ? (double)st->cur.bytes / dt_all * f : 0.0;
    mr_avg  = (dt > 0) ? (double)(st->cur.msgs - st->prev.msgs) / dt * f :
              0.0;
    mr_all  = (dt_all > 0) ? (double)st->cur.msgs / dt_all * f : 0.0;

    if (!final) {
        st->prev        = st->cur;
        st->report_tick = bench_ticks();
        if (opts->final_only) {
            return;
        }
    }

    if (opts->csv && opts->sweep_min) {
        printf("%s,", st->run->name);
    }
    if (opts->csv && opts->memcpy_baseline) {
        printf("%s,", (st->label != NULL) ? st->label : "hixl");
    }
    if (!final) {
        printf("[thread 0]");
    } else if (!opts->csv) {
        if (st->label != NULL) {
            printf(opts->final_only ? "%10s" : "%-10s", st->label);
        } else if (opts->final_only) {
            printf("%10s", st->run->name);
        } else {
            printf("Final:    ");
        }
    }
    printf(opts->csv ? "%4.0f,%.3f,%.3f,%.3f,%.2f,%.2f,%.0f,%.0f" :
                       "%18.0f %10.3f %9.3f %9.3f %11.2f %10.2f %11.0f %11.0f",
           (double)st->cur.iters, lat_pct * 1e6, lat_avg * 1e6, lat_all * 1e6,
           bw_avg / (1024.0 * 1024.0), bw_all / (1024.0 * 1024.0), mr_avg,
           mr_all);
    printf("\n");
    fflush(stdout);
}

double bench_stats_bw(const bench_stats_t *st)
{
    double dt = st->cur.time - st->start;

    return (dt > 0) ? (double)st->cur.bytes / dt * st->factor : 0.0;
}

void bench_print_ratio(const bench_stats_t *xfer, const bench_stats_t *base)
{
    double b = bench_stats_bw(base);

    if (xfer->opts->csv) {
        return;   /* the two rows say it */
    }
    printf("%10s %18s %.3f of memcpy's bandwidth (overall)\n", "ratio", "",
           (b > 0) ? bench_stats_bw(xfer) / b : 0.0);
    fflush(stdout);
}

static const char bench_sep[] =
    "+--------------+--------------+----------+---------+---------+----------+"
    "----------+-----------+-----------+";

void bench_print_header(const bench_opts_t *opts)
{
    if (opts->csv) {
        if (opts->sweep_min) {
            printf("size,");
        }
        if (opts->memcpy_baseline) {
            printf("row,");
        }
        printf("iterations,%.1f_percentile_lat,avg_lat,overall_lat,avg_bw,"
               "overall_bw,avg_mr,overall_mr\n", opts->percentile);
        fflush(stdout);
        return;
    }
    printf("+--------------+--------------+------------------------------+"
           "---------------------+-----------------------+\n");
    printf("|              |              |       %8s (usec)        |   "
           "bandwidth (MB/s)  |  message rate (msg/s) |\n",
           bench_tests[opts->test].lat_title);
    printf("%s\n", bench_sep);
    printf("|    %5s     | # iterations | %4.1f%%ile | average | overall |  "
           "average |  overall |  average  |  overall  |\n",
           opts->final_only ? "Test" : "Stage", opts->percentile);
    printf("%s\n", bench_sep);
    fflush(stdout);
}

/* In a sweep without -f / -v, a separator naming the size before its rows,
 * as ucx_perftest does for the tests of a batch file. */
void bench_print_run_name(const bench_opts_t *opts, const bench_run_t *run)
{
    char buf[sizeof(bench_sep)];
    size_t n;

    if (!opts->sweep_min || opts->csv || opts->final_only) {
        return;
    }
    memcpy(buf, bench_sep, sizeof(bench_sep));
    n = strlen(run->name);
    if (n > sizeof(buf) - 2) {
        n = sizeof(buf) - 2;
    }
    memcpy(buf + 1, run->name, n);
    printf("%s\n", buf);
    fflush(stdout);
}

static void bench_box_line(const char *key, const char *value)
{
    printf("| %-13s %-60s                               |\n", key, value);
}

void bench_print_test_box(const bench_opts_t *opts, const bench_run_t *first,
                          const bench_run_t *last)
{
    char buf[128];

    printf("+---------------------------------------------------------------"
           "-------------------------------------------+\n");
    snprintf(buf, sizeof(buf), "hixl (libhixl-ucx %s)", hixl_version());
    bench_box_line("API:", buf);
    bench_box_line("Test:", bench_tests[opts->test].desc);
    snprintf(buf, sizeof(buf), "%zu descriptor%s per transfer",
             first->num_descs, (first->num_descs == 1) ? "" : "s");
    bench_box_line("Data layout:", buf);
    bench_box_line("Send memory:", "host");
    bench_box_line("Recv memory:", "host");
    if (first->msg_size == last->msg_size) {
        snprintf(buf, sizeof(buf), "%zu", first->msg_size);
    } else {
        snprintf(buf, sizeof(buf), "%zu..%zu (sweep)", first->msg_size,
                 last->msg_size);
    }
    bench_box_line("Message size:", buf);
    printf("+---------------------------------------------------------------"
           "-------------------------------------------+\n");
    fflush(stdout);
}
