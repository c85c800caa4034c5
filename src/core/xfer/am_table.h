/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of pieces a received WRITE or READ_DATA carries in front of
 * their data, or a READ alone (core/am/am_proto.h): read and checked before
 * anything of it is used, then scattered into place.
 *
 * A table is the peer's word only: its count, every piece's length and the
 * payload's size must agree, and every piece must lie inside one of this
 * engine's registered host regions, or nothing of the message lands.
 */
#ifndef HIXL_CORE_XFER_AM_TABLE_H_
#define HIXL_CORE_XFER_AM_TABLE_H_

#include "core/am/am_proto.h"

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_region hixl_region_t;

/* A received table (it points into the message; valid in its handler). */
typedef struct hixl_am_table {
    const unsigned char *pieces;   /* count hixl_am_piece_t, unaligned */
    const unsigned char *data;     /* their bytes back to back, or NULL */
    uint32_t             count;
    uint64_t             len;      /* the pieces' bytes summed */
} hixl_am_table_t;

/* Which side of the pieces is this engine's memory. */
typedef enum hixl_am_side {
    HIXL_AM_SIDE_REMOTE,   /* the listener's: WRITE, READ */
    HIXL_AM_SIDE_LOCAL     /* the connector's: READ_DATA */
} hixl_am_side_t;

/* Read the table of the message h whose payload is [payload, +length):
 * the table and then (with_data) exactly h->len bytes of data, h->len at
 * most HIXL_AM_CHUNK and table and data together at most
 * HIXL_AM_PAYLOAD_MAX, with or without the data (a READ's answer carries
 * them).  0, or -1 when the message does not hold together. */
int hixl_am_table_read(const hixl_am_hdr_t *h, const void *payload,
                       size_t length, int with_data, hixl_am_table_t *t);

static inline void hixl_am_table_piece(const hixl_am_table_t *t, uint32_t k,
                                       hixl_am_piece_t *p)
{
    memcpy(p, t->pieces + (size_t)k * sizeof(*p), sizeof(*p));
}

static inline uint64_t hixl_am_piece_addr(const hixl_am_piece_t *p,
                                          hixl_am_side_t side)
{
    return (side == HIXL_AM_SIDE_REMOTE) ? p->remote : p->local;
}

/* Whether every piece lies inside a registered host region of the engine
 * on side (engine->serve_lock held).  If not, *bad is the first piece that
 * does not.  regions, if given, gets each piece's region, NULL where it is
 * the one before's. */
int hixl_am_table_placed(hixl_engine_t *engine, const hixl_am_table_t *t,
                         hixl_am_side_t side, hixl_region_t **regions,
                         hixl_am_piece_t *bad);

/* Copy the data of a checked table to its pieces on side (serve_lock
 * held: deregistration waits). */
void hixl_am_table_scatter(const hixl_am_table_t *t, hixl_am_side_t side);

/* The registered host region holding [addr, +len), or NULL (serve_lock
 * held). */
hixl_region_t *hixl_am_region(hixl_engine_t *engine, uint64_t addr,
                              uint64_t len);

#endif
