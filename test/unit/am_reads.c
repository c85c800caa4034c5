/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the READs a connector waits on (src/core/xfer/am_reads.c), without
 * UCX: only an answer naming a READ's request and slot and carrying its
 * table byte for byte takes it; a refusal takes the oldest of its request,
 * slot and count; entries of requests that ended go once the list has
 * doubled; a removal and a close leave the list whole.
 */
#include "config.h"
#include "harness.h"
#include "core/peer/channel.h"
#include "core/xfer/am_reads.h"

#include <stdlib.h>
#include <string.h>

/* requests 1..N are live unless listed dead */
static int dead_below;

static int live(void *arg, uint64_t cookie)
{
    (void)arg;
    return cookie >= (uint64_t)dead_below;
}

static hixl_am_read_wait_t *add(hixl_chan_t *chan, uint64_t cookie,
                                unsigned slot, uint64_t remote,
                                hixl_am_read_wait_t **stale)
{
    hixl_am_piece_t pc[2] = {{remote, 0x9000, 100}, {remote + 4096, 0xa000,
                                                      28}};
    hixl_am_hdr_t h;
    hixl_am_read_wait_t *w, *s;

    hixl_am_hdr_init(&h);
    h.cookie = cookie;
    h.count  = 2;
    h.len    = 128;
    w = hixl_am_read_wait_new(&h, pc, slot);
    ck_assert_ptr_nonnull(w);
    s = hixl_am_reads_add(chan, w, live, NULL);
    if (stale != NULL) {
        *stale = s;
    } else {
        hixl_am_read_waits_free(s);
    }
    return w;
}

/* The answer of a READ with this request, slot and first remote address:
 * its header and table. */
static void answer(uint64_t cookie, unsigned slot, uint64_t remote,
                   hixl_am_hdr_t *h, hixl_am_piece_t *pc, hixl_am_table_t *t)
{
    pc[0] = (hixl_am_piece_t){remote, 0x9000, 100};
    pc[1] = (hixl_am_piece_t){remote + 4096, 0xa000, 28};
    hixl_am_hdr_init(h);
    h->cookie = cookie;
    h->flags  = (uint16_t)(slot | HIXL_AM_FLAG_MORE);
    h->count  = 2;
    h->len    = 128;
    t->pieces = (const unsigned char*)pc;
    t->data   = NULL;
    t->count  = 2;
    t->len    = 128;
}

START_TEST(test_match)
{
    hixl_chan_t chan;
    hixl_am_read_wait_t *a, *b, *w;
    hixl_am_piece_t pc[2];
    hixl_am_table_t t;
    hixl_am_hdr_t h;

    memset(&chan, 0, sizeof(chan));
    dead_below = 0;
    a = add(&chan, 7, 3, 0x100000, NULL);
    b = add(&chan, 7, 3, 0x200000, NULL);
    ck_assert_uint_eq(chan.am_reads_n, 2);

    /* another request, another slot, another table, a piece changed */
    answer(8, 3, 0x200000, &h, pc, &t);
    ck_assert_ptr_null(hixl_am_reads_take(&chan, &h, &t));
    answer(7, 4, 0x200000, &h, pc, &t);
    ck_assert_ptr_null(hixl_am_reads_take(&chan, &h, &t));
    answer(7, 3, 0x300000, &h, pc, &t);
    ck_assert_ptr_null(hixl_am_reads_take(&chan, &h, &t));
    answer(7, 3, 0x200000, &h, pc, &t);
    pc[1].local += 8;   /* the same remote bytes, placed elsewhere here */
    ck_assert_ptr_null(hixl_am_reads_take(&chan, &h, &t));
    ck_assert_uint_eq(chan.am_reads_n, 2);

    /* the second one's answer first, then the same answer again */
    answer(7, 3, 0x200000, &h, pc, &t);
    w = hixl_am_reads_take(&chan, &h, &t);
    ck_assert_ptr_eq(w, b);
    free(w);
    ck_assert_ptr_null(hixl_am_reads_take(&chan, &h, &t));
    ck_assert_ptr_eq(chan.am_reads_tail, a);

    /* a refusal: no table, the oldest of its request, slot and count */
    h.count = 3;
    ck_assert_ptr_null(hixl_am_reads_take(&chan, &h, NULL));
    h.count = 2;
    w = hixl_am_reads_take(&chan, &h, NULL);
    ck_assert_ptr_eq(w, a);
    free(w);
    ck_assert_uint_eq(chan.am_reads_n, 0);
    ck_assert_ptr_null(chan.am_reads_head);
    ck_assert_ptr_null(chan.am_reads_tail);
}
END_TEST

START_TEST(test_prune_remove_close)
{
    hixl_am_read_wait_t *w[200], *stale, *s;
    hixl_chan_t chan;
    size_t n;
    int i;

    memset(&chan, 0, sizeof(chan));
    dead_below = 0;
    for (i = 0; i < 64; ++i) {
        w[i] = add(&chan, (uint64_t)i, 0, 0x1000 * (uint64_t)i, NULL);
    }
    /* requests 0..59 ended unanswered: the next add drops them */
    dead_below = 60;
    w[64] = add(&chan, 64, 0, 0x1000 * 64, &stale);
    for (n = 0, s = stale; s != NULL; s = s->next) {
        ck_assert_uint_lt(s->cookie, 60);
        ++n;
    }
    ck_assert_uint_eq(n, 60);
    hixl_am_read_waits_free(stale);
    ck_assert_uint_eq(chan.am_reads_n, 5);
    ck_assert_ptr_eq(chan.am_reads_head, w[60]);
    ck_assert_ptr_eq(chan.am_reads_tail, w[64]);
    /* the next look only at twice that many, or the minimum */
    ck_assert_uint_ge(chan.am_reads_prune, 10);

    /* removing the last, the first and one between keeps the list */
    hixl_am_reads_remove(&chan, w[64]);
    ck_assert_ptr_eq(chan.am_reads_tail, w[63]);
    hixl_am_reads_remove(&chan, w[60]);
    ck_assert_ptr_eq(chan.am_reads_head, w[61]);
    hixl_am_reads_remove(&chan, w[62]);
    ck_assert_ptr_eq(chan.am_reads_head->next, w[63]);
    ck_assert_uint_eq(chan.am_reads_n, 2);
    free(w[60]);
    free(w[62]);
    free(w[64]);

    /* the channel closes: everything goes, the list is empty */
    s = hixl_am_reads_take_all(&chan);
    ck_assert_ptr_eq(s, w[61]);
    hixl_am_read_waits_free(s);
    ck_assert_uint_eq(chan.am_reads_n, 0);
    ck_assert_ptr_null(chan.am_reads_head);
    ck_assert_ptr_null(chan.am_reads_tail);
}
END_TEST

static Suite *am_reads_suite(void)
{
    Suite *s = suite_create("am_reads");
    TCase *tc = hx_tcase("am_reads");

    tcase_add_test(tc, test_match);
    tcase_add_test(tc, test_prune_remove_close);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(am_reads_suite());
}
