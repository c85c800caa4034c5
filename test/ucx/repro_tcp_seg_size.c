/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp sends copied messages in segments of TX_SEG_SIZE, 8 KiB by default,
 * which halved the library's tcp bandwidth against 64 KiB.  PRESENT when
 * UCX's default tcp TX_SEG_SIZE (read with uct_md_iface_config_read /
 * uct_config_get, UCX_TCP_TX_SEG_SIZE unset) is below 64 KiB; ABSENT
 * otherwise.
 *
 * Library workaround: TX_SEG_SIZE=64k on its own UCX context unless
 * UCX_TCP_TX_SEG_SIZE or UCX_TCP_RX_SEG_SIZE is set (docs/ucx-versions.md).
 */
#include "repro.h"

#include <uct/api/uct.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "repro_tcp_seg_size"

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    while (*end == ' ') {
        end++;
    }
    switch (*end) {
    case 'k': case 'K': return (size_t)(v * 1024);
    case 'm': case 'M': return (size_t)(v * 1024 * 1024);
    case 'g': case 'G': return (size_t)(v * 1024 * 1024 * 1024);
    default:            return (size_t)v;
    }
}

int main(void)
{
    uct_component_h *comps;
    uct_component_attr_t attr;
    uct_md_config_t *md_config;
    uct_iface_config_t *config;
    uct_md_h md;
    char value[64];
    unsigned n, i;

    unsetenv("UCX_TCP_TX_SEG_SIZE");
    unsetenv("UCX_TX_SEG_SIZE");
    if (uct_query_components(&comps, &n) != UCS_OK) {
        rp_verdict(NAME, RP_ERROR, "uct_query_components failed");
    }
    for (i = 0; i < n; i++) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(comps[i], &attr) != UCS_OK) ||
            (strcmp(attr.name, "tcp") != 0)) {
            continue;
        }
        if ((uct_md_config_read(comps[i], NULL, NULL, &md_config) != UCS_OK) ||
            (uct_md_open(comps[i], "tcp", md_config, &md) != UCS_OK)) {
            rp_verdict(NAME, RP_ERROR, "cannot open tcp's memory domain");
        }
        if ((uct_md_iface_config_read(md, "tcp", NULL, NULL, &config) !=
             UCS_OK) ||
            (uct_config_get(config, "TX_SEG_SIZE", value, sizeof(value)) !=
             UCS_OK)) {
            rp_verdict(NAME, RP_ERROR, "cannot read tcp's TX_SEG_SIZE");
        }
        uct_config_release(config);
        uct_md_close(md);
        uct_config_release(md_config);
        uct_release_component_list(comps);
        rp_verdict(NAME, (parse_size(value) < 65536) ? RP_PRESENT : RP_ABSENT,
                   "tcp's default TX_SEG_SIZE is %s", value);
    }
    uct_release_component_list(comps);
    rp_verdict(NAME, RP_SKIP, "this UCX has no tcp component");
}
