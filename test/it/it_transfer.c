/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: READ and WRITE between this process and a forked target, one
 * descriptor at a time, every byte verified where it landed.
 *
 * Each test loops over a table of modes: the UCX transport (tcp, sm,
 * UCX's default, posix+cma), the progress thread on or off on either side,
 * and IPv4 or IPv6 engine names.  Without a progress thread the initiator's
 * own status polls and sync waits drive progress, and the target drives its
 * engine with hixl_get_notifies() (harness.c); on tcp, where UCX puts need
 * target-side progress, that is the case the progress thread exists for.
 */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <string.h>

typedef struct it_mode {
    int         tls;            /* index into hx_tls_table */
    int         init_progress;  /* hixl.ProgressThread of the initiator */
    int         tgt_progress;   /* ... of the target */
    const char *tgt_name;
    const char *init_name;
} it_mode_t;

static const it_mode_t it_modes[] = {
    {0, 1, 1, "127.0.0.1:0", "127.0.0.1"},
    {1, 1, 1, "127.0.0.1:0", "127.0.0.1"},
    {2, 1, 1, "127.0.0.1:0", "127.0.0.1"},
    {3, 1, 1, "127.0.0.1:0", "127.0.0.1"},
    {0, 0, 1, "127.0.0.1:0", "127.0.0.1"},
    {1, 0, 1, "127.0.0.1:0", "127.0.0.1"},
    {2, 0, 1, "127.0.0.1:0", "127.0.0.1"},
    {0, 0, 0, "127.0.0.1:0", "127.0.0.1"},
    {1, 0, 0, "127.0.0.1:0", "127.0.0.1"},
    {2, 1, 0, "127.0.0.1:0", "127.0.0.1"},
    {0, 1, 1, "[::1]:0", "::1"},
    {1, 0, 1, "[::1]:0", "::1"},
    {2, 1, 1, "[::1]:0", "::1"},
};
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

/* The first modes only: one per transport with both progress threads on. */
#define IT_NMODES_BASIC 4

#define TGT_SEED 0x7a11u   /* what target memory holds before a test */

/* Pick the transport, start the target, create and connect the initiator.
 * The target is forked before this process touches UCX. */
static hixl_engine_t *it_setup(int i, hx_target_t *t, size_t region_len,
                               size_t misalign)
{
    const it_mode_t *m = &it_modes[i];
    hx_target_cfg_t cfg;
    hixl_engine_t *e;

    hx_use_tls(m->tls);
    hx_target_cfg_init(&cfg, region_len);
    cfg.name      = m->tgt_name;
    cfg.misalign  = misalign;
    cfg.init_seed = TGT_SEED;
    cfg.progress  = m->tgt_progress;
    hx_target_start(t, &cfg);

    e = hx_engine(m->init_name, "hixl.ProgressThread",
                  m->init_progress ? "1" : "0", NULL);
    hx_connect(e, t->name);
    return e;
}

static void it_teardown(hixl_engine_t *e, hx_target_t *t)
{
    hx_ok(hixl_finalize(e));
    hx_target_stop(t);
}

/*
 * Sizes from 1 byte to 64 MiB, both directions, at odd offsets on both
 * sides, alternating sync and async.  The byte before and the byte after
 * each destination range are checked too: a transport that rounds a length
 * up or an address down would overwrite them.
 */
START_TEST(test_sizes)
{
    static const size_t sizes[] = {
        1, 2, 3, 7, 8, 9, 63, 64, 65, 4095, 4096, 4097, 65537,
        HX_MIB + 7, 8 * HX_MIB - 3, 64 * HX_MIB
    };
    const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
    const size_t region = 64 * HX_MIB + 64;
    const uint64_t local_guard = 0x10ca1;
    hixl_transfer_op_desc_t d;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *map, *local;
    size_t k, size, lo, ro;
    uint64_t seed;
    char what[128];

    map   = hx_alloc_pages(region + 4096);
    local = map + 5;   /* the local region itself starts unaligned */
    e     = it_setup(_i, &t, region, 3);
    hx_register(e, local, region);

    for (k = 0; k < nsizes; ++k) {
        size = sizes[k];
        lo   = 1 + (k % 7);
        ro   = 3 + (k % 5);
        seed = 1000 + k;
        d.local_addr  = (uintptr_t)(local + lo);
        d.remote_addr = t.addr[0] + ro;
        d.len         = size;

        /* WRITE: local pattern lands in the target, neighbours untouched */
        hx_pat_fill(local + lo, size, seed, 0);
        hx_transfer(e, t.name, HIXL_WRITE, &d, 1, k & 1);
        hx_target_verify(&t, 0, ro, size, seed, 0);
        hx_target_verify(&t, 0, ro - 1, 1, TGT_SEED, ro - 1);
        hx_target_verify(&t, 0, ro + size, 1, TGT_SEED, ro + size);
        /* restore the target, so the next size checks its neighbours
         * against the initial pattern again */
        hx_target_fill(&t, 0, ro, size, TGT_SEED, ro);

        /* READ: the target's pattern lands here, neighbours untouched */
        hx_pat_fill(local + lo - 1, size + 2, local_guard, lo - 1);
        hx_target_fill(&t, 0, ro, size, seed + 500, 7);
        hx_transfer(e, t.name, HIXL_READ, &d, 1, !(k & 1));
        snprintf(what, sizeof(what), "READ of %zu bytes", size);
        hx_pat_assert(local + lo, size, seed + 500, 7, what);
        hx_pat_assert(local + lo - 1, 1, local_guard, lo - 1, what);
        hx_pat_assert(local + lo + size, 1, local_guard, lo + size, what);
        hx_target_fill(&t, 0, ro, size, TGT_SEED, ro);
    }

    it_teardown(e, &t);
    hx_free_pages(map, region + 4096);
}
END_TEST

/*
 * Every combination of local and remote misalignment (0..7) with lengths
 * that start and end inside a word, each its own transfer into its own
 * slot, then each slot and both its neighbours verified.
 */
START_TEST(test_unaligned)
{
    static const size_t lens[] = {1, 5, 13, 4099};
    const size_t slot = 8192, nslots = 8 * 8 * 4;
    const size_t region = slot * (nslots + 1);
    hixl_transfer_op_desc_t d;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t lm, rm, li, s = 0, ro, lo, len;

    local = hx_alloc_pages(region);
    e     = it_setup(_i, &t, region, 0);
    hx_register(e, local, region);
    hx_pat_fill(local, region, 42, 0);

    /* WRITE every slot: local [lo, +len) -> remote [ro, +len) */
    for (lm = 0; lm < 8; ++lm) {
        for (rm = 0; rm < 8; ++rm) {
            for (li = 0; li < 4; ++li, ++s) {
                lo = s * slot + lm;
                ro = s * slot + 16 + rm;
                len = lens[li];
                d.local_addr  = (uintptr_t)(local + lo);
                d.remote_addr = t.addr[0] + ro;
                d.len         = len;
                hx_transfer(e, t.name, HIXL_WRITE, &d, 1, s & 1);
            }
        }
    }
    for (s = 0; s < nslots; ++s) {
        lm  = (s / 32);
        rm  = (s / 4) % 8;
        len = lens[s % 4];
        lo  = s * slot + lm;
        ro  = s * slot + 16 + rm;
        hx_target_verify(&t, 0, s * slot, ro - s * slot, TGT_SEED, s * slot);
        hx_target_verify(&t, 0, ro, len, 42, lo);
        hx_target_verify(&t, 0, ro + len, (s + 1) * slot - (ro + len),
                         TGT_SEED, ro + len);
    }

    /* READ them back into a cleared local buffer, again unaligned */
    hx_pat_fill(local, region, 43, 0);
    for (s = 0; s < nslots; ++s) {
        lm  = (s / 32);
        rm  = (s / 4) % 8;
        len = lens[s % 4];
        lo  = s * slot + 7 - lm;
        ro  = s * slot + 16 + rm;
        d.local_addr  = (uintptr_t)(local + lo);
        d.remote_addr = t.addr[0] + ro;
        d.len         = len;
        hx_transfer(e, t.name, HIXL_READ, &d, 1, !(s & 1));
    }
    for (s = 0; s < nslots; ++s) {
        lm  = (s / 32);
        len = lens[s % 4];
        lo  = s * slot + 7 - lm;
        hx_pat_assert(local + s * slot, lo - s * slot, 43, s * slot,
                      "bytes before a READ destination");
        hx_pat_assert(local + lo, len, 42, s * slot + lm, "READ data");
        hx_pat_assert(local + lo + len, (s + 1) * slot - (lo + len), 43,
                      lo + len, "bytes after a READ destination");
    }

    it_teardown(e, &t);
    hx_free_pages(local, region);
}
END_TEST

/*
 * The edges of registered regions on both sides: a whole region, its first
 * byte, its last byte, a range ending exactly at the region end.  An
 * off-by-one in the range checks refuses these.
 */
START_TEST(test_region_edges)
{
    const size_t region = 3 * 4096 + 11;
    hixl_transfer_op_desc_t d[4];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *map, *local;

    map   = hx_alloc_pages(region + 8192);
    local = map + 4096 - 7;   /* straddles a page boundary on purpose */
    e     = it_setup(_i, &t, region, 1);
    hx_register(e, local, region);

    /* whole region */
    hx_pat_fill(local, region, 5, 0);
    d[0].local_addr  = (uintptr_t)local;
    d[0].remote_addr = t.addr[0];
    d[0].len         = region;
    hx_transfer(e, t.name, HIXL_WRITE, d, 1, 0);
    hx_target_verify(&t, 0, 0, region, 5, 0);

    /* first byte, last byte, and the last 100 bytes, in one batch */
    hx_pat_fill(local, region, 6, 0);
    d[0].local_addr  = (uintptr_t)local;
    d[0].remote_addr = t.addr[0];
    d[0].len         = 1;
    d[1].local_addr  = (uintptr_t)(local + region - 1);
    d[1].remote_addr = t.addr[0] + region - 1;
    d[1].len         = 1;
    d[2].local_addr  = (uintptr_t)(local + region - 101);
    d[2].remote_addr = t.addr[0] + region - 101;
    d[2].len         = 100;
    hx_transfer(e, t.name, HIXL_WRITE, d, 3, 1);
    hx_target_verify(&t, 0, 0, 1, 6, 0);
    hx_target_verify(&t, 0, 1, region - 102, 5, 1);
    hx_target_verify(&t, 0, region - 101, 101, 6, region - 101);

    /* and back: the whole remote region into the whole local one */
    hx_target_fill(&t, 0, 0, region, 9, 0);
    hx_pat_fill(local, region, 10, 0);
    d[0].local_addr  = (uintptr_t)local;
    d[0].remote_addr = t.addr[0];
    d[0].len         = region;
    hx_transfer(e, t.name, HIXL_READ, d, 1, 1);
    hx_pat_assert(local, region, 9, 0, "READ of a whole region");

    it_teardown(e, &t);
    hx_free_pages(map, region + 8192);
}
END_TEST

/*
 * Disconnect and connect again: transfers after the disconnect are refused
 * with NOT_CONNECTED, and after the new connect they work.  The target keeps
 * running, so it must accept the same engine name again.
 */
START_TEST(test_reconnect)
{
    const size_t region = 1 << 20;
    hixl_transfer_op_desc_t d;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int round;

    local = hx_alloc_pages(region);
    e     = it_setup(_i, &t, region, 0);
    hx_register(e, local, region);
    d.local_addr  = (uintptr_t)local;
    d.remote_addr = t.addr[0];
    d.len         = region;

    for (round = 0; round < 3; ++round) {
        hx_pat_fill(local, region, 100 + (uint64_t)round, 0);
        hx_transfer(e, t.name, HIXL_WRITE, &d, 1, round & 1);
        hx_target_verify(&t, 0, 0, region, 100 + (uint64_t)round, 0);
        hx_ok(hixl_disconnect(e, t.name, HX_OP_TIMEOUT_MS));
        hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1,
                                     HX_OP_TIMEOUT_MS),
                  HIXL_NOT_CONNECTED, t.name);
        hx_expect(hixl_disconnect(e, t.name, HX_OP_TIMEOUT_MS),
                  HIXL_NOT_CONNECTED, NULL);
        hx_connect(e, t.name);
    }
    /* the last connect works too */
    hx_target_fill(&t, 0, 0, region, 7, 0);
    hx_transfer(e, t.name, HIXL_READ, &d, 1, 0);
    hx_pat_assert(local, region, 7, 0, "READ after reconnect");

    it_teardown(e, &t);
    hx_free_pages(local, region);
}
END_TEST

/*
 * A region registered locally after the connect, and one deregistered and
 * registered again at the same place: local registrations need no peer
 * round trip and take effect at once.
 */
START_TEST(test_local_register_late)
{
    const size_t region = 256 * 1024;
    hixl_transfer_op_desc_t d;
    hixl_mem_handle_t h;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;

    local = hx_alloc_pages(region);
    e     = it_setup(_i, &t, region, 0);
    h     = hx_register(e, local, region);
    d.local_addr  = (uintptr_t)(local + 1);
    d.remote_addr = t.addr[0] + 2;
    d.len         = region - 3;
    hx_pat_fill(local, region, 11, 0);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 0);
    hx_target_verify(&t, 0, 2, region - 3, 11, 1);

    hx_ok(hixl_deregister_mem(e, h));
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 0");
    h = hx_register(e, local, region);
    hx_pat_fill(local, region, 12, 0);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 1);
    hx_target_verify(&t, 0, 2, region - 3, 12, 1);

    it_teardown(e, &t);
    hx_free_pages(local, region);
}
END_TEST

static Suite *it_transfer_suite(void)
{
    Suite *s = suite_create("it_transfer");
    TCase *tc;

    tc = hx_tcase("sizes");
    tcase_add_loop_test(tc, test_sizes, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("unaligned");
    tcase_add_loop_test(tc, test_unaligned, 0, IT_NMODES_BASIC);
    suite_add_tcase(s, tc);

    tc = hx_tcase("region_edges");
    tcase_add_loop_test(tc, test_region_edges, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("reconnect");
    tcase_add_loop_test(tc, test_reconnect, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("local_register_late");
    tcase_add_loop_test(tc, test_local_register_late, 0, IT_NMODES_BASIC);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_transfer_suite());
}
