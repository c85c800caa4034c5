/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device regions (device_mem.c): a local region's plugin side (the plugin
 * that claims the memory, its export and the device part of the composite
 * remote key peers get), and a peer's device region (its key unpacked, the
 * import mapped on first use, shared by reference with the copies into it).
 */
#ifndef HIXL_DEVICE_DEVICE_MEM_H_
#define HIXL_DEVICE_DEVICE_MEM_H_

#include "device/device.h"

/* A local device region's plugin side (hixl_region_t.dev). */
typedef struct hixl_dev_reg {
    hixl_dev_plugin_t   *dp;
    void                *reg;
    hixl_mem_attr_t      attr;
    size_t               key_len;
    uint8_t              key[HIXL_DEV_KEY_MAX];   /* MEM_ADD dev_key */
    /* in the list of this process' exports (device_mem.c) */
    uint64_t             addr, len;
    struct hixl_dev_reg *next_local;
} hixl_dev_reg_t;

/* A remote device region (hixl_rregion_t.dev); shared by the peer's
 * table and the units that copy into it, freed (import closed) with the
 * last reference. */
typedef struct hixl_remote_dev {
    atomic_uint        refs;
    hixl_dev_plugin_t *dp;            /* NULL: we lack the owner's plugin */
    char               plugin[HIXL_DEV_KEY_NAME_MAX + 1];
    void              *rmem;
    int                same_node;
    int32_t            device;        /* owner's ordinal, for messages */
    int                import_state;  /* 0 untried, 1 mapped, -1 failed */
    int                own_process;   /* exported by an engine of this
                                         process: addr is the memory
                                         itself, nothing imported */
    void              *addr;          /* the import, when mapped */
    hixl_mem_attr_t    attr;          /* its device in this process */
    char               why[200];      /* import failure */
} hixl_remote_dev_t;

/* Find the plugin that claims region's memory and export it. */
hixl_status_t hixl_dev_region_register(hixl_engine_t *engine,
                                       hixl_region_t *region);
void hixl_dev_region_release(hixl_engine_t *engine, hixl_region_t *region);
/* A peer announced a device region (engine->lock held): rr->dev. */
hixl_status_t hixl_dev_rregion_create(hixl_engine_t *engine,
                                      hixl_rregion_t *rr, const void *key,
                                      size_t key_len);
void hixl_dev_remote_get(hixl_remote_dev_t *remote_dev);
void hixl_dev_remote_put(hixl_engine_t *engine, hixl_remote_dev_t *remote_dev);
/* The engines of this process with device support, for
 * hixl_dev_peer_local: hixl_dev_init adds, hixl_dev_cleanup removes. */
void hixl_dev_local_engine(hixl_engine_t *engine, int add);
/* Whether peer is another engine of this process: on this host and
 * listening under a name an engine here listens under (a port is bound
 * by one socket of one process).  Its memory is then addressable here. */
int hixl_dev_peer_local(const hixl_engine_t *engine,
                        const hixl_peer_t *peer);

/* Map the remote memory here if not yet (dev->lock held); SUCCESS or the
 * cached failure (UNSUPPORTED) with remote_dev->why. */
hixl_status_t hixl_dev_remote_import(hixl_engine_t     *engine,
                                     hixl_remote_dev_t *remote_dev);

#endif
