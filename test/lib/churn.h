/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection churn at a long-lived listener, every way a client can end.
 *
 * A decode engine accepts prefill engines all day for weeks.  Each client
 * here initializes an engine, connects to the listener, writes a pattern
 * of its own into a slot of the listener's churn area, reads it back and
 * checks every byte, and then ends one of the ways real engines end
 * (churn_end_t).  Two kinds of client take turns:
 *
 *  - one-shot processes, `parallel` at a time, a process per connection:
 *    they end by every ending in turn, SIGKILL with the write in flight
 *    and _exit without finalize among them;
 *  - one resident process that lives through the whole run and makes a
 *    fresh engine per connection, ending them by disconnect-then-finalize
 *    and by finalize alone in turn.  A process that lives on after its
 *    engine went is what UCX's keepalive never sees die: whatever the
 *    listener keeps of such a connection stays unless the library itself
 *    releases it.
 *
 * The listener's mappings, descriptors, threads and RSS are read after
 * the warm-up cycles (once two readings a keepalive round apart agree) and
 * again after the last cycle, with the resident still alive, bounded by
 * the idle time the library needs to notice a killed peer.
 *
 * Driven from a process that never initializes UCX (clients are forked
 * from it): it_churn and soak's churn.  One run per process.
 */
#ifndef HIXL_TEST_CHURN_H_
#define HIXL_TEST_CHURN_H_

#include "proc_usage.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CHURN_MAX_PARALLEL 8

/* How a client's connection ends. */
typedef enum churn_end {
    CHURN_END_DISCONNECT,   /* hixl_disconnect, then hixl_finalize */
    CHURN_END_FINALIZE,     /* hixl_finalize alone */
    CHURN_END_EXIT,         /* _exit with the engine still up */
    CHURN_END_KILL,         /* SIGKILL while its WRITE is in flight */
    CHURN_END_COUNT
} churn_end_t;

/* What growth the listener may show between the two readings. */
typedef struct churn_slack {
    long maps;
    long fds;
    long threads;
    long rss_kb;    /* < 0: RSS is printed, not checked */
} churn_slack_t;

/* The pattern a client writes: fill buf with seed's bytes; find_bad
 * returns the offset of the first byte that differs, or -1. */
typedef void (*churn_fill_fn)(void *buf, size_t len, uint64_t seed);
typedef int64_t (*churn_find_bad_fn)(const void *buf, size_t len,
                                     uint64_t seed);

typedef struct churn_cfg {
    const char       *target;      /* the listener's engine name */
    pid_t             target_pid;
    uint64_t          area;        /* its churn area: CHURN_AREA bytes */
    size_t            len;         /* one client's write */
    unsigned          parallel;    /* one-shot clients at a time, 1 to
                                      CHURN_MAX_PARALLEL */
    int               resident;    /* also the resident process */
    unsigned          cycles;      /* connections in all, 0: until stopped */
    unsigned          warmup;      /* connections before the first reading */
    uint64_t          seed;
    int               close_fds;   /* clients close what they inherit */
    churn_fill_fn     fill;        /* NULL: the module's own pattern */
    churn_find_bad_fn find_bad;
} churn_cfg_t;

/* The churn area: a slot per one-shot client, one for the killed ones
 * (never checked) and one for the resident. */
#define CHURN_AREA(_len, _parallel) ((size_t)(_len) * ((_parallel) + 2))

/* 0, or -1 with the reason on stderr. */
int churn_init(const churn_cfg_t *cfg);

/* Reap clients that ended, kill those whose time came, take the first
 * reading when it is due, and start new clients unless stop is set or
 * the cycles are done; waits up to wait_ms for a client to say something.
 * Call it often while the run lasts. */
void churn_step(int stop, int wait_ms);

/* No client is running and every cycle asked for has ended. */
int churn_done(void);

/* No client is running. */
int churn_idle(void);

/* What the last client that finished in a slot wrote there (its seed,
 * 0: nothing yet), and where that slot is in the area. */
uint64_t churn_slot_seed(unsigned slot);
uint64_t churn_slot_offset(unsigned slot);
unsigned churn_slots(void);

/* Once idle: read the listener until it is back within slack of the
 * first reading (or its bound passed), print the connections by ending
 * and the growth per 1,000 after warm-up, let the resident go.  0 when no
 * client failed and nothing grew beyond the slack. */
int churn_report(FILE *f, const char *label, const churn_slack_t *slack);

#endif
