/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: what the library does about UCX (src/core/worker/ucx_settings.c),
 * through the public hixl_ucx_workarounds and the settings an engine's
 * UCX context really gets (UCX's own configuration, printed by UCX).
 *
 * What users rely on: a UCX_* variable that is set keeps UCX's value, and
 * the report says so; a transport's setting is not given where UCX_TLS
 * leaves the transport out; HIXL_DATA_PATH=rma turns the tcp messages off;
 * the endpoint-transport query is used exactly where the UCX running has
 * it; the report lists every row once, and writes nothing without room.
 */
#include "config.h"
#include "harness.h"
#include "core/worker/ucx_settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#define MAX_ROWS 64

static const char *const touched[] = {
    "UCX_ADAPTIVE_PROGRESS", "UCX_KEEPALIVE_NUM_EPS", "UCX_TCP_TX_SEG_SIZE",
    "UCX_TCP_RX_SEG_SIZE", "UCX_TLS", "HIXL_DATA_PATH", NULL};

static void clean_env(void)
{
    const char *const *v;

    for (v = touched; *v != NULL; ++v) {
        unsetenv(*v);
    }
}

static const hixl_ucx_workaround_t *row(hixl_ucx_workaround_t *w, size_t n,
                                        const char *name)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        if (strcmp(w[i].name, name) == 0) {
            return &w[i];
        }
    }
    ck_abort_msg("no workaround named %s", name);
    return NULL;
}

static size_t list(hixl_ucx_workaround_t *w)
{
    size_t n = hixl_ucx_workarounds(w, MAX_ROWS);

    ck_assert_uint_gt(n, 0);
    ck_assert_uint_le(n, MAX_ROWS);
    return n;
}

/* UCX's configuration as an engine's context would get it, printed */
static char *configured(void)
{
    ucp_config_t *config;
    char *text = NULL;
    size_t len = 0;
    FILE *f;

    ck_assert_int_eq(ucp_config_read(NULL, NULL, &config), UCS_OK);
    hixl_ucx_settings_apply(config);
    f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    ucp_config_release(config);
    return text;
}

START_TEST(test_defaults_in_force)
{
    hixl_ucx_workaround_t w[MAX_ROWS];
    size_t n, i, j;
    char *text;

    clean_env();
    n = list(w);
    for (i = 0; i < n; ++i) {
        ck_assert_str_ne(w[i].name, "");
        ck_assert_str_ne(w[i].behaviour, "");
        ck_assert_str_ne(w[i].action, "");
        for (j = i + 1; j < n; ++j) {
            ck_assert_str_ne(w[i].name, w[j].name);
        }
        if (strcmp(w[i].name, "ep-transports") != 0) {
            ck_assert_msg(w[i].in_force, "%s not in force: %s", w[i].name,
                          w[i].why_not);
            ck_assert_str_eq(w[i].why_not, "");
        }
    }
    text = configured();
    ck_assert_ptr_nonnull(strstr(text, "UCX_ADAPTIVE_PROGRESS=n\n"));
    ck_assert_ptr_nonnull(strstr(text, "UCX_KEEPALIVE_NUM_EPS=inf\n"));
    /* the transport setting, which UCX keeps by the name it took (1.13
     * TX_SEG_SIZE, 1.22 TCP_TX_SEG_SIZE): a name refused is not there */
    ck_assert_msg(strstr(text, "TX_SEG_SIZE=64k\n") != NULL,
                  "tcp's segment size did not reach UCX %s",
                  ucp_get_version_string());
    free(text);
}
END_TEST

START_TEST(test_environment_keeps_ucx_value)
{
    hixl_ucx_workaround_t w[MAX_ROWS];
    const hixl_ucx_workaround_t *r;
    size_t n;
    char *text;

    clean_env();
    setenv("UCX_ADAPTIVE_PROGRESS", "y", 1);
    setenv("UCX_TCP_RX_SEG_SIZE", "16k", 1);
    n = list(w);
    r = row(w, n, "adaptive-progress");
    ck_assert_int_eq(r->in_force, 0);
    ck_assert_str_eq(r->why_not, "UCX_ADAPTIVE_PROGRESS is set");
    r = row(w, n, "tcp-seg-size");
    ck_assert_int_eq(r->in_force, 0);
    ck_assert_str_eq(r->why_not, "UCX_TCP_RX_SEG_SIZE is set");
    ck_assert_int_eq(row(w, n, "keepalive-all-eps")->in_force, 1);
    text = configured();
    ck_assert_ptr_nonnull(strstr(text, "UCX_ADAPTIVE_PROGRESS=y\n"));
    free(text);
}
END_TEST

START_TEST(test_tls_leaves_out_transport)
{
    hixl_ucx_workaround_t w[MAX_ROWS];
    const hixl_ucx_workaround_t *r;
    size_t n;

    clean_env();
    setenv("UCX_TLS", "posix,cma", 1);
    n = list(w);
    r = row(w, n, "tcp-seg-size");
    ck_assert_int_eq(r->in_force, 0);
    ck_assert_str_eq(r->why_not, "UCX_TLS leaves out tcp");
    ck_assert_int_eq(row(w, n, "shm-error-handling")->in_force, 1);
    setenv("UCX_TLS", "tcp", 1);
    n = list(w);
    ck_assert_int_eq(row(w, n, "tcp-seg-size")->in_force, 1);
    r = row(w, n, "shm-error-handling");
    ck_assert_int_eq(r->in_force, 0);
    ck_assert_str_eq(r->why_not, "UCX_TLS leaves out sm");
}
END_TEST

START_TEST(test_data_path_rma)
{
    hixl_ucx_workaround_t w[MAX_ROWS];
    const hixl_ucx_workaround_t *r;
    size_t n;

    clean_env();
    setenv("HIXL_DATA_PATH", "rma", 1);
    n = list(w);
    r = row(w, n, "tcp-put-emulation");
    ck_assert_int_eq(r->in_force, 0);
    ck_assert_ptr_nonnull(strstr(r->why_not, "HIXL_DATA_PATH=rma"));
    setenv("HIXL_DATA_PATH", "auto", 1);
    n = list(w);
    ck_assert_int_eq(row(w, n, "tcp-put-emulation")->in_force, 1);
}
END_TEST

/* The query is used where both the UCX built against and the one running
 * have it: 1.14 and later. */
START_TEST(test_ep_transports_by_version)
{
    hixl_ucx_workaround_t w[MAX_ROWS];
    unsigned major, minor, release;
    int query = 0;
    size_t n;

    clean_env();
    ucp_get_version(&major, &minor, &release);
#ifdef HAVE_UCP_EP_ATTR_T_TRANSPORTS
    query = (major > 1) || ((major == 1) && (minor >= 14));
#endif
    ck_assert_int_eq(hixl_ucx_ep_query_transports(), query);
    n = list(w);
    ck_assert_int_eq(row(w, n, "ep-transports")->in_force, !query);
}
END_TEST

START_TEST(test_no_room)
{
    hixl_ucx_workaround_t w[2];
    size_t n;

    clean_env();
    n = hixl_ucx_workarounds(NULL, 5);
    ck_assert_uint_gt(n, 2);
    ck_assert_uint_eq(hixl_ucx_workarounds(NULL, 0), n);
    memset(w, 0, sizeof(w));
    ck_assert_uint_eq(hixl_ucx_workarounds(w, 1), n);
    ck_assert_ptr_nonnull(w[0].name);
    ck_assert_ptr_null(w[1].name);   /* room for one: one written */
}
END_TEST

static Suite *ucx_settings_suite(void)
{
    Suite *s  = suite_create("ucx_settings");
    TCase *tc = hx_tcase("ucx_settings");

    tcase_add_test(tc, test_defaults_in_force);
    tcase_add_test(tc, test_environment_keeps_ucx_value);
    tcase_add_test(tc, test_tls_leaves_out_transport);
    tcase_add_test(tc, test_data_path_rma);
    tcase_add_test(tc, test_ep_transports_by_version);
    tcase_add_test(tc, test_no_room);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(ucx_settings_suite());
}
