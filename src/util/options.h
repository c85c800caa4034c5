/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine option table: every key hixl defines plus the hixl.* keys of
 * this library, each with its HIXL_* environment twin, default, range and
 * meaning, in one table (options.c).  Precedence: default < environment <
 * option passed to hixl_initialize().
 */
#ifndef HIXL_OPTIONS_H_
#define HIXL_OPTIONS_H_

#include <hixl/hixl.h>
#include "util/options_cann.h"

#include <stddef.h>
#include <stdint.h>

typedef enum hixl_error_mode {
    HIXL_ERROR_MODE_AUTO,
    HIXL_ERROR_MODE_PEER,
    HIXL_ERROR_MODE_NONE
} hixl_error_mode_t;

/* hixl.DevicePath: how descriptors with device memory move (device.h). */
typedef enum hixl_device_path {
    HIXL_DEVICE_PATH_AUTO,
    HIXL_DEVICE_PATH_IPC,
    HIXL_DEVICE_PATH_NIC,
    HIXL_DEVICE_PATH_STAGING
} hixl_device_path_t;

/* hixl.DataPath: how transfers move (ops/transfer.c picks the path per
 * descriptor; core/xfer/am_data.h for library messages, core/peer/cma.h for
 * kernel copies). */
typedef enum hixl_data_path {
    HIXL_DATA_PATH_AUTO,
    HIXL_DATA_PATH_RMA,
    HIXL_DATA_PATH_AM,
    HIXL_DATA_PATH_CMA
} hixl_data_path_t;

typedef enum hixl_async_copy {
    HIXL_ASYNC_COPY_INLINE,   /* in the posting thread */
    HIXL_ASYNC_COPY_THREAD    /* by the engine's copier thread */
} hixl_async_copy_t;

typedef enum hixl_prefault_mode {
    HIXL_PREFAULT_AUTO,     /* hixl_alloc_mem's memory, and peers' memory
                               mapped here at connect */
    HIXL_PREFAULT_ALL,      /* and every registered host region */
    HIXL_PREFAULT_NONE
} hixl_prefault_mode_t;

typedef enum hixl_opt_source {
    HIXL_OPT_DEFAULT,
    HIXL_OPT_ENV,
    HIXL_OPT_OPTION
} hixl_opt_source_t;

/* Parsed values; one field per table row. */
typedef struct hixl_opts {
    /* hixl's own keys */
    uint32_t buffer_pool_count;      /* BufferPool "count:MiB" */
    uint32_t buffer_pool_mib;
    int32_t  rdma_traffic_class;     /* -1: leave UCX's default */
    int32_t  rdma_service_level;     /* -1: leave UCX's default */
    int32_t  auto_connect;           /* AutoConnect */
    uint32_t connect_pool_threads;   /* also GlobalResourceConfig's */
    uint32_t connect_pool_queue;     /* connect_pool.* */
    /* CANN hixl keys accepted for compatibility, without effect over UCX
     * but for GlobalResourceConfig's connect_pool.* (options_cann.h) */
    int32_t         enable_fabric_mem;   /* EnableUseFabricMem */
    hixl_res_config_t res_config;        /* GlobalResourceConfig */
    hixl_comm_res_t comm_res;            /* LocalCommRes */
    /* hixl.* keys */
    int32_t  progress_thread;
    int32_t  progress_spin_us;
    int32_t  listen_ephemeral;
    int32_t  connect_timeout_ms;
    int32_t  handshake_timeout_ms;
    int32_t  transfer_timeout_ms;
    int32_t  finalize_timeout_ms;
    uint32_t max_requests;
    uint32_t notify_queue_depth;
    int32_t  notify_peer_ended;
    uint32_t max_notify_size;
    uint32_t max_remote_regions;
    uint32_t max_streams;
    uint32_t max_layers;
    int32_t  log_level;
    int32_t  error_mode;             /* hixl_error_mode_t */
    int32_t  data_path;              /* hixl_data_path_t */
    int32_t  prefault;               /* hixl_prefault_mode_t */
    int32_t  async_copy;             /* hixl_async_copy_t */
    int32_t  peer_timeout_ms;
    char     secret[256];            /* "" when unset */
    /* memory-type plugins and device paths */
    char     plugin_dir[1024];       /* searched before the install dir */
    char     plugin_install_dir[1024];   /* "": not searched */
    char     plugins[256];           /* "all", "none" or names */
    char     plugin_runtime[1024];   /* "name=library[,...]" */
    int32_t  device_path;            /* hixl_device_path_t */
    int32_t  device_nic_reg;
    char     metrics_listen[256];    /* "host:port" of /metrics, "" off */
} hixl_opts_t;

/* Number of rows in the table (for iteration by hixl_config_print). */
size_t hixl_opts_count(void);

/*
 * Fill *opts from defaults, then the environment, then options[].  On error
 * returns PARAM_INVALID with a message naming the key (or the environment
 * variable the bad value came from), value and range.  sources (may be
 * NULL) receives where each row's value came from and values (may be NULL)
 * the text of each row's value; both have hixl_opts_count() entries,
 * values point into options[] / environ / the table / *opts, valid as
 * long as those are.
 *
 * Keys CANN hixl defines that have no meaning over UCX are accepted (and
 * checked as CANN checks them); the first time one is given in this
 * process, an info line says so.
 */
hixl_status_t hixl_opts_load(hixl_opts_t *opts, const hixl_option_t *options,
                             size_t num_options, hixl_opt_source_t *sources,
                             const char **values);

#endif
