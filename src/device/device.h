/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device layer: memory owned by a memory-type plugin, registered,
 * described to peers, routed and moved.  This header is its engine level
 * (device.c: the plugin instances an engine opens, the units of device
 * work in flight, their progress, and the barriers that keep layer
 * signals and revoke answers behind them); the other parts have their own:
 *
 *   device_mem.h   local device regions (detect, export, composite key)
 *                  and remote ones (unpack, lazy IPC import, references)
 *   device_path.h  per-descriptor path choice and posting of device copies
 *   staging.h      the BufferPool staging pool and its pipeline
 *
 * Paths, chosen per descriptor (hixl.DevicePath=auto):
 *   IPC    remote device memory on this node: import it, one device copy
 *          (D2D, or H2D/D2H when the local side is host memory);
 *   UCX    both sides UCX-reachable (host memory, or device memory that
 *          was NIC-registered with ucp_mem_map): ucp_put_nbx/ucp_get_nbx;
 *   STAGE  local device memory to/from a remote UCX-reachable region:
 *          chunks copied through the registered staging pool, the device
 *          copy of one chunk overlapped with the UCX transfer of another.
 * Anything else is UNSUPPORTED, with the reason.
 *
 * Ordering: the device work of one transfer is a "unit"; the request holds
 * a pending (and data-pending) count for it until every device copy of the
 * unit has completed and every staged put has been flushed, so COMPLETED
 * and the per-transfer notify still mean "every byte is at the
 * destination".  Layer signals and revoke answers wait, through a barrier,
 * for the units posted to that peer before them.
 *
 * Locking: engine->lock, then dev->lock (recursive), then UCX.  Plugin
 * contexts are only called under dev->lock.  UCX callbacks take neither:
 * they set flags the progress pass reads.
 */
#ifndef HIXL_DEVICE_DEVICE_H_
#define HIXL_DEVICE_DEVICE_H_

#include "core/engine.h"
#include "device/dev_key.h"
#include "device/plugin.h"

#include <pthread.h>
#include <stdatomic.h>
#include <ucp/api/ucp.h>

/* An engine's instance of a loaded plugin. */
typedef struct hixl_dev_plugin {
    const hixl_plugin_t         *plugin;
    const hixl_mem_plugin_ops_t *ops;
    void                        *ctx;       /* NULL: unavailable */
    char                         why[256];  /* ... because */
} hixl_dev_plugin_t;

#define HIXL_UNIT_MARKS 16

/* Copies queued on one (plugin, device) stream by a unit. */
typedef struct hixl_dev_mark {
    hixl_dev_plugin_t *dp;
    int32_t            device;
    int                queued;   /* copies waiting for a mark */
    void              *token;    /* marked, not yet seen complete */
} hixl_dev_mark_t;

typedef struct hixl_stage_job hixl_stage_job_t;
typedef struct hixl_stage     hixl_stage_t;

/* The device work of one transfer. */
typedef struct hixl_dev_unit {
    struct hixl_dev_unit *next;
    uint64_t              seq;        /* posting order, engine-wide */
    hixl_request_t       *req;
    hixl_peer_t          *peer;       /* retained */
    hixl_dev_mark_t       marks[HIXL_UNIT_MARKS];
    unsigned              nmarks;
    struct hixl_remote_dev **remote_devs;   /* referenced while copies run */
    size_t                   num_remote_devs;
    size_t                   remote_devs_cap;
    hixl_stage_job_t     *job;        /* staged descriptors, or NULL */
    int                   submitted;
} hixl_dev_unit_t;

/* A wait for the units posted to a peer before some point; embedded in the
 * waiter's own record, so that waiting allocates nothing (it starts in UCX
 * callbacks). */
typedef struct hixl_dev_barrier {
    struct hixl_dev_barrier *next;
    hixl_peer_t             *peer;
    uint64_t                 seq;
    void                   (*fn)(void *arg);
    void                    *arg;
} hixl_dev_barrier_t;

typedef struct hixl_dev {
    pthread_mutex_t      lock;          /* recursive */
    hixl_dev_plugin_t   *plugins;
    size_t               nplugins;
    hixl_dev_unit_t     *units;         /* in posting order */
    hixl_dev_unit_t     *units_tail;
    atomic_uint          units_live;
    atomic_uint_fast64_t seq;           /* last unit sequence given */
    pthread_mutex_t      barrier_lock;  /* never held across other locks */
    hixl_dev_barrier_t  *barriers;
    atomic_uint          barriers_live;
    hixl_stage_t        *stage;         /* created on first staged copy */
} hixl_dev_t;

hixl_status_t hixl_dev_init(hixl_engine_t *engine);
/* Engine teardown: finish (or fail) every unit, then free everything. */
void hixl_dev_drain(hixl_engine_t *engine);
void hixl_dev_cleanup(hixl_engine_t *engine);
/* Advance device copies and staging (engine->lock NOT held); returns the
 * number of events handled. */
unsigned hixl_dev_progress(hixl_engine_t *engine);
/* Sequence of the last unit posted; a barrier taken with it waits for
 * that unit and every earlier one to the peer. */
uint64_t hixl_dev_seq(hixl_engine_t *engine);
/* Call fn(arg) once every unit to peer with sequence <= seq completed:
 * at once when none is in flight, else from a later progress pass (with
 * no lock held).  node is the caller's storage, untouched once fn runs.
 * Safe from UCX callbacks. */
void hixl_dev_barrier(hixl_engine_t *engine, hixl_peer_t *peer, uint64_t seq,
                      void (*fn)(void *arg), void *arg,
                      hixl_dev_barrier_t *node);
/* A new unit for req to peer (dev->lock held); holds one pending and one
 * data-pending count of the request. */
hixl_dev_unit_t *hixl_dev_unit_new(hixl_engine_t *engine, hixl_peer_t *peer,
                                   hixl_request_t *req);

#endif
