/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The path table: for each way a descriptor's bytes move (core/peer/path.h),
 * its name and how a descriptor is posted on it, and the one place that
 * chooses a descriptor's path.
 *
 *   path   chosen when                          completes when
 *   rma    the peer's endpoint has RDMA lanes,  the endpoint's flush
 *          or hixl.DataPath=rma; NIC-mapped
 *          device memory
 *   map    UCX maps the peer's memory here      the copy is done (inline,
 *          (same host, UCX-allocated)           or the copier's: counted
 *   cma    same host, other memory               in the channel's slot)
 *   am     elsewhere (tcp)                      its answers are in (the
 *                                               channel's slot)
 *   ipc    device memory, same node             its device unit's copies
 *   stage  device memory, otherwise             its staged chunks
 *
 * The request's flush (core/peer/ep_flush.h, through the channel) waits for
 * all of them, so COMPLETED means every byte is at its destination
 * whatever the path.  Nothing is aborted path by path: a connection's end
 * stops its channel (no copy or message reads a caller's buffer after),
 * closes its flush service and endpoint (UCX's operations are cancelled)
 * and drains its device work, for every path at once (core/peer/endpoint.c,
 * device/device.h).
 */
#ifndef HIXL_OPS_XFER_PATH_H_
#define HIXL_OPS_XFER_PATH_H_

#include "core/engine.h"
#include "core/peer/path.h"
#include "core/xfer/am_data.h"

typedef struct hixl_dev_unit hixl_dev_unit_t;
typedef struct hixl_copy_batch hixl_copy_batch_t;

/* One descriptor, resolved. */
typedef struct hixl_xfer_slot {
    hixl_region_t  *local;     /* NULL: an empty descriptor */
    hixl_rregion_t *remote;
    hixl_path_t     path;
} hixl_xfer_slot_t;

/* What posting a request's descriptors shares (engine->lock held). */
typedef struct hixl_xfer_ctx {
    hixl_engine_t   *engine;
    hixl_peer_t     *peer;
    hixl_request_t  *req;
    int              blocking;   /* a transfer_sync: copies inline */
    hixl_dev_unit_t *unit;       /* device work gathered, submitted after
                                    the last descriptor */
    hixl_am_batch_t  am;         /* library messages being gathered, sent
                                    when full and after the last one */
    size_t           num_descs;  /* the request's */
    hixl_copy_batch_t *copies;   /* same-host copies gathered (map, cma),
                                    run when full and after the last
                                    descriptor */
} hixl_xfer_ctx_t;

typedef struct hixl_path_ops {
    const char *name;            /* as logs and hixl_info say it */
    /* Post descriptor i: UCS_OK once posted; on failure the request holds
     * the reason, naming the descriptor. */
    ucs_status_t (*post)(hixl_xfer_ctx_t *x, size_t i,
                         const hixl_transfer_op_desc_t *d,
                         const hixl_xfer_slot_t *s);
    /* After the request's last descriptor (NULL: nothing to do). */
    void         (*submit)(hixl_xfer_ctx_t *x);
} hixl_path_ops_t;

extern const hixl_path_ops_t hixl_paths[HIXL_PATH_COUNT];

/* Choose descriptor i's path between its resolved regions (engine->lock
 * held): a host region's own path, or the device path that can carry it;
 * UNSUPPORTED naming the descriptor when none can. */
hixl_status_t hixl_xfer_path_choose(hixl_engine_t *engine, hixl_peer_t *peer,
                                    size_t i, const hixl_transfer_op_desc_t *d,
                                    hixl_xfer_slot_t *s);

/* The path transfers to a peer's host region take, chosen once when the
 * region is announced (sets rr->mapped when UCX maps it here). */
hixl_path_t hixl_xfer_path_of_region(hixl_engine_t *engine,
                                     hixl_peer_t *peer, hixl_rregion_t *rr);

/* A UCX put or get of d (the rma row's post, also used before the request
 * exists: the request is not needed). */
ucs_status_t hixl_xfer_rma(hixl_engine_t *engine, hixl_peer_t *peer,
                           hixl_transfer_op_t op,
                           const hixl_transfer_op_desc_t *d,
                           const hixl_xfer_slot_t *s);

/* Record in req that descriptor i's put or get failed with ustatus. */
void hixl_xfer_rma_failed(hixl_request_t *req, size_t i,
                          ucs_status_t ustatus);

#endif
