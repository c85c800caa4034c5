/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the library does about UCX: the settings it gives its own UCX
 * context (each only where the environment leaves it to UCX), and the UCX
 * behaviours its own code works around.  One table says both what an
 * engine applies and what hixl_ucx_workarounds reports, so the two cannot
 * drift apart; docs/ucx-versions.md has each behaviour's story and its
 * reproducer.
 *
 * Where a newer UCX removed a behaviour, the better way is chosen at run
 * time from the UCX the process runs with (and what the library was built
 * against), never from the build alone: a library built against a newer
 * UCX may run with an older one.
 */
#ifndef HIXL_CORE_UCX_SETTINGS_H_
#define HIXL_CORE_UCX_SETTINGS_H_

#include <hixl/hixl.h>
#include <ucp/api/ucp.h>

/* Apply the settings in force to config, before ucp_init. */
void hixl_ucx_settings_apply(ucp_config_t *config);

/* Whether ucp_ep_query tells an endpoint's transports here: built against
 * a UCX that has the query (1.14 and later) and running with one. */
int hixl_ucx_ep_query_transports(void);

/* The workarounds and whether each is in force for an engine created now
 * (hixl_ucx_workarounds of hixl.h). */
size_t hixl_ucx_workarounds_list(hixl_ucx_workaround_t *out, size_t max);

#endif
