/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: the coordinator's children and what it reads of them in /proc.
 *
 * Every engine is a forked child that talks to the coordinator over a
 * socketpair in text lines ("CMD key=value ...").  A child dies with the
 * coordinator (PR_SET_PDEATHSIG), so nothing outlives a killed run, and it
 * closes every descriptor it inherited except stdio and its own socket:
 * otherwise each child would hold the sockets of its older siblings, and
 * the fd counts this benchmark reports would count them.  Every wait on a
 * child is bounded by a deadline; children that miss it are SIGKILLed.
 */
#include "config.h"
#include "fan.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* every live child, for the signal handler */
static volatile pid_t fan_live[FAN_MAX_N + 16];

static void fan_live_set(pid_t old, pid_t pid)
{
    unsigned i;

    for (i = 0; i < sizeof(fan_live) / sizeof(fan_live[0]); ++i) {
        if (fan_live[i] == old) {
            fan_live[i] = pid;
            return;
        }
    }
}

void fan_kill_all(void)
{
    unsigned i;

    for (i = 0; i < sizeof(fan_live) / sizeof(fan_live[0]); ++i) {
        if (fan_live[i] > 0) {
            kill(fan_live[i], SIGKILL);
        }
    }
}

fan_child_t *fan_children(unsigned n)
{
    fan_child_t *c = calloc(n ? n : 1, sizeof(*c));
    unsigned i;

    for (i = 0; (c != NULL) && (i < n); ++i) {
        c[i].pid = -1;
        c[i].fd  = -1;
        bc_lines_init(&c[i].rx, FAN_LINE_MAX);
    }
    return c;
}

int fan_spawn(fan_child_t *c, const char *name, int cpu, fan_child_fn_t fn,
              void *arg)
{
    pid_t parent = getpid(), pid;
    cpu_set_t set;
    int sv[2], rc;

    memset(c, 0, sizeof(*c));
    c->fd  = -1;
    c->pid = -1;
    bc_lines_init(&c->rx, FAN_LINE_MAX);
    snprintf(c->name, sizeof(c->name), "%s", name);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        fprintf(stderr, "fan: socketpair: %s\n", strerror(errno));
        return -1;
    }
    fflush(NULL);   /* or the child would print our buffered output again */
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fan: fork: %s\n", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {      /* it died before prctl */
            _exit(FAN_EXIT_ERROR);
        }
        /* its name in top, perf and ps (threads it starts inherit it) */
        prctl(PR_SET_NAME, c->name);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        if (sv[1] != 3) {
            dup2(sv[1], 3);
        }
        close_range(4, ~0u, 0);
        if (cpu >= 0) {
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            sched_setaffinity(0, sizeof(set), &set);
        }
        rc = fn(3, arg);
        fflush(NULL);
        /* _exit: the coordinator's atexit work is not the child's */
        _exit(rc);
    }
    close(sv[1]);
    c->fd  = sv[0];
    c->pid = pid;
    fan_live_set(0, pid);
    return 0;
}

static int fan_vsend(int fd, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Lines are bounded as the receiving side reads them. */
static int fan_vsend(int fd, const char *fmt, va_list ap)
{
    int rc = bc_line_vsend(fd, FAN_LINE_MAX, fmt, ap);

    if ((rc != 0) && (errno == EMSGSIZE)) {
        fprintf(stderr, "fan: line too long\n");
    }
    return rc;
}

int fan_send(fan_child_t *c, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = fan_vsend(c->fd, fmt, ap);
    va_end(ap);
    if (rc != 0) {
        fprintf(stderr, "fan: %s: cannot send (it exited?)\n", c->name);
    }
    return rc;
}

int fan_child_send(int fd, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = fan_vsend(fd, fmt, ap);
    va_end(ap);
    return rc;
}

/* The next complete line of c into c->line; 1 when there was one. */
static int fan_take_line(fan_child_t *c)
{
    char *line = bc_lines_take(&c->rx);

    if (line != NULL) {
        c->line = line;
    }
    return line != NULL;
}

static void fan_child_gone(fan_child_t *c)
{
    int status = 0;

    if (!c->exited && (waitpid(c->pid, &status, 0) == c->pid)) {
        c->exited = 1;
        c->status = status;
        fan_live_set(c->pid, 0);
    }
    if (WIFSIGNALED(c->status)) {
        fprintf(stderr, "fan: %s (pid %d) was killed by signal %d\n",
                c->name, (int)c->pid, WTERMSIG(c->status));
    } else {
        fprintf(stderr, "fan: %s (pid %d) exited with status %d\n", c->name,
                (int)c->pid, WEXITSTATUS(c->status));
    }
}

int fan_recv_all(fan_child_t *c, unsigned n, uint64_t deadline,
                 const char *expect)
{
    struct pollfd *pfd = calloc(n, sizeof(*pfd));
    unsigned *idx = calloc(n, sizeof(*idx));
    unsigned i, k, pending;
    uint64_t now;
    int rc = -1, r;
    char *got = calloc(n, 1);

    if ((pfd == NULL) || (idx == NULL) || (got == NULL)) {
        goto out;
    }
    for (i = 0; i < n; ++i) {
        if (fan_take_line(&c[i])) {
            got[i] = 1;
        }
    }
    for (;;) {
        for (i = 0, pending = 0; i < n; ++i) {
            if (!got[i]) {
                pfd[pending].fd     = c[i].fd;
                pfd[pending].events = POLLIN;
                idx[pending++]      = i;
            }
        }
        if (pending == 0) {
            break;
        }
        now = bc_now_ns();
        if (now >= deadline) {
            fprintf(stderr, "fan: %u of %u engine process(es) did not answer "
                    "%s in time (first: %s)\n", pending, n,
                    expect ? expect : "", c[idx[0]].name);
            goto out;
        }
        r = poll(pfd, pending, (int)((deadline - now) / 1000000ull) + 1);
        if ((r < 0) && (errno != EINTR)) {
            fprintf(stderr, "fan: poll: %s\n", strerror(errno));
            goto out;
        }
        for (k = 0; (r > 0) && (k < pending); ++k) {
            if (!pfd[k].revents) {
                continue;
            }
            i = idx[k];
            if (bc_lines_fill(&c[i].rx, c[i].fd, 0) != 0) {
                fan_child_gone(&c[i]);
                goto out;
            }
            got[i] = (char)fan_take_line(&c[i]);
        }
    }
    for (i = 0; i < n; ++i) {
        if (!strncmp(c[i].line, "ERR", 3)) {
            fprintf(stderr, "fan: %s: %s\n", c[i].name,
                    bc_kv(c[i].line, "msg") ? strstr(c[i].line, "msg=") + 4 :
                    c[i].line);
            goto out;
        }
        if ((expect != NULL) && strncmp(c[i].line, expect, strlen(expect))) {
            fprintf(stderr, "fan: %s: expected %s, got: %.120s\n", c[i].name,
                    expect, c[i].line);
            goto out;
        }
    }
    rc = 0;
out:
    free(pfd);
    free(idx);
    free(got);
    return rc;
}

unsigned fan_reap(fan_child_t *c, unsigned n, uint64_t deadline)
{
    unsigned i, left, bad = 0;
    int status;
    pid_t pid;

    for (i = 0; i < n; ++i) {
        if ((c[i].pid > 0) && !c[i].exited && (c[i].fd >= 0)) {
            fan_send(&c[i], "QUIT");
        }
    }
    for (;;) {
        for (i = 0, left = 0; i < n; ++i) {
            if ((c[i].pid <= 0) || c[i].exited) {
                continue;
            }
            pid = waitpid(c[i].pid, &status, WNOHANG);
            if (pid == c[i].pid) {
                c[i].exited = 1;
                c[i].status = status;
                fan_live_set(c[i].pid, 0);
            } else {
                ++left;
            }
        }
        if ((left == 0) || (bc_now_ns() >= deadline)) {
            break;
        }
        bc_sleep_until_ns(bc_now_ns() + 5000000ull);
    }
    for (i = 0; i < n; ++i) {
        if ((c[i].pid > 0) && !c[i].exited) {
            fprintf(stderr, "fan: %s (pid %d) did not exit; killed\n",
                    c[i].name, (int)c[i].pid);
            kill(c[i].pid, SIGKILL);
            waitpid(c[i].pid, &status, 0);
            c[i].exited = 1;
            c[i].status = status;
            fan_live_set(c[i].pid, 0);
        }
        if ((c[i].pid > 0) &&
            !(WIFEXITED(c[i].status) && (WEXITSTATUS(c[i].status) == 0))) {
            ++bad;
        }
        if (c[i].fd >= 0) {
            close(c[i].fd);
            c[i].fd = -1;
        }
        bc_lines_free(&c[i].rx);
        c[i].line = NULL;
    }
    return bad;
}

int fan_child_recv(int fd, char **line_p)
{
    static bc_lines_t rx = {NULL, 0, 0, FAN_LINE_MAX, NULL, 0};

    /* no deadline: when the coordinator dies, so does this process */
    *line_p = bc_lines_wait(&rx, fd, 0, NULL, NULL);
    return (*line_p != NULL) ? 0 : -1;
}

int fan_child_serve(int fd, int (*cmd)(void *arg, const char *line),
                    void *arg)
{
    char *line;

    while (fan_child_recv(fd, &line) == 0) {
        if (!strcmp(line, "QUIT")) {
            return FAN_EXIT_OK;
        }
        if (cmd(arg, line) != 0) {
            break;
        }
    }
    return FAN_EXIT_ERROR;
}

/* ---- /proc -------------------------------------------------------------- */

double fan_ticks_per_sec(void)
{
    long t = sysconf(_SC_CLK_TCK);

    return (t > 0) ? (double)t : 100.0;
}

static int fan_read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL) {
        return -1;
    }
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 0;
}

static uint64_t fan_status_kb(const char *status, const char *key)
{
    const char *p = strstr(status, key);

    return (p != NULL) ? strtoull(p + strlen(key), NULL, 10) : 0;
}

int fan_proc_sample(pid_t pid, fan_sample_t *s)
{
    char path[64], buf[4096], *p, *save = NULL, *tok;
    struct dirent *de;
    unsigned field;
    struct timespec ts;
    clockid_t clk;
    DIR *d;

    memset(s, 0, sizeof(*s));
    s->t_ns = bc_now_ns();
    /* utime + stime come in clock ticks (10 ms): too coarse for a pass of
     * a few ms; the process CPU-time clock is the same sum, in ns */
    if ((clock_getcpuclockid(pid, &clk) == 0) &&
        (clock_gettime(clk, &ts) == 0)) {
        s->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull +
                    (uint64_t)ts.tv_nsec;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (fan_read_file(path, buf, sizeof(buf)) != 0) {
        return -1;
    }
    /* fields after "(comm)", which may itself hold spaces: state is 3,
     * minflt 10, utime 14, stime 15, num_threads 20 (proc(5)) */
    p = strrchr(buf, ')');
    if (p == NULL) {
        return -1;
    }
    for (tok = strtok_r(p + 1, " ", &save), field = 3; tok != NULL;
         tok = strtok_r(NULL, " ", &save), ++field) {
        if (field == 10) {
            s->minflt = strtoull(tok, NULL, 10);
        } else if ((field == 14) || (field == 15)) {
            s->cpu_ticks += strtoull(tok, NULL, 10);
        } else if (field == 20) {
            s->threads = (unsigned)strtoul(tok, NULL, 10);
            break;
        }
    }
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (fan_read_file(path, buf, sizeof(buf)) != 0) {
        return -1;
    }
    s->rss_kb   = fan_status_kb(buf, "VmRSS:");
    s->anon_kb  = fan_status_kb(buf, "RssAnon:");
    s->file_kb  = fan_status_kb(buf, "RssFile:");
    s->shmem_kb = fan_status_kb(buf, "RssShmem:");
    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.') {
            ++s->fds;
        }
    }
    closedir(d);
    return 0;
}

double fan_cpu_s(const fan_sample_t *a, const fan_sample_t *b)
{
    if (a->cpu_ns && b->cpu_ns) {
        return (b->cpu_ns > a->cpu_ns) ?
               (double)(b->cpu_ns - a->cpu_ns) * 1e-9 : 0.0;
    }
    return (b->cpu_ticks > a->cpu_ticks) ?
           (double)(b->cpu_ticks - a->cpu_ticks) / fan_ticks_per_sec() : 0.0;
}

double fan_cores(const fan_sample_t *a, const fan_sample_t *b)
{
    double wall = (double)(b->t_ns - a->t_ns) * 1e-9;

    return (wall > 0) ? fan_cpu_s(a, b) / wall : 0.0;
}

static int fan_stat_cpu(uint64_t *busy, uint64_t *total)
{
    unsigned long long v[10] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int n, i;

    if (f == NULL) {
        return -1;
    }
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
               &v[9]);
    fclose(f);
    if (n < 4) {
        return -1;
    }
    for (i = 0, *total = 0; i < 8; ++i) {  /* guest time is inside user */
        *total += v[i];
    }
    *busy = *total - v[3] - v[4];           /* minus idle and iowait */
    return 0;
}

double fan_host_busy(unsigned ms)
{
    uint64_t b0, t0, b1, t1;

    if (fan_stat_cpu(&b0, &t0) != 0) {
        return 0.0;
    }
    bc_sleep_until_ns(bc_now_ns() + (uint64_t)ms * 1000000ull);
    if ((fan_stat_cpu(&b1, &t1) != 0) || (t1 <= t0)) {
        return 0.0;
    }
    return (double)(b1 - b0) / (double)(t1 - t0);
}
