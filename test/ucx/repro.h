/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the UCX reproducers share (test/ucx/repro_*.c).  Each reproducer
 * shows whether one UCX behaviour the library works around
 * (docs/ucx-versions.md) is present in the UCX it runs with, using UCX's
 * public API only, and says so on one line:
 *
 *   repro_<name>: PRESENT|ABSENT|SKIP|ERROR (UCX <version>): <why>
 *
 * and by its exit status: ABSENT 0, PRESENT 1, SKIP 77, ERROR 99 (the
 * reproducer itself could not run).  Two-process reproducers fork both
 * roles from a parent that made no UCX call; the roles exchange worker
 * addresses over a socketpair, and a role that dies closes its end, which
 * is how the other learns of it.  Nothing here is the library's code.
 */
#ifndef HIXL_TEST_UCX_REPRO_H_
#define HIXL_TEST_UCX_REPRO_H_

#include <ucp/api/ucp.h>

#include <stddef.h>
#include <stdint.h>

enum {
    RP_ABSENT  = 0,
    RP_PRESENT = 1,
    RP_SKIP    = 77,
    RP_ERROR   = 99
};

/* one process's UCX: a context and a worker */
typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    ucs_status_t  ep_error;   /* set by the endpoint's error handler */
} rp_ucx_t;

/* Print the verdict line for `name` and exit with its status. */
void rp_verdict(const char *name, int verdict, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* A context with `features` over transports `tls` (NULL: UCX_TLS or
 * UCX's default), more config "KEY=VALUE" pairs in `extra` (NULL-ended,
 * may be NULL), and its worker. */
ucs_status_t rp_ucx_init(rp_ucx_t *u, uint64_t features, const char *tls,
                         const char *const *extra);
void rp_ucx_fini(rp_ucx_t *u);

/* Send our worker address on fd, read the peer's, and connect to it with
 * `err_mode` (an error sets u->ep_error). */
ucs_status_t rp_connect(rp_ucx_t *u, int fd, ucp_err_handling_mode_t err_mode);

/* Length-prefixed blobs and single bytes over the socketpair. */
int rp_send(int fd, const void *buf, size_t len);
void *rp_recv(int fd, size_t *len_p);   /* malloc'd; NULL at EOF */
int rp_signal(int fd, char c);
int rp_wait_byte(int fd, double timeout_s);   /* the byte, -1 EOF/timeout */
int rp_fd_closed(int fd);                     /* peer end closed (no wait) */

/* Progress until the request completes (its status) or timeout_s passes
 * (UCS_ERR_TIMED_OUT, the request left as it is). */
ucs_status_t rp_wait(ucp_worker_h worker, void *req, double timeout_s);
void rp_progress_for(ucp_worker_h worker, double seconds);
double rp_now(void);

/* Fork role a and role b joined by a socketpair (each gets its end and
 * arg; its return value is its exit status), wait up to timeout_s for
 * both, SIGKILL what is left.  Wait statuses in *st_a, *st_b (-1: killed
 * by the timeout). */
typedef int (*rp_role_t)(int fd, void *arg);
int rp_run_pair(rp_role_t a, rp_role_t b, void *arg, double timeout_s,
                int *st_a, int *st_b);

/* A receiving role's start over tcp: its UCX, AM handler id -> cb(arg),
 * connected in PEER mode, 'G' sent to the other role.  RP_ABSENT (0) when
 * ready, else RP_SKIP (no tcp) or RP_ERROR: the role's exit status. */
int rp_am_receiver(rp_ucx_t *u, int fd, unsigned id, ucp_am_recv_callback_t cb,
                   void *arg);

/* A sending role's start over tcp: its UCX, connected in PEER mode, the
 * other role's 'G' awaited, then one rendezvous active message of len
 * bytes (handler id) posted, its request in *req_p.  RP_ABSENT (0) when
 * posted, else RP_SKIP (no tcp) or RP_ERROR: the role's exit status. */
int rp_rndv_sender(rp_ucx_t *u, int fd, unsigned id, size_t len,
                   void **req_p);

/* Run a pair whose receiver kills itself mid-transfer: the verdict is
 * given here (and the program exits) when the pair could not run, tcp is
 * not usable, or the receiver did not die by SIGKILL; else the sender's
 * wait status is returned, described in ss. */
int rp_receiver_killed(const char *name, rp_role_t receiver, rp_role_t sender,
                       char *ss, size_t sslen);

/* "exit 3", "signal 6 (Aborted)", "timed out" */
const char *rp_status_str(int st, char *buf, size_t len);

#endif
