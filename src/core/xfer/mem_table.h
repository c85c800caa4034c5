/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Local registered regions: the address index used to validate descriptors
 * and the handle slots behind hixl_mem_handle_t.
 */
#ifndef HIXL_CORE_MEM_TABLE_H_
#define HIXL_CORE_MEM_TABLE_H_

#include "util/range_index.h"

#include <hixl/hixl.h>
#include <stdatomic.h>
#include <ucp/api/ucp.h>

typedef struct hixl_region {
    hixl_range_t    range;      /* first: indexed by address */
    uint64_t        handle;     /* also the region id peers see */
    hixl_mem_type_t type;
    int             allocated;  /* by UCX (hixl_alloc_mem): unmap frees it */
    int             revoked;    /* out of the address index, handle kept */
    uint64_t        revoke_grace_ns; /* a silent peer's writes may land
                                        until then (ops/memory.c) */
    ucp_mem_h       memh;       /* NULL: device memory not NIC-mapped */
    void           *rkey_buf;   /* packed once, sent to every peer */
    size_t          rkey_len;
    struct hixl_dev_reg *dev;   /* device memory: its plugin side */
    atomic_uint     am_busy;    /* library messages reading or writing it
                                   right now (core/xfer/am_data.c) */
    struct hixl_warm *warm;     /* allocated: its pages being written in
                                   the background (ops/mem_prefault.h) */
} hixl_region_t;

typedef struct hixl_mem_slot {
    hixl_region_t *region;      /* NULL when free */
    uint16_t       gen;         /* current generation of the slot */
} hixl_mem_slot_t;

typedef struct hixl_mem_table {
    hixl_range_index_t by_addr;
    hixl_mem_slot_t   *slots;   /* handle index -> region */
    size_t             nslots;
    size_t             count;
    size_t             first_free;   /* no free slot below it: the lowest
                                        free one is found from here */
} hixl_mem_table_t;

/* Assign a handle to region and index it.  RESOURCE_EXHAUSTED on OOM. */
hixl_status_t hixl_mem_table_insert(hixl_mem_table_t *t, uint16_t serial,
                                    hixl_region_t *region);

/* The region a handle names, or NULL (stale, foreign or garbage handle). */
hixl_region_t *hixl_mem_table_get(const hixl_mem_table_t *t, uint16_t serial,
                                  uint64_t handle);

/* The region registered at exactly [addr, +len), or NULL. */
hixl_region_t *hixl_mem_table_same(hixl_mem_table_t *t, uint64_t addr,
                                   uint64_t len);

void hixl_mem_table_remove(hixl_mem_table_t *t, hixl_region_t *region);

void hixl_mem_table_cleanup(hixl_mem_table_t *t);

#endif
