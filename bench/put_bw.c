/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw: point-to-point bandwidth and latency of libhixl-ucx, driven and
 * printed like ucx_perftest.
 *
 *   server:  put_bw [-p PORT] [-6]
 *   client:  put_bw SERVER [-p PORT] [-6] -t put_bw -s 65536 -n 100000
 *
 * The server and client first meet on a plain TCP socket (-p, 13337 by
 * default, as ucx_perftest), where the client sends the test parameters and
 * both sides exchange engine names and buffer addresses; then the data moves
 * with the hixl API only (hixl_transfer_async + hixl_get_transfer_status).
 * Transports come from UCX_TLS and the other UCX_* variables, exactly as for
 * ucx_perftest; give both sides the same ones.
 *
 * Run sequence on the socket (text lines, see put_bw_oob.c):
 *   client: HELLO (test, window, buffer size, engine, target address)
 *   server: OK (its engine and target address) or ERR (why)
 *   client: connects its engine to the server's; CONNECTED
 *   server: (put_lat: connects back to the client's engine); READY
 *   per measurement (one, or one per size of a -S sweep):
 *     client: RUN (sizes, count, seed)   server: prepares memory; GO
 *     client: timed loop, then a verification transfer; END
 *     server: checks the bytes it received; VERIFY ok=1 or ok=0 and why
 *   client: BYE
 */
#include "config.h"
#include "put_bw.h"
#include "common/cli.h"
#include "common/size.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BENCH_PROTO_VERSION   1
#define BENCH_DEFAULT_PORT    13337
#define BENCH_DEFAULT_TIMEOUT 60

const bench_test_info_t bench_tests[] = {
    [BENCH_PUT_BW]  = {"put_bw",  "ucp_put_bw",  "put bandwidth", "overhead",
                       HIXL_WRITE, 0, 32},
    [BENCH_PUT_LAT] = {"put_lat", "ucp_put_lat", "put latency",   "latency",
                       HIXL_WRITE, 1, 1},
    [BENCH_GET_BW]  = {"get_bw",  NULL,          "get bandwidth", "overhead",
                       HIXL_READ,  0, 32},
    [BENCH_GET_LAT] = {"get_lat", "ucp_get",     "get latency",   "latency",
                       HIXL_READ,  0, 1},
};

#define BENCH_NUM_TESTS (sizeof(bench_tests) / sizeof(bench_tests[0]))

/* ---- usage --------------------------------------------------------------- */

static void bench_usage(FILE *out)
{
    fprintf(out,
"Usage: put_bw [ server-hostname ] [ options ]\n"
"\n"
"  Bandwidth and latency of libhixl-ucx (the hixl API over UCX), measured and\n"
"  printed like ucx_perftest.  Start it without a host to be the server, then\n"
"  with the server's host name to be the client; the client chooses the test\n"
"  and prints the results.  Transports come from UCX_TLS (and the other UCX_*\n"
"  variables) as for ucx_perftest: give both sides the same environment.\n"
"\n"
"  Common options (as ucx_perftest's):\n"
"     -t <test>      test to run (put_bw):\n"
"             put_bw - put bandwidth / message rate   (alias ucp_put_bw)\n"
"            put_lat - put latency, ping-pong, half a round trip reported\n"
"                      (alias ucp_put_lat)\n"
"             get_bw - get bandwidth / message rate\n"
"            get_lat - get latency, one get at a time (alias ucp_get)\n"
"     -s <size>      list of descriptor sizes making one transfer (8);\n"
"                    for example \"-s 16,48,8192\"; K, M, G suffixes (x1024)\n"
"     -m <send mem type>[,<recv mem type>]\n"
"                    memory type of the buffers: host, or ascend (Ascend HBM\n"
"                    through the ACL runtime the plugin uses: hixl.PluginRuntime\n"
"                    ascend=<lib>, device PUT_BW_DEVICE, default 0); the recv\n"
"                    type is the server's; other device types are refused\n"
"     -n <iters>     number of iterations (transfers) to run (1000000)\n"
"     -w <iters>     number of warm-up iterations (10000, at most 0.1 s)\n"
"     -O <count>     maximal number of transfers in flight (32 for *_bw,\n"
"                    1 for *_lat)\n"
"     -R <rank>      percentile rank of the percentile column (50.0)\n"
"     -p <port>      TCP port for the parameter exchange (13337)\n"
"     -6             use IPv6 for the exchange and the engines\n"
"     -h             show this help message\n"
"\n"
"  Output format:\n"
"     -f             print only final numbers\n"
"     -v             print CSV-formatted output\n"
"     -q             quiet: no connection messages or test description\n"
"\n"
"  put_bw only:\n"
"     -b <count>     descriptors per transfer: the -s list repeated <count>\n"
"                    times, back to back in memory, as the pages of a paged\n"
"                    KV-cache batch (1)\n"
"     --reuse        with -b: every repetition covers the same bytes (those\n"
"                    of one -s list), so the working set is one message, as\n"
"                    in ucx_perftest: the per-descriptor cost without the\n"
"                    memory-bandwidth limit of a large batch\n"
"     --scatter      with -b: the repetitions in a shuffled order (the same\n"
"                    at both ends), as the blocks of a paged KV cache that\n"
"                    has run for a while: no descriptor is next to the one\n"
"                    before it in memory\n"
"     --memcpy-baseline\n"
"                    after each measurement, one core's memcpy of the same\n"
"                    descriptors (sizes, order, scatter) between two warm\n"
"                    buffers of the client, each the size of a transfer: a\n"
"                    row labelled memcpy and the ratio of the transfers'\n"
"                    overall bandwidth to it (CSV: a first column \"row\",\n"
"                    hixl or memcpy); on one host, the limit to compare with\n"
"     -S <min>:<max> size sweep: one measurement per power-of-two multiple\n"
"                    of <min> up to <max> (replaces -s), e.g. -S 8:4M; rows\n"
"                    are labelled with the size (first CSV column \"size\")\n"
"     --max-time <s> end each measurement after <s> seconds even if fewer\n"
"                    than -n iterations ran\n"
"     --timeout <s>  give up when the peer does not answer for <s> seconds:\n"
"                    the server waiting for a client, a client whose server\n"
"                    is gone (60; 0 waits forever)\n"
"     --hixl-opt <key>=<value>\n"
"                    engine option (hixl_config_print lists them), repeatable;\n"
"                    put_bw sets hixl.ProgressThread=0 (its loops drive\n"
"                    progress, like ucx_perftest) unless told otherwise\n"
"     --alloc <how>  host buffers (both sides, the client decides):\n"
"                    hixl - hixl_alloc_mem: UCX allocates them, as ucx_perftest\n"
"                           does (default); on one host puts are stores into\n"
"                           shared memory\n"
"                    mmap - mmap + hixl_register_mem: application memory,\n"
"                           which UCX 1.13 reaches only through active-message\n"
"                           emulation on shared memory (compare ucx_perftest\n"
"                           with UCX_ALLOC_PRIO=mmap,heap)\n"
"\n"
"  Columns: iterations; latency (per transfer; \"overhead\" for bandwidth\n"
"  tests) in usec: percentile, average over the last interval, overall;\n"
"  bandwidth in MB/s (MB = 2^20 bytes); message rate in transfers per second.\n"
"  A transfer completes when its data is visible at the destination.\n"
"\n"
"  After each measurement one more transfer carries a fresh pattern, and the\n"
"  receiver checks every byte.  Exit status: 0 success, 1 error (set-up,\n"
"  connection, transfer, timeout), 2 bad command line, 3 corrupted data.\n");
}

#define bench_bad_usage(...) \
    bc_cli_fail("put_bw", "Usage: put_bw [ server-hostname ] [ options ]   " \
                "(put_bw -h lists the options)", BENCH_EXIT_USAGE, __VA_ARGS__)

/* ---- option parsing ------------------------------------------------------ */

/* A whole number in [min, max] for option opt, else a usage error that
 * says what was expected. */
static uint64_t bench_parse_num(const char *opt, const char *arg,
                                uint64_t min, uint64_t max,
                                const char *expected)
{
    uint64_t v;

    if ((bc_parse_u64(arg, &v) != 0) || (v < min) || (v > max)) {
        bench_bad_usage("%s %s: expected %s", opt, arg, expected);
    }
    return v;
}

/* A comma-separated list of sizes; 0, or -1 when malformed, with why_p
 * (when not NULL) saying which word and why. */
static int bench_sizes_parse(const char *arg, size_t **sizes_p,
                             unsigned *num_p, char *why, size_t why_len)
{
    char *copy = strdup(arg), *tok, *save = NULL;
    size_t *sizes = NULL, *p;
    const char *bad = "empty";
    unsigned n = 0;

    if (copy == NULL) {
        return -1;
    }
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        p = realloc(sizes, (n + 1) * sizeof(*sizes));
        if ((p == NULL) || ((bad = bc_size_parse(tok, &p[n])) != NULL)) {
            if (why != NULL) {
                snprintf(why, why_len, "\"%s\": %s", tok,
                         (p == NULL) ? "out of memory" : bad);
            }
            free(p ? p : sizes);
            free(copy);
            return -1;
        }
        sizes = p;
        ++n;
    }
    free(copy);
    if (n == 0) {
        if (why != NULL) {
            snprintf(why, why_len, "no size");
        }
        return -1;
    }
    *sizes_p = sizes;
    *num_p   = n;
    return 0;
}

static void bench_parse_sizes(bench_opts_t *opts, const char *arg)
{
    char why[128];
    size_t *sizes;
    unsigned n;

    if (bench_sizes_parse(arg, &sizes, &n, why, sizeof(why)) != 0) {
        bench_bad_usage("-s %s: %s; expected sizes separated by commas, "
                        "each %s", arg, why, BC_SIZE_FORMS);
    }
    free(opts->sizes);
    opts->sizes     = sizes;
    opts->num_sizes = n;
}

static void bench_parse_sweep(bench_opts_t *opts, const char *arg)
{
    char *copy = strdup(arg), *colon;
    const char *why;

    if ((copy == NULL) || ((colon = strchr(copy, ':')) == NULL)) {
        bench_bad_usage("-S %s: expected <min>:<max>, e.g. 8:4M", arg);
    }
    *colon = '\0';
    if (((why = bc_size_parse(copy, &opts->sweep_min)) != NULL) ||
        ((why = bc_size_parse(colon + 1, &opts->sweep_max)) != NULL)) {
        bench_bad_usage("-S %s: %s; expected <min>:<max>, each %s", arg, why,
                        BC_SIZE_FORMS);
    }
    if (opts->sweep_min > opts->sweep_max) {
        bench_bad_usage("-S %s: expected <min>:<max> with 0 < min <= max",
                        arg);
    }
    free(copy);
}

/* Memory types: host and ascend (put_bw_mem.c); a device type without a
 * libhixl-ucx plugin is refused (exit 1, it is not a typing error);
 * others are unknown. */
static void bench_parse_mem(const char *arg)
{
    static const char *const devices[] = {
        "cuda", "cuda-managed", "rocm", "rocm-managed", "ze-host",
        "ze-device", "ze-managed", "rdma", "device"
    };
    char *copy = strdup(arg), *tok, *save = NULL;
    unsigned i, n = 0;

    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save), ++n) {
        if (!strcasecmp(tok, "host") || !strcasecmp(tok, "ascend") ||
            !strcasecmp(tok, "npu")) {
            continue;
        }
        for (i = 0; i < sizeof(devices) / sizeof(devices[0]); ++i) {
            if (!strcasecmp(tok, devices[i])) {
                fprintf(stderr, "put_bw: -m %s: memory type \"%s\" is "
                        "unsupported: libhixl-ucx has no memory-type plugin "
                        "for it (%s); use host or ascend\n", arg, tok,
                        hixl_strerror(HIXL_UNSUPPORTED));
                exit(BENCH_EXIT_ERROR);
            }
        }
        bench_bad_usage("-m %s: unknown memory type (host and ascend are "
                        "supported)", arg);
    }
    if ((n == 0) || (n > 2) || (bench_mem_parse(arg) != 0)) {
        bench_bad_usage("-m %s: expected <send mem type>[,<recv mem type>]",
                        arg);
    }
    free(copy);
}

static void bench_add_hixl_opt(bench_opts_t *opts, const char *arg)
{
    hixl_option_t *o;
    char *copy, *eq;

    copy = strdup(arg);
    eq   = copy ? strchr(copy, '=') : NULL;
    if ((eq == NULL) || (eq == copy)) {
        bench_bad_usage("--hixl-opt %s: expected <key>=<value>", arg);
    }
    *eq = '\0';
    o   = realloc(opts->hixl_opts, (opts->num_hixl_opts + 1) * sizeof(*o));
    if (o == NULL) {
        bench_bad_usage("out of memory%s", "");
    }
    o[opts->num_hixl_opts].key   = copy;
    o[opts->num_hixl_opts].value = eq + 1;
    opts->hixl_opts = o;
    opts->num_hixl_opts++;
}

static int bench_test_by_name(const char *name, bench_test_id_t *id)
{
    unsigned i;

    for (i = 0; i < BENCH_NUM_TESTS; ++i) {
        if (!strcmp(name, bench_tests[i].name) ||
            ((bench_tests[i].alias != NULL) &&
             !strcmp(name, bench_tests[i].alias))) {
            *id = (bench_test_id_t)i;
            return 0;
        }
    }
    return -1;
}

static void bench_parse_opts(bench_opts_t *opts, int argc, char **argv)
{
    enum { OPT_TIMEOUT = 256, OPT_MAX_TIME, OPT_HIXL_OPT, OPT_ALLOC,
           OPT_REUSE, OPT_SCATTER, OPT_MEMCPY_BASELINE };
    static const struct option longopts[] = {
        {"timeout",  required_argument, NULL, OPT_TIMEOUT},
        {"max-time", required_argument, NULL, OPT_MAX_TIME},
        {"hixl-opt", required_argument, NULL, OPT_HIXL_OPT},
        {"alloc",    required_argument, NULL, OPT_ALLOC},
        {"reuse",    no_argument,       NULL, OPT_REUSE},
        {"scatter",  no_argument,       NULL, OPT_SCATTER},
        {"memcpy-baseline", no_argument, NULL, OPT_MEMCPY_BASELINE},
        {"sweep",    required_argument, NULL, 'S'},
        {"count",    required_argument, NULL, 'b'},
        {"help",     no_argument,       NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    char *end;
    int c;

    memset(opts, 0, sizeof(*opts));
    opts->port            = BENCH_DEFAULT_PORT;
    opts->iters           = 1000000;
    opts->warmup          = 10000;
    opts->percentile      = 50.0;
    opts->count           = 1;
    opts->report_interval = 1.0;
    opts->timeout_s       = BENCH_DEFAULT_TIMEOUT;
    bench_parse_sizes(opts, "8");

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:s:n:w:O:m:R:p:b:S:6fvqh",
                            longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (bench_test_by_name(optarg, &opts->test) != 0) {
                bench_bad_usage("-t %s: unknown test (put_bw, put_lat, "
                                "get_bw, get_lat)", optarg);
            }
            opts->test_set = 1;
            break;
        case 's':
            bench_parse_sizes(opts, optarg);
            break;
        case 'n':
            opts->iters = bench_parse_num("-n", optarg, 1, UINT64_MAX,
                                          "a positive number");
            break;
        case 'w':
            opts->warmup = bench_parse_num("-w", optarg, 0, UINT64_MAX,
                                           "a number");
            break;
        case 'O':
            opts->window = (unsigned)bench_parse_num("-O", optarg, 1,
                                                     1u << 20,
                                                     "1..1048576");
            break;
        case 'b':
            opts->count = (unsigned)bench_parse_num("-b", optarg, 1,
                                                    1u << 24,
                                                    "1..16777216");
            break;
        case 'm':
            bench_parse_mem(optarg);
            break;
        case 'R':
            opts->percentile = strtod(optarg, &end);
            if ((*optarg == '\0') || (*end != '\0') ||
                !(opts->percentile >= 0.0) || (opts->percentile > 100.0)) {
                bench_bad_usage("-R %s: expected a rank in [0, 100]", optarg);
            }
            break;
        case 'p':
            opts->port = (unsigned)bench_parse_num("-p", optarg, 1, 65535,
                                                   "a port 1..65535");
            break;
        case 'S':
            bench_parse_sweep(opts, optarg);
            break;
        case '6':
            opts->ipv6 = 1;
            break;
        case 'f':
            opts->final_only = 1;
            break;
        case 'v':
            opts->csv = 1;
            break;
        case 'q':
            opts->quiet = 1;
            break;
        case 'h':
            bench_usage(stdout);
            exit(BENCH_EXIT_OK);
        case OPT_TIMEOUT:
            opts->timeout_s = (int)bench_parse_num("--timeout", optarg, 0,
                                                   86400,
                                                   "seconds, 0..86400");
            break;
        case OPT_MAX_TIME:
            opts->max_time = strtod(optarg, &end);
            if ((*optarg == '\0') || (*end != '\0') ||
                !(opts->max_time > 0.0)) {
                bench_bad_usage("--max-time %s: expected positive seconds",
                                optarg);
            }
            break;
        case OPT_HIXL_OPT:
            bench_add_hixl_opt(opts, optarg);
            break;
        case OPT_REUSE:
            opts->layout = BENCH_LAYOUT_REUSE;
            break;
        case OPT_SCATTER:
            opts->layout = BENCH_LAYOUT_SCATTER;
            break;
        case OPT_MEMCPY_BASELINE:
            opts->memcpy_baseline = 1;
            break;
        case OPT_ALLOC:
            if (!strcmp(optarg, "hixl") || !strcmp(optarg, "ucx")) {
                opts->alloc_mmap = 0;
            } else if (!strcmp(optarg, "mmap")) {
                opts->alloc_mmap = 1;
            } else {
                bench_bad_usage("--alloc %s: expected hixl or mmap", optarg);
            }
            break;
        case ':':
            if (optopt >= 256 || optopt == 0) {
                bench_bad_usage("%s needs an argument", argv[optind - 1]);
            } else {
                char o[3] = {'-', (char)optopt, '\0'};

                bench_bad_usage("%s needs an argument", o);
            }
            break;
        default:
            if (optopt > 0 && optopt < 256) {
                char o[3] = {'-', (char)optopt, '\0'};

                bench_bad_usage("unknown option %s", o);
            }
            bench_bad_usage("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        opts->server = argv[optind++];
    }
    if (optind < argc) {
        bench_bad_usage("unexpected argument \"%s\" (only one server host)",
                        argv[optind]);
    }
    if (opts->window == 0) {
        opts->window = bench_tests[opts->test].window;
    }
}

/* ---- runs ---------------------------------------------------------------- */

/* The measurements the client will make: one, or one per sweep size. */
static int bench_make_runs(const bench_opts_t *opts, bench_run_t **runs_p,
                           unsigned *num_p)
{
    bench_run_t *runs;
    size_t s, sum = 0, *sizes;
    unsigned n = 0, i;
    char *name;

    if (!opts->sweep_min) {
        runs = calloc(1, sizeof(*runs));
        if (runs == NULL) {
            return -1;
        }
        for (i = 0; i < opts->num_sizes; ++i) {
            sum += opts->sizes[i];
        }
        runs->sizes     = opts->sizes;
        runs->num_sizes = opts->num_sizes;
        runs->count     = opts->count;
        runs->num_descs = (size_t)opts->num_sizes * opts->count;
        runs->msg_size  = sum * opts->count;
        runs->name      = "";
        *runs_p = runs;
        *num_p  = 1;
        return 0;
    }
    for (s = opts->sweep_min; s <= opts->sweep_max; s *= 2) {
        ++n;
        if (s > SIZE_MAX / 2) {
            break;
        }
    }
    runs  = calloc(n, sizeof(*runs));
    sizes = calloc(n, sizeof(*sizes));
    if ((runs == NULL) || (sizes == NULL)) {
        return -1;
    }
    for (i = 0, s = opts->sweep_min; i < n; ++i, s *= 2) {
        sizes[i]          = s;
        runs[i].sizes     = &sizes[i];
        runs[i].num_sizes = 1;
        runs[i].count     = opts->count;
        runs[i].num_descs = opts->count;
        runs[i].msg_size  = s * opts->count;
        if (asprintf(&name, "%zu", s) < 0) {
            return -1;
        }
        runs[i].name = name;
    }
    *runs_p = runs;
    *num_p  = n;
    return 0;
}

/* Free what bench_make_runs made: a sweep owns its sizes and names. */
static void bench_free_runs(const bench_opts_t *opts, bench_run_t *runs,
                            unsigned num)
{
    unsigned i;

    if (runs == NULL) {
        return;
    }
    if (opts->sweep_min) {
        free((void*)runs[0].sizes);
        for (i = 0; i < num; ++i) {
            free((void*)runs[i].name);
        }
    }
    free(runs);
}

static char *bench_sizes_str(const size_t *sizes, unsigned n)
{
    char *buf = malloc((size_t)n * 21 + 1), *p;
    unsigned i;

    if (buf == NULL) {
        return NULL;
    }
    p  = buf;
    *p = '\0';
    for (i = 0; i < n; ++i) {
        p += sprintf(p, "%s%zu", i ? "," : "", sizes[i]);
    }
    return buf;
}

/* ---- engine and memory --------------------------------------------------- */

static int bench_engine_init(bench_side_t *side, const bench_opts_t *opts,
                             const char *host, int listening)
{
    hixl_option_t *o;
    char name[HIXL_ENGINE_NAME_MAX + 1];
    char timeout_ms[24], max_requests[24];
    size_t n = 0, i;
    hixl_status_t status;

    o = calloc(5 + opts->num_hixl_opts, sizeof(*o));
    if (o == NULL) {
        return -1;
    }
    /* ours first: the user's --hixl-opt come later and win */
    o[n].key = "hixl.ProgressThread"; o[n++].value = "0";
    if (listening) {
        o[n].key = "hixl.ListenEphemeral"; o[n++].value = "1";
    }
    snprintf(timeout_ms, sizeof(timeout_ms), "%d",
             (opts->timeout_s > 0) ? opts->timeout_s * 1000 : INT32_MAX);
    o[n].key = "hixl.TransferTimeoutMs"; o[n++].value = timeout_ms;
    if (opts->window + 16 > 16384) {
        /* room for the window and the verification transfers */
        snprintf(max_requests, sizeof(max_requests), "%u", opts->window + 16);
        o[n].key = "hixl.MaxRequests"; o[n++].value = max_requests;
    }
    for (i = 0; i < opts->num_hixl_opts; ++i) {
        o[n++] = opts->hixl_opts[i];
    }
    snprintf(name, sizeof(name), listening ? "%s:0" : "%s", host);
    status = hixl_initialize(name, o, n, &side->engine);
    free(o);
    if (status != HIXL_SUCCESS) {
        fprintf(stderr, "put_bw: hixl_initialize(\"%s\"): %s: %s\n", name,
                hixl_strerror(status), hixl_last_error());
        return -1;
    }
    side->timeout_s = opts->timeout_s;
    return 0;
}

/* Is this side's -m type host memory?  ("host", or "host,<recv type>" on
 * the client, "<send type>,host" on the server.) */
static int bench_mem_host_side(int server)
{
    const char *arg = bench_mem_arg(), *comma = strchr(arg, ',');
    const char *mine = (server && comma) ? comma + 1 : arg;

    return !strncasecmp(mine, "host", 4) &&
           ((mine[4] == '\0') || (mine[4] == ','));
}

static int bench_mem_init(bench_side_t *side, size_t len)
{
    hixl_mem_desc_t desc;
    hixl_mem_type_t type;
    hixl_status_t status;
    void *p;

    if (!side->alloc_mmap && bench_mem_host_side(side->is_server)) {
        /* --alloc hixl (default): UCX allocates, as ucx_perftest's buffers
         * (ucp_mem_map ALLOCATE), so on one host puts are plain stores
         * through shared memory instead of UCX 1.13's active-message
         * emulation for registered malloc'd memory */
        status = hixl_alloc_mem(side->engine, 2 * len, HIXL_MEM_HOST, &p,
                                &side->memh);
        if (status != HIXL_SUCCESS) {
            fprintf(stderr, "put_bw: hixl_alloc_mem(%zu bytes): %s: %s "
                    "(--alloc mmap registers application memory instead)\n",
                    2 * len, hixl_strerror(status), hixl_last_error());
            return -1;
        }
        memset(p, 0, 2 * len);      /* no page faults in the timed loops */
        side->mem      = p;
        side->len      = len;
        side->mem_hixl = 1;
        return 0;
    }
    p = bench_mem_alloc(2 * len, &type);   /* -m: host or device memory */
    if (p == NULL) {
        fprintf(stderr, "put_bw: cannot allocate 2 x %zu bytes of %s "
                "memory: %s\n", len, bench_mem_arg(), strerror(errno));
        return -1;
    }
    side->mem  = p;
    side->len  = len;
    desc.addr  = (uintptr_t)p;
    desc.len   = 2 * len;
    status     = hixl_register_mem(side->engine, &desc, type, &side->memh);
    if (status != HIXL_SUCCESS) {
        fprintf(stderr, "put_bw: hixl_register_mem(%zu bytes): %s: %s\n",
                2 * len, hixl_strerror(status), hixl_last_error());
        return -1;
    }
    return 0;
}

static int bench_connect(bench_side_t *side, const char *remote)
{
    int32_t ms = (side->timeout_s > 0) ? side->timeout_s * 1000 : INT32_MAX;
    hixl_status_t status;

    snprintf(side->peer_name, sizeof(side->peer_name), "%s", remote);
    status = hixl_connect(side->engine, remote, ms);
    if (status != HIXL_SUCCESS) {
        fprintf(stderr, "put_bw: hixl_connect(\"%s\"): %s: %s\n", remote,
                hixl_strerror(status), hixl_last_error());
        return -1;
    }
    return 0;
}

static void bench_side_cleanup(bench_side_t *side)
{
    if (side->engine != NULL) {
        hixl_finalize(side->engine);   /* deregisters the memory too */
    }
    if ((side->mem != NULL) && !side->mem_hixl) {
        /* (hixl_alloc_mem memory went with the engine) */
        bench_mem_free(side->mem, 2 * side->len);
    }
    free(side->descs);
    if (side->oob_fd >= 0) {
        close(side->oob_fd);
    }
}

static uint64_t bench_seed(unsigned salt)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
           ((uint64_t)getpid() << 40) ^ ((uint64_t)salt * 0x2545f4914f6cdd1dull);
}

/* "msg=" is always the last word and may contain spaces. */
static const char *bench_msg(const char *line)
{
    const char *p = strstr(line, " msg=");

    return p ? p + 5 : "(no reason given)";
}

static int bench_expect(const char *line, const char *word)
{
    size_t n = strlen(word);

    if ((strncmp(line, word, n) == 0) &&
        ((line[n] == ' ') || (line[n] == '\0'))) {
        return 0;
    }
    if (strncmp(line, "ERR", 3) == 0) {
        fprintf(stderr, "put_bw: the peer refused: %s\n", bench_msg(line));
    } else {
        fprintf(stderr, "put_bw: expected %s from the peer, got \"%.80s\"\n",
                word, line);
    }
    return -1;
}

/* ---- client -------------------------------------------------------------- */

static int bench_client_run(bench_side_t *side, const bench_opts_t *opts,
                            const bench_run_t *run, unsigned index)
{
    const bench_test_info_t *info = &bench_tests[opts->test];
    bench_stats_t stats, base;
    uint64_t seed = bench_seed(index), vseed = bench_seed(index + 1000);
    char msg[256] = "", *sizes, *line;
    uint8_t stop;

    if (bench_build_descs(side, run, (bench_layout_t)opts->layout) != 0) {
        return BENCH_EXIT_ERROR;
    }
    /* our target must not hold an old sequence number */
    bench_mem_zero(bench_target(side), run->msg_size);
    bench_pattern_fill(bench_local(side), run->msg_size, seed);
    sizes = bench_sizes_str(run->sizes, run->num_sizes);
    if ((sizes == NULL) ||
        (bench_oob_send(side->oob_fd, "RUN sizes=%s count=%u seed=%" PRIu64
                        "\n", sizes, run->count, seed) != 0) ||
        (bench_oob_recv(side->oob_fd, side->timeout_s, bench_progress, side,
                        &line) != 0) ||
        (bench_expect(line, "GO") != 0)) {
        free(sizes);
        return BENCH_EXIT_ERROR;
    }
    free(sizes);

    bench_print_run_name(opts, run);
    if (bench_client_loop(side, opts, run, &stats) != 0) {
        return BENCH_EXIT_ERROR;
    }
    bench_stats_report(&stats, 1);
    if (opts->memcpy_baseline) {
        if (bench_memcpy_baseline(side, opts, run, &base) != 0) {
            return BENCH_EXIT_ERROR;
        }
        bench_stats_report(&base, 1);
        bench_print_ratio(&stats, &base);
    }

    if (info->pingpong) {
        /* release the responder: 0xfe in the last byte */
        stop = 0xfe;
        bench_local(side)[run->msg_size - 1] = stop;
        if (bench_transfer_wait(side, HIXL_WRITE) != 0) {
            return BENCH_EXIT_ERROR;
        }
        /* the verification put below overwrites that byte: wait until the
         * responder has seen it (with shared memory nothing else orders
         * its poll before our next store) */
        if ((bench_oob_recv(side->oob_fd, side->timeout_s, bench_progress,
                            side, &line) != 0) ||
            (bench_expect(line, "STOPPED") != 0)) {
            return BENCH_EXIT_ERROR;
        }
    }

    /* verification pass: one more transfer with a fresh pattern, every
     * byte of the message its own (also after --reuse) */
    if ((opts->layout == BENCH_LAYOUT_REUSE) &&
        (bench_build_descs(side, run, BENCH_LAYOUT_PACKED) != 0)) {
        return BENCH_EXIT_ERROR;
    }
    if (info->op == HIXL_WRITE) {
        bench_pattern_fill(bench_local(side), run->msg_size, vseed);
        if ((bench_transfer_wait(side, HIXL_WRITE) != 0) ||
            (bench_oob_send(side->oob_fd, "END seed=%" PRIu64 " ok=1\n",
                            vseed) != 0)) {
            return BENCH_EXIT_ERROR;
        }
    } else {
        /* the server filled its target with pattern(seed) before GO */
        bench_mem_zero(bench_local(side), run->msg_size);
        if (bench_transfer_wait(side, HIXL_READ) != 0) {
            return BENCH_EXIT_ERROR;
        }
        if (bench_pattern_check(bench_local(side), run->msg_size, seed, msg,
                                sizeof(msg)) != 0) {
            fprintf(stderr, "put_bw: verification FAILED: the data read "
                    "from the server is corrupted: %s\n", msg);
            bench_oob_send(side->oob_fd, "END ok=0 msg=client read corrupted "
                           "data: %s\n", msg);
            return BENCH_EXIT_CORRUPT;
        }
        if (bench_oob_send(side->oob_fd, "END ok=1\n") != 0) {
            return BENCH_EXIT_ERROR;
        }
    }

    if (bench_oob_recv(side->oob_fd, side->timeout_s, bench_progress, side,
                       &line) != 0) {
        return BENCH_EXIT_ERROR;
    }
    if (bench_expect(line, "VERIFY") != 0) {
        return BENCH_EXIT_ERROR;
    }
    if (strcmp(bc_kv(line, "ok") ? bc_kv(line, "ok") : "", "1") != 0) {
        fprintf(stderr, "put_bw: verification FAILED on the server: %s\n",
                bench_msg(line));
        return BENCH_EXIT_CORRUPT;
    }
    if (info->pingpong) {
        /* the server answered with its own verification put into ours */
        const char *s = bc_kv(line, "seed");
        uint64_t sseed;

        if ((s == NULL) || (bc_parse_u64(s, &sseed) != 0)) {
            fprintf(stderr, "put_bw: VERIFY without the server's seed\n");
            return BENCH_EXIT_ERROR;
        }
        if (bench_pattern_check(bench_target(side), run->msg_size, sseed, msg,
                                sizeof(msg)) != 0) {
            fprintf(stderr, "put_bw: verification FAILED: the data the "
                    "server put is corrupted: %s\n", msg);
            return BENCH_EXIT_CORRUPT;
        }
    }
    return BENCH_EXIT_OK;
}

static int bench_client(bench_opts_t *opts)
{
    const bench_test_info_t *info = &bench_tests[opts->test];
    bench_side_t side;
    bench_run_t *runs = NULL;
    unsigned num_runs = 0, i;
    size_t len = 0;
    char host[128], *line;
    const char *v;
    int rc = BENCH_EXIT_ERROR;

    memset(&side, 0, sizeof(side));
    side.oob_fd     = -1;
    side.alloc_mmap = opts->alloc_mmap;
    if (bench_make_runs(opts, &runs, &num_runs) != 0) {
        fprintf(stderr, "put_bw: out of memory\n");
        return BENCH_EXIT_ERROR;
    }
    for (i = 0; i < num_runs; ++i) {
        len = (runs[i].msg_size > len) ? runs[i].msg_size : len;
    }

    if ((bench_oob_connect(opts, &side.oob_fd) != 0) ||
        (bench_oob_local_host(side.oob_fd, host, sizeof(host)) != 0) ||
        /* put_lat: the server puts back, so this engine must listen */
        (bench_engine_init(&side, opts, host, info->pingpong) != 0) ||
        (bench_mem_role(opts, 0), bench_mem_init(&side, len) != 0)) {
        goto out;
    }
    if ((bench_oob_send(side.oob_fd, "HELLO v=%d test=%s window=%u len=%zu "
                        "descs=%zu first=%zu last=%zu engine=%s "
                        "target=%" PRIu64 " alloc=%s mem=%s\n",
                        BENCH_PROTO_VERSION,
                        info->name, opts->window, len, runs[0].num_descs,
                        runs[0].msg_size, runs[num_runs - 1].msg_size,
                        hixl_engine_name(side.engine),
                        (uint64_t)(uintptr_t)bench_target(&side),
                        opts->alloc_mmap ? "mmap" : "hixl",
                        bench_mem_arg()) != 0) ||
        (bench_oob_recv(side.oob_fd, opts->timeout_s, NULL, NULL,
                        &line) != 0) ||
        (bench_expect(line, "OK") != 0)) {
        goto out;
    }
    v = bc_kv(line, "target");
    if ((v == NULL) || (bc_parse_u64(v, &side.peer_target) != 0) ||
        ((v = bc_kv(line, "engine")) == NULL)) {
        fprintf(stderr, "put_bw: malformed answer from the server: %.80s\n",
                line);
        goto out;
    }
    if ((bench_connect(&side, v) != 0) ||
        (bench_oob_send(side.oob_fd, "CONNECTED\n") != 0) ||
        (bench_oob_recv(side.oob_fd, opts->timeout_s, bench_progress, &side,
                        &line) != 0) ||
        (bench_expect(line, "READY") != 0)) {
        goto out;
    }

    bench_print_header(opts);
    for (i = 0; i < num_runs; ++i) {
        rc = bench_client_run(&side, opts, &runs[i], i);
        if (rc != BENCH_EXIT_OK) {
            goto out;
        }
    }
    bench_oob_send(side.oob_fd, "BYE\n");
    rc = BENCH_EXIT_OK;
out:
    bench_side_cleanup(&side);
    bench_free_runs(opts, runs, num_runs);
    return rc;
}

/* ---- server -------------------------------------------------------------- */

static int bench_server_hello(bench_side_t *side, bench_opts_t *opts,
                              const char *line, bench_run_t *first,
                              bench_run_t *last, char *client_engine,
                              size_t client_engine_len)
{
    uint64_t v, len, descs, msg_first, msg_last, window;
    const char *s;

    if ((bench_expect(line, "HELLO") != 0) ||
        ((s = bc_kv(line, "v")) == NULL) || (bc_parse_u64(s, &v) != 0)) {
        return -1;
    }
    if (v != BENCH_PROTO_VERSION) {
        bench_oob_send(side->oob_fd, "ERR msg=protocol version %" PRIu64
                       " is not this server's %d (different put_bw builds)\n",
                       v, BENCH_PROTO_VERSION);
        fprintf(stderr, "put_bw: the client speaks protocol version %" PRIu64
                ", this server %d\n", v, BENCH_PROTO_VERSION);
        return -1;
    }
    if (((s = bc_kv(line, "test")) == NULL) ||
        (bench_test_by_name(s, &opts->test) != 0) ||
        ((s = bc_kv(line, "window")) == NULL) ||
        (bc_parse_u64(s, &window) != 0) || (window == 0) ||
        ((s = bc_kv(line, "len")) == NULL) ||
        (bc_parse_u64(s, &len) != 0) || (len == 0) ||
        ((s = bc_kv(line, "descs")) == NULL) ||
        (bc_parse_u64(s, &descs) != 0) ||
        ((s = bc_kv(line, "first")) == NULL) ||
        (bc_parse_u64(s, &msg_first) != 0) ||
        ((s = bc_kv(line, "last")) == NULL) ||
        (bc_parse_u64(s, &msg_last) != 0) ||
        ((s = bc_kv(line, "target")) == NULL) ||
        (bc_parse_u64(s, &side->peer_target) != 0) ||
        (((s = bc_kv(line, "mem")) != NULL) &&   /* -m of the client */
         (bench_mem_parse(s) != 0)) ||
        ((s = bc_kv(line, "engine")) == NULL) ||
        (strlen(s) >= client_engine_len)) {
        bench_oob_send(side->oob_fd, "ERR msg=malformed HELLO\n");
        fprintf(stderr, "put_bw: malformed HELLO from the client: %.120s\n",
                line);
        return -1;
    }
    snprintf(client_engine, client_engine_len, "%s", s);
    s = bc_kv(line, "alloc");
    opts->alloc_mmap = (s != NULL) && !strcmp(s, "mmap");
    opts->window     = (unsigned)window;
    first->num_descs = descs;
    first->msg_size  = msg_first;
    *last            = *first;
    last->msg_size   = msg_last;
    side->len        = len;
    return 0;
}

/* A RUN line: the sizes of this measurement; prepare memory, answer GO. */
static int bench_server_prepare(bench_side_t *side, const bench_opts_t *opts,
                                const char *line, bench_opts_t *run_opts,
                                bench_run_t *run, uint64_t *seed)
{
    const char *s;
    uint64_t count;
    size_t sum = 0;
    unsigned i;

    *run_opts = *opts;
    run_opts->sizes = NULL;
    if (((s = bc_kv(line, "sizes")) == NULL) ||
        (bench_sizes_parse(s, &run_opts->sizes, &run_opts->num_sizes, NULL,
                           0) != 0)) {
        goto bad;
    }
    if (((s = bc_kv(line, "count")) == NULL) ||
        (bc_parse_u64(s, &count) != 0) || (count == 0) ||
        ((s = bc_kv(line, "seed")) == NULL) ||
        (bc_parse_u64(s, seed) != 0)) {
        goto bad;
    }
    for (i = 0; i < run_opts->num_sizes; ++i) {
        sum += run_opts->sizes[i];
    }
    run->sizes     = run_opts->sizes;
    run->num_sizes = run_opts->num_sizes;
    run->count     = (unsigned)count;
    run->num_descs = (size_t)run->num_sizes * count;
    run->msg_size  = sum * count;
    run->name      = "";
    if ((run->msg_size > side->len) || (bench_build_descs(side, run, BENCH_LAYOUT_PACKED) != 0)) {
        goto bad;
    }
    bench_mem_zero(bench_target(side), run->msg_size);
    if (bench_tests[opts->test].op == HIXL_READ) {
        bench_pattern_fill(bench_target(side), run->msg_size, *seed);
    }
    return bench_oob_send(side->oob_fd, "GO\n");
bad:
    bench_oob_send(side->oob_fd, "ERR msg=malformed RUN\n");
    fprintf(stderr, "put_bw: malformed RUN from the client: %.120s\n", line);
    return -1;
}

/* END: check what the client wrote; answer VERIFY.  Returns the exit code. */
static int bench_server_verify(bench_side_t *side, const bench_opts_t *opts,
                               const bench_run_t *run, const char *line)
{
    const bench_test_info_t *info = &bench_tests[opts->test];
    uint64_t seed, sseed;
    char msg[256] = "";
    const char *s;

    if (bench_expect(line, "END") != 0) {
        return BENCH_EXIT_ERROR;
    }
    s = bc_kv(line, "ok");
    if ((s == NULL) || strcmp(s, "1")) {
        /* the client has given up and says why; nothing to answer */
        fprintf(stderr, "put_bw: verification FAILED on the client: %s\n",
                bench_msg(line));
        return BENCH_EXIT_CORRUPT;
    }
    if (info->op == HIXL_READ) {
        return (bench_oob_send(side->oob_fd, "VERIFY ok=1\n") == 0) ?
               BENCH_EXIT_OK : BENCH_EXIT_ERROR;
    }
    if (((s = bc_kv(line, "seed")) == NULL) ||
        (bc_parse_u64(s, &seed) != 0)) {
        fprintf(stderr, "put_bw: END without a seed\n");
        return BENCH_EXIT_ERROR;
    }
    if (bench_pattern_check(bench_target(side), run->msg_size, seed, msg,
                            sizeof(msg)) != 0) {
        fprintf(stderr, "put_bw: verification FAILED: the data the client "
                "put is corrupted: %s\n", msg);
        bench_oob_send(side->oob_fd, "VERIFY ok=0 msg=server received "
                       "corrupted data: %s\n", msg);
        return BENCH_EXIT_CORRUPT;
    }
    if (!info->pingpong) {
        return (bench_oob_send(side->oob_fd, "VERIFY ok=1\n") == 0) ?
               BENCH_EXIT_OK : BENCH_EXIT_ERROR;
    }
    /* ping-pong: our direction too */
    sseed = bench_seed(7);
    bench_pattern_fill(bench_local(side), run->msg_size, sseed);
    if (bench_transfer_wait(side, HIXL_WRITE) != 0) {
        bench_oob_send(side->oob_fd, "VERIFY ok=0 msg=the server's "
                       "verification put failed: %s\n", hixl_last_error());
        return BENCH_EXIT_ERROR;
    }
    return (bench_oob_send(side->oob_fd, "VERIFY ok=1 seed=%" PRIu64 "\n",
                           sseed) == 0) ? BENCH_EXIT_OK : BENCH_EXIT_ERROR;
}

static int bench_server(bench_opts_t *opts)
{
    bench_side_t side;
    bench_opts_t run_opts;
    bench_run_t first, last, run;
    char host[128], client_engine[HIXL_ENGINE_NAME_MAX + 1], *line;
    int listen_fd = -1, rc = BENCH_EXIT_ERROR, vrc;
    uint64_t seed;
    size_t len;

    memset(&side, 0, sizeof(side));
    memset(&first, 0, sizeof(first));
    memset(&run_opts, 0, sizeof(run_opts));
    side.oob_fd = -1;
    if (bench_oob_listen(opts, &listen_fd) != 0) {
        return BENCH_EXIT_ERROR;
    }
    if (bench_oob_accept(listen_fd, opts->timeout_s, opts->quiet,
                         &side.oob_fd) != 0) {
        close(listen_fd);
        return BENCH_EXIT_ERROR;
    }
    close(listen_fd);

    if ((bench_oob_recv(side.oob_fd, opts->timeout_s, NULL, NULL,
                        &line) != 0) ||
        (bench_server_hello(&side, opts, line, &first, &last, client_engine,
                            sizeof(client_engine)) != 0) ||
        (bench_oob_local_host(side.oob_fd, host, sizeof(host)) != 0)) {
        goto out;
    }
    len = side.len;
    side.is_server  = 1;
    side.alloc_mmap = opts->alloc_mmap;
    bench_mem_role(opts, 1);
    if ((bench_engine_init(&side, opts, host, 1) != 0) ||
        (bench_mem_init(&side, len) != 0)) {
        bench_oob_send(side.oob_fd, "ERR msg=server set-up failed: %s\n",
                       hixl_last_error());
        goto out;
    }
    if (bench_oob_send(side.oob_fd, "OK engine=%s target=%" PRIu64 "\n",
                       hixl_engine_name(side.engine),
                       (uint64_t)(uintptr_t)bench_target(&side)) != 0) {
        goto out;
    }
    if (!opts->quiet) {
        bench_print_test_box(opts, &first, &last);
    }
    /* the client connects to us meanwhile: progress while waiting */
    if ((bench_oob_recv(side.oob_fd, opts->timeout_s, bench_progress, &side,
                        &line) != 0) ||
        (bench_expect(line, "CONNECTED") != 0)) {
        goto out;
    }
    if (bench_tests[opts->test].pingpong) {
        if (bench_connect(&side, client_engine) != 0) {
            bench_oob_send(side.oob_fd, "ERR msg=the server could not "
                           "connect back to %s: %s\n", client_engine,
                           hixl_last_error());
            goto out;
        }
    } else {
        snprintf(side.peer_name, sizeof(side.peer_name), "%s",
                 client_engine);
    }
    if (bench_oob_send(side.oob_fd, "READY\n") != 0) {
        goto out;
    }

    for (;;) {
        if (bench_oob_recv(side.oob_fd, opts->timeout_s, bench_progress,
                           &side, &line) != 0) {
            goto out;
        }
        if (strcmp(line, "BYE") == 0) {
            break;
        }
        if ((bench_expect(line, "RUN") != 0) ||
            (bench_server_prepare(&side, opts, line, &run_opts, &run,
                                  &seed) != 0) ||
            (bench_server_loop(&side, opts, &run, &line) != 0)) {
            goto out;
        }
        vrc = bench_server_verify(&side, opts, &run, line);
        free(run_opts.sizes);
        run_opts.sizes = NULL;
        if (vrc != BENCH_EXIT_OK) {
            rc = vrc;
            goto out;
        }
    }
    rc = BENCH_EXIT_OK;
out:
    free(run_opts.sizes);
    bench_side_cleanup(&side);
    return rc;
}

int main(int argc, char **argv)
{
    bench_opts_t opts;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    bench_parse_opts(&opts, argc, argv);
    bench_clock_init();
    rc = (opts.server != NULL) ? bench_client(&opts) : bench_server(&opts);
    free(opts.sizes);
    return rc;
}
