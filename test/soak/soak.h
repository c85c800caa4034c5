/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak (main.c says what it does): what its parts share.  The parent
 * (main.c, parent.c, report.c) forks one engine process per engine
 * (child.c, with its sender thread, sender.c, and its receiver,
 * receiver.c); they speak over pipes (the messages below) and compute
 * every write from the configuration and the seed (pattern.c).
 */
#ifndef HIXL_SOAK_H_
#define HIXL_SOAK_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include "fd_io.h"
#include "churn.h"

#include <hixl/hixl.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ENGINES   16
#define MAX_SLOTS     64
#define SLOT_DATA     ((size_t)1 << 20)        /* largest write */
#define SLOT_SKEW     64                       /* largest offset in a slot */
#define SLOT_SIZE     (SLOT_DATA + SLOT_SKEW)
#define STATIC_SIZE   ((size_t)4 << 20)        /* READ area per engine */
/* The churn at e0 (churn.h): one client's write, one-shot clients at a
 * time. */
#define SOAK_CHURN_LEN      ((size_t)256 << 10)
#define SOAK_CHURN_PARALLEL 2
#define MAX_DESCS     256
#define GUARD         0xa5

#define SETUP_TIMEOUT_S  120   /* engines up, then connected */
#define DRAIN_TIMEOUT_S  60    /* slots back after the end */
#define REPORT_TIMEOUT_S 60    /* finalize and report */
#define SILENCE_S        60    /* no heartbeat for this long: hung */
#define OP_TIMEOUT_MS    30000
#define NOTIFY_TIMEOUT_MS 20000

#define NOTIFY_DATA "soak.data"
#define NOTIFY_DONE "soak.done"
#define NOTIFY_MAGIC 0x736f616b6e746679ull

#define MiB(x) ((double)(x) / 1048576.0)

/* ---- configuration, shared by parent and children ------------------------- */

typedef struct cfg {
    unsigned seconds;
    unsigned engines;
    unsigned slots;
    unsigned warmup;
    uint64_t seed;
    uint64_t rss_limit;   /* bytes of growth after warm-up */
    unsigned churn;       /* churn cycles, 0: as many as fit */
    int      quiet;
} cfg_t;


extern cfg_t g_cfg;

/* What e0 may grow by over the churn (options.c says why). */
extern const churn_slack_t soak_churn_slack;

/* -1: run with g_cfg set from the command line; else exit with that. */
int soak_options(int argc, char **argv);

/* ---- time, memory, pipes (common.c) ---------------------------------------- */

uint64_t now_ms(void);
uint64_t rss_bytes(void);

typedef struct stats {
    uint64_t writes, reads;            /* completed, as initiator */
    uint64_t bytes_written, bytes_read;
    uint64_t writes_sync;
    uint64_t verified;                 /* slots checked, as receiver */
    uint64_t verified_bytes;
    uint64_t layer_signals;            /* flushed writes seen signalled */
    uint64_t superseded;               /* ... of them seen superseded */
    uint64_t waits;                    /* hixl_wait_layer calls */
    uint64_t xfer_notifies;            /* per-transfer notifies received */
    uint64_t done_sent, done_recv;
    uint64_t corruptions;              /* writes or reads with bad bytes */
    uint64_t bad_bytes;
    uint64_t failures;                 /* calls or requests that failed */
    uint64_t stuck;                    /* slots never returned */
    uint64_t rss_start, rss_warm, rss_end, rss_max;
    int32_t  finalize_status;
    int32_t  pad;
} stats_t;

enum {
    C_READY = 1,     /* name, base, len */
    C_CONNECTED,
    C_HEARTBEAT,     /* stats */
    C_DRAINED,       /* sender done: every slot back */
    C_STOPPED,       /* no more hixl calls until P_FINALIZE */
    C_REPORT,        /* final stats; text: first problem */
    C_ERROR          /* text; the child exits */
};

typedef struct c2p {
    uint32_t type;
    uint32_t idx;
    uint64_t base, len;
    char     name[HIXL_ENGINE_NAME_MAX + 1];
    stats_t  st;
    char     text[512];
} c2p_t;

enum { P_PEERS = 1, P_GO, P_FINISH, P_FINALIZE };

typedef struct p2c {
    uint32_t type;
    uint32_t n;
    uint64_t base[MAX_ENGINES];
    char     names[MAX_ENGINES][HIXL_ENGINE_NAME_MAX + 1];
} p2c_t;

_Static_assert(sizeof(c2p_t) <= PIPE_BUF, "a message must be atomic");
_Static_assert(sizeof(p2c_t) <= PIPE_BUF, "a message must be atomic");


/* Read exactly len bytes within timeout_ms: 0, -1 on EOF or error, -2 on
 * timeout. */
int read_timed(int fd, void *buf, size_t len, int timeout_ms);

/* ---- patterns and plans (pattern.c) ----------------------------------------- */

static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Byte i of pattern `seed` is byte (i & 7) of mix(i / 8 ^ mix(seed)): an
 * index, not an address, so either side computes it anywhere. */
static inline uint64_t pat_word(uint64_t smix, uint64_t word)
{
    return mix(word ^ smix);
}

static inline uint8_t pat_byte(uint64_t seed, uint64_t idx)
{
    return (uint8_t)(pat_word(mix(seed), idx >> 3) >> (8 * (idx & 7)));
}

uint64_t rnd(uint64_t *state);
void pat_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t idx);
/* Number of bytes that differ from the pattern; the first in *first. */
size_t pat_check(const uint8_t *p, size_t len, uint64_t seed, uint64_t idx,
                 size_t *first);
/* Bytes of [p, +len) that are not the guard byte. */
size_t guard_check(const uint8_t *p, size_t len, size_t *first);

enum { SIG_FLUSH = 0, SIG_NOTIFY = 1 };

typedef struct plan {
    int      signal;
    size_t   off;     /* in the slot */
    size_t   size;
    uint64_t seed;    /* pattern */
} plan_t;

void plan_write(unsigned s, unsigned r, uint64_t q, plan_t *p);
uint64_t static_seed(unsigned e);

/* ---- the engine process (child.c) ------------------------------------------- */

/* Engine me of the run, commands on cmd_fd, reports on rep_fd; returns
 * its exit status. */
int child_main(unsigned me, int cmd_fd, int rep_fd);

/* ---- the parent (parent.c, report.c) ---------------------------------------- */

typedef struct kid {
    pid_t    pid;
    int      cmd_fd, rep_fd;   /* -1 when closed */
    int      ready, connected, drained, stopped, reported;
    int      dead, hung;
    uint64_t last_msg_ms;
    char     name[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t base;
    stats_t  st;
    char     text[512];
    char     why[160];         /* how it ended, if not cleanly */
} kid_t;

extern kid_t g_kids[MAX_ENGINES];
extern uint64_t g_go_ms;

/* Fork the n engine processes (before anything here touches UCX): 0, or
 * 2 when a pipe or a process could not be made. */
int kids_spawn(unsigned n);
void kid_gone(kid_t *k, const char *what);
void kid_send(kid_t *k, const p2c_t *m);
unsigned kids_alive(unsigned n);
int kids_pump(unsigned n, uint64_t deadline, int (*done)(const kid_t*),
              int running);
int is_ready(const kid_t *k);
int is_connected(const kid_t *k);
int is_drained(const kid_t *k);
int is_stopped(const kid_t *k);
int is_reported(const kid_t *k);

/* Collect every engine, print the table and the summary; the exit status
 * (churn_bad: the churn's report failed). */
int soak_report(unsigned n, int churn_bad);

#endif
