/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * READs awaiting their data (am_reads.h).
 */
#include "config.h"
#include "core/xfer/am_reads.h"
#include "core/peer/channel.h"
#include "util/debug.h"

#include <stdlib.h>
#include <string.h>

/* Stale entries are first looked for at this many. */
#define HIXL_AM_READS_PRUNE_MIN 64

hixl_am_read_wait_t *hixl_am_read_wait_new(const hixl_am_hdr_t *hdr,
                                           const hixl_am_piece_t *pieces,
                                           unsigned slot)
{
    hixl_am_read_wait_t *w;

    hixl_assert((hdr->count > 0) && (hdr->count <= HIXL_AM_MAX_PIECES));
    w = malloc(sizeof(*w) + (size_t)hdr->count * sizeof(*pieces));
    if (w == NULL) {
        return NULL;
    }
    w->next   = NULL;
    w->cookie = hdr->cookie;
    w->slot   = slot;
    w->count  = hdr->count;
    w->len    = hdr->len;
    memcpy(w->pieces, pieces, (size_t)hdr->count * sizeof(*pieces));
    return w;
}

void hixl_am_read_waits_free(hixl_am_read_wait_t *list)
{
    hixl_am_read_wait_t *next;

    for (; list != NULL; list = next) {
        next = list->next;
        free(list);
    }
}

/* Unlink *pp (w), whose predecessor is prev (NULL: the head). */
static void hixl_am_reads_unlink(hixl_chan_t *chan, hixl_am_read_wait_t **pp,
                                 hixl_am_read_wait_t *prev)
{
    hixl_am_read_wait_t *w = *pp;

    *pp = w->next;
    if (chan->am_reads_tail == w) {
        chan->am_reads_tail = prev;
    }
    w->next = NULL;
    hixl_assert(chan->am_reads_n > 0);
    chan->am_reads_n--;
}

/* The entries whose request no longer waits, unlinked. */
static hixl_am_read_wait_t *hixl_am_reads_prune(hixl_chan_t *chan,
                                                hixl_am_read_live_fn_t live,
                                                void *arg)
{
    hixl_am_read_wait_t **pp = &chan->am_reads_head, *prev = NULL, *w;
    hixl_am_read_wait_t *stale = NULL;

    while ((w = *pp) != NULL) {
        if (live(arg, w->cookie)) {
            prev = w;
            pp   = &w->next;
            continue;
        }
        hixl_am_reads_unlink(chan, pp, prev);
        w->next = stale;
        stale   = w;
    }
    chan->am_reads_prune = 2 * chan->am_reads_n;
    if (chan->am_reads_prune < HIXL_AM_READS_PRUNE_MIN) {
        chan->am_reads_prune = HIXL_AM_READS_PRUNE_MIN;
    }
    return stale;
}

hixl_am_read_wait_t *hixl_am_reads_add(hixl_chan_t *chan,
                                       hixl_am_read_wait_t *w,
                                       hixl_am_read_live_fn_t live,
                                       void *arg)
{
    hixl_am_read_wait_t *stale = NULL;

    if (chan->am_reads_n >= chan->am_reads_prune) {
        stale = hixl_am_reads_prune(chan, live, arg);
    }
    w->next = NULL;
    if (chan->am_reads_tail != NULL) {
        chan->am_reads_tail->next = w;
    } else {
        chan->am_reads_head = w;
    }
    chan->am_reads_tail = w;
    chan->am_reads_n++;
    return stale;
}

void hixl_am_reads_remove(hixl_chan_t *chan, hixl_am_read_wait_t *w)
{
    hixl_am_read_wait_t **pp = &chan->am_reads_head, *prev = NULL;

    while (*pp != w) {
        hixl_assert(*pp != NULL);   /* w is on the list */
        prev = *pp;
        pp   = &(*pp)->next;
    }
    hixl_am_reads_unlink(chan, pp, prev);
}

static int hixl_am_read_answers(const hixl_am_read_wait_t *w,
                                const hixl_am_hdr_t *h,
                                const hixl_am_table_t *t)
{
    if ((w->cookie != h->cookie) ||
        (w->slot != (h->flags & HIXL_AM_FLAG_SLOT)) ||
        (w->count != h->count)) {
        return 0;
    }
    return (t == NULL) ||
           ((w->len == t->len) && (t->count == w->count) &&
            (memcmp(w->pieces, t->pieces,
                    (size_t)w->count * sizeof(w->pieces[0])) == 0));
}

hixl_am_read_wait_t *hixl_am_reads_take(hixl_chan_t *chan,
                                        const hixl_am_hdr_t *h,
                                        const hixl_am_table_t *t)
{
    hixl_am_read_wait_t **pp = &chan->am_reads_head, *prev = NULL, *w;

    for (; (w = *pp) != NULL; prev = w, pp = &w->next) {
        if (hixl_am_read_answers(w, h, t)) {
            hixl_am_reads_unlink(chan, pp, prev);
            return w;
        }
    }
    return NULL;
}

hixl_am_read_wait_t *hixl_am_reads_take_all(hixl_chan_t *chan)
{
    hixl_am_read_wait_t *all = chan->am_reads_head;

    chan->am_reads_head  = NULL;
    chan->am_reads_tail  = NULL;
    chan->am_reads_n     = 0;
    chan->am_reads_prune = 0;
    return all;
}
