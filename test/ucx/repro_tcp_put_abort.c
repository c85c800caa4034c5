/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, UCX emulates ucp_put_nbx with active messages; the target's
 * handler writes each fragment and sends an acknowledgement, and a send
 * that fails with anything but "no resource" ends in ucs_fatal.  PRESENT
 * when a target aborts because its initiator was killed in the middle of
 * large puts (any of a few tries); ABSENT when it survives every try.
 *
 * Library workaround: tcp transfers go as the library's own checked
 * WRITE/READ messages (docs/ucx-versions.md).
 */
#include "repro.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NAME     "repro_tcp_put_abort"
#define REGION   (64u << 20)
#define PUT_LEN  (4u << 20)
#define TRIES    10

static int target(int fd, void *arg)
{
    ucp_mem_map_params_t mp;
    ucp_mem_h memh;
    void *rkey;
    size_t rkey_len;
    uint64_t addr;
    rp_ucx_t u;
    double end;

    if (rp_ucx_init(&u, UCP_FEATURE_RMA | UCP_FEATURE_AM, "tcp", NULL) !=
        UCS_OK) {
        return RP_SKIP;
    }
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.length     = REGION;
    mp.flags      = UCP_MEM_MAP_ALLOCATE;
    if ((ucp_mem_map(u.ctx, &mp, &memh) != UCS_OK) ||
        (ucp_rkey_pack(u.ctx, memh, &rkey, &rkey_len) != UCS_OK) ||
        (rp_connect(&u, fd, UCP_ERR_HANDLING_MODE_PEER) != UCS_OK)) {
        return RP_ERROR;
    }
    {
        ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};

        ucp_mem_query(memh, &attr);
        addr = (uintptr_t)attr.address;
    }
    if ((rp_send(fd, &addr, sizeof(addr)) != 0) ||
        (rp_send(fd, rkey, rkey_len) != 0)) {
        return RP_ERROR;
    }
    /* progress while the initiator puts, and for a while after it died */
    while (!rp_fd_closed(fd)) {
        ucp_worker_progress(u.worker);
    }
    end = rp_now() + 3.0;
    while (rp_now() < end) {
        ucp_worker_progress(u.worker);
    }
    return 0;   /* survived; the process ends without a clean-up */
}

static int initiator(int fd, void *arg)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucp_rkey_h rkey;
    uint64_t *addr;
    void *packed, *buf;
    size_t len;
    rp_ucx_t u;
    unsigned i;

    if (rp_ucx_init(&u, UCP_FEATURE_RMA | UCP_FEATURE_AM, "tcp", NULL) !=
        UCS_OK) {
        return RP_SKIP;
    }
    if ((rp_connect(&u, fd, UCP_ERR_HANDLING_MODE_PEER) != UCS_OK) ||
        ((addr = rp_recv(fd, &len)) == NULL) ||
        ((packed = rp_recv(fd, &len)) == NULL) ||
        (ucp_ep_rkey_unpack(u.ep, packed, &rkey) != UCS_OK)) {
        return RP_ERROR;
    }
    buf = malloc(PUT_LEN);
    memset(buf, 0x5a, PUT_LEN);
    /* the first put done end to end: acknowledgements flow */
    if (rp_wait(u.worker, ucp_put_nbx(u.ep, buf, PUT_LEN, *addr, rkey,
                                      &param), 10.0) != UCS_OK) {
        return RP_ERROR;
    }
    /* then a region's worth in flight, and die in the middle of it */
    for (i = 0; i < REGION / PUT_LEN; i++) {
        (void)ucp_put_nbx(u.ep, buf, PUT_LEN, *addr + i * PUT_LEN, rkey,
                          &param);
    }
    rp_progress_for(u.worker, 0.02);
    raise(SIGKILL);
    return RP_ERROR;
}

int main(void)
{
    char sa[64], sb[64];
    int st_t, st_i, try;

    for (try = 1; try <= TRIES; try++) {
        if (rp_run_pair(target, initiator, NULL, 30.0, &st_t, &st_i) != 0) {
            rp_verdict(NAME, RP_ERROR, "cannot fork");
        }
        rp_status_str(st_t, sa, sizeof(sa));
        rp_status_str(st_i, sb, sizeof(sb));
        if (WIFEXITED(st_t) && (WEXITSTATUS(st_t) == RP_SKIP)) {
            rp_verdict(NAME, RP_SKIP, "tcp is not usable here");
        }
        if (!WIFSIGNALED(st_i) || (WTERMSIG(st_i) != SIGKILL)) {
            rp_verdict(NAME, RP_ERROR, "the initiator did not die as planned "
                       "(%s; target %s)", sb, sa);
        }
        if (WIFSIGNALED(st_t)) {
            rp_verdict(NAME, RP_PRESENT, "try %d: the target of emulated puts "
                       "ended by %s when its initiator was killed mid-put",
                       try, sa);
        }
        if (!WIFEXITED(st_t) || (WEXITSTATUS(st_t) != 0)) {
            rp_verdict(NAME, RP_PRESENT, "try %d: the target ended with %s "
                       "when its initiator was killed mid-put", try, sa);
        }
    }
    rp_verdict(NAME, RP_ABSENT, "the target survived its initiator's death "
               "mid-put %d times out of %d", TRIES, TRIES);
}
