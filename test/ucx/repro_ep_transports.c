/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX 1.13's API has no query for the transports an endpoint uses
 * (ucp_ep_query with UCP_EP_ATTR_FIELD_TRANSPORTS came in 1.14).  PRESENT
 * when built against headers older than 1.14, or when the query fails at
 * run time; ABSENT when an endpoint over self names its transport.
 *
 * Library workaround: it reads the transports UCX prints for the endpoint
 * (docs/ucx-versions.md).
 */
#include "repro.h"

#include <stdio.h>
#include <string.h>

#define NAME "repro_ep_transports"

int main(void)
{
#if UCP_API_VERSION < UCP_VERSION(1, 14)
    rp_verdict(NAME, RP_PRESENT, "the headers built against (%d.%d) have no "
               "UCP_EP_ATTR_FIELD_TRANSPORTS", UCP_API_MAJOR, UCP_API_MINOR);
#else
    ucp_worker_attr_t wattr = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
    ucp_transport_entry_t entries[8];
    ucp_ep_params_t params;
    ucp_ep_attr_t attr;
    ucs_status_t status;
    unsigned major, minor, release;
    ucp_ep_h ep;
    rp_ucx_t u;

    ucp_get_version(&major, &minor, &release);
    if ((major == 1) && (minor < 14)) {
        rp_verdict(NAME, RP_PRESENT, "built against %d.%d headers but runs "
                   "with UCX %u.%u", UCP_API_MAJOR, UCP_API_MINOR, major,
                   minor);
    }
    if ((rp_ucx_init(&u, UCP_FEATURE_AM, "self", NULL) != UCS_OK) ||
        (ucp_worker_query(u.worker, &wattr) != UCS_OK)) {
        rp_verdict(NAME, RP_SKIP, "UCX_TLS=self is not usable here");
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = wattr.address;
    if (ucp_ep_create(u.worker, &params, &ep) != UCS_OK) {
        rp_verdict(NAME, RP_ERROR, "cannot connect a worker to itself");
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask                        = UCP_EP_ATTR_FIELD_TRANSPORTS;
    attr.transports.entries                = entries;
    attr.transports.num_entries            = 8;
    attr.transports.entry_size             = sizeof(entries[0]);
    status = ucp_ep_query(ep, &attr);
    if (status != UCS_OK) {
        rp_verdict(NAME, RP_PRESENT, "ucp_ep_query(TRANSPORTS): %s",
                   ucs_status_string(status));
    }
    if ((attr.transports.num_entries < 1) ||
        (entries[0].transport_name == NULL)) {
        rp_verdict(NAME, RP_PRESENT, "ucp_ep_query named no transport");
    }
    rp_verdict(NAME, RP_ABSENT, "ucp_ep_query names the endpoint's "
               "transports (%s/%s, %u of them)", entries[0].transport_name,
               entries[0].device_name, attr.transports.num_entries);
#endif
}
