/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer's `stream` report (mh_peer.h), parsed, and judged against a
 * fault: what happened to the requests that were in flight when a peer
 * was killed or a link was cut.
 *
 * The rules, for every request that ended after the fault time t:
 *  - FAILED, with a reason (a non-empty message), within the bound: fine;
 *  - COMPLETED within MH_LATE_COMPLETION_MS of t: fine: it completed
 *    before the fault and the peer's poller (a status poll every few
 *    hundred microseconds, but on two loaded cores a thread can wait
 *    for the CPU much longer) saw it later;
 *  - COMPLETED later than that: wrong: no acknowledgement can come from a
 *    dead process or across a cut link, so the library reported success
 *    for bytes it cannot know arrived;
 *  - TIMEOUT, STUCK (still WAITING well past its own deadline) or an
 *    error of the status call itself: wrong: the fault was not detected;
 *  - anything ending later than t + bound: detected too late.
 */
#ifndef HX_MH_STREAM_H_
#define HX_MH_STREAM_H_

#include <stddef.h>

/* How late after the fault a completion may still be observed. */
#define MH_LATE_COMPLETION_MS 1000

typedef struct mh_req {
    double post, end;
    char   st[16];       /* COMPLETED FAILED TIMEOUT STUCK CALLERR */
    char   msg[256];
} mh_req_t;

typedef struct mh_stream_res {
    size_t    n;                         /* requests posted */
    mh_req_t *req;
    size_t    completed, failed, timeout, other;
    char      post_status[32];           /* refused post: status or NONE */
    double    post_t;
    char      post_msg[512];
} mh_stream_res_t;

/* Parse a `stream` reply (asserts its shape). */
void mh_stream_parse(const char *reply, mh_stream_res_t *res);
void mh_stream_free(mh_stream_res_t *res);

typedef struct mh_verdict {
    size_t after;        /* requests that ended after the fault */
    size_t failed;       /* ... FAILED with a reason */
    size_t bad;          /* ... breaking a rule above */
    double last_ms;      /* latest end after the fault, relative to it */
    char   first_bad[768];
} mh_verdict_t;

/* Judge res against a fault at t_fault (CLOCK_MONOTONIC ms) and a
 * detection bound in ms. */
void mh_stream_judge(const mh_stream_res_t *res, double t_fault,
                     double bound_ms, mh_verdict_t *v);

/* One line summing res up relative to t_fault, for logs. */
void mh_stream_summary(const mh_stream_res_t *res, double t_fault,
                       char *buf, size_t len);

#endif
