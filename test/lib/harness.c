/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test harness: suite runner, patterns, forked targets.  See harness.h.
 */
#include "config.h"
#include "harness.h"
#include "fd_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- suites ---------------------------------------------------------------- */

int hx_env_pinned(const char *name)
{
    const char *list = getenv("HX_PIN_ENV");
    size_t n         = strlen(name);
    const char *p;

    for (p = list; (p != NULL) && ((p = strstr(p, name)) != NULL); p += n) {
        if (((p == list) || (p[-1] == ' ')) &&
            ((p[n] == ' ') || (p[n] == '\0'))) {
            return 1;
        }
    }
    return 0;
}

void hx_clear_hixl_env(void)
{
    char name[256];
    const char *eq;
    size_t n;
    int again = 1;

    /* unsetenv changes environ: restart the scan after each removal */
    while (again) {
        again = 0;
        for (char **e = environ; (e != NULL) && (*e != NULL); ++e) {
            eq = strchr(*e, '=');
            if ((strncmp(*e, "HIXL_", 5) != 0) || (eq == NULL)) {
                continue;
            }
            n = (size_t)(eq - *e);
            if (n >= sizeof(name)) {
                continue;
            }
            memcpy(name, *e, n);
            name[n] = '\0';
            if (hx_env_pinned(name)) {
                continue;
            }
            unsetenv(name);
            again = 1;
            break;
        }
    }
    /* CANN's variables that RdmaTrafficClass / RdmaServiceLevel fall back
     * to are options too */
    unsetenv("HCCL_RDMA_TC");
    unsetenv("HCCL_RDMA_SL");
    /* only the build tree's plugins, whatever copy is installed */
    setenv("HIXL_PLUGIN_INSTALL_DIR", "", 1);
}

int hx_main(Suite *suite)
{
    SRunner *sr;
    int failed;

    hx_clear_hixl_env();
    /* a dead target must make writes to its pipe fail, not kill the test */
    signal(SIGPIPE, SIG_IGN);
    sr = srunner_create(suite);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static void hx_teardown(void)
{
    hx_target_set_idle(NULL, NULL);
    hx_target_kill_all();
}

TCase *hx_tcase(const char *name)
{
    TCase *tc = tcase_create(name);

    tcase_set_timeout(tc, HX_TEST_TIMEOUT_S);
    tcase_add_checked_fixture(tc, NULL, hx_teardown);
    return tc;
}

/* ---- transports ------------------------------------------------------------- */

const hx_tls_t hx_tls_table[] = {
    {"UCX_TLS=tcp", "tcp"},
    {"UCX_TLS=sm", "sm"},
    {"UCX_TLS unset", NULL},
    {"UCX_TLS=posix,cma", "posix,cma"},
};
const int hx_tls_count     = 3;
const int hx_tls_count_all = 4;

static const char *hx_current_tls = "UCX_TLS as inherited";

void hx_use_tls(int index)
{
    static char pinned[128];
    const hx_tls_t *t;

    ck_assert_int_ge(index, 0);
    ck_assert_int_lt(index, hx_tls_count_all);
    if (hx_env_pinned("UCX_TLS")) {
        /* every transport index would repeat the same run: keep those of
         * the first transport (in fork mode, where ending this test's
         * process ends only this test) */
        if ((index != 0) && ((getenv("CK_FORK") == NULL) ||
                             strcmp(getenv("CK_FORK"), "no"))) {
            printf("%s: skipped, UCX_TLS is pinned: the iterations of %s "
                   "run it\n", hx_tls_table[index].label,
                   hx_tls_table[0].label);
            fflush(stdout);
            exit(EXIT_SUCCESS);
        }
        snprintf(pinned, sizeof(pinned), "UCX_TLS=%s (pinned)",
                 getenv("UCX_TLS") ? getenv("UCX_TLS") : "unset");
        hx_current_tls = pinned;
        return;
    }
    t = &hx_tls_table[index];
    if (t->tls != NULL) {
        ck_assert_int_eq(setenv("UCX_TLS", t->tls, 1), 0);
    } else {
        ck_assert_int_eq(unsetenv("UCX_TLS"), 0);
    }
    hx_current_tls = t->label;
}

const char *hx_tls_label(void)
{
    return hx_current_tls;
}

/* ---- patterns ------------------------------------------------------------ */

/* splitmix64 finalizer: cheap, and every bit of the input reaches every
 * bit of the output, so a byte moved to the wrong place is caught. */
static inline uint64_t hx_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t hx_pat_word(uint64_t seed_mixed, uint64_t word)
{
    return hx_mix(word ^ seed_mixed);
}

uint8_t hx_pat(uint64_t seed, uint64_t idx)
{
    return (uint8_t)(hx_pat_word(hx_mix(seed), idx >> 3) >> (8 * (idx & 7)));
}

void hx_pat_fill(void *buf, size_t len, uint64_t seed, uint64_t idx)
{
    uint8_t *p = buf;
    uint64_t s = hx_mix(seed), w, i;
    size_t k = 0;
    unsigned b;

    while (k < len) {
        i = idx + k;
        w = hx_pat_word(s, i >> 3);
        for (b = (unsigned)(i & 7); (b < 8) && (k < len); ++b, ++k) {
            p[k] = (uint8_t)(w >> (8 * b));
        }
    }
}

int64_t hx_pat_find_bad(const void *buf, size_t len, uint64_t seed,
                        uint64_t idx)
{
    const uint8_t *p = buf;
    uint64_t s = hx_mix(seed), w, i;
    size_t k = 0;
    unsigned b;

    while (k < len) {
        i = idx + k;
        w = hx_pat_word(s, i >> 3);
        for (b = (unsigned)(i & 7); (b < 8) && (k < len); ++b, ++k) {
            if (p[k] != (uint8_t)(w >> (8 * b))) {
                return (int64_t)k;
            }
        }
    }
    return -1;
}

/* Describe a mismatch: where, what was expected, how many bytes differ. */
static int hx_pat_describe(const void *buf, size_t len, uint64_t seed,
                           uint64_t idx, const char *what, char *msg,
                           size_t msglen)
{
    const uint8_t *p = buf;
    int64_t bad = hx_pat_find_bad(buf, len, seed, idx);
    size_t nbad = 0, k;

    if (bad < 0) {
        return 0;
    }
    for (k = (size_t)bad; k < len; ++k) {
        nbad += (p[k] != hx_pat(seed, idx + k));
    }
    snprintf(msg, msglen, "%s: byte %lld of %zu is 0x%02x, expected 0x%02x "
             "(pattern seed %llu index %llu); %zu of the %zu bytes from "
             "there differ [%s]", what, (long long)bad, len, p[bad],
             hx_pat(seed, idx + (uint64_t)bad), (unsigned long long)seed,
             (unsigned long long)(idx + (uint64_t)bad), nbad,
             len - (size_t)bad, hx_tls_label());
    return -1;
}

int hx_pat_check(const void *buf, size_t len, uint64_t seed, uint64_t idx,
                 const char *what, char *msg, size_t msglen)
{
    return hx_pat_describe(buf, len, seed, idx, what, msg, msglen);
}

uint64_t hx_rand(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return hx_mix(*state);
}

static int hx_port_free(uint16_t port)
{
    struct sockaddr_in sa;
    int fd, one = 1, ok;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return 0;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family      = AF_INET;
    sa.sin_port        = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = (bind(fd, (struct sockaddr*)&sa, sizeof(sa)) == 0);
    close(fd);
    return ok;
}

uint16_t hx_stable_port(void)
{
    uint64_t state = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    unsigned lo = 32768, hi = 60999, first, span, i;
    uint16_t port;
    FILE *f;

    f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2) {
            lo = 32768;
            hi = 60999;
        }
        fclose(f);
    }
    /* below the range where it leaves room, else above it */
    if (lo > 10000 + 1024) {
        first = lo - 10000;
        span  = 10000;
    } else {
        ck_assert_msg(hi < 65535 - 1000, "no ports outside the ephemeral "
                      "range %u-%u", lo, hi);
        first = hi + 1;
        span  = 65535 - hi;
    }
    /* random, so that tests running side by side rarely try the same */
    for (i = 0; i < 1000; ++i) {
        port = (uint16_t)(first + hx_rand(&state) % span);
        if (hx_port_free(port)) {
            return port;
        }
    }
    ck_abort_msg("no free port in %u-%u", first, first + span - 1);
    return 0;
}

void *hx_alloc_pages(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    ck_assert_msg(p != MAP_FAILED, "mmap of %zu bytes: %s", len,
                  strerror(errno));
    return p;
}

void hx_free_pages(void *p, size_t len)
{
    if (p != NULL) {
        munmap(p, len);
    }
}

/* ---- expected failures --------------------------------------------------- */

#define HX_MARK "stream is NULL"

void hx_mark_last_error(void)
{
    /* hixl_config_print(NULL, ...) fails with a fixed message and no side
     * effect: the cheapest way to put a known text in hixl_last_error() */
    hixl_config_print(NULL, NULL, 0);
    ck_assert_str_eq(hixl_last_error(), HX_MARK);
}

int hx_expect_eval(const char *call, hixl_status_t got,
                   hixl_status_t expected, const char *substr, char *msg,
                   size_t msglen)
{
    const char *err = hixl_last_error();

    if (got != expected) {
        snprintf(msg, msglen, "%s [%s]: returned %s (%d), expected %s; "
                 "last error: \"%s\"", call, hx_tls_label(),
                 hixl_strerror(got), (int)got, hixl_strerror(expected), err);
        return -1;
    }
    if (expected == HIXL_SUCCESS) {
        return 0;
    }
    if ((err == NULL) || (err[0] == '\0')) {
        snprintf(msg, msglen, "%s: returned %s with an empty "
                 "hixl_last_error()", call, hixl_strerror(got));
        return -1;
    }
    if (!strcmp(err, HX_MARK) && ((substr == NULL) || strcmp(substr, HX_MARK))) {
        snprintf(msg, msglen, "%s: returned %s without setting "
                 "hixl_last_error() (still \"%s\")", call, hixl_strerror(got),
                 err);
        return -1;
    }
    if ((substr != NULL) && (strstr(err, substr) == NULL)) {
        snprintf(msg, msglen, "%s: returned %s but its message \"%s\" does "
                 "not mention \"%s\"", call, hixl_strerror(got), err, substr);
        return -1;
    }
    return 0;
}

/* ---- engines in this process ------------------------------------------------ */

hixl_engine_t *hx_engine(const char *name, ...)
{
    hixl_option_t opts[HX_MAX_OPTS];
    hixl_engine_t *engine = NULL;
    size_t n = 0;
    const char *key;
    va_list ap;

    va_start(ap, name);
    while ((key = va_arg(ap, const char*)) != NULL) {
        ck_assert_uint_lt(n, HX_MAX_OPTS);
        opts[n].key   = key;
        opts[n].value = va_arg(ap, const char*);
        ++n;
    }
    va_end(ap);
    hx_ok(hixl_initialize(name, opts, n, &engine));
    ck_assert_ptr_nonnull(engine);
    return engine;
}

void hx_connect(hixl_engine_t *engine, const char *remote)
{
    hx_ok(hixl_connect(engine, remote, HX_OP_TIMEOUT_MS));
}

hixl_mem_handle_t hx_register(hixl_engine_t *engine, void *p, size_t len)
{
    hixl_mem_desc_t desc = {(uintptr_t)p, len};
    hixl_mem_handle_t h = NULL;

    hx_ok(hixl_register_mem(engine, &desc, HIXL_MEM_HOST, &h));
    ck_assert_ptr_nonnull(h);
    return h;
}

static uint64_t hx_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

hixl_transfer_status_t hx_wait_req(hixl_engine_t *engine, hixl_req_t req,
                                   hixl_status_t *status_p)
{
    uint64_t deadline = hx_now_ms() + HX_REPLY_TIMEOUT_MS;
    hixl_transfer_status_t ts = HIXL_TRANSFER_WAITING;
    hixl_status_t st;

    for (;;) {
        st = hixl_get_transfer_status(engine, req, &ts);
        if (status_p != NULL) {
            *status_p = st;
        }
        if ((st != HIXL_SUCCESS) || (ts != HIXL_TRANSFER_WAITING)) {
            return (st != HIXL_SUCCESS) ? HIXL_TRANSFER_FAILED : ts;
        }
        ck_assert_msg(hx_now_ms() < deadline, "request %p still WAITING "
                      "after %d ms [%s]", (void*)req, HX_REPLY_TIMEOUT_MS,
                      hx_tls_label());
        sched_yield();
    }
}

void hx_transfer(hixl_engine_t *engine, const char *remote,
                 hixl_transfer_op_t op, const hixl_transfer_op_desc_t *descs,
                 size_t num_descs, int async)
{
    const char *opname = (op == HIXL_WRITE) ? "WRITE" : "READ";
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t req = NULL;

    if (!async) {
        st = hixl_transfer_sync(engine, remote, op, descs, num_descs,
                                HX_OP_TIMEOUT_MS);
        ck_assert_msg(st == HIXL_SUCCESS, "hixl_transfer_sync %s of %zu "
                      "descriptor(s) (first %zu bytes) to %s [%s]: %s: %s",
                      opname, num_descs, (size_t)descs[0].len, remote,
                      hx_tls_label(), hixl_strerror(st), hixl_last_error());
        return;
    }
    st = hixl_transfer_async(engine, remote, op, descs, num_descs, NULL, &req);
    ck_assert_msg(st == HIXL_SUCCESS, "hixl_transfer_async %s of %zu "
                  "descriptor(s) to %s [%s]: %s: %s", opname, num_descs,
                  remote, hx_tls_label(), hixl_strerror(st),
                  hixl_last_error());
    ck_assert_ptr_nonnull(req);
    ts = hx_wait_req(engine, req, &st);
    ck_assert_msg((st == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_COMPLETED),
                  "async %s of %zu descriptor(s) to %s [%s] ended with "
                  "transfer status %d, call status %s: %s", opname, num_descs,
                  remote, hx_tls_label(), (int)ts, hixl_strerror(st),
                  hixl_last_error());
}

/* ---- targets: pipe protocol ------------------------------------------------- */

enum {
    HX_CMD_QUIT = 1,
    HX_CMD_REGISTER,      /* a = len, b = misalign, c = seed */
    HX_CMD_DEREGISTER,    /* region */
    HX_CMD_FILL,          /* region, a = off, b = len, c = seed, d = idx */
    HX_CMD_VERIFY,        /* as FILL */
    HX_CMD_NOTIFIES,
    HX_CMD_WATCH,         /* a = count, b = timeout_ms */
    HX_CMD_SEND_NOTIFY,   /* data = remote \0 name \0 msg; a = msg length */
    HX_CMD_STALL          /* a = ms: sleep without touching the engine */
};

typedef struct hx_cmd {
    uint32_t op;
    uint32_t region;
    uint64_t a, b, c, d;
    uint32_t datalen;
    uint32_t pad;
} hx_cmd_t;

typedef struct hx_rep {
    int32_t  status;
    uint32_t datalen;
    uint64_t value;
    uint64_t value2;
} hx_rep_t;

/* Whole-buffer read (hx_write_all: fd_io.h); -1 on error or EOF. */
static int hx_read_all(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    ssize_t n;

    while (len > 0) {
        n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- targets: the child ---------------------------------------------------- */

typedef struct hx_child_region {
    void             *map;
    size_t            maplen;
    uint8_t          *base;
    size_t            len;
    hixl_mem_handle_t handle;
} hx_child_region_t;

typedef struct hx_child_notify {
    char    *remote, *name, *note;
    uint8_t *msg;
    size_t   msg_len;
    int      verified;
} hx_child_notify_t;

typedef struct hx_child {
    const hx_target_cfg_t *cfg;
    hixl_engine_t         *engine;
    int                    cmd_fd, rep_fd;
    hx_child_region_t      regions[HX_MAX_REGIONS];
    hx_child_notify_t     *notifies;
    size_t                 nnotifies, cap;
    int                    drain_failed;
    char                   drain_err[256];
} hx_child_t;

static void hx_child_reply(hx_child_t *c, int32_t status, uint64_t value,
                           uint64_t value2, const void *data, size_t len)
{
    hx_rep_t rep;

    memset(&rep, 0, sizeof(rep));
    rep.status  = status;
    rep.datalen = (uint32_t)len;
    rep.value   = value;
    rep.value2  = value2;
    if ((hx_write_all(c->rep_fd, &rep, sizeof(rep)) != 0) ||
        ((len > 0) && (hx_write_all(c->rep_fd, data, len) != 0))) {
        _exit(5);   /* the test is gone */
    }
}

static void hx_child_reply_text(hx_child_t *c, int32_t status,
                                const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void hx_child_reply_text(hx_child_t *c, int32_t status,
                                const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    hx_child_reply(c, status, 0, 0, text, strlen(text) + 1);
}

/* A region UCX allocates (hixl_alloc_mem: what a peer on this host maps
 * and copies into with memcpy); maplen 0 says so. */
static int hx_child_region_alloc(hx_child_t *c, hx_child_region_t *r,
                                 size_t len, uint64_t seed, char *err,
                                 size_t errlen)
{
    void *p;

    if (hixl_alloc_mem(c->engine, len, HIXL_MEM_HOST, &p, &r->handle) !=
        HIXL_SUCCESS) {
        snprintf(err, errlen, "target: hixl_alloc_mem(%zu): %s", len,
                 hixl_last_error());
        return -1;
    }
    r->map    = p;
    r->maplen = 0;
    r->base   = p;
    r->len    = len;
    if (seed != 0) {
        hx_pat_fill(r->base, len, seed, 0);
    }
    return 0;
}

static int hx_child_region_new(hx_child_t *c, size_t len, size_t misalign,
                               uint64_t seed, int alloc, char *err,
                               size_t errlen)
{
    hixl_mem_desc_t desc;
    hx_child_region_t *r;
    long page = sysconf(_SC_PAGESIZE);
    int i;

    for (i = 0; (i < HX_MAX_REGIONS) && (c->regions[i].map != NULL); ++i) {
    }
    if (i == HX_MAX_REGIONS) {
        snprintf(err, errlen, "target: no free region slot");
        return -1;
    }
    r         = &c->regions[i];
    if (alloc) {
        return (hx_child_region_alloc(c, r, len, seed, err, errlen) == 0) ?
               i : -1;
    }
    r->maplen = (len + misalign + (size_t)page - 1) & ~((size_t)page - 1);
    r->map    = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        snprintf(err, errlen, "target: mmap %zu: %s", r->maplen,
                 strerror(errno));
        return -1;
    }
    r->base = (uint8_t*)r->map + misalign;
    r->len  = len;
    if (seed != 0) {
        hx_pat_fill(r->base, len, seed, 0);
    }
    desc.addr = (uintptr_t)r->base;
    desc.len  = len;
    if (hixl_register_mem(c->engine, &desc, HIXL_MEM_HOST, &r->handle) !=
        HIXL_SUCCESS) {
        snprintf(err, errlen, "target: hixl_register_mem(%zu): %s", len,
                 hixl_last_error());
        munmap(r->map, r->maplen);
        memset(r, 0, sizeof(*r));
        return -1;
    }
    return i;
}

static hx_child_region_t *hx_child_region(hx_child_t *c, uint32_t i,
                                          uint64_t off, uint64_t len)
{
    hx_child_region_t *r;

    if ((i >= HX_MAX_REGIONS) || (c->regions[i].map == NULL)) {
        return NULL;
    }
    r = &c->regions[i];
    if ((off > r->len) || (len > r->len - off)) {
        return NULL;
    }
    return r;
}

/* Take what the engine queued; verify notifies are checked before anything
 * else is done, so "the data was there when the notify showed up" is
 * checked as close to that moment as the child can. */
static void hx_child_drain(hx_child_t *c)
{
    hixl_notify_t *n = NULL;
    hx_child_notify_t *cn;
    hx_verify_spec_t spec;
    hx_child_region_t *r;
    char note[512];
    int *verified;
    char **notes;
    size_t count = 0, i;
    int64_t bad;

    if (hixl_get_notifies(c->engine, &n, &count) != HIXL_SUCCESS) {
        if (!c->drain_failed) {
            c->drain_failed = 1;
            snprintf(c->drain_err, sizeof(c->drain_err), "%s",
                     hixl_last_error());
        }
        return;
    }
    if (count == 0) {
        return;
    }
    verified = calloc(count, sizeof(*verified));
    notes    = calloc(count, sizeof(*notes));
    if ((verified == NULL) || (notes == NULL)) {
        _exit(6);
    }
    for (i = 0; i < count; ++i) {
        if ((n[i].name == NULL) || strcmp(n[i].name, HX_VERIFY_NOTIFY) ||
            (n[i].msg_len != sizeof(spec))) {
            continue;
        }
        memcpy(&spec, n[i].msg, sizeof(spec));
        r = hx_child_region(c, spec.region, spec.off, spec.len);
        if (r == NULL) {
            verified[i] = -1;
            snprintf(note, sizeof(note), "verify notify names region %u "
                     "[%llu, +%llu), which the target does not have",
                     spec.region, (unsigned long long)spec.off,
                     (unsigned long long)spec.len);
            notes[i] = strdup(note);
            continue;
        }
        bad = hx_pat_find_bad(r->base + spec.off, spec.len, spec.seed,
                              spec.idx);
        verified[i] = (bad < 0) ? 1 : -1;
        if (bad >= 0) {
            snprintf(note, sizeof(note), "when notify %zu arrived, byte %lld "
                     "of region %u [%llu, +%llu) was 0x%02x, not 0x%02x",
                     c->nnotifies + i, (long long)bad, spec.region,
                     (unsigned long long)spec.off,
                     (unsigned long long)spec.len,
                     r->base[spec.off + (uint64_t)bad],
                     hx_pat(spec.seed, spec.idx + (uint64_t)bad));
            notes[i] = strdup(note);
        }
    }
    if (c->nnotifies + count > c->cap) {
        c->cap      = (c->nnotifies + count) * 2;
        c->notifies = realloc(c->notifies, c->cap * sizeof(*c->notifies));
        if (c->notifies == NULL) {
            _exit(6);
        }
    }
    for (i = 0; i < count; ++i) {
        cn           = &c->notifies[c->nnotifies++];
        cn->remote   = strdup(n[i].remote ? n[i].remote : "(null)");
        cn->name     = strdup(n[i].name ? n[i].name : "(null)");
        cn->msg_len  = n[i].msg_len;
        cn->msg      = malloc(n[i].msg_len + 1);
        cn->verified = verified[i];
        cn->note     = notes[i];
        if (cn->msg == NULL) {
            _exit(6);
        }
        if (n[i].msg_len) {
            memcpy(cn->msg, n[i].msg, n[i].msg_len);
        }
        /* the API promises a NUL after the message: check it here, where
         * the library's buffer is still at hand */
        if (((const char*)n[i].msg)[n[i].msg_len] != '\0') {
            cn->verified = -1;
            free(cn->note);
            cn->note = strdup("message is not followed by a NUL");
        }
    }
    hixl_release_notifies(n, count);
    free(verified);
    free(notes);
}

static void hx_put_u32(uint8_t **p, uint32_t v)
{
    memcpy(*p, &v, 4);
    *p += 4;
}

static void hx_put_bytes(uint8_t **p, const void *b, size_t len)
{
    hx_put_u32(p, (uint32_t)len);
    if (len) {
        memcpy(*p, b, len);
    }
    *p += len;
}

static void hx_child_send_notifies(hx_child_t *c)
{
    hx_child_notify_t *cn;
    size_t bytes = 0, i;
    uint8_t *buf, *p;

    for (i = 0; i < c->nnotifies; ++i) {
        cn = &c->notifies[i];
        bytes += 20 + strlen(cn->remote) + strlen(cn->name) + cn->msg_len +
                 (cn->note ? strlen(cn->note) : 0);
    }
    buf = malloc(bytes ? bytes : 1);
    if (buf == NULL) {
        _exit(6);
    }
    p = buf;
    for (i = 0; i < c->nnotifies; ++i) {
        cn = &c->notifies[i];
        hx_put_bytes(&p, cn->remote, strlen(cn->remote));
        hx_put_bytes(&p, cn->name, strlen(cn->name));
        hx_put_bytes(&p, cn->msg, cn->msg_len);
        hx_put_u32(&p, (uint32_t)cn->verified);
        hx_put_bytes(&p, cn->note, cn->note ? strlen(cn->note) : 0);
        free(cn->remote);
        free(cn->name);
        free(cn->msg);
        free(cn->note);
    }
    if (c->drain_failed) {
        hx_child_reply_text(c, -1, "target: hixl_get_notifies failed: %s",
                            c->drain_err);
    } else {
        hx_child_reply(c, 0, c->nnotifies, 0, buf, (size_t)(p - buf));
    }
    c->nnotifies = 0;
    free(buf);
}

static uint64_t hx_child_now_ms(void)
{
    return hx_now_ms();
}

static void hx_child_command(hx_child_t *c, const hx_cmd_t *cmd,
                             const uint8_t *data)
{
    hx_child_region_t *r;
    char err[512];
    uint64_t deadline;
    int64_t bad;
    int i;

    switch (cmd->op) {
    case HX_CMD_QUIT:
        if (hixl_finalize(c->engine) != HIXL_SUCCESS) {
            hx_child_reply_text(c, -1, "target: hixl_finalize: %s",
                                hixl_last_error());
        } else {
            hx_child_reply(c, 0, 0, 0, NULL, 0);
        }
        _exit(0);
    case HX_CMD_REGISTER:
        i = hx_child_region_new(c, cmd->a, cmd->b, cmd->c, 0, err,
                                sizeof(err));
        if (i < 0) {
            hx_child_reply_text(c, -1, "%s", err);
        } else {
            hx_child_reply(c, 0, (uint64_t)i,
                           (uintptr_t)c->regions[i].base, NULL, 0);
        }
        return;
    case HX_CMD_DEREGISTER:
        r = hx_child_region(c, cmd->region, 0, 0);
        if (r == NULL) {
            hx_child_reply_text(c, -1, "target: no region %u", cmd->region);
            return;
        }
        if (hixl_deregister_mem(c->engine, r->handle) != HIXL_SUCCESS) {
            hx_child_reply_text(c, -1, "target: hixl_deregister_mem: %s",
                                hixl_last_error());
            return;
        }
        if (r->maplen > 0) {   /* hixl_alloc_mem's went with it */
            munmap(r->map, r->maplen);
        }
        memset(r, 0, sizeof(*r));
        hx_child_reply(c, 0, 0, 0, NULL, 0);
        return;
    case HX_CMD_FILL:
    case HX_CMD_VERIFY:
        r = hx_child_region(c, cmd->region, cmd->a, cmd->b);
        if (r == NULL) {
            hx_child_reply_text(c, -1, "target: region %u has no range "
                                "[%llu, +%llu)", cmd->region,
                                (unsigned long long)cmd->a,
                                (unsigned long long)cmd->b);
            return;
        }
        if (cmd->op == HX_CMD_FILL) {
            hx_pat_fill(r->base + cmd->a, cmd->b, cmd->c, cmd->d);
            hx_child_reply(c, 0, 0, 0, NULL, 0);
            return;
        }
        bad = hx_pat_find_bad(r->base + cmd->a, cmd->b, cmd->c, cmd->d);
        if (bad < 0) {
            hx_child_reply(c, 0, 0, 0, NULL, 0);
            return;
        }
        hx_pat_describe(r->base + cmd->a, cmd->b, cmd->c, cmd->d,
                        "target", err, sizeof(err));
        hx_child_reply_text(c, -1, "region %u [%llu, +%llu): %s", cmd->region,
                            (unsigned long long)cmd->a,
                            (unsigned long long)cmd->b, err);
        return;
    case HX_CMD_NOTIFIES:
        hx_child_drain(c);
        hx_child_send_notifies(c);
        return;
    case HX_CMD_WATCH:
        deadline = hx_child_now_ms() + cmd->b;
        while ((c->nnotifies < cmd->a) && (hx_child_now_ms() < deadline)) {
            hx_child_drain(c);
            sched_yield();
        }
        hx_child_reply(c, 0, c->nnotifies, 0, NULL, 0);
        return;
    case HX_CMD_STALL:
        /* answer first, so the test can go on while we are deaf */
        hx_child_reply(c, 0, 0, 0, NULL, 0);
        usleep((useconds_t)(cmd->a * 1000));
        return;
    case HX_CMD_SEND_NOTIFY: {
        const char *remote = (const char*)data;
        const char *name   = remote + strlen(remote) + 1;
        hixl_notify_desc_t nd;
        hixl_status_t st;

        nd.name    = name;
        nd.msg     = name + strlen(name) + 1;
        nd.msg_len = cmd->a;
        st = hixl_send_notify(c->engine, remote, &nd, HX_OP_TIMEOUT_MS);
        hx_child_reply_text(c, (int32_t)st, "%s",
                            (st == HIXL_SUCCESS) ? "" : hixl_last_error());
        return;
    }
    }
    hx_child_reply_text(c, -1, "target: unknown command %u", cmd->op);
}

static void hx_child_main(const hx_target_cfg_t *cfg, int cmd_fd, int rep_fd)
{
    hixl_option_t opts[HX_MAX_OPTS + 2];
    hx_child_t c;
    hx_cmd_t cmd;
    uint8_t *data;
    struct pollfd pfd;
    char err[512];
    size_t n = 0, i;
    int rc, have_progress_opt = 0;

    memset(&c, 0, sizeof(c));
    c.cfg    = cfg;
    c.cmd_fd = cmd_fd;
    c.rep_fd = rep_fd;

    for (i = 0; i < cfg->nopts; ++i) {
        opts[n++] = cfg->opts[i];
        if (!strcmp(cfg->opts[i].key, "hixl.ProgressThread")) {
            have_progress_opt = 1;
        }
    }
    opts[n].key   = "hixl.ListenEphemeral";
    opts[n].value = "1";
    ++n;
    if (!have_progress_opt) {
        opts[n].key   = "hixl.ProgressThread";
        opts[n].value = cfg->progress ? "1" : "0";
        ++n;
    }
    if (hixl_initialize(cfg->name, opts, n, &c.engine) != HIXL_SUCCESS) {
        hx_child_reply_text(&c, -1, "target: hixl_initialize(%s): %s",
                            cfg->name, hixl_last_error());
        _exit(2);
    }
    for (i = 0; i < cfg->nregions; ++i) {
        if (hx_child_region_new(&c, cfg->region_len[i], cfg->misalign,
                                cfg->init_seed, (cfg->alloc >> i) & 1, err,
                                sizeof(err)) < 0) {
            hx_child_reply_text(&c, -1, "%s", err);
            _exit(2);
        }
    }
    {
        /* READY: the real engine name, then the regions' addresses */
        uint8_t ready[HIXL_ENGINE_NAME_MAX + 1 + 16 * 8];
        const char *name = hixl_engine_name(c.engine);
        size_t off = strlen(name) + 1;

        memcpy(ready, name, off);
        for (i = 0; i < cfg->nregions; ++i) {
            uint64_t a = (uintptr_t)c.regions[i].base, l = c.regions[i].len;

            memcpy(ready + off, &a, 8);
            memcpy(ready + off + 8, &l, 8);
            off += 16;
        }
        hx_child_reply(&c, 0, cfg->nregions, 0, ready, off);
    }

    for (;;) {
        pfd.fd      = cmd_fd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        /* Without a progress thread the child is the engine's only
         * progress: poll the pipe without sleeping and drive the engine
         * with hixl_get_notifies() in between. */
        rc = poll(&pfd, 1, cfg->progress ? 20 : 0);
        if (!cfg->no_drain) {
            hx_child_drain(&c);
        }
        if (rc == 0) {
            if (!cfg->progress) {
                sched_yield();
            }
            continue;
        }
        if ((rc < 0) && (errno == EINTR)) {
            continue;
        }
        if (hx_read_all(cmd_fd, &cmd, sizeof(cmd)) != 0) {
            _exit(4);   /* the test closed the pipe or died */
        }
        data = NULL;
        if (cmd.datalen > 0) {
            data = malloc(cmd.datalen);
            if ((data == NULL) || (hx_read_all(cmd_fd, data, cmd.datalen) != 0)) {
                _exit(4);
            }
        }
        hx_child_command(&c, &cmd, data);
        free(data);
    }
}

/* ---- targets: the test's side ------------------------------------------------- */

static pid_t hx_live[64];

static void hx_live_add(pid_t pid)
{
    size_t i;

    for (i = 0; i < sizeof(hx_live) / sizeof(hx_live[0]); ++i) {
        if (hx_live[i] == 0) {
            hx_live[i] = pid;
            return;
        }
    }
    kill(pid, SIGKILL);
    ck_abort_msg("too many targets");
}

static void hx_live_del(pid_t pid)
{
    size_t i;

    for (i = 0; i < sizeof(hx_live) / sizeof(hx_live[0]); ++i) {
        if (hx_live[i] == pid) {
            hx_live[i] = 0;
        }
    }
}

static void hx_reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while ((waitpid(pid, NULL, 0) < 0) && (errno == EINTR)) {
    }
    hx_live_del(pid);
}

void hx_target_kill_all(void)
{
    size_t i;

    for (i = 0; i < sizeof(hx_live) / sizeof(hx_live[0]); ++i) {
        if (hx_live[i] != 0) {
            hx_reap(hx_live[i]);
        }
    }
}

void hx_target_cfg_init(hx_target_cfg_t *cfg, size_t region_len)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->name     = "127.0.0.1:0";
    cfg->progress = 1;
    if (region_len > 0) {
        cfg->region_len[0] = region_len;
        cfg->nregions      = 1;
    }
}

void hx_target_cfg_opt(hx_target_cfg_t *cfg, const char *key,
                       const char *value)
{
    ck_assert_uint_lt(cfg->nopts, HX_MAX_OPTS);
    cfg->opts[cfg->nopts].key   = key;
    cfg->opts[cfg->nopts].value = value;
    cfg->nopts++;
}

static void (*hx_idle_fn)(void *arg);
static void *hx_idle_arg;

void hx_target_set_idle(void (*idle)(void *arg), void *arg)
{
    hx_idle_fn  = idle;
    hx_idle_arg = arg;
}

void hx_idle_progress(void *engine)
{
    hixl_notify_t *n = NULL;
    size_t count = 0;

    if (hixl_get_notifies(engine, &n, &count) == HIXL_SUCCESS) {
        hixl_release_notifies(n, count);
    }
}

/* Wait for and read a reply; kills the target and fails on silence. */
static void hx_target_reply(hx_target_t *t, hx_rep_t *rep, uint8_t **data_p)
{
    struct pollfd pfd = {t->rep_fd, POLLIN, 0};
    uint64_t deadline = hx_now_ms() + HX_REPLY_TIMEOUT_MS;
    uint8_t *data = NULL;
    int rc;

    for (;;) {
        pfd.revents = 0;
        rc = poll(&pfd, 1, hx_idle_fn ? 1 : HX_REPLY_TIMEOUT_MS);
        if ((rc < 0) && (errno == EINTR)) {
            continue;
        }
        if ((rc != 0) || !hx_idle_fn || (hx_now_ms() >= deadline)) {
            break;
        }
        hx_idle_fn(hx_idle_arg);
    }
    if (rc <= 0) {
        hx_reap(t->pid);
        ck_abort_msg("target %d (%s) did not answer within %d ms [%s]",
                     (int)t->pid, t->name, HX_REPLY_TIMEOUT_MS,
                     hx_tls_label());
    }
    if (hx_read_all(t->rep_fd, rep, sizeof(*rep)) != 0) {
        int wstatus = 0;

        waitpid(t->pid, &wstatus, 0);
        hx_live_del(t->pid);
        ck_abort_msg("target %d (%s) died [%s]: %s %d", (int)t->pid, t->name,
                     hx_tls_label(), WIFSIGNALED(wstatus) ? "signal" :
                     "exit status", WIFSIGNALED(wstatus) ?
                     WTERMSIG(wstatus) : WEXITSTATUS(wstatus));
    }
    if (rep->datalen > 0) {
        data = malloc(rep->datalen + 1);
        ck_assert_ptr_nonnull(data);
        if (hx_read_all(t->rep_fd, data, rep->datalen) != 0) {
            hx_reap(t->pid);
            ck_abort_msg("target %d: truncated reply", (int)t->pid);
        }
        data[rep->datalen] = '\0';
    }
    if (data_p != NULL) {
        *data_p = data;
    } else {
        free(data);
    }
}

static void hx_target_send(hx_target_t *t, hx_cmd_t *cmd, const void *data)
{
    if ((hx_write_all(t->cmd_fd, cmd, sizeof(*cmd)) != 0) ||
        ((cmd->datalen > 0) &&
         (hx_write_all(t->cmd_fd, data, cmd->datalen) != 0))) {
        hx_reap(t->pid);
        ck_abort_msg("target %d (%s): cannot send a command: %s", (int)t->pid,
                     t->name, strerror(errno));
    }
}

/* Send a command and wait for its reply; returns the reply status. */
static int32_t hx_target_call(hx_target_t *t, hx_cmd_t *cmd, const void *data,
                              hx_rep_t *rep_p, uint8_t **data_p)
{
    hx_rep_t rep;

    hx_target_send(t, cmd, data);
    hx_target_reply(t, &rep, data_p);
    if (rep_p != NULL) {
        *rep_p = rep;
    }
    return rep.status;
}

void hx_target_start(hx_target_t *t, const hx_target_cfg_t *cfg)
{
    int cmd_pipe[2], rep_pipe[2];
    pid_t parent = getpid(), pid;
    hx_rep_t rep;
    uint8_t *data = NULL;
    size_t off, i;

    ck_assert_uint_le(cfg->nregions, 16);
    memset(t, 0, sizeof(*t));
    ck_assert_int_eq(pipe(cmd_pipe), 0);
    ck_assert_int_eq(pipe(rep_pipe), 0);
    fflush(NULL);   /* no stdio buffer duplicated into the child */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* die with the test, whatever way it ends */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(3);
        }
        alarm(600);
        close(cmd_pipe[1]);
        close(rep_pipe[0]);
        hx_child_main(cfg, cmd_pipe[0], rep_pipe[1]);
        _exit(7);
    }
    close(cmd_pipe[0]);
    close(rep_pipe[1]);
    t->pid    = pid;
    t->cmd_fd = cmd_pipe[1];
    t->rep_fd = rep_pipe[0];
    snprintf(t->name, sizeof(t->name), "(starting)");
    hx_live_add(pid);

    hx_target_reply(t, &rep, &data);
    if (rep.status != 0) {
        hx_reap(pid);
        ck_abort_msg("target did not start [%s]: %s", hx_tls_label(),
                     data ? (char*)data : "");
    }
    ck_assert_ptr_nonnull(data);
    snprintf(t->name, sizeof(t->name), "%s", (char*)data);
    off = strlen((char*)data) + 1;
    for (i = 0; i < cfg->nregions; ++i) {
        memcpy(&t->addr[i], data + off, 8);
        memcpy(&t->len[i], data + off + 8, 8);
        off += 16;
    }
    free(data);
}

int hx_target_register(hx_target_t *t, size_t len, size_t misalign)
{
    hx_cmd_t cmd;
    hx_rep_t rep;
    uint8_t *data = NULL;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op = HX_CMD_REGISTER;
    cmd.a  = len;
    cmd.b  = misalign;
    if (hx_target_call(t, &cmd, NULL, &rep, &data) != 0) {
        ck_abort_msg("target register of %zu bytes failed [%s]: %s", len,
                     hx_tls_label(), data ? (char*)data : "");
    }
    free(data);
    ck_assert_uint_lt(rep.value, HX_MAX_REGIONS);
    t->addr[rep.value] = rep.value2;
    t->len[rep.value]  = len;
    return (int)rep.value;
}

void hx_target_deregister(hx_target_t *t, int region)
{
    hx_cmd_t cmd;
    uint8_t *data = NULL;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_CMD_DEREGISTER;
    cmd.region = (uint32_t)region;
    if (hx_target_call(t, &cmd, NULL, NULL, &data) != 0) {
        ck_abort_msg("target deregister of region %d failed [%s]: %s",
                     region, hx_tls_label(), data ? (char*)data : "");
    }
    free(data);
    t->len[region] = 0;
}

void hx_target_fill(hx_target_t *t, int region, uint64_t off, uint64_t len,
                    uint64_t seed, uint64_t idx)
{
    hx_cmd_t cmd;
    uint8_t *data = NULL;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_CMD_FILL;
    cmd.region = (uint32_t)region;
    cmd.a      = off;
    cmd.b      = len;
    cmd.c      = seed;
    cmd.d      = idx;
    if (hx_target_call(t, &cmd, NULL, NULL, &data) != 0) {
        ck_abort_msg("target fill failed: %s", data ? (char*)data : "");
    }
    free(data);
}

int hx_target_check(hx_target_t *t, int region, uint64_t off, uint64_t len,
                    uint64_t seed, uint64_t idx, char *msg, size_t msglen)
{
    hx_cmd_t cmd;
    uint8_t *data = NULL;
    int32_t st;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_CMD_VERIFY;
    cmd.region = (uint32_t)region;
    cmd.a      = off;
    cmd.b      = len;
    cmd.c      = seed;
    cmd.d      = idx;
    st = hx_target_call(t, &cmd, NULL, NULL, &data);
    if ((st != 0) && (msg != NULL)) {
        snprintf(msg, msglen, "%s", data ? (char*)data : "(no message)");
    }
    free(data);
    return (st == 0) ? 0 : -1;
}

static uint32_t hx_get_u32(const uint8_t **p)
{
    uint32_t v;

    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

static uint8_t *hx_get_bytes(const uint8_t **p, size_t *len_p)
{
    size_t len = hx_get_u32(p);
    uint8_t *b = malloc(len + 1);

    ck_assert_ptr_nonnull(b);
    memcpy(b, *p, len);
    b[len] = '\0';
    *p += len;
    if (len_p != NULL) {
        *len_p = len;
    }
    return b;
}

hx_notify_t *hx_target_notifies(hx_target_t *t, size_t *count_p)
{
    hx_cmd_t cmd;
    hx_rep_t rep;
    hx_notify_t *out;
    const uint8_t *p;
    uint8_t *data = NULL;
    size_t i, notelen;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op = HX_CMD_NOTIFIES;
    if (hx_target_call(t, &cmd, NULL, &rep, &data) != 0) {
        ck_abort_msg("%s", data ? (char*)data : "target: notifies failed");
    }
    *count_p = rep.value;
    out      = calloc(rep.value + 1, sizeof(*out));
    ck_assert_ptr_nonnull(out);
    p = data;
    for (i = 0; i < rep.value; ++i) {
        out[i].remote   = (char*)hx_get_bytes(&p, NULL);
        out[i].name     = (char*)hx_get_bytes(&p, NULL);
        out[i].msg      = hx_get_bytes(&p, &out[i].msg_len);
        out[i].verified = (int)hx_get_u32(&p);
        out[i].note     = (char*)hx_get_bytes(&p, &notelen);
    }
    free(data);
    return out;
}

void hx_notifies_free(hx_notify_t *n, size_t count)
{
    size_t i;

    for (i = 0; i < count; ++i) {
        free(n[i].remote);
        free(n[i].name);
        free(n[i].msg);
        free(n[i].note);
    }
    free(n);
}

void hx_target_watch_begin(hx_target_t *t, size_t count, int timeout_ms)
{
    hx_cmd_t cmd;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op = HX_CMD_WATCH;
    cmd.a  = count;
    cmd.b  = (uint64_t)timeout_ms;
    hx_target_send(t, &cmd, NULL);
}

size_t hx_target_watch_end(hx_target_t *t)
{
    hx_rep_t rep;

    hx_target_reply(t, &rep, NULL);
    return rep.value;
}

hixl_status_t hx_target_send_notify(hx_target_t *t, const char *remote,
                                    const char *name, const void *msg,
                                    size_t len, char *text, size_t textlen)
{
    size_t rl = strlen(remote) + 1, nl = strlen(name) + 1;
    uint8_t *buf = malloc(rl + nl + len + 1);
    uint8_t *data = NULL;
    hx_cmd_t cmd;
    int32_t st;

    ck_assert_ptr_nonnull(buf);
    memcpy(buf, remote, rl);
    memcpy(buf + rl, name, nl);
    if (len) {
        memcpy(buf + rl + nl, msg, len);
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.op      = HX_CMD_SEND_NOTIFY;
    cmd.a       = len;
    cmd.datalen = (uint32_t)(rl + nl + len);
    st = hx_target_call(t, &cmd, buf, NULL, &data);
    if (text != NULL) {
        snprintf(text, textlen, "%s", data ? (char*)data : "");
    }
    free(data);
    free(buf);
    return (hixl_status_t)st;
}

void hx_target_stall(hx_target_t *t, int ms)
{
    hx_cmd_t cmd;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op = HX_CMD_STALL;
    cmd.a  = (uint64_t)ms;
    ck_assert_int_eq(hx_target_call(t, &cmd, NULL, NULL, NULL), 0);
}

void hx_stop_child(pid_t pid)
{
    int wstatus = 0;
    pid_t r;

    ck_assert_int_eq(kill(pid, SIGSTOP), 0);
    while (((r = waitpid(pid, &wstatus, WUNTRACED)) < 0) && (errno == EINTR)) {
    }
    ck_assert_msg((r == pid) && WIFSTOPPED(wstatus), "child %d did not stop "
                  "(waitpid %d, status 0x%x)", (int)pid, (int)r, wstatus);
}

int hx_target_alive(hx_target_t *t, char *why, size_t whylen)
{
    int wstatus = 0;
    pid_t r = waitpid(t->pid, &wstatus, WNOHANG);

    if (r == 0) {
        return 1;
    }
    hx_live_del(t->pid);
    if (r < 0) {
        snprintf(why, whylen, "waitpid: %s", strerror(errno));
    } else if (WIFSIGNALED(wstatus)) {
        snprintf(why, whylen, "killed by signal %d%s", WTERMSIG(wstatus),
                 (WTERMSIG(wstatus) == SIGABRT) ? " (abort)" : "");
    } else {
        snprintf(why, whylen, "exited with status %d", WEXITSTATUS(wstatus));
    }
    return 0;
}

void hx_target_stop(hx_target_t *t)
{
    hx_cmd_t cmd;
    uint8_t *data = NULL;
    int32_t st;
    int wstatus = 0, i;
    pid_t r = 0;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op = HX_CMD_QUIT;
    st = hx_target_call(t, &cmd, NULL, NULL, &data);
    close(t->cmd_fd);
    close(t->rep_fd);
    /* bounded wait: the child exits right after its reply */
    for (i = 0; i < 30000; ++i) {
        r = waitpid(t->pid, &wstatus, WNOHANG);
        if (r != 0) {
            break;
        }
        usleep(1000);
    }
    if (r == 0) {
        hx_reap(t->pid);
        ck_abort_msg("target %d did not exit after QUIT", (int)t->pid);
    }
    hx_live_del(t->pid);
    ck_assert_msg(st == 0, "target: %s", data ? (char*)data : "");
    free(data);
    ck_assert_msg(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0),
                  "target %d ended with %s %d", (int)t->pid,
                  WIFSIGNALED(wstatus) ? "signal" : "exit status",
                  WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) :
                  WEXITSTATUS(wstatus));
    t->pid = 0;
}

int hx_raw_connect(const char *name)
{
    struct sockaddr_in sin;
    char host[64];
    int fd, port;

    ck_assert(sscanf(name, "%63[^:]:%d", host, &port) == 2);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port   = htons((uint16_t)port);
    ck_assert(inet_pton(AF_INET, host, &sin.sin_addr) == 1);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert(fd >= 0);
    ck_assert(connect(fd, (struct sockaddr*)&sin, sizeof(sin)) == 0);
    return fd;
}
