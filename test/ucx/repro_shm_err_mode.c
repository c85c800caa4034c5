/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared memory (posix, sysv) supports UCX's PEER error mode, which is
 * what reports a dead peer and lets an endpoint be force-closed, only with
 * MM_ERROR_HANDLING=y.  PRESENT when an endpoint in PEER mode over
 * shared memory alone is refused (unreachable) without that setting and
 * accepted with it; ABSENT when accepted without it.
 *
 * Library workaround: MM_ERROR_HANDLING=y on its own UCX context
 * (docs/ucx-versions.md).
 */
#include "repro.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "repro_shm_err_mode"

/* a PEER-mode endpoint between two workers of one context over tls */
static ucs_status_t peer_ep(const char *tls, const char *mm_err)
{
    const char *extra[] = {NULL, NULL};
    char setting[64];
    ucp_worker_params_t wp = {.field_mask = 0};
    ucp_worker_attr_t attr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
    ucp_ep_params_t ep_params;
    ucp_worker_h other;
    ucs_status_t status;
    ucp_ep_h ep;
    rp_ucx_t u;

    if (mm_err != NULL) {
        snprintf(setting, sizeof(setting), "MM_ERROR_HANDLING=%s", mm_err);
        extra[0] = setting;
    }
    status = rp_ucx_init(&u, UCP_FEATURE_AM, tls, extra);
    if (status != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;   /* the transports, or the setting */
    }
    if ((ucp_worker_create(u.ctx, &wp, &other) != UCS_OK) ||
        (ucp_worker_query(other, &attr) != UCS_OK)) {
        rp_verdict(NAME, RP_ERROR, "cannot make a second worker");
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.address    = attr.address;
    ep_params.err_mode   = UCP_ERR_HANDLING_MODE_PEER;
    status = ucp_ep_create(u.worker, &ep_params, &ep);
    if (status == UCS_OK) {
        ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                     .flags = UCP_EP_CLOSE_FLAG_FORCE};

        rp_wait(u.worker, ucp_ep_close_nbx(ep, &param), 5.0);
    }
    ucp_worker_release_address(other, attr.address);
    ucp_worker_destroy(other);
    rp_ucx_fini(&u);
    return status;
}

int main(void)
{
    static const char *const tls[] = {"posix", "sysv"};
    ucs_status_t without, with;
    unsigned i;

    unsetenv("UCX_MM_ERROR_HANDLING");
    for (i = 0; i < 2; i++) {
        without = peer_ep(tls[i], NULL);
        if (without == UCS_ERR_UNSUPPORTED) {
            continue;
        }
        if (without == UCS_OK) {
            rp_verdict(NAME, RP_ABSENT, "%s accepts a PEER-mode endpoint "
                       "without MM_ERROR_HANDLING", tls[i]);
        }
        with = peer_ep(tls[i], "y");
        if (with == UCS_ERR_UNSUPPORTED) {
            rp_verdict(NAME, RP_PRESENT, "%s refuses a PEER-mode endpoint "
                       "(%s), and this UCX has no MM_ERROR_HANDLING",
                       tls[i], ucs_status_string(without));
        }
        if (with != UCS_OK) {
            rp_verdict(NAME, RP_ERROR, "%s refuses a PEER-mode endpoint "
                       "even with MM_ERROR_HANDLING=y (%s)", tls[i],
                       ucs_status_string(with));
        }
        rp_verdict(NAME, RP_PRESENT, "%s refuses a PEER-mode endpoint "
                   "without MM_ERROR_HANDLING (%s) and accepts it with "
                   "MM_ERROR_HANDLING=y", tls[i], ucs_status_string(without));
    }
    rp_verdict(NAME, RP_SKIP, "neither posix nor sysv is usable here");
}
