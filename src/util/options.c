/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The option table.  Adding an option is one row here plus one field in
 * hixl_opts_t; parsing, environment lookup, validation and printing
 * (hixl_config_print, hixl_info) all read this table.
 *
 * Every key CANN hixl defines has a row, so that a configuration written
 * for it is accepted: with its meaning where UCX can honour it, validated
 * as CANN validates it and logged once where it cannot (options_cann.c has
 * the JSON-valued ones).  CANN's adxl.* spellings are aliases of their
 * rows; the plain key wins when both are given, as in CANN hixl.
 */
#include "config.h"
#include "util/options.h"
#include "util/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum hixl_opt_kind {
    HIXL_OPT_BOOL,
    HIXL_OPT_INT,        /* int32 within [min, max] */
    HIXL_OPT_UINT,       /* uint32 within [min, max] */
    HIXL_OPT_ENUM,       /* one of the row's names, stored as its index */
    HIXL_OPT_SECRET,     /* a string never printed */
    HIXL_OPT_BUFFER_POOL,
    HIXL_OPT_STRING,     /* copied into a char[max] field */
    HIXL_OPT_FLAG01,     /* CANN's strict "0" / "1" */
    HIXL_OPT_RES_CONFIG, /* GlobalResourceConfig JSON (options_cann.h) */
    HIXL_OPT_COMM_RES    /* LocalCommRes JSON (options_cann.h) */
} hixl_opt_kind_t;

/* Row flags. */
enum {
    /* "" given as an option means "not given", as in CANN hixl (the
     * environment, then the default, stay in force) */
    HIXL_OPT_F_EMPTY_UNSET = 1u << 0,
    /* a CANN hixl key without effect over UCX: an info line, once */
    HIXL_OPT_F_INERT       = 1u << 1,
    /* "" is a value of its own, from the environment too (elsewhere an
     * empty variable counts as unset) */
    HIXL_OPT_F_EMPTY_VALUE = 1u << 2
};

typedef struct hixl_opt_row {
    const char      *key;
    const char      *env;
    hixl_opt_kind_t  kind;
    const char      *dflt;
    int64_t          min, max;
    int64_t          multiple_of;  /* 0: any value */
    size_t           offset;       /* into hixl_opts_t */
    const char      *help;
    const char *const *names;      /* HIXL_OPT_ENUM: NULL-terminated, in
                                      the order of the field's enum */
    const char      *alias;        /* CANN's adxl.* spelling, or NULL */
    const char      *env_fallback; /* read when env is unset (CANN's) */
    unsigned         flags;        /* HIXL_OPT_F_* */
} hixl_opt_row_t;

#define OFF(_f) offsetof(hixl_opts_t, _f)

/* $(pkglibdir), from the build (src/Makefile.am) */
#ifndef HIXL_PLUGIN_INSTALL_DIR
#define HIXL_PLUGIN_INSTALL_DIR ""
#endif

static const char *const hixl_log_level_names[] = {
    "error", "warn", "info", "debug", "trace", NULL
};
static const char *const hixl_error_mode_names[] = {  /* hixl_error_mode_t */
    "auto", "peer", "none", NULL
};
static const char *const hixl_device_path_names[] = { /* hixl_device_path_t */
    "auto", "ipc", "nic", "staging", NULL
};
static const char *const hixl_data_path_names[] = {   /* hixl_data_path_t */
    "auto", "rma", "am", "cma", NULL
};
static const char *const hixl_prefault_names[] = {    /* hixl_prefault_mode_t */
    "auto", "all", "none", NULL
};
static const char *const hixl_async_copy_names[] = {  /* hixl_async_copy_t */
    "inline", "thread", NULL
};

static const hixl_opt_row_t hixl_opt_table[] = {
    {"BufferPool", "HIXL_BUFFER_POOL", HIXL_OPT_BUFFER_POOL, "4:8", 0, 0, 0,
     OFF(buffer_pool_count),
     "Staging pool as \"count:MiB\" for paths that cannot move memory "
     "directly (device memory through host); \"0:0\" disables it "
     "(also adxl.BufferPool)", NULL, "adxl.BufferPool", NULL, 0},
    {"RdmaTrafficClass", "HIXL_RDMA_TRAFFIC_CLASS", HIXL_OPT_INT, "-1", -1,
     255, 4, OFF(rdma_traffic_class),
     "RDMA traffic class (0..255, multiple of 4) given to UCX as "
     "UCX_IB_TRAFFIC_CLASS; -1 keeps UCX's default.  Unset or \"\": "
     "HCCL_RDMA_TC, as in CANN hixl (also adxl.RdmaTrafficClass)", NULL,
     "adxl.RdmaTrafficClass", "HCCL_RDMA_TC", HIXL_OPT_F_EMPTY_UNSET},
    {"RdmaServiceLevel", "HIXL_RDMA_SERVICE_LEVEL", HIXL_OPT_INT, "-1", -1, 7,
     0, OFF(rdma_service_level),
     "RDMA service level (0..7) given to UCX as UCX_IB_SL; -1 keeps UCX's "
     "default.  Unset or \"\": HCCL_RDMA_SL, as in CANN hixl (also "
     "adxl.RdmaServiceLevel)", NULL, "adxl.RdmaServiceLevel", "HCCL_RDMA_SL",
     HIXL_OPT_F_EMPTY_UNSET},
    {"AutoConnect", "HIXL_AUTO_CONNECT", HIXL_OPT_BOOL, "0", 0, 1, 0,
     OFF(auto_connect),
     "Connect on first transfer or notify to an unconnected remote, within "
     "hixl.ConnectTimeoutMs", NULL, NULL, NULL, 0},
    {"EnableUseFabricMem", "HIXL_ENABLE_USE_FABRIC_MEM", HIXL_OPT_FLAG01, "0",
     0, 1, 0, OFF(enable_fabric_mem),
     "CANN hixl's fabric-memory engine (Atlas A3 HCCS), \"0\" or \"1\": "
     "accepted, no effect over UCX (device memory takes the paths of "
     "hixl.DevicePath either way)", NULL, NULL, NULL,
     HIXL_OPT_F_EMPTY_UNSET | HIXL_OPT_F_INERT},
    {"GlobalResourceConfig", "HIXL_GLOBAL_RESOURCE_CONFIG",
     HIXL_OPT_RES_CONFIG, "", 0, 0, 0, OFF(res_config),
     "CANN hixl's JSON object of resource settings, checked as CANN checks "
     "it: connect_pool.thread_num and .task_queue_capacity set "
     "hixl.ConnectPoolThreads and hixl.ConnectPoolQueue (those keys, given "
     "themselves, win); comm_resource_config.*, channel_pool.*, "
     "fabric_memory.* and local_comm_res_path configure Ascend NICs and "
     "HCCL: accepted, no effect over UCX", NULL, NULL, NULL,
     HIXL_OPT_F_EMPTY_UNSET},
    {"LocalCommRes", "HIXL_LOCAL_COMM_RES", HIXL_OPT_COMM_RES, "", 0, 0, 0,
     OFF(comm_res),
     "CANN hixl's local communication resources (JSON: a \"1.0\"/\"1.2\" "
     "ranktable, or \"1.3\" with endpoint_list), checked as CANN checks "
     "it: accepted, no effect over UCX (engine names and UCX_TLS say where "
     "data goes; also adxl.LocalCommRes)", NULL, "adxl.LocalCommRes", NULL,
     HIXL_OPT_F_EMPTY_UNSET | HIXL_OPT_F_INERT},
    {"hixl.ConnectPoolThreads", "HIXL_CONNECT_POOL_THREADS", HIXL_OPT_UINT,
     "2", 1, 64, 0, OFF(connect_pool_threads),
     "Threads running hixl_connect_async / hixl_disconnect_async (hixl's "
     "GlobalResourceConfig connect_pool.thread_num), started at the first "
     "async call", NULL, NULL, NULL, 0},
    {"hixl.ConnectPoolQueue", "HIXL_CONNECT_POOL_QUEUE", HIXL_OPT_UINT,
     "128", 1, 65535, 0, OFF(connect_pool_queue),
     "Async connects and disconnects waiting for a thread; one more is "
     "RESOURCE_EXHAUSTED (connect_pool.task_queue_capacity)", NULL, NULL, NULL, 0},
    {"hixl.ProgressThread", "HIXL_PROGRESS_THREAD", HIXL_OPT_BOOL, "1", 0, 1,
     0, OFF(progress_thread),
     "Run an engine progress thread, so a passive target needs no calls; "
     "0: progress only inside hixl calls (status polls drive it)", NULL, NULL, NULL, 0},
    {"hixl.ProgressSpinUs", "HIXL_PROGRESS_SPIN_US", HIXL_OPT_INT, "200", 0,
     10000000, 0, OFF(progress_spin_us),
     "Microseconds the progress thread keeps polling after the last data "
     "activity (a transfer in flight, a data message served) before it "
     "sleeps on the event fd", NULL, NULL, NULL, 0},
    {"hixl.ListenEphemeral", "HIXL_LISTEN_EPHEMERAL", HIXL_OPT_BOOL, "0", 0,
     1, 0, OFF(listen_ephemeral),
     "With a name \"ip:0\", listen on a port the kernel picks (see "
     "hixl_engine_name) instead of being client-only", NULL, NULL, NULL, 0},
    {"hixl.ConnectTimeoutMs", "HIXL_CONNECT_TIMEOUT_MS", HIXL_OPT_INT, "3000",
     1, INT32_MAX, 0, OFF(connect_timeout_ms),
     "Timeout of connects made by AutoConnect and of memory-table refreshes", NULL, NULL, NULL, 0},
    {"hixl.HandshakeTimeoutMs", "HIXL_HANDSHAKE_TIMEOUT_MS", HIXL_OPT_INT,
     "3000", 1, INT32_MAX, 0, OFF(handshake_timeout_ms),
     "A listener closes an accepted connection that has not completed its "
     "handshake (HELLO, and the proof of hixl.Secret) within this time; "
     "idle and slow connections cannot hold the listener longer", NULL,
     NULL, NULL, 0},
    {"hixl.TransferTimeoutMs", "HIXL_TRANSFER_TIMEOUT_MS", HIXL_OPT_INT,
     "30000", 1, INT32_MAX, 0, OFF(transfer_timeout_ms),
     "Deadline of an async transfer whose args give none", NULL, NULL, NULL, 0},
    {"hixl.FinalizeTimeoutMs", "HIXL_FINALIZE_TIMEOUT_MS", HIXL_OPT_INT,
     "3000", 0, INT32_MAX, 0, OFF(finalize_timeout_ms),
     "How long hixl_finalize lets transfers in flight land before it "
     "cancels them (0: cancel at once)", NULL, NULL, NULL, 0},
    {"hixl.MaxRequests", "HIXL_MAX_REQUESTS", HIXL_OPT_UINT, "16384", 1,
     1 << 24, 0, OFF(max_requests),
     "Async requests in flight per engine (the request pool)", NULL, NULL, NULL, 0},
    {"hixl.NotifyQueueDepth", "HIXL_NOTIFY_QUEUE_DEPTH", HIXL_OPT_UINT,
     "4096", 1, 1 << 24, 0, OFF(notify_queue_depth),
     "Notifies held for hixl_get_notifies; a sender to a full queue gets "
     "RESOURCE_EXHAUSTED", NULL, NULL, NULL, 0},
    {"hixl.NotifyPeerEnded", "HIXL_NOTIFY_PEER_ENDED", HIXL_OPT_BOOL, "0",
     0, 1, 0, OFF(notify_peer_ended),
     "Queue a notify named \"hixl.peer_ended\" (HIXL_NOTIFY_PEER_ENDED) "
     "from each connected engine whose connection ends, whichever side "
     "ended it and however: its message says how and why, and "
     "hixl_get_notifies, hixl_wait_notifies and the event fd see it as any "
     "notify", NULL, NULL, NULL, 0},
    {"hixl.MaxNotifySize", "HIXL_MAX_NOTIFY_SIZE", HIXL_OPT_UINT, "65536", 0,
     1 << 24, 0, OFF(max_notify_size),
     "Largest notify message in bytes, sent or accepted", NULL, NULL, NULL, 0},
    {"hixl.MaxRemoteRegions", "HIXL_MAX_REMOTE_REGIONS", HIXL_OPT_UINT,
     "65536", 1, 1 << 24, 0, OFF(max_remote_regions),
     "Regions accepted from one peer; a peer announcing more is disconnected", NULL, NULL, NULL, 0},
    {"hixl.MaxStreams", "HIXL_MAX_STREAMS", HIXL_OPT_UINT, "1024", 1,
     1 << 20, 0, OFF(max_streams),
     "Layer-signal streams per peer (stream ids 0..MaxStreams-1)", NULL, NULL, NULL, 0},
    {"hixl.MaxLayers", "HIXL_MAX_LAYERS", HIXL_OPT_UINT, "256", 1, 1 << 16,
     0, OFF(max_layers),
     "Layers per stream (layer ids 0..MaxLayers-1)", NULL, NULL, NULL, 0},
    {"hixl.ErrorMode", "HIXL_ERROR_MODE", HIXL_OPT_ENUM, "auto", 0, 0,
     0, OFF(error_mode),
     "UCX error handling of endpoints: peer (UCX reports a dead peer; only "
     "transports that can are used, and UCX 1.13 shared memory cannot), none "
     "(every transport, but UCX may abort this process when a peer dies "
     "during a tcp transfer), auto (peer where it reaches the peer, else "
     "none: UCX_TLS=sm gets shared memory)", hixl_error_mode_names, NULL, NULL, 0},
    {"hixl.DataPath", "HIXL_DATA_PATH", HIXL_OPT_ENUM, "auto", 0, 0, 0,
     OFF(data_path),
     "How transfers move: rma (UCX puts and gets, completion by endpoint "
     "flush), am (library messages the target checks and acknowledges), "
     "cma (kernel copies straight into a peer on this host, where UCX_TLS "
     "and the system allow them; am elsewhere), or auto: rma where UCX "
     "has RDMA lanes to the peer, a plain copy where UCX maps the peer's "
     "memory here (shared memory it allocated; async copies run on the "
     "engine's copier thread), cma to a peer on this host otherwise, am "
     "elsewhere (tcp, where UCX would emulate puts "
     "with messages whose handler aborts the target if the initiator dies "
     "mid-put)", hixl_data_path_names, NULL, NULL, 0},
    {"hixl.PrefaultMem", "HIXL_PREFAULT_MEM", HIXL_OPT_ENUM, "auto", 0, 0, 0,
     OFF(prefault),
     "Page tables filled ahead (MADV_POPULATE_WRITE, bytes untouched), so "
     "that the first transfer into fresh memory does not fault page by "
     "page: auto (memory from hixl_alloc_mem, and a peer's memory mapped "
     "here when the connection is made), all (also every registered host "
     "region, which the kernel then backs with pages), none",
     hixl_prefault_names, NULL, NULL, 0},
    {"hixl.AsyncCopy", "HIXL_ASYNC_COPY", HIXL_OPT_ENUM, "inline", 0, 0, 0,
     OFF(async_copy),
     "Who does the copies of hixl_transfer_async to a peer on this host: "
     "inline (the posting thread, before the call returns; fastest where "
     "cores are few or busy) or thread (the engine's copier thread: the "
     "call returns in microseconds and the caller's thread goes on, e.g. "
     "computing the next layer, while another core copies; needs the "
     "progress thread)", hixl_async_copy_names, NULL, NULL, 0},
    {"hixl.PeerTimeoutMs", "HIXL_PEER_TIMEOUT_MS", HIXL_OPT_INT, "10000",
     1000, 3600000, 0, OFF(peer_timeout_ms),
     "How long a silent peer stays connected: its control connection's "
     "unacknowledged bytes and keepalive probes time out after it, and the "
     "peer is then closed (its transfers, layer flushes and waits end "
     "FAILED)", NULL, NULL, NULL, 0},
    {"hixl.Secret", "HIXL_SECRET", HIXL_OPT_SECRET, "", 0, 0, 0,
     OFF(secret),
     "Shared secret: peers must prove it (HMAC-SHA256 challenge, both ways) "
     "before any worker address, memory table or remote key leaves the "
     "engine; unset: no authentication", NULL, NULL, NULL, 0},
    {"hixl.LogLevel", "HIXL_LOG_LEVEL", HIXL_OPT_ENUM, "warn", 0, 0, 0,
     OFF(log_level),
     "error, warn, info, debug or trace (the process logs at the most "
     "verbose level of its engines)", hixl_log_level_names, NULL, NULL, 0},
    {"hixl.PluginDir", "HIXL_PLUGIN_DIR", HIXL_OPT_STRING, "", 0,
     sizeof(((hixl_opts_t*)0)->plugin_dir), 0, OFF(plugin_dir),
     "Directories (':'-separated) searched for memory-type plugins "
     "(hixl_mem_<name>.so) before the installation's plugin directory", NULL,
     NULL, NULL, 0},
    {"hixl.PluginInstallDir", "HIXL_PLUGIN_INSTALL_DIR", HIXL_OPT_STRING,
     HIXL_PLUGIN_INSTALL_DIR, 0,
     sizeof(((hixl_opts_t*)0)->plugin_install_dir), 0,
     OFF(plugin_install_dir),
     "The installation's plugin directory, searched after hixl.PluginDir; "
     "empty: not searched (a build tree's tests set it so that only their "
     "own plugins are found, whatever copy is installed)", NULL, NULL, NULL,
     HIXL_OPT_F_EMPTY_VALUE},
    {"hixl.Plugins", "HIXL_PLUGINS", HIXL_OPT_STRING, "all", 0,
     sizeof(((hixl_opts_t*)0)->plugins), 0, OFF(plugins),
     "Memory-type plugins this engine uses: all, none, or names "
     "(\"ascend\")", NULL, NULL, NULL, 0},
    {"hixl.PluginRuntime", "HIXL_PLUGIN_RUNTIME", HIXL_OPT_STRING, "", 0,
     sizeof(((hixl_opts_t*)0)->plugin_runtime), 0, OFF(plugin_runtime),
     "Device runtime library a plugin loads instead of its default, as "
     "name=library[,name=library] (ascend: libascendcl.so); one runtime per "
     "process", NULL, NULL, NULL, 0},
    {"hixl.DevicePath", "HIXL_DEVICE_PATH", HIXL_OPT_ENUM, "auto", 0,
     0, 0, OFF(device_path),
     "How descriptors with device memory move: auto (IPC device copy on "
     "this node, else UCX when both sides are NIC-registered, else staging "
     "through BufferPool), or only ipc, nic or staging (others are "
     "UNSUPPORTED)", hixl_device_path_names, NULL, NULL, 0},
    {"hixl.DeviceNicReg", "HIXL_DEVICE_NIC_REG", HIXL_OPT_BOOL, "0", 0, 1, 0,
     OFF(device_nic_reg),
     "Also register device memory with UCX (ucp_mem_map) so that peers on "
     "other nodes reach it with RDMA; needs a NIC that can reach device "
     "memory (peer-memory support), else the region is staged", NULL, NULL, NULL, 0},
    {"hixl.MetricsListen", "HIXL_METRICS_LISTEN", HIXL_OPT_STRING, "", 0,
     sizeof(((hixl_opts_t*)0)->metrics_listen), 0, OFF(metrics_listen),
     "HOST:PORT where the engine serves its metrics over HTTP (/metrics in "
     "Prometheus's text format, /healthz); unset: no endpoint.  Port 0 takes "
     "any free port (hixl_metrics_address says which).  UNSUPPORTED in a "
     "library built without libmicrohttpd", NULL, NULL, NULL, 0},
};

#define HIXL_OPT_ROWS (sizeof(hixl_opt_table) / sizeof(hixl_opt_table[0]))

size_t hixl_opts_count(void)
{
    return HIXL_OPT_ROWS;
}

static int hixl_opt_parse_int(const char *s, int64_t *v)
{
    char *end;

    errno = 0;
    *v    = strtoll(s, &end, 0);
    return (errno == 0) && (end != s) && (*end == '\0');
}

/* origin says where the value came from ("option BufferPool",
 * "environment variable HIXL_BUFFER_POOL"), so that a bad value passed in
 * the options array is never blamed on the environment. */
static hixl_status_t hixl_opt_bad(const char *origin, const char *value,
                                  const char *why)
{
    return hixl_error(HIXL_PARAM_INVALID, "%s = \"%s\": %s", origin, value,
                      why);
}

/* "expected a, b or c" for an enum row. */
static const char *hixl_opt_names_text(const hixl_opt_row_t *row, char *buf,
                                       size_t len)
{
    size_t i, n = 0;

    n += (size_t)snprintf(buf, len, "expected");
    for (i = 0; (row->names[i] != NULL) && (n < len); ++i) {
        n += (size_t)snprintf(buf + n, len - n, "%s %s",
                              (i == 0) ? "" : (row->names[i + 1] == NULL) ?
                              " or" : ",", row->names[i]);
    }
    return buf;
}

static hixl_status_t hixl_opt_set(const hixl_opt_row_t *row, const char *value,
                                  const char *origin, hixl_opts_t *opts)
{
    char *field = (char*)opts + row->offset;
    char range[96];
    int64_t v, count, mib;
    const char *colon;
    size_t i;

    switch (row->kind) {
    case HIXL_OPT_BOOL:
        if (!strcasecmp(value, "1") || !strcasecmp(value, "true") ||
            !strcasecmp(value, "yes") || !strcasecmp(value, "on")) {
            *(int32_t*)field = 1;
        } else if (!strcasecmp(value, "0") || !strcasecmp(value, "false") ||
                   !strcasecmp(value, "no") || !strcasecmp(value, "off")) {
            *(int32_t*)field = 0;
        } else {
            return hixl_opt_bad(origin, value, "expected 1/0, true/false, yes/no "
                                            "or on/off");
        }
        return HIXL_SUCCESS;
    case HIXL_OPT_INT:
    case HIXL_OPT_UINT:
        snprintf(range, sizeof(range), "expected an integer in [%" PRId64
                 ", %" PRId64 "]", row->min, row->max);
        if (!hixl_opt_parse_int(value, &v) || (v < row->min) ||
            (v > row->max)) {
            return hixl_opt_bad(origin, value, range);
        }
        if (row->multiple_of && (v >= 0) && (v % row->multiple_of)) {
            snprintf(range, sizeof(range), "must be a multiple of %" PRId64,
                     row->multiple_of);
            return hixl_opt_bad(origin, value, range);
        }
        if (row->kind == HIXL_OPT_INT) {
            *(int32_t*)field = (int32_t)v;
        } else {
            *(uint32_t*)field = (uint32_t)v;
        }
        return HIXL_SUCCESS;
    case HIXL_OPT_ENUM:
        for (i = 0; row->names[i] != NULL; ++i) {
            if (!strcasecmp(value, row->names[i])) {
                *(int32_t*)field = (int32_t)i;
                return HIXL_SUCCESS;
            }
        }
        return hixl_opt_bad(origin, value, hixl_opt_names_text(row, range,
                                                            sizeof(range)));
    case HIXL_OPT_STRING:
        if (strlen(value) >= (size_t)row->max) {
            snprintf(range, sizeof(range), "longer than %" PRId64 " bytes",
                     row->max - 1);
            return hixl_opt_bad(origin, value, range);
        }
        snprintf(field, (size_t)row->max, "%s", value);
        return HIXL_SUCCESS;
    case HIXL_OPT_SECRET:
        if (strlen(value) >= sizeof(opts->secret)) {
            return hixl_opt_bad(origin, "(secret)", "longer than 255 bytes");
        }
#ifndef HAVE_CRYPTO
        if (*value != '\0') {
            return hixl_error(HIXL_UNSUPPORTED, "%s: this libhixl-ucx was "
                              "built without libcrypto, so it cannot "
                              "authenticate peers", origin);
        }
#endif
        snprintf(field, sizeof(opts->secret), "%s", value);
        return HIXL_SUCCESS;
    case HIXL_OPT_BUFFER_POOL:
        colon = strchr(value, ':');
        if (colon == NULL) {
            return hixl_opt_bad(origin, value, "expected \"count:MiB\"");
        }
        {
            char head[32];
            size_t n = (size_t)(colon - value);

            if (n >= sizeof(head)) {
                return hixl_opt_bad(origin, value, "expected \"count:MiB\"");
            }
            memcpy(head, value, n);
            head[n] = '\0';
            if (!hixl_opt_parse_int(head, &count) ||
                !hixl_opt_parse_int(colon + 1, &mib) || (count < 0) ||
                (count > 4096) || (mib < 0) || (mib > 65536) ||
                ((count == 0) != (mib == 0))) {
                return hixl_opt_bad(origin, value, "expected \"count:MiB\" with "
                                    "count in [1, 4096] and MiB in [1, 65536], "
                                    "or \"0:0\"");
            }
        }
        opts->buffer_pool_count = (uint32_t)count;
        opts->buffer_pool_mib   = (uint32_t)mib;
        return HIXL_SUCCESS;
    case HIXL_OPT_FLAG01:
        if (strcmp(value, "0") && strcmp(value, "1")) {
            return hixl_opt_bad(origin, value, "expected \"0\" or \"1\"");
        }
        *(int32_t*)field = (value[0] == '1');
        return HIXL_SUCCESS;
    case HIXL_OPT_RES_CONFIG:
        return hixl_res_config_parse(origin, value, &opts->res_config);
    case HIXL_OPT_COMM_RES:
        return hixl_comm_res_check(origin, value, strlen(value),
                                   &opts->comm_res);
    }
    return hixl_opt_bad(origin, value, "internal: unknown option kind");
}

/* Where a value comes from, for messages. */
static void hixl_opt_origin(char *buf, size_t len, hixl_opt_source_t src,
                            const char *name, const hixl_opt_row_t *row)
{
    switch (src) {
    case HIXL_OPT_DEFAULT:
        snprintf(buf, len, "default of %s", row->key);
        break;
    case HIXL_OPT_ENV:
        snprintf(buf, len, "environment variable %s (option %s)", name,
                 row->key);
        break;
    case HIXL_OPT_OPTION:
        snprintf(buf, len, "option %s", name);
        break;
    }
}

static size_t hixl_opt_find(const char *key, int alias)
{
    size_t i;

    for (i = 0; i < HIXL_OPT_ROWS; ++i) {
        if (!alias ? !strcmp(key, hixl_opt_table[i].key) :
            ((hixl_opt_table[i].alias != NULL) &&
             !strcmp(key, hixl_opt_table[i].alias))) {
            return i;
        }
    }
    return HIXL_OPT_ROWS;
}

/* Default, then the row's environment variable, then CANN's fallback
 * variable when the row's own is unset.  CANN reads the fallback only when
 * the option is not given, so a bad value there is not an error yet:
 * *deferred names it, and hixl_opt_deferred decides after the options. */
static hixl_status_t hixl_opt_base(size_t i, hixl_opts_t *opts,
                                   hixl_opt_source_t *src, const char **val,
                                   const char **deferred)
{
    const hixl_opt_row_t *row = &hixl_opt_table[i];
    const char *name = row->env, *env;
    int empty_is_value = (row->flags & HIXL_OPT_F_EMPTY_VALUE) != 0;
    hixl_status_t status;
    char origin[160];

    *deferred = NULL;
    hixl_opt_origin(origin, sizeof(origin), HIXL_OPT_DEFAULT, NULL, row);
    status = hixl_opt_set(row, row->dflt, origin, opts);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    src[i] = HIXL_OPT_DEFAULT;
    val[i] = row->dflt;
    env    = getenv(row->env);
    if (((env == NULL) || ((*env == '\0') && !empty_is_value)) &&
        (row->env_fallback != NULL)) {
        name = row->env_fallback;
        env  = getenv(name);
    }
    if ((env == NULL) || ((*env == '\0') && !empty_is_value)) {
        return HIXL_SUCCESS;
    }
    hixl_opt_origin(origin, sizeof(origin), HIXL_OPT_ENV, name, row);
    if (name == row->env_fallback) {
        hixl_opts_t scratch = *opts;

        if (hixl_opt_set(row, env, origin, &scratch) != HIXL_SUCCESS) {
            *deferred = name;
            return HIXL_SUCCESS;
        }
    }
    status = hixl_opt_set(row, env, origin, opts);
    if (status == HIXL_SUCCESS) {
        src[i] = HIXL_OPT_ENV;
        val[i] = env;
    }
    return status;
}

/* A bad fallback variable (hixl_opt_base) is an error when no option
 * replaced it. */
static hixl_status_t hixl_opt_deferred(const hixl_opt_source_t *src,
                                       const char *const *deferred,
                                       hixl_opts_t *opts)
{
    char origin[160];
    size_t i;

    for (i = 0; i < HIXL_OPT_ROWS; ++i) {
        if ((deferred[i] != NULL) && (src[i] != HIXL_OPT_OPTION)) {
            hixl_opt_origin(origin, sizeof(origin), HIXL_OPT_ENV, deferred[i],
                            &hixl_opt_table[i]);
            return hixl_opt_set(&hixl_opt_table[i], getenv(deferred[i]),
                                origin, opts);
        }
    }
    return HIXL_SUCCESS;
}

/* The options array, in two passes: CANN's adxl.* aliases first, then
 * the keys themselves, so that a key beats its alias in any order. */
static hixl_status_t hixl_opt_given(const hixl_option_t *options,
                                    size_t num_options, hixl_opts_t *opts,
                                    hixl_opt_source_t *src, const char **val)
{
    hixl_status_t status;
    char origin[160];
    size_t i, j;
    int alias;

    for (j = 0; j < num_options; ++j) {
        if ((options[j].key == NULL) || (options[j].value == NULL)) {
            return hixl_error(HIXL_PARAM_INVALID, "option %zu has a NULL %s",
                              j, options[j].key ? "value" : "key");
        }
        if ((hixl_opt_find(options[j].key, 0) == HIXL_OPT_ROWS) &&
            (hixl_opt_find(options[j].key, 1) == HIXL_OPT_ROWS)) {
            return hixl_error(HIXL_PARAM_INVALID, "unknown option \"%s\" "
                              "(hixl_info lists the keys)", options[j].key);
        }
    }
    for (alias = 1; alias >= 0; --alias) {
        for (j = 0; j < num_options; ++j) {
            i = hixl_opt_find(options[j].key, alias);
            if (i == HIXL_OPT_ROWS) {
                continue;
            }
            if ((hixl_opt_table[i].flags & HIXL_OPT_F_EMPTY_UNSET) &&
                (options[j].value[0] == '\0')) {
                continue;
            }
            hixl_opt_origin(origin, sizeof(origin), HIXL_OPT_OPTION,
                            options[j].key, &hixl_opt_table[i]);
            status = hixl_opt_set(&hixl_opt_table[i], options[j].value,
                                  origin, opts);
            if (status != HIXL_SUCCESS) {
                return status;
            }
            src[i] = HIXL_OPT_OPTION;
            val[i] = options[j].value;
        }
    }
    return HIXL_SUCCESS;
}

/* What GlobalResourceConfig implies for other rows: connect_pool.* sets
 * the connect pool (unless its own key came from as close or closer), and
 * local_comm_res_path stands for LocalCommRes when that is not given. */
static hixl_status_t hixl_opt_derived(hixl_opts_t *opts,
                                      hixl_opt_source_t *src,
                                      const char **val)
{
    size_t g = hixl_opt_find("GlobalResourceConfig", 0);
    size_t t = hixl_opt_find("hixl.ConnectPoolThreads", 0);
    size_t q = hixl_opt_find("hixl.ConnectPoolQueue", 0);

    if ((opts->res_config.set & HIXL_RES_CONFIG_THREAD_NUM) &&
        (src[g] > src[t])) {
        opts->connect_pool_threads = opts->res_config.thread_num;
        src[t] = src[g];
        val[t] = opts->res_config.thread_num_text;
    }
    if ((opts->res_config.set & HIXL_RES_CONFIG_TASK_QUEUE_CAPACITY) &&
        (src[g] > src[q])) {
        opts->connect_pool_queue = opts->res_config.task_queue_capacity;
        src[q] = src[g];
        val[q] = opts->res_config.task_queue_capacity_text;
    }
    if ((opts->res_config.set & HIXL_RES_CONFIG_LOCAL_COMM_RES_PATH) &&
        !opts->comm_res.set) {
        return hixl_comm_res_file(opts->res_config.local_comm_res_path,
                                  &opts->comm_res);
    }
    return HIXL_SUCCESS;
}

/* Keys without effect over UCX: an info line the first time each is seen
 * with a value in this process (at the level this engine asked for, since
 * it does not hold the process' level yet). */
static void hixl_opt_note_inert(const hixl_opts_t *opts,
                                const hixl_opt_source_t *src,
                                const char **val)
{
    static atomic_int noted[HIXL_OPT_ROWS];
    int level = (opts->log_level > hixl_log_level) ? opts->log_level :
                hixl_log_level;
    char names[512];
    size_t i;

    if (level < HIXL_LOG_INFO) {
        return;
    }
    for (i = 0; i < HIXL_OPT_ROWS; ++i) {
        const hixl_opt_row_t *row = &hixl_opt_table[i];

        if ((src[i] == HIXL_OPT_DEFAULT) || (val[i][0] == '\0')) {
            continue;
        }
        if (row->kind == HIXL_OPT_RES_CONFIG) {
            hixl_res_config_inert_names(&opts->res_config, names,
                                        sizeof(names));
            if ((names[0] != '\0') && !atomic_exchange(&noted[i], 1)) {
                hixl_log_printf(HIXL_LOG_INFO, __FILE__, __LINE__,
                                "GlobalResourceConfig: %s accepted for CANN "
                                "hixl compatibility, no effect over UCX",
                                names);
            }
        } else if ((row->flags & HIXL_OPT_F_INERT) &&
                   !atomic_exchange(&noted[i], 1)) {
            hixl_log_printf(HIXL_LOG_INFO, __FILE__, __LINE__, "%s accepted "
                            "for CANN hixl compatibility, no effect over UCX",
                            row->key);
        }
    }
}

hixl_status_t hixl_opts_load(hixl_opts_t *opts, const hixl_option_t *options,
                             size_t num_options, hixl_opt_source_t *sources,
                             const char **values)
{
    hixl_opt_source_t src[HIXL_OPT_ROWS];
    const char *val[HIXL_OPT_ROWS], *deferred[HIXL_OPT_ROWS];
    hixl_status_t status;
    size_t i;

    if ((num_options > 0) && (options == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "options is NULL but "
                          "num_options is %zu", num_options);
    }

    memset(opts, 0, sizeof(*opts));
    for (i = 0; i < HIXL_OPT_ROWS; ++i) {
        status = hixl_opt_base(i, opts, src, val, &deferred[i]);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    status = hixl_opt_given(options, num_options, opts, src, val);
    if (status == HIXL_SUCCESS) {
        status = hixl_opt_deferred(src, deferred, opts);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_opt_derived(opts, src, val);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_opt_note_inert(opts, src, val);
    if (sources) {
        memcpy(sources, src, sizeof(src));
    }
    if (values) {
        memcpy(values, val, sizeof(val));
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_config_print(FILE *stream, const hixl_option_t *options,
                                size_t num_options)
{
    static const char *const source_names[] = {"default", "env", "option"};
    hixl_opt_source_t sources[HIXL_OPT_ROWS];
    const char *values[HIXL_OPT_ROWS];
    hixl_opts_t opts;
    hixl_status_t status;
    size_t i;

    if (stream == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "stream is NULL");
    }
    status = hixl_opts_load(&opts, options, num_options, sources, values);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    for (i = 0; i < HIXL_OPT_ROWS; ++i) {
        fprintf(stream, "%-22s %-26s = %-8s (%s)\n    %s\n",
                hixl_opt_table[i].key, hixl_opt_table[i].env,
                (hixl_opt_table[i].kind != HIXL_OPT_SECRET) ? values[i] :
                (*values[i] ? "(set)" : "(unset)"), source_names[sources[i]],
                hixl_opt_table[i].help);
        if (hixl_opt_table[i].kind == HIXL_OPT_RES_CONFIG) {
            hixl_res_config_print(stream, &opts.res_config);
        } else if ((hixl_opt_table[i].kind == HIXL_OPT_COMM_RES) &&
                   opts.comm_res.set) {
            fprintf(stream, "      version \"%s\", %u endpoints%s\n",
                    opts.comm_res.version, opts.comm_res.endpoints,
                    opts.comm_res.from_file ? ", from GlobalResourceConfig "
                    "local_comm_res_path" : "");
        }
    }
    return HIXL_SUCCESS;
}
