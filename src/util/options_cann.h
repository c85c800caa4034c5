/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CANN hixl's JSON-valued option keys (options_cann.c): GlobalResourceConfig
 * and LocalCommRes, checked as CANN hixl checks them (the same fields,
 * ranges and file rules), so that a configuration written for CANN is
 * accepted here exactly when CANN would accept it.
 *
 * Over UCX only connect_pool.* has a meaning (the async connect pool,
 * hixl.ConnectPoolThreads / hixl.ConnectPoolQueue); the rest configures
 * Ascend NICs, HCCL channels and fabric memory, which UCX replaces.  Those
 * fields are validated, shown by hixl_info and otherwise without effect.
 */
#ifndef HIXL_UTIL_OPTIONS_CANN_H_
#define HIXL_UTIL_OPTIONS_CANN_H_

#include <hixl/hixl.h>
#include <stdint.h>
#include <stdio.h>

/* Fields of GlobalResourceConfig that were given (hixl_res_config_t.set). */
enum {
    HIXL_RES_CONFIG_THREAD_NUM          = 1u << 0,
    HIXL_RES_CONFIG_TASK_QUEUE_CAPACITY = 1u << 1,
    HIXL_RES_CONFIG_PROTOCOL_DESC       = 1u << 2,
    HIXL_RES_CONFIG_LISTEN_PORT         = 1u << 3,
    HIXL_RES_CONFIG_QOS                 = 1u << 4,
    HIXL_RES_CONFIG_MAX_ACTIVE_CHANNELS = 1u << 5,
    HIXL_RES_CONFIG_LOCAL_COMM_RES_PATH = 1u << 6,
    HIXL_RES_CONFIG_CHANNEL_POOL        = 1u << 7,
    HIXL_RES_CONFIG_FM_MAX_CAPACITY     = 1u << 8,
    HIXL_RES_CONFIG_FM_START_ADDRESS    = 1u << 9,
    HIXL_RES_CONFIG_FM_TASK_STREAM_NUM  = 1u << 10,
    HIXL_RES_CONFIG_FM_AICPU_UNFOLD     = 1u << 11
};

/* The fields that configure something over UCX (connect_pool.*). */
#define HIXL_RES_CONFIG_HONOURED \
    (HIXL_RES_CONFIG_THREAD_NUM | HIXL_RES_CONFIG_TASK_QUEUE_CAPACITY)

typedef struct hixl_res_config {
    uint32_t set;                      /* HIXL_RES_CONFIG_* */
    uint32_t thread_num;               /* connect_pool.thread_num */
    uint32_t task_queue_capacity;      /* connect_pool.task_queue_capacity */
    char     protocol_desc[160];       /* comma-separated, for hixl_info */
    uint32_t listen_port;              /* comm_resource_config.* */
    uint32_t qos;
    uint32_t max_active_channels;
    char     local_comm_res_path[1024];
    uint32_t channel_max;              /* channel_pool.* */
    double   channel_high, channel_low;
    uint32_t fm_max_capacity_tb;       /* fabric_memory.* */
    uint32_t fm_start_address_tb;
    uint32_t fm_task_stream_num;
    int32_t  fm_aicpu_unfold;
    /* text of the honoured fields, what hixl_config_print shows for the
     * hixl.ConnectPool* rows they set */
    char     thread_num_text[12];
    char     task_queue_capacity_text[12];
} hixl_res_config_t;

/* LocalCommRes, as validated. */
typedef struct hixl_comm_res {
    int      set;
    char     version[8];        /* "1.0", "1.2", "1.3", or "" */
    uint32_t endpoints;         /* entries of endpoint_list (1.3) */
    int      from_file;         /* GlobalResourceConfig local_comm_res_path */
} hixl_comm_res_t;

/* Parse and check a GlobalResourceConfig value ("" is unset: *res_config
 * zeroed).  origin names where it came from, for the message of a
 * PARAM_INVALID. */
hixl_status_t hixl_res_config_parse(const char *origin, const char *text,
                                    hixl_res_config_t *res_config);

/* Check a LocalCommRes value of len bytes ("" is unset). */
hixl_status_t hixl_comm_res_check(const char *origin, const char *text,
                                  size_t len, hixl_comm_res_t *cr);

/* LocalCommRes from GlobalResourceConfig's local_comm_res_path, read and
 * checked as CANN hixl reads it: a regular file (no symbolic link at the
 * last component) of 1 byte to 1 MiB. */
hixl_status_t hixl_comm_res_file(const char *path, hixl_comm_res_t *cr);

/* The fields given in res_config, one per line, each with what it does
 * here. */
void hixl_res_config_print(FILE *stream, const hixl_res_config_t *res_config);

/* The names of the given fields without effect over UCX, comma-separated
 * ("" when none). */
void hixl_res_config_inert_names(const hixl_res_config_t *res_config,
                                 char *buf, size_t len);

#endif
