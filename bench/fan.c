/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: libhixl-ucx with many engines at once.
 *
 *   fan [-t fan_in,fan_out,ucx_ep,cold|all] [-N 64 | -N 1,2,32] [-s 4M]
 *       [-T 1G] [--tls sm --tls tcp] [-O key=value] ...
 *
 * Fan-in: N prefill engines, each its own process, write at once into one
 * decode engine (a decode host receiving the KV caches of N prefill
 * hosts); fan-out: one prefill engine writes to N decode engines.  The same
 * bytes per point (-T) are split over the N peers.  Per N: aggregate GB/s,
 * each peer's share (fairness), connect time per peer (all connects start
 * together), RSS and fds per peer of the engine every peer talks to, CPU of
 * every engine while busy and while idle, and bare UCX's own memory per
 * endpoint for comparison; every byte is verified by the receiving side.
 * -t cold: the first transfer into freshly allocated decode memory against
 * the second, beside a one-core memcpy into fresh and touched memory.
 *
 * The sweep runs every repetition over every case (rep-major), so a noisy
 * stretch of a shared machine spreads over the cases instead of landing on
 * one; tables report medians and the spread.
 */
#include "config.h"
#include "fan.h"
#include "common/cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

enum {
    OPT_DECODE_OPT = 256,
    OPT_PREFILL_OPT,
    OPT_TLS,
    OPT_ALLOC,
    OPT_IDLE,
    OPT_POINT_TIMEOUT,
    OPT_POLL_US,
    OPT_WAIT,
    OPT_PIN,
    OPT_NO_BASELINE,
    OPT_OUT,
    OPT_QUIET_WAIT
};

static void fan_usage(FILE *out)
{
    fprintf(out,
"Usage: fan [ options ]\n"
"\n"
"  libhixl-ucx with many engines at once, every engine its own process on\n"
"  this host, every byte verified by the side that receives it.  Transports\n"
"  come from UCX_TLS (or --tls, once per value to compare).\n"
"\n"
"  Tests (-t, a comma list; fan_in by default):\n"
"     fan_in    N prefill engines write at once into one decode engine\n"
"     fan_out   one prefill engine writes to N decode engines\n"
"     ucx_ep    bare UCX: N endpoints between two processes (memory, fds)\n"
"               fan_in and fan_out run it too, for the \"beyond UCX\" column\n"
"     cold      a KV cache into freshly allocated decode memory: first\n"
"               transfer vs second, and a one-core memcpy reference\n"
"     all       all of them\n"
"\n"
"  Sizes and shape:\n"
"     -N <max>|<list>  engine counts: powers of two up to <max>, or a list\n"
"                      such as 1,2,32 (64)\n"
"     -s <size>        descriptor size (4M); K, M, G suffixes (x1024)\n"
"     -T <size>        bytes written per pass, split over the N peers (1G);\n"
"                      the cold test writes this much into fresh memory\n"
"     -b <count>       descriptors per transfer (1)\n"
"     -W <count>       transfers in flight per peer (4)\n"
"     -n <passes>      timed passes over every slice (1)\n"
"     -w <passes>      untimed warm-up passes first (1)\n"
"     -r <reps>        repetitions of every case (3)\n"
"\n"
"  Engines:\n"
"     -O <key>=<value> engine option for every engine, repeatable (also as\n"
"                      --hixl-opt, put_bw's name; put_bw's -O is a window)\n"
"     --decode-opt <key>=<value>   for the decode engines only\n"
"     --prefill-opt <key>=<value>  for the prefill engines only\n"
"     --tls <UCX_TLS>  run everything over this UCX_TLS; repeat to compare\n"
"                      (--tls sm --tls tcp); default: the environment's\n"
"     --alloc <list>   cold test decode memory: hixl (hixl_alloc_mem), mmap\n"
"                      (anonymous memory + hixl_register_mem) (hixl,mmap)\n"
"     --pin <D>,<P>    pin decode processes to CPU D, prefill processes to P\n"
"                      (default: not pinned; the memcpy reference runs on P)\n"
"     --poll-us <us>   a prefill pauses this long when a sweep over its\n"
"                      requests completed nothing, as an application that\n"
"                      computes between status polls (50; 0: spin as put_bw)\n"
"     --wait <how>     poll: status polls and pauses (--poll-us); block: a\n"
"                      prefill sleeps in hixl_wait_transfers on its oldest\n"
"                      request per peer instead (poll)\n"
"\n"
"  Bounds and output:\n"
"     --point-timeout <s>  transfer budget of one run: posting stops then,\n"
"                      what completed is measured (PARTIAL, with the part\n"
"                      of the bytes that completed) and verified; a run\n"
"                      that fails, or overruns by 1.5x + 60 s and is killed,\n"
"                      ends the sweep of that test and UCX_TLS (120)\n"
"     --idle <s>       measure idle CPU this long at each point (1; 0: skip)\n"
"     --quiet-wait <s> before each run wait up to <s> seconds for the host's\n"
"                      CPUs to be under 10%% busy (0); the busy fraction\n"
"                      seen is recorded in the raw CSV either way\n"
"     --no-baseline    fan_in/fan_out without the bare-UCX runs (after each\n"
"                      point: the same transfers with UCX's own API, puts\n"
"                      where UCX has lanes for them, active messages\n"
"                      otherwise; and the memory of N endpoints)\n"
"     --out <dir>      CSV (raw and summary), text and PNG files\n"
"                      (fan-results; \"\" writes none)\n"
"     -v               summary as CSV on stdout instead of tables\n"
"     -q               no progress lines on stderr\n"
"     -h               this help\n"
"\n"
"  Exit status: 0 all ran and verified, 1 a run failed or timed out,\n"
"  2 bad command line, 3 bad data was received.\n");
}

#define fan_bad_usage(...) \
    bc_cli_fail("fan", "(fan -h for help)", FAN_EXIT_USAGE, __VA_ARGS__)

static size_t fan_parse_size(const char *s, const char *opt)
{
    const char *why;
    size_t v;

    why = bc_size_parse(s, &v);
    if (why != NULL) {
        fan_bad_usage("%s %s: %s; expected %s", opt, s, why, BC_SIZE_FORMS);
    }
    return v;
}

static unsigned fan_parse_uint(const char *s, const char *opt, unsigned min,
                               unsigned max)
{
    unsigned long v;
    char *end;

    errno = 0;
    v = strtoul(s, &end, 10);
    if ((end == s) || (*end != '\0') || errno || (v < min) || (v > max)) {
        fprintf(stderr, "fan: %s %s: expected %u..%u\n", opt, s, min, max);
        exit(FAN_EXIT_USAGE);
    }
    return (unsigned)v;
}

static double fan_parse_double(const char *s, const char *opt)
{
    char *end;
    double v = strtod(s, &end);

    if ((end == s) || (*end != '\0') || !(v >= 0)) {
        fan_bad_usage("%s: expected a number of seconds >= 0", opt);
    }
    return v;
}

static void fan_parse_tests(fan_opts_t *o, const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;

    o->tests = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "fan_in") || !strcmp(tok, "in")) {
            o->tests |= FAN_T_IN;
        } else if (!strcmp(tok, "fan_out") || !strcmp(tok, "out")) {
            o->tests |= FAN_T_OUT;
        } else if (!strcmp(tok, "ucx_ep") || !strcmp(tok, "ucx")) {
            o->tests |= FAN_T_UCX;
        } else if (!strcmp(tok, "cold")) {
            o->tests |= FAN_T_COLD;
        } else if (!strcmp(tok, "all")) {
            o->tests |= FAN_T_IN | FAN_T_OUT | FAN_T_UCX | FAN_T_COLD;
        } else {
            fan_bad_usage("-t %s: unknown test (fan_in, fan_out, ucx_ep, "
                          "cold, all)", tok);
        }
    }
    free(copy);
    if (o->tests == 0) {
        fan_bad_usage("-t %s: no test", arg);
    }
}

static void fan_parse_ns(fan_opts_t *o, const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;
    unsigned v, n;

    o->num_ns = 0;
    if (strchr(arg, ',') == NULL) {
        v = fan_parse_uint(arg, "-N", 1, FAN_MAX_N);
        for (n = 1; n < v; n *= 2) {
            o->ns[o->num_ns++] = n;
        }
        o->ns[o->num_ns++] = v;
        free(copy);
        return;
    }
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->num_ns == sizeof(o->ns) / sizeof(o->ns[0])) {
            fan_bad_usage("-N %s: too many values", arg);
        }
        o->ns[o->num_ns++] = fan_parse_uint(tok, "-N", 1, FAN_MAX_N);
    }
    free(copy);
}

static void fan_add_opt(fan_opts_t *o, int kind, const char *arg)
{
    fan_optlist_t *l = &o->hopts[kind];
    char *copy = strdup(arg), *eq = strchr(copy, '=');
    hixl_option_t *v;

    if ((eq == NULL) || (eq == copy)) {
        fan_bad_usage("%s: expected KEY=VALUE", arg);
    }
    *eq = '\0';
    v = realloc(l->v, (l->n + 1) * sizeof(*v));
    if (v == NULL) {
        fan_bad_usage("%s: out of memory", arg);
    }
    l->v = v;
    l->v[l->n].key     = copy;
    l->v[l->n++].value = eq + 1;
}

static void fan_parse_alloc(fan_opts_t *o, const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;

    o->cold_allocs = 0;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "hixl")) {
            o->cold_allocs |= 1u << FAN_ALLOC_HIXL;
        } else if (!strcmp(tok, "mmap")) {
            o->cold_allocs |= 1u << FAN_ALLOC_MMAP;
        } else {
            fan_bad_usage("--alloc %s: expected hixl, mmap", tok);
        }
    }
    free(copy);
    if (o->cold_allocs == 0) {
        fan_bad_usage("--alloc %s: nothing", arg);
    }
}

static void fan_parse_opts(fan_opts_t *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"hixl-opt",      required_argument, NULL, 'O'},
        {"decode-opt",    required_argument, NULL, OPT_DECODE_OPT},
        {"prefill-opt",   required_argument, NULL, OPT_PREFILL_OPT},
        {"tls",           required_argument, NULL, OPT_TLS},
        {"alloc",         required_argument, NULL, OPT_ALLOC},
        {"idle",          required_argument, NULL, OPT_IDLE},
        {"point-timeout", required_argument, NULL, OPT_POINT_TIMEOUT},
        {"poll-us",       required_argument, NULL, OPT_POLL_US},
        {"wait",          required_argument, NULL, OPT_WAIT},
        {"pin",           required_argument, NULL, OPT_PIN},
        {"no-baseline",   no_argument,       NULL, OPT_NO_BASELINE},
        {"out",           required_argument, NULL, OPT_OUT},
        {"quiet-wait",    required_argument, NULL, OPT_QUIET_WAIT},
        {"help",          no_argument,       NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    int c, d, p;

    memset(o, 0, sizeof(*o));
    o->tests         = FAN_T_IN;
    o->desc_size     = 4u << 20;
    o->total         = 1u << 30;
    o->per_xfer      = 1;
    o->window        = 4;
    o->passes        = 1;
    o->warmup        = 1;
    o->reps          = 3;
    o->poll_us       = 50;
    o->idle_s        = 1.0;
    o->point_timeout = 120.0;
    o->cold_allocs   = (1u << FAN_ALLOC_HIXL) | (1u << FAN_ALLOC_MMAP);
    o->pin_decode    = -1;
    o->pin_prefill   = -1;
    o->baseline      = 1;
    o->out_dir       = "fan-results";
    fan_parse_ns(o, "64");

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:N:s:T:b:W:n:w:r:O:vqh", longopts,
                            NULL)) != -1) {
        switch (c) {
        case 't': fan_parse_tests(o, optarg); break;
        case 'N': fan_parse_ns(o, optarg); break;
        case 's': o->desc_size = fan_parse_size(optarg, "-s"); break;
        case 'T': o->total = fan_parse_size(optarg, "-T"); break;
        case 'b': o->per_xfer = fan_parse_uint(optarg, "-b", 1, 1u << 20);
            break;
        case 'W': o->window = fan_parse_uint(optarg, "-W", 1, 4096); break;
        case 'n': o->passes = fan_parse_uint(optarg, "-n", 1, 1u << 20);
            break;
        case 'w': o->warmup = fan_parse_uint(optarg, "-w", 0, 1u << 20);
            break;
        case 'r': o->reps = fan_parse_uint(optarg, "-r", 1, 64); break;
        case 'O': fan_add_opt(o, FAN_OPT_ALL, optarg); break;
        case OPT_DECODE_OPT: fan_add_opt(o, FAN_OPT_DECODE, optarg); break;
        case OPT_PREFILL_OPT: fan_add_opt(o, FAN_OPT_PREFILL, optarg); break;
        case OPT_TLS:
            if (o->num_tls == sizeof(o->tls) / sizeof(o->tls[0])) {
                fan_bad_usage("--tls %s: too many", optarg);
            }
            o->tls[o->num_tls++] = optarg;
            break;
        case OPT_ALLOC: fan_parse_alloc(o, optarg); break;
        case OPT_IDLE: o->idle_s = fan_parse_double(optarg, "--idle"); break;
        case OPT_POINT_TIMEOUT:
            o->point_timeout = fan_parse_double(optarg, "--point-timeout");
            if (o->point_timeout <= 0) {
                fan_bad_usage("--point-timeout %s: must be > 0", optarg);
            }
            break;
        case OPT_POLL_US:
            o->poll_us = fan_parse_uint(optarg, "--poll-us", 0, 1000000);
            break;
        case OPT_WAIT:
            if (!strcmp(optarg, "poll") || !strcmp(optarg, "block")) {
                o->wait_block = !strcmp(optarg, "block");
            } else {
                fan_bad_usage("--wait %s: expected poll or block", optarg);
            }
            break;
        case OPT_PIN:
            if ((sscanf(optarg, "%d,%d", &d, &p) != 2) || (d < 0) || (p < 0)) {
                fan_bad_usage("--pin %s: expected DECODE_CPU,PREFILL_CPU",
                              optarg);
            }
            o->pin_decode  = d;
            o->pin_prefill = p;
            break;
        case OPT_NO_BASELINE: o->baseline = 0; break;
        case OPT_OUT: o->out_dir = optarg; break;
        case OPT_QUIET_WAIT:
            o->quiet_wait = fan_parse_double(optarg, "--quiet-wait");
            break;
        case 'v': o->csv = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': fan_usage(stdout); exit(FAN_EXIT_OK);
        case ':': fan_bad_usage("%s needs an argument", argv[optind - 1]);
            break;
        default: fan_bad_usage("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        fan_bad_usage("unexpected argument \"%s\"", argv[optind]);
    }
    if (o->num_tls == 0) {
        o->tls[o->num_tls++] = NULL;     /* the environment, as it is */
    }
}

static void fan_on_signal(int sig)
{
    static const char msg[] = "\nfan: interrupted; engine processes killed\n";

    fan_kill_all();
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to do */
    }
    _exit(128 + sig);
}

static void fan_print_header(const fan_opts_t *o)
{
    char thp[64] = "?";
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    time_t now = time(NULL);

    if (f != NULL) {
        if (fgets(thp, sizeof(thp), f) != NULL) {
            thp[strcspn(thp, "\n")] = '\0';
        }
        fclose(f);
    }
    getloadavg(load, 3);
    if (o->csv) {
        return;
    }
    printf("fan: libhixl-ucx %s, UCX %s, %ld CPUs, load %.2f %.2f %.2f, "
           "THP %s, prefill waits: %s, %s", hixl_version(),
           ucp_get_version_string(), sysconf(_SC_NPROCESSORS_ONLN), load[0],
           load[1], load[2], thp, o->wait_block ? "block" : "poll",
           ctime(&now));
}

/* Busy fraction of the host's CPUs just before a run; with --quiet-wait,
 * after waiting (bounded) for other jobs to quiet down. */
static double fan_before_run(const fan_opts_t *o)
{
    uint64_t deadline = bc_now_ns() + (uint64_t)(o->quiet_wait * 1e9);
    double busy = fan_host_busy(200);

    while ((busy > 0.10) && (bc_now_ns() < deadline)) {
        busy = fan_host_busy(200);
    }
    return busy;
}

/* The bare-UCX transfers of the point r measured, into r's base_*: run
 * right after it, so that both meet the host in the same state. */
static void fan_base_point(const fan_opts_t *o, unsigned test,
                           const char *tls, unsigned n, unsigned rep,
                           unsigned point_id, fan_result_t *r,
                           unsigned *corrupt)
{
    fan_result_t *b = calloc(1, sizeof(*b));

    if (b == NULL) {
        return;
    }
    (void)fan_before_run(o);
    fan_ucx_point_run(o, test, tls, n, rep, point_id, b);
    r->base_xfer_ok  = b->ok;
    r->base_op       = b->base_op;
    r->base_gbs      = b->agg_gbs;
    r->base_dec_busy = b->dec_busy_mean;
    r->base_pre_busy = b->pre_busy_mean;
    *corrupt        += (unsigned)b->corrupt;
    if (!o->quiet) {
        fprintf(stderr, "[rep %u] %-7s %-8s N=%-3u bare UCX (%s) %s: %.3f "
                "GB/s%s%s\n", rep + 1, (test == FAN_T_IN) ? "fan_in" :
                "fan_out", tls, n, b->base_op ? b->base_op : "-",
                b->ok ? "ok" : (b->corrupt ? "CORRUPT" : "FAILED"),
                b->agg_gbs, b->err[0] ? ": " : "", b->err);
    }
    free(b->connect_ms);
    free(b);
}

/* The label of a UCX_TLS setting (NULL: the environment's). */
static const char *fan_tls_label(const char *tls)
{
    const char *env = getenv("UCX_TLS");

    if (tls != NULL) {
        return tls;
    }
    return (env != NULL) ? env : "default";
}

int main(int argc, char **argv)
{
    fan_opts_t o;
    fan_report_t *report;
    fan_result_t r;
    fan_cold_result_t c;
    unsigned rep, t, i, test, point_id = 0, failed, corrupt = 0, alloc;
    unsigned cap[2][8];
    const char *label[8];
    double busy;
    struct sigaction sa;

    setvbuf(stdout, NULL, _IOLBF, 0);
    fan_parse_opts(&o, argc, argv);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fan_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    for (t = 0; t < o.num_tls; ++t) {
        label[t]  = fan_tls_label(o.tls[t]);
        cap[0][t] = cap[1][t] = FAN_MAX_N;
    }
    fan_print_header(&o);
    report = fan_report_open(&o, argc, argv);
    if (report == NULL) {
        return FAN_EXIT_ERROR;
    }
    for (rep = 0; rep < o.reps; ++rep) {
        for (t = 0; t < o.num_tls; ++t) {
            /* the children inherit it; this process never starts UCX */
            if (o.tls[t] != NULL) {
                setenv("UCX_TLS", o.tls[t], 1);
            }
            for (i = 0; (o.tests & FAN_T_UCX) && (i < o.num_ns); ++i) {
                memset(&r, 0, sizeof(r));
                r.test = FAN_T_UCX;
                r.tls  = label[t];
                r.n    = o.ns[i];
                r.rep  = rep;
                fan_ucx_run(&o, o.ns[i], &r);
                fan_report_point(report, &r);
            }
            for (test = FAN_T_IN; test <= FAN_T_OUT; test <<= 1) {
                unsigned *max = &cap[test == FAN_T_OUT][t];

                for (i = 0; (o.tests & test) && (i < o.num_ns); ++i) {
                    if (o.ns[i] > *max) {
                        break;
                    }
                    busy = fan_before_run(&o);
                    fan_point_run(&o, test, label[t], o.ns[i], rep,
                                  point_id++, &r);
                    r.host_busy = busy;
                    if (o.baseline) {
                        fan_ucx_run(&o, o.ns[i], &r);
                        fan_base_point(&o, test, label[t], o.ns[i], rep,
                                       point_id++, &r, &corrupt);
                    }
                    corrupt += (unsigned)r.corrupt;
                    fan_report_point(report, &r);
                    if (!r.ok) {
                        /* a run that failed or was killed at its deadline:
                         * larger N would not do better; bound the sweep (a
                         * PARTIAL run is a valid measurement of what the
                         * budget allowed, so the sweep goes on) */
                        *max = o.ns[i];
                        if (!o.quiet && (i + 1 < o.num_ns)) {
                            fprintf(stderr, "fan: larger N of this test over "
                                    "%s skipped\n", label[t]);
                        }
                    }
                }
            }
            for (alloc = 0; (o.tests & FAN_T_COLD) && (alloc < 2); ++alloc) {
                if (o.cold_allocs & (1u << alloc)) {
                    busy = fan_before_run(&o);
                    fan_cold_run(&o, label[t], (int)alloc, rep, point_id++,
                                 &c);
                    c.host_busy = busy;
                    fan_report_cold(report, &c);
                }
            }
        }
        for (i = 0; (o.tests & FAN_T_COLD) && (i < 2); ++i) {
            busy = fan_before_run(&o);
            fan_memcpy_run(&o, i == 0, rep, &c);
            c.host_busy = busy;
            fan_report_cold(report, &c);
        }
    }
    failed = fan_report_close(report);
    return corrupt ? FAN_EXIT_CORRUPT : failed ? FAN_EXIT_ERROR : FAN_EXIT_OK;
}
