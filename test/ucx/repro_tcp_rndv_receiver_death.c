/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, a rendezvous active message whose receiver is killed after it
 * started fetching the data: is the send completed (with an error)?
 * PRESENT when the send is still pending 10 s after the receiver died, or
 * the surviving sender aborts; ABSENT when it completes with an error.
 *
 * Library workaround: its messages are eager, at most 60 KiB, one answer
 * each (docs/ucx-versions.md).
 */
#include "repro.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME     "repro_tcp_rndv_receiver_death"
#define MSG_LEN  (256u << 20)
#define AM_ID    7
#define TRIES    3

enum { PENDING = 10, COMPLETED_OK = 11 };

static void *recv_req;

static ucs_status_t am_cb(void *arg, const void *header, size_t header_len,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    ucp_request_param_t rp = {.op_attr_mask = 0};

    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        return UCS_OK;
    }
    recv_req = ucp_am_recv_data_nbx(*(ucp_worker_h*)arg, data,
                                    malloc(length), length, &rp);
    return UCS_INPROGRESS;
}

static int receiver(int fd, void *arg)
{
    static ucp_worker_h worker;
    rp_ucx_t u;
    int ready = rp_am_receiver(&u, fd, AM_ID, am_cb, &worker);

    if (ready != RP_ABSENT) {
        return ready;
    }
    worker = u.worker;
    while (recv_req == NULL) {
        ucp_worker_progress(u.worker);
    }
    /* the fetch under way, then die in the middle of it */
    rp_progress_for(u.worker, 0.005);
    raise(SIGKILL);
    return RP_ERROR;
}

static int sender(int fd, void *arg)
{
    ucs_status_t status;
    rp_ucx_t u;
    void *req;
    int started = rp_rndv_sender(&u, fd, AM_ID, MSG_LEN, &req);

    if (started != RP_ABSENT) {
        return started;
    }
    while (!rp_fd_closed(fd)) {
        ucp_worker_progress(u.worker);
    }
    status = rp_wait(u.worker, req, 10.0);
    if (status == UCS_OK) {
        return COMPLETED_OK;
    }
    return (status == UCS_ERR_TIMED_OUT) ? PENDING : 0;
}

int main(void)
{
    char ss[64];
    int st_s, try;

    for (try = 1; try <= TRIES; try++) {
        st_s = rp_receiver_killed(NAME, receiver, sender, ss, sizeof(ss));
        if ((st_s == -1) || WIFSIGNALED(st_s)) {
            rp_verdict(NAME, RP_PRESENT, "the sender of a rendezvous whose "
                       "receiver was killed mid-transfer ended by %s", ss);
        }
        switch (WEXITSTATUS(st_s)) {
        case COMPLETED_OK:
            continue;
        case 0:
            rp_verdict(NAME, RP_ABSENT, "the send completed with an error "
                       "after its receiver was killed mid-transfer");
        case PENDING:
            rp_verdict(NAME, RP_PRESENT, "the send was still pending 10 s "
                       "after its receiver was killed mid-transfer");
        default:
            rp_verdict(NAME, RP_ERROR, "the sender ended with %s", ss);
        }
    }
    rp_verdict(NAME, RP_SKIP, "the message arrived whole before the "
               "receiver died, %d times", TRIES);
}
