/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An engine's figures over time (stats_csv.h).
 */
#include "config.h"
#include "stats_csv.h"
#include "common/which.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_STATS_PERIOD_NS (50 * 1000 * 1000L)

struct bench_stats {
    hixl_engine_t *engine;
    FILE          *csv;
    char           path[600];
    pthread_t      thread;
    atomic_int     stop;
    struct timespec t0;
};

static double bench_stats_elapsed(const bench_stats_t *s)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - s->t0.tv_sec) +
           (double)(t.tv_nsec - s->t0.tv_nsec) * 1e-9;
}

/* One row: the completed and failed totals over every op and path, the
 * layer signals and their latency histogram's count and sum. */
static void bench_stats_row(bench_stats_t *s)
{
    hixl_stats_t st;
    uint64_t bytes = 0, done = 0, failed = 0;
    unsigned o, p;

    memset(&st, 0, sizeof(st));
    st.size = sizeof(st);
    if (hixl_get_stats(s->engine, &st) != HIXL_SUCCESS) {
        return;
    }
    for (o = 0; o < HIXL_STATS_OPS; ++o) {
        for (p = 0; p < HIXL_STATS_PATHS; ++p) {
            bytes  += st.bytes[o][p][HIXL_STATS_COMPLETED];
            done   += st.transfers[o][p][HIXL_STATS_COMPLETED];
            failed += st.transfers[o][p][HIXL_STATS_FAILED] +
                      st.transfers[o][p][HIXL_STATS_TIMEOUT];
        }
    }
    fprintf(s->csv, "%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
            bench_stats_elapsed(s), (unsigned long long)bytes,
            (unsigned long long)done, (unsigned long long)failed,
            (unsigned long long)st.layer_signals_sent,
            (unsigned long long)st.layer_signals_received,
            (unsigned long long)st.layer_signal.count,
            (unsigned long long)st.layer_signal.sum_ns,
            (unsigned long long)st.conn_open);
}

static void *bench_stats_loop(void *arg)
{
    bench_stats_t *s = arg;
    struct timespec d = {0, BENCH_STATS_PERIOD_NS};

    while (!atomic_load(&s->stop)) {
        bench_stats_row(s);
        nanosleep(&d, NULL);
    }
    return NULL;
}

bench_stats_t *bench_stats_start(hixl_engine_t *engine, const char *role)
{
    const char *prefix = getenv("HIXL_BENCH_STATS");
    bench_stats_t *s;

    if ((prefix == NULL) || (*prefix == '\0') || (engine == NULL)) {
        return NULL;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->engine = engine;
    snprintf(s->path, sizeof(s->path), "%s-%s-%ld", prefix, role,
             (long)getpid());
    {
        char csv[620];

        snprintf(csv, sizeof(csv), "%s.csv", s->path);
        s->csv = fopen(csv, "w");
        if (s->csv == NULL) {
            fprintf(stderr, "HIXL_BENCH_STATS: cannot write %s\n", csv);
            free(s);
            return NULL;
        }
    }
    fprintf(s->csv, "t_s,bytes_completed,transfers_completed,"
            "transfers_failed,layer_signals_sent,layer_signals_received,"
            "layer_latency_count,layer_latency_sum_ns,connections_open\n");
    clock_gettime(CLOCK_MONOTONIC, &s->t0);
    atomic_init(&s->stop, 0);
    if (pthread_create(&s->thread, NULL, bench_stats_loop, s) != 0) {
        fclose(s->csv);
        free(s);
        return NULL;
    }
    return s;
}

/* bytes/s and mean layer latency per interval, from the CSV's deltas */
static void bench_stats_plot(const bench_stats_t *s)
{
    const char *gp = bc_which("gnuplot");
    char cmd[700];
    FILE *g;

    if (gp == NULL) {
        fprintf(stderr, "HIXL_BENCH_STATS: %s.csv written; no plot "
                "(gnuplot not found; Debian: apt-get install gnuplot-nox)\n",
                s->path);
        return;
    }
    snprintf(cmd, sizeof(cmd), "'%s' > /dev/null 2>&1", gp);
    g = popen(cmd, "w");
    if (g == NULL) {
        return;
    }
    fprintf(g,
            "set terminal pngcairo size 1100,700 noenhanced\n"
            "set output '%s.png'\n"
            "set datafile separator ','\n"
            "set multiplot layout 2,1 title '%s'\n"
            "set grid\nset xlabel 'seconds'\nset key off\n"
            "pt = NaN; pb = NaN; pc = NaN; ps = NaN\n"
            "rate(t, b) = (d = (t > pt) ? (b - pb) / (t - pt) : NaN, "
            "pt = t, pb = b, d)\n"
            "lat(c, sum) = (m = (c > pc) ? (sum - ps) / (c - pc) / 1e6 : "
            "NaN, pc = c, ps = sum, m)\n"
            "set title 'bytes completed per second'\nset ylabel 'MB/s'\n"
            "plot '%s.csv' every ::1 using 1:(rate($1, $2) / 1e6) "
            "with lines lw 2\n"
            "set title 'layer signal latency, mean of the interval "
            "(flush to signal)'\nset ylabel 'ms'\n"
            "plot '%s.csv' every ::1 using 1:(lat($7, $8)) with points "
            "pt 7\n"
            "unset multiplot\n", s->path, s->path, s->path, s->path);
    pclose(g);
}

void bench_stats_stop(bench_stats_t *s)
{
    if (s == NULL) {
        return;
    }
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    bench_stats_row(s);   /* the end state */
    fclose(s->csv);
    bench_stats_plot(s);
    free(s);
}
