/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Composite remote key codec (device part); see dev_key.h.
 */
#include "config.h"
#include "device/dev_key.h"

#include <stdio.h>
#include <string.h>

size_t hixl_dev_key_pack(uint8_t *out, const char *plugin, const char *node,
                         int32_t device, const void *blob, size_t blob_len)
{
    size_t n = strlen(plugin), m = strlen(node);
    uint8_t *p = out;

    if ((n == 0) || (n > HIXL_DEV_KEY_NAME_MAX) || (m == 0) ||
        (m > HIXL_DEV_KEY_NODE_MAX) || (blob_len > HIXL_MEM_BLOB_MAX)) {
        return 0;
    }
    *p++ = HIXL_DEV_KEY_VERSION;
    *p++ = (uint8_t)n;
    memcpy(p, plugin, n);
    p += n;
    *p++ = (uint8_t)m;
    memcpy(p, node, m);
    p += m;
    p[0] = (uint8_t)device;
    p[1] = (uint8_t)((uint32_t)device >> 8);
    p[2] = (uint8_t)((uint32_t)device >> 16);
    p[3] = (uint8_t)((uint32_t)device >> 24);
    p[4] = (uint8_t)blob_len;
    p[5] = (uint8_t)(blob_len >> 8);
    p += 6;
    if (blob_len) {
        memcpy(p, blob, blob_len);
    }
    return (size_t)(p - out) + blob_len;
}

/* Take a length-prefixed string of at most max bytes matching ok(). */
static int hixl_dev_key_str(const uint8_t **p, const uint8_t *end, char *dst,
                            size_t max, int (*ok)(int c))
{
    size_t n, i;

    if (*p >= end) {
        return -1;
    }
    n = *(*p)++;
    if ((n == 0) || (n > max) || ((size_t)(end - *p) < n)) {
        return -1;
    }
    for (i = 0; i < n; ++i) {
        if (!ok((*p)[i])) {
            return -1;
        }
        dst[i] = (char)(*p)[i];
    }
    dst[n] = '\0';
    *p += n;
    return 0;
}

static int hixl_dev_key_name_char(int c)
{
    return ((c >= 'a') && (c <= 'z')) || ((c >= '0') && (c <= '9')) ||
           (c == '_');
}

static int hixl_dev_key_node_char(int c)
{
    return (c > ' ') && (c < 0x7f);
}

int hixl_dev_key_unpack(const uint8_t *buf, size_t len, hixl_dev_key_t *key,
                        char *err, size_t errlen)
{
    const uint8_t *p = buf, *end = buf + len;
    size_t b;

    memset(key, 0, sizeof(*key));
    if ((len == 0) || (buf[0] != HIXL_DEV_KEY_VERSION)) {
        snprintf(err, errlen, "device key version %u, this engine speaks %d",
                 len ? buf[0] : 0, HIXL_DEV_KEY_VERSION);
        return -1;
    }
    ++p;
    if (hixl_dev_key_str(&p, end, key->plugin, HIXL_DEV_KEY_NAME_MAX,
                         hixl_dev_key_name_char) != 0) {
        snprintf(err, errlen, "device key: bad plugin name");
        return -1;
    }
    if (hixl_dev_key_str(&p, end, key->node, HIXL_DEV_KEY_NODE_MAX,
                         hixl_dev_key_node_char) != 0) {
        snprintf(err, errlen, "device key: bad node identity");
        return -1;
    }
    if ((size_t)(end - p) < 6) {
        snprintf(err, errlen, "device key truncated (%zu bytes)", len);
        return -1;
    }
    key->device = (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) |
                            ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
    b = (size_t)p[4] | ((size_t)p[5] << 8);
    p += 6;
    if ((key->device < 0) || (b > HIXL_MEM_BLOB_MAX) ||
        ((size_t)(end - p) != b)) {
        snprintf(err, errlen, "device key: device %d, plugin blob of %zu "
                 "bytes in %zu remaining", key->device, b,
                 (size_t)(end - p));
        return -1;
    }
    key->blob     = p;
    key->blob_len = b;
    return 0;
}
