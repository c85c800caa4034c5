/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test's side of multi-host peers (mh_peer.h): start one inside a
 * namespace host, send it commands, read its replies, kill it, read what
 * it printed on stderr.
 *
 * A peer is this test program exec'd again with --peer, after fork() and
 * setns() into the host's namespace, so it starts with a fresh UCX and
 * hixl (nothing inherited) and sees only that host's network.  It dies
 * with the test process (PR_SET_PDEATHSIG) and at end of stdin.  Its
 * stderr goes to a file, /tmp/hxmh.<test pid>.<label>.<n>.err, read by
 * mh_stderr() and removed by mh_kill_all() (the suites' sweep removes
 * those of dead tests; HX_MH_KEEP_LOGS=1 in the environment keeps them).
 *
 * Every wait is bounded.  A peer that dies while the test waits for its
 * answer fails the test with how it died and the tail of its stderr.
 */
#ifndef HX_MH_PROC_H_
#define HX_MH_PROC_H_

#include "harness.h"
#include "netns.h"

#include <sys/types.h>

/* Default bound for one command's answer. */
#define MH_CMD_TIMEOUT_MS 60000
/* Bound for a peer's start-up (exec, UCX and engine initialization). */
#define MH_START_TIMEOUT_MS 30000

typedef struct mh_proc {
    pid_t  pid;
    int    to_fd, from_fd;
    int    host;                  /* namespace host, -1: the test's own */
    char   label[32];
    char   name[HIXL_ENGINE_NAME_MAX + 1];   /* its engine name */
    char   errpath[160];
    char   rbuf[8192];            /* unread bytes from its stdout */
    size_t rlen;
    char  *reply;                 /* the last reply, all its lines */
    size_t reply_cap;
    int    reaped, wstatus;
} mh_proc_t;

typedef struct mh_spawn {
    const hx_net_t *net;          /* NULL: run in the test's namespace */
    int             host;
    const char     *label;        /* "decode", "prefill": for messages */
    const char     *engine;       /* engine name, "ip:0" or "ip" */
    const char     *env[16];      /* "K=V" sets, "K" unsets; NULL ends */
    const char     *opts[16];     /* "key=value" hixl options; NULL ends */
} mh_spawn_t;

/* Start a peer and wait for READY (asserts). */
void mh_start(mh_proc_t *p, const mh_spawn_t *sp);

/* Send a command (printf format) and wait up to timeout_ms for the whole
 * reply; returns it (valid until the next command to p).  Fails the test
 * when the peer does not answer or dies. */
const char *mh_cmd(mh_proc_t *p, int timeout_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* mh_cmd that also asserts the reply starts with "OK". */
const char *mh_ok(mh_proc_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* mh_cmd without failing: NULL (why in err) when the peer is dead or
 * silent. */
const char *mh_try(mh_proc_t *p, int timeout_ms, char *err, size_t errlen,
                   const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Run a command in the background in the peer; returns the job id. */
int mh_bg(mh_proc_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The job's reply once it ended, or NULL if still running after
 * timeout_ms. */
const char *mh_job(mh_proc_t *p, int job, int timeout_ms);

/* ---- replies ---------------------------------------------------------------- */

/* The status in a "status=... code=N" reply. */
hixl_status_t mh_status(const char *reply);
/* Value of key=... in the first line (0 / "" when absent). */
double      mh_num(const char *reply, const char *key);
uint64_t    mh_u64(const char *reply, const char *key);
/* The msg=... of the first line (to its end), copied into buf. */
const char *mh_msg(const char *reply, char *buf, size_t len);
/* The first line only, copied into buf (for failure messages). */
const char *mh_line(const char *reply, char *buf, size_t len);

/* ---- life and death ------------------------------------------------------- */

/* SIGKILL and reap (bounded). */
void mh_kill(mh_proc_t *p);
/* 1 while it runs, else 0 with how it ended in why. */
int mh_alive(mh_proc_t *p, char *why, size_t whylen);
/* "quit" and reap; asserts it exited 0. */
void mh_quit(mh_proc_t *p);
/* Its stderr so far (at most the last `tail` bytes); malloc'd. */
char *mh_stderr(const mh_proc_t *p, size_t tail);
/* Kill every peer this test started, remove their stderr files (checked
 * teardown). */
void mh_kill_all(void);
/* Remove stderr files of tests whose pid is dead (the suite's sweep). */
void mh_sweep_files(void);

/* Monotonic milliseconds: the clock peers stamp their replies with. */
double mh_now(void);
/* Sleep ms (the scenario's own pacing, never a wait for an event). */
void mh_sleep_ms(int ms);

#endif
