/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: transfers by block table (hixl_blocks_prepare,
 * hixl_transfer_blocks_async) between this process and a target process,
 * over tcp and shared memory.
 *
 * A paged cache of NBLK blocks on each side: the target's blocks back to
 * back, this process's at shuffled offsets with gaps between them.  A
 * WRITE moves every local block to the remote block a random block table
 * names, each local block holding the pattern of the remote offset it goes
 * to, so one check in the target covers the whole region.  A READ brings
 * remote blocks to local ones by another table, and every local block and
 * every gap byte is checked here.  Then what a caller gets wrong: bad
 * layouts, blocks outside any region, ids past the end, layouts of the
 * wrong side, engine or peer, released layouts, and a region the remote
 * deregistered after the layout was prepared (refused, nothing written).
 */
#include "config.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define NBLK       512
#define BLK        4096
#define GAP        64
#define TGT_SEED   0xb10cu
#define LOCAL_SEED 0x10ca1u
#define REGION     ((size_t)NBLK * BLK)
#define LOCAL_LEN  ((size_t)NBLK * (BLK + GAP))

typedef struct it_pair {
    hx_target_t      t;
    hixl_engine_t   *e;
    uint8_t         *local;
    uint64_t         offsets[NBLK];   /* local block i's offset */
    hixl_blocks_t    lb, rb;
} it_pair_t;

static void it_shuffle(uint32_t *ids, size_t n, uint64_t seed)
{
    uint64_t rng = seed;
    size_t i, j;
    uint32_t tmp;

    for (i = 0; i < n; ++i) {
        ids[i] = (uint32_t)i;
    }
    for (i = n; i > 1; --i) {
        j = (size_t)(hx_rand(&rng) % i);
        tmp = ids[i - 1]; ids[i - 1] = ids[j]; ids[j] = tmp;
    }
}

static void it_setup(it_pair_t *p, int tls)
{
    hixl_block_layout_t l;
    hx_target_cfg_t cfg;
    uint32_t slot[NBLK];
    size_t i;

    memset(p, 0, sizeof(*p));
    hx_use_tls(tls);
    hx_target_cfg_init(&cfg, REGION);
    cfg.init_seed = TGT_SEED;
    hx_target_start(&p->t, &cfg);
    p->e = hx_engine("127.0.0.1", NULL);
    hx_connect(p->e, p->t.name);
    p->local = hx_alloc_pages(LOCAL_LEN);
    hx_pat_fill(p->local, LOCAL_LEN, LOCAL_SEED, 0);
    hx_register(p->e, p->local, LOCAL_LEN);
    /* local block i sits in slot slot[i]: offsets not in block order */
    it_shuffle(slot, NBLK, 77);
    for (i = 0; i < NBLK; ++i) {
        p->offsets[i] = (uint64_t)slot[i] * (BLK + GAP) + GAP / 2;
    }
    memset(&l, 0, sizeof(l));
    l.base       = (uintptr_t)p->local;
    l.block_size = BLK;
    l.num_blocks = NBLK;
    l.offsets    = p->offsets;
    hx_ok(hixl_blocks_prepare(p->e, NULL, &l, &p->lb));
    memset(&l, 0, sizeof(l));
    l.base       = p->t.addr[0];
    l.block_size = BLK;
    l.num_blocks = NBLK;
    hx_ok(hixl_blocks_prepare(p->e, p->t.name, &l, &p->rb));
}

static void it_teardown(it_pair_t *p)
{
    if (p->lb != NULL) {
        hx_ok(hixl_blocks_release(p->e, p->lb));
    }
    if (p->rb != NULL) {
        hx_ok(hixl_blocks_release(p->e, p->rb));
    }
    hx_ok(hixl_finalize(p->e));
    hx_target_stop(&p->t);
    hx_free_pages(p->local, LOCAL_LEN);
}

static void it_move(it_pair_t *p, hixl_transfer_op_t op, const uint32_t *lids,
                    const uint32_t *rids, size_t n)
{
    hixl_req_t req;

    hx_ok(hixl_transfer_blocks_async(p->e, p->t.name, op, p->lb, lids, p->rb,
                                     rids, n, NULL, &req));
    ck_assert_int_eq(hx_wait_req(p->e, req, NULL), HIXL_TRANSFER_COMPLETED);
}

/* Every local block to the remote block the table names, then the whole
 * remote region checked in the target. */
START_TEST(test_write_by_table)
{
    uint32_t lids[NBLK], rids[NBLK];
    it_pair_t p;
    size_t k;

    it_setup(&p, _i);
    it_shuffle(lids, NBLK, 11);
    it_shuffle(rids, NBLK, 12);
    for (k = 0; k < NBLK; ++k) {
        hx_pat_fill(p.local + p.offsets[lids[k]], BLK, LOCAL_SEED ^ 1,
                    (uint64_t)rids[k] * BLK);
    }
    it_move(&p, HIXL_WRITE, lids, rids, NBLK);
    hx_target_verify(&p.t, 0, 0, REGION, LOCAL_SEED ^ 1, 0);
    it_teardown(&p);
}
END_TEST

/* Remote blocks into local ones by a table covering half the blocks: each
 * block read holds its remote bytes, every other byte is untouched. */
START_TEST(test_read_by_table)
{
    uint32_t lids[NBLK], rids[NBLK];
    char what[128];
    int moved[NBLK] = {0};
    it_pair_t p;
    size_t k, n = NBLK / 2;

    it_setup(&p, _i);
    it_shuffle(lids, NBLK, 21);
    it_shuffle(rids, NBLK, 22);
    it_move(&p, HIXL_READ, lids, rids, n);
    for (k = 0; k < n; ++k) {
        snprintf(what, sizeof(what), "local block %u (remote block %u)",
                 lids[k], rids[k]);
        hx_pat_assert(p.local + p.offsets[lids[k]], BLK, TGT_SEED,
                      (uint64_t)rids[k] * BLK, what);
        moved[lids[k]] = 1;
    }
    for (k = 0; k < NBLK; ++k) {
        if (!moved[k]) {
            snprintf(what, sizeof(what), "local block %zu, not read", k);
            hx_pat_assert(p.local + p.offsets[k], BLK, LOCAL_SEED,
                          p.offsets[k], what);
        }
        /* the gap before block k's slot */
        hx_pat_assert(p.local + p.offsets[k] - GAP / 2, GAP / 2, LOCAL_SEED,
                      p.offsets[k] - GAP / 2, "a gap before a block");
        hx_pat_assert(p.local + p.offsets[k] + BLK, GAP / 2, LOCAL_SEED,
                      p.offsets[k] + BLK, "a gap after a block");
    }
    it_teardown(&p);
}
END_TEST

START_TEST(test_bad_input)
{
    hixl_block_layout_t l;
    hixl_blocks_t b = NULL, other;
    hixl_engine_t *e2;
    uint32_t ids[4] = {0, 1, 2, 3}, bad[2] = {1, NBLK};
    uint64_t offs[2] = {0, LOCAL_LEN - BLK + 1};
    hixl_req_t req;
    it_pair_t p;

    it_setup(&p, 0);
    memset(&l, 0, sizeof(l));
    hx_expect(hixl_blocks_prepare(NULL, NULL, &l, &b), HIXL_PARAM_INVALID,
              "engine");
    hx_expect(hixl_blocks_prepare(p.e, NULL, NULL, &b), HIXL_PARAM_INVALID,
              "layout");
    hx_expect(hixl_blocks_prepare(p.e, NULL, &l, NULL), HIXL_PARAM_INVALID,
              "blocks_p");
    hx_expect(hixl_blocks_prepare(p.e, "", &l, &b), HIXL_PARAM_INVALID,
              "empty");
    hx_expect(hixl_blocks_prepare(p.e, NULL, &l, &b), HIXL_PARAM_INVALID,
              "none may be 0");
    l.base = (uintptr_t)p.local; l.block_size = BLK; l.num_blocks = 2;
    l.offsets = offs;   /* the second block straddles the region's end */
    hx_expect(hixl_blocks_prepare(p.e, NULL, &l, &b), HIXL_PARAM_INVALID,
              "block 1");
    l.offsets = NULL; l.stride = UINT64_MAX / 2; l.num_blocks = 3;
    hx_expect(hixl_blocks_prepare(p.e, NULL, &l, &b), HIXL_PARAM_INVALID,
              "overflows");
    l.stride = 0; l.num_blocks = NBLK + 1; l.base = p.t.addr[0];
    hx_expect(hixl_blocks_prepare(p.e, p.t.name, &l, &b), HIXL_PARAM_INVALID,
              "registered by");
    hx_expect(hixl_blocks_prepare(p.e, "127.0.0.1:1", &l, &b),
              HIXL_NOT_CONNECTED, NULL);
    ck_assert_ptr_null(b);

    /* the transfer's own checks */
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, p.lb,
                                         ids, p.rb, bad, 2, NULL, &req),
              HIXL_PARAM_INVALID, "position 1");
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, p.lb,
                                         ids, p.rb, ids, 0, NULL, &req),
              HIXL_PARAM_INVALID, "count 0");
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, p.lb,
                                         NULL, p.rb, ids, 4, NULL, &req),
              HIXL_PARAM_INVALID, "NULL");
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, p.rb,
                                         ids, p.lb, ids, 4, NULL, &req),
              HIXL_PARAM_INVALID, "local blocks");
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, (hixl_transfer_op_t)7,
                                         p.lb, ids, p.rb, ids, 4, NULL, &req),
              HIXL_PARAM_INVALID, "op");
    /* a layout of another block size */
    l.num_blocks = 4; l.block_size = BLK / 2; l.base = (uintptr_t)p.local;
    hx_ok(hixl_blocks_prepare(p.e, NULL, &l, &other));
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, other,
                                         ids, p.rb, ids, 4, NULL, &req),
              HIXL_PARAM_INVALID, "block sizes differ");
    hx_ok(hixl_blocks_release(p.e, other));
    hx_expect(hixl_blocks_release(p.e, other), HIXL_PARAM_INVALID,
              "released already");
    hx_expect(hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, other,
                                         ids, p.rb, ids, 4, NULL, &req),
              HIXL_PARAM_INVALID, "local blocks");
    /* a layout of another engine */
    e2 = hx_engine("127.0.0.1", NULL);
    hx_expect(hixl_blocks_release(e2, p.lb), HIXL_PARAM_INVALID, NULL);
    hx_expect(hixl_transfer_blocks_async(e2, p.t.name, HIXL_WRITE, p.lb, ids,
                                         p.rb, ids, 4, NULL, &req),
              HIXL_PARAM_INVALID, NULL);
    /* left unreleased: finalize frees it */
    l.block_size = BLK;
    hx_register(e2, p.local, LOCAL_LEN);
    hx_ok(hixl_blocks_prepare(e2, NULL, &l, &other));
    hx_ok(hixl_finalize(e2));
    it_teardown(&p);
}
END_TEST

/* The remote deregisters the region after the layout was prepared: the
 * transfer is refused and the target's memory never written. */
START_TEST(test_region_gone)
{
    uint32_t ids[4] = {0, 1, 2, 3};
    hixl_req_t req;
    hixl_status_t st;
    it_pair_t p;

    it_setup(&p, _i);
    hx_target_deregister(&p.t, 0);
    hx_mark_last_error();
    st = hixl_transfer_blocks_async(p.e, p.t.name, HIXL_WRITE, p.lb, ids,
                                    p.rb, ids, 4, NULL, &req);
    ck_assert_msg(st == HIXL_PARAM_INVALID, "a block of a deregistered "
                  "region: %s (%d): %s", hixl_strerror(st), (int)st,
                  hixl_last_error());
    ck_assert_ptr_nonnull(strstr(hixl_last_error(), "not inside any region"));
    it_teardown(&p);
}
END_TEST

static Suite *it_blocks_suite(void)
{
    Suite *s = suite_create("it_blocks");
    TCase *tc;

    tc = hx_tcase("write_by_table");
    tcase_add_loop_test(tc, test_write_by_table, 0, 2);   /* tcp, sm */
    suite_add_tcase(s, tc);
    tc = hx_tcase("read_by_table");
    tcase_add_loop_test(tc, test_read_by_table, 0, 2);
    suite_add_tcase(s, tc);
    tc = hx_tcase("bad_input");
    tcase_add_test(tc, test_bad_input);
    suite_add_tcase(s, tc);
    tc = hx_tcase("region_gone");
    tcase_add_loop_test(tc, test_region_gone, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_blocks_suite());
}
