/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, a rendezvous active message whose sender goes away after the
 * receiver started fetching it (ucp_am_recv_data_nbx posted), in two ways:
 * the sender is killed, or it force-closes its endpoint and lives on.  Is
 * the receive completed with an error?  PRESENT when the surviving
 * receiver aborts, or when its receive is still pending 5 s after the
 * sender went (it is then left for worker destroy, which UCX builds with
 * assertions assert on), either way; ABSENT when the receive completes
 * with an error both ways.
 *
 * Library workaround: its messages are eager, at most 60 KiB, one answer
 * each, and it refuses rendezvous ones (docs/ucx-versions.md).
 */
#include "repro.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME     "repro_tcp_rndv_sender_death"
#define MSG_LEN  (256u << 20)
#define AM_ID    7
#define TRIES    3

enum { PENDING = 10, COMPLETED_OK = 11 };

static void *recv_req;
static void *recv_buf;

static void recv_done(void *req, ucs_status_t status, size_t length,
                      void *user_data)
{
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_len,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    ucp_request_param_t rp;

    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        return UCS_OK;
    }
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    rp.cb.recv_am   = recv_done;
    recv_buf = malloc(length);
    recv_req = ucp_am_recv_data_nbx(*(ucp_worker_h*)arg, data, recv_buf,
                                    length, &rp);
    return UCS_INPROGRESS;
}

static int receiver(int fd, void *arg)
{
    static ucp_worker_h worker;
    ucs_status_t status;
    rp_ucx_t u;
    int ready = rp_am_receiver(&u, fd, AM_ID, am_cb, &worker);

    if (ready != RP_ABSENT) {
        return ready;
    }
    worker = u.worker;
    while (recv_req == NULL) {
        ucp_worker_progress(u.worker);
    }
    if (UCS_PTR_IS_ERR(recv_req)) {
        return RP_ERROR;
    }
    rp_signal(fd, 'R');          /* the sender goes now */
    while (!rp_fd_closed(fd) && (rp_wait_byte(fd, 0) != 'C')) {
        ucp_worker_progress(u.worker);
    }
    status = rp_wait(u.worker, recv_req, 5.0);
    if (status == UCS_OK) {
        return COMPLETED_OK;     /* it all arrived first: inconclusive */
    }
    if (status != UCS_ERR_TIMED_OUT) {
        ucp_request_free(recv_req);
        return 0;
    }
    /* still pending: leave it to worker destroy, as a program would that
     * never hears of its sender again */
    rp_ucx_fini(&u);
    return PENDING;
}

static int sender(int fd, void *arg)
{
    ucp_request_param_t param;
    rp_ucx_t u;
    void *req;
    int started = rp_rndv_sender(&u, fd, AM_ID, MSG_LEN, &req);

    if (started != RP_ABSENT) {
        return started;
    }
    for (;;) {
        ucp_worker_progress(u.worker);
        if (rp_wait_byte(fd, 0) == 'R') {
            break;
        }
    }
    if (*(const int*)arg == 0) {
        raise(SIGKILL);
        return RP_ERROR;
    }
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    req = ucp_ep_close_nbx(u.ep, &param);
    if (rp_wait(u.worker, req, 5.0) == UCS_ERR_TIMED_OUT) {
        return RP_ERROR;
    }
    rp_signal(fd, 'C');
    /* live on (and progress) until the receiver is done */
    while (!rp_fd_closed(fd)) {
        ucp_worker_progress(u.worker);
    }
    return 0;
}

/* one way of the sender going: its verdict, or -1 when inconclusive */
static int one_way(int way, const char **why)
{
    static char msg[256];
    static const char *const ways[] = {"was killed", "force-closed its "
                                       "endpoint"};
    char sr[64], ss[64];
    int st_r, st_s, try;

    for (try = 1; try <= TRIES; try++) {
        if (rp_run_pair(receiver, sender, &way, 60.0, &st_r, &st_s) != 0) {
            rp_verdict(NAME, RP_ERROR, "cannot fork");
        }
        rp_status_str(st_r, sr, sizeof(sr));
        rp_status_str(st_s, ss, sizeof(ss));
        if (WIFEXITED(st_r) && (WEXITSTATUS(st_r) == RP_SKIP)) {
            rp_verdict(NAME, RP_SKIP, "tcp is not usable here");
        }
        if (WIFEXITED(st_r) && (WEXITSTATUS(st_r) == COMPLETED_OK)) {
            continue;
        }
        /* the receiver's end is the behaviour, whatever UCX did to the
         * sender meanwhile (1.13's sometimes crashes after its forced
         * close) */
        if ((st_r == -1) || WIFSIGNALED(st_r)) {
            snprintf(msg, sizeof(msg), "the receiver of a rendezvous whose "
                     "sender %s mid-transfer ended by %s (sender: %s)",
                     ways[way], sr, ss);
            *why = msg;
            return RP_PRESENT;
        }
        if ((way == 0) ? (!WIFSIGNALED(st_s) || (WTERMSIG(st_s) != SIGKILL))
                       : (!WIFEXITED(st_s) || (WEXITSTATUS(st_s) != 0))) {
            rp_verdict(NAME, RP_ERROR, "the sender did not go as planned "
                       "(%s; receiver %s)", ss, sr);
        }
        switch (WEXITSTATUS(st_r)) {
        case 0:
            snprintf(msg, sizeof(msg), "the receive completed with an error "
                     "after its sender %s mid-transfer", ways[way]);
            *why = msg;
            return RP_ABSENT;
        case PENDING:
            snprintf(msg, sizeof(msg), "the receive was still pending 5 s "
                     "after its sender %s mid-transfer (and worker destroy "
                     "let it be)", ways[way]);
            *why = msg;
            return RP_PRESENT;
        default:
            rp_verdict(NAME, RP_ERROR, "the receiver ended with %s", sr);
        }
    }
    return -1;
}

int main(void)
{
    const char *why[2] = {"inconclusive (it arrived whole first)",
                          "inconclusive (it arrived whole first)"};
    int v[2], way;

    for (way = 0; way < 2; way++) {
        v[way] = one_way(way, &why[way]);
        if (v[way] == RP_PRESENT) {
            rp_verdict(NAME, RP_PRESENT, "%s", why[way]);
        }
    }
    if ((v[0] == RP_ABSENT) && (v[1] == RP_ABSENT)) {
        rp_verdict(NAME, RP_ABSENT, "%s; %s", why[0], why[1]);
    }
    rp_verdict(NAME, RP_SKIP, "%s; %s", why[0], why[1]);
}
