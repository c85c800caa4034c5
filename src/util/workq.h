/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A queue of work items run in order by one thread of its own.
 *
 * For work that must leave the thread that finds it (the caller's, which
 * is computing the next layer; the progress thread, which must not stop
 * for a long copy or a page-table fill) but needs no parallelism of its
 * own.  The thread starts with the first item; stopping joins it and hands
 * what was never run back to the owner's drop function.
 *
 * An item is the owner's structure with a hixl_work_t as its first member;
 * the queue never allocates.
 *
 * A background queue's thread runs at the lowest priority (nice 19): its
 * work is worth doing only with CPU nobody else needs.  Pre-faulting the
 * KV cache of a peer costs CPU in proportion to its size, and at normal
 * priority the pre-faults of many engines connecting at once slow the
 * UCX wire-ups they race with.  Not SCHED_IDLE: owners
 * wait for the item running (a cancel, a stop), and nice 19 still gets a
 * share of a busy CPU, so that wait stays bounded.
 */
#ifndef HIXL_UTIL_WORKQ_H_
#define HIXL_UTIL_WORKQ_H_

#include <pthread.h>

typedef struct hixl_work {
    struct hixl_work *next;
    void            (*run)(struct hixl_work *work);   /* owns it after */
} hixl_work_t;

typedef struct hixl_workq {
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    pthread_t       thread;
    int             running;
    int             stop;
    int             background;   /* the thread runs at nice 19 */
    hixl_work_t    *head, *tail;
} hixl_workq_t;

void hixl_workq_init(hixl_workq_t *q);

/* A queue of its own allocation, initialised (background: its thread at
 * the lowest priority); NULL when out of memory. */
hixl_workq_t *hixl_workq_new(int background);

/* hixl_workq_stop, then free a queue from hixl_workq_new (NULL: nothing). */
void hixl_workq_free(hixl_workq_t *q, void (*drop)(hixl_work_t *work));

/* Queue work (any thread); 0 once queued, -1 when no thread can run it
 * (it could not be started, or the queue is stopping): the caller still
 * owns work then. */
int hixl_workq_post(hixl_workq_t *q, hixl_work_t *work);

/* Join the thread after the item it is running; drop() gets every item
 * never run (may be NULL when there can be none). */
void hixl_workq_stop(hixl_workq_t *q, void (*drop)(hixl_work_t *work));

#endif
