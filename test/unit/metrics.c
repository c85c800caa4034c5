/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the engine's counters (src/core/worker/metrics.c) and their
 * Prometheus text (src/util/prom_text.c, src/ops/metrics.c).
 *
 * The text is checked against the rules of the exposition format
 * (version 0.0.4) by a small reader here, not by comparing with a copy:
 * every line ends in a newline; metric and label names match
 * [a-zA-Z_:][a-zA-Z0-9_:]*; each family has one HELP and one TYPE line
 * before its samples, and its samples are together; a counter's name ends
 * in _total; label values escape only backslash, double quote and newline;
 * no two samples of a name share their labels; a histogram has, per label
 * set, _bucket samples with increasing le and non-decreasing counts ending
 * in le="+Inf", then _sum, and _count equal to the +Inf bucket.
 */
#include "config.h"
#include "harness.h"
#include "core/worker/metrics.h"
#include "ops/metrics.h"
#include "util/prom_text.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- a reader of the format ------------------------------------------------ */

#define MAX_FAMILIES 64
#define MAX_SAMPLES  1024

typedef struct family {
    char name[128];
    char type[16];
    int  help, typed, closed;
} family_t;

typedef struct sample {
    char   name[128];
    char   labels[512];   /* canonical: as written, le="..." cut out */
    char   le[256];       /* "" when none */
    double value;
    int    family;
} sample_t;

typedef struct expo {
    family_t fam[MAX_FAMILIES];
    int      nfam;
    sample_t s[MAX_SAMPLES];
    int      ns;
} expo_t;

static int name_char(char c, int first)
{
    return ((c >= 'a') && (c <= 'z')) || ((c >= 'A') && (c <= 'Z')) ||
           (c == '_') || (c == ':') || (!first && (c >= '0') && (c <= '9'));
}

/* A name at *p (advanced past it) into out; 0 when there is none. */
static int read_name(const char **p, char *out, size_t len)
{
    size_t n = 0;

    if (!name_char(**p, 1)) {
        return 0;
    }
    while (name_char((*p)[n], n == 0)) {
        ck_assert(n + 1 < len);
        out[n] = (*p)[n];
        ++n;
    }
    out[n] = '\0';
    *p += n;
    return 1;
}

static int family_find(expo_t *e, const char *name)
{
    int i;

    for (i = 0; i < e->nfam; ++i) {
        if (strcmp(e->fam[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

/* The family a sample name belongs to (its histogram suffixes off). */
static int family_of(expo_t *e, const char *name)
{
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    char base[128];
    size_t n = strlen(name), k;
    unsigned i;
    int f = family_find(e, name);

    if (f >= 0) {
        return f;
    }
    for (i = 0; i < 3; ++i) {
        k = strlen(sfx[i]);
        if ((n > k) && (strcmp(name + n - k, sfx[i]) == 0)) {
            memcpy(base, name, n - k);
            base[n - k] = '\0';
            f = family_find(e, base);
            if ((f >= 0) && (strcmp(e->fam[f].type, "histogram") == 0)) {
                return f;
            }
        }
    }
    return -1;
}

static void parse_comment(expo_t *e, const char *line, int *last)
{
    const char *p = line + 2;
    char name[128];
    family_t *f;
    int help, i;

    if (strncmp(p, "HELP ", 5) == 0) {
        help = 1;
    } else if (strncmp(p, "TYPE ", 5) == 0) {
        help = 0;
    } else {
        return;   /* a plain comment */
    }
    p += 5;
    ck_assert_msg(read_name(&p, name, sizeof(name)), "bad name: %s", line);
    ck_assert_msg(*p == ' ', "no space after the name: %s", line);
    ++p;
    i = family_find(e, name);
    if (i < 0) {
        ck_assert(e->nfam < MAX_FAMILIES);
        i = e->nfam++;
        snprintf(e->fam[i].name, sizeof(e->fam[i].name), "%s", name);
    }
    f = &e->fam[i];
    ck_assert_msg(!f->closed, "%s described after its samples", name);
    if (*last >= 0) {
        e->fam[*last].closed = (*last != i);
    }
    *last = i;
    if (help) {
        ck_assert_msg(!f->help, "two HELP lines for %s", name);
        f->help = 1;
        /* HELP escapes backslash and newline only */
        for (; *p != '\0'; ++p) {
            if (*p == '\\') {
                ++p;
                ck_assert_msg((*p == '\\') || (*p == 'n'), "bad escape in "
                              "HELP of %s", name);
            }
        }
        return;
    }
    ck_assert_msg(!f->typed, "two TYPE lines for %s", name);
    ck_assert_msg(!strcmp(p, "counter") || !strcmp(p, "gauge") ||
                  !strcmp(p, "histogram") || !strcmp(p, "summary") ||
                  !strcmp(p, "untyped"), "bad type %s of %s", p, name);
    f->typed = 1;
    snprintf(f->type, sizeof(f->type), "%s", p);
}

static void parse_sample(expo_t *e, const char *line, int *last)
{
    const char *p = line;
    char lname[128], value[256];
    sample_t *s;
    size_t lv;
    char *end;
    int i;

    ck_assert(e->ns < MAX_SAMPLES);
    s = &e->s[e->ns++];
    memset(s, 0, sizeof(*s));
    ck_assert_msg(read_name(&p, s->name, sizeof(s->name)), "bad metric "
                  "name: %s", line);
    if (*p == '{') {
        ++p;
        while (*p != '}') {
            ck_assert_msg(read_name(&p, lname, sizeof(lname)), "bad label "
                          "name: %s", line);
            ck_assert_msg((p[0] == '=') && (p[1] == '"'), "bad label: %s",
                          line);
            p += 2;
            lv = 0;
            while (*p != '"') {
                ck_assert_msg(*p != '\0', "unterminated label value: %s",
                              line);
                ck_assert_msg(*p != '\n', "raw newline in a value: %s", line);
                if (*p == '\\') {
                    ck_assert_msg((p[1] == '\\') || (p[1] == '"') ||
                                  (p[1] == 'n'), "bad escape: %s", line);
                    value[lv++] = (p[1] == 'n') ? '\n' : p[1];
                    p += 2;
                } else {
                    value[lv++] = *p++;
                }
                ck_assert(lv < sizeof(value));
            }
            value[lv] = '\0';
            ++p;
            if (strcmp(lname, "le") == 0) {
                snprintf(s->le, sizeof(s->le), "%s", value);
            } else {
                i = snprintf(s->labels + strlen(s->labels),
                             sizeof(s->labels) - strlen(s->labels),
                             "%s=%s;", lname, value);
                ck_assert(i > 0);
            }
            if (*p == ',') {
                ++p;
            } else {
                ck_assert_msg(*p == '}', "bad label list: %s", line);
            }
        }
        ++p;
    }
    ck_assert_msg(*p == ' ', "no space before the value: %s", line);
    ++p;
    s->value = strtod(p, &end);
    ck_assert_msg((end != p) && (*end == '\0'), "bad value: %s", line);
    s->family = family_of(e, s->name);
    ck_assert_msg(s->family >= 0, "sample of no family: %s", line);
    ck_assert_msg(e->fam[s->family].help && e->fam[s->family].typed,
                  "sample before HELP and TYPE: %s", line);
    ck_assert_msg(!e->fam[s->family].closed, "samples of %s not together",
                  e->fam[s->family].name);
    if ((*last >= 0) && (*last != s->family)) {
        e->fam[*last].closed = 1;
    }
    *last = s->family;
}

static void check_histograms(expo_t *e)
{
    char want[160];
    double prev_le, prev, inf;
    int f, i, j, seen_sum, seen_count;

    for (f = 0; f < e->nfam; ++f) {
        if (strcmp(e->fam[f].type, "histogram") != 0) {
            continue;
        }
        /* per label set: the _bucket samples in order */
        for (i = 0; i < e->ns; ++i) {
            if ((e->s[i].family != f) ||
                (strstr(e->s[i].name, "_bucket") == NULL) ||
                ((i > 0) && (e->s[i - 1].family == f) &&
                 !strcmp(e->s[i - 1].labels, e->s[i].labels) &&
                 strstr(e->s[i - 1].name, "_bucket"))) {
                continue;   /* not the first bucket of a series */
            }
            prev_le = -INFINITY;
            prev    = 0;
            inf     = -1;
            for (j = i; (j < e->ns) && (e->s[j].family == f) &&
                        !strcmp(e->s[j].labels, e->s[i].labels) &&
                        strstr(e->s[j].name, "_bucket"); ++j) {
                double le = strcmp(e->s[j].le, "+Inf") ? atof(e->s[j].le) :
                                                         INFINITY;

                ck_assert_msg(e->s[j].le[0] != '\0', "bucket without le");
                ck_assert_msg(le > prev_le, "%s{%s}: le %s not increasing",
                              e->s[j].name, e->s[j].labels, e->s[j].le);
                ck_assert_msg(e->s[j].value >= prev, "%s{%s}: bucket counts "
                              "decrease at le %s", e->s[j].name,
                              e->s[j].labels, e->s[j].le);
                prev_le = le;
                prev    = e->s[j].value;
                if (isinf(le)) {
                    inf = e->s[j].value;
                }
            }
            ck_assert_msg(isinf(prev_le), "%s{%s}: the last bucket is not "
                          "+Inf", e->fam[f].name, e->s[i].labels);
            seen_sum = seen_count = 0;
            for (j = 0; j < e->ns; ++j) {
                if ((e->s[j].family != f) ||
                    strcmp(e->s[j].labels, e->s[i].labels)) {
                    continue;
                }
                snprintf(want, sizeof(want), "%s_sum", e->fam[f].name);
                seen_sum += !strcmp(e->s[j].name, want);
                snprintf(want, sizeof(want), "%s_count", e->fam[f].name);
                if (!strcmp(e->s[j].name, want)) {
                    ++seen_count;
                    ck_assert_msg(e->s[j].value == inf, "%s{%s}: _count %g, "
                                  "+Inf bucket %g", e->fam[f].name,
                                  e->s[i].labels, e->s[j].value, inf);
                }
            }
            ck_assert_msg((seen_sum == 1) && (seen_count == 1),
                          "%s{%s}: _sum %d, _count %d", e->fam[f].name,
                          e->s[i].labels, seen_sum, seen_count);
        }
    }
}

/* Read text by the rules; *e holds what it found. */
static void check_exposition(const char *text, expo_t *e)
{
    char *copy = strdup(text), *line, *next;
    int last = -1, i, j;

    memset(e, 0, sizeof(*e));
    ck_assert(copy != NULL);
    ck_assert_msg((text[0] != '\0') && (text[strlen(text) - 1] == '\n'),
                  "the text does not end in a newline");
    for (line = copy; *line != '\0'; line = next) {
        next = strchr(line, '\n');
        ck_assert(next != NULL);
        *next++ = '\0';
        ck_assert_msg(line[0] != '\0', "an empty line");
        if (line[0] == '#') {
            parse_comment(e, line, &last);
        } else {
            parse_sample(e, line, &last);
        }
    }
    free(copy);
    for (i = 0; i < e->nfam; ++i) {
        ck_assert_msg(e->fam[i].help && e->fam[i].typed, "%s lacks HELP or "
                      "TYPE", e->fam[i].name);
        if (!strcmp(e->fam[i].type, "counter")) {
            ck_assert_msg(strlen(e->fam[i].name) > 6 &&
                          !strcmp(e->fam[i].name + strlen(e->fam[i].name) - 6,
                                  "_total"), "counter %s does not end in "
                          "_total", e->fam[i].name);
        }
    }
    for (i = 0; i < e->ns; ++i) {
        for (j = i + 1; j < e->ns; ++j) {
            ck_assert_msg(strcmp(e->s[i].name, e->s[j].name) ||
                          strcmp(e->s[i].labels, e->s[j].labels) ||
                          strcmp(e->s[i].le, e->s[j].le),
                          "two samples %s{%s}", e->s[i].name, e->s[i].labels);
        }
    }
    check_histograms(e);
}

/* The value of name{labels} ("k=v;" each, in order), or -1. */
static double value_of(const expo_t *e, const char *name, const char *labels)
{
    int i;

    for (i = 0; i < e->ns; ++i) {
        if (!strcmp(e->s[i].name, name) && !strcmp(e->s[i].labels, labels) &&
            (e->s[i].le[0] == '\0')) {
            return e->s[i].value;
        }
    }
    return -1;
}

/* ---- the tests ------------------------------------------------------------- */

/* The text of a snapshot of m with its gauges set. */
static char *format(hixl_metrics_t *m, const char *engine, expo_t *e)
{
    hixl_stats_t st;
    size_t need;
    char *buf;

    memset(&st, 0, sizeof(st));
    hixl_metrics_read(m, &st);
    st.conn_open    = 3;
    st.regions      = 2;
    st.region_bytes = 1 << 20;
    need = hixl_stats_format(&st, engine, NULL, 0);
    buf  = malloc(need + 1);
    ck_assert(buf != NULL);
    ck_assert_uint_eq(hixl_stats_format(&st, engine, buf, need + 1), need);
    ck_assert_uint_eq(strlen(buf), need);
    check_exposition(buf, e);
    return buf;
}

START_TEST(test_empty_engine)
{
    hixl_metrics_t *m = hixl_metrics_create();
    expo_t *e = malloc(sizeof(*e));
    char *text;

    ck_assert((m != NULL) && (e != NULL));
    text = format(m, "127.0.0.1:16000", e);
    ck_assert_double_eq(value_of(e, "hixl_engine_info",
                                 "engine=127.0.0.1:16000;version="
                                 PACKAGE_VERSION ";"), 1);
    ck_assert_double_eq(value_of(e, "hixl_transfers_total",
                                 "op=write;path=rma;outcome=completed;"), 0);
    ck_assert_double_eq(value_of(e, "hixl_connections_open", ""), 3);
    ck_assert_double_eq(value_of(e, "hixl_registered_bytes", ""), 1 << 20);
    ck_assert_double_eq(value_of(e, "hixl_transfer_latency_seconds_count",
                                 "op=read;"), 0);
    free(text);
    free(e);
    hixl_metrics_free(m);
}
END_TEST

START_TEST(test_counts_and_buckets)
{
    hixl_metrics_t *m = hixl_metrics_create();
    expo_t *e = malloc(sizeof(*e));
    uint64_t bytes[HIXL_STATS_PATHS] = {65536, 4096, 0, 0, 0, 100};
    char *text;

    ck_assert((m != NULL) && (e != NULL));
    /* a write over rma and am at once, 3 us */
    hixl_metrics_transfer(m, HIXL_WRITE, (1u << 0) | (1u << 1), bytes,
                          HIXL_STATS_COMPLETED, 3000);
    /* a failed staged write: no latency */
    hixl_metrics_transfer(m, HIXL_WRITE, 1u << 5, bytes, HIXL_STATS_FAILED,
                          UINT64_MAX);
    /* reads at a bucket's bound, past the last bound, and at 0 */
    hixl_metrics_transfer(m, HIXL_READ, 1u, bytes, HIXL_STATS_COMPLETED,
                          1000);
    hixl_metrics_transfer(m, HIXL_READ, 1u, bytes, HIXL_STATS_COMPLETED,
                          20000000000ull);
    hixl_metrics_transfer(m, HIXL_READ, 1u, bytes, HIXL_STATS_COMPLETED, 0);
    hixl_metrics_count(m, HIXL_MX_CLOSED + HIXL_STATS_CLOSED_PEER_DEATH, 2);
    hixl_metrics_count(m, HIXL_MX_REFUSED + HIXL_STATS_REFUSED_VERSION, 1);
    hixl_metrics_layer_signal(m, 42000);

    text = format(m, "eng", e);
    ck_assert_double_eq(value_of(e, "hixl_transfers_total",
                                 "op=write;path=rma;outcome=completed;"), 1);
    ck_assert_double_eq(value_of(e, "hixl_transfers_total",
                                 "op=write;path=am;outcome=completed;"), 1);
    ck_assert_double_eq(value_of(e, "hixl_transfer_bytes_total",
                                 "op=write;path=am;outcome=completed;"), 4096);
    ck_assert_double_eq(value_of(e, "hixl_transfer_bytes_total",
                                 "op=write;path=staging;outcome=failed;"),
                        100);
    ck_assert_double_eq(value_of(e, "hixl_transfers_total",
                                 "op=read;path=rma;outcome=completed;"), 3);
    ck_assert_double_eq(value_of(e, "hixl_transfer_latency_seconds_count",
                                 "op=write;"), 1);
    ck_assert_double_eq(value_of(e, "hixl_transfer_latency_seconds_count",
                                 "op=read;"), 3);
    ck_assert_double_eq(value_of(e, "hixl_transfer_latency_seconds_sum",
                                 "op=read;"), 20.000001);
    ck_assert_double_eq(value_of(e, "hixl_connections_closed_total",
                                 "reason=peer_death;"), 2);
    ck_assert_double_eq(value_of(e, "hixl_connections_refused_total",
                                 "reason=version;"), 1);
    ck_assert_double_eq(value_of(e, "hixl_layer_signals_sent_total", ""), 1);
    ck_assert_double_eq(value_of(e, "hixl_layer_signal_latency_seconds_count",
                                 ""), 1);
    /* 1 us is in the 1e-06 bucket (le is inclusive), 0 too */
    ck_assert_ptr_nonnull(strstr(text, "hixl_transfer_latency_seconds_bucket"
                                 "{op=\"read\",le=\"1e-06\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(text, "hixl_transfer_latency_seconds_bucket"
                                 "{op=\"read\",le=\"10\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(text, "hixl_transfer_latency_seconds_bucket"
                                 "{op=\"read\",le=\"+Inf\"} 3\n"));
    free(text);
    free(e);
    hixl_metrics_free(m);
}
END_TEST

START_TEST(test_label_escaping)
{
    hixl_metrics_t *m = hixl_metrics_create();
    expo_t *e = malloc(sizeof(*e));
    char *text;

    ck_assert((m != NULL) && (e != NULL));
    text = format(m, "we\"ird\\na\nme", e);
    ck_assert_ptr_nonnull(strstr(text, "engine=\"we\\\"ird\\\\na\\nme\""));
    /* and the reader gives back the name as it was */
    ck_assert_double_eq(value_of(e, "hixl_engine_info", "engine=we\"ird\\na"
                                 "\nme;version=" PACKAGE_VERSION ";"), 1);
    free(text);
    free(e);
    hixl_metrics_free(m);
}
END_TEST

START_TEST(test_short_buffer)
{
    hixl_stats_t st;
    char full[65536], part[200];
    size_t need;

    memset(&st, 0, sizeof(st));
    need = hixl_stats_format(&st, "eng", full, sizeof(full));
    ck_assert_uint_lt(need, sizeof(full));
    /* snprintf-like: the same length, a NUL-terminated prefix */
    memset(part, 'x', sizeof(part));
    ck_assert_uint_eq(hixl_stats_format(&st, "eng", part, sizeof(part)),
                      need);
    ck_assert_uint_eq(strlen(part), sizeof(part) - 1);
    ck_assert(strncmp(part, full, sizeof(part) - 1) == 0);
    ck_assert_uint_eq(hixl_stats_format(&st, "eng", part, 1), need);
    ck_assert_str_eq(part, "");
}
END_TEST

START_TEST(test_names)
{
    ck_assert(hixl_prom_name_ok("hixl_transfers_total"));
    ck_assert(hixl_prom_name_ok("a:b_c9"));
    ck_assert(!hixl_prom_name_ok("9abc"));
    ck_assert(!hixl_prom_name_ok("a-b"));
    ck_assert(!hixl_prom_name_ok(""));
}
END_TEST

/* Counters from many threads: the shards sum to every count. */
#define THREADS 6
#define EACH    20000

static void *count_many(void *arg)
{
    hixl_metrics_t *m = arg;
    uint64_t bytes[HIXL_STATS_PATHS] = {7, 0, 0, 0, 0, 0};
    int i;

    for (i = 0; i < EACH; ++i) {
        hixl_metrics_transfer(m, HIXL_WRITE, 1u, bytes, HIXL_STATS_COMPLETED,
                              (uint64_t)i);
        hixl_metrics_count(m, HIXL_MX_NOTIFY_SENT, 1);
    }
    return NULL;
}

START_TEST(test_threads_sum)
{
    hixl_metrics_t *m = hixl_metrics_create();
    pthread_t t[THREADS];
    hixl_stats_t st;
    uint64_t b, total = 0;
    int i;

    ck_assert(m != NULL);
    for (i = 0; i < THREADS; ++i) {
        ck_assert_int_eq(pthread_create(&t[i], NULL, count_many, m), 0);
    }
    for (i = 0; i < THREADS; ++i) {
        pthread_join(t[i], NULL);
    }
    memset(&st, 0, sizeof(st));
    hixl_metrics_read(m, &st);
    ck_assert_uint_eq(st.transfers[HIXL_WRITE][0][0], THREADS * EACH);
    ck_assert_uint_eq(st.bytes[HIXL_WRITE][0][0], 7ull * THREADS * EACH);
    ck_assert_uint_eq(st.notifies_sent, THREADS * EACH);
    ck_assert_uint_eq(st.latency[HIXL_WRITE].count, THREADS * EACH);
    for (b = 0; b < HIXL_STATS_BUCKETS; ++b) {
        total += st.latency[HIXL_WRITE].bucket[b];
    }
    ck_assert_uint_eq(total, THREADS * EACH);
    ck_assert_uint_eq(st.latency[HIXL_WRITE].sum_ns,
                      (uint64_t)THREADS * EACH * (EACH - 1) / 2);
    hixl_metrics_free(m);
}
END_TEST

static Suite *unit_metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = hx_tcase("metrics");

    tcase_add_test(tc, test_empty_engine);
    tcase_add_test(tc, test_counts_and_buckets);
    tcase_add_test(tc, test_label_escaping);
    tcase_add_test(tc, test_short_buffer);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_threads_sum);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_metrics_suite());
}
