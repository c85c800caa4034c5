/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opaque handle encoding shared by memory handles and requests.
 *
 * A handle is never a pointer: it packs the owning engine's serial, a slot
 * generation and a slot index, so a handle used after release, or given to
 * the wrong engine, is recognised and refused instead of dereferenced.
 *
 *   bits 63..48  engine serial (16 bits)
 *   bits 47..32  slot generation (16 bits, never 0)
 *   bits 31..0   slot index + 1 (so no valid handle is 0 / NULL)
 */
#ifndef HIXL_HANDLE_H_
#define HIXL_HANDLE_H_

#include <stdint.h>

static inline uint64_t hixl_handle_make(uint16_t engine_serial, uint16_t gen,
                                        uint32_t index)
{
    return ((uint64_t)engine_serial << 48) | ((uint64_t)gen << 32) |
           ((uint64_t)index + 1);
}

static inline uint16_t hixl_handle_engine(uint64_t h)
{
    return (uint16_t)(h >> 48);
}

static inline uint16_t hixl_handle_gen(uint64_t h)
{
    return (uint16_t)(h >> 32);
}

/* Slot index, or UINT32_MAX for a handle with no index (0 / NULL). */
static inline uint32_t hixl_handle_index(uint64_t h)
{
    return (uint32_t)h - 1;
}

/* Next generation of a slot; skips 0 so that a fresh slot's first handle
 * differs from an all-zero value. */
static inline uint16_t hixl_gen_next(uint16_t gen)
{
    return (uint16_t)(gen + 1) ? (uint16_t)(gen + 1) : 1;
}

#endif
