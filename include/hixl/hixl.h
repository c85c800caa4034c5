/* SPDX-License-Identifier: BSD-3-Clause */
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
 * on the same engine (the engine is gone when it returns) -- but for the
 * blocking waits (hixl_wait_transfers, hixl_wait_notifies, hixl_wait_layer):
 * finalize ends those other threads are in (they return FAILED, "engine ...
 * was finalized") and waits for them to leave before it frees anything.  A
 * wait that starts after hixl_finalize returned uses a freed engine, like
 * any other call.
 *
 * Errors: every call returns a hixl_status_t.  On failure the calling thread's
 * hixl_last_error() holds a readable message naming what was wrong (the
 * offending argument, descriptor index or peer); a successful call leaves
 * it as it was.
 *
 * Timeouts: a call with a timeout (its argument, or the option that sets
 * it: hixl.ConnectTimeoutMs for hixl_deregister_mem, hixl.TransferTimeoutMs
 * for transfers) has one deadline, taken when it is called; every wait
 * inside it (a connect, a memory-table refresh, a peer's answer, copies
 * made while posting) ends by that deadline, so waits never add up.  It
 * returns within the timeout plus the time the system takes to run the
 * calling and progress threads again (docs/reliability.md has what that
 * came to on a loaded 2-core host).  A transfer's deadline is checked when its status is
 * asked.
 * hixl_finalize is bounded by hixl.FinalizeTimeoutMs plus 1 s for UCX to
 * call back what the close cancelled.
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
 *  inside one region the remote engine registered.  Neither address may be
 *  0 (PARAM_INVALID, as in hixl); a descriptor with len 0 moves nothing and
 *  its addresses are not looked up. */
typedef struct hixl_transfer_op_desc {
    uintptr_t local_addr;
    uintptr_t remote_addr;
    size_t    len;
} hixl_transfer_op_desc_t;

/** A notify to send (hixl::NotifyDesc).  name is a NUL-terminated string of
 *  at most HIXL_NOTIFY_NAME_MAX bytes (hixl's limit); msg is msg_len bytes
 *  (any content), at most the engine's hixl.MaxNotifySize (default 64 KiB,
 *  hixl's 1024 bytes and more). */
typedef struct hixl_notify_desc {
    const char *name;
    const void *msg;
    size_t      msg_len;
} hixl_notify_desc_t;

#define HIXL_NOTIFY_NAME_MAX 1024
#define HIXL_ENGINE_NAME_MAX 127

/** A received notify, as returned by hixl_get_notifies(). */
typedef struct hixl_notify {
    const char *remote;   /**< local_engine name of the sender */
    const char *name;
    const void *msg;      /**< msg_len bytes, followed by a NUL not counted */
    size_t      msg_len;
} hixl_notify_t;

/** The name of the notify an engine with hixl.NotifyPeerEnded=1 queues
 *  when a connection ends: its remote is the engine the connection was
 *  with, its message "disconnected: ...", "gone: ...", "unreachable: ..."
 *  or "failed: ..." with the reason, as hixl_connections_closed_total
 *  counts it (disconnect, peer_death, peer_timeout, error). */
#define HIXL_NOTIFY_PEER_ENDED "hixl.peer_ended"

/** Fields of hixl_transfer_args_t that are set. */
enum {
    HIXL_TRANSFER_ARG_TIMEOUT   = 1u << 0,
    HIXL_TRANSFER_ARG_NOTIFY    = 1u << 1,
    HIXL_TRANSFER_ARG_USER_DATA = 1u << 2
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
    /** The application's value for the request (hixl::TransferArgs::
     *  user_data), returned with its status by
     *  hixl_get_all_transfer_status(). */
    const void *user_data;
} hixl_transfer_args_t;

/** A request's status, as hixl_get_all_transfer_status() reports it
 *  (hixl::TransferResult). */
typedef struct hixl_transfer_result {
    hixl_req_t             req;
    const void            *user_data;
    hixl_transfer_status_t status;
} hixl_transfer_result_t;

/** What hixl_wait_transfers waits for. */
typedef enum hixl_wait_mode {
    HIXL_WAIT_ALL = 0,   /**< every request ended */
    HIXL_WAIT_ANY = 1    /**< at least one ended */
} hixl_wait_mode_t;

/** State of a connection made by hixl_connect_async / hixl_disconnect_async,
 *  in hixl's order (hixl::AsyncConnectStatus). */
typedef enum hixl_async_connect_status {
    HIXL_ASYNC_NOT_CONNECT        = 0,
    HIXL_ASYNC_CONNECT_PENDING    = 1,
    HIXL_ASYNC_CONNECTING         = 2,
    HIXL_ASYNC_CONNECTED          = 3,
    HIXL_ASYNC_CONNECT_FAILED     = 4,
    HIXL_ASYNC_DISCONNECT_PENDING = 5,
    HIXL_ASYNC_DISCONNECTING      = 6
} hixl_async_connect_status_t;

/** One entry of hixl_get_all_async_connect_status(). */
typedef struct hixl_async_connect_entry {
    const char                 *remote;
    hixl_async_connect_status_t status;
} hixl_async_connect_entry_t;

/** Features hixl_get_capability() answers for (hixl::FeatureType). */
typedef enum hixl_feature {
    HIXL_FEATURE_AUTO_CONNECT       = 0,
    HIXL_FEATURE_CLIENT_SERVER_COMM = 1
} hixl_feature_t;

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
 * An unknown key or a bad value is PARAM_INVALID.  On failure *engine_p is
 * left as it was.
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
 * ucp_mem_map and its remote key packed once.  The same region (address,
 * length and type) registered again is SUCCESS with the same handle, as in
 * hixl; another region overlapping a registered one is PARAM_INVALID.  Regions may be registered
 * after connecting: connected peers are told at once, and a peer that has
 * not yet heard of it when it transfers into it asks before refusing the
 * descriptor, so a transfer that follows this call (by any channel) never
 * fails for not knowing the region.  Regions must not overlap.
 *
 * DEVICE memory is handed to the memory-type plugin that claims the
 * address (hixl_plugin_print lists them; Ascend HBM through the ACL
 * runtime); UNSUPPORTED, with the reason, when none does.  Peers on this
 * node reach it by IPC and one device copy; others through a host staging
 * pool (BufferPool), or with RDMA when hixl.DeviceNicReg registers it with
 * UCX.  See hixl.DevicePath.
 */
HIXL_API hixl_status_t hixl_register_mem(hixl_engine_t *engine,
                                const hixl_mem_desc_t *mem,
                                hixl_mem_type_t type,
                                hixl_mem_handle_t *handle_p);

/**
 * Allocate and register len bytes (an extension to hixl, whose users
 * allocate with aclrtMallocHost / aclrtMalloc before registering).  UCX
 * allocates the memory where its transports reach it best: on the same host,
 * puts and gets into memory allocated here go straight through shared memory,
 * while registered malloc'd memory is reached by UCX 1.13 only through
 * active-message emulation (several times slower).  Allocate the memory that
 * peers write into (the decode KV cache) here.  hixl_deregister_mem() frees
 * it.  RESOURCE_EXHAUSTED when UCX cannot allocate it.
 */
HIXL_API hixl_status_t hixl_alloc_mem(hixl_engine_t *engine, size_t len,
                                      hixl_mem_type_t type, void **addr_p,
                                      hixl_mem_handle_t *handle_p);

/**
 * Wait until the memory this engine allocated so far (hixl_alloc_mem, with
 * hixl.PrefaultMem auto or all) is warm: the engine writes every page of it
 * once in the background, without changing a byte, because where memory is
 * backed lazily (cloud VMs, containers) filled page tables alone leave the
 * first transfer into it several times slower than the second.  The same
 * wait covers the peers' memory mapped into this process so far (shared
 * memory on one host), whose page tables the engine fills in the
 * background as the peers announce it.  Warming a GiB takes seconds;
 * nothing has to wait for it, but a benchmark that measures the first
 * transfer should.  SUCCESS when nothing is being warmed or pre-faulted,
 * TIMEOUT when something still is after timeout_ms (-1: no limit).
 */
HIXL_API hixl_status_t hixl_mem_warm_wait(hixl_engine_t *engine,
                                          int32_t timeout_ms);

/**
 * Deregister a region (hixl::Hixl::DeregisterMem).  Connected peers are
 * told first and must confirm that nothing they posted into it is still in
 * flight; only then is it unmapped and SUCCESS returned, and the memory may
 * be freed.  A peer that does not confirm within hixl.ConnectTimeoutMs is
 * disconnected and the call returns TIMEOUT: the region is out of use but
 * still registered, so keep the memory and call again (it then succeeds).
 * A handle already deregistered, or from another engine, is PARAM_INVALID.
 */
HIXL_API hixl_status_t hixl_deregister_mem(hixl_engine_t *engine,
                                  hixl_mem_handle_t handle);

/* ---- Exported memory descriptions ---------------------------------------- */

/*
 * The owner of registered memory describes a set of its regions in opaque,
 * versioned bytes (the owner's engine name and each region's address,
 * length and memory type); it sends them to a peer by any channel (a
 * notify, its own RPC).  The peer imports them and addresses its transfers
 * by (region index, offset, length), which hixl_remote_mem_addr checks
 * against the region's bounds: a wrong offset is an error that names it,
 * never a write into the neighbouring tensor.  Raw remote addresses stay
 * accepted by every call; this only computes and checks them.
 */

/** A peer's imported memory description. */
typedef struct hixl_remote_mem hixl_remote_mem_t;

/**
 * Describe the regions behind handles[0..n) (registered with this engine,
 * in that order: region i of the importer is handles[i]).  buf NULL: *len_p
 * is set to the bytes needed and SUCCESS returned.  Otherwise buf holds
 * *len_p bytes: PARAM_INVALID (and *len_p set to the size needed) when it
 * is too small, else the description is written and *len_p set to its
 * length.  PARAM_INVALID names a handle that is not registered here.
 */
HIXL_API hixl_status_t hixl_export_mem(hixl_engine_t *engine,
                                       const hixl_mem_handle_t *handles,
                                       size_t n, void *buf, size_t *len_p);

/**
 * Decode a description made by hixl_export_mem (on any host).  The bytes
 * are checked as hostile input: wrong magic or format version, a truncated
 * or overlong buffer, counts beyond the bytes given, zero or wrapping
 * regions are PARAM_INVALID with the reason.  Free *rmem_p with
 * hixl_remote_mem_free.  Importing does not connect: transfers still go
 * to hixl_remote_mem_engine(*rmem_p) once connected.
 */
HIXL_API hixl_status_t hixl_import_mem(hixl_engine_t *engine, const void *buf,
                                       size_t len, hixl_remote_mem_t **rmem_p);

HIXL_API void hixl_remote_mem_free(hixl_remote_mem_t *rmem);

/** Number of regions in the description (0 for NULL). */
HIXL_API size_t hixl_remote_mem_count(const hixl_remote_mem_t *rmem);

/** The owner's engine name, the remote_engine of transfers into it. */
HIXL_API const char *hixl_remote_mem_engine(const hixl_remote_mem_t *rmem);

/** Length and memory type of region `region` (either pointer may be NULL).
 *  PARAM_INVALID for an index beyond the count. */
HIXL_API hixl_status_t hixl_remote_mem_region(const hixl_remote_mem_t *rmem,
                                              size_t region, uint64_t *len_p,
                                              hixl_mem_type_t *type_p);

/** The remote address of [offset, +len) of region `region`, for a
 *  descriptor's remote_addr.  PARAM_INVALID, naming region, offset, length
 *  and the region's size, when the range does not lie inside the region
 *  (or the index is beyond the count). */
HIXL_API hixl_status_t hixl_remote_mem_addr(const hixl_remote_mem_t *rmem,
                                            size_t region, uint64_t offset,
                                            uint64_t len,
                                            uint64_t *remote_addr_p);

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
 * listening (the message says which).  A reconnect from the same engine
 * replaces its old connection at the remote (which closes it first, so
 * that nothing the old connection still carries can land); another engine
 * of the same name while the old one lives is refused with FAILED, and the
 * message says when to retry (hixl.PeerTimeoutMs after the old one's last
 * sign of life, if it is gone).
 */
HIXL_API hixl_status_t hixl_connect(hixl_engine_t *engine, const char *remote_engine,
                           int32_t timeout_ms);

/**
 * Connect in the background (hixl::Hixl::ConnectAsync): queued for the
 * engine's connect pool (hixl.ConnectPoolThreads threads, a queue of
 * hixl.ConnectPoolQueue operations: RESOURCE_EXHAUSTED when full), where it
 * runs as hixl_connect(remote, timeout_ms).  Operations on one remote run
 * in the order they were submitted; different remotes run at once.
 * hixl_get_async_connect_status() follows it: CONNECT_PENDING at once, then
 * CONNECTING, then CONNECTED (also when it was connected already) or
 * CONNECT_FAILED.  PARAM_INVALID for a bad name or timeout_ms <= 0.
 */
HIXL_API hixl_status_t hixl_connect_async(hixl_engine_t *engine,
                                          const char *remote_engine,
                                          int32_t timeout_ms);

/** Disconnect in the background (hixl::Hixl::DisconnectAsync), like
 *  hixl_connect_async: DISCONNECT_PENDING, DISCONNECTING, then the remote
 *  leaves the status table (NOT_CONNECT), whatever hixl_disconnect
 *  returned.  The status is always the latest submitted operation's. */
HIXL_API hixl_status_t hixl_disconnect_async(hixl_engine_t *engine,
                                             const char *remote_engine,
                                             int32_t timeout_ms);

/** The async status of remote; NOT_CONNECT for a remote the table does not
 *  hold.  Connections made with hixl_connect are not in the table. */
HIXL_API hixl_status_t hixl_get_async_connect_status(
        hixl_engine_t *engine, const char *remote_engine,
        hixl_async_connect_status_t *status_p);

/** Every entry of the table (none is NOT_CONNECT); *entries_p is NULL when
 *  *count_p is 0, else release it with hixl_release_async_connect_status. */
HIXL_API hixl_status_t hixl_get_all_async_connect_status(
        hixl_engine_t *engine, hixl_async_connect_entry_t **entries_p,
        size_t *count_p);

HIXL_API void hixl_release_async_connect_status(
        hixl_async_connect_entry_t *entries, size_t count);

/** Disconnect (hixl::Hixl::Disconnect): waits up to timeout_ms for the
 *  transfers in flight to the remote, then closes; those still in flight end
 *  FAILED.  Works from either side of a connection.
 *
 *  A connection that the other side ended (it disconnected, finalized or
 *  died) after this engine saw it up is still this application's to
 *  disconnect: that call returns SUCCESS, so an orderly shutdown does not
 *  depend on which side gets there first.  NOT_CONNECTED if there is no
 *  connection to remote, if it was already disconnected, or if it never
 *  came up (a failed connect). */
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
 * invalid (PARAM_INVALID if used again, and *status_p is then FAILED, as
 * in hixl, so that a loop that does not look at the return value ends).  The
 * reason of a FAILED or TIMEOUT is in hixl_last_error().  Drives progress
 * when the engine has no progress thread.
 */
HIXL_API hixl_status_t hixl_get_transfer_status(hixl_engine_t *engine, hixl_req_t req,
                                       hixl_transfer_status_t *status_p);

/**
 * The status of the engine's async requests, oldest first
 * (hixl::Hixl::GetTransferStatus(GetTransferStatusArgs, results)), each with
 * the user_data its hixl_transfer_args_t gave.  At most max_query_count
 * entries (the later requests are not looked at); with skip_waiting,
 * requests still WAITING are left out.  A request reported COMPLETED,
 * FAILED or TIMEOUT here is released, as by hixl_get_transfer_status.
 * *results_p is NULL when *count_p is 0, else release it with
 * hixl_release_transfer_results().
 */
HIXL_API hixl_status_t hixl_get_all_transfer_status(
        hixl_engine_t *engine, uint32_t max_query_count, int skip_waiting,
        hixl_transfer_result_t **results_p, size_t *count_p);

HIXL_API void hixl_release_transfer_results(hixl_transfer_result_t *results,
                                            size_t count);

/**
 * Block until the requests end (mode HIXL_WAIT_ALL) or at least one does
 * (HIXL_WAIT_ANY), or timeout_ms passes (0: look once without waiting;
 * -1: no deadline).  No polling: the thread sleeps until a completion (or,
 * without a progress thread, a UCX or socket event) wakes it.
 *
 * reqs: n distinct handles of async requests in flight on this engine
 * (PARAM_INVALID naming the first that is not, or one given twice;
 * nothing is reported then).  statuses (n, out): for each request, what
 * this call reported: COMPLETED, FAILED or TIMEOUT (its own deadline,
 * hixl_transfer_args_t.timeout_ms, passed), exactly as
 * hixl_get_transfer_status would have; or WAITING when it has not ended.
 * Like that call, this one releases every request it reports: a handle
 * whose status is not WAITING is invalid afterwards, whatever the return
 * value; those still WAITING stay valid and may be waited on again.  In
 * ANY mode every request found ended at that moment is reported, and
 * *first_done_p (may be NULL) is the lowest index reported (n if none).
 *
 * Returns SUCCESS when the condition was met -- the requests' outcomes are
 * in statuses, and hixl_last_error() holds the reason of the last one
 * reported FAILED or TIMEOUT; TIMEOUT when timeout_ms passed first; FAILED
 * when hixl_finalize ran meanwhile (from another thread).  A peer that dies
 * ends its requests FAILED within hixl.PeerTimeoutMs (at once when its
 * process's sockets close), so a wait on them never hangs.  Do not query
 * these requests from another thread while they are waited on.
 */
HIXL_API hixl_status_t hixl_wait_transfers(hixl_engine_t *engine,
                                           const hixl_req_t *reqs, size_t n,
                                           hixl_wait_mode_t mode,
                                           int32_t timeout_ms,
                                           hixl_transfer_status_t *statuses,
                                           size_t *first_done_p);

/* ---- Transfers by block table ------------------------------------------- */

/**
 * A paged KV cache moves as blocks: prepare each side's block layout once,
 * then move a request as two arrays of block ids, one call however many
 * blocks (NIXL's prepared descriptor lists, in hixl's terms).  Block i of
 * a layout starts at base + offsets[i], or at base + i * stride when
 * offsets is NULL (stride 0: block_size, the blocks back to back); every
 * block is block_size bytes and must lie inside one region its engine
 * registered.
 */
typedef struct hixl_block_layout {
    uint64_t        base;
    uint64_t        block_size;
    uint64_t        num_blocks;   /**< at most 2^32 */
    uint64_t        stride;
    const uint64_t *offsets;      /**< num_blocks offsets, or NULL */
} hixl_block_layout_t;

/** A prepared block layout (hixl_blocks_prepare). */
typedef struct hixl_blocks *hixl_blocks_t;

/** Prepare a layout of this engine's registered memory (remote_engine
 *  NULL) or of memory remote_engine registered (connected to it, after it
 *  registered): every block is checked now, PARAM_INVALID naming the first
 *  one outside a registered region.  The layout's offsets are copied.
 *  Release with hixl_blocks_release before hixl_finalize. */
HIXL_API hixl_status_t hixl_blocks_prepare(hixl_engine_t *engine,
                                           const char *remote_engine,
                                           const hixl_block_layout_t *layout,
                                           hixl_blocks_t *blocks_p);

/** Release prepared blocks; transfers posted with them are not affected. */
HIXL_API hixl_status_t hixl_blocks_release(hixl_engine_t *engine,
                                           hixl_blocks_t blocks);

/** Post a transfer of count blocks: local block local_ids[k] and remote
 *  block remote_ids[k], for each k, as hixl_transfer_async would move
 *  descriptors of the two blocks' addresses and block_size (the two
 *  layouts' block sizes must be equal).  local was prepared with no remote
 *  engine, remote with remote_engine; an id not below its layout's
 *  num_blocks is PARAM_INVALID naming its position.  Regions are checked
 *  again as for any transfer, so a block whose region was deregistered
 *  since it was prepared is refused, never written.  args may be NULL. */
HIXL_API hixl_status_t hixl_transfer_blocks_async(
    hixl_engine_t *engine, const char *remote_engine, hixl_transfer_op_t op,
    hixl_blocks_t local, const uint32_t *local_ids, hixl_blocks_t remote,
    const uint32_t *remote_ids, size_t count,
    const hixl_transfer_args_t *args, hixl_req_t *req_p);

/* ---- Layer-granular flush ----------------------------------------------- */

/*
 * Layer signals let a decode engine start on layer 0 of a KV cache while
 * later layers are still in flight:
 *
 *   prefill:  for L in layers: post the writes of layer L to D;
 *                              hixl_flush_layer(P, D, stream, gen, L);
 *   decode:   for L in layers: hixl_wait_layer(D, P, stream, gen, L, ...);
 *                              compute on layer L;
 *
 * Contract: when decode observes (stream, gen, layer) from prefill, every
 * write prefill posted to decode before that hixl_flush_layer call is
 * visible in decode's memory.
 *
 * Streams are ids chosen by the application (a request slot, say), from 0
 * to the decode engine's hixl.MaxStreams - 1; layers from 0 to its
 * hixl.MaxLayers - 1.  The generation tells uses of a stream apart: give each
 * use a larger generation than the last (a request id, a counter).  A signal
 * of a newer generation supersedes the older one, whose waiters get FAILED;
 * signals of an older generation are dropped.  No reset call is needed and
 * none can race.
 */

/** Prefill side: declare that layer `layer` of (stream, generation) has
 *  been fully posted to remote_engine.  Non-blocking: the signal follows once
 *  UCX has flushed everything posted to remote_engine before this call.
 *  PARAM_INVALID when stream or layer is beyond what remote_engine accepts,
 *  or generation is older than one already flushed on that stream. */
HIXL_API hixl_status_t hixl_flush_layer(hixl_engine_t *engine,
                                        const char *remote_engine,
                                        uint32_t stream, uint64_t generation,
                                        uint32_t layer);

/** Decode side: wait until source_engine has flushed (stream, generation,
 *  layer) to this engine.  SUCCESS when it has; TIMEOUT after timeout_ms;
 *  FAILED when a newer generation superseded this one or the source's
 *  connection closed.  The source need not be connected yet when the wait
 *  starts.  With the progress thread on, this reads the signal table and
 *  needs no other call. */
HIXL_API hixl_status_t hixl_wait_layer(hixl_engine_t *engine,
                                       const char *source_engine,
                                       uint32_t stream, uint64_t generation,
                                       uint32_t layer, int32_t timeout_ms);

/** Decode side, non-blocking: *ready_p is 1 when (stream, generation, layer)
 *  is visible, else 0.  FAILED as for hixl_wait_layer. */
HIXL_API hixl_status_t hixl_test_layer(hixl_engine_t *engine,
                                       const char *source_engine,
                                       uint32_t stream, uint64_t generation,
                                       uint32_t layer, int *ready_p);

/* ---- Notifies ----------------------------------------------------------- */

/** Send a notify to a connected peer (hixl::Hixl::SendNotify).  Notifies
 *  from one engine to another arrive in order.  Returns once the remote
 *  has queued it; RESOURCE_EXHAUSTED if the remote's queue is full,
 *  PARAM_INVALID if it is larger than hixl.MaxNotifySize, NOT_CONNECTED
 *  if there is no connection, FAILED (with the reason) if the connection
 *  ended before the remote queued it, TIMEOUT if no answer came within
 *  timeout_ms. */
HIXL_API hixl_status_t hixl_send_notify(hixl_engine_t *engine, const char *remote_engine,
                               const hixl_notify_desc_t *notify,
                               int32_t timeout_ms);

/** Take every notify received so far (hixl::Hixl::GetNotifies), oldest
 *  first.  *notifies_p is NULL when *count_p is 0; otherwise release it with
 *  hixl_release_notifies(). */
HIXL_API hixl_status_t hixl_get_notifies(hixl_engine_t *engine,
                                hixl_notify_t **notifies_p, size_t *count_p);

HIXL_API void hixl_release_notifies(hixl_notify_t *notifies, size_t count);

/** hixl_get_notifies that blocks until at least one notify is queued, or
 *  timeout_ms passes (0: look once; -1: no deadline): then TIMEOUT with
 *  *count_p 0 and *notifies_p NULL.  FAILED when hixl_finalize ran
 *  meanwhile.  Release what it returns with hixl_release_notifies(). */
HIXL_API hixl_status_t hixl_wait_notifies(hixl_engine_t *engine,
                                          int32_t timeout_ms,
                                          hixl_notify_t **notifies_p,
                                          size_t *count_p);

/* ---- Progress ----------------------------------------------------------- */

/** Drive the engine once: UCX progress and the control connections.  Only
 *  needed with hixl.ProgressThread=0, by an engine that waits for peers
 *  without calling anything else (a passive target over tcp, a listener
 *  accepting connects); every other call progresses by itself.  Returns the
 *  number of events handled.  Called in a loop beside a progress thread,
 *  it progresses while that thread sleeps and yields the CPU to it while it
 *  is awake (then it returns 0). */
HIXL_API unsigned hixl_engine_progress(hixl_engine_t *engine);

/* ---- Events (epoll, asyncio) -------------------------------------------- */

/*
 * For an application that waits in epoll (or asyncio's loop.add_reader)
 * beside other work, in UCX's ucp_worker_get_efd / ucp_worker_arm model:
 *
 *   hixl_get_event_fd(engine, &fd);  add fd to the epoll set (EPOLLIN)
 *   loop:  look: hixl_get_transfer_status / hixl_get_notifies /
 *                hixl_test_layer on what you wait for;
 *          hixl_arm(engine, &armed); if (!armed) go back and look;
 *          epoll_wait(...);           fd readable: go back and look
 *
 * Events: an async request ended (COMPLETED or FAILED), a notify was
 * queued, a layer signal landed or a layer source's connection ended.  A
 * request passing its own deadline is not an event: look at the earliest
 * deadline yourself (an epoll timeout).  Works with and without the
 * progress thread, over every transport.
 */

/** The engine's event fd (one per engine, the same on every call; the
 *  library owns it and closes it in hixl_finalize: take it out of your
 *  epoll set first).  It is armed when first returned, so the first event
 *  after this call makes it readable; events before it are not signalled
 *  (look after taking the fd).  Without a progress thread it also becomes
 *  readable for UCX and control traffic, which the next hixl_arm
 *  progresses: a wake-up may then carry none of your events. */
HIXL_API hixl_status_t hixl_get_event_fd(hixl_engine_t *engine, int *fd_p);

/** Clear the event fd and arm it.  *armed_p 1: the fd becomes readable at
 *  the next event, sleep on it.  *armed_p 0: events happened since the
 *  previous hixl_arm (they may be ones you already saw) or, without a
 *  progress thread, the engine had work it has just progressed: look at
 *  your requests, notifies and layers again, then arm again (ucp_worker_arm
 *  answers UCS_ERR_BUSY there).  Without a progress thread this call is
 *  what progresses the engine between sleeps. */
HIXL_API hixl_status_t hixl_arm(hixl_engine_t *engine, int *armed_p);

/* ---- Metrics ------------------------------------------------------------ */

/*
 * What an engine counts while it runs, always on and cheap (a few relaxed
 * atomic additions per transfer, on counters kept per thread and summed
 * when read): transfers and bytes by operation, data path and outcome,
 * latency histograms, connections by how they began and ended, notifies,
 * registered memory, requests in flight, progress wake-ups.  Read them as
 * a struct (hixl_get_stats), as Prometheus text (hixl_metrics_text), or
 * over HTTP from an engine started with hixl.MetricsListen=HOST:PORT
 * (/metrics and /healthz).  docs/metrics.md lists every figure and what a
 * rising one tells an operator.
 *
 * Counters only grow for the engine's life; gauges (open connections,
 * regions, requests in flight) are read when asked.  A transfer is counted
 * once, when its outcome is known to the application: COMPLETED or FAILED
 * when a status call reports it, TIMEOUT when one reports that; a transfer
 * whose descriptors went by several paths counts once on each, with that
 * path's bytes.
 */

#define HIXL_STATS_VERSION  1
#define HIXL_STATS_OPS      2   /**< indexed by hixl_transfer_op_t */
#define HIXL_STATS_PATHS    6   /**< indexed by hixl_stats_path_t */
#define HIXL_STATS_OUTCOMES 3   /**< indexed by hixl_stats_outcome_t */
#define HIXL_STATS_BUCKETS  23  /**< histogram buckets, +Inf last */

/** The ways a transfer's bytes move (docs/contributing.md, "Add a data
 *  path"): UCX puts and gets, the library's messages, same-host kernel
 *  copies, memcpy into memory UCX maps, device copies, host staging. */
typedef enum hixl_stats_path {
    HIXL_STATS_PATH_RMA     = 0,
    HIXL_STATS_PATH_AM      = 1,
    HIXL_STATS_PATH_CMA     = 2,
    HIXL_STATS_PATH_MAP     = 3,
    HIXL_STATS_PATH_IPC     = 4,
    HIXL_STATS_PATH_STAGING = 5
} hixl_stats_path_t;

/** How a transfer ended, as the application was told. */
typedef enum hixl_stats_outcome {
    HIXL_STATS_COMPLETED = 0,
    HIXL_STATS_FAILED    = 1,
    HIXL_STATS_TIMEOUT   = 2
} hixl_stats_outcome_t;

/** Why a listener refused a connection in its handshake. */
typedef enum hixl_stats_refused {
    HIXL_STATS_REFUSED_AUTHENTICATION = 0,   /**< no or wrong hixl.Secret */
    HIXL_STATS_REFUSED_VERSION        = 1,   /**< another protocol version */
    HIXL_STATS_REFUSED_DUPLICATE_NAME = 2,   /**< name held by a live peer */
    HIXL_STATS_REFUSED_ADMISSION      = 3,   /**< peer table full, or a
                                                  layer refused it */
    HIXL_STATS_REFUSED_INVALID        = 4,   /**< bad name or message */
    HIXL_STATS_REFUSED_COUNT          = 5
} hixl_stats_refused_t;

/** Why a listener dropped a connection before its handshake completed. */
typedef enum hixl_stats_evicted {
    HIXL_STATS_EVICTED_FULL    = 0,   /**< too many handshakes at once: the
                                           oldest made room */
    HIXL_STATS_EVICTED_TIMEOUT = 1,   /**< none within
                                           hixl.HandshakeTimeoutMs */
    HIXL_STATS_EVICTED_COUNT   = 2
} hixl_stats_evicted_t;

/** Why an established connection (either direction) closed. */
typedef enum hixl_stats_closed {
    HIXL_STATS_CLOSED_DISCONNECT   = 0,   /**< either side ended it and
                                               said so (hixl_disconnect,
                                               finalize) */
    HIXL_STATS_CLOSED_PEER_TIMEOUT = 1,   /**< silent for
                                               hixl.PeerTimeoutMs */
    HIXL_STATS_CLOSED_PEER_DEATH   = 2,   /**< its process ended without a
                                               word (socket closed or reset) */
    HIXL_STATS_CLOSED_ERROR        = 3,   /**< a transport or protocol
                                               error */
    HIXL_STATS_CLOSED_COUNT        = 4
} hixl_stats_closed_t;

/** Why a received notify was not queued. */
typedef enum hixl_stats_dropped {
    HIXL_STATS_DROPPED_QUEUE_FULL = 0,   /**< hixl.NotifyQueueDepth */
    HIXL_STATS_DROPPED_TOO_LARGE  = 1,   /**< hixl.MaxNotifySize */
    HIXL_STATS_DROPPED_COUNT      = 2
} hixl_stats_dropped_t;

/** A latency histogram.  bucket[i] counts the values in (le_ns[i-1],
 *  le_ns[i]] (not cumulative); le_ns[HIXL_STATS_BUCKETS - 1] is
 *  UINT64_MAX, the +Inf bucket. */
typedef struct hixl_stats_histogram {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t bucket[HIXL_STATS_BUCKETS];
    uint64_t le_ns[HIXL_STATS_BUCKETS];
} hixl_stats_histogram_t;

/** An engine's figures.  The caller sets size to sizeof(hixl_stats_t) as
 *  its header declares it; the library fills that many bytes at most (a
 *  newer library than the caller's header adds fields only at the end),
 *  and sets size to what it filled. */
typedef struct hixl_stats {
    size_t   size;        /**< in: the caller's sizeof; out: bytes filled */
    uint32_t version;     /**< out: HIXL_STATS_VERSION */
    uint32_t reserved;
    uint64_t uptime_ns;   /**< since hixl_initialize */
    /** transfers and their bytes by [op][path][outcome] */
    uint64_t transfers[HIXL_STATS_OPS][HIXL_STATS_PATHS][HIXL_STATS_OUTCOMES];
    uint64_t bytes[HIXL_STATS_OPS][HIXL_STATS_PATHS][HIXL_STATS_OUTCOMES];
    /** post to completion of COMPLETED transfers, by op: one transfer in
     *  8 that a thread posts is timed (its first included; two clock
     *  reads cost more than the rest of the counting) */
    hixl_stats_histogram_t latency[HIXL_STATS_OPS];
    /** prefill side: hixl_flush_layer to its signal sent (every byte before
     *  it landed) */
    hixl_stats_histogram_t layer_signal;
    uint64_t layer_signals_sent;
    uint64_t layer_signals_received;
    uint64_t conn_open;            /**< gauge: established now */
    uint64_t conn_connected;       /**< outgoing handshakes completed */
    uint64_t conn_connect_failed;  /**< outgoing ones that did not */
    uint64_t conn_accepted;        /**< incoming handshakes completed */
    uint64_t conn_refused[HIXL_STATS_REFUSED_COUNT];
    uint64_t conn_evicted[HIXL_STATS_EVICTED_COUNT];
    uint64_t conn_closed[HIXL_STATS_CLOSED_COUNT];
    uint64_t notifies_sent;
    uint64_t notifies_received;    /**< queued here */
    uint64_t notifies_dropped[HIXL_STATS_DROPPED_COUNT];
    uint64_t regions;              /**< gauge: registered regions */
    uint64_t region_bytes;         /**< gauge: their bytes */
    uint64_t requests_in_flight;   /**< gauge: posted, not yet ended */
    uint64_t progress_wakeups;     /**< the progress thread's sleeps ended */
} hixl_stats_t;

/** Read the engine's figures into *stats (set stats->size first).
 *  PARAM_INVALID for a NULL argument or a size smaller than the fields up
 *  to and including uptime_ns. */
HIXL_API hixl_status_t hixl_get_stats(hixl_engine_t *engine,
                                      hixl_stats_t *stats);

/** Write the engine's figures in Prometheus's text exposition format
 *  (version 0.0.4) into buf, at most len bytes with the terminating NUL
 *  (nothing when buf is NULL or len 0), like snprintf.  Returns the length
 *  the whole text needs, without the NUL: call again with a larger buffer
 *  when it is not below len.  0 with the last error set for a NULL
 *  engine. */
HIXL_API size_t hixl_metrics_text(hixl_engine_t *engine, char *buf,
                                  size_t len);

/** Where the engine serves its metrics over HTTP (hixl.MetricsListen), as
 *  "host:port" with the port it bound (the one it took for port 0); "" when
 *  it serves none.  Valid while the engine lives. */
HIXL_API const char *hixl_metrics_address(const hixl_engine_t *engine);

/* ---- Diagnostics -------------------------------------------------------- */

/** Name of a status ("HIXL_TIMEOUT"); "HIXL_UNKNOWN_STATUS" for others. */
HIXL_API const char *hixl_strerror(hixl_status_t status);

/** Message of the last failed call made by this thread ("" if none). */
HIXL_API const char *hixl_last_error(void);

/** Receives the library's log lines instead of stderr: level 0 error,
 *  1 warn, 2 info, 3 debug, 4 trace; file and line of the library source
 *  that logged; msg without a trailing newline.  Called from any thread
 *  (engines' progress threads included), one call at a time; it must not
 *  call into the library. */
typedef void (*hixl_log_fn_t)(int level, const char *file, int line,
                              const char *msg, void *arg);

/** Send every log line of the process's engines to fn (NULL: back to
 *  stderr).  Which lines are logged is still hixl.LogLevel's business: the
 *  threshold is the most verbose level of the engines alive. */
HIXL_API hixl_status_t hixl_set_log_handler(hixl_log_fn_t fn, void *arg);

/** Whether a feature is supported (hixl::Hixl::GetCapability): *value_p
 *  1 or 0 (0 for a feature this library does not know).  PARAM_INVALID for
 *  a negative feature.  Needs no engine. */
HIXL_API hixl_status_t hixl_get_capability(int32_t feature, int32_t *value_p);

/** Library version string, e.g. "0.1.0". */
HIXL_API const char *hixl_version(void);

/** A behaviour of UCX that the library works around, and whether an engine
 *  created now takes the workaround (docs/ucx-versions.md tells each one's
 *  story).  The strings are the library's, valid until the next call of
 *  hixl_ucx_workarounds by the same thread. */
typedef struct hixl_ucx_workaround {
    const char *name;        /**< short name, e.g. "tcp-seg-size" */
    const char *behaviour;   /**< the UCX behaviour, one line */
    const char *action;      /**< what the library does about it */
    int         in_force;    /**< 1: an engine created now takes it */
    const char *why_not;     /**< when not in force, why; else "" */
} hixl_ucx_workaround_t;

/** The UCX workarounds, as the environment (UCX_* settings, UCX_TLS,
 *  HIXL_DATA_PATH) and the UCX this process runs with decide them: writes
 *  up to max entries into out (nothing when out is NULL) and returns how
 *  many there are.  Needs no engine. */
HIXL_API size_t hixl_ucx_workarounds(hixl_ucx_workaround_t *out,
                                     size_t max);

/** Print the option table: every key, its environment variable, the value
 *  it would have for an engine given these options, where that value comes
 *  from (default, environment, option) and what it means. */
HIXL_API hixl_status_t hixl_config_print(FILE *stream, const hixl_option_t *options,
                                size_t num_options);

/** Print the memory-type plugins an engine given these options would load
 *  (hixl.PluginDir, then the installation's plugin directory): each one's
 *  name and file, and whether it found its device runtime (hixl.PluginRuntime)
 *  or why it is not used.  Device memory (HIXL_MEM_DEVICE) can be
 *  registered only through a plugin whose runtime was found. */
HIXL_API hixl_status_t hixl_plugin_print(FILE *stream,
                                         const hixl_option_t *options,
                                         size_t num_options);

#ifdef __cplusplus
}
#endif

#endif /* HIXL_HIXL_H_ */

/* C++ code written against CANN hixl includes <hixl/hixl.h> and expects the
 * class hixl::Hixl: give it the header-only one (HIXL_NO_CXX_API: C only).
 * Outside the include guard, so that a header that took only the C API
 * first (hixl_types.h, cs/hixl_cs.h) does not keep a later #include
 * <hixl/hixl.h> from giving the class; hixl.hpp has its own guard. */
#if defined(__cplusplus) && !defined(HIXL_NO_CXX_API)
#include <hixl/hixl.hpp>
#endif
