/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the option table (src/options.c) through hixl_opts_load() and
 * hixl_config_print().
 *
 * The rows this file knows are listed in known_opts[] with their documented
 * environment twin, default and range: those are checked value by value.
 * Rows added later are still covered generically: hixl_config_print's
 * output is parsed and every row it prints must take its environment twin
 * and an option (source "env" / "option"), so a new row cannot miss either.
 */
#include "config.h"
#include "harness.h"
#include "util/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { K_BOOL, K_INT, K_LEVEL, K_POOL, K_OTHER } kind_t;

typedef struct known_opt {
    const char *key;
    const char *env;
    kind_t      kind;
    const char *dflt;
    int64_t     min, max;
    size_t      offset;   /* of the int32/uint32 field */
} known_opt_t;

#define F(_m) offsetof(hixl_opts_t, _m)

static const known_opt_t known_opts[] = {
    {"BufferPool", "HIXL_BUFFER_POOL", K_POOL, "4:8", 0, 0, 0},
    {"RdmaTrafficClass", "HIXL_RDMA_TRAFFIC_CLASS", K_INT, "-1", -1, 252,
     F(rdma_traffic_class)},
    {"RdmaServiceLevel", "HIXL_RDMA_SERVICE_LEVEL", K_INT, "-1", -1, 7,
     F(rdma_service_level)},
    {"AutoConnect", "HIXL_AUTO_CONNECT", K_BOOL, "0", 0, 1, F(auto_connect)},
    {"hixl.ProgressThread", "HIXL_PROGRESS_THREAD", K_BOOL, "1", 0, 1,
     F(progress_thread)},
    {"hixl.ProgressSpinUs", "HIXL_PROGRESS_SPIN_US", K_INT, "200", 0,
     10000000, F(progress_spin_us)},
    {"hixl.ListenEphemeral", "HIXL_LISTEN_EPHEMERAL", K_BOOL, "0", 0, 1,
     F(listen_ephemeral)},
    {"hixl.ConnectTimeoutMs", "HIXL_CONNECT_TIMEOUT_MS", K_INT, "3000", 1,
     INT32_MAX, F(connect_timeout_ms)},
    {"hixl.TransferTimeoutMs", "HIXL_TRANSFER_TIMEOUT_MS", K_INT, "30000", 1,
     INT32_MAX, F(transfer_timeout_ms)},
    {"hixl.MaxRequests", "HIXL_MAX_REQUESTS", K_INT, "16384", 1, 1 << 24,
     F(max_requests)},
    {"hixl.NotifyQueueDepth", "HIXL_NOTIFY_QUEUE_DEPTH", K_INT, "4096", 1,
     1 << 24, F(notify_queue_depth)},
    {"hixl.MaxNotifySize", "HIXL_MAX_NOTIFY_SIZE", K_INT, "65536", 0,
     1 << 24, F(max_notify_size)},
    {"hixl.MaxRemoteRegions", "HIXL_MAX_REMOTE_REGIONS", K_INT, "65536", 1,
     1 << 24, F(max_remote_regions)},
    {"hixl.MaxStreams", "HIXL_MAX_STREAMS", K_INT, "1024", 1, 1 << 20,
     F(max_streams)},
    {"hixl.MaxLayers", "HIXL_MAX_LAYERS", K_INT, "256", 1, 1 << 16,
     F(max_layers)},
    {"hixl.LogLevel", "HIXL_LOG_LEVEL", K_LEVEL, "warn", 0, 4, F(log_level)},
};
#define NKNOWN (sizeof(known_opts) / sizeof(known_opts[0]))

/* int32 and uint32 fields alike (the ranges here fit both). */
static int64_t field(const hixl_opts_t *o, const known_opt_t *k)
{
    const char *p = (const char*)o + k->offset;

    if ((k->min < 0) || (k->kind == K_BOOL) || (k->kind == K_LEVEL)) {
        return *(const int32_t*)p;
    }
    return *(const uint32_t*)p;
}

/* Row index of a key in the table, from hixl_config_print's order. */
static size_t row_of(const char *key);

static hixl_status_t load1(hixl_opts_t *o, const char *key, const char *value)
{
    hixl_option_t opt = {key, value};

    return hixl_opts_load(o, &opt, 1, NULL, NULL);
}

/* ---- defaults ------------------------------------------------------------- */

/* The harness empties HIXL_PLUGIN_INSTALL_DIR for every test (an
 * installed copy's plugins stay out); these tests look at every row's
 * default, and load no plugin. */
static void no_option_env(void)
{
    unsetenv("HIXL_PLUGIN_INSTALL_DIR");
}

START_TEST(test_defaults)
{
    size_t n = hixl_opts_count();
    hixl_opt_source_t *src = calloc(n, sizeof(*src));
    const char **val = calloc(n, sizeof(*val));
    hixl_opts_t o;
    size_t i, r;
    int64_t v;

    ck_assert(src && val);
    hx_ok(hixl_opts_load(&o, NULL, 0, src, val));
    for (i = 0; i < n; ++i) {
        ck_assert_int_eq(src[i], HIXL_OPT_DEFAULT);
        ck_assert_ptr_nonnull(val[i]);
    }
    for (i = 0; i < NKNOWN; ++i) {
        r = row_of(known_opts[i].key);
        ck_assert_msg(r < n, "row %s missing", known_opts[i].key);
        ck_assert_str_eq(val[r], known_opts[i].dflt);
        if (known_opts[i].kind == K_POOL) {
            continue;
        }
        v = field(&o, &known_opts[i]);
        if (known_opts[i].kind == K_LEVEL) {
            ck_assert_int_eq(v, 1);   /* warn */
        } else {
            ck_assert_msg(v == strtoll(known_opts[i].dflt, NULL, 0),
                          "%s = %lld, default %s", known_opts[i].key,
                          (long long)v, known_opts[i].dflt);
        }
    }
    ck_assert_uint_eq(o.buffer_pool_count, 4);
    ck_assert_uint_eq(o.buffer_pool_mib, 8);
    /* no options: options may be NULL */
    hx_ok(hixl_opts_load(&o, NULL, 0, NULL, NULL));
    free(src);
    free(val);
}
END_TEST

/* ---- ranges and values --------------------------------------------------------- */

/* Every numeric key takes its min and max and refuses one beyond each;
 * garbage and trailing junk are refused; each refusal names key and env. */
START_TEST(test_ranges)
{
    hixl_opts_t o;
    char v[64], msg[1024];
    size_t i;

    for (i = 0; i < NKNOWN; ++i) {
        const known_opt_t *k = &known_opts[i];

        if (k->kind != K_INT) {
            continue;
        }
        snprintf(v, sizeof(v), "%lld", (long long)k->min);
        hx_ok(load1(&o, k->key, v));
        ck_assert_int_eq(field(&o, k), k->min);
        snprintf(v, sizeof(v), "%lld", (long long)k->max);
        hx_ok(load1(&o, k->key, v));
        ck_assert_int_eq(field(&o, k), k->max);

        snprintf(v, sizeof(v), "%lld", (long long)k->min - 1);
        hx_mark_last_error();
        ck_assert_msg(hx_expect_eval("min - 1", load1(&o, k->key, v),
                                     HIXL_PARAM_INVALID, k->key, msg,
                                     sizeof(msg)) == 0, "%s: %s", k->key, msg);
        /* a value from the options array is reported as an option, never
         * as coming from the environment variable */
        ck_assert_msg(!strncmp(hixl_last_error(), "option ", 7) &&
                      (strstr(hixl_last_error(), k->env) == NULL), "%s",
                      hixl_last_error());
        snprintf(v, sizeof(v), "%lld", (long long)k->max + 1);
        hx_expect(load1(&o, k->key, v), HIXL_PARAM_INVALID, k->key);
        hx_expect(load1(&o, k->key, "12abc"), HIXL_PARAM_INVALID, k->key);
        hx_expect(load1(&o, k->key, "abc"), HIXL_PARAM_INVALID, k->key);
        if (strncmp(k->key, "Rdma", 4) != 0) {
            hx_expect(load1(&o, k->key, ""), HIXL_PARAM_INVALID, k->key);
        } else {
            /* CANN hixl: "" is unset (then HCCL_RDMA_TC / _SL) */
            hx_ok(load1(&o, k->key, ""));
            ck_assert_int_eq(field(&o, k), -1);
        }
        hx_expect(load1(&o, k->key, "99999999999999999999999"),
                  HIXL_PARAM_INVALID, k->key);
        hx_expect(load1(&o, k->key, "1.5"), HIXL_PARAM_INVALID, k->key);
    }

    /* RdmaTrafficClass: multiples of 4 only (DSCP << 2), -1 for default */
    hx_ok(load1(&o, "RdmaTrafficClass", "8"));
    ck_assert_int_eq(o.rdma_traffic_class, 8);
    hx_ok(load1(&o, "RdmaTrafficClass", "0"));
    hx_expect(load1(&o, "RdmaTrafficClass", "5"), HIXL_PARAM_INVALID,
              "multiple of 4");
    hx_expect(load1(&o, "RdmaTrafficClass", "255"), HIXL_PARAM_INVALID,
              NULL);
    hx_expect(load1(&o, "RdmaTrafficClass", "256"), HIXL_PARAM_INVALID,
              NULL);
    hx_expect(load1(&o, "RdmaTrafficClass", "-4"), HIXL_PARAM_INVALID, NULL);
}
END_TEST

START_TEST(test_bools_and_levels)
{
    static const char *const yes[] = {"1", "true", "TRUE", "yes", "Yes", "on",
                                      "ON"};
    static const char *const no[] = {"0", "false", "False", "no", "NO", "off",
                                     "Off"};
    static const char *const bad[] = {"2", "-1", "y", "n", "tru", "", " 1",
                                      "enable"};
    static const char *const levels[] = {"error", "warn", "info", "debug",
                                         "trace"};
    hixl_opts_t o;
    size_t i;

    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); ++i) {
        hx_ok(load1(&o, "AutoConnect", yes[i]));
        ck_assert_int_eq(o.auto_connect, 1);
    }
    for (i = 0; i < sizeof(no) / sizeof(no[0]); ++i) {
        hx_ok(load1(&o, "hixl.ProgressThread", no[i]));
        ck_assert_int_eq(o.progress_thread, 0);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        hx_expect(load1(&o, "hixl.ListenEphemeral", bad[i]),
                  HIXL_PARAM_INVALID, "hixl.ListenEphemeral");
    }
    for (i = 0; i < 5; ++i) {
        hx_ok(load1(&o, "hixl.LogLevel", levels[i]));
        ck_assert_int_eq(o.log_level, (int)i);
    }
    hx_ok(load1(&o, "hixl.LogLevel", "DEBUG"));
    ck_assert_int_eq(o.log_level, 3);
    hx_expect(load1(&o, "hixl.LogLevel", "verbose"), HIXL_PARAM_INVALID,
              "hixl.LogLevel");
    hx_expect(load1(&o, "hixl.LogLevel", "3"), HIXL_PARAM_INVALID, NULL);
}
END_TEST

/* BufferPool is "count:MiB", count 1..4096, MiB 1..65536, or "0:0". */
START_TEST(test_buffer_pool)
{
    static const struct { const char *v; uint32_t count, mib; } good[] = {
        {"4:8", 4, 8}, {"0:0", 0, 0}, {"1:1", 1, 1}, {"4096:65536", 4096, 65536},
        {"16:2", 16, 2},
    };
    static const char *const bad[] = {
        "4", "4:", ":8", ":", "", "0:8", "4:0", "4097:1", "1:65537", "-1:4",
        "4:-1", "a:b", "4:8:1", "4:8x", "4x:8",
        "99999999999999999999999999999999999999:1",
    };
    hixl_opts_t o;
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        hx_ok(load1(&o, "BufferPool", good[i].v));
        ck_assert_uint_eq(o.buffer_pool_count, good[i].count);
        ck_assert_uint_eq(o.buffer_pool_mib, good[i].mib);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        hx_expect(load1(&o, "BufferPool", bad[i]), HIXL_PARAM_INVALID,
                  "BufferPool");
    }
}
END_TEST

/* ---- precedence ------------------------------------------------------------------ */

/* default < environment < option, per key, with sources and values. */
START_TEST(test_env_and_precedence)
{
    size_t n = hixl_opts_count();
    hixl_opt_source_t *src = calloc(n, sizeof(*src));
    const char **val = calloc(n, sizeof(*val));
    hixl_option_t opts[2];
    hixl_opts_t o;
    size_t r_mr, r_nq, r_pt;

    ck_assert(src && val);
    r_mr = row_of("hixl.MaxRequests");
    r_nq = row_of("hixl.NotifyQueueDepth");
    r_pt = row_of("hixl.ProgressThread");

    ck_assert_int_eq(setenv("HIXL_MAX_REQUESTS", "77", 1), 0);
    ck_assert_int_eq(setenv("HIXL_NOTIFY_QUEUE_DEPTH", "5", 1), 0);
    ck_assert_int_eq(setenv("HIXL_PROGRESS_THREAD", "", 1), 0);  /* empty: unset */
    opts[0].key = "hixl.NotifyQueueDepth"; opts[0].value = "9";
    hx_ok(hixl_opts_load(&o, opts, 1, src, val));
    ck_assert_uint_eq(o.max_requests, 77);
    ck_assert_int_eq(src[r_mr], HIXL_OPT_ENV);
    ck_assert_str_eq(val[r_mr], "77");
    ck_assert_uint_eq(o.notify_queue_depth, 9);
    ck_assert_int_eq(src[r_nq], HIXL_OPT_OPTION);
    ck_assert_str_eq(val[r_nq], "9");
    ck_assert_int_eq(o.progress_thread, 1);
    ck_assert_int_eq(src[r_pt], HIXL_OPT_DEFAULT);

    /* except where "" is a value: an empty HIXL_PLUGIN_INSTALL_DIR keeps
     * the installed plugins out (what make check relies on after a make
     * install) */
    ck_assert_int_eq(setenv("HIXL_PLUGIN_INSTALL_DIR", "", 1), 0);
    hx_ok(hixl_opts_load(&o, NULL, 0, src, val));
    ck_assert_str_eq(o.plugin_install_dir, "");
    ck_assert_int_eq(src[row_of("hixl.PluginInstallDir")], HIXL_OPT_ENV);
    ck_assert_int_eq(unsetenv("HIXL_PLUGIN_INSTALL_DIR"), 0);

    /* the metrics endpoint: off by default, from the environment, and the
     * option over it */
    hx_ok(hixl_opts_load(&o, NULL, 0, NULL, NULL));
    ck_assert_str_eq(o.metrics_listen, "");
    ck_assert_int_eq(setenv("HIXL_METRICS_LISTEN", "127.0.0.1:9464", 1), 0);
    hx_ok(hixl_opts_load(&o, NULL, 0, src, val));
    ck_assert_str_eq(o.metrics_listen, "127.0.0.1:9464");
    ck_assert_int_eq(src[row_of("hixl.MetricsListen")], HIXL_OPT_ENV);
    opts[0].key = "hixl.MetricsListen"; opts[0].value = "[::1]:0";
    hx_ok(hixl_opts_load(&o, opts, 1, NULL, NULL));
    ck_assert_str_eq(o.metrics_listen, "[::1]:0");
    ck_assert_int_eq(unsetenv("HIXL_METRICS_LISTEN"), 0);
    opts[0].key = "hixl.NotifyQueueDepth"; opts[0].value = "9";

    /* the same key twice: the last one wins */
    opts[1].key = "hixl.NotifyQueueDepth"; opts[1].value = "11";
    hx_ok(hixl_opts_load(&o, opts, 2, src, val));
    ck_assert_uint_eq(o.notify_queue_depth, 11);
    ck_assert_str_eq(val[r_nq], "11");

    /* a bad environment value is refused, naming the variable as one */
    ck_assert_int_eq(setenv("HIXL_MAX_REQUESTS", "0", 1), 0);
    hx_expect(hixl_opts_load(&o, NULL, 0, NULL, NULL), HIXL_PARAM_INVALID,
              "environment variable HIXL_MAX_REQUESTS");
    /* and a bad option over a good variable is the option's fault */
    ck_assert_int_eq(setenv("HIXL_MAX_REQUESTS", "5", 1), 0);
    opts[0].key = "hixl.MaxRequests"; opts[0].value = "0";
    hx_expect(hixl_opts_load(&o, opts, 1, NULL, NULL), HIXL_PARAM_INVALID,
              "option hixl.MaxRequests = \"0\"");
    ck_assert_ptr_null(strstr(hixl_last_error(), "environment"));
    hx_clear_hixl_env();
    free(src);
    free(val);
}
END_TEST

START_TEST(test_bad_options)
{
    hixl_option_t opts[3] = {{"hixl.MaxRequests", "8"}, {NULL, NULL},
                             {NULL, NULL}};
    hixl_opts_t o;

    hx_expect(hixl_opts_load(&o, NULL, 1, NULL, NULL), HIXL_PARAM_INVALID,
              NULL);
    opts[1].key = "hixl.NoSuchThing"; opts[1].value = "1";
    hx_expect(hixl_opts_load(&o, opts, 2, NULL, NULL), HIXL_PARAM_INVALID,
              "hixl.NoSuchThing");
    opts[1].key = "";
    hx_expect(hixl_opts_load(&o, opts, 2, NULL, NULL), HIXL_PARAM_INVALID,
              NULL);
    /* keys are case-sensitive, and environment names are not keys */
    opts[1].key = "HIXL_MAX_REQUESTS";
    hx_expect(hixl_opts_load(&o, opts, 2, NULL, NULL), HIXL_PARAM_INVALID,
              "HIXL_MAX_REQUESTS");
    opts[1].key = "hixl.maxrequests";
    hx_expect(hixl_opts_load(&o, opts, 2, NULL, NULL), HIXL_PARAM_INVALID,
              NULL);
    opts[1].key = NULL; opts[1].value = "1";
    hx_expect(hixl_opts_load(&o, opts, 2, NULL, NULL), HIXL_PARAM_INVALID,
              "option 1");
    opts[1].key = "hixl.MaxRequests"; opts[1].value = NULL;
    hx_expect(hixl_opts_load(&o, opts, 2, NULL, NULL), HIXL_PARAM_INVALID,
              "option 1");
}
END_TEST

/* ---- hixl_config_print ------------------------------------------------------------ */

typedef struct printed {
    char   key[64];
    char   env[64];
    char   value[64];
    char   source[16];
} printed_t;

/* Parse hixl_config_print's output: "key env = value (source)" lines, each
 * followed by an indented help line.  The value may be empty (a string
 * option without a default) or itself in parentheses (a masked secret), so
 * the source is taken from the last parentheses of the line. */
static size_t config_rows(const hixl_option_t *opts, size_t n, printed_t *out,
                          size_t max)
{
    char *buf = NULL, *line, *save = NULL, *eq, *lp, *rp, *v, *e;
    size_t len = 0, rows = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    hx_ok(hixl_config_print(f, opts, n));
    fclose(f);
    for (line = strtok_r(buf, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        printed_t p;

        if ((line[0] == ' ') || (line[0] == '\0')) {
            continue;   /* help text */
        }
        memset(&p, 0, sizeof(p));
        eq = strstr(line, " = ");
        lp = strrchr(line, '(');
        rp = strrchr(line, ')');
        ck_assert_msg((sscanf(line, "%63s %63s", p.key, p.env) == 2) &&
                      (eq != NULL) && (lp != NULL) && (rp != NULL) &&
                      (lp > eq) && (rp > lp) && ((size_t)(rp - lp) < 16),
                      "unparsable config line: \"%s\"", line);
        for (v = eq + 3; *v == ' '; ++v) {
        }
        for (e = lp; (e > v) && (e[-1] == ' '); --e) {
        }
        ck_assert_uint_lt((size_t)(e - v), sizeof(p.value));
        memcpy(p.value, v, (size_t)(e - v));
        memcpy(p.source, lp + 1, (size_t)(rp - lp - 1));
        ck_assert_uint_lt(rows, max);
        out[rows++] = p;
    }
    free(buf);
    return rows;
}

static size_t row_of(const char *key)
{
    printed_t rows[128];
    size_t n = config_rows(NULL, 0, rows, 128), i;

    for (i = 0; i < n; ++i) {
        if (!strcmp(rows[i].key, key)) {
            return i;
        }
    }
    return (size_t)-1;
}

/* Every row printed, with its env twin, value and source; every known key
 * among them; and every printed row (known or added later) takes its env
 * twin and an option. */
START_TEST(test_config_print)
{
    printed_t rows[128], again[128];
    hixl_option_t opt;
    size_t n, i, j;

    n = config_rows(NULL, 0, rows, 128);
    ck_assert_uint_eq(n, hixl_opts_count());
    for (i = 0; i < NKNOWN; ++i) {
        for (j = 0; j < n; ++j) {
            if (!strcmp(rows[j].key, known_opts[i].key)) {
                break;
            }
        }
        ck_assert_msg(j < n, "%s not printed", known_opts[i].key);
        ck_assert_str_eq(rows[j].env, known_opts[i].env);
        ck_assert_str_eq(rows[j].value, known_opts[i].dflt);
        ck_assert_str_eq(rows[j].source, "default");
    }
    for (j = 0; j < n; ++j) {
        ck_assert_msg(!strncmp(rows[j].env, "HIXL_", 5), "%s: env twin %s",
                      rows[j].key, rows[j].env);
        ck_assert_str_eq(rows[j].source, "default");
        for (i = 0; i < j; ++i) {
            ck_assert_str_ne(rows[i].key, rows[j].key);
            ck_assert_str_ne(rows[i].env, rows[j].env);
        }
    }

    /* generic: each row's env twin, then an option over it, both set to
     * the printed default.  A value printed in parentheses is masked (a
     * secret is shown as "(set)" or "(unset)"): give it some text instead
     * and do not expect to see it.  An empty default (a string option) gets
     * some text too, since an empty variable counts as unset. */
    for (j = 0; j < n; ++j) {
        int masked = (rows[j].value[0] == '(');
        const char *v = (masked || !rows[j].value[0]) ? "x" : rows[j].value;

        /* CANN's JSON keys default to "" (unset): give them a valid value */
        if (!strcmp(rows[j].key, "GlobalResourceConfig") ||
            !strcmp(rows[j].key, "LocalCommRes")) {
            v = "{}";
        }

        ck_assert_int_eq(setenv(rows[j].env, v, 1), 0);
        ck_assert_uint_eq(config_rows(NULL, 0, again, 128), n);
        ck_assert_msg(!strcmp(again[j].source, "env"), "%s via %s: source %s",
                      rows[j].key, rows[j].env, again[j].source);
        opt.key   = rows[j].key;
        opt.value = v;
        ck_assert_uint_eq(config_rows(&opt, 1, again, 128), n);
        ck_assert_msg(!strcmp(again[j].source, "option"), "%s: source %s",
                      rows[j].key, again[j].source);
        if (!masked) {
            ck_assert_str_eq(again[j].value, v);
        } else {
            ck_assert_str_ne(again[j].value, v);   /* never printed */
        }
        unsetenv(rows[j].env);
    }

    /* the value shown is the one the engine would get */
    opt.key   = "hixl.MaxRequests";
    opt.value = "123";
    ck_assert_int_eq(setenv("HIXL_MAX_LAYERS", "17", 1), 0);
    config_rows(&opt, 1, again, 128);
    ck_assert_str_eq(again[row_of("hixl.MaxRequests")].value, "123");
    unsetenv("HIXL_MAX_LAYERS");   /* (row_of reads without it) */
    ck_assert_int_eq(setenv("HIXL_MAX_LAYERS", "17", 1), 0);
    config_rows(&opt, 1, again, 128);
    for (j = 0; j < n; ++j) {
        if (!strcmp(again[j].key, "hixl.MaxLayers")) {
            ck_assert_str_eq(again[j].value, "17");
            ck_assert_str_eq(again[j].source, "env");
        }
    }
    hx_clear_hixl_env();
}
END_TEST

static Suite *unit_options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = hx_tcase("options");

    tcase_add_checked_fixture(tc, no_option_env, NULL);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_ranges);
    tcase_add_test(tc, test_bools_and_levels);
    tcase_add_test(tc, test_buffer_pool);
    tcase_add_test(tc, test_env_and_precedence);
    tcase_add_test(tc, test_bad_options);
    tcase_add_test(tc, test_config_print);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_options_suite());
}
