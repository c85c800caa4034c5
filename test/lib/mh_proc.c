/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test's side of multi-host peers.  See mh_proc.h.
 */
#define _GNU_SOURCE
#include "mh_proc.h"
#include "mh_peer.h"
#include "fd_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MH_FILE_PREFIX "/tmp/hxmh."
#define MH_MAX_PROCS   32

/* Pids, not the mh_proc_t: those live on tests' stacks, and the teardown
 * runs after the test function returned. */
static pid_t mh_live[MH_MAX_PROCS];
static int   mh_nstarted;

double mh_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void mh_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while ((nanosleep(&ts, &ts) != 0) && (errno == EINTR)) {
    }
}

static void mh_live_set(pid_t pid, int on)
{
    int i;

    for (i = 0; i < MH_MAX_PROCS; ++i) {
        if (on && (mh_live[i] == 0)) {
            mh_live[i] = pid;
            return;
        }
        if (!on && (mh_live[i] == pid)) {
            mh_live[i] = 0;
        }
    }
    if (on) {
        kill(pid, SIGKILL);
        ck_abort_msg("more than %d peers at once", MH_MAX_PROCS);
    }
}

/* How the peer ended, plus the tail of its stderr. */
static void mh_death_note(mh_proc_t *p, char *buf, size_t len)
{
    char *tail = mh_stderr(p, 1500);
    char how[64];

    if (!p->reaped) {
        snprintf(how, sizeof(how), "still running");
    } else if (WIFSIGNALED(p->wstatus)) {
        snprintf(how, sizeof(how), "killed by signal %d%s",
                 WTERMSIG(p->wstatus),
                 (WTERMSIG(p->wstatus) == SIGABRT) ? " (abort)" : "");
    } else {
        snprintf(how, sizeof(how), "exited with status %d",
                 WEXITSTATUS(p->wstatus));
    }
    snprintf(buf, len, "%s %d (%s): %s; its stderr ends:\n%s", p->label,
             (int)p->pid, p->name, how, tail ? tail : "(unreadable)");
    free(tail);
}

/* A reaped peer keeps what says how it ended (wstatus, its stderr file)
 * and gives back the rest: a test starts many in one process. */
static void mh_release(mh_proc_t *p)
{
    p->reaped = 1;
    mh_live_set(p->pid, 0);
    if (p->to_fd >= 0) {
        close(p->to_fd);
    }
    if (p->from_fd >= 0) {
        close(p->from_fd);
    }
    p->to_fd = p->from_fd = -1;
    free(p->reply);
    p->reply     = NULL;
    p->reply_cap = 0;
}

/* Reap if it ended (bounded by wait_ms); 1 when reaped. */
static int mh_reap(mh_proc_t *p, int wait_ms)
{
    double deadline = mh_now() + wait_ms;
    pid_t r;

    if (p->reaped) {
        return 1;
    }
    for (;;) {
        r = waitpid(p->pid, &p->wstatus, WNOHANG);
        if (r == p->pid) {
            mh_release(p);
            return 1;
        }
        if ((r < 0) && (errno != EINTR)) {
            p->wstatus = 0;   /* not ours any more: nothing to wait for */
            mh_release(p);
            return 1;
        }
        if (mh_now() >= deadline) {
            return 0;
        }
        mh_sleep_ms(1);
    }
}

/* Read one line (without its newline) into line; 0, or -1 on EOF (the
 * peer died) or when the deadline passed (-2). */
static int mh_read_line(mh_proc_t *p, double deadline, char *line,
                        size_t len)
{
    struct pollfd pfd = {p->from_fd, POLLIN, 0};
    char *nl;
    ssize_t n;
    size_t l;
    double left;

    for (;;) {
        nl = memchr(p->rbuf, '\n', p->rlen);
        if (nl != NULL) {
            l = (size_t)(nl - p->rbuf);
            snprintf(line, len, "%.*s", (int)l, p->rbuf);
            memmove(p->rbuf, nl + 1, p->rlen - l - 1);
            p->rlen -= l + 1;
            return 0;
        }
        if (p->rlen == sizeof(p->rbuf)) {
            /* a line longer than the buffer: hand it over in pieces */
            snprintf(line, len, "%.*s", (int)p->rlen, p->rbuf);
            p->rlen = 0;
            return 0;
        }
        left = deadline - mh_now();
        if (left <= 0) {
            return -2;
        }
        pfd.revents = 0;
        if (poll(&pfd, 1, (int)(left + 1)) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        if (pfd.revents == 0) {
            continue;
        }
        n = read(p->from_fd, p->rbuf + p->rlen, sizeof(p->rbuf) - p->rlen);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p->rlen += (size_t)n;
    }
}

static void mh_reply_add(mh_proc_t *p, size_t *used, const char *line)
{
    size_t l = strlen(line);

    if (*used + l + 2 > p->reply_cap) {
        p->reply_cap = (*used + l + 2) * 2;
        p->reply     = realloc(p->reply, p->reply_cap);
        ck_assert_ptr_nonnull(p->reply);
    }
    memcpy(p->reply + *used, line, l);
    *used += l;
    p->reply[(*used)++] = '\n';
    p->reply[*used]     = '\0';
}

static const char *mh_vtry(mh_proc_t *p, int timeout_ms, char *err,
                           size_t errlen, const char *fmt, va_list ap)
{
    double deadline = mh_now() + timeout_ms;
    char cmd[1024], line[16384];
    size_t used = 0;
    long more = 0;
    int rc;

    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    if (p->reaped || (p->to_fd < 0)) {
        snprintf(err, errlen, "`%s`: %s %d is gone", cmd, p->label,
                 (int)p->pid);
        return NULL;
    }
    snprintf(line, sizeof(line), "%s\n", cmd);
    if (hx_write_all(p->to_fd, line, strlen(line)) != 0) {
        mh_reap(p, 2000);
        mh_death_note(p, line, sizeof(line));
        snprintf(err, errlen, "`%s` could not be sent: %s", cmd, line);
        return NULL;
    }
    rc = mh_read_line(p, deadline, line, sizeof(line));
    if (rc == 0) {
        const char *k = strstr(line, "lines=");

        mh_reply_add(p, &used, line);
        if ((strncmp(line, "OK", 2) == 0) && (k != NULL) &&
            ((k == line + 3) || (k[-1] == ' '))) {
            more = strtol(k + 6, NULL, 10);
        }
    }
    while ((rc == 0) && (more-- > 0)) {
        rc = mh_read_line(p, deadline, line, sizeof(line));
        if (rc == 0) {
            mh_reply_add(p, &used, line);
        }
    }
    if (rc == 0) {
        return p->reply;
    }
    if (rc == -2) {
        snprintf(err, errlen, "%s %d (%s) did not answer `%s` within %d ms",
                 p->label, (int)p->pid, p->name, cmd, timeout_ms);
        return NULL;
    }
    mh_reap(p, 2000);
    mh_death_note(p, line, sizeof(line));
    snprintf(err, errlen, "`%s`: no answer, %s", cmd, line);
    return NULL;
}

const char *mh_try(mh_proc_t *p, int timeout_ms, char *err, size_t errlen,
                   const char *fmt, ...)
{
    const char *r;
    va_list ap;

    va_start(ap, fmt);
    r = mh_vtry(p, timeout_ms, err, errlen, fmt, ap);
    va_end(ap);
    return r;
}

/* Fail the test with msg: in full on stderr (the log), and as much as
 * Check carries (CK_MAX_MSG_SIZE, 4 KiB by default) in the result. */
static void mh_fail(const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    ck_abort_msg("%.3000s", msg);
}

const char *mh_cmd(mh_proc_t *p, int timeout_ms, const char *fmt, ...)
{
    char err[4096];
    const char *r;
    va_list ap;

    va_start(ap, fmt);
    r = mh_vtry(p, timeout_ms, err, sizeof(err), fmt, ap);
    va_end(ap);
    if (r == NULL) {
        mh_fail(err);
    }
    return r;
}

const char *mh_ok(mh_proc_t *p, const char *fmt, ...)
{
    char err[4096], first[1024];
    const char *r;
    va_list ap;

    va_start(ap, fmt);
    r = mh_vtry(p, MH_CMD_TIMEOUT_MS, err, sizeof(err), fmt, ap);
    va_end(ap);
    if (r == NULL) {
        mh_fail(err);
    }
    ck_assert_msg(strncmp(r, "OK", 2) == 0, "%s %d answered: %s", p->label,
                  (int)p->pid, mh_line(r, first, sizeof(first)));
    return r;
}

int mh_bg(mh_proc_t *p, const char *fmt, ...)
{
    char cmd[1024];
    const char *r;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    r = mh_ok(p, "bg %s", cmd);
    return (int)mh_u64(r, "job");
}

const char *mh_job(mh_proc_t *p, int job, int timeout_ms)
{
    const char *r = mh_cmd(p, timeout_ms + MH_CMD_TIMEOUT_MS, "job %d %d",
                           job, timeout_ms);

    return (strncmp(r, "PENDING", 7) == 0) ? NULL : r;
}

/* ---- replies ------------------------------------------------------------------ */

/* Where "key=" starts a word in the first line, or NULL. */
static const char *mh_find(const char *reply, const char *key)
{
    size_t kl = strlen(key);
    const char *p = reply, *eol = strchr(reply, '\n'), *msg;

    if (eol == NULL) {
        eol = reply + strlen(reply);
    }
    /* never look inside msg=..., which is free text */
    msg = strstr(reply, " msg=");
    if ((msg != NULL) && (msg < eol) && strcmp(key, "msg")) {
        eol = msg;
    }
    while ((p = strstr(p, key)) != NULL && (p < eol)) {
        if (((p == reply) || (p[-1] == ' ')) && (p[kl] == '=')) {
            return p + kl + 1;
        }
        p += kl;
    }
    return NULL;
}

hixl_status_t mh_status(const char *reply)
{
    const char *v = mh_find(reply, "code");

    return (v == NULL) ? (hixl_status_t)-1 : (hixl_status_t)atoi(v);
}

double mh_num(const char *reply, const char *key)
{
    const char *v = mh_find(reply, key);

    return (v == NULL) ? 0 : strtod(v, NULL);
}

uint64_t mh_u64(const char *reply, const char *key)
{
    const char *v = mh_find(reply, key);

    return (v == NULL) ? 0 : strtoull(v, NULL, 0);
}

const char *mh_msg(const char *reply, char *buf, size_t len)
{
    const char *v = mh_find(reply, "msg");
    size_t l;

    if (v == NULL) {
        snprintf(buf, len, "%s", "");
        return buf;
    }
    l = strcspn(v, "\n");
    snprintf(buf, len, "%.*s", (int)l, v);
    return buf;
}

const char *mh_line(const char *reply, char *buf, size_t len)
{
    snprintf(buf, len, "%.*s", (int)strcspn(reply, "\n"), reply);
    return buf;
}

/* ---- life and death -------------------------------------------------------------- */

void mh_start(mh_proc_t *p, const mh_spawn_t *sp)
{
    int to[2], from[2], i, n = 0, errfd;
    char *argv[24], line[1024], note[4096];
    pid_t parent = getpid(), pid;
    const char *v;

    memset(p, 0, sizeof(*p));
    p->host = sp->net ? sp->host : -1;
    snprintf(p->label, sizeof(p->label), "%s", sp->label);
    snprintf(p->name, sizeof(p->name), "%s", sp->engine);
    snprintf(p->errpath, sizeof(p->errpath), MH_FILE_PREFIX "%d.%s.%d.err",
             (int)parent, sp->label, mh_nstarted++);
    ck_assert_int_eq(pipe2(to, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(from, O_CLOEXEC), 0);

    argv[n++] = (char*)"mh_peer";
    argv[n++] = (char*)"--peer";
    argv[n++] = (char*)sp->engine;
    for (i = 0; (i < 16) && (sp->opts[i] != NULL); ++i) {
        argv[n++] = (char*)sp->opts[i];
    }
    argv[n] = NULL;

    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* die with the test, whatever way it ends */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) {
            _exit(3);
        }
        if ((sp->net != NULL) && (hx_net_enter(sp->net, sp->host) != 0)) {
            dprintf(from[1], "FAIL msg=cannot enter %s: %s\n",
                    sp->net->ns[sp->host], strerror(errno));
            _exit(3);
        }
        errfd = open(p->errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                     0644);
        if ((dup2(to[0], STDIN_FILENO) < 0) ||
            (dup2(from[1], STDOUT_FILENO) < 0) ||
            ((errfd >= 0) && (dup2(errfd, STDERR_FILENO) < 0))) {
            _exit(3);
        }
        for (i = 0; (i < 16) && (sp->env[i] != NULL); ++i) {
            char kv[512], *eq;

            snprintf(kv, sizeof(kv), "%s", sp->env[i]);
            eq = strchr(kv, '=');
            if (eq == NULL) {
                unsetenv(kv);
            } else {
                *eq = '\0';
                setenv(kv, eq + 1, 1);
            }
        }
        alarm(MH_PEER_ALARM_S);
        execv("/proc/self/exe", argv);
        dprintf(STDOUT_FILENO, "FAIL msg=exec: %s\n", strerror(errno));
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p->pid     = pid;
    p->to_fd   = to[1];
    p->from_fd = from[0];
    mh_live_set(pid, 1);

    if (mh_read_line(p, mh_now() + MH_START_TIMEOUT_MS, line,
                     sizeof(line)) != 0) {
        char msg[4200];

        mh_reap(p, 2000);
        mh_death_note(p, note, sizeof(note));
        snprintf(msg, sizeof(msg), "%s did not start: %s", sp->label, note);
        mh_fail(msg);
    }
    ck_assert_msg(strncmp(line, "READY ", 6) == 0, "%s (%s) did not start: "
                  "%s", sp->label, sp->engine, line);
    v = strstr(line, "name=");
    ck_assert_ptr_nonnull(v);
    snprintf(p->name, sizeof(p->name), "%.*s", (int)strcspn(v + 5, " "),
             v + 5);
}

void mh_kill(mh_proc_t *p)
{
    if (p->reaped || (p->pid <= 0)) {
        return;
    }
    kill(p->pid, SIGKILL);
    ck_assert_msg(mh_reap(p, 10000), "%s %d survived SIGKILL for 10 s",
                  p->label, (int)p->pid);
}

int mh_alive(mh_proc_t *p, char *why, size_t whylen)
{
    char note[4096];

    if (!mh_reap(p, 0)) {
        return 1;
    }
    mh_death_note(p, note, sizeof(note));
    snprintf(why, whylen, "%s", note);
    return 0;
}

void mh_quit(mh_proc_t *p)
{
    char err[4096], note[4096];
    const char *r;

    r = mh_try(p, MH_CMD_TIMEOUT_MS, err, sizeof(err), "quit");
    if (r == NULL) {
        mh_fail(err);
    }
    if (!mh_reap(p, 10000)) {
        kill(p->pid, SIGKILL);
        mh_reap(p, 10000);
        ck_abort_msg("%s %d did not exit after quit", p->label, (int)p->pid);
    }
    mh_death_note(p, note, sizeof(note));
    if (!WIFEXITED(p->wstatus) || (WEXITSTATUS(p->wstatus) != 0)) {
        mh_fail(note);
    }
}

char *mh_stderr(const mh_proc_t *p, size_t tail)
{
    FILE *f = fopen(p->errpath, "r");
    char *buf;
    long size;
    size_t n;

    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    if ((tail > 0) && (size > (long)tail)) {
        fseek(f, size - (long)tail, SEEK_SET);
        size = (long)tail;
    } else {
        fseek(f, 0, SEEK_SET);
    }
    buf = malloc((size_t)size + 1);
    if (buf == NULL) {
        fclose(f);
        return NULL;
    }
    n = fread(buf, 1, (size_t)size, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

void mh_kill_all(void)
{
    int i;

    for (i = 0; i < MH_MAX_PROCS; ++i) {
        double deadline = mh_now() + 10000;

        if (mh_live[i] == 0) {
            continue;
        }
        kill(mh_live[i], SIGKILL);
        while ((waitpid(mh_live[i], NULL, WNOHANG) == 0) &&
               (mh_now() < deadline)) {
            mh_sleep_ms(1);
        }
        mh_live[i] = 0;
    }
    mh_sweep_files();
}

void mh_sweep_files(void)
{
    struct dirent *de;
    DIR *d = opendir("/tmp");
    char path[300];
    int pid;

    /* kept on request, to read what peers printed after a run */
    if ((d == NULL) || (getenv("HX_MH_KEEP_LOGS") != NULL)) {
        if (d != NULL) {
            closedir(d);
        }
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if ((strncmp(de->d_name, "hxmh.", 5) != 0) ||
            (sscanf(de->d_name + 5, "%d.", &pid) != 1)) {
            continue;
        }
        /* our own (teardown) and those of dead tests */
        if ((pid != (int)getpid()) && ((kill(pid, 0) == 0) ||
                                       (errno == EPERM))) {
            continue;
        }
        snprintf(path, sizeof(path), "/tmp/%s", de->d_name);
        unlink(path);
    }
    closedir(d);
}
