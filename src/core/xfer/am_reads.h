/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The READs a connector sent whose data has not come yet, per channel: the
 * table each carried, so that only the answer to a READ lands, and only
 * where that READ asked (core/xfer/am_data.c).
 *
 * Taken on its word, a READ_DATA would let its listener place bytes
 * anywhere in this engine's registered memory, or fail and end the slot of
 * READs it was never sent.  An answer is matched by the request it names,
 * its slot and its whole table, byte for byte; a refusal, which carries no
 * table, by request, slot and piece count.  Answers come in the order the
 * READs went, so the match is nearly always the oldest entry.
 *
 * Entries whose request ended without their answer (a timeout, a failure)
 * are dropped when the list has doubled since it was last looked over, so
 * a peer that never answers keeps at most twice what live requests wait
 * for.
 *
 * Not thread-safe: the caller holds the lock that guards its channel's
 * lists (the am_data pool's).  Nothing here frees: what leaves a list is
 * handed back, for the caller to free once it let go of the lock.
 */
#ifndef HIXL_CORE_XFER_AM_READS_H_
#define HIXL_CORE_XFER_AM_READS_H_

#include "core/am/am_proto.h"
#include "core/xfer/am_table.h"

#include <stdint.h>

typedef struct hixl_chan hixl_chan_t;

typedef struct hixl_am_read_wait {
    struct hixl_am_read_wait *next;
    uint64_t                  cookie;   /* the request's handle */
    unsigned                  slot;     /* its channel slot */
    uint32_t                  count;
    uint64_t                  len;
    hixl_am_piece_t           pieces[]; /* the table as sent */
} hixl_am_read_wait_t;

/* Whether the request with this handle still waits for data. */
typedef int (*hixl_am_read_live_fn_t)(void *arg, uint64_t cookie);

/* An entry for the READ of hdr (its count, len and cookie) with this table,
 * sent in slot; NULL when out of memory. */
hixl_am_read_wait_t *hixl_am_read_wait_new(const hixl_am_hdr_t *hdr,
                                           const hixl_am_piece_t *pieces,
                                           unsigned slot);

/* Free a list of entries (linked by next; NULL: nothing). */
void hixl_am_read_waits_free(hixl_am_read_wait_t *list);

/* Append w to chan's list.  Returns the entries dropped as stale (live
 * said no), unlinked, for the caller to free. */
hixl_am_read_wait_t *hixl_am_reads_add(hixl_chan_t *chan,
                                       hixl_am_read_wait_t *w,
                                       hixl_am_read_live_fn_t live,
                                       void *arg);

/* Unlink w (its READ could not be sent); it must be on chan's list. */
void hixl_am_reads_remove(hixl_chan_t *chan, hixl_am_read_wait_t *w);

/* The entry the answer h is for, unlinked, or NULL when it answers no READ
 * of this channel.  t: the answer's table (checked by hixl_am_table_read),
 * or NULL for a refusal. */
hixl_am_read_wait_t *hixl_am_reads_take(hixl_chan_t *chan,
                                        const hixl_am_hdr_t *h,
                                        const hixl_am_table_t *t);

/* Every entry, unlinked (the channel closed). */
hixl_am_read_wait_t *hixl_am_reads_take_all(hixl_chan_t *chan);

#endif
