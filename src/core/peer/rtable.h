/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer's remote region table: what the other engine registered, as it
 * announced it (MEM_ADD), with the UCX remote key unpacked once per
 * endpoint and, for device memory, the device part of its key
 * (device/device.h, opaque here).
 *
 * A revoked region (MEM_DEL) leaves the index at once, so no new
 * descriptor can name it, but its rkey stays until nothing is in flight to
 * the peer: an operation already posted may still use it.
 *
 * Locking: engine->lock.
 */
#ifndef HIXL_CORE_RTABLE_H_
#define HIXL_CORE_RTABLE_H_

#include "core/peer/path.h"
#include "util/range_index.h"

#include <hixl/hixl.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;
struct hixl_remote_dev;

typedef struct hixl_rregion {
    hixl_range_t         range;     /* first: indexed by address */
    uint64_t             id;
    uint32_t             mem_type;
    ucp_rkey_h           rkey;      /* NULL: device memory not NIC-mapped */
    hixl_path_t          path;      /* how host transfers reach it: rma,
                                       am, cma or map */
    void                *mapped;    /* MAP: range.addr, mapped here */
    struct hixl_remote_dev *dev;       /* device memory: its key */
    struct hixl_rregion *next_dead;
} hixl_rregion_t;

/* Drops a device key's reference (device/ installs it: core does not
 * know what one is). */
typedef void (*hixl_remote_dev_put_fn_t)(hixl_engine_t          *engine,
                                         struct hixl_remote_dev *remote_dev);

typedef struct hixl_rtable {
    hixl_range_index_t idx;
    size_t             count;
    hixl_rregion_t    *dead;        /* revoked; freed when idle */
} hixl_rtable_t;

/* Add rr (its range checked against the table and the limit); on error
 * rr is not taken.  FAILED with a reason: the peer is to be dropped. */
hixl_status_t hixl_rtable_insert(hixl_rtable_t *t, hixl_rregion_t *rr,
                                 uint32_t max_regions);

/* Revoke the region announced as (id, addr); FAILED if there is none.  Its
 * device key reference is dropped at once (copies hold their own). */
hixl_status_t hixl_rtable_revoke(hixl_engine_t *engine, hixl_rtable_t *t,
                                 uint64_t id, uint64_t addr);

/* Free revoked regions (nothing is in flight to the peer). */
void hixl_rtable_reap(hixl_engine_t *engine, hixl_rtable_t *t);

/* Free one region that never made it into a table, or every region
 * (the endpoint is closed). */
void hixl_rregion_free(hixl_engine_t *engine, hixl_rregion_t *rr);
void hixl_rtable_cleanup(hixl_engine_t *engine, hixl_rtable_t *t);

/* Lookup for descriptors (usually the index's hint). */
static inline hixl_rregion_t *hixl_rtable_find(hixl_rtable_t *t,
                                               uint64_t addr, uint64_t len,
                                               hixl_range_t **straddle)
{
    return (hixl_rregion_t*)hixl_range_find(&t->idx, addr, len, straddle);
}

#endif
