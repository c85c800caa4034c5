/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, eager zero-copy active messages (large contiguous buffers)
 * whose receiver is killed while they are half out: is each send
 * completed exactly once?  PRESENT when a send's callback runs twice or
 * the surviving sender aborts (UCX built with assertions trips on the
 * second completion).  The second completion is of UCT's completion
 * counter, which only assertions see, and it happens only when the send
 * (not the receive side) finds the connection reset: when every send
 * completed once, the verdict is SKIP (not triggered), never ABSENT.
 *
 * Library workaround: its messages go as a UCX generic datatype, which UCX
 * can only copy (docs/ucx-versions.md).
 */
#include "repro.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME     "repro_tcp_zcopy_twice"
#define MSG_LEN  (1u << 20)
#define NMSG     64
#define AM_ID    9
#define TRIES    3

enum { TWICE = 10, NOT_ALL = 11 };

static int done[NMSG];

static void send_done(void *req, ucs_status_t status, void *user_data)
{
    done[(uintptr_t)user_data]++;
}

static ucs_status_t am_cb(void *arg, const void *header, size_t header_len,
                          void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    return UCS_OK;
}

static int receiver(int fd, void *arg)
{
    ucp_am_handler_param_t hp;
    rp_ucx_t u;

    if (rp_ucx_init(&u, UCP_FEATURE_AM, "tcp", NULL) != UCS_OK) {
        return RP_SKIP;
    }
    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB;
    hp.id         = AM_ID;
    hp.cb         = am_cb;
    if ((ucp_worker_set_am_recv_handler(u.worker, &hp) != UCS_OK) ||
        (rp_connect(&u, fd, UCP_ERR_HANDLING_MODE_PEER) != UCS_OK)) {
        return RP_ERROR;
    }
    /* wired up both ways, then read a little and stop reading, so that the
     * sender's socket fills with sends half out; then die */
    rp_progress_for(u.worker, 0.2);
    rp_signal(fd, 'G');
    rp_progress_for(u.worker, 0.01);
    usleep(300000);
    raise(SIGKILL);
    return RP_ERROR;
}

static int sender(int fd, void *arg)
{
    ucp_request_param_t param;
    void *req[NMSG], *buf;
    rp_ucx_t u;
    unsigned i;

    if (rp_ucx_init(&u, UCP_FEATURE_AM, "tcp", NULL) != UCS_OK) {
        return RP_SKIP;
    }
    if (rp_connect(&u, fd, UCP_ERR_HANDLING_MODE_PEER) != UCS_OK) {
        return RP_ERROR;
    }
    while (rp_wait_byte(fd, 0) != 'G') {
        ucp_worker_progress(u.worker);
    }
    buf = calloc(1, MSG_LEN);
    for (i = 0; i < NMSG; i++) {
        memset(&param, 0, sizeof(param));
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS |
                             UCP_OP_ATTR_FIELD_CALLBACK |
                             UCP_OP_ATTR_FIELD_USER_DATA;
        param.flags        = UCP_AM_SEND_FLAG_EAGER;
        param.cb.send      = send_done;
        param.user_data    = (void*)(uintptr_t)i;
        req[i] = ucp_am_send_nbx(u.ep, AM_ID, NULL, 0, buf, MSG_LEN, &param);
        if (req[i] == NULL) {
            done[i]++;          /* completed in place */
        } else if (UCS_PTR_IS_ERR(req[i])) {
            done[i]++;
            req[i] = NULL;
        }
    }
    while (!rp_fd_closed(fd)) {
        ucp_worker_progress(u.worker);
    }
    rp_progress_for(u.worker, 3.0);
    for (i = 0; i < NMSG; i++) {
        if (done[i] > 1) {
            return TWICE;
        }
    }
    for (i = 0; i < NMSG; i++) {
        if (done[i] == 0) {
            return NOT_ALL;
        }
    }
    return 0;
}

int main(void)
{
    char ss[64];
    int st_s, try;

    for (try = 1; try <= TRIES; try++) {
        st_s = rp_receiver_killed(NAME, receiver, sender, ss, sizeof(ss));
        if ((st_s == -1) || WIFSIGNALED(st_s)) {
            rp_verdict(NAME, RP_PRESENT, "try %d: the sender of zero-copy "
                       "messages half out when their receiver was killed "
                       "ended by %s", try, ss);
        }
        switch (WEXITSTATUS(st_s)) {
        case 0:
            continue;
        case TWICE:
            rp_verdict(NAME, RP_PRESENT, "try %d: a send was completed twice "
                       "after its receiver was killed", try);
        case NOT_ALL:
            rp_verdict(NAME, RP_ERROR, "try %d: a send was never completed "
                       "after its receiver was killed", try);
        default:
            rp_verdict(NAME, RP_ERROR, "the sender ended with %s", ss);
        }
    }
    rp_verdict(NAME, RP_SKIP, "not triggered: every send was completed once "
               "after the receiver was killed mid-message, %d times out of "
               "%d (only a UCX with assertions shows the second completion, "
               "and only when the send finds the reset)", TRIES, TRIES);
}
