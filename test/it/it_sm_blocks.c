/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: small scattered blocks to a peer on this host (UCX_TLS=sm),
 * on both copy paths: "map" (a memcpy into the target's hixl_alloc_mem
 * memory, mapped here) and "cma" (process_vm_writev / readv into its
 * registered mmap memory).  A request's copies to one peer go in batches
 * (ops/copy_batch.h), so the cases are the batch's edges:
 *
 *   - 1,536 blocks of 4 KiB on one path: more than IOV_MAX (1,024) in a
 *     row, so one request makes several batches (kernel calls);
 *   - blocks of 1 B to 9 MiB, on both paths in a shuffled order: a batch
 *     ends where the path changes, a block larger than a batch's piece
 *     (8 MiB) is cut;
 *
 * each WRITE and READ, copied inline (the default), by the copier thread
 * (hixl.AsyncCopy=thread) and by hixl_transfer_sync.  Blocks lie shuffled
 * with gaps of a few bytes at both ends; every byte of every block and of
 * every gap is checked (the target's regions and this process's buffer).
 * Then a target killed while the copier writes 128 MiB of 4 KiB blocks
 * into it over cma: the request ends FAILED, it does not hang.
 */
#include "config.h"
#include "harness.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define REG        (24 * HX_MIB)   /* each target region */
#define LOCAL_LEN  (48 * HX_MIB)
#define TGT_SEED   0x5b10cu
#define NEW_SEED   0x5b11cu
#define LOCAL_SEED 0x5b12cu
#define MAX_BLOCKS 2048
#define MAP_REG    0               /* region 0: hixl_alloc_mem */
#define CMA_REG    1               /* region 1: mmap + register */

typedef struct it_block {
    int      region;
    uint64_t ro, lo, len;
} it_block_t;

typedef struct it_plan {
    const char *name;
    it_block_t  b[MAX_BLOCKS];
    size_t      n;
} it_plan_t;

static const char *const it_modes[] = {"inline", "thread", "sync"};
#define NUM_MODES 3
#define NUM_PLANS 3

static void it_plan_shuffle(it_plan_t *p, uint64_t *rng)
{
    it_block_t t;
    size_t i, j;

    for (i = p->n; i > 1; --i) {
        j = (size_t)(hx_rand(rng) % i);
        t = p->b[i - 1]; p->b[i - 1] = p->b[j]; p->b[j] = t;
    }
}

/* Blocks laid out with gaps of 1 to 200 bytes in their regions in the
 * order made, then with gaps in the local buffer in another order, then
 * listed in a third: no descriptor is next to its neighbour anywhere. */
static void it_plan_layout(it_plan_t *p, uint64_t seed)
{
    uint64_t rng = seed, end[2] = {0, 0}, lend = 0;
    size_t i;

    for (i = 0; i < p->n; ++i) {
        end[p->b[i].region] += 1 + hx_rand(&rng) % 200;
        p->b[i].ro           = end[p->b[i].region];
        end[p->b[i].region] += p->b[i].len;
        ck_assert(end[p->b[i].region] <= REG);
    }
    it_plan_shuffle(p, &rng);
    for (i = 0; i < p->n; ++i) {
        lend       += 1 + hx_rand(&rng) % 200;
        p->b[i].lo  = lend;
        lend       += p->b[i].len;
        ck_assert(lend <= LOCAL_LEN);
    }
    it_plan_shuffle(p, &rng);
}

static void it_plan_make(it_plan_t *p, int which)
{
    static const uint64_t sizes[] = {1, 100, 4096, 4096, 16384, 4096, 65536,
                                     4000};
    uint64_t rng = 99;
    size_t i;

    memset(p, 0, sizeof(*p));
    switch (which) {
    case 0:
    case 1:
        p->name = (which == 0) ? "map 1536 x 4 KiB" : "cma 1536 x 4 KiB";
        for (i = 0; i < 1536; ++i) {
            p->b[i].region = (which == 0) ? MAP_REG : CMA_REG;
            p->b[i].len    = 4096;
        }
        p->n = 1536;
        break;
    default:
        p->name = "map and cma mixed, 1 B to 9 MiB";
        for (i = 0; i < 1200; ++i) {
            p->b[i].region = (int)(hx_rand(&rng) & 1);
            p->b[i].len    = sizes[hx_rand(&rng) %
                                   (sizeof(sizes) / sizeof(sizes[0]))];
        }
        for (i = 1200; i < 1206; ++i) {   /* past a piece, and large */
            p->b[i].region = (int)(i & 1);
            p->b[i].len    = (i < 1202) ? 9 * HX_MIB + 3 : HX_MIB + 5;
        }
        p->n = 1206;
        break;
    }
    it_plan_layout(p, 1000 + (uint64_t)which);
}

static int it_by_ro(const void *a, const void *b)
{
    const it_block_t *x = a, *y = b;

    if (x->region != y->region) {
        return x->region - y->region;
    }
    return (x->ro > y->ro) - (x->ro < y->ro);
}

static int it_by_lo(const void *a, const void *b)
{
    const it_block_t *x = a, *y = b;

    return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The index of the pattern a block written to (region, ro) carries. */
static uint64_t it_idx(int region, uint64_t ro)
{
    return (uint64_t)region * REG + ro;
}

static void it_descs(const it_plan_t *p, const hx_target_t *t,
                     const uint8_t *local, hixl_transfer_op_desc_t *d)
{
    size_t i;

    for (i = 0; i < p->n; ++i) {
        d[i].local_addr  = (uintptr_t)local + p->b[i].lo;
        d[i].remote_addr = t->addr[p->b[i].region] + p->b[i].ro;
        d[i].len         = p->b[i].len;
    }
}

static void it_move(hixl_engine_t *e, const hx_target_t *t, int mode,
                    hixl_transfer_op_t op, const hixl_transfer_op_desc_t *d,
                    size_t n)
{
    hixl_transfer_status_t st;
    hixl_status_t status;
    hixl_req_t req;

    if (mode == 2) {
        hx_ok(hixl_transfer_sync(e, t->name, op, d, n, HX_OP_TIMEOUT_MS));
        return;
    }
    hx_ok(hixl_transfer_async(e, t->name, op, d, n, NULL, &req));
    st = hx_wait_req(e, req, &status);
    ck_assert_msg(st == HIXL_TRANSFER_COMPLETED, "%s ended %d: %s",
                  (op == HIXL_WRITE) ? "WRITE" : "READ", (int)st,
                  hixl_last_error());
}

/* Every block's bytes and every gap's, region by region, in the target
 * (a region no block went to, whole). */
static void it_verify_target(hx_target_t *t, it_plan_t *p)
{
    uint64_t pos[2] = {0, 0};
    const it_block_t *b;
    int r;
    size_t i;

    qsort(p->b, p->n, sizeof(p->b[0]), it_by_ro);
    for (i = 0; i < p->n; ++i) {
        b = &p->b[i];
        hx_target_verify(t, b->region, pos[b->region], b->ro - pos[b->region],
                         TGT_SEED, pos[b->region]);
        hx_target_verify(t, b->region, b->ro, b->len, NEW_SEED,
                         it_idx(b->region, b->ro));
        pos[b->region] = b->ro + b->len;
    }
    for (r = 0; r < 2; ++r) {
        hx_target_verify(t, r, pos[r], REG - pos[r], TGT_SEED, pos[r]);
    }
}

/* Every block read holds its remote bytes, every gap its own. */
static void it_verify_local(const uint8_t *local, it_plan_t *p)
{
    uint64_t pos = 0;
    char what[96];
    size_t i;

    qsort(p->b, p->n, sizeof(p->b[0]), it_by_lo);
    for (i = 0; i < p->n; ++i) {
        snprintf(what, sizeof(what), "the gap before local offset %llu",
                 (unsigned long long)p->b[i].lo);
        hx_pat_assert(local + pos, p->b[i].lo - pos, LOCAL_SEED, pos, what);
        snprintf(what, sizeof(what), "block read from region %d offset %llu",
                 p->b[i].region, (unsigned long long)p->b[i].ro);
        hx_pat_assert(local + p->b[i].lo, p->b[i].len, TGT_SEED,
                      p->b[i].ro, what);
        pos = p->b[i].lo + p->b[i].len;
    }
    hx_pat_assert(local + pos, LOCAL_LEN - pos, LOCAL_SEED, pos,
                  "the tail of the local buffer");
}

static void it_start_target(hx_target_t *t, size_t len, int map_region)
{
    hx_target_cfg_t cfg;

    hx_target_cfg_init(&cfg, len);
    cfg.init_seed = TGT_SEED;
    if (map_region) {
        cfg.region_len[1] = len;
        cfg.nregions      = 2;
        cfg.alloc         = 1u << MAP_REG;
    }
    hx_target_start(t, &cfg);
}

/* _i: the copy mode (inline, thread, sync) times the plan. */
START_TEST(test_scattered_blocks)
{
    static hixl_transfer_op_desc_t d[MAX_BLOCKS];
    static it_plan_t plan;
    int mode = _i % NUM_MODES, which = _i / NUM_MODES;
    uint64_t rng = 5;
    hixl_engine_t *e;
    hx_target_t t;
    uint8_t *local;
    size_t i;

    hx_use_tls(1);   /* hx_tls_table: UCX_TLS=sm */
    it_plan_make(&plan, which);
    fprintf(stderr, "[%s, %s]\n", plan.name, it_modes[mode]);
    it_start_target(&t, REG, 1);
    e = (mode == 1) ? hx_engine("127.0.0.1", "hixl.AsyncCopy", "thread",
                                NULL) :
                      hx_engine("127.0.0.1", NULL);
    hx_connect(e, t.name);
    local = hx_alloc_pages(LOCAL_LEN);
    hx_register(e, local, LOCAL_LEN);

    /* WRITE: each block carries the pattern of where it lands */
    hx_pat_fill(local, LOCAL_LEN, LOCAL_SEED, 0);
    for (i = 0; i < plan.n; ++i) {
        hx_pat_fill(local + plan.b[i].lo, plan.b[i].len, NEW_SEED,
                    it_idx(plan.b[i].region, plan.b[i].ro));
    }
    it_descs(&plan, &t, local, d);
    it_move(e, &t, mode, HIXL_WRITE, d, plan.n);
    it_verify_target(&t, &plan);

    /* READ: the target's pattern back into the local blocks */
    hx_target_fill(&t, MAP_REG, 0, REG, TGT_SEED, 0);
    hx_target_fill(&t, CMA_REG, 0, REG, TGT_SEED, 0);
    hx_pat_fill(local, LOCAL_LEN, LOCAL_SEED, 0);
    it_plan_shuffle(&plan, &rng);   /* the check sorted it */
    it_descs(&plan, &t, local, d);
    it_move(e, &t, mode, HIXL_READ, d, plan.n);
    it_verify_local(local, &plan);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, LOCAL_LEN);
}
END_TEST

#define KILL_BLK 4096
#define KILL_N   32768             /* 128 MiB */
#define KILL_LEN ((size_t)KILL_BLK * KILL_N)

/* The copier writes 128 MiB of 4 KiB blocks in a shuffled order into a
 * target's registered memory (cma) when the target is killed: the request
 * ends FAILED (the kernel's ESRCH, or the connection's end), not hangs.
 * Only a request that was done before the kill may say COMPLETED. */
START_TEST(test_killed_mid_cma)
{
    hixl_transfer_op_desc_t *d;
    hixl_transfer_status_t st, before = HIXL_TRANSFER_WAITING;
    hixl_status_t status;
    hixl_engine_t *e;
    hx_target_t t;
    hixl_req_t req;
    uint64_t rng = 7;
    uint8_t *local;
    size_t i, j, tmp, *slot;

    hx_use_tls(1);
    it_start_target(&t, KILL_LEN, 0);
    e = hx_engine("127.0.0.1", "hixl.AsyncCopy", "thread", NULL);
    hx_connect(e, t.name);
    local = hx_alloc_pages(KILL_LEN);
    memset(local, 0x5a, KILL_LEN);
    hx_register(e, local, KILL_LEN);
    d    = calloc(KILL_N, sizeof(*d));
    slot = calloc(KILL_N, sizeof(*slot));
    ck_assert((d != NULL) && (slot != NULL));
    for (i = 0; i < KILL_N; ++i) {
        slot[i] = i;
    }
    for (i = KILL_N; i > 1; --i) {
        j = (size_t)(hx_rand(&rng) % i);
        tmp = slot[i - 1]; slot[i - 1] = slot[j]; slot[j] = tmp;
    }
    for (i = 0; i < KILL_N; ++i) {
        d[i].local_addr  = (uintptr_t)local + i * KILL_BLK;
        d[i].remote_addr = t.addr[0] + slot[i] * KILL_BLK;
        d[i].len         = KILL_BLK;
    }

    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, d, KILL_N, NULL, &req));
    /* still copying when the kill is sent (a request that was done is
     * released by this look, and then the kill came too late) */
    hx_ok(hixl_get_transfer_status(e, req, &before));
    ck_assert_int_eq(kill(t.pid, SIGKILL), 0);
    if (before == HIXL_TRANSFER_WAITING) {
        st = hx_wait_req(e, req, &status);
        fprintf(stderr, "[cma, 128 MiB of 4 KiB blocks] the killed peer's "
                "request ended %s: %s\n", (st == HIXL_TRANSFER_FAILED) ?
                "FAILED" : (st == HIXL_TRANSFER_COMPLETED) ? "COMPLETED" :
                "TIMEOUT", hixl_last_error());
        ck_assert_msg(st == HIXL_TRANSFER_FAILED, "ended %d", (int)st);
    } else {
        fprintf(stderr, "[cma] the request was done before the kill: "
                "%d\n", (int)before);
        ck_assert_int_eq(before, HIXL_TRANSFER_COMPLETED);
    }
    waitpid(t.pid, NULL, 0);
    hx_ok(hixl_finalize(e));
    hx_free_pages(local, KILL_LEN);
    free(slot);
    free(d);
}
END_TEST

static Suite *it_sm_blocks_suite(void)
{
    Suite *s = suite_create("it_sm_blocks");
    TCase *tc;

    tc = hx_tcase("scattered_blocks");
    tcase_add_loop_test(tc, test_scattered_blocks, 0, NUM_MODES * NUM_PLANS);
    suite_add_tcase(s, tc);
    tc = hx_tcase("killed_mid_cma");
    tcase_add_test(tc, test_killed_mid_cma);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_sm_blocks_suite());
}
