/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the table of pieces a library WRITE or READ_DATA carries
 * (src/core/xfer/am_table.c).  A table is a peer's word: every way its
 * count, its pieces' lengths and the payload's size can disagree is
 * refused before anything is used, at any alignment the payload lands;
 * a table that holds together scatters every piece to its own place and
 * nothing beside it.
 */
#include "config.h"
#include "harness.h"
#include "core/xfer/am_table.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAXP HIXL_AM_MAX_PIECES

/* A payload of pieces (and their data) at offset `misalign` of buf. */
typedef struct payload {
    unsigned char   buf[8 + MAXP * sizeof(hixl_am_piece_t) + 65536];
    unsigned char  *p;
    size_t          len;
    hixl_am_hdr_t   h;
} payload_t;

static void payload_make(payload_t *pl, const hixl_am_piece_t *pieces,
                         uint32_t count, int with_data, size_t misalign)
{
    size_t k, data = 0;

    memset(pl, 0, sizeof(*pl));
    hixl_am_hdr_init(&pl->h);
    pl->p = pl->buf + misalign;
    memcpy(pl->p, pieces, count * sizeof(*pieces));
    pl->len = count * sizeof(*pieces);
    for (k = 0; k < count; ++k) {
        data += pieces[k].len;
    }
    if (with_data) {
        ck_assert(pl->len + data + misalign <= sizeof(pl->buf));
        for (k = 0; k < data; ++k) {
            pl->p[pl->len + k] = (unsigned char)(k * 7 + 3);
        }
        pl->len += data;
    }
    pl->h.count = count;
    pl->h.len   = data;
}

static int payload_read(payload_t *pl, int with_data, hixl_am_table_t *t)
{
    return hixl_am_table_read(&pl->h, pl->p, pl->len, with_data, t);
}

START_TEST(test_holds_together)
{
    const hixl_am_piece_t pieces[3] = {{0x1000, 0x9000, 100},
                                       {0x2000, 0xa000, 1},
                                       {0x3000, 0xb000, 2000}};
    hixl_am_table_t t;
    hixl_am_piece_t p;
    payload_t pl;
    size_t mis;
    uint32_t k;

    for (mis = 0; mis < 8; ++mis) {
        payload_make(&pl, pieces, 3, 1, mis);
        ck_assert_int_eq(payload_read(&pl, 1, &t), 0);
        ck_assert_uint_eq(t.count, 3);
        ck_assert_uint_eq(t.len, 2101);
        ck_assert_ptr_eq(t.data, pl.p + 3 * sizeof(hixl_am_piece_t));
        for (k = 0; k < 3; ++k) {
            hixl_am_table_piece(&t, k, &p);
            ck_assert(memcmp(&p, &pieces[k], sizeof(p)) == 0);
        }
        /* a READ: the table alone */
        payload_make(&pl, pieces, 3, 0, mis);
        ck_assert_int_eq(payload_read(&pl, 0, &t), 0);
        ck_assert_ptr_null(t.data);
    }
}
END_TEST

START_TEST(test_refused)
{
    hixl_am_piece_t pieces[MAXP] = {{0x1000, 0, 64}, {0x2000, 0, 64}};
    hixl_am_table_t t;
    payload_t pl;

    /* no pieces, or more than a message may carry */
    payload_make(&pl, pieces, 2, 1, 0);
    pl.h.count = 0;
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    pl.h.count = HIXL_AM_MAX_PIECES + 1;
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    /* a count the payload cannot hold */
    pl.h.count = 5000;
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    /* data short by one, long by one */
    payload_make(&pl, pieces, 2, 1, 0);
    pl.len--;
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    pl.len += 2;
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    /* the header's length is not the pieces' sum */
    payload_make(&pl, pieces, 2, 1, 0);
    pl.h.len++;
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    /* a READ with data after its table */
    payload_make(&pl, pieces, 2, 1, 0);
    ck_assert_int_eq(payload_read(&pl, 0, &t), -1);
    /* no payload */
    ck_assert_int_eq(hixl_am_table_read(&pl.h, NULL, 0, 0, &t), -1);
    /* an empty piece */
    pieces[1].len = 0;
    payload_make(&pl, pieces, 2, 1, 0);
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    /* lengths whose sum wraps around to the header's */
    pieces[0].len = 128;
    pieces[1].len = UINT64_MAX - 63;   /* 128 + this is 64 modulo 2^64 */
    payload_make(&pl, pieces, 1, 1, 0);   /* 128 bytes of data */
    memmove(pl.p + 2 * sizeof(hixl_am_piece_t),
            pl.p + sizeof(hixl_am_piece_t), 128);
    memcpy(pl.p + sizeof(hixl_am_piece_t), &pieces[1], sizeof(pieces[1]));
    pl.h.count = 2;
    pl.h.len   = 64;
    ck_assert_int_eq(hixl_am_table_read(&pl.h, pl.p,
                                        2 * sizeof(hixl_am_piece_t) + 64, 1,
                                        &t), -1);
}
END_TEST

/* No message names more bytes than the library's own carry: a READ's
 * answer goes out as one message, so a READ of more is refused however
 * its pieces add up. */
START_TEST(test_bounded)
{
    hixl_am_piece_t pieces[MAXP];
    hixl_am_table_t t;
    payload_t pl;
    uint32_t k;

    /* a READ of exactly a message's data, then of a byte more */
    pieces[0] = (hixl_am_piece_t){0x1000, 0x9000, HIXL_AM_CHUNK - 100};
    pieces[1] = (hixl_am_piece_t){0x100000, 0xa0000, 100};
    payload_make(&pl, pieces, 2, 0, 0);
    ck_assert_int_eq(payload_read(&pl, 0, &t), 0);
    pieces[1].len = 101;
    payload_make(&pl, pieces, 2, 0, 0);
    ck_assert_int_eq(payload_read(&pl, 0, &t), -1);
    /* a READ of a whole region 256 times over (each piece alone fits) */
    for (k = 0; k < MAXP; ++k) {
        pieces[k] = (hixl_am_piece_t){0x1000, 0x9000 + k, 4096};
    }
    payload_make(&pl, pieces, MAXP, 0, 0);
    ck_assert_int_eq(payload_read(&pl, 0, &t), -1);
    /* lengths that wrap to a header's length of 2^64 - 1 */
    pieces[0].len = UINT64_MAX;
    pieces[1].len = UINT64_MAX;
    pieces[2].len = 1;
    payload_make(&pl, pieces, 3, 0, 0);
    pl.h.len = UINT64_MAX;
    ck_assert_int_eq(payload_read(&pl, 0, &t), -1);
    /* a full table and a full message's data: more than one message */
    for (k = 0; k < MAXP; ++k) {
        pieces[k] = (hixl_am_piece_t){0x1000 * k, 0x9000, 240};
    }
    payload_make(&pl, pieces, MAXP, 1, 0);
    ck_assert_uint_gt(pl.len, HIXL_AM_PAYLOAD_MAX);
    ck_assert_int_eq(payload_read(&pl, 1, &t), -1);
    payload_make(&pl, pieces, MAXP, 0, 0);
    ck_assert_int_eq(payload_read(&pl, 0, &t), -1);
}
END_TEST

/* Pieces land at their own side's address, back to back from the data,
 * and nothing beside them changes: in a small message (ordinary copies)
 * and in one of a bulk transfer (copies past the caches), at odd sizes
 * and alignments. */
static void check_scatter(const size_t *lens, const size_t *offs)
{
    static unsigned char dst[8 * 16384];
    hixl_am_piece_t pieces[4];
    hixl_am_table_t t;
    static payload_t pl;
    size_t k, i, src;
    int side;

    for (side = 0; side < 2; ++side) {
        for (k = 0; k < 4; ++k) {
            uint64_t a = (uint64_t)(uintptr_t)(dst + offs[k]);

            ck_assert_uint_le(offs[k] + lens[k], sizeof(dst));
            pieces[k].remote = side ? 0xdead0000 : a;
            pieces[k].local  = side ? a : 0xdead0000;
            pieces[k].len    = lens[k];
        }
        payload_make(&pl, pieces, 4, 1, 3);
        ck_assert_int_eq(payload_read(&pl, 1, &t), 0);
        memset(dst, 0xee, sizeof(dst));
        hixl_am_table_scatter(&t, side ? HIXL_AM_SIDE_LOCAL :
                              HIXL_AM_SIDE_REMOTE);
        for (i = 0; i < sizeof(dst); ++i) {
            int inside = 0;

            for (k = 0, src = 0; k < 4; src += lens[k], ++k) {
                if ((i >= offs[k]) && (i < offs[k] + lens[k])) {
                    ck_assert_uint_eq(dst[i], (unsigned char)(
                                          (src + i - offs[k]) * 7 + 3));
                    inside = 1;
                }
            }
            if (!inside) {
                ck_assert_uint_eq(dst[i], 0xee);
            }
        }
    }
}

START_TEST(test_scatter)
{
    const size_t small_lens[4] = {1, 4095, 61, 2048};
    const size_t small_offs[4] = {4096 * 3 + 5, 7, 4096 * 2, 4096 + 1000};
    const size_t bulk_lens[4]  = {4096, 40001, 63, 9000};
    const size_t bulk_offs[4]  = {16384 * 6 + 3, 16384 + 1, 5, 16384 * 4};

    check_scatter(small_lens, small_offs);
    check_scatter(bulk_lens, bulk_offs);
}
END_TEST

static Suite *unit_am_table_suite(void)
{
    Suite *s = suite_create("am_table");
    TCase *tc = hx_tcase("am_table");

    tcase_add_test(tc, test_holds_together);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_bounded);
    tcase_add_test(tc, test_scatter);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_am_table_suite());
}
