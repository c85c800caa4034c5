/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Little-endian fields of the wire formats (control messages, the verbs'
 * region table): explicit byte order, so engines on any host agree.
 */
#ifndef HIXL_BYTEORDER_H_
#define HIXL_BYTEORDER_H_

#include <stdint.h>

static inline uint32_t hixl_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t hixl_get_le64(const uint8_t *p)
{
    return (uint64_t)hixl_get_le32(p) | ((uint64_t)hixl_get_le32(p + 4) << 32);
}

static inline void hixl_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline void hixl_put_le64(uint8_t *p, uint64_t v)
{
    hixl_put_le32(p, (uint32_t)v);
    hixl_put_le32(p + 4, (uint32_t)(v >> 32));
}

#endif
