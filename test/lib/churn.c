/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection churn at a long-lived listener (churn.h).
 */
#define _GNU_SOURCE
#include "config.h"
#include "churn.h"

#include <hixl/hixl.h>

#include <errno.h>
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

#define CHURN_CLIENT_LIMIT_MS 60000   /* a connection alive longer hangs */
/* How long the listener's usage may take to settle: UCX drops the
 * endpoint of a killed peer at its next keepalive round (every 20 s,
 * all endpoints: core/engine.c); this bounds the wait, it is not a
 * speed limit. */
#define CHURN_SETTLE_MS       30000
#define CHURN_BASE_GAP_MS     1200    /* two readings that agree */
#define CHURN_OP_TIMEOUT_MS   30000

/* The one-shot clients' endings, in turn: every ending, the orderly ones
 * most often, as in a serving fleet. */
static const churn_end_t churn_plan[] = {
    CHURN_END_DISCONNECT, CHURN_END_FINALIZE, CHURN_END_DISCONNECT,
    CHURN_END_EXIT,       CHURN_END_FINALIZE, CHURN_END_DISCONNECT,
    CHURN_END_FINALIZE,   CHURN_END_KILL,
};

static const char *const churn_end_names[CHURN_END_COUNT] = {
    "disconnect+finalize", "finalize alone", "_exit", "SIGKILL"
};

typedef struct churn_client {
    pid_t       pid;          /* 0: the slot is free */
    int         fd;           /* one-shot: says "in flight" (KILL) */
    churn_end_t end;
    unsigned    cycle;
    uint64_t    started_ms;
} churn_client_t;

/* The resident process: it runs a connection per command and answers
 * with its exit status. */
typedef struct churn_resident {
    pid_t       pid;          /* 0: none, or it died */
    int         cmd_fd;
    int         rep_fd;
    int         busy;
    unsigned    cycle;
    unsigned    runs;
    churn_end_t end;
    uint64_t    started_ms;
} churn_resident_t;

typedef struct churn_cmd {
    uint32_t cycle;
    uint32_t end;
} churn_cmd_t;

static struct {
    churn_cfg_t      cfg;
    churn_client_t   c[CHURN_MAX_PARALLEL];
    churn_resident_t res;
    uint64_t         seed[CHURN_MAX_PARALLEL + 2];
    unsigned         started, ended, failed;
    unsigned         oneshots;    /* one-shot clients started */
    unsigned         by_end[CHURN_END_COUNT];
    proc_usage_t     base, prev;
    uint64_t         base_first_ms, prev_ms;
    unsigned         base_at;     /* connections ended at the first reading */
    int              have_base;
} g_ch;

static uint64_t churn_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint8_t churn_byte(uint64_t seed, size_t i)
{
    uint64_t x = seed + (i / 8) * 0x9e3779b97f4a7c15ull;

    x  = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x  = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint8_t)(x >> (8 * (i % 8)));
}

static void churn_fill_own(void *buf, size_t len, uint64_t seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        ((uint8_t*)buf)[i] = churn_byte(seed, i);
    }
}

static int64_t churn_find_bad_own(const void *buf, size_t len, uint64_t seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        if (((const uint8_t*)buf)[i] != churn_byte(seed, i)) {
            return (int64_t)i;
        }
    }
    return -1;
}

static uint64_t churn_seed(unsigned cycle)
{
    return (g_ch.cfg.seed ^ ((uint64_t)cycle << 20)) | 1u;
}

static unsigned churn_kill_slot(void)
{
    return g_ch.cfg.parallel;
}

static unsigned churn_resident_slot(void)
{
    return g_ch.cfg.parallel + 1;
}

/* ---- a connection, in a client process ----------------------------------- */

static int churn_fail(unsigned cycle, const char *what)
{
    fprintf(stderr, "churn client %u: %s: %s\n", cycle, what,
            hixl_last_error());
    return 1;
}

/* A client's write: its buffer to its slot at off. */
static hixl_transfer_op_desc_t churn_desc(uint8_t *buf, uint64_t off)
{
    hixl_transfer_op_desc_t d;

    d.local_addr  = (uintptr_t)buf;
    d.remote_addr = (uintptr_t)(g_ch.cfg.area + off);
    d.len         = g_ch.cfg.len;
    return d;
}

/* Write the cycle's pattern, read it back, check it. */
static int churn_move(hixl_engine_t *e, unsigned cycle, uint8_t *buf,
                      uint64_t off)
{
    const churn_cfg_t *cfg    = &g_ch.cfg;
    hixl_transfer_op_desc_t d = churn_desc(buf, off);
    int64_t bad;

    if (hixl_transfer_sync(e, cfg->target, HIXL_WRITE, &d, 1,
                           CHURN_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return churn_fail(cycle, "WRITE");
    }
    d.local_addr = (uintptr_t)(buf + cfg->len);
    if (hixl_transfer_sync(e, cfg->target, HIXL_READ, &d, 1,
                           CHURN_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return churn_fail(cycle, "READ");
    }
    bad = cfg->find_bad(buf + cfg->len, cfg->len, churn_seed(cycle));
    if (bad >= 0) {
        fprintf(stderr, "churn client %u: byte %lld read back is wrong\n",
                cycle, (long long)bad);
        return 1;
    }
    return 0;
}

/* A WRITE in flight, said on kill_fd, then nothing until SIGKILL. */
static int churn_die_in_flight(hixl_engine_t *e, unsigned cycle, uint8_t *buf,
                               uint64_t off, int kill_fd)
{
    const churn_cfg_t *cfg    = &g_ch.cfg;
    hixl_transfer_op_desc_t d = churn_desc(buf, off);
    hixl_req_t req;

    if ((hixl_transfer_async(e, cfg->target, HIXL_WRITE, &d, 1, NULL,
                             &req) != HIXL_SUCCESS) ||
        (write(kill_fd, "k", 1) != 1)) {
        return churn_fail(cycle, "hixl_transfer_async");
    }
    for (;;) {
        pause();
    }
}

/* One connection from a fresh engine, ended as end says.  Returns the
 * exit status (EXIT and KILL do not return). */
static int churn_connection(unsigned cycle, uint64_t off, churn_end_t end,
                            int kill_fd)
{
    const churn_cfg_t *cfg = &g_ch.cfg;
    hixl_option_t opts[] = {
        {"hixl.ListenEphemeral", "1"},   /* a name of its own */
        {"hixl.MaxRequests", "64"},      /* a small engine starts faster */
    };
    hixl_engine_t *e = NULL;
    hixl_mem_handle_t h;
    hixl_mem_desc_t md;
    uint8_t *buf;
    int rc = 1;

    buf = mmap(NULL, 2 * cfg->len, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        return 1;
    }
    cfg->fill(buf, cfg->len, churn_seed(cycle));
    md.addr = (uintptr_t)buf;
    md.len  = 2 * cfg->len;
    if (hixl_initialize("127.0.0.1:0", opts, 2, &e) != HIXL_SUCCESS) {
        e = NULL;
        rc = churn_fail(cycle, "hixl_initialize");
    } else if (hixl_register_mem(e, &md, HIXL_MEM_HOST, &h) != HIXL_SUCCESS) {
        rc = churn_fail(cycle, "hixl_register_mem");
    } else if (hixl_connect(e, cfg->target, CHURN_OP_TIMEOUT_MS) !=
               HIXL_SUCCESS) {
        rc = churn_fail(cycle, "hixl_connect");
    } else if (end == CHURN_END_KILL) {
        return churn_die_in_flight(e, cycle, buf, off, kill_fd);
    } else {
        rc = churn_move(e, cycle, buf, off);
    }
    if ((rc == 0) && (end == CHURN_END_EXIT)) {
        _exit(0);   /* the engine still up: no goodbye of any kind */
    }
    if ((rc == 0) && (end == CHURN_END_DISCONNECT) &&
        (hixl_disconnect(e, cfg->target, CHURN_OP_TIMEOUT_MS) !=
         HIXL_SUCCESS)) {
        rc = churn_fail(cycle, "hixl_disconnect");
    }
    if ((e != NULL) && (hixl_finalize(e) != HIXL_SUCCESS)) {
        rc = churn_fail(cycle, "hixl_finalize");
    }
    munmap(buf, 2 * cfg->len);
    return rc;
}

/* In a fresh child: die with the parent, hold none of its descriptors
 * but keep (a write end the child reports on, -1: none). */
static void churn_child_setup(int keep, int keep2)
{
    struct rlimit rl;
    int fd;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!g_ch.cfg.close_fds) {
        return;
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    for (fd = 3; (fd < (int)rl.rlim_cur) && (fd < 4096); ++fd) {
        if ((fd != keep) && (fd != keep2)) {
            close(fd);
        }
    }
}

static ssize_t churn_read_full(int fd, void *p, size_t len)
{
    size_t got = 0;
    ssize_t n;

    while (got < len) {
        n = read(fd, (char*)p + got, len - got);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* The resident: a connection per command, until the command pipe closes. */
static void churn_resident_main(int cmd_fd, int rep_fd)
{
    churn_cmd_t cmd;
    uint8_t rc;

    while (churn_read_full(cmd_fd, &cmd, sizeof(cmd)) == sizeof(cmd)) {
        alarm(CHURN_CLIENT_LIMIT_MS / 1000);
        rc = (uint8_t)churn_connection(cmd.cycle,
                                       churn_slot_offset(churn_resident_slot()),
                                       (churn_end_t)cmd.end, -1);
        alarm(0);
        if (write(rep_fd, &rc, 1) != 1) {
            break;
        }
    }
    _exit(0);
}

/* ---- the driver ----------------------------------------------------------- */

static void churn_counted(churn_end_t end, int ok, unsigned cycle,
                          int status)
{
    g_ch.ended++;
    g_ch.by_end[end]++;
    if (!ok) {
        g_ch.failed++;
        fprintf(stderr, "churn: client %u (%s) failed (status 0x%x)\n", cycle,
                churn_end_names[end], status);
    }
}

static int churn_resident_start(void)
{
    churn_resident_t *r = &g_ch.res;
    int cmd[2], rep[2];

    if (pipe(cmd) != 0) {
        return -1;
    }
    if (pipe(rep) != 0) {
        close(cmd[0]);
        close(cmd[1]);
        return -1;
    }
    fflush(NULL);
    r->pid = fork();
    if (r->pid == 0) {
        close(cmd[1]);
        close(rep[0]);
        churn_child_setup(cmd[0], rep[1]);
        churn_resident_main(cmd[0], rep[1]);
    }
    close(cmd[0]);
    close(rep[1]);
    if (r->pid < 0) {
        close(cmd[1]);
        close(rep[0]);
        r->pid = 0;
        return -1;
    }
    r->cmd_fd = cmd[1];
    r->rep_fd = rep[0];
    return 0;
}

int churn_init(const churn_cfg_t *cfg)
{
    memset(&g_ch, 0, sizeof(g_ch));
    g_ch.cfg = *cfg;
    if ((cfg->parallel == 0) || (cfg->parallel > CHURN_MAX_PARALLEL)) {
        fprintf(stderr, "churn: %u clients at a time: 1 to %d\n",
                cfg->parallel, CHURN_MAX_PARALLEL);
        return -1;
    }
    if (g_ch.cfg.fill == NULL) {
        g_ch.cfg.fill     = churn_fill_own;
        g_ch.cfg.find_bad = churn_find_bad_own;
    }
    signal(SIGPIPE, SIG_IGN);   /* a resident that died: EPIPE, not death */
    if (cfg->resident && (churn_resident_start() != 0)) {
        fprintf(stderr, "churn: the resident process: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* The next cycle, or UINT32_MAX when none may start now. */
static unsigned churn_next_cycle(int stop)
{
    const churn_cfg_t *cfg = &g_ch.cfg;

    if (stop || ((cfg->cycles != 0) && (g_ch.started >= cfg->cycles)) ||
        (!g_ch.have_base && (g_ch.started >= cfg->warmup))) {
        return UINT32_MAX;   /* done, or the first reading is due first */
    }
    return g_ch.started++;
}

static void churn_oneshot_start(unsigned slot, unsigned cycle)
{
    churn_client_t *c = &g_ch.c[slot];
    churn_end_t end   = churn_plan[g_ch.oneshots++ %
                                   (sizeof(churn_plan) / sizeof(*churn_plan))];
    uint64_t off      = churn_slot_offset((end == CHURN_END_KILL) ?
                                          churn_kill_slot() : slot);
    int fds[2];
    pid_t pid;

    if (pipe(fds) != 0) {
        churn_counted(end, 0, cycle, -1);
        return;
    }
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        churn_child_setup(fds[1], -1);
        alarm(CHURN_CLIENT_LIMIT_MS / 1000);
        _exit(churn_connection(cycle, off, end, fds[1]));
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        churn_counted(end, 0, cycle, -1);
        return;
    }
    c->pid        = pid;
    c->fd         = fds[0];
    c->end        = end;
    c->cycle      = cycle;
    c->started_ms = churn_now_ms();
}

static void churn_resident_run(unsigned cycle)
{
    churn_resident_t *r = &g_ch.res;
    churn_cmd_t cmd;

    r->end        = (r->runs++ % 2) ? CHURN_END_FINALIZE :
                    CHURN_END_DISCONNECT;
    cmd.cycle     = cycle;
    cmd.end       = r->end;
    r->cycle      = cycle;
    r->started_ms = churn_now_ms();
    r->busy       = 1;
    if (write(r->cmd_fd, &cmd, sizeof(cmd)) != sizeof(cmd)) {
        r->busy = 0;
        churn_counted(r->end, 0, cycle, -1);
    }
}

/* The resident is gone or hung: it takes no more cycles. */
static void churn_resident_lost(const char *why)
{
    churn_resident_t *r = &g_ch.res;
    int status = 0;

    fprintf(stderr, "churn: the resident process %s\n", why);
    kill(r->pid, SIGKILL);
    waitpid(r->pid, &status, 0);
    if (r->busy) {
        churn_counted(r->end, 0, r->cycle, status);
    }
    close(r->cmd_fd);
    close(r->rep_fd);
    r->pid  = 0;
    r->busy = 0;
    g_ch.failed++;   /* even between cycles: it was to live on */
}

static void churn_resident_poll(short revents)
{
    churn_resident_t *r = &g_ch.res;
    uint8_t rc;

    if (!r->busy) {
        return;
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        if (read(r->rep_fd, &rc, 1) != 1) {
            churn_resident_lost("died");
            return;
        }
        r->busy = 0;
        if (rc == 0) {
            g_ch.seed[churn_resident_slot()] = churn_seed(r->cycle);
        }
        churn_counted(r->end, rc == 0, r->cycle, rc);
    } else if (churn_now_ms() - r->started_ms > CHURN_CLIENT_LIMIT_MS) {
        churn_resident_lost("hung");
    }
}

static void churn_oneshot_ended(unsigned slot, int status, int hung)
{
    churn_client_t *c = &g_ch.c[slot];
    int ok = hung ? 0 : (c->end == CHURN_END_KILL) ?
             (WIFSIGNALED(status) && (WTERMSIG(status) == SIGKILL)) :
             (WIFEXITED(status) && (WEXITSTATUS(status) == 0));

    close(c->fd);
    c->pid = 0;
    if (ok && (c->end != CHURN_END_KILL)) {
        g_ch.seed[slot] = churn_seed(c->cycle);
    }
    churn_counted(c->end, ok, c->cycle, status);
}

static void churn_oneshot_poll(unsigned slot, short revents)
{
    churn_client_t *c = &g_ch.c[slot];
    int status;
    char b;

    if ((revents & POLLIN) && (c->end == CHURN_END_KILL) &&
        (read(c->fd, &b, 1) == 1)) {
        kill(c->pid, SIGKILL);   /* its WRITE is in flight */
    }
    if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
        churn_oneshot_ended(slot, status, 0);
    } else if (churn_now_ms() - c->started_ms > CHURN_CLIENT_LIMIT_MS) {
        fprintf(stderr, "churn: client %u hung\n", c->cycle);
        kill(c->pid, SIGKILL);
        waitpid(c->pid, &status, 0);
        churn_oneshot_ended(slot, status, 1);
    }
}

/* The first reading: once idle after the warm-up, when two readings
 * CHURN_BASE_GAP_MS apart hold the same mappings, descriptors and
 * threads, or the bound passed.  Endpoints of killed peers that no
 * keepalive round has dropped yet make it higher, and growth as large as
 * what they hold could hide behind them: a few killed peers' worth,
 * against a thousand connections. */
static void churn_base_step(void)
{
    uint64_t now = churn_now_ms();
    proc_usage_t u;

    if (g_ch.have_base || (g_ch.started < g_ch.cfg.warmup) || !churn_idle()) {
        return;
    }
    if (g_ch.prev_ms == 0) {
        if (proc_usage_read(g_ch.cfg.target_pid, &g_ch.prev) == 0) {
            g_ch.prev_ms = g_ch.base_first_ms = now;
        }
        return;
    }
    if ((now - g_ch.prev_ms < CHURN_BASE_GAP_MS) ||
        (proc_usage_read(g_ch.cfg.target_pid, &u) != 0)) {
        return;
    }
    if (((u.maps == g_ch.prev.maps) && (u.fds == g_ch.prev.fds) &&
         (u.threads == g_ch.prev.threads)) ||
        (now - g_ch.base_first_ms > CHURN_SETTLE_MS)) {
        g_ch.base      = u;
        g_ch.base_at   = g_ch.ended;
        g_ch.have_base = 1;
        return;
    }
    g_ch.prev    = u;
    g_ch.prev_ms = now;
}

void churn_step(int stop, int wait_ms)
{
    struct pollfd pfd[CHURN_MAX_PARALLEL + 1];
    unsigned i, n = g_ch.cfg.parallel, cycle;

    for (i = 0; i < n; ++i) {
        pfd[i].fd     = (g_ch.c[i].pid != 0) ? g_ch.c[i].fd : -1;
        pfd[i].events = POLLIN;
    }
    pfd[n].fd     = g_ch.res.busy ? g_ch.res.rep_fd : -1;
    pfd[n].events = POLLIN;
    if (poll(pfd, n + 1, churn_idle() ? 0 : wait_ms) < 0) {
        memset(pfd, 0, sizeof(pfd));
    }
    for (i = 0; i < n; ++i) {
        if (g_ch.c[i].pid != 0) {
            churn_oneshot_poll(i, pfd[i].revents);
        }
    }
    churn_resident_poll(pfd[n].revents);
    churn_base_step();
    for (i = 0; i < n; ++i) {
        if ((g_ch.c[i].pid == 0) &&
            ((cycle = churn_next_cycle(stop)) != UINT32_MAX)) {
            churn_oneshot_start(i, cycle);
        }
    }
    if ((g_ch.res.pid != 0) && !g_ch.res.busy &&
        ((cycle = churn_next_cycle(stop)) != UINT32_MAX)) {
        churn_resident_run(cycle);
    }
}

int churn_idle(void)
{
    unsigned i;

    for (i = 0; i < g_ch.cfg.parallel; ++i) {
        if (g_ch.c[i].pid != 0) {
            return 0;
        }
    }
    return !g_ch.res.busy;
}

int churn_done(void)
{
    return churn_idle() && (g_ch.cfg.cycles != 0) &&
           (g_ch.started >= g_ch.cfg.cycles);
}

unsigned churn_slots(void)
{
    return g_ch.cfg.parallel + 2;
}

uint64_t churn_slot_seed(unsigned slot)
{
    return ((slot < churn_slots()) && (slot != churn_kill_slot())) ?
           g_ch.seed[slot] : 0;
}

uint64_t churn_slot_offset(unsigned slot)
{
    return (uint64_t)slot * g_ch.cfg.len;
}

static int churn_within(const churn_slack_t *s, const proc_usage_t *a,
                        const proc_usage_t *b)
{
    return (b->maps - a->maps <= s->maps) && (b->fds - a->fds <= s->fds) &&
           (b->threads - a->threads <= s->threads) &&
           ((s->rss_kb < 0) || (b->rss_kb - a->rss_kb <= s->rss_kb));
}

/* The resident leaves after the last reading: it lived through it. */
static void churn_resident_stop(void)
{
    churn_resident_t *r = &g_ch.res;
    uint64_t start = churn_now_ms();
    int status;

    if (r->pid == 0) {
        return;
    }
    close(r->cmd_fd);
    close(r->rep_fd);
    while (waitpid(r->pid, &status, WNOHANG) != r->pid) {
        if (churn_now_ms() - start > CHURN_SETTLE_MS) {
            churn_resident_lost("did not exit");
            return;
        }
        usleep(10000);
    }
    r->pid = 0;
}

static void churn_print_ends(FILE *f)
{
    unsigned i;

    for (i = 0; i < CHURN_END_COUNT; ++i) {
        fprintf(f, "%s%u %s", i ? ", " : "", g_ch.by_end[i],
                churn_end_names[i]);
    }
}

int churn_report(FILE *f, const char *label, const churn_slack_t *slack)
{
    const proc_usage_t *a = &g_ch.base;
    uint64_t start        = churn_now_ms();
    proc_usage_t b;
    long n;
    int ok;

    fprintf(f, "churn [%s]: %u connections (", label, g_ch.ended);
    churn_print_ends(f);
    fprintf(f, "; %u by the resident process), %u failed", g_ch.res.runs,
            g_ch.failed);
    if (!g_ch.have_base) {
        fprintf(f, "; fewer than the %u of warm-up: no growth measured\n",
                g_ch.cfg.warmup);
        churn_resident_stop();
        return g_ch.failed != 0;
    }
    do {
        if (proc_usage_read(g_ch.cfg.target_pid, &b) != 0) {
            fprintf(f, ": the listener is gone\n");
            churn_resident_stop();
            return 1;
        }
        if (churn_within(slack, a, &b)) {
            break;
        }
        usleep(200000);
    } while (churn_now_ms() - start < CHURN_SETTLE_MS);
    n  = (long)(g_ch.ended - g_ch.base_at);
    ok = churn_within(slack, a, &b);
    fprintf(f, "; growth per 1,000 after %u of warm-up: maps %+.1f (%ld -> "
            "%ld), fds %+.1f (%ld -> %ld), threads %+.1f (%ld -> %ld), RSS "
            "%+.1f KiB (%ld -> %ld KiB)", g_ch.base_at,
            proc_usage_per_k(a->maps, b.maps, n), a->maps, b.maps,
            proc_usage_per_k(a->fds, b.fds, n), a->fds, b.fds,
            proc_usage_per_k(a->threads, b.threads, n), a->threads, b.threads,
            proc_usage_per_k(a->rss_kb, b.rss_kb, n), a->rss_kb, b.rss_kb);
    if (!ok) {
        fprintf(f, ": FAIL, beyond the slack (%ld maps, %ld fds, %ld "
                "threads, %ld KiB)", slack->maps, slack->fds, slack->threads,
                slack->rss_kb);
    }
    fputc('\n', f);
    fflush(f);
    churn_resident_stop();
    return !ok || (g_ch.failed != 0);
}
