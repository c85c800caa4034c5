/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak's churn (soak_churn.h).
 */
#define _GNU_SOURCE
#include "config.h"
#include "soak_churn.h"
#include "proc_usage.h"

#include <hixl/hixl.h>

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHURN_CLIENT_LIMIT_S 60      /* a client alive longer hangs */
#define CHURN_SETTLE_MS      30000   /* bound of the wait for keepalive */
#define CHURN_OP_TIMEOUT_MS  30000

/*
 * Slack, absolute (the long-lived traffic beside the churn moves the
 * listener's heap and UCX's pools): 16 mappings, 4 descriptors, no
 * thread, 8 MiB.  Over 10,000 connections a leak of one mapping or
 * descriptor per 1,000, or of 1 KiB per connection, is outside it.
 */
#define CHURN_SLACK_MAPS    16
#define CHURN_SLACK_FDS     4
#define CHURN_SLACK_THREADS 0
#define CHURN_SLACK_RSS_KB  8192

typedef struct churn_client {
    pid_t    pid;
    int      kill_fd;
    int      killed;
    unsigned cycle;
    uint64_t started_ms;
} churn_client_t;

static struct {
    soak_churn_cfg_t cfg;
    churn_client_t   c[SOAK_CHURN_PARALLEL];
    unsigned         started, ended, killed, failed;
    proc_usage_t     base;
    unsigned         base_at;     /* cycles ended at the first reading */
    int              have_base;
} g_churn;

static uint64_t churn_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint8_t churn_byte(uint64_t seed, size_t i)
{
    uint64_t x = seed + (i / 8) * 0x9e3779b97f4a7c15ull;

    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint8_t)(x >> (8 * (i % 8)));
}

/* ---- a client ----------------------------------------------------------- */

static int churn_fail(unsigned cycle, const char *what)
{
    fprintf(stderr, "soak: churn client %u: %s: %s\n", cycle, what,
            hixl_last_error());
    return 1;
}

static int churn_client(unsigned cycle, unsigned slot, int killed,
                        int kill_fd)
{
    const soak_churn_cfg_t *cfg = &g_churn.cfg;
    hixl_option_t opts[] = {{"hixl.ListenEphemeral", "1"},
                            {"hixl.MaxRequests", "64"}};
    uint64_t seed = cfg->seed ^ ((uint64_t)cycle << 20);
    hixl_transfer_op_desc_t d;
    hixl_mem_handle_t h;
    hixl_mem_desc_t md;
    hixl_engine_t *e;
    hixl_req_t req;
    uint8_t *buf;
    size_t i;

    buf = mmap(NULL, 2 * SOAK_CHURN_LEN, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        return 1;
    }
    for (i = 0; i < SOAK_CHURN_LEN; ++i) {
        buf[i] = churn_byte(seed, i);
    }
    if (hixl_initialize("127.0.0.1:0", opts, 2, &e) != HIXL_SUCCESS) {
        return churn_fail(cycle, "hixl_initialize");
    }
    md.addr = (uintptr_t)buf;
    md.len  = 2 * SOAK_CHURN_LEN;
    if (hixl_register_mem(e, &md, HIXL_MEM_HOST, &h) != HIXL_SUCCESS) {
        return churn_fail(cycle, "hixl_register_mem");
    }
    if (hixl_connect(e, cfg->target, CHURN_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return churn_fail(cycle, "hixl_connect");
    }
    d.local_addr  = (uintptr_t)buf;
    d.remote_addr = (uintptr_t)(cfg->area + slot * SOAK_CHURN_LEN);
    d.len         = SOAK_CHURN_LEN;
    if (killed) {
        if ((hixl_transfer_async(e, cfg->target, HIXL_WRITE, &d, 1, NULL,
                                 &req) != HIXL_SUCCESS) ||
            (write(kill_fd, "k", 1) != 1)) {
            return churn_fail(cycle, "hixl_transfer_async");
        }
        for (;;) {
            pause();
        }
    }
    if (hixl_transfer_sync(e, cfg->target, HIXL_WRITE, &d, 1,
                           CHURN_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return churn_fail(cycle, "WRITE");
    }
    d.local_addr = (uintptr_t)(buf + SOAK_CHURN_LEN);
    if (hixl_transfer_sync(e, cfg->target, HIXL_READ, &d, 1,
                           CHURN_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return churn_fail(cycle, "READ");
    }
    for (i = 0; i < SOAK_CHURN_LEN; ++i) {
        if (buf[SOAK_CHURN_LEN + i] != churn_byte(seed, i)) {
            fprintf(stderr, "soak: churn client %u: byte %zu read back is "
                    "0x%02x, wrote 0x%02x\n", cycle, i,
                    buf[SOAK_CHURN_LEN + i], churn_byte(seed, i));
            return 1;
        }
    }
    if (hixl_disconnect(e, cfg->target, CHURN_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return churn_fail(cycle, "hixl_disconnect");
    }
    return (hixl_finalize(e) == HIXL_SUCCESS) ? 0 :
           churn_fail(cycle, "hixl_finalize");
}

/* ---- the parent's side ---------------------------------------------------- */

static void churn_start(unsigned slot)
{
    churn_client_t *c = &g_churn.c[slot];
    unsigned cycle    = g_churn.started++;
    int killed        = (g_churn.cfg.kill_every > 0) &&
                        ((cycle % g_churn.cfg.kill_every) ==
                         g_churn.cfg.kill_every - 1);
    struct rlimit rl;
    int fds[2], fd;
    pid_t pid;

    if (pipe(fds) != 0) {
        g_churn.failed++;
        return;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(CHURN_CLIENT_LIMIT_S);
        /* the soak engines' pipes are not the client's to hold open */
        getrlimit(RLIMIT_NOFILE, &rl);
        for (fd = 3; fd < (int)rl.rlim_cur && fd < 4096; ++fd) {
            if (fd != fds[1]) {
                close(fd);
            }
        }
        _exit(churn_client(cycle, killed ? SOAK_CHURN_PARALLEL : slot, killed,
                           fds[1]));
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        g_churn.failed++;
        return;
    }
    c->pid        = pid;
    c->kill_fd    = fds[0];
    c->killed     = killed;
    c->cycle      = cycle;
    c->started_ms = churn_now_ms();
}

static void churn_ended(churn_client_t *c, int status)
{
    int ok = c->killed ? (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) :
             (WIFEXITED(status) && (WEXITSTATUS(status) == 0));

    close(c->kill_fd);
    c->pid = 0;
    g_churn.ended++;
    g_churn.killed += c->killed;
    if (!ok) {
        g_churn.failed++;
        fprintf(stderr, "soak: churn client %u %s (status 0x%x)\n", c->cycle,
                c->killed ? "was to be killed but ended otherwise" : "failed",
                status);
    }
}

void soak_churn_init(const soak_churn_cfg_t *cfg)
{
    memset(&g_churn, 0, sizeof(g_churn));
    g_churn.cfg = *cfg;
}

int soak_churn_idle(void)
{
    unsigned i;

    for (i = 0; i < SOAK_CHURN_PARALLEL; ++i) {
        if (g_churn.c[i].pid != 0) {
            return 0;
        }
    }
    return 1;
}

void soak_churn_step(int stop)
{
    const soak_churn_cfg_t *cfg = &g_churn.cfg;
    churn_client_t *c;
    int status;
    unsigned i;
    char b;

    for (i = 0; i < SOAK_CHURN_PARALLEL; ++i) {
        c = &g_churn.c[i];
        if (c->pid == 0) {
            continue;
        }
        if (c->killed && (poll(&(struct pollfd){c->kill_fd, POLLIN, 0}, 1,
                               0) == 1) && (read(c->kill_fd, &b, 1) == 1)) {
            kill(c->pid, SIGKILL);
        }
        if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
            churn_ended(c, status);
        } else if (churn_now_ms() - c->started_ms >
                   CHURN_CLIENT_LIMIT_S * 1000ull) {
            kill(c->pid, SIGKILL);
        }
    }
    /* the first reading, between clients, after the warm-up cycles */
    if (!g_churn.have_base && (g_churn.started >= cfg->warmup) &&
        soak_churn_idle()) {
        if (proc_usage_read(cfg->target_pid, &g_churn.base) == 0) {
            g_churn.have_base = 1;
            g_churn.base_at   = g_churn.ended;
        }
    }
    if (stop || (g_churn.have_base == 0 && g_churn.started >= cfg->warmup)) {
        return;
    }
    for (i = 0; i < SOAK_CHURN_PARALLEL; ++i) {
        if ((g_churn.c[i].pid == 0) &&
            ((cfg->cycles == 0) || (g_churn.started < cfg->cycles))) {
            churn_start(i);
        }
    }
}

static int churn_within(const proc_usage_t *a, const proc_usage_t *b)
{
    return (b->maps - a->maps <= CHURN_SLACK_MAPS) &&
           (b->fds - a->fds <= CHURN_SLACK_FDS) &&
           (b->threads - a->threads <= CHURN_SLACK_THREADS) &&
           (b->rss_kb - a->rss_kb <= CHURN_SLACK_RSS_KB);
}

int soak_churn_report(FILE *f)
{
    const proc_usage_t *a = &g_churn.base;
    uint64_t start        = churn_now_ms();
    proc_usage_t b;
    long n;
    int ok;

    if (!g_churn.have_base) {
        fprintf(f, "soak: churn: %u connections, fewer than the %u of "
                "warm-up: no growth measured\n", g_churn.ended,
                g_churn.cfg.warmup);
        return (g_churn.failed != 0);
    }
    /* a killed client's endpoint goes at the listener's next keepalive
     * round: wait for it, bounded */
    do {
        if (proc_usage_read(g_churn.cfg.target_pid, &b) != 0) {
            fprintf(f, "soak: churn: the listener is gone\n");
            return 1;
        }
        if (churn_within(a, &b)) {
            break;
        }
        usleep(200000);
    } while (churn_now_ms() - start < CHURN_SETTLE_MS);
    n  = (long)(g_churn.ended - g_churn.base_at);
    ok = churn_within(a, &b) && (g_churn.failed == 0);
    fprintf(f, "soak: churn: %u connections to %s (%u killed, %u failed); "
            "after %u of warm-up, growth per 1,000: maps %+.1f (%ld -> %ld), "
            "fds %+.1f (%ld -> %ld), threads %+.1f (%ld -> %ld), RSS %+.1f "
            "KiB (%ld -> %ld KiB)%s\n", g_churn.ended, g_churn.cfg.target,
            g_churn.killed, g_churn.failed, g_churn.base_at,
            proc_usage_per_k(a->maps, b.maps, n), a->maps, b.maps,
            proc_usage_per_k(a->fds, b.fds, n), a->fds, b.fds,
            proc_usage_per_k(a->threads, b.threads, n), a->threads,
            b.threads, proc_usage_per_k(a->rss_kb, b.rss_kb, n), a->rss_kb,
            b.rss_kb, churn_within(a, &b) ? "" : ": FAIL, beyond the slack "
            "(16 maps, 4 fds, 0 threads, 8 MiB)");
    return !ok;
}
