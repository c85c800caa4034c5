/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Faults a scenario found, collected rather than fatal: a partition or a
 * kill exercises several promises in sequence (detection, reconnect, no
 * stale byte, no leftover socket), and a library that breaks the first
 * must still show whether it breaks the others.  A scenario records what
 * it found with mh_fault() and goes on where it still can (within bounded
 * extra waits); mh_faults_check() at the end fails the test with all of
 * them.  What cannot be gone past (a peer died, a call the next step
 * needs failed) still fails at once with ck_assert.
 *
 * Every recorded fault and every mh_note() is also printed on stderr at
 * once, with the test's elapsed time, so a log shows the order of events.
 */
#ifndef HX_MH_FAULTS_H_
#define HX_MH_FAULTS_H_

#include <stddef.h>

typedef struct mh_faults {
    char   text[32768];
    size_t len;
    int    n;
    double t0;            /* mh_now() at mh_faults_init */
    char   label[64];     /* the scenario, for every line */
} mh_faults_t;

void mh_faults_init(mh_faults_t *f, const char *label);

/* Record a fault (printf format). */
void mh_fault(mh_faults_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print an observation (timings, statuses): not a failure. */
void mh_note(mh_faults_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Fail the test when faults were recorded, listing them all. */
void mh_faults_check(const mh_faults_t *f);

#endif
