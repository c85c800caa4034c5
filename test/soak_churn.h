/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak's churn: short-lived client processes beside the long-lived
 * traffic.  Each one initializes an engine, connects to one of the soak's
 * engines (the listener), writes a pattern of its own into the listener's
 * churn area, reads it back and checks every byte, disconnects and
 * finalizes; one in kill_every is killed with SIGKILL while its write is
 * in flight instead.  The listener's mappings, descriptors, threads and
 * RSS are read after the warm-up cycles and again after the last one, and
 * their growth is reported per 1,000 connections.
 *
 * Driven from soak's parent, which never initializes UCX: clients are
 * forked from it.
 */
#ifndef HIXL_TEST_SOAK_CHURN_H_
#define HIXL_TEST_SOAK_CHURN_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The churn area each soak engine adds to its region. */
#define SOAK_CHURN_LEN      ((size_t)256 << 10)    /* one client's write */
#define SOAK_CHURN_PARALLEL 2                      /* clients at a time */
#define SOAK_CHURN_AREA     ((SOAK_CHURN_PARALLEL + 1) * SOAK_CHURN_LEN)

typedef struct soak_churn_cfg {
    unsigned    cycles;       /* 0: as many as the run has time for */
    unsigned    kill_every;   /* one client in this many is killed */
    unsigned    warmup;       /* cycles before the first reading */
    const char *target;       /* the listener's engine name */
    uint64_t    area;         /* its churn area (SOAK_CHURN_AREA bytes) */
    pid_t       target_pid;
    uint64_t    seed;
    int         quiet;
} soak_churn_cfg_t;

void soak_churn_init(const soak_churn_cfg_t *cfg);

/* Reap clients, and start new ones unless stop is set or the cycles are
 * done: call often while the soak runs. */
void soak_churn_step(int stop);

/* No client running. */
int soak_churn_idle(void);

/* Once idle: read the listener (after its keepalive round dropped the
 * endpoints of killed clients), print the growth per 1,000 connections;
 * 0 when no client failed and nothing grew beyond the slack. */
int soak_churn_report(FILE *f);

#endif
