/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the range index (src/util/range_index.h) behind the local region
 * table and every peer's remote table: find (with the one-entry hint),
 * straddle reporting, overlap, insert, remove, and ranges at the ends of
 * the 64-bit address space where a careless addr + len wraps.
 *
 * Every lookup is also checked against a brute-force scan of the ranges,
 * over a randomized table, so the tree descent and the hint cannot drift
 * from the plain definition (unit/range_index_model.c mixes inserts,
 * removes and lookups against a model).
 */
#include "config.h"
#include "harness.h"
#include "util/range_index.h"

#include <stdlib.h>
#include <string.h>

/* A range of the index's callers' making (its links are the index's). */
#define R(_addr, _len)                                                         \
    {                                                                          \
        .addr = (_addr), .len = (_len)                                         \
    }

/* Plain definitions, written without the index. */
static int holds(const hixl_range_t *r, uint64_t addr, uint64_t len)
{
    /* [addr, addr + len) inside [r->addr, r->addr + r->len), in 128 bits */
    unsigned __int128 a = addr, l = len, ra = r->addr, rl = r->len;

    return (a >= ra) && (a + l <= ra + rl);
}

static int overlaps(const hixl_range_t *r, uint64_t addr, uint64_t len)
{
    unsigned __int128 a = addr, l = len, ra = r->addr, rl = r->len;

    return (len > 0) && (a < ra + rl) && (ra < a + l);
}

static hixl_range_t *brute_find(hixl_range_t *rs, size_t n, uint64_t addr,
                                uint64_t len)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        if (holds(&rs[i], addr, len)) {
            return &rs[i];
        }
    }
    return NULL;
}

static void index_add(hixl_range_index_t *idx, hixl_range_t *r)
{
    hx_ok(hixl_range_insert(idx, r));
}

static void check_sorted(const hixl_range_index_t *idx)
{
    const hixl_range_t *r, *prev = NULL;
    size_t              i = 0;

    for (r = hixl_range_first(idx); r != NULL; r = hixl_range_next(r), ++i) {
        ck_assert_msg((prev == NULL) || (prev->addr < r->addr),
                      "index not sorted at %zu", i);
        prev = r;
    }
    ck_assert_uint_eq(i, idx->count);
}

START_TEST(test_empty)
{
    hixl_range_index_t idx;
    hixl_range_t *straddle = NULL;

    memset(&idx, 0, sizeof(idx));
    ck_assert_ptr_null(hixl_range_find(&idx, 0, 1, &straddle));
    ck_assert_ptr_null(hixl_range_find(&idx, UINT64_MAX, 1, &straddle));
    ck_assert_ptr_null(straddle);
    ck_assert_ptr_null(hixl_range_overlap(&idx, 0, UINT64_MAX));
    ck_assert_ptr_null(hixl_range_floor(&idx, 12345));
    ck_assert_ptr_null(hixl_range_first(&idx));
    hixl_range_index_cleanup(&idx);
}
END_TEST

/* Three ranges with gaps: [100,200) [300,400) [400,450) (the last two
 * touch). */
START_TEST(test_find_and_straddle)
{
    hixl_range_t       r[3] = {R(300, 100), R(100, 100), R(400, 50)};
    hixl_range_index_t idx;
    hixl_range_t *s;

    memset(&idx, 0, sizeof(idx));
    index_add(&idx, &r[0]);
    index_add(&idx, &r[1]);
    index_add(&idx, &r[2]);
    ck_assert_uint_eq(idx.count, 3);
    check_sorted(&idx);

#define FIND(_a, _l, _expect, _straddle) \
    do { \
        s = NULL; \
        ck_assert_ptr_eq(hixl_range_find(&idx, (_a), (_l), &s), (_expect)); \
        ck_assert_ptr_eq(s, (_straddle)); \
    } while (0)

    FIND(100, 100, &r[1], NULL);          /* exactly */
    FIND(100, 1, &r[1], NULL);            /* first byte */
    FIND(199, 1, &r[1], NULL);            /* last byte */
    FIND(150, 10, &r[1], NULL);
    FIND(99, 1, NULL, NULL);              /* just before */
    FIND(99, 2, NULL, NULL);              /* starts before: no straddle */
    FIND(200, 1, NULL, NULL);             /* just after (in the gap) */
    FIND(199, 2, NULL, &r[1]);            /* straddles the end */
    FIND(150, 1000, NULL, &r[1]);
    FIND(399, 2, NULL, &r[0]);            /* touching ranges are still two */
    FIND(300, 150, NULL, &r[0]);
    FIND(449, 1, &r[2], NULL);
    FIND(450, 1, NULL, NULL);
    FIND(0, 1, NULL, NULL);
    FIND(UINT64_MAX, 1, NULL, NULL);
    /* the hint now points at r[2]; lookups elsewhere must not trust it */
    FIND(120, 10, &r[1], NULL);
    FIND(449, 1, &r[2], NULL);
    FIND(310, 10, &r[0], NULL);
    /* straddle may be NULL */
    ck_assert_ptr_null(hixl_range_find(&idx, 199, 2, NULL));
#undef FIND
    hixl_range_index_cleanup(&idx);
}
END_TEST

START_TEST(test_overlap)
{
    hixl_range_t       r[2] = {R(1000, 100), R(2000, 100)};
    hixl_range_index_t idx;

    memset(&idx, 0, sizeof(idx));
    index_add(&idx, &r[1]);
    index_add(&idx, &r[0]);
    ck_assert_ptr_eq(hixl_range_overlap(&idx, 1000, 100), &r[0]);
    ck_assert_ptr_eq(hixl_range_overlap(&idx, 900, 101), &r[0]);  /* 1 byte */
    ck_assert_ptr_null(hixl_range_overlap(&idx, 900, 100));       /* touches */
    ck_assert_ptr_eq(hixl_range_overlap(&idx, 1099, 1), &r[0]);
    ck_assert_ptr_null(hixl_range_overlap(&idx, 1100, 900));      /* between */
    ck_assert_ptr_eq(hixl_range_overlap(&idx, 1100, 901), &r[1]);
    ck_assert_ptr_nonnull(hixl_range_overlap(&idx, 0, 5000));     /* around */
    ck_assert_ptr_eq(hixl_range_overlap(&idx, 1050, 10), &r[0]);  /* inside */
    ck_assert_ptr_null(hixl_range_overlap(&idx, 2100, 10));
    ck_assert_ptr_null(hixl_range_overlap(&idx, 0, 1000));
    ck_assert_ptr_nonnull(hixl_range_overlap(&idx, 0, UINT64_MAX));
    hixl_range_index_cleanup(&idx);
}
END_TEST

START_TEST(test_remove)
{
    hixl_range_t       r[4]     = {R(10, 5), R(20, 5), R(30, 5), R(40, 5)};
    hixl_range_t       stranger = R(20, 5);
    hixl_range_index_t idx;

    memset(&idx, 0, sizeof(idx));
    index_add(&idx, &r[2]);
    index_add(&idx, &r[0]);
    index_add(&idx, &r[3]);
    index_add(&idx, &r[1]);
    check_sorted(&idx);
    ck_assert_ptr_eq(hixl_range_find(&idx, 42, 1, NULL), &r[3]);   /* hint */

    hixl_range_remove(&idx, &r[3]);   /* the hinted one, at the end */
    ck_assert_uint_eq(idx.count, 3);
    ck_assert_ptr_null(hixl_range_find(&idx, 42, 1, NULL));
    hixl_range_remove(&idx, &stranger);   /* same range, not a member */
    ck_assert_uint_eq(idx.count, 3);
    ck_assert_ptr_eq(hixl_range_find(&idx, 21, 1, NULL), &r[1]);
    hixl_range_remove(&idx, &r[0]);   /* first */
    hixl_range_remove(&idx, &r[0]);   /* twice: no-op */
    ck_assert_uint_eq(idx.count, 2);
    ck_assert_ptr_null(hixl_range_find(&idx, 10, 1, NULL));
    ck_assert_ptr_eq(hixl_range_find(&idx, 30, 5, NULL), &r[2]);
    hixl_range_remove(&idx, &r[1]);
    hixl_range_remove(&idx, &r[2]);
    ck_assert_uint_eq(idx.count, 0);
    ck_assert_ptr_null(hixl_range_find(&idx, 30, 1, NULL));
    /* and it fills again */
    index_add(&idx, &r[1]);
    ck_assert_ptr_eq(hixl_range_find(&idx, 20, 5, NULL), &r[1]);
    hixl_range_index_cleanup(&idx);
    ck_assert_uint_eq(idx.count, 0);
}
END_TEST

/* Ranges touching 0 and the top of the address space; lengths that wrap. */
START_TEST(test_address_space_edges)
{
    hixl_range_t       low = R(0, 4096);
    hixl_range_t       top = R(UINT64_MAX - 99, 100); /* last byte UINT64_MAX */
    hixl_range_index_t idx;
    hixl_range_t *s;

    memset(&idx, 0, sizeof(idx));
    index_add(&idx, &top);
    index_add(&idx, &low);
    check_sorted(&idx);

    ck_assert_ptr_eq(hixl_range_find(&idx, 0, 4096, NULL), &low);
    ck_assert_ptr_eq(hixl_range_find(&idx, UINT64_MAX, 1, NULL), &top);
    ck_assert_ptr_eq(hixl_range_find(&idx, UINT64_MAX - 99, 100, NULL), &top);
    s = NULL;
    ck_assert_ptr_null(hixl_range_find(&idx, UINT64_MAX, 2, &s));  /* wraps */
    ck_assert_ptr_eq(s, &top);
    s = NULL;
    ck_assert_ptr_null(hixl_range_find(&idx, UINT64_MAX - 10, UINT64_MAX, &s));
    ck_assert_ptr_eq(s, &top);
    s = NULL;
    ck_assert_ptr_null(hixl_range_find(&idx, 10, UINT64_MAX, &s));
    ck_assert_ptr_eq(s, &low);
    s = NULL;
    ck_assert_ptr_null(hixl_range_find(&idx, 10, UINT64_MAX - 9, &s));
    ck_assert_ptr_eq(s, &low);
    /* a length that wraps exactly to the start of a range */
    ck_assert_ptr_null(hixl_range_find(&idx, 4000, (uint64_t)0 - 4000 + 1,
                                       NULL));
    ck_assert_ptr_eq(hixl_range_overlap(&idx, UINT64_MAX - 200, 150), &top);
    ck_assert_ptr_null(hixl_range_overlap(&idx, UINT64_MAX - 200, 101));
    ck_assert_ptr_eq(hixl_range_overlap(&idx, 4095, 1), &low);
    ck_assert_ptr_null(hixl_range_overlap(&idx, 4096, 1000));
    hixl_range_index_cleanup(&idx);
}
END_TEST

/* 2000 ranges of random sizes and gaps inserted in random order (the index
 * grows many times), then random queries compared with brute force, then
 * half removed and compared again. */
START_TEST(test_random_against_brute_force)
{
    enum { N = 2000, Q = 4000 };
    hixl_range_t *rs = calloc(N, sizeof(*rs));
    size_t *order = calloc(N, sizeof(*order));
    hixl_range_index_t idx;
    uint64_t rng = 99, addr = 4096, a, l;
    size_t i, j, tmp, live;
    hixl_range_t *got, *want, *s;

    ck_assert(rs && order);
    memset(&idx, 0, sizeof(idx));
    for (i = 0; i < N; ++i) {
        addr += hx_rand(&rng) % 3;          /* gap of 0..2: some touch */
        rs[i].addr = addr;
        rs[i].len  = 1 + hx_rand(&rng) % 50;
        addr      += rs[i].len;
        order[i]   = i;
    }
    for (i = N; i > 1; --i) {
        j = (size_t)(hx_rand(&rng) % i);
        tmp = order[i - 1]; order[i - 1] = order[j]; order[j] = tmp;
    }
    for (i = 0; i < N; ++i) {
        index_add(&idx, &rs[order[i]]);
    }
    ck_assert_uint_eq(idx.count, N);
    check_sorted(&idx);

    for (live = N; ; live = N / 2) {
        for (i = 0; i < Q; ++i) {
            a = 4000 + hx_rand(&rng) % (addr - 3900);
            l = hx_rand(&rng) % 60;
            if (l == 0) {
                l = 1;
            }
            s    = NULL;
            got  = hixl_range_find(&idx, a, l, &s);
            want = brute_find(rs, live, a, l);
            ck_assert_msg(got == want, "find(%llu, %llu): %p, expected %p",
                          (unsigned long long)a, (unsigned long long)l,
                          (void*)got, (void*)want);
            if (got == NULL && s != NULL) {
                ck_assert(s->addr <= a && a < s->addr + s->len);
            }
            got = hixl_range_overlap(&idx, a, l);
            if (got != NULL) {
                ck_assert(overlaps(got, a, l));
            } else {
                for (j = 0; j < live; ++j) {
                    ck_assert_msg(!overlaps(&rs[j], a, l), "overlap(%llu, "
                                  "%llu) missed [%llu, +%llu)",
                                  (unsigned long long)a, (unsigned long long)l,
                                  (unsigned long long)rs[j].addr,
                                  (unsigned long long)rs[j].len);
                }
            }
        }
        if (live == N / 2) {
            break;
        }
        /* drop the second half (by position), in random order */
        for (i = 0; i < N; ++i) {
            if (order[i] >= N / 2) {
                hixl_range_remove(&idx, &rs[order[i]]);
            }
        }
        ck_assert_uint_eq(idx.count, N / 2);
        check_sorted(&idx);
    }
    hixl_range_index_cleanup(&idx);
    free(rs);
    free(order);
}
END_TEST

static Suite *unit_range_index_suite(void)
{
    Suite *s = suite_create("range_index");
    TCase *tc = hx_tcase("range_index");

    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_find_and_straddle);
    tcase_add_test(tc, test_overlap);
    tcase_add_test(tc, test_remove);
    tcase_add_test(tc, test_address_space_edges);
    tcase_add_test(tc, test_random_against_brute_force);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_range_index_suite());
}
