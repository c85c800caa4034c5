/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: the parent's side of the engine processes: forking them, reading
 * what they say (bounded, a silent one is hung), ending them.
 */
#include "soak.h"

/* ---- parent ----------------------------------------------------------------- */

kid_t g_kids[MAX_ENGINES];

static void kid_close(kid_t *k)
{
    if (k->rep_fd >= 0) {
        close(k->rep_fd);
        k->rep_fd = -1;
    }
    if (k->cmd_fd >= 0) {
        close(k->cmd_fd);
        k->cmd_fd = -1;
    }
}

/* The child's pipe closed or it misbehaved: collect how it ended (bounded
 * wait), kill it if it still runs. */
void kid_gone(kid_t *k, const char *what)
{
    int wstatus = 0, i;
    pid_t rc = 0;

    kid_close(k);
    if (k->pid <= 0) {
        return;
    }
    for (i = 0; i < 2000; ++i) {
        rc = waitpid(k->pid, &wstatus, WNOHANG);
        if (rc != 0) {
            break;
        }
        usleep(1000);
    }
    if (rc == 0) {
        kill(k->pid, SIGKILL);
        waitpid(k->pid, &wstatus, 0);
    }
    k->pid = 0;
    if (k->reported && WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0)) {
        return;
    }
    k->dead = 1;
    if (WIFSIGNALED(wstatus)) {
        snprintf(k->why, sizeof(k->why), "%s: killed by signal %d (%s)%s",
                 what, WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)),
                 (WTERMSIG(wstatus) == SIGALRM) ? ": hung" : "");
    } else if (WIFEXITED(wstatus)) {
        snprintf(k->why, sizeof(k->why), "%s: exited with status %d", what,
                 WEXITSTATUS(wstatus));
    } else {
        snprintf(k->why, sizeof(k->why), "%s", what);
    }
}

void kid_send(kid_t *k, const p2c_t *m)
{
    if ((k->cmd_fd >= 0) && (hx_write_all(k->cmd_fd, m, sizeof(*m)) != 0)) {
        kid_gone(k, "command pipe broken");
    }
}

unsigned kids_alive(unsigned n)
{
    unsigned i, a = 0;

    for (i = 0; i < n; ++i) {
        a += (g_kids[i].rep_fd >= 0);
    }
    return a;
}

uint64_t g_go_ms;

/* Read what the children say until done() holds for every live child or
 * the deadline passes; returns 0 when it held.  running: children send
 * heartbeats, so one silent for SILENCE_S is hung (killed), and progress
 * is printed every 10 s. */
int kids_pump(unsigned n, uint64_t deadline, int (*done)(const kid_t*),
                     int running)
{
    struct pollfd pfd[MAX_ENGINES];
    unsigned idx[MAX_ENGINES], i, np, all;
    uint64_t progress_at = g_go_ms + 10000;
    c2p_t m;
    uint64_t t;
    int rc;

    for (;;) {
        if (running) {   /* the churn stops with the run */
            churn_step(now_ms() >= g_go_ms + (uint64_t)g_cfg.seconds * 1000,
                       0);
        }
        all = 1;
        for (i = 0; i < n; ++i) {
            if ((g_kids[i].rep_fd >= 0) && !done(&g_kids[i])) {
                all = 0;
            }
        }
        if (all) {
            return 0;
        }
        t = now_ms();
        if (t >= deadline) {
            return -1;
        }
        np = 0;
        for (i = 0; i < n; ++i) {
            if (g_kids[i].rep_fd < 0) {
                continue;
            }
            if (running && (t - g_kids[i].last_msg_ms > SILENCE_S * 1000ull)) {
                g_kids[i].hung = 1;
                kid_gone(&g_kids[i], "silent for too long");
                fprintf(stderr, "soak: e%u sent nothing for %d s: killed\n",
                        i, SILENCE_S);
                continue;
            }
            pfd[np].fd      = g_kids[i].rep_fd;
            pfd[np].events  = POLLIN;
            pfd[np].revents = 0;
            idx[np++] = i;
        }
        if (np == 0) {
            continue;
        }
        rc = poll(pfd, np, running ? 10 : 200);
        if ((rc < 0) && (errno != EINTR)) {
            perror("soak: poll");
            return -1;
        }
        for (i = 0; (rc > 0) && (i < np); ++i) {
            kid_t *k = &g_kids[idx[i]];

            if (!pfd[i].revents) {
                continue;
            }
            if (read_timed(k->rep_fd, &m, sizeof(m), 5000) != 0) {
                kid_gone(k, k->reported ? "exited" : "died");
                if (k->dead) {
                    fprintf(stderr, "soak: e%u %s\n", idx[i], k->why);
                }
                continue;
            }
            k->last_msg_ms = now_ms();
            if (m.type == C_ERROR) {
                snprintf(k->text, sizeof(k->text), "%s", m.text);
                kid_gone(k, "gave up");
                continue;
            }
            if (m.type == C_READY) {
                k->ready = 1;
                snprintf(k->name, sizeof(k->name), "%s", m.name);
                k->base = m.base;
            }
            k->connected |= (m.type == C_CONNECTED);
            k->drained   |= (m.type == C_DRAINED);
            k->stopped   |= (m.type == C_STOPPED);
            if ((m.type == C_HEARTBEAT) || (m.type == C_DRAINED) ||
                (m.type == C_REPORT)) {
                k->st = m.st;
            }
            if (m.type == C_REPORT) {
                k->reported = 1;
                snprintf(k->text, sizeof(k->text), "%s", m.text);
            }
        }
        if (running && !g_cfg.quiet && (now_ms() >= progress_at)) {
            uint64_t w = 0, b = 0, v = 0, bad = 0, f = 0;

            progress_at += 10000;
            for (i = 0; i < n; ++i) {
                w   += g_kids[i].st.writes + g_kids[i].st.reads;
                b   += g_kids[i].st.bytes_written + g_kids[i].st.bytes_read;
                v   += g_kids[i].st.verified;
                bad += g_kids[i].st.corruptions;
                f   += g_kids[i].st.failures;
            }
            printf("soak: %3u s: %" PRIu64 " transfers, %.1f MiB, %" PRIu64
                   " writes checked, %" PRIu64 " corruptions, %" PRIu64
                   " failures, %u/%u engines alive\n",
                   (unsigned)((now_ms() - g_go_ms + 500) / 1000), w, MiB(b),
                   v, bad, f, kids_alive(n), n);
            fflush(stdout);
        }
    }
}

int is_ready(const kid_t *k)     { return k->ready; }
int is_connected(const kid_t *k) { return k->connected; }
int is_drained(const kid_t *k)   { return k->drained || k->reported; }
int is_stopped(const kid_t *k)   { return k->stopped || k->reported; }
int is_reported(const kid_t *k)  { return k->reported; }

int kids_spawn(unsigned n)
{
    int cmd_pipe[2], rep_pipe[2];
    pid_t parent = getpid(), pid;
    unsigned i;

    /* fork every engine before anything here touches UCX (nothing will) */
    for (i = 0; i < n; ++i) {
        g_kids[i].cmd_fd = g_kids[i].rep_fd = -1;
        if ((pipe(cmd_pipe) != 0) || (pipe(rep_pipe) != 0)) {
            perror("soak: pipe");
            return 2;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
            perror("soak: fork");
            return 2;
        }
        if (pid == 0) {
            unsigned o;

            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) {
                _exit(3);
            }
            /* last resort against a hang */
            alarm(g_cfg.seconds + 2 * SETUP_TIMEOUT_S + DRAIN_TIMEOUT_S +
                  REPORT_TIMEOUT_S + 60);
            for (o = 0; o < i; ++o) {
                close(g_kids[o].cmd_fd);
                close(g_kids[o].rep_fd);
            }
            close(cmd_pipe[1]);
            close(rep_pipe[0]);
            _exit(child_main(i, cmd_pipe[0], rep_pipe[1]));
        }
        close(cmd_pipe[0]);
        close(rep_pipe[1]);
        g_kids[i].pid         = pid;
        g_kids[i].cmd_fd      = cmd_pipe[1];
        g_kids[i].rep_fd      = rep_pipe[0];
        g_kids[i].last_msg_ms = now_ms();
    }

    return 0;
}
