/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the library does about UCX (ucx_settings.h).
 */
#include "config.h"
#include "core/worker/ucx_settings.h"
#include "core/worker/ucx_tls.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A setting of the library's UCX context: UCX's own value stays where one
 * of `keep` is set in the environment, or where UCX_TLS leaves out every
 * transport of `tls` (UCX calls a setting of a transport it does not use
 * invalid). */
typedef struct hixl_ucx_setting {
    const char        *key;       /* as ucp_config_modify takes it */
    const char        *value;
    const char        *alt_key;   /* where this UCX refuses key, or NULL */
    const char *const *keep;      /* NULL-terminated; NULL: none */
    const char *const *tls;       /* NULL-terminated; NULL: any */
} hixl_ucx_setting_t;

/* A behaviour the library's own code avoids, always, or but where off()
 * says the workaround is off here (the UCX this process runs with has no
 * such behaviour, or the user chose UCX's way), for the reason why_off. */
typedef struct hixl_ucx_code_path {
    int (*off)(void);
    const char *why_off;
} hixl_ucx_code_path_t;

typedef struct hixl_ucx_row {
    const char          *name;
    const char          *behaviour;
    const char          *action;
    hixl_ucx_setting_t   setting;   /* key NULL: the row is code */
    hixl_ucx_code_path_t code;
} hixl_ucx_row_t;

static const char *const hixl_tls_sm[]  = {"sm", "posix", "sysv", "mm", NULL};
static const char *const hixl_tls_tcp[] = {"tcp", NULL};
static const char *const hixl_keep_adaptive[] = {"UCX_ADAPTIVE_PROGRESS",
                                                 NULL};
static const char *const hixl_keep_keepalive[] = {"UCX_KEEPALIVE_NUM_EPS",
                                                  NULL};
static const char *const hixl_keep_seg[] = {"UCX_TCP_TX_SEG_SIZE",
                                            "UCX_TCP_RX_SEG_SIZE", NULL};

static int hixl_ucx_data_path_forced(void)
{
    const char *path = getenv("HIXL_DATA_PATH");

    return (path != NULL) && (strcmp(path, "rma") == 0);
}

static const hixl_ucx_row_t hixl_ucx_rows[] = {
    {"shm-error-handling",
     "shared memory reports a dead peer, and lets an endpoint be "
     "force-closed, only with MM_ERROR_HANDLING",
     "MM_ERROR_HANDLING=y on the library's UCX context",
     {"MM_ERROR_HANDLING", "y", NULL, NULL, hixl_tls_sm}, {NULL, NULL}},
    {"adaptive-progress",
     "with adaptive progress a closed tcp connection stays in CLOSE_WAIT "
     "until other traffic wakes the transport",
     "ADAPTIVE_PROGRESS=n on the library's UCX context",
     {"ADAPTIVE_PROGRESS", "n", NULL, hixl_keep_adaptive, NULL}, {NULL, NULL}},
    {"keepalive-all-eps",
     "keepalive checks at most 128 endpoints a round, so dead same-host "
     "peers' endpoints and mappings pile up",
     "KEEPALIVE_NUM_EPS=inf on the library's UCX context",
     {"KEEPALIVE_NUM_EPS", "inf", NULL, hixl_keep_keepalive, NULL}, {NULL, NULL}},
    {"tcp-seg-size",
     "copied messages go in 8 KiB tcp segments by default",
     "TX_SEG_SIZE=64k on the library's UCX context",
     /* UCX 1.13's tcp takes it by its bare name only (it accepts the
      * full one and ignores it); 1.22 refuses the bare name and takes
      * the full one */
     {"TX_SEG_SIZE", "64k", "TCP_TX_SEG_SIZE", hixl_keep_seg, hixl_tls_tcp},
     {NULL, NULL}},
    {"tcp-put-emulation",
     "over tcp UCX emulates puts with messages whose handler aborts the "
     "target when the initiator dies mid-put",
     "tcp transfers go as the library's checked WRITE/READ messages",
     {NULL, NULL, NULL, NULL, NULL},
     {hixl_ucx_data_path_forced, "HIXL_DATA_PATH=rma forces UCX's puts"}},
    {"rndv-peer-death",
     "a rendezvous whose sender closed mid-transfer is never completed "
     "(and trips an assertion in 1.13)",
     "the library's messages are eager, at most 60 KiB each",
     {NULL, NULL, NULL, NULL, NULL}, {NULL, NULL}},
    {"tcp-zcopy-twice",
     "a tcp zero-copy message that fails half-way is completed twice",
     "the library's messages use a generic datatype, which UCX copies",
     {NULL, NULL, NULL, NULL, NULL}, {NULL, NULL}},
    {"shm-queue-hole",
     "a sender killed while writing a shared-memory receive queue blocks "
     "it for every sender",
     "same-host data goes by kernel copy or by mapping, never through "
     "those queues",
     {NULL, NULL, NULL, NULL, NULL}, {NULL, NULL}},
    {"ep-no-disconnect",
     "an endpoint made from a worker address has no disconnect, and a "
     "forced close with a blocked tcp queue crashes after a partition "
     "heals",
     "endpoints close in order: flush, UNBIND and UNBIND_ACK, then the "
     "forced close",
     {NULL, NULL, NULL, NULL, NULL}, {NULL, NULL}},
    {"ep-transports",
     "no query for an endpoint's transports (before 1.14)",
     "the library reads the transports UCX prints for the endpoint",
     {NULL, NULL, NULL, NULL, NULL},
     {hixl_ucx_ep_query_transports,
      "this UCX answers ucp_ep_query for transports"}},
};

#define HIXL_UCX_NROWS (sizeof(hixl_ucx_rows) / sizeof(hixl_ucx_rows[0]))

int hixl_ucx_ep_query_transports(void)
{
#ifdef HAVE_UCP_EP_ATTR_T_TRANSPORTS
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return (major > 1) || ((major == 1) && (minor >= 14));
#else
    return 0;
#endif
}

/* Whether row's setting is applied; if not, why into buf. */
static int hixl_ucx_setting_applies(const hixl_ucx_setting_t *s, char *buf,
                                    size_t len)
{
    const char *const *k;
    size_t n = 0;

    for (k = s->keep; (k != NULL) && (*k != NULL); ++k) {
        if (getenv(*k) != NULL) {
            snprintf(buf, len, "%s is set", *k);
            return 0;
        }
    }
    if (s->tls != NULL) {
        while (s->tls[n] != NULL) {
            ++n;
        }
        if (!hixl_ucx_tls_allows(s->tls, n)) {
            snprintf(buf, len, "UCX_TLS leaves out %s", s->tls[0]);
            return 0;
        }
    }
    return 1;
}

void hixl_ucx_settings_apply(ucp_config_t *config)
{
    char why[64];
    size_t i;

    for (i = 0; i < HIXL_UCX_NROWS; ++i) {
        const hixl_ucx_setting_t *s = &hixl_ucx_rows[i].setting;

        if ((s->key != NULL) && hixl_ucx_setting_applies(s, why, sizeof(why))) {
            ucs_status_t us = ucp_config_modify(config, s->key, s->value);

            if ((us != UCS_OK) && (s->alt_key != NULL)) {
                us = ucp_config_modify(config, s->alt_key, s->value);
            }
            if (us != UCS_OK) {   /* the workaround would not be in force */
                hixl_log_warn("UCX %s refused %s=%s: %s", ucp_get_version_string(),
                              s->key, s->value, ucs_status_string(us));
            }
        }
    }
}

size_t hixl_ucx_workarounds_list(hixl_ucx_workaround_t *out, size_t max)
{
    /* the reasons outlive the call: one buffer per row, per thread */
    static __thread char why[HIXL_UCX_NROWS][64];
    size_t i;

    for (i = 0; (i < HIXL_UCX_NROWS) && (i < max); ++i) {
        const hixl_ucx_row_t *row = &hixl_ucx_rows[i];

        out[i].name      = row->name;
        out[i].behaviour = row->behaviour;
        out[i].action    = row->action;
        why[i][0]        = '\0';
        if (row->setting.key != NULL) {
            out[i].in_force = hixl_ucx_setting_applies(&row->setting, why[i],
                                                       sizeof(why[i]));
        } else if ((row->code.off != NULL) && row->code.off()) {
            out[i].in_force = 0;
            snprintf(why[i], sizeof(why[i]), "%s", row->code.why_off);
        } else {
            out[i].in_force = 1;
        }
        out[i].why_not = why[i];
    }
    return HIXL_UCX_NROWS;
}
