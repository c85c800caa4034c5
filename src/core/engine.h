/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine object: what every layer shares (identity, options, the UCX
 * context and worker, the engine lock, progress, requests, peers, local
 * regions).  Its fields are the state of core's rooms, bottom up worker/
 * (UCX and progress), am/ (the active-message transport), peer/ (peers,
 * endpoints and their end) and xfer/ (requests, regions, the WRITE/READ
 * protocol); each room includes this header, and calls only its own room
 * and those below (docs/layout.md).  Layers above keep their engine-level
 * state behind their own pointer at the end (core never looks inside) and
 * plug into core through registration: progress callbacks and socket
 * handlers (worker/progress.h), peer hooks (peer/peer.h), and the few
 * functions injected below.
 *
 * Locking (the order is engine->lock, then the device lock, then UCX's
 * worker lock):
 *  - engine->lock guards the peer table, the region table and every
 *    module's engine- and peer-level state.  API calls take it once per
 *    call (never per descriptor); control messages are handled under it.
 *  - UCX callbacks (completion of a flush, endpoint error) run inside
 *    ucp_worker_progress() with UCX's lock held and therefore never take
 *    engine->lock: they touch only atomics, requests, and a peer's control
 *    connection (which has its own send lock).
 */
#ifndef HIXL_CORE_ENGINE_H_
#define HIXL_CORE_ENGINE_H_

#include "core/peer/channel.h"
#include "core/xfer/mem_table.h"
#include "core/peer/peer.h"
#include "core/worker/progress.h"
#include "core/xfer/request.h"
#include "core/peer/rtable.h"
#include "core/peer/inbound.h"
#include "core/peer/ep_close.h"
#include "core/worker/events.h"
#include "core/worker/metrics.h"
#include "util/engine_name.h"
#include "util/options.h"

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ucp/api/ucp.h>

struct hixl_engine {
    uint16_t           serial;        /* tags handles (util/handle.h) */
    char               host_id[64];   /* same value <=> same host */
    hixl_name_t        name;
    int                listening;
    /* A listening engine's socket, bound before UCX starts so that none of
     * UCX's own sockets (bound to ephemeral ports) can take the port the
     * engine is named by; ctrl takes it over to accept (-1 after that). */
    int                name_fd;
    hixl_opts_t        opts;
    int                log_held;      /* its LogLevel counts (util/log.h) */

    ucp_context_h      ucp_context;
    /* Two workers, so that UCX never pairs an endpoint this engine creates
     * with one its peer created (core/peer/inbound.h): out makes every endpoint
     * this engine initiates; in, only when the engine listens, is what
     * connectors reach (its address goes in HELLO_ACK) and never creates
     * one itself. */
    ucp_worker_h       ucp_worker;      /* out */
    ucp_worker_h       ucp_worker_in;   /* in, or NULL */
    ucp_address_t     *worker_addr;     /* in's when listening, else out's */
    size_t             worker_addr_len;

    pthread_mutex_t    lock;
    pthread_cond_t     cond;          /* control state changed */

    hixl_progress_t    progress;
    hixl_events_t      events;        /* event fd, finalize gate */
    hixl_req_pool_t    reqs;
    hixl_peer_table_t  peers;
    hixl_mem_table_t   mem;
    /* what UCX callbacks and the library's message handlers look up
     * (channels, inbound connections, the region index): they may not take
     * engine->lock; writers hold both */
    pthread_rwlock_t   serve_lock;
    hixl_chan_table_t  chans;
    hixl_inbound_t     inbound;
    hixl_ep_closer_t   ep_closer;     /* endpoints closing (peer/ep_close.h) */
    struct hixl_am_pool *am;          /* core/am/am.c */
    struct hixl_am_data *am_data;     /* core/xfer/am_data.c */
    atomic_uint        cancelled;     /* transfers settled at peer close */
    hixl_metrics_t    *metrics;       /* counters (core/worker/metrics.h) */

    /* injected by device/: drop a remote device key's reference */
    hixl_remote_dev_put_fn_t remote_dev_put;

    /* the layers above, opaque here */
    struct hixl_ctrl      *ctrl;      /* ctrl/ */
    struct hixl_dev       *dev;       /* device/ */
    struct hixl_xfer      *xfer;      /* ops/transfer.c */
    struct hixl_workq     *prefaulter;    /* ops/mem_prefault.c */
    struct hixl_warming   *warming;   /* ops/mem_prefault.c */
    struct hixl_workq     *copier;    /* ops/copier.c */
    struct hixl_notifies  *notifies;  /* ops/notify.c */
    struct hixl_memory    *memory;    /* ops/memory.c */
    struct hixl_layers    *layers;    /* ops/layer_wait.c */
    struct hixl_async     *async;     /* ops/connect_async.c */
    struct hixl_blocks    *blocks;    /* ops/blocks.c: prepared layouts */
    struct hixl_metrics_http *metrics_http;   /* ops/metrics_http.c */
};

/*
 * Core of hixl_initialize: options (default < environment < options), the
 * name, the UCX context and worker, the epoll set, the request pool.  The
 * layers above set themselves up after it.  On failure everything is
 * released and the caller's last error says why.
 */
hixl_status_t hixl_engine_create(const char *local_engine,
                                 const hixl_option_t *options,
                                 size_t num_options, hixl_engine_t **engine_p);

/* Finalize, step by step (ops/engine_api.c orders the layers around them):
 *  drain    let what is in flight land, within hixl.FinalizeTimeoutMs;
 *  close    close every peer;
 *  worker   progress UCX until idle and destroy the worker (requests,
 *           peers and locks must outlive it: UCX completes cancelled
 *           operations there);
 *  free     the rest of core. */
void hixl_engine_drain(hixl_engine_t *engine);
void hixl_engine_close_peers(hixl_engine_t *engine);
void hixl_engine_destroy_worker(hixl_engine_t *engine);
void hixl_engine_free(hixl_engine_t *engine);

/* A wait for an endpoint flush of a peer, on the waiter's stack: start it,
 * then hixl_engine_wait(..., hixl_flush_wait_done, &fw).  If the wait ends
 * before the flush did, the caller must close the peer before its stack
 * frame goes (closing settles the waiter). */
typedef struct hixl_flush_wait {
    hixl_ep_flush_waiter_t w;
    atomic_int        done;
    ucs_status_t      status;
    hixl_engine_t    *engine;
} hixl_flush_wait_t;

/* Start a flush wait on peer's endpoint (engine->lock held). */
void hixl_flush_wait_start(hixl_engine_t *engine, hixl_peer_t *peer,
                           hixl_flush_wait_t *fw);

/* Its predicate for hixl_engine_wait. */
int hixl_flush_wait_done(void *fw);

#endif
