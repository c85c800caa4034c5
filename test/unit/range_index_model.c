/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the range index (src/util/range_index.h) against a plain model.
 * Thousands of random inserts, removes and lookups, interleaved, over a
 * pool of ranges packed into three small windows of the address space (at
 * 0, in the middle and at the very top, where a careless addr + len
 * wraps), so that ranges are often adjacent or touching.  After every
 * operation the index answers as a linear scan of the live ranges would;
 * every few hundred operations the tree itself is checked: order, parent
 * links, heights, balance and count.
 */
#include "config.h"
#include "harness.h"
#include "util/range_index.h"

#include <stdlib.h>
#include <string.h>

enum { POOL = 400, OPS = 30000, CHECK_EVERY = 250, WINDOW = 2048 };

typedef struct model {
    hixl_range_t obj[POOL];
    int          live[POOL];
    size_t       nlive;
    uint64_t     rng;
} model_t;

static const uint64_t bases[] = {0, (uint64_t)1 << 47,
                                 UINT64_MAX - (WINDOW - 1)};

/* ---- the model: plain definitions over the live ranges ----------------- */

static int holds(const hixl_range_t *r, uint64_t addr, uint64_t len)
{
    unsigned __int128 a = addr, l = len, ra = r->addr, rl = r->len;

    return (a >= ra) && (a + l <= ra + rl);
}

static int touches(const hixl_range_t *r, uint64_t addr, uint64_t len)
{
    unsigned __int128 a = addr, l = len, ra = r->addr, rl = r->len;

    return (len > 0) && (a < ra + rl) && (ra < a + l);
}

static const hixl_range_t *model_floor(const model_t *m, uint64_t addr)
{
    const hixl_range_t *best = NULL;
    size_t              i;

    for (i = 0; i < POOL; ++i) {
        if (m->live[i] && (m->obj[i].addr <= addr) &&
            ((best == NULL) || (m->obj[i].addr > best->addr))) {
            best = &m->obj[i];
        }
    }
    return best;
}

static const hixl_range_t *model_holder(const model_t *m, uint64_t addr,
                                        uint64_t len)
{
    size_t i;

    for (i = 0; i < POOL; ++i) {
        if (m->live[i] && holds(&m->obj[i], addr, len)) {
            return &m->obj[i];
        }
    }
    return NULL;
}

static int model_overlaps(const model_t *m, uint64_t addr, uint64_t len)
{
    size_t i;

    for (i = 0; i < POOL; ++i) {
        if (m->live[i] && touches(&m->obj[i], addr, len)) {
            return 1;
        }
    }
    return 0;
}

/* ---- the tree's own invariants --------------------------------------- */

/* Height of the subtree at n, checking it on the way; *count adds its
 * nodes.  Its addresses lie in [lo, hi]. */
static int32_t check_subtree(const hixl_range_t *n, const hixl_range_t *parent,
                             uint64_t lo, uint64_t hi, size_t *count)
{
    int32_t l, r;

    if (n == NULL) {
        return 0;
    }
    ck_assert_ptr_eq(n->parent, parent);
    ck_assert_msg((n->addr >= lo) && (n->addr <= hi), "0x%llx out of order",
                  (unsigned long long)n->addr);
    ++*count;
    /* addresses are unique: nothing below 0 or above UINT64_MAX */
    ck_assert((n->addr > 0) || (n->child[0] == NULL));
    ck_assert((n->addr < UINT64_MAX) || (n->child[1] == NULL));
    l = check_subtree(n->child[0], n, lo, n->addr - 1, count);
    r = check_subtree(n->child[1], n, n->addr + 1, hi, count);
    ck_assert_int_le(abs(l - r), 1);
    ck_assert_int_eq(n->height, 1 + ((l > r) ? l : r));
    return n->height;
}

static void check_tree(const hixl_range_index_t *idx, const model_t *m)
{
    const hixl_range_t *r, *prev = NULL;
    size_t              count = 0, walked = 0;

    check_subtree(idx->root, NULL, 0, UINT64_MAX, &count);
    ck_assert_uint_eq(count, m->nlive);
    ck_assert_uint_eq(idx->count, m->nlive);
    for (r = hixl_range_first(idx); r != NULL; r = hixl_range_next(r)) {
        ck_assert((prev == NULL) || (prev->addr < r->addr));
        ck_assert(m->live[r - m->obj]);
        prev = r;
        ++walked;
    }
    ck_assert_uint_eq(walked, m->nlive);
}

/* ---- operations --------------------------------------------------------- */

static void random_range(model_t *m, uint64_t *addr, uint64_t *len)
{
    uint64_t base = bases[hx_rand(&m->rng) % 3];
    uint64_t off  = hx_rand(&m->rng) % WINDOW;
    uint64_t room = WINDOW - off; /* bytes to the window's end */

    *addr = base + off;
    *len  = 1 + hx_rand(&m->rng) % 24;
    if (*len > room) {
        *len = room; /* the top window ends at UINT64_MAX inclusive */
    }
}

static void op_insert(hixl_range_index_t *idx, model_t *m)
{
    hixl_range_t *got;
    uint64_t      addr, len;
    size_t        i;

    random_range(m, &addr, &len);
    got = hixl_range_overlap(idx, addr, len);
    ck_assert_msg((got != NULL) == model_overlaps(m, addr, len),
                  "overlap(0x%llx, %llu)", (unsigned long long)addr,
                  (unsigned long long)len);
    if (got != NULL) {
        ck_assert(touches(got, addr, len) && m->live[got - m->obj]);
        return;
    }
    for (i = hx_rand(&m->rng) % POOL; m->live[i]; i = (i + 1) % POOL) {
    }
    m->obj[i].addr = addr;
    m->obj[i].len  = len;
    hx_ok(hixl_range_insert(idx, &m->obj[i]));
    m->live[i] = 1;
    m->nlive++;
}

static void op_remove(hixl_range_index_t *idx, model_t *m)
{
    size_t       i = hx_rand(&m->rng) % POOL, j;
    hixl_range_t stranger;

    if (!m->live[i]) {
        /* not a member: removing it, or a copy of a member, changes nothing */
        if (m->nlive > 0) {
            for (j = i; !m->live[j]; j = (j + 1) % POOL) {
            }
            memset(&stranger, 0, sizeof(stranger));
            stranger.addr = m->obj[j].addr;
            stranger.len  = m->obj[j].len;
            hixl_range_remove(idx, &stranger);
        }
        hixl_range_remove(idx, &m->obj[i]);
        ck_assert_uint_eq(idx->count, m->nlive);
        return;
    }
    hixl_range_remove(idx, &m->obj[i]);
    m->live[i] = 0;
    m->nlive--;
    ck_assert_uint_eq(idx->count, m->nlive);
}

static void op_lookup(hixl_range_index_t *idx, model_t *m)
{
    const hixl_range_t *want, *hint, *floor;
    hixl_range_t       *got, *straddle = NULL;
    uint64_t            addr, len;
    size_t              i = hx_rand(&m->rng) % POOL;

    if (m->live[i] && (hx_rand(&m->rng) % 2)) {
        /* at a live range: its edges and one past them */
        addr = m->obj[i].addr + hx_rand(&m->rng) % (m->obj[i].len + 1) - 1;
        len  = 1 + hx_rand(&m->rng) % (m->obj[i].len + 1);
    } else {
        random_range(m, &addr, &len);
    }
    if (hx_rand(&m->rng) % 16 == 0) {
        len = UINT64_MAX - hx_rand(&m->rng) % 3; /* wraps from anywhere */
    }
    want  = model_holder(m, addr, len);
    floor = model_floor(m, addr);

    hint = idx->hint;
    ck_assert_ptr_eq(hixl_range_lookup(idx, addr, len), want);
    ck_assert_ptr_eq(idx->hint, hint); /* readers leave it alone */
    ck_assert_ptr_eq(hixl_range_floor(idx, addr), floor);

    got = hixl_range_find(idx, addr, len, &straddle);
    ck_assert_msg(got == want, "find(0x%llx, %llu): %p, expected %p",
                  (unsigned long long)addr, (unsigned long long)len,
                  (void *)got, (const void *)want);
    if (got != NULL) {
        ck_assert_ptr_eq(idx->hint, got);
        /* again: now through the hint */
        ck_assert_ptr_eq(hixl_range_find(idx, addr, len, NULL), got);
    } else if ((floor != NULL) && (addr - floor->addr < floor->len)) {
        ck_assert_ptr_eq(straddle, floor);
    } else {
        ck_assert_ptr_null(straddle);
    }
}

static void drained(hixl_range_t *r, void *arg)
{
    model_t *m = arg;
    size_t   i = (size_t)(r - m->obj);

    ck_assert(m->live[i]); /* once each, members only */
    m->live[i] = 0;
    m->nlive--;
    memset(r, 0xa5, sizeof(*r)); /* as if freed */
}

START_TEST(test_against_model)
{
    model_t           *m = calloc(1, sizeof(*m));
    hixl_range_index_t idx;
    unsigned           op, kind;

    ck_assert_ptr_nonnull(m);
    m->rng = 7 + (uint64_t)_i;
    memset(&idx, 0, sizeof(idx));
    for (op = 0; op < OPS; ++op) {
        /* inserts win early, removes catch up once the pool is half full */
        kind = (unsigned)(hx_rand(&m->rng) % 100);
        if (kind < ((m->nlive < POOL / 2) ? 45 : 25)) {
            op_insert(&idx, m);
        } else if (kind < 60) {
            op_remove(&idx, m);
        } else {
            op_lookup(&idx, m);
        }
        if (op % CHECK_EVERY == 0) {
            check_tree(&idx, m);
        }
    }
    check_tree(&idx, m);
    ck_assert_uint_gt(m->nlive, 0);
    hixl_range_index_drain(&idx, drained, m);
    ck_assert_uint_eq(m->nlive, 0);
    ck_assert_ptr_null(idx.root);
    ck_assert_uint_eq(idx.count, 0);
    free(m);
}
END_TEST

/* Ascending and descending inserts (a registration loop's order) keep the
 * tree balanced; removing from either end and the middle keeps it so. */
START_TEST(test_sorted_runs)
{
    enum { N = 4096 };
    hixl_range_t      *rs = calloc(N, sizeof(*rs));
    hixl_range_index_t idx;
    size_t             i, count;
    int32_t            h;

    ck_assert_ptr_nonnull(rs);
    memset(&idx, 0, sizeof(idx));
    for (i = 0; i < N; ++i) {
        /* touching ranges: one ends where the next begins */
        rs[i].addr = (_i ? (N - 1 - i) : i) * 64;
        rs[i].len  = 64;
        hx_ok(hixl_range_insert(&idx, &rs[i]));
    }
    count = 0;
    h     = check_subtree(idx.root, NULL, 0, UINT64_MAX, &count);
    ck_assert_uint_eq(count, N);
    ck_assert_int_le(h, 13); /* 1.44 log2(4096) is 17; AVL sorted: 13 */
    for (i = 0; i < N; ++i) {
        ck_assert_ptr_eq(hixl_range_lookup(&idx, i * 64 + 63, 1),
                         &rs[_i ? N - 1 - i : i]);
    }
    for (i = 0; i < N / 4; ++i) {
        hixl_range_remove(&idx, &rs[i]);
        hixl_range_remove(&idx, &rs[N - 1 - i]);
        hixl_range_remove(&idx, &rs[N / 2 - N / 8 + i / 2]);
    }
    count = 0;
    check_subtree(idx.root, NULL, 0, UINT64_MAX, &count);
    ck_assert_uint_eq(count, idx.count);
    hixl_range_index_cleanup(&idx);
    free(rs);
}
END_TEST

static Suite *unit_range_index_model_suite(void)
{
    Suite *s  = suite_create("range_index_model");
    TCase *tc = hx_tcase("range_index_model");

    tcase_add_loop_test(tc, test_against_model, 0, 4); /* four seeds */
    tcase_add_loop_test(tc, test_sorted_runs, 0, 2);   /* up, down */
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_range_index_model_suite());
}
