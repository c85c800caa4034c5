/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhixl-ucx: the hixl "verbs" as articles about hixl teach them.
 *
 * Five verbs carry a whole one-sided program:
 *
 *   HixlMemReg          register a local region, get a memory-region handle
 *   HixlExchangeMrInfo  swap memory-region tables with the peers, once, at
 *                       start-up; this fixes what a rank is (below)
 *   HixlRdmaWrite       write a local buffer into a peer's region, blocking
 *   HixlRdmaWriteAsync  the same, queued on a stream and not waited for
 *   HixlFlush           return when everything written to a peer's region
 *                       is visible in that peer's memory
 *
 * plus what a program needs around them (a context, streams, allocation,
 * deregistration, queries).  Every verb is a thin wrapper over the core API
 * of <hixl/hixl.h>: a context owns (or borrows) one hixl_engine_t, a write is
 * hixl_transfer_sync / hixl_transfer_async of one WRITE descriptor, the
 * exchange is hixl_connect plus a notify carrying the region table.  There is
 * no second data path; HixlGetEngine() gives the engine for everything else
 * (reads, notifies, layer flush).
 *
 * Ranks.  A rank is an index into the list of engine names given to
 * HixlExchangeMrInfo: rank r is names[r].  Give every process the same list
 * (one entry per process, this one included) and ranks mean the same thing
 * everywhere, as in an MPI-style world; the entry equal to this engine's own
 * name (hixl_engine_name) is this process' rank and is never written to.  A
 * process may also pass only its peers; ranks are then local to it.  Ranks
 * are fixed by the exchange and never change; a context exchanges once.
 *
 * Regions.  The regions of a context are numbered in the order HixlMemReg /
 * HixlMemAlloc made them (0, 1, 2, ...); a writer names a peer's region by
 * (rank, that number) and a byte offset in it.  The exchange sends each peer
 * the regions registered so far; a region registered later is not known to
 * the peers through the verbs.  A process whose memory peers write into
 * should get it from HixlMemAlloc (hixl_alloc_mem): on one host UCX then
 * moves it through shared memory, several times faster than registered
 * malloc memory (which works too).
 *
 * Connections.  An engine that listens ("ip:port", or "ip:0" with option
 * hixl.ListenEphemeral=1) can be written to; the exchange connects this
 * engine to every listening peer (retrying until the timeout while the peer
 * comes up), and a client-only peer ("ip") connects to this one instead.
 * Two client-only engines cannot exchange.  Writes go only to ranks this
 * engine connected to, i.e. listening peers.
 *
 * Errors.  Every verb returns a HixlResult (hixl_status_t: HIXL_SUCCESS 0,
 * HIXL_PARAM_INVALID 103900, ...); hixl_last_error() says what was wrong.
 *
 * Threading.  Every call is safe from any thread, and a stream may be
 * shared between threads, except that HixlFinalize must not run
 * concurrently with other calls on the context, nor HixlStreamDestroy with
 * other calls on that stream.
 */
#ifndef HIXL_HIXL_VERBS_H_
#define HIXL_HIXL_VERBS_H_

#include <hixl/hixl.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Result of a verb: a hixl_status_t with hixl's numbers. */
typedef hixl_status_t HixlResult;

/** A verbs context: one engine, its regions, its ranks, its streams. */
typedef struct hixl_verbs_ctx *HixlContext;

/** A local memory region (what HixlMemReg returns). */
typedef struct hixl_verbs_mr *HixlMrHandle;

/** A queue of asynchronous writes (what HixlRdmaWriteAsync is bound to). */
typedef struct hixl_verbs_stream *HixlStream;

/** Message name the exchange uses for its notifies; notifies with other
 *  names that arrive during HixlExchangeMrInfo are discarded. */
#define HIXL_VERBS_MR_NOTIFY "hixl.verbs.mr"

/** Rank value meaning "not a rank" (HixlGetRank of a process whose own name
 *  is not in the exchanged list). */
#define HIXL_VERBS_NO_RANK UINT32_MAX

/** Timeout of blocking verbs (HixlRdmaWrite, HixlFlush, stream waits) until
 *  HixlSetTimeout changes it, in ms. */
#define HIXL_VERBS_DEFAULT_TIMEOUT_MS 30000

/* ---- Context ------------------------------------------------------------ */

/**
 * Create a context and its engine: hixl_initialize(local_engine, options).
 * To be written to, listen: "ip:port", or "ip:0" with hixl.ListenEphemeral=1
 * (HixlGetName then gives the real port).
 */
HIXL_API HixlResult HixlInit(const char *local_engine,
                             const hixl_option_t *options, size_t num_options,
                             HixlContext *ctx_p);

/** Create a context on an engine the caller made and keeps: HixlFinalize
 *  then leaves the engine alive (it deregisters the context's regions). */
HIXL_API HixlResult HixlInitWithEngine(hixl_engine_t *engine,
                                       HixlContext *ctx_p);

/** Destroy a context: waits (bounded by the timeout) for the writes still
 *  queued on its streams, destroys the streams, deregisters its regions, and
 *  finalizes the engine if HixlInit made it.  Returns the first error met,
 *  but always frees everything. */
HIXL_API HixlResult HixlFinalize(HixlContext ctx);

/** The engine under the context (for reads, notifies, layer flush). */
HIXL_API hixl_engine_t *HixlGetEngine(HixlContext ctx);

/** The engine's name as peers use it: what goes in the exchanged list. */
HIXL_API const char *HixlGetName(HixlContext ctx);

/** Timeout in ms of the blocking verbs (default
 *  HIXL_VERBS_DEFAULT_TIMEOUT_MS); > 0. */
HIXL_API HixlResult HixlSetTimeout(HixlContext ctx, int32_t timeout_ms);

/* ---- Memory regions ------------------------------------------------------ */

/**
 * Register [addr, addr + len) as host memory (hixl_register_mem) and return
 * its handle.  The region gets the next region number (HixlMrGetIndex).
 * Regions must not overlap.  Register before HixlExchangeMrInfo for peers
 * to be able to write into it.
 */
HIXL_API HixlResult HixlMemReg(HixlContext ctx, void *addr, size_t len,
                               HixlMrHandle *mr_p);

/** Allocate and register len bytes (hixl_alloc_mem): the memory to give
 *  peers to write into.  *addr_p is where it starts; HixlMemDereg frees
 *  it. */
HIXL_API HixlResult HixlMemAlloc(HixlContext ctx, size_t len, void **addr_p,
                                 HixlMrHandle *mr_p);

/** Deregister a region (and free it if HixlMemAlloc made it).  Its number
 *  is not reused; peers that still write into it get errors. */
HIXL_API HixlResult HixlMemDereg(HixlContext ctx, HixlMrHandle mr);

/** The region's number: what a peer passes as remote_mr to write into it. */
HIXL_API uint32_t HixlMrGetIndex(HixlMrHandle mr);

/** Where the region starts in this process, and its length. */
HIXL_API void *HixlMrGetAddr(HixlMrHandle mr);
HIXL_API size_t HixlMrGetLen(HixlMrHandle mr);

/* ---- Exchange and ranks -------------------------------------------------- */

/**
 * Exchange memory-region information with every engine in names[0 ..
 * num_names - 1], once, at start-up; rank r is names[r] from then on.
 *
 * Each name is an engine's own name (HixlGetName / hixl_engine_name).  The
 * entry equal to this engine's name, if any, is this process' rank and is
 * skipped.  For every other rank the exchange connects to it if it listens
 * (retrying while it is not up yet), sends it this context's region table
 * (every region registered so far) and waits for the peer's table, all
 * within timeout_ms.  Every peer must call HixlExchangeMrInfo with a list
 * that contains this engine, within that time.
 *
 * TIMEOUT when some peer did not answer in time (the message names it),
 * PARAM_INVALID on a bad list (duplicates, two client-only engines, a
 * second exchange), or the failure of the connect or notify.
 */
HIXL_API HixlResult HixlExchangeMrInfo(HixlContext ctx,
                                       const char *const *names,
                                       uint32_t num_names, int32_t timeout_ms);

/** This process' rank (HIXL_VERBS_NO_RANK if its name was not in the list)
 *  and the number of ranks, after the exchange. */
HIXL_API HixlResult HixlGetRank(HixlContext ctx, uint32_t *rank_p,
                                uint32_t *num_ranks_p);

/** Where region remote_mr of rank starts in that peer's memory, and its
 *  length (0 for a region number the peer never had). */
HIXL_API HixlResult HixlGetRemoteMr(HixlContext ctx, uint32_t rank,
                                    uint32_t remote_mr, uint64_t *addr_p,
                                    uint64_t *len_p);

/* ---- Writes --------------------------------------------------------------- */

/**
 * Write len bytes from local_buf into region remote_mr of rank, at
 * remote_offset, and block until the write is locally complete: local_buf
 * may be reused.  (Over the core API this is hixl_transfer_sync, which waits
 * for remote visibility, a stronger condition; portable code still calls
 * HixlFlush before telling the peer the data is there.)
 *
 * [local_buf, +len) must lie inside one region registered with this
 * context; [remote_offset, +len) inside the peer's region.  PARAM_INVALID
 * otherwise, for an unknown rank or region, for this process' own rank, or
 * before the exchange.  TIMEOUT after the context's timeout.
 */
HIXL_API HixlResult HixlRdmaWrite(HixlContext ctx, uint32_t rank,
                                  uint32_t remote_mr, uint64_t remote_offset,
                                  const void *local_buf, size_t len);

/**
 * Post the same write on stream and return at once (hixl_transfer_async).
 * local_buf must not change until the write is complete: after
 * HixlStreamSynchronize(stream) or HixlFlush(rank, remote_mr) returned
 * SUCCESS.  A failure to post is returned here; a failure of the write
 * itself by the HixlStreamSynchronize / HixlFlush that observes it.
 */
HIXL_API HixlResult HixlRdmaWriteAsync(HixlContext ctx, uint32_t rank,
                                       uint32_t remote_mr,
                                       uint64_t remote_offset,
                                       const void *local_buf, size_t len,
                                       HixlStream stream);

/**
 * Return when every write this context made into region remote_mr of rank
 * (blocking, or queued on any stream before this call) is visible in the
 * peer's memory.  Writes to other regions or ranks are not waited for.
 * FAILED / TIMEOUT if one of those writes failed or timed out (the message
 * names it); TIMEOUT also when they are not done within the context's
 * timeout.
 */
HIXL_API HixlResult HixlFlush(HixlContext ctx, uint32_t rank,
                              uint32_t remote_mr);

/* ---- Streams ------------------------------------------------------------- */

/** Create a stream of the context. */
HIXL_API HixlResult HixlStreamCreate(HixlContext ctx, HixlStream *stream_p);

/** Wait until every write queued on the stream before this call is
 *  complete (visible at the peer), within the context's timeout.  Returns
 *  the first failure it observes; a failed write is reported once, by the
 *  HixlStreamSynchronize, HixlStreamQuery or HixlFlush that finds it. */
HIXL_API HixlResult HixlStreamSynchronize(HixlStream stream);

/** Non-blocking: *done_p is 1 when nothing is pending on the stream;
 *  the status is that of a write found failed, as for Synchronize. */
HIXL_API HixlResult HixlStreamQuery(HixlStream stream, int *done_p);

/** Synchronize, then destroy the stream. */
HIXL_API HixlResult HixlStreamDestroy(HixlStream stream);

#ifdef __cplusplus
}
#endif

#endif /* HIXL_HIXL_VERBS_H_ */
