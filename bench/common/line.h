/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Text lines of "WORD key=value key=value ..." on a socket: how the
 * benchmarks' processes talk out of band (put_bw's server and client,
 * fan's coordinator and engines), readable with strace or tcpdump when an
 * exchange is stuck.
 *
 * A bc_lines_t gathers what a socket delivers and hands it out one line at
 * a time; a line longer than its limit is an error, not a reason to grow
 * without bound.
 */
#ifndef HIXL_BENCH_COMMON_LINE_H_
#define HIXL_BENCH_COMMON_LINE_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bc_lines {
    char   *buf;            /* received bytes not yet handed out */
    size_t  len, cap;
    size_t  max;            /* longest line taken, '\n' included */
    char   *line;           /* the line last handed out */
    size_t  line_cap;
} bc_lines_t;

/* Progress to drive while waiting (an engine without a progress thread). */
typedef void (*bc_progress_fn_t)(void *arg);

void bc_lines_init(bc_lines_t *lb, size_t max);
void bc_lines_free(bc_lines_t *lb);

/* One receive of what fd has (without waiting when dontwait).  0, or -1:
 * errno 0 when the peer closed, EMSGSIZE for a line over the limit. */
int  bc_lines_fill(bc_lines_t *lb, int fd, int dontwait);
/* The next whole line, without its '\n', valid until the next take; NULL
 * when no whole line is buffered. */
char *bc_lines_take(bc_lines_t *lb);
/* 1 when a whole line is buffered. */
int  bc_lines_ready(const bc_lines_t *lb);

/* Wait for the next line until deadline_ns (monotonic, 0: no limit),
 * running progress (may be NULL) between looks at the socket.  NULL with
 * errno ETIMEDOUT, 0 (closed), EMSGSIZE or the socket's error. */
char *bc_lines_wait(bc_lines_t *lb, int fd, uint64_t deadline_ns,
                    bc_progress_fn_t progress, void *arg);

/* Send one formatted line; '\n' is added when fmt does not end in one.
 * max (0: none) bounds the line as the receiver does: -1 with errno
 * EMSGSIZE, ENOMEM, or the socket's error. */
int bc_line_vsend(int fd, size_t max, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The value of "key=" among a line's space-separated words, as a copy
 * (one of a few rotating ones, so that three or four can be held at
 * once), or NULL. */
const char *bc_kv(const char *line, const char *key);
/* The same as a decimal number: 0, or -1 when absent or not a number. */
int bc_kv_u64(const char *line, const char *key, uint64_t *v);

#endif
