/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the option keys CANN hixl defines, as a configuration written for
 * CANN hixl passes them (src/util/options.c, options_cann.c).
 *
 * Accepted exactly where CANN accepts them: GlobalResourceConfig's fields
 * and ranges, LocalCommRes versions and endpoint lists, the local
 * communication resource file rules, EnableUseFabricMem's "0"/"1", the
 * adxl.* aliases (the plain key wins), RdmaTrafficClass / RdmaServiceLevel
 * falling back to HCCL_RDMA_TC / HCCL_RDMA_SL.  connect_pool.* sets the
 * async connect pool; the keys without effect over UCX say so once, at
 * info level.
 */
#include "config.h"
#include "harness.h"
#include "util/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hixl_status_t load1(hixl_opts_t *o, const char *key, const char *value)
{
    hixl_option_t opt = {key, value};

    return hixl_opts_load(o, &opt, 1, NULL, NULL);
}

static hixl_status_t res_config(hixl_opts_t *o, const char *json)
{
    return load1(o, "GlobalResourceConfig", json);
}

START_TEST(test_global_resource_config)
{
    static const char *const good[] = {
        "", "{}",
        /* CANN hixl's documented examples */
        "{\"comm_resource_config.protocol_desc\": [\"hccs:device\"]}",
        "{\"connect_pool.thread_num\":\"2\", "
        "\"connect_pool.task_queue_capacity\":\"256\"}",
        "{\"comm_resource_config.listen_port\": \"26666\", "
        "\"comm_resource_config.max_active_channels\": \"128\"}",
        "{\"fabric_memory.max_capacity\": \"128\", "
        "\"fabric_memory.start_address\": \"40\", "
        "\"fabric_memory.task_stream_num\": \"1\", "
        "\"fabric_memory.enable_aicpu_unfold\": true}",
        "{\"channel_pool.max_channel\": \"10\", "
        "\"channel_pool.high_waterline\": \"0.3\", "
        "\"channel_pool.low_waterline\": \"0.1\"}",
        "{\"comm_resource_config.protocol_desc\": \"roce:host\"}",
        "{\"comm_resource_config.qos\": 7}",
        "{\"fabric_memory\": {\"max_capacity\": 1024, "
        "\"enable_aicpu_unfold\": false, \"task_stream_num\": 8}}",
        "{\"fabric_memory.enable_aicpu_unfold\": false, "
        "\"fabric_memory.task_stream_num\": 4}",
        "{\"an_unknown_field\": [1, 2]}",   /* ignored, as upstream */
    };
    static const struct { const char *json, *why; } bad[] = {
        {"x", "not valid JSON"}, {"[1]", "JSON object"}, {"\"s\"", "JSON object"},
        {"{\"connect_pool.thread_num\": 0}", "thread_num must be in [1, 64]"},
        {"{\"connect_pool.thread_num\": \"65\"}", "got 65"},
        {"{\"connect_pool.thread_num\": 1.5}", "must be an integer"},
        {"{\"connect_pool.thread_num\": \" 4\"}", "must be an integer"},
        {"{\"connect_pool.task_queue_capacity\": 65536}", "[1, 65535]"},
        {"{\"comm_resource_config.listen_port\": 0}", "listen_port"},
        {"{\"comm_resource_config.qos\": 8}", "qos"},
        {"{\"comm_resource_config.max_active_channels\": 0}", "max_active"},
        {"{\"comm_resource_config.max_active_channels\": 4294967296}",
         "max_active"},
        {"{\"comm_resource_config.protocol_desc\": \"tcp:host\"}",
         "protocol_desc"},
        {"{\"comm_resource_config.protocol_desc\": [\"roce:host\", 1]}",
         "protocol_desc"},
        {"{\"comm_resource_config.protocol_desc\": 3}", "protocol_desc"},
        {"{\"fabric_memory.max_capacity\": 1025}", "max_capacity"},
        {"{\"fabric_memory\": {\"max_capacity\": 0}}", "max_capacity"},
        {"{\"fabric_memory.start_address\": -1}", "start_address"},
        {"{\"fabric_memory.task_stream_num\": 2}", "must be 1"},
        {"{\"fabric_memory.enable_aicpu_unfold\": \"true\"}", "true or false"},
        {"{\"channel_pool.max_channel\": 513}", "max_channel"},
        {"{\"channel_pool.high_waterline\": 0.3}", "together"},
        {"{\"channel_pool.high_waterline\": 0.3, "
         "\"channel_pool.low_waterline\": 0.5}", "waterlines"},
        {"{\"channel_pool.high_waterline\": 1, "
         "\"channel_pool.low_waterline\": 0.5}", "waterlines"},
        {"{\"local_comm_res_path\": \"\"}", "non-empty"},
        {"{\"local_comm_res_path\": 5}", "non-empty"},
    };
    hixl_opts_t o;
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        ck_assert_msg(res_config(&o, good[i]) == HIXL_SUCCESS, "%s: %s",
                      good[i], hixl_last_error());
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        hx_expect(res_config(&o, bad[i].json), HIXL_PARAM_INVALID, bad[i].why);
        ck_assert_ptr_nonnull(strstr(hixl_last_error(),
                                     "option GlobalResourceConfig"));
    }
    /* what the fields hold */
    hx_ok(res_config(&o, "{\"comm_resource_config.qos\": \"5\", "
                         "\"comm_resource_config.protocol_desc\": "
                         "[\"roce:device\", \"ub_ctp:host\"]}"));
    ck_assert_uint_eq(o.res_config.qos, 5);
    ck_assert_str_eq(o.res_config.protocol_desc, "roce:device,ub_ctp:host");
    /* nested and flat fabric_memory: the flat key wins */
    hx_ok(res_config(&o, "{\"fabric_memory\": {\"max_capacity\": 3}, "
                         "\"fabric_memory.max_capacity\": 9}"));
    ck_assert_uint_eq(o.res_config.fm_max_capacity_tb, 9);
}
END_TEST

/* connect_pool.* is the async connect pool; the hixl.* keys, given
 * themselves, win; from the environment it counts as environment. */
START_TEST(test_connect_pool_mapping)
{
    size_t n = hixl_opts_count();
    hixl_opt_source_t *src = calloc(n, sizeof(*src));
    const char **val = calloc(n, sizeof(*val));
    hixl_option_t opts[2] = {
        {"GlobalResourceConfig", "{\"connect_pool.thread_num\": \"5\", "
                                 "\"connect_pool.task_queue_capacity\": 9}"},
        {"hixl.ConnectPoolQueue", "33"},
    };
    hixl_opts_t o;

    ck_assert(src && val);
    hx_ok(hixl_opts_load(&o, opts, 1, src, val));
    ck_assert_uint_eq(o.connect_pool_threads, 5);
    ck_assert_uint_eq(o.connect_pool_queue, 9);
    hx_ok(hixl_opts_load(&o, opts, 2, NULL, NULL));
    ck_assert_uint_eq(o.connect_pool_threads, 5);
    ck_assert_uint_eq(o.connect_pool_queue, 33);
    /* an option beats the environment, whichever key either uses */
    ck_assert_int_eq(setenv("HIXL_CONNECT_POOL_THREADS", "7", 1), 0);
    hx_ok(hixl_opts_load(&o, opts, 1, NULL, NULL));
    ck_assert_uint_eq(o.connect_pool_threads, 5);
    ck_assert_int_eq(setenv("HIXL_GLOBAL_RESOURCE_CONFIG",
                            "{\"connect_pool.thread_num\": 3}", 1), 0);
    hx_ok(hixl_opts_load(&o, NULL, 0, NULL, NULL));
    ck_assert_uint_eq(o.connect_pool_threads, 7);   /* env vs env: own key */
    unsetenv("HIXL_CONNECT_POOL_THREADS");
    hx_ok(hixl_opts_load(&o, NULL, 0, NULL, NULL));
    ck_assert_uint_eq(o.connect_pool_threads, 3);
    hx_clear_hixl_env();
    free(src);
    free(val);
}
END_TEST

START_TEST(test_local_comm_res)
{
    static const char *const good[] = {
        "", "{}", "{\"version\": \"1.3\"}",
        "{\"version\": \"1.2\", \"server_list\": []}",
        "{\"version\": \"1.3\", \"net_instance_id\": \"superpod1_1\", "
        "\"endpoint_list\": [{\"protocol\": \"roce\", \"comm_id\": "
        "\"10.10.10.1\", \"placement\": \"device\"}, {\"protocol\": "
        "\"ub_ctp\", \"comm_id\": \"00000000007f020000100000df149001\", "
        "\"placement\": \"host\", \"dst_eid\": \"00000000007f03\", "
        "\"plane\": \"plane-a\", \"server_id\": \"s1\"}]}",
    };
    static const struct { const char *json, *why; } bad[] = {
        {"{", "not valid JSON"}, {"[]", "JSON object"},
        {"{\"version\": 1.3}", "version"}, {"{\"version\": \"2.0\"}", "version"},
        {"{\"version\": \"1.3\", \"endpoint_list\": {}}", "must be an array"},
        {"{\"version\": \"1.3\", \"endpoint_list\": [1]}", "[0] must be an object"},
        {"{\"version\": \"1.3\", \"endpoint_list\": [{\"protocol\": \"tcp\", "
         "\"comm_id\": \"a\", \"placement\": \"host\"}]}", "protocol"},
        {"{\"version\": \"1.3\", \"endpoint_list\": [{\"protocol\": \"roce\", "
         "\"comm_id\": \"a\", \"placement\": \"nic\"}]}", "placement"},
        {"{\"version\": \"1.3\", \"endpoint_list\": [{\"protocol\": \"roce\", "
         "\"placement\": \"host\"}]}", "comm_id"},
        {"{\"version\": \"1.3\", \"endpoint_list\": [{\"protocol\": \"roce\", "
         "\"comm_id\": \"a\", \"placement\": \"host\", \"plane\": 2}]}",
         "plane"},
        {"{\"version\": \"1.3\", \"net_instance_id\": 7}", "net_instance_id"},
    };
    hixl_option_t two[2];
    hixl_opts_t o;
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        ck_assert_msg(load1(&o, "LocalCommRes", good[i]) == HIXL_SUCCESS,
                      "%s: %s", good[i], hixl_last_error());
    }
    ck_assert_str_eq(o.comm_res.version, "1.3");
    ck_assert_uint_eq(o.comm_res.endpoints, 2);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        hx_expect(load1(&o, "LocalCommRes", bad[i].json), HIXL_PARAM_INVALID,
                  bad[i].why);
    }
    /* the adxl.* alias, and the plain key beating it in either order */
    hx_expect(load1(&o, "adxl.LocalCommRes", "{"), HIXL_PARAM_INVALID,
              "option adxl.LocalCommRes");
    two[0].key = "LocalCommRes";      two[0].value = "{\"version\": \"1.3\"}";
    two[1].key = "adxl.LocalCommRes"; two[1].value = "{\"version\": \"1.0\"}";
    hx_ok(hixl_opts_load(&o, two, 2, NULL, NULL));
    ck_assert_str_eq(o.comm_res.version, "1.3");
    two[0] = two[1];
    two[1].key = "LocalCommRes"; two[1].value = "{\"version\": \"1.2\"}";
    hx_ok(hixl_opts_load(&o, two, 2, NULL, NULL));
    ck_assert_str_eq(o.comm_res.version, "1.2");
}
END_TEST

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");

    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* GlobalResourceConfig's local_comm_res_path: read and checked as CANN
 * reads it; a non-empty LocalCommRes wins and the file is not read. */
START_TEST(test_local_comm_res_path)
{
    char dir[] = "/tmp/hx_lcr_XXXXXX", good[64], bad[64], link[64],
         empty[64], big[64], cfg[256];
    hixl_option_t two[2];
    hixl_opts_t o;
    char *huge;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(good, sizeof(good), "%s/good.json", dir);
    snprintf(bad, sizeof(bad), "%s/bad.json", dir);
    snprintf(link, sizeof(link), "%s/link.json", dir);
    snprintf(empty, sizeof(empty), "%s/empty.json", dir);
    snprintf(big, sizeof(big), "%s/big.json", dir);
    write_file(good, "{\"version\": \"1.3\", \"endpoint_list\": []}", 39);
    write_file(bad, "{\"version\": \"1.3\", \"endpoint_list\": 0}", 38);
    write_file(empty, "", 0);
    huge = malloc(1024 * 1024 + 1);
    ck_assert_ptr_nonnull(huge);
    memset(huge, ' ', 1024 * 1024 + 1);
    huge[0] = '{';
    huge[1024 * 1024] = '}';
    write_file(big, huge, 1024 * 1024 + 1);
    free(huge);
    ck_assert_int_eq(symlink(good, link), 0);

#define PATH_CFG(_p) (snprintf(cfg, sizeof(cfg), \
                               "{\"local_comm_res_path\": \"%s\"}", (_p)), cfg)
    hx_ok(res_config(&o, PATH_CFG(good)));
    ck_assert_int_eq(o.comm_res.set, 1);
    ck_assert_int_eq(o.comm_res.from_file, 1);
    ck_assert_str_eq(o.comm_res.version, "1.3");
    hx_expect(res_config(&o, PATH_CFG(bad)), HIXL_PARAM_INVALID,
              "endpoint_list");
    hx_expect(res_config(&o, PATH_CFG(empty)), HIXL_PARAM_INVALID,
              "regular file");
    hx_expect(res_config(&o, PATH_CFG(big)), HIXL_PARAM_INVALID, "1 MiB");
    hx_expect(res_config(&o, PATH_CFG(dir)), HIXL_PARAM_INVALID,
              "regular file");
    hx_expect(res_config(&o, PATH_CFG("/nonexistent/x.json")),
              HIXL_PARAM_INVALID, "local_comm_res_path");
    /* a symbolic link is resolved first (realpath), as upstream does */
    hx_ok(res_config(&o, PATH_CFG(link)));
    /* a non-empty LocalCommRes wins: the bad file is not read */
    two[0].key = "GlobalResourceConfig"; two[0].value = PATH_CFG(bad);
    two[1].key = "LocalCommRes";         two[1].value = "{\"version\":\"1.0\"}";
    hx_ok(hixl_opts_load(&o, two, 2, NULL, NULL));
    ck_assert_int_eq(o.comm_res.from_file, 0);
    two[1].value = "";
    hx_expect(hixl_opts_load(&o, two, 2, NULL, NULL), HIXL_PARAM_INVALID,
              "endpoint_list");
#undef PATH_CFG
    unlink(good); unlink(bad); unlink(link); unlink(empty); unlink(big);
    rmdir(dir);
}
END_TEST

START_TEST(test_fabric_mem_and_aliases)
{
    hixl_option_t two[2];
    hixl_opts_t o;

    hx_ok(load1(&o, "EnableUseFabricMem", "1"));
    ck_assert_int_eq(o.enable_fabric_mem, 1);
    hx_ok(load1(&o, "EnableUseFabricMem", "0"));
    ck_assert_int_eq(o.enable_fabric_mem, 0);
    hx_ok(load1(&o, "EnableUseFabricMem", ""));
    hx_expect(load1(&o, "EnableUseFabricMem", "2"), HIXL_PARAM_INVALID,
              "option EnableUseFabricMem = \"2\"");
    hx_expect(load1(&o, "EnableUseFabricMem", "true"), HIXL_PARAM_INVALID,
              "\"0\" or \"1\"");

    hx_ok(load1(&o, "adxl.BufferPool", "2:16"));
    ck_assert_uint_eq(o.buffer_pool_count, 2);
    ck_assert_uint_eq(o.buffer_pool_mib, 16);
    hx_expect(load1(&o, "adxl.BufferPool", "2"), HIXL_PARAM_INVALID,
              "option adxl.BufferPool");
    hx_ok(load1(&o, "adxl.RdmaTrafficClass", "16"));
    ck_assert_int_eq(o.rdma_traffic_class, 16);
    hx_ok(load1(&o, "adxl.RdmaServiceLevel", "6"));
    ck_assert_int_eq(o.rdma_service_level, 6);
    /* the plain key wins over its alias, whatever the order */
    two[0].key = "BufferPool";      two[0].value = "3:3";
    two[1].key = "adxl.BufferPool"; two[1].value = "5:5";
    hx_ok(hixl_opts_load(&o, two, 2, NULL, NULL));
    ck_assert_uint_eq(o.buffer_pool_count, 3);
    two[0].key = "adxl.BufferPool"; two[1].key = "BufferPool";
    hx_ok(hixl_opts_load(&o, two, 2, NULL, NULL));
    ck_assert_uint_eq(o.buffer_pool_count, 5);
    /* AutoConnect is adxl's spelling too; "" is refused there, as in CANN */
    hx_expect(load1(&o, "AutoConnect", ""), HIXL_PARAM_INVALID, NULL);
    hx_expect(load1(&o, "adxl.AutoConnect", "1"), HIXL_PARAM_INVALID,
              "unknown option");
}
END_TEST

/* Unset or "": HCCL_RDMA_TC / HCCL_RDMA_SL; the option, then this
 * library's own variable, win over them. */
START_TEST(test_rdma_env_fallback)
{
    hixl_opts_t o;

    ck_assert_int_eq(setenv("HCCL_RDMA_TC", "104", 1), 0);
    ck_assert_int_eq(setenv("HCCL_RDMA_SL", "3", 1), 0);
    hx_ok(hixl_opts_load(&o, NULL, 0, NULL, NULL));
    ck_assert_int_eq(o.rdma_traffic_class, 104);
    ck_assert_int_eq(o.rdma_service_level, 3);
    hx_ok(load1(&o, "RdmaTrafficClass", ""));
    ck_assert_int_eq(o.rdma_traffic_class, 104);
    hx_ok(load1(&o, "RdmaTrafficClass", "8"));
    ck_assert_int_eq(o.rdma_traffic_class, 8);
    hx_ok(load1(&o, "RdmaServiceLevel", "0"));
    ck_assert_int_eq(o.rdma_service_level, 0);
    ck_assert_int_eq(setenv("HIXL_RDMA_SERVICE_LEVEL", "5", 1), 0);
    hx_ok(hixl_opts_load(&o, NULL, 0, NULL, NULL));
    ck_assert_int_eq(o.rdma_service_level, 5);
    unsetenv("HIXL_RDMA_SERVICE_LEVEL");
    /* a bad fallback value names the variable it came from */
    ck_assert_int_eq(setenv("HCCL_RDMA_TC", "5", 1), 0);
    hx_expect(hixl_opts_load(&o, NULL, 0, NULL, NULL), HIXL_PARAM_INVALID,
              "environment variable HCCL_RDMA_TC");
    /* CANN reads it only when the option is unset: then it is no error */
    hx_ok(load1(&o, "RdmaTrafficClass", "12"));
    ck_assert_int_eq(o.rdma_traffic_class, 12);
    hx_expect(load1(&o, "RdmaTrafficClass", ""), HIXL_PARAM_INVALID,
              "HCCL_RDMA_TC");
    unsetenv("HCCL_RDMA_TC");
    unsetenv("HCCL_RDMA_SL");
}
END_TEST

static int g_info_lines;
static char g_info_text[2048];

static void count_info(int level, const char *file, int line,
                       const char *msg, void *arg)
{
    if ((level == 2) && strstr(msg, "no effect over UCX")) {
        ++g_info_lines;
        snprintf(g_info_text + strlen(g_info_text),
                 sizeof(g_info_text) - strlen(g_info_text), "%s\n", msg);
    }
}

/* Keys without effect: an info line, once per key per process, and only
 * where the engine asked for info. */
START_TEST(test_inert_logged_once)
{
    hixl_option_t opts[4] = {
        {"EnableUseFabricMem", "1"},
        {"GlobalResourceConfig", "{\"connect_pool.thread_num\": 2, "
                                 "\"comm_resource_config.qos\": 1}"},
        {"LocalCommRes", "{\"version\": \"1.3\"}"},
        {"hixl.LogLevel", "info"},
    };
    hixl_opts_t o;

    hixl_set_log_handler(count_info, NULL);
    hx_ok(hixl_opts_load(&o, opts, 3, NULL, NULL));   /* at warn: silent */
    ck_assert_int_eq(g_info_lines, 0);
    hx_ok(hixl_opts_load(&o, opts, 4, NULL, NULL));
    ck_assert_msg(g_info_lines == 3, "%d lines:\n%s", g_info_lines,
                  g_info_text);
    ck_assert_ptr_nonnull(strstr(g_info_text, "EnableUseFabricMem"));
    ck_assert_ptr_nonnull(strstr(g_info_text, "comm_resource_config.qos"));
    ck_assert_ptr_null(strstr(g_info_text, "connect_pool"));
    ck_assert_ptr_nonnull(strstr(g_info_text, "LocalCommRes"));
    hx_ok(hixl_opts_load(&o, opts, 4, NULL, NULL));
    ck_assert_int_eq(g_info_lines, 3);
    hixl_set_log_handler(NULL, NULL);
}
END_TEST

static Suite *unit_options_cann_suite(void)
{
    Suite *s = suite_create("options_cann");
    TCase *tc = hx_tcase("cann_keys");

    tcase_add_test(tc, test_global_resource_config);
    tcase_add_test(tc, test_connect_pool_mapping);
    tcase_add_test(tc, test_local_comm_res);
    tcase_add_test(tc, test_local_comm_res_path);
    tcase_add_test(tc, test_fabric_mem_and_aliases);
    tcase_add_test(tc, test_rdma_env_fallback);
    tcase_add_test(tc, test_inert_logged_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_options_cann_suite());
}
