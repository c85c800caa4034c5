/*
 * libhixl-ucx: the hixl point-to-point transfer API over UCX.
 *
 * The calls mirror CANN hixl's C++ class hixl::Hixl method by method
 * (Initialize -> hixl_initialize, TransferAsync -> hixl_transfer_async, ...),
 * with the same status numbers and enum orders, so code written against hixl
 * ports line by line.  Data moves with one-sided UCX puts and gets into memory
 * the remote engine registered; the remote makes no receive call.
 *
 * Threading: every call is safe from any thread, on one engine or several,
 * except hixl_finalize(), which must not run concurrently with any other call
 * on the same engine (the engine is gone when it returns).
 *
 * Errors: every call returns a hixl_status_t.  On failure the calling thread's
 * hixl_last_error() holds a readable message naming what was wrong (the
 * offending argument, descriptor index or peer).
 */
#ifndef HIXL_HIXL_H_
#define HIXL_HIXL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HIXL_API __attribute__((visibility("default")))
#else
#define HIXL_API
#endif

#define HIXL_VERSION_MAJOR 0
#define HIXL_VERSION_MINOR 1
#define HIXL_VERSION_PATCH 0

/** Status codes; numbers are those of CANN hixl. */
typedef enum hixl_status {
    HIXL_SUCCESS            = 0,
    HIXL_PARAM_INVALID      = 103900,
    HIXL_TIMEOUT            = 103901,
    HIXL_NOT_CONNECTED      = 103902,
    HIXL_ALREADY_CONNECTED  = 103903,
    HIXL_NOTIFY_FAILED      = 103904,
    HIXL_UNSUPPORTED        = 103905,
    HIXL_RESOURCE_EXHAUSTED = 203900,
    HIXL_FAILED             = 503900
} hixl_status_t;

/** Memory types, in hixl's order. */
typedef enum hixl_mem_type {
    HIXL_MEM_DEVICE = 0,
    HIXL_MEM_HOST   = 1
} hixl_mem_type_t;

/** Transfer direction, in hixl's order: READ moves remote -> local,
 *  WRITE moves local -> remote. */
typedef enum hixl_transfer_op {
    HIXL_READ  = 0,
    HIXL_WRITE = 1
} hixl_transfer_op_t;

/** State of an asynchronous transfer, in hixl's order. */
typedef enum hixl_transfer_status {
    HIXL_TRANSFER_WAITING   = 0,
    HIXL_TRANSFER_COMPLETED = 1,
    HIXL_TRANSFER_TIMEOUT   = 2,
    HIXL_TRANSFER_FAILED    = 3
} hixl_transfer_status_t;

/** An engine (hixl::Hixl object). */
typedef struct hixl_engine hixl_engine_t;

/** Registered-memory handle.  Opaque: the library encodes an id in it and
 *  never dereferences it, so a stale or foreign handle is detected. */
typedef struct hixl_mem_handle *hixl_mem_handle_t;

/** Asynchronous transfer request handle; opaque like hixl_mem_handle_t. */
typedef struct hixl_req *hixl_req_t;

/** One initialization option: a key of the option table (see hixl_info or
 *  hixl_config_print) and its value as a string. */
typedef struct hixl_option {
    const char *key;
    const char *value;
} hixl_option_t;

/** A memory region to register (hixl::MemDesc). */
typedef struct hixl_mem_desc {
    uintptr_t addr;
    size_t    len;
} hixl_mem_desc_t;

/** One piece of a transfer (hixl::TransferOpDesc).  [local_addr, +len) must
 *  lie inside one region registered with this engine, [remote_addr, +len)
 *  inside one region the remote engine registered.  A descriptor with len 0
 *  is accepted and moves nothing; its addresses are not checked. */
typedef struct hixl_transfer_op_desc {
    uintptr_t local_addr;
    uintptr_t remote_addr;
    size_t    len;
} hixl_transfer_op_desc_t;

/** A notify to send (hixl::NotifyDesc).  name is a NUL-terminated string of
 *  at most HIXL_NOTIFY_NAME_MAX bytes; msg is msg_len bytes (any content),
 *  at most the engine's hixl.MaxNotifySize. */
typedef struct hixl_notify_desc {
    const char *name;
    const void *msg;
    size_t      msg_len;
} hixl_notify_desc_t;

#define HIXL_NOTIFY_NAME_MAX 255
#define HIXL_ENGINE_NAME_MAX 127

/** A received notify, as returned by hixl_get_notifies(). */
typedef struct hixl_notify {
    const char *remote;   /**< local_engine name of the sender */
    const char *name;
    const void *msg;      /**< msg_len bytes, followed by a NUL not counted */
    size_t      msg_len;
} hixl_notify_t;

/** Fields of hixl_transfer_args_t that are set. */
enum {
    HIXL_TRANSFER_ARG_TIMEOUT = 1u << 0,
    HIXL_TRANSFER_ARG_NOTIFY  = 1u << 1
};

/** Optional arguments of hixl_transfer_async (hixl::TransferArgs).  Zero it,
 *  then set fields and their bits in field_mask. */
typedef struct hixl_transfer_args {
    uint64_t field_mask;
    /** Deadline for the whole transfer, in ms; after it the status call
     *  reports TIMEOUT.  Default: option hixl.TransferTimeoutMs. */
    int32_t  timeout_ms;
    /** A notify the remote receives (hixl_get_notifies) only after every byte
     *  of this transfer is visible in its memory.  The request completes once
     *  the remote has queued it. */
    hixl_notify_desc_t notify;
} hixl_transfer_args_t;

/* ---- Engine ------------------------------------------------------------ */

/**
 * Create an engine (hixl::Hixl::Initialize).
 *
 * local_engine: "ip:port" listens on exactly that address and can be
 * connected to; "ip" alone (or port 0 given as "ip" without a port) is a
 * client-only engine.  IPv6 as "[addr]:port" or "addr".  "ip:0" listens on a
 * port the kernel picks; hixl_engine_name() then gives the full name.
 * The name must be unique among the engines that talk to each other.
 *
 * options: num_options key/value pairs from the option table; every key has
 * a HIXL_* environment twin.  Precedence: default < environment < options.
 * An unknown key or a bad value is PARAM_INVALID.
 */
HIXL_API hixl_status_t hixl_initialize(const char *local_engine,
                              const hixl_option_t *options, size_t num_options,
                              hixl_engine_t **engine_p);

/** Destroy an engine (hixl::Hixl::Finalize): disconnects every peer (their
 *  requests end FAILED), deregisters every region, frees everything. */
HIXL_API hixl_status_t hixl_finalize(hixl_engine_t *engine);

/** The engine's name as peers use it ("ip:port" with the real port). */
HIXL_API const char *hixl_engine_name(const hixl_engine_t *engine);

/* ---- Memory ------------------------------------------------------------ */

/**
 * Register a region (hixl::Hixl::RegisterMem).  HOST memory is mapped with
 * ucp_mem_map and its remote key packed once.  Regions may be registered
 * after connecting; connected peers learn of it before this call returns
 * when they are reachable, and a peer that has not yet learned of it asks
 * for it before refusing a descriptor.  Regions must not overlap.
 */
HIXL_API hixl_status_t hixl_register_mem(hixl_engine_t *engine,
                                const hixl_mem_desc_t *mem,
                                hixl_mem_type_t type,
                                hixl_mem_handle_t *handle_p);

/** Deregister a region (hixl::Hixl::DeregisterMem).  A handle already
 *  deregistered, or from another engine, is PARAM_INVALID. */
HIXL_API hixl_status_t hixl_deregister_mem(hixl_engine_t *engine,
                                  hixl_mem_handle_t handle);

/* ---- Connections -------------------------------------------------------- */

/**
 * Connect to a listening engine (hixl::Hixl::Connect) within timeout_ms.
 *
 * Direction: after hixl_connect(A, "B") succeeds, A may transfer to B (READ
 * and WRITE, into and out of B's registered memory), flush layers to B and
 * send notifies to B.  B sees A as a peer: it receives A's notifies and layer
 * signals and may send notifies back to A, but to transfer to A it must
 * connect to A itself (A must then be a listening engine).
 *
 * Returns ALREADY_CONNECTED if this engine is already connected to remote,
 * TIMEOUT if no answer came in time, FAILED if the remote refused or is not
 * listening (the message says which).
 */
HIXL_API hixl_status_t hixl_connect(hixl_engine_t *engine, const char *remote_engine,
                           int32_t timeout_ms);

/** Disconnect (hixl::Hixl::Disconnect): waits up to timeout_ms for the
 *  transfers in flight to the remote, then closes; those still in flight end
 *  FAILED.  NOT_CONNECTED if there is no connection to remote. */
HIXL_API hixl_status_t hixl_disconnect(hixl_engine_t *engine, const char *remote_engine,
                              int32_t timeout_ms);

/* ---- Transfers ---------------------------------------------------------- */

/**
 * Transfer and wait (hixl::Hixl::TransferSync).  Every descriptor is checked
 * before anything is posted; a bad one is PARAM_INVALID naming its index.
 * Returns SUCCESS once every byte is visible at the destination (remote
 * memory for WRITE, local for READ); TIMEOUT after timeout_ms.  After a
 * TIMEOUT the buffers may still be in use by the transport until the peer is
 * disconnected.
 */
HIXL_API hixl_status_t hixl_transfer_sync(hixl_engine_t *engine, const char *remote_engine,
                                 hixl_transfer_op_t op,
                                 const hixl_transfer_op_desc_t *descs,
                                 size_t num_descs, int32_t timeout_ms);

/** Post a transfer (hixl::Hixl::TransferAsync); args may be NULL.  Poll it
 *  with hixl_get_transfer_status(). */
HIXL_API hixl_status_t hixl_transfer_async(hixl_engine_t *engine, const char *remote_engine,
                                  hixl_transfer_op_t op,
                                  const hixl_transfer_op_desc_t *descs,
                                  size_t num_descs,
                                  const hixl_transfer_args_t *args,
                                  hixl_req_t *req_p);

/**
 * Query a request (hixl::Hixl::GetTransferStatus).  A request reported
 * COMPLETED, FAILED or TIMEOUT is released by that call; the handle is then
 * invalid (PARAM_INVALID if used again).  The reason of a FAILED or TIMEOUT is
 * in hixl_last_error().  Drives progress when the engine has no progress
 * thread.
 */
HIXL_API hixl_status_t hixl_get_transfer_status(hixl_engine_t *engine, hixl_req_t req,
                                       hixl_transfer_status_t *status_p);

/* ---- Notifies ----------------------------------------------------------- */

/** Send a notify to a connected peer (hixl::Hixl::SendNotify).  Notifies
 *  from one engine to another arrive in order.  Returns once the remote
 *  has queued it; RESOURCE_EXHAUSTED if the remote's queue is full,
 *  PARAM_INVALID if it is larger than hixl.MaxNotifySize. */
HIXL_API hixl_status_t hixl_send_notify(hixl_engine_t *engine, const char *remote_engine,
                               const hixl_notify_desc_t *notify,
                               int32_t timeout_ms);

/** Take every notify received so far (hixl::Hixl::GetNotifies), oldest
 *  first.  *notifies_p is NULL when *count_p is 0; otherwise release it with
 *  hixl_release_notifies(). */
HIXL_API hixl_status_t hixl_get_notifies(hixl_engine_t *engine,
                                hixl_notify_t **notifies_p, size_t *count_p);

HIXL_API void hixl_release_notifies(hixl_notify_t *notifies, size_t count);

/* ---- Diagnostics -------------------------------------------------------- */

/** Name of a status ("HIXL_TIMEOUT"); "HIXL_UNKNOWN_STATUS" for others. */
HIXL_API const char *hixl_strerror(hixl_status_t status);

/** Message of the last failed call made by this thread ("" if none). */
HIXL_API const char *hixl_last_error(void);

/** Library version string, e.g. "0.1.0". */
HIXL_API const char *hixl_version(void);

/** Print the option table: every key, its environment variable, the value
 *  it would have for an engine given these options, where that value comes
 *  from (default, environment, option) and what it means. */
HIXL_API hixl_status_t hixl_config_print(FILE *stream, const hixl_option_t *options,
                                size_t num_options);

#ifdef __cplusplus
}
#endif

#endif /* HIXL_HIXL_H_ */
