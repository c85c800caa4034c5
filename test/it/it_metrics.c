/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Metrics of real engines: what hixl_get_stats, hixl_metrics_text and the
 * HTTP endpoint report equals what the run did.
 *
 * A decode engine (a target, serving /metrics on a loopback port) takes two
 * prefills: this process, and a forked one that writes a known number of
 * bytes and is then killed with SIGKILL.  This process writes a known
 * number of bytes to the decode, and to a second target that it stops
 * (SIGSTOP) with a write in flight and then kills: that write ends FAILED
 * (over tcp a write completes only when the target answers, and a stopped
 * target never does), and the connection closes as the peer's death.
 *
 * Then: this engine counts exactly the completed and failed writes and
 * their bytes, whatever paths they took, two connections made and one
 * closed by a peer's death, nothing in flight; its exposition text says the
 * same; the decode's endpoint says two connections accepted and one closed
 * by a peer's death, one open, its registered bytes; /healthz answers,
 * and bad requests get an error status without disturbing a transfer
 * after them.  Nothing here depends on time: waits are bounded polls.
 * Built without libmicrohttpd, the endpoint's parts check that
 * hixl.MetricsListen is refused as UNSUPPORTED instead.
 */
#include "config.h"
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define DECODE_LEN  (4 * HX_MIB)
#define VICTIM_LEN  (1 * HX_MIB)
#define WRITE_LEN   (256 * 1024)
#define N_WRITES    8              /* this process to the decode */
#define CHILD_LEN   (64 * 1024)
#define CHILD_WRITES 3             /* the killed prefill */
#define FAIL_LEN    (64 * 1024)

/* ---- a small HTTP client ------------------------------------------------------ */

/* GET (or another method) path from 127.0.0.1:port; the status code, the
 * body into a malloc'd *body_p (NUL-terminated).  -1 when it cannot
 * connect. */
static int http_req(uint16_t port, const char *method, const char *path,
                    char **body_p)
{
    struct sockaddr_in sa;
    char req[256], *buf = NULL, *p;
    size_t len = 0, cap = 0;
    ssize_t n;
    int fd, code = -1;

    *body_p = NULL;
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_port        = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr*)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s\r\n",
             method, path, strcmp(method, "POST") ? "" :
             "Content-Length: 5\r\n");
    ck_assert(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    if (!strcmp(method, "POST")) {
        ck_assert(write(fd, "hello", 5) == 5);
    }
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = 2 * cap + 8192;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    if (buf == NULL) {
        return -1;
    }
    buf[len] = '\0';
    if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1) {
        free(buf);
        return -1;
    }
    p = strstr(buf, "\r\n\r\n");
    *body_p = strdup((p != NULL) ? p + 4 : "");
    free(buf);
    return code;
}

/* The value of the sample line starting with `series ` in text, or -1. */
static double sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    const char *p = text;

    while ((p = strstr(p, series)) != NULL) {
        if (((p == text) || (p[-1] == '\n')) && (p[n] == ' ')) {
            return strtod(p + n + 1, NULL);
        }
        p += n;
    }
    return -1;
}

/* Sum of the samples of `name` whose labels contain every `must`. */
static double sum_of(const char *text, const char *name, const char *must1,
                     const char *must2)
{
    char line[512];
    const char *p = text, *nl;
    size_t n = strlen(name), l;
    double total = 0;

    for (; *p != '\0'; p = nl + 1) {
        nl = strchr(p, '\n');
        if (nl == NULL) {
            break;
        }
        l = (size_t)(nl - p);
        if ((l >= sizeof(line)) || strncmp(p, name, n) || (p[n] != '{')) {
            continue;
        }
        memcpy(line, p, l);
        line[l] = '\0';
        if (((must1 == NULL) || strstr(line, must1)) &&
            ((must2 == NULL) || strstr(line, must2))) {
            total += strtod(strrchr(line, ' ') + 1, NULL);
        }
    }
    return total;
}

/* The decode's /metrics, polled until series reaches at least want
 * (bounded: a wait, not a clock). */
static char *decode_metrics_when(uint16_t port, const char *series,
                                 double want)
{
    char *body = NULL;
    int i, code;

    for (i = 0; i < 6000; ++i) {
        code = http_req(port, "GET", "/metrics", &body);
        ck_assert_msg(code == 200, "GET /metrics: %d", code);
        if (sample(body, series) >= want) {
            return body;
        }
        free(body);
        usleep(10000);
    }
    ck_abort_msg("the decode's %s never reached %g", series, want);
    return NULL;
}

/* ---- the killed prefill -------------------------------------------------------- */

/* A prefill of its own process: connects to the decode, writes
 * CHILD_WRITES x CHILD_LEN, says so on fd, and waits to be killed. */
static void child_prefill(const char *decode, uint64_t remote, int fd)
{
    hixl_transfer_op_desc_t d;
    hixl_engine_t *e;
    char ok = 1;
    void *buf;
    int i;
    hixl_option_t eph = {"hixl.ListenEphemeral", "1"};

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(HX_TEST_TIMEOUT_S);
    if ((hixl_initialize("127.0.0.1:0", &eph, 1, &e) != HIXL_SUCCESS) ||
        (hixl_connect(e, decode, HX_OP_TIMEOUT_MS) != HIXL_SUCCESS)) {
        _exit(2);
    }
    buf = hx_alloc_pages(CHILD_LEN);
    hx_pat_fill(buf, CHILD_LEN, 77, 0);
    if (hx_register(e, buf, CHILD_LEN) == NULL) {
        _exit(3);
    }
    d.local_addr  = (uintptr_t)buf;
    d.remote_addr = remote + DECODE_LEN - CHILD_LEN;
    d.len         = CHILD_LEN;
    for (i = 0; i < CHILD_WRITES; ++i) {
        if (hixl_transfer_sync(e, decode, HIXL_WRITE, &d, 1,
                               HX_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
            _exit(4);
        }
    }
    if (write(fd, &ok, 1) != 1) {
        _exit(5);
    }
    for (;;) {
        pause();
    }
}

/* ---- the test ------------------------------------------------------------------ */

START_TEST(test_metrics_equal_the_run)
{
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_transfer_status_t st;
    hx_target_t decode, victim;
    hx_target_cfg_t cfg;
    hixl_stats_t s;
    hixl_engine_t *e;
    hixl_req_t req;
    uint16_t port = hx_stable_port();
    uint64_t completed = 0, failed = 0, cbytes = 0, fbytes = 0;
    char listen[64], *body, *text, c;
    size_t need;
    void *src;
    int pipefd[2], o, p, i, code;
    pid_t child;

    /* over tcp a write ends only when its target answers (see above) */
    hx_use_tls(0);
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
    hx_target_cfg_init(&cfg, DECODE_LEN);
#ifdef HAVE_MICROHTTPD
    hx_target_cfg_opt(&cfg, "hixl.MetricsListen", listen);
#endif
    hx_target_start(&decode, &cfg);
    hx_target_cfg_init(&cfg, VICTIM_LEN);
    hx_target_start(&victim, &cfg);
    ck_assert_int_eq(pipe(pipefd), 0);
    child = fork();
    ck_assert(child >= 0);
    if (child == 0) {
        close(pipefd[0]);
        child_prefill(decode.name, decode.addr[0], pipefd[1]);
    }
    close(pipefd[1]);

    /* names of their own: the two prefills share a host */
    e   = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    src = hx_alloc_pages(DECODE_LEN);
    hx_register(e, src, DECODE_LEN);
    hx_connect(e, decode.name);
    hx_connect(e, victim.name);

    /* N_WRITES x WRITE_LEN to the decode, verified where they landed */
    for (i = 0; i < N_WRITES; ++i) {
        d.local_addr  = (uintptr_t)src + (size_t)i * WRITE_LEN;
        d.remote_addr = decode.addr[0] + (size_t)i * WRITE_LEN;
        d.len         = WRITE_LEN;
        hx_pat_fill((void*)(uintptr_t)d.local_addr, WRITE_LEN, 5, i);
        hx_transfer(e, decode.name, HIXL_WRITE, &d, 1, i & 1);
        hx_target_verify(&decode, 0, (uint64_t)i * WRITE_LEN, WRITE_LEN, 5, i);
    }
    /* one to the victim, then one in flight while it is stopped */
    d.local_addr  = (uintptr_t)src;
    d.remote_addr = victim.addr[0];
    d.len         = FAIL_LEN;
    hx_transfer(e, victim.name, HIXL_WRITE, &d, 1, 0);
    hx_stop_child(victim.pid);
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = HX_REPLY_TIMEOUT_MS;
    hx_ok(hixl_transfer_async(e, victim.name, HIXL_WRITE, &d, 1, &args,
                              &req));
    ck_assert_int_eq(kill(victim.pid, SIGKILL), 0);
    waitpid(victim.pid, NULL, 0);
    st = hx_wait_req(e, req, NULL);
    ck_assert_msg(st == HIXL_TRANSFER_FAILED, "the write to the killed "
                  "target ended %d: %s", (int)st, hixl_last_error());

    /* the other prefill did its writes: kill it */
    ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    ck_assert_int_eq(kill(child, SIGKILL), 0);
    waitpid(child, NULL, 0);

    /* ---- this engine: exactly what it moved */
    memset(&s, 0, sizeof(s));
    s.size = sizeof(s);
    hx_ok(hixl_get_stats(e, &s));
    ck_assert_uint_eq(s.size, sizeof(s));
    ck_assert_uint_eq(s.version, HIXL_STATS_VERSION);
    for (o = 0; o < HIXL_STATS_OPS; ++o) {
        for (p = 0; p < HIXL_STATS_PATHS; ++p) {
            completed += s.transfers[o][p][HIXL_STATS_COMPLETED];
            failed    += s.transfers[o][p][HIXL_STATS_FAILED];
            cbytes    += s.bytes[o][p][HIXL_STATS_COMPLETED];
            fbytes    += s.bytes[o][p][HIXL_STATS_FAILED];
            ck_assert_uint_eq(s.transfers[o][p][HIXL_STATS_TIMEOUT], 0);
        }
    }
    for (p = 0; p < HIXL_STATS_PATHS; ++p) {
        ck_assert_uint_eq(s.transfers[HIXL_READ][p][HIXL_STATS_COMPLETED], 0);
    }
    ck_assert_uint_eq(completed, N_WRITES + 1);
    ck_assert_uint_eq(cbytes, (uint64_t)N_WRITES * WRITE_LEN + FAIL_LEN);
    ck_assert_uint_eq(failed, 1);
    ck_assert_uint_eq(fbytes, FAIL_LEN);
    /* one post in HIXL_METRICS_TIME_EVERY (8) of a thread is timed, its
     * first included: of these 10 posts, the 1st and the 9th, both
     * completed */
    ck_assert_uint_eq(s.latency[HIXL_WRITE].count, 2);
    ck_assert_uint_eq(s.latency[HIXL_READ].count, 0);
    ck_assert_uint_eq(s.conn_connected, 2);
    ck_assert_uint_eq(s.conn_open, 1);
    ck_assert_msg(s.conn_closed[HIXL_STATS_CLOSED_PEER_DEATH] == 1,
                  "closed: disconnect %llu, peer timeout %llu, peer death "
                  "%llu, error %llu", (unsigned long long)s.conn_closed[0],
                  (unsigned long long)s.conn_closed[1],
                  (unsigned long long)s.conn_closed[2],
                  (unsigned long long)s.conn_closed[3]);
    ck_assert_uint_eq(s.conn_closed[HIXL_STATS_CLOSED_DISCONNECT] +
                      s.conn_closed[HIXL_STATS_CLOSED_PEER_TIMEOUT] +
                      s.conn_closed[HIXL_STATS_CLOSED_ERROR], 0);
    ck_assert_uint_eq(s.requests_in_flight, 0);
    ck_assert_uint_eq(s.regions, 1);
    ck_assert_uint_eq(s.region_bytes, DECODE_LEN);
    /* an older caller's smaller struct is filled as far as it goes */
    memset(&s, 0xff, sizeof(s));
    s.size = offsetof(hixl_stats_t, transfers) + sizeof(s.transfers);
    hx_ok(hixl_get_stats(e, &s));
    ck_assert_uint_eq(s.size, offsetof(hixl_stats_t, transfers) +
                              sizeof(s.transfers));
    ck_assert_uint_eq(s.bytes[0][0][0], UINT64_MAX);   /* untouched */
    s.size = 4;
    hx_expect(hixl_get_stats(e, &s), HIXL_PARAM_INVALID, "size");

    /* ---- the same in its text */
    /* the figures move between two calls (uptime, wake-ups): room to
     * spare */
    need = hixl_metrics_text(e, NULL, 0);
    ck_assert_uint_gt(need, 0);
    text = malloc(need + 4096);
    ck_assert(text != NULL);
    ck_assert_uint_lt(hixl_metrics_text(e, text, need + 4096), need + 4096);
    ck_assert(sum_of(text, "hixl_transfers_total", "outcome=\"completed\"",
                     NULL) == N_WRITES + 1);
    ck_assert(sum_of(text, "hixl_transfer_bytes_total",
                     "outcome=\"completed\"", NULL) ==
              (double)N_WRITES * WRITE_LEN + FAIL_LEN);
    ck_assert(sum_of(text, "hixl_transfers_total", "outcome=\"failed\"",
                     "op=\"write\"") == 1);
    ck_assert(sum_of(text, "hixl_transfer_bytes_total", "outcome=\"failed\"",
                     NULL) == FAIL_LEN);
    ck_assert(sample(text, "hixl_connections_closed_total"
                     "{reason=\"peer_death\"}") == 1);
    ck_assert(sample(text, "hixl_transfer_latency_seconds_count"
                     "{op=\"write\"}") == 2);
    ck_assert_str_eq(hixl_metrics_address(e), "");
    free(text);

#ifdef HAVE_MICROHTTPD
    /* ---- the decode, over HTTP: two prefills accepted, one died */
    body = decode_metrics_when(port, "hixl_connections_closed_total"
                               "{reason=\"peer_death\"}", 1);
    ck_assert(sample(body, "hixl_connections_accepted_total") == 2);
    ck_assert(sample(body, "hixl_connections_open") == 1);
    ck_assert(sum_of(body, "hixl_connections_closed_total", NULL, NULL) == 1);
    ck_assert(sum_of(body, "hixl_connections_refused_total", NULL, NULL) == 0);
    ck_assert(sample(body, "hixl_registered_bytes") == DECODE_LEN);
    /* a target writes nothing itself */
    ck_assert(sum_of(body, "hixl_transfers_total", NULL, NULL) == 0);
    ck_assert_ptr_nonnull(strstr(body, "# TYPE hixl_transfers_total "
                                 "counter\n"));
    free(body);

    /* ---- the endpoint's other answers, and a transfer after them */
    code = http_req(port, "GET", "/healthz", &body);
    ck_assert_int_eq(code, 200);
    ck_assert_str_eq(body, "ok\n");
    free(body);
    code = http_req(port, "GET", "/nothing", &body);
    ck_assert_int_eq(code, 404);
    free(body);
    code = http_req(port, "POST", "/metrics", &body);
    ck_assert_int_eq(code, 405);
    free(body);
    code = http_req(port, "BREW", "/metrics", &body);
    ck_assert_int_ge(code, 400);
    free(body);
    d.local_addr  = (uintptr_t)src;
    d.remote_addr = decode.addr[0];
    d.len         = WRITE_LEN;
    hx_pat_fill(src, WRITE_LEN, 9, 0);
    hx_transfer(e, decode.name, HIXL_WRITE, &d, 1, 0);
    hx_target_verify(&decode, 0, 0, WRITE_LEN, 9, 0);
#else
    (void)code;
    (void)body;
    (void)decode_metrics_when;
#endif

    hx_target_stop(&decode);
    hx_ok(hixl_finalize(e));
    hx_free_pages(src, DECODE_LEN);
}
END_TEST

/* tools/hixl_info -m prints the engine at addr's figures, and fails with
 * a reason where no engine serves them. */
static void it_info_metrics(const char *addr)
{
    char cmd[512], out[8192];
    size_t n;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "../tools/hixl_info -m %s 2>&1", addr);
    p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(strstr(out, "hixl_engine_info{engine=") != NULL &&
                  strstr(out, "hixl_uptime_seconds") != NULL,
                  "hixl_info -m %s: %s", addr, out);
    p = popen("../tools/hixl_info -m 127.0.0.1:1 2>&1", "r");
    ck_assert_ptr_nonnull(p);
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    ck_assert_int_ne(pclose(p), 0);
    ck_assert_msg(strstr(out, "cannot connect") != NULL, "%s", out);
}

/* The option's errors: a bad address is refused at hixl_initialize, and
 * port 0 takes a free port that hixl_metrics_address names. */
START_TEST(test_listen_option)
{
    hixl_option_t opt = {"hixl.MetricsListen", "no-port-here"};
    hixl_engine_t *e;
    const char *addr;
    char *body;
    int code;

#ifndef HAVE_MICROHTTPD
    opt.value = "127.0.0.1:0";
    hx_expect(hixl_initialize("127.0.0.1", &opt, 1, &e), HIXL_UNSUPPORTED,
              "libmicrohttpd");
    (void)addr;
    (void)body;
    (void)code;
    return;
#endif
    hx_expect(hixl_initialize("127.0.0.1", &opt, 1, &e), HIXL_PARAM_INVALID,
              "HOST:PORT");
    e    = hx_engine("127.0.0.1", "hixl.MetricsListen", "127.0.0.1:0", NULL);
    addr = hixl_metrics_address(e);
    ck_assert_msg(!strncmp(addr, "127.0.0.1:", 10) && strcmp(addr + 10, "0"),
                  "address %s", addr);
    code = http_req((uint16_t)atoi(addr + 10), "GET", "/metrics", &body);
    ck_assert_int_eq(code, 200);
    ck_assert_ptr_nonnull(strstr(body, "hixl_engine_info{engine=\""));
    free(body);
    it_info_metrics(addr);
    hx_ok(hixl_finalize(e));
}
END_TEST

static Suite *it_metrics_suite(void)
{
    Suite *s = suite_create("it_metrics");
    TCase *tc = hx_tcase("metrics");

    tcase_add_test(tc, test_metrics_equal_the_run);
    tcase_add_test(tc, test_listen_option);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_metrics_suite());
}
