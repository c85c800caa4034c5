/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: connection churn at a long-lived listener.
 *
 * A decode engine accepts prefill engines all day for weeks: each one
 * initializes, connects, moves its data and goes, and some are killed
 * instead of saying goodbye.  Whatever a connection held in the listener
 * (mappings of the peer's shared memory, descriptors, endpoints, remote
 * keys, per-peer tables, threads, memory) must be gone when it ends.
 *
 * One target (the listener) serves CH_CYCLES short-lived client processes
 * per transport, CH_PARALLEL at a time.  Each client writes a pattern of
 * its own into a slot of the target's region, reads it back and checks
 * every byte, disconnects and finalizes; one in CH_KILL_EVERY is killed
 * with SIGKILL while its write is in flight instead.  The target checks
 * the slots of the clients that finished at every reading.  After
 * CH_WARMUP cycles the target's usage is read; after the last one (once
 * UCX's keepalive had the chance to drop the endpoints of killed peers) it
 * must be back within a small fixed slack.  The growth per 1,000
 * connections is printed for every resource either way.
 */
#include "config.h"
#include "harness.h"
#include "proc_usage.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CH_CYCLES     1000
#define CH_WARMUP     100
#define CH_PARALLEL   4
#define CH_KILL_EVERY 10
#define CH_LEN        (64 * 1024)
#define CH_KILL_SLOT  CH_PARALLEL       /* killed clients write here */
/* A client that does not end by itself within this is killed and the
 * test fails (a hang, not a speed limit). */
#define CH_CLIENT_LIMIT_MS 60000
/* How long the target's usage may take to come back after the last
 * client: UCX drops the endpoint of a killed peer on shared memory at its
 * next keepalive round (1 s, core/engine.c); this only bounds the wait. */
#define CH_SETTLE_LIMIT_MS 30000
/* Check's limit per case: a guard against hangs only (a client costs UCX
 * about 80 ms of CPU to start on shared memory, and other work may share
 * the machine's cores). */
#define CH_CASE_LIMIT_S 600

/*
 * Slack, absolute, whatever the number of cycles (growth per connection
 * would be 1,000 times less than a leak of one item each):
 *  - maps 8: glibc's heap of a thread and UCX's memory pools grow in
 *    steps of a mapping or two as peak use moves, not per connection;
 *  - fds 2: a descriptor UCX opens lazily on first use of a transport;
 *  - threads 0: nothing of a connection may run after it ended;
 *  - RSS 2 MiB: allocator fragmentation and pool growth.  UCX 1.13 keeps
 *    one entry of about 60 bytes per peer worker that ever connected
 *    (its connection-matching table, released only with the worker): 54
 *    KiB per 900 connections, inside the slack; a leak of 3 KiB per
 *    connection is outside it.
 */
#define CH_SLACK_MAPS    8
#define CH_SLACK_FDS     2
#define CH_SLACK_THREADS 0
#define CH_SLACK_RSS_KB  2048
/* AddressSanitizer keeps freed memory in quarantine and grows its shadow
 * with every allocation (+170 MiB per 1,000 connections here): RSS says
 * nothing about leaks under it (LeakSanitizer does), so the sanitized
 * build checks mappings, fds and threads only, and prints RSS. */
#if defined(__SANITIZE_ADDRESS__)
#define CH_CHECK_RSS 0
#else
#define CH_CHECK_RSS 1
#endif

typedef struct ch_client {
    pid_t    pid;        /* 0: slot free */
    int      kill_fd;    /* the client says "in flight" here */
    int      killed;
    int      cycle;
    uint64_t started_ms;
} ch_client_t;

typedef struct ch_run {
    hx_target_t t;
    ch_client_t c[CH_PARALLEL];
    uint64_t    seed[CH_PARALLEL];   /* what the slot holds, 0: nothing */
    int         next;                /* cycles started */
    int         done;                /* cycles ended */
} ch_run_t;

static uint64_t ch_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t ch_seed(int cycle)
{
    return 0xc4u + (uint64_t)cycle;
}

/* ---- the client process ------------------------------------------------ */

static int ch_fail(const char *what)
{
    fprintf(stderr, "churn client: %s: %s\n", what, hixl_last_error());
    return 1;
}

/* Connect, write the cycle's pattern into slot, read it back and check
 * it, go; or, when killed, say so once the write is in flight and wait
 * for the signal.  Returns the exit status. */
static int ch_client_run(const hx_target_t *t, int cycle, int slot,
                         int killed, int kill_fd)
{
    hixl_option_t opts[] = {
        {"hixl.ListenEphemeral", "1"},   /* a name of its own */
        {"hixl.MaxRequests", "64"},      /* a small engine starts faster */
    };
    hixl_transfer_op_desc_t d;
    hixl_mem_handle_t h;
    hixl_mem_desc_t md;
    hixl_engine_t *e;
    hixl_req_t req;
    uint8_t *buf;

    if (hixl_initialize("127.0.0.1:0", opts, 2, &e) != HIXL_SUCCESS) {
        return ch_fail("hixl_initialize");
    }
    buf = hx_alloc_pages(2 * CH_LEN);
    hx_pat_fill(buf, CH_LEN, ch_seed(cycle), 0);
    md.addr = (uintptr_t)buf;
    md.len  = 2 * CH_LEN;
    if (hixl_register_mem(e, &md, HIXL_MEM_HOST, &h) != HIXL_SUCCESS) {
        return ch_fail("hixl_register_mem");
    }
    if (hixl_connect(e, t->name, HX_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return ch_fail("hixl_connect");
    }
    d.local_addr  = (uintptr_t)buf;
    d.remote_addr = (uintptr_t)(t->addr[0] + (uint64_t)slot * CH_LEN);
    d.len         = CH_LEN;
    if (killed) {
        if (hixl_transfer_async(e, t->name, HIXL_WRITE, &d, 1, NULL, &req) !=
            HIXL_SUCCESS) {
            return ch_fail("hixl_transfer_async");
        }
        if (write(kill_fd, "k", 1) != 1) {
            return 1;
        }
        for (;;) {
            pause();   /* SIGKILL, with the write in flight or just done */
        }
    }
    if (hixl_transfer_sync(e, t->name, HIXL_WRITE, &d, 1, HX_OP_TIMEOUT_MS) !=
        HIXL_SUCCESS) {
        return ch_fail("WRITE");
    }
    d.local_addr = (uintptr_t)(buf + CH_LEN);
    if (hixl_transfer_sync(e, t->name, HIXL_READ, &d, 1, HX_OP_TIMEOUT_MS) !=
        HIXL_SUCCESS) {
        return ch_fail("READ");
    }
    if (hx_pat_find_bad(buf + CH_LEN, CH_LEN, ch_seed(cycle), 0) >= 0) {
        fprintf(stderr, "churn client %d: read back wrong bytes at %lld\n",
                cycle, (long long)hx_pat_find_bad(buf + CH_LEN, CH_LEN,
                                                  ch_seed(cycle), 0));
        return 1;
    }
    if (hixl_disconnect(e, t->name, HX_OP_TIMEOUT_MS) != HIXL_SUCCESS) {
        return ch_fail("hixl_disconnect");
    }
    if (hixl_finalize(e) != HIXL_SUCCESS) {
        return ch_fail("hixl_finalize");
    }
    return 0;
}

/* ---- the test process ------------------------------------------------- */

static void ch_start(ch_run_t *r, int slot)
{
    ch_client_t *c = &r->c[slot];
    int cycle      = r->next++;
    int killed     = (cycle % CH_KILL_EVERY) == CH_KILL_EVERY - 1;
    int fds[2];
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    /* this process never initializes UCX: the client starts clean */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(CH_CLIENT_LIMIT_MS / 1000);
        _exit(ch_client_run(&r->t, cycle, killed ? CH_KILL_SLOT : slot,
                            killed, fds[1]));
    }
    close(fds[1]);
    c->pid        = pid;
    c->kill_fd    = fds[0];
    c->killed     = killed;
    c->cycle      = cycle;
    c->started_ms = ch_now_ms();
}

/* The client of slot ended with status: check how. */
static void ch_ended(ch_run_t *r, int slot, int status)
{
    ch_client_t *c = &r->c[slot];

    close(c->kill_fd);
    c->pid = 0;
    r->done++;
    if (c->killed) {
        ck_assert_msg(WIFSIGNALED(status) && (WTERMSIG(status) == SIGKILL),
                      "client %d to be killed ended otherwise (status 0x%x) "
                      "[%s]", c->cycle, status, hx_tls_label());
        return;
    }
    ck_assert_msg(WIFEXITED(status) && (WEXITSTATUS(status) == 0),
                  "client %d failed (status 0x%x) [%s]", c->cycle, status,
                  hx_tls_label());
    r->seed[slot] = ch_seed(c->cycle);
}

/* Kill the clients whose write is in flight, reap those that ended. */
static void ch_poll(ch_run_t *r)
{
    struct pollfd pfd[CH_PARALLEL];
    int i, n = 0, status;
    char b;
    pid_t w;

    for (i = 0; i < CH_PARALLEL; ++i) {
        pfd[i].fd     = (r->c[i].pid != 0) ? r->c[i].kill_fd : -1;
        pfd[i].events = POLLIN;
        n            += (r->c[i].pid != 0);
    }
    if (n == 0) {
        return;
    }
    poll(pfd, CH_PARALLEL, 5);
    for (i = 0; i < CH_PARALLEL; ++i) {
        ch_client_t *c = &r->c[i];

        if (c->pid == 0) {
            continue;
        }
        if ((pfd[i].revents & POLLIN) && c->killed &&
            (read(c->kill_fd, &b, 1) == 1)) {
            kill(c->pid, SIGKILL);
        }
        w = waitpid(c->pid, &status, WNOHANG);
        if (w == c->pid) {
            ch_ended(r, i, status);
        } else if (ch_now_ms() - c->started_ms > CH_CLIENT_LIMIT_MS) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            ck_abort_msg("client %d hung [%s]", c->cycle, hx_tls_label());
        }
    }
}

/* Run cycles up to `until`, then wait for every client. */
static void ch_cycles(ch_run_t *r, int until)
{
    int i, busy;

    do {
        busy = 0;
        for (i = 0; i < CH_PARALLEL; ++i) {
            if ((r->c[i].pid == 0) && (r->next < until)) {
                ch_start(r, i);
            }
            busy |= (r->c[i].pid != 0);
        }
        ch_poll(r);
    } while (busy);
}

/* The target checks every slot a finished client wrote. */
static void ch_verify(ch_run_t *r)
{
    int i;

    for (i = 0; i < CH_PARALLEL; ++i) {
        if (r->seed[i] != 0) {
            hx_target_verify(&r->t, 0, (uint64_t)i * CH_LEN, CH_LEN,
                             r->seed[i], 0);
        }
    }
}

static int ch_within(const proc_usage_t *a, const proc_usage_t *b)
{
    return (b->maps - a->maps <= CH_SLACK_MAPS) &&
           (b->fds - a->fds <= CH_SLACK_FDS) &&
           (b->threads - a->threads <= CH_SLACK_THREADS) &&
           (!CH_CHECK_RSS || (b->rss_kb - a->rss_kb <= CH_SLACK_RSS_KB));
}

/* Read the target's usage until it is within the slack of base, or the
 * wait's bound passed (then the last reading stands). */
static void ch_settle(ch_run_t *r, const proc_usage_t *base,
                      proc_usage_t *u)
{
    uint64_t start = ch_now_ms();

    for (;;) {
        ck_assert_msg(proc_usage_read(r->t.pid, u) == 0, "the target is "
                      "gone [%s]", hx_tls_label());
        if (ch_within(base, u) ||
            (ch_now_ms() - start > CH_SETTLE_LIMIT_MS)) {
            return;
        }
        usleep(200000);
    }
}

/* The reading after warm-up, once the endpoints of the killed peers went:
 * when two readings a keepalive round apart hold the same mappings,
 * descriptors and threads (bounded like ch_settle). */
static void ch_baseline(ch_run_t *r, proc_usage_t *u)
{
    uint64_t start = ch_now_ms();
    proc_usage_t prev;

    ck_assert_int_eq(proc_usage_read(r->t.pid, &prev), 0);
    for (;;) {
        usleep(1200000);
        ck_assert_msg(proc_usage_read(r->t.pid, u) == 0, "the target is "
                      "gone [%s]", hx_tls_label());
        if (((u->maps == prev.maps) && (u->fds == prev.fds) &&
             (u->threads == prev.threads)) ||
            (ch_now_ms() - start > CH_SETTLE_LIMIT_MS)) {
            return;
        }
        prev = *u;
    }
}

static void ch_run_tls(int tls)
{
    static ch_run_t r;
    proc_usage_t base, end;
    hx_target_cfg_t cfg;
    long n;

    memset(&r, 0, sizeof(r));
    hx_use_tls(tls);
    hx_target_cfg_init(&cfg, (CH_PARALLEL + 1) * CH_LEN);
    hx_target_start(&r.t, &cfg);

    ch_cycles(&r, CH_WARMUP);
    ch_verify(&r);
    ch_baseline(&r, &base);
    ch_cycles(&r, CH_CYCLES);
    ch_verify(&r);
    ch_settle(&r, &base, &end);

    n = CH_CYCLES - CH_WARMUP;
    printf("churn [%s]: %d connections (%d killed); growth per 1,000 after "
           "%d of warm-up: maps %+.1f (%ld -> %ld), fds %+.1f (%ld -> %ld), "
           "threads %+.1f (%ld -> %ld), RSS %+.1f KiB (%ld -> %ld KiB)\n",
           hx_tls_label(), CH_CYCLES, CH_CYCLES / CH_KILL_EVERY, CH_WARMUP,
           proc_usage_per_k(base.maps, end.maps, n), base.maps, end.maps,
           proc_usage_per_k(base.fds, end.fds, n), base.fds, end.fds,
           proc_usage_per_k(base.threads, end.threads, n), base.threads,
           end.threads, proc_usage_per_k(base.rss_kb, end.rss_kb, n),
           base.rss_kb, end.rss_kb);
    fflush(stdout);
    ck_assert_msg(ch_within(&base, &end), "the listener grew over %ld "
                  "connections beyond the slack (maps %+ld of %d, fds %+ld of "
                  "%d, threads %+ld of %d, RSS %+ld of %d KiB) [%s]", n,
                  end.maps - base.maps, CH_SLACK_MAPS, end.fds - base.fds,
                  CH_SLACK_FDS, end.threads - base.threads, CH_SLACK_THREADS,
                  end.rss_kb - base.rss_kb, CH_SLACK_RSS_KB, hx_tls_label());
    hx_target_stop(&r.t);
}

START_TEST(churn_sm)
{
    ch_run_tls(1);   /* hx_tls_table: UCX_TLS=sm */
}
END_TEST

START_TEST(churn_tcp)
{
    ch_run_tls(0);   /* hx_tls_table: UCX_TLS=tcp */
}
END_TEST

static Suite *churn_suite(void)
{
    Suite *s = suite_create("churn");
    TCase *tc;

    tc = hx_tcase("sm");
    tcase_set_timeout(tc, CH_CASE_LIMIT_S);
    tcase_add_test(tc, churn_sm);
    suite_add_tcase(s, tc);
    tc = hx_tcase("tcp");
    tcase_set_timeout(tc, CH_CASE_LIMIT_S);
    tcase_add_test(tc, churn_tcp);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(churn_suite());
}
