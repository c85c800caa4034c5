/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device part of a composite remote key.  A device region is announced
 * to peers in MEM_ADD with
 *
 *   rkey     the packed UCX remote key, when the region was NIC-registered
 *            (ucp_mem_map), else empty;
 *   dev_key  this encoding: which plugin owns the memory, the node it is
 *            on, its device, and the plugin's own blob (its IPC key).
 *
 * Layout (integers little-endian):
 *
 *   u8 version (1) | u8 n | plugin name [n] | u8 m | node identity [m] |
 *   i32 device | u16 b | plugin blob [b]
 *
 * The decoder is strict: every length within its limit, the name in
 * [a-z0-9_], the node printable, nothing left over.
 */
#ifndef HIXL_DEV_KEY_H_
#define HIXL_DEV_KEY_H_

#include "device/mem_plugin.h"

#include <stddef.h>
#include <stdint.h>

#define HIXL_DEV_KEY_VERSION  1
#define HIXL_DEV_KEY_NAME_MAX 31
#define HIXL_DEV_KEY_NODE_MAX 63
#define HIXL_DEV_KEY_MAX      (1 + 1 + HIXL_DEV_KEY_NAME_MAX + 1 + \
                               HIXL_DEV_KEY_NODE_MAX + 4 + 2 + \
                               HIXL_MEM_BLOB_MAX)

typedef struct hixl_dev_key {
    char           plugin[HIXL_DEV_KEY_NAME_MAX + 1];
    char           node[HIXL_DEV_KEY_NODE_MAX + 1];
    int32_t        device;
    const uint8_t *blob;        /* points into the decoded buffer */
    size_t         blob_len;
} hixl_dev_key_t;

/* Encode into out (HIXL_DEV_KEY_MAX bytes); returns the length, 0 when a
 * field is beyond its limit. */
size_t hixl_dev_key_pack(uint8_t *out, const char *plugin, const char *node,
                         int32_t device, const void *blob, size_t blob_len);

/* Decode; 0, or -1 with the reason in err. */
int hixl_dev_key_unpack(const uint8_t *buf, size_t len, hixl_dev_key_t *key,
                        char *err, size_t errlen);

#endif
