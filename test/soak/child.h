/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: one engine process, its state shared by its receiver (the
 * process's main thread, receiver.c) and its sender thread (sender.c).
 */
#ifndef HIXL_SOAK_CHILD_H_
#define HIXL_SOAK_CHILD_H_

#include "soak.h"

typedef struct child {
    unsigned        me, n, k;
    int             cmd_fd, rep_fd;
    hixl_engine_t  *e;
    char            names[MAX_ENGINES][HIXL_ENGINE_NAME_MAX + 1];
    uint64_t        base[MAX_ENGINES];   /* peers' receive regions */
    uint8_t        *region;              /* ours: rings, then static */
    size_t          region_len;
    hixl_mem_handle_t region_h;
    uint8_t        *local;               /* send slots, then read buffer */
    size_t          local_len;
    hixl_mem_handle_t local_h;
    uint64_t        start_ms, end_ms;

    /* sender -> receiver thread: per peer and slot, sequence + 1 of the
     * last write the peer returned (0: none) */
    _Atomic uint64_t done[MAX_ENGINES][MAX_SLOTS];
    atomic_int      sender_over;         /* sender finished draining */
    atomic_int      stop;                /* stop the sender (parent said) */

    stats_t         ss;                  /* sender's counters */
    stats_t         rs;                  /* receiver's counters */
    pthread_mutex_t err_lock;
    char            first_err[512];
    unsigned        nerr;
} child_t;

#define CNT(_s, _f, _v) __atomic_fetch_add(&(_s)->_f, (uint64_t)(_v), \
                                           __ATOMIC_RELAXED)


/* Note a problem: the first is kept for the report, the first few go to
 * stderr. */
void child_err(child_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void child_send(child_t *c, uint32_t type, const char *text);
void child_fatal(child_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Wait for a command of the given type from the parent. */
void child_expect(child_t *c, p2c_t *m, uint32_t type, int timeout_s);

typedef struct xfer_msg {
    uint64_t magic;
    uint32_t from;
    uint32_t slot;
    uint64_t seq;
} xfer_msg_t;

/* The sender thread (arg: the child). */
void *sender_main(void *arg);

typedef struct receiver {
    child_t *c;
    uint64_t expect[MAX_ENGINES][MAX_SLOTS];   /* next seq in the slot */
    uint64_t arrived[MAX_ENGINES][MAX_SLOTS];  /* notified seq + 1, 0: none */
    int      broken[MAX_ENGINES];
} receiver_t;

void recv_notifies(receiver_t *r);
unsigned recv_scan(receiver_t *r, int *wait_s, uint64_t *wait_q);

#endif
