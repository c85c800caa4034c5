/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memory-type plugin ABI: what a module in plugins/<name>/ exports so
 * that libhixl-ucx can register, describe to peers and move device memory
 * that UCX does not know about (UCX's memory-type enum is closed at compile
 * time; no Ascend value exists up to UCX 1.22).
 *
 * A plugin is a shared module that exports one symbol,
 * HIXL_MEM_PLUGIN_ENTRY, returning a constant ops table.  The loader
 * (plugin.c) refuses a table whose abi_version differs from
 * HIXL_MEM_PLUGIN_ABI_VERSION or whose size is smaller than this one, and
 * says so in hixl_info.  Bump the version on any change to a structure or
 * a function signature below; appending a member at the end of an ops table
 * that older libraries never read is the only compatible change.
 *
 * The table is shaped after what every device runtime offers (ACL, CUDA,
 * ROCm, Level Zero all have: a pointer query, IPC export/import of device
 * allocations, async copies on a stream with events, peer access), so that
 * another plugin is one more folder, not a redesign:
 *
 *   probe    process level: is the runtime there (hixl_info, no engine)
 *   open     engine level context: runtime loaded, streams created lazily
 *   detect   does [addr, +len) belong to this runtime, on which device
 *   reg      export a region for peers: an opaque blob (IPC key, device)
 *   unpack   check a peer's blob and keep it (nothing mapped yet)
 *   import   map the peer's memory into this process (same node only)
 *   copy     enqueue a device copy (H2D, D2H, D2D) on a plugin stream
 *   mark     a completion token after everything enqueued so far
 *   test     has a token's work completed (async completion polling)
 *   release  undo unpack/import; dereg undoes reg; close undoes open
 *
 * Plugins never link UCX: NIC registration (ucp_mem_map) of device memory
 * is done by the library, which owns the UCX context.  Plugins never touch
 * device memory with the CPU; all movement is through copy().
 *
 * Threading: the library calls a context from several threads (API callers
 * and its progress thread) but never concurrently for the same context:
 * every call except probe is made under the engine's device lock.
 *
 * Errors: functions return hixl_status_t; on failure they record a message
 * through host->error() (it becomes hixl_last_error() of the caller).
 */
#ifndef HIXL_MEM_PLUGIN_H_
#define HIXL_MEM_PLUGIN_H_

#include <hixl/hixl.h>

#include <stddef.h>
#include <stdint.h>

#define HIXL_MEM_PLUGIN_ABI_VERSION 1

/* The symbol every plugin module exports (a function, see below). */
#define HIXL_MEM_PLUGIN_ENTRY "hixl_mem_plugin_entry"

/* Longest blob reg() may produce (it goes to peers in MEM_ADD). */
#define HIXL_MEM_BLOB_MAX 512

/* Services of the library offered to a plugin. */
typedef struct hixl_mem_host {
    uint32_t abi_version;
    /* Record the caller's error message; returns status. */
    hixl_status_t (*error)(hixl_status_t status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /* Log a line at a hixl log level (0 error .. 4 trace). */
    void (*log)(int level, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
} hixl_mem_host_t;

/* Parameters of probe() and open(). */
typedef struct hixl_mem_params {
    const hixl_mem_host_t *host;
    /* Runtime library to load instead of the plugin's default (an option
     * of the engine, hixl.PluginRuntime), or NULL. */
    const char            *runtime;
} hixl_mem_params_t;

/* What probe() reports for hixl_info. */
typedef struct hixl_mem_info {
    int  runtime_found;     /* 1: runtime loaded and usable */
    char runtime[256];      /* the library it loaded, or tried */
    char detail[256];       /* devices and version, or why not */
} hixl_mem_info_t;

/* Where memory lives, as detect() and import() describe it. */
typedef struct hixl_mem_attr {
    int32_t  device;        /* device ordinal in this process */
    uint32_t page_size;     /* 0 when unknown */
} hixl_mem_attr_t;

/* A copy to enqueue.  A device of -1 means host memory. */
typedef struct hixl_mem_copy {
    void       *dst;
    const void *src;
    size_t      len;
    int32_t     dst_device;
    int32_t     src_device;
    int32_t     exec_device;   /* whose stream runs it: dst or src device */
} hixl_mem_copy_t;

typedef struct hixl_mem_plugin_ops {
    uint32_t    abi_version;   /* HIXL_MEM_PLUGIN_ABI_VERSION */
    uint32_t    size;          /* sizeof(hixl_mem_plugin_ops_t) */
    const char *name;          /* short, [a-z0-9_]: "ascend" */
    const char *description;

    hixl_status_t (*probe)(const hixl_mem_params_t *params,
                           hixl_mem_info_t *info);

    hixl_status_t (*open)(const hixl_mem_params_t *params, void **ctx_p);
    void          (*close)(void *ctx);   /* waits for copies in flight */

    /* SUCCESS: [addr, +len) is this runtime's device memory, *attr filled;
     * UNSUPPORTED: it is not (message says what it is instead). */
    hixl_status_t (*detect)(void *ctx, const void *addr, size_t len,
                            hixl_mem_attr_t *attr);

    /* Export [addr, +len) (detected on attr->device) for peers: *reg_p is
     * the plugin's record, blob[0 .. *blob_len) (at most
     * HIXL_MEM_BLOB_MAX) what peers get. */
    hixl_status_t (*reg)(void *ctx, void *addr, size_t len,
                         const hixl_mem_attr_t *attr, void **reg_p,
                         void *blob, size_t *blob_len);
    void          (*dereg)(void *ctx, void *reg);

    /* Check a peer's blob strictly (it comes off the network) and keep
     * what import() needs; maps nothing.  *len_p is the length the blob
     * exports (the library checks it against the announced region). */
    hixl_status_t (*unpack)(void *ctx, const void *blob, size_t blob_len,
                            void **rmem_p, uint64_t *len_p);
    /* Map the peer's memory (once; later calls return the same mapping):
     * *addr_p is where its first byte is in this process, *attr its
     * device here. */
    hixl_status_t (*import)(void *ctx, void *rmem, void **addr_p,
                            hixl_mem_attr_t *attr);
    void          (*release)(void *ctx, void *rmem);

    /* Enqueue a copy on exec_device's stream; returns when queued. */
    hixl_status_t (*copy)(void *ctx, const hixl_mem_copy_t *copy);
    /* A token that completes after everything queued so far on
     * exec_device's stream (an event recorded on it). */
    hixl_status_t (*mark)(void *ctx, int32_t exec_device, void **token_p);
    /* *done_p = 1 when the token's work is complete; the token is then
     * gone, as it is when an error is returned. */
    hixl_status_t (*test)(void *ctx, void *token, int *done_p);

    /* Optional (may be NULL): page-locked host memory for the staging
     * pool, which device DMA reaches at full speed. */
    hixl_status_t (*host_alloc)(void *ctx, size_t len, void **addr_p);
    void          (*host_free)(void *ctx, void *addr);
} hixl_mem_plugin_ops_t;

/* Type of the entry symbol. */
typedef const hixl_mem_plugin_ops_t *(*hixl_mem_plugin_entry_t)(void);

#endif
