/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_info: what this libhixl-ucx sees: its version and UCX's, the UCX
 * workarounds in force, the UCX
 * transports and devices on this machine, the memory-type plugins it finds
 * and whether each found its device runtime, and every engine option with the
 * value it would take here (default, HIXL_* environment, or -O KEY=VALUE)
 * and where that value comes from; or a running engine's metrics (-m).
 */
#include "hixl_info_metrics.h"

#include <hixl/hixl.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#define HIXL_INFO_MAX_OPTS 64
#define HIXL_INFO_MAX_WORKAROUNDS 32

static void hixl_info_usage(FILE *f)
{
    fprintf(f, "Usage: hixl_info [-v] [-t] [-p] [-o] [-O KEY=VALUE ...]\n"
               "       hixl_info -m HOST:PORT\n"
               "What this libhixl-ucx sees on this machine (all of it when "
               "no section is chosen):\n"
               "  -v, --version             versions only\n"
               "  -t, --transports          UCX transports and devices "
               "only\n"
               "  -p, --plugins             memory-type plugins and their "
               "runtimes only\n"
               "  -o, --options             options only\n"
               "  -O, --option KEY=VALUE    show options as an engine given "
               "this option would see them\n"
               "  -m, --metrics HOST:PORT   a running engine's figures, from "
               "its metrics\n"
               "                            endpoint (hixl.MetricsListen)\n"
               "  -h, --help                this help\n");
}

static void hixl_info_versions(void)
{
    hixl_ucx_workaround_t w[HIXL_INFO_MAX_WORKAROUNDS];
    size_t n, i;

    printf("# libhixl-ucx %s\n", hixl_version());
    printf("# UCX %s (built against %d.%d)\n", ucp_get_version_string(),
           UCP_API_MAJOR, UCP_API_MINOR);
    n = hixl_ucx_workarounds(w, HIXL_INFO_MAX_WORKAROUNDS);
    printf("# UCX workarounds (an engine created now; "
           "docs/ucx-versions.md):\n");
    for (i = 0; (i < n) && (i < HIXL_INFO_MAX_WORKAROUNDS); ++i) {
        if (w[i].in_force) {
            printf("#   %-20s in force: %s\n", w[i].name, w[i].action);
        } else {
            printf("#   %-20s not in force: %s\n", w[i].name, w[i].why_not);
        }
    }
}

static void hixl_info_md_transports(uct_component_h comp, const char *md_name)
{
    uct_tl_resource_desc_t *tls;
    uct_md_config_t *config;
    unsigned num, i;
    uct_md_h md;

    if (uct_md_config_read(comp, NULL, NULL, &config) != UCS_OK) {
        return;
    }
    if (uct_md_open(comp, md_name, config, &md) != UCS_OK) {
        uct_config_release(config);
        printf("#   %-12s (cannot open)\n", md_name);
        return;
    }
    uct_config_release(config);
    if (uct_md_query_tl_resources(md, &tls, &num) == UCS_OK) {
        for (i = 0; i < num; ++i) {
            printf("#   %-12s transport %-10s device %s\n", md_name,
                   tls[i].tl_name, tls[i].dev_name);
        }
        if (num == 0) {
            printf("#   %-12s (no devices)\n", md_name);
        }
        uct_release_tl_resource_list(tls);
    }
    uct_md_close(md);
}

static void hixl_info_transports(void)
{
    uct_component_h *comps;
    uct_component_attr_t attr;
    unsigned ncomps, i, j;

    printf("# UCX transports and devices (UCX_TLS=%s selects among them)\n",
           getenv("UCX_TLS") ? getenv("UCX_TLS") : "unset: UCX's default");
    if (uct_query_components(&comps, &ncomps) != UCS_OK) {
        printf("#   (UCX reports no components)\n");
        return;
    }
    for (i = 0; i < ncomps; ++i) {
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(comps[i], &attr) != UCS_OK) {
            continue;
        }
        attr.md_resources = calloc(attr.md_resource_count + 1,
                                   sizeof(*attr.md_resources));
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        if ((attr.md_resources != NULL) &&
            (uct_component_query(comps[i], &attr) == UCS_OK)) {
            for (j = 0; j < attr.md_resource_count; ++j) {
                hixl_info_md_transports(comps[i],
                                        attr.md_resources[j].md_name);
            }
        }
        free(attr.md_resources);
    }
    uct_release_component_list(comps);
}

int main(int argc, char **argv)
{
    hixl_option_t opts[HIXL_INFO_MAX_OPTS];
    char *pairs[HIXL_INFO_MAX_OPTS], *eq;
    int want_v = 0, want_t = 0, want_p = 0, want_o = 0, c, rc = 0;
    size_t nopts = 0, i;

    static const struct option longopts[] = {
        {"version",    no_argument,       NULL, 'v'},
        {"transports", no_argument,       NULL, 't'},
        {"plugins",    no_argument,       NULL, 'p'},
        {"options",    no_argument,       NULL, 'o'},
        {"option",     required_argument, NULL, 'O'},
        {"metrics",    required_argument, NULL, 'm'},
        {"help",       no_argument,       NULL, 'h'},
        {NULL, 0, NULL, 0}
    };

    while ((c = getopt_long(argc, argv, "vtpoO:m:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            return hixl_info_metrics(optarg);
        case 'v': want_v = 1; break;
        case 't': want_t = 1; break;
        case 'p': want_p = 1; break;
        case 'o': want_o = 1; break;
        case 'O':
            eq = strchr(optarg, '=');
            if ((eq == NULL) || (nopts == HIXL_INFO_MAX_OPTS)) {
                fprintf(stderr, "hixl_info: -O needs KEY=VALUE\n");
                return 2;
            }
            pairs[nopts]        = strdup(optarg);
            eq                  = strchr(pairs[nopts], '=');
            *eq                 = '\0';
            opts[nopts].key     = pairs[nopts];
            opts[nopts].value   = eq + 1;
            ++nopts;
            break;
        case 'h':
            hixl_info_usage(stdout);
            return 0;
        default:
            hixl_info_usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        hixl_info_usage(stderr);
        return 2;
    }
    if (!want_v && !want_t && !want_p && !want_o) {
        want_v = want_t = want_p = want_o = 1;
    }
    if (want_v) {
        hixl_info_versions();
    }
    if (want_t) {
        hixl_info_transports();
    }
    if (want_p && (hixl_plugin_print(stdout, opts, nopts) != HIXL_SUCCESS)) {
        fprintf(stderr, "hixl_info: %s\n", hixl_last_error());
        rc = 2;
    }
    if (want_o) {
        printf("# engine options: KEY  ENV  = value (source)\n");
        if (hixl_config_print(stdout, opts, nopts) != HIXL_SUCCESS) {
            fprintf(stderr, "hixl_info: %s\n", hixl_last_error());
            rc = 2;
        }
    }
    for (i = 0; i < nopts; ++i) {
        free(pairs[i]);
    }
    return rc;
}
