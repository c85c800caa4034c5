/*
 * Device memory in the engine: what the core modules call to register,
 * describe, route and move memory owned by a memory-type plugin.
 *
 *   device.c       per-engine plugin instances, units in flight, progress,
 *                  barriers (ordering of layer signals and revokes)
 *   device_mem.c   local device regions (detect, export, composite key)
 *                  and remote ones (unpack, lazy IPC import, references)
 *   device_path.c  per-descriptor path choice and posting of device copies
 *   staging.c      the BufferPool staging pool and its pipeline
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
#ifndef HIXL_DEVICE_H_
#define HIXL_DEVICE_H_

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

/* A local device region's plugin side (hixl_region_t.dev). */
typedef struct hixl_dev_reg {
    hixl_dev_plugin_t *dp;
    void              *reg;
    hixl_mem_attr_t    attr;
    size_t             key_len;
    uint8_t            key[HIXL_DEV_KEY_MAX];   /* MEM_ADD dev_key */
} hixl_dev_reg_t;

/* A remote device region (hixl_rregion_t.dev); shared by the peer's
 * table and the units that copy into it, freed (import closed) with the
 * last reference. */
typedef struct hixl_rdev {
    atomic_uint        refs;
    hixl_dev_plugin_t *dp;            /* NULL: we lack the owner's plugin */
    char               plugin[HIXL_DEV_KEY_NAME_MAX + 1];
    void              *rmem;
    int                same_node;
    int32_t            device;        /* owner's ordinal, for messages */
    int                import_state;  /* 0 untried, 1 mapped, -1 failed */
    void              *addr;          /* the import, when mapped */
    hixl_mem_attr_t    attr;          /* its device in this process */
    char               why[200];      /* import failure */
} hixl_rdev_t;

typedef enum hixl_path {
    HIXL_PATH_UCX,
    HIXL_PATH_IPC,
    HIXL_PATH_STAGE
} hixl_path_t;

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
    hixl_rdev_t         **rdevs;      /* referenced while copies run */
    size_t                nrdevs;
    size_t                rdevs_cap;
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

/* ---- device.c ---- */
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

/* ---- device_mem.c ---- */
/* Find the plugin that claims region's memory and export it. */
hixl_status_t hixl_dev_region_register(hixl_engine_t *engine,
                                       hixl_region_t *region);
void hixl_dev_region_release(hixl_engine_t *engine, hixl_region_t *region);
/* A peer announced a device region (engine->lock held): rr->dev. */
hixl_status_t hixl_dev_rregion_create(hixl_engine_t *engine,
                                      hixl_rregion_t *rr, const void *key,
                                      size_t key_len);
void hixl_dev_rdev_get(hixl_rdev_t *rdev);
void hixl_dev_rdev_put(hixl_engine_t *engine, hixl_rdev_t *rdev);
/* Map the remote memory here if not yet (dev->lock held); SUCCESS or the
 * cached failure (UNSUPPORTED) with rdev->why. */
hixl_status_t hixl_dev_rdev_import(hixl_engine_t *engine, hixl_rdev_t *rdev);

/* ---- device_path.c ---- */
/* Which path moves descriptor i (engine->lock held); UNSUPPORTED naming
 * the descriptor and the reason when none can. */
hixl_status_t hixl_dev_route(hixl_engine_t *engine, hixl_peer_t *peer,
                             size_t i, const hixl_transfer_op_desc_t *d,
                             hixl_region_t *lr, hixl_rregion_t *rr,
                             hixl_path_t *path_p);
/* Post descriptor i on the device path hixl_dev_route chose (IPC or
 * STAGE; engine->lock held): 1 posted, -1 failed (req failed). */
int hixl_dev_post(hixl_engine_t *engine, hixl_peer_t *peer,
                  hixl_request_t *req, hixl_dev_unit_t **unit_p, size_t i,
                  const hixl_transfer_op_desc_t *d, hixl_region_t *lr,
                  hixl_rregion_t *rr, hixl_path_t path);
/* After the last descriptor: mark the queued copies, queue staging. */
void hixl_dev_submit(hixl_engine_t *engine, hixl_dev_unit_t *unit);

/* ---- staging.c ---- */
/* Make sure the staging pool exists (dev->lock held). */
hixl_status_t hixl_stage_ready(hixl_engine_t *engine, hixl_dev_plugin_t *dp);
/* Add a staged descriptor to the unit's job. */
hixl_status_t hixl_stage_add(hixl_dev_unit_t *unit, hixl_transfer_op_t op,
                             hixl_dev_plugin_t *dp, int32_t device,
                             uint64_t local, uint64_t remote, uint64_t len,
                             ucp_rkey_h rkey);
void hixl_stage_queue(hixl_engine_t *engine, hixl_stage_job_t *job);
/* Advance the pipeline (engine->lock and dev->lock held). */
unsigned hixl_stage_progress(hixl_engine_t *engine);
/* 1 when the job's chunks are all done (and, for WRITE, flushed). */
int hixl_stage_job_poll(hixl_engine_t *engine, hixl_stage_job_t *job);
void hixl_stage_job_free(hixl_stage_job_t *job);
void hixl_stage_cleanup(hixl_engine_t *engine);

#endif
