/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: memory the target registers after the initiator connected.
 *
 * hixl.h: "Regions may be registered after connecting; connected peers learn
 * of it before this call returns when they are reachable, and a peer that
 * has not yet learned of it asks for it before refusing a descriptor."  So
 * a transfer into a region issued right after the target's
 * hixl_register_mem() returned must succeed, on every transport and whether
 * or not the initiator has a progress thread to take the announcement.
 *
 * And the other way: after the target's hixl_deregister_mem() returned, the
 * region is gone for the initiator (PARAM_INVALID naming the descriptor),
 * and a new region at the same address is usable with its new key.
 */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <string.h>

typedef struct it_mode {
    int tls;
    int init_progress;
    int tgt_progress;
} it_mode_t;

static const it_mode_t it_modes[] = {
    {0, 1, 1}, {1, 1, 1}, {2, 1, 1},
    {0, 0, 1}, {1, 0, 1}, {2, 0, 1},
    {0, 1, 0}, {1, 0, 0},
};
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

static hixl_engine_t *it_setup(int i, hx_target_t *t, size_t region_len)
{
    const it_mode_t *m = &it_modes[i];
    hx_target_cfg_t cfg;
    hixl_engine_t *e;

    hx_use_tls(m->tls);
    hx_target_cfg_init(&cfg, region_len);
    cfg.progress = m->tgt_progress;
    hx_target_start(t, &cfg);
    e = hx_engine("127.0.0.1", "hixl.ProgressThread",
                  m->init_progress ? "1" : "0", NULL);
    hx_connect(e, t->name);
    if (!m->init_progress) {
        /* while the target deregisters, it waits for us to confirm: keep
         * our engine going while we wait for its answer */
        hx_target_set_idle(hx_idle_progress, e);
    }
    return e;
}

static void it_teardown(hixl_engine_t *e, hx_target_t *t)
{
    hx_target_set_idle(NULL, NULL);   /* it would use the finalized engine */
    hx_ok(hixl_finalize(e));
    hx_target_stop(t);
}

/*
 * Ten regions registered one after the other, each written (sync or async)
 * the moment its registration returned, then read back.
 */
START_TEST(test_register_then_transfer)
{
    const size_t local_len = 2 * HX_MIB + 64;
    hixl_transfer_op_desc_t d;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t len;
    int k, r;

    local = hx_alloc_pages(local_len);
    e     = it_setup(_i, &t, 4096);
    hx_register(e, local, local_len);

    for (k = 0; k < 10; ++k) {
        len = (k % 2) ? (size_t)(4096 << k) - 3 : (size_t)(1000 * k + 1);
        if (len > 2 * HX_MIB) {
            len = 2 * HX_MIB;
        }
        r = hx_target_register(&t, len, (size_t)k % 8);

        /* right away: no wait for the announcement */
        hx_pat_fill(local, len, 300 + (uint64_t)k, 0);
        d.local_addr  = (uintptr_t)local;
        d.remote_addr = t.addr[r];
        d.len         = len;
        hx_transfer(e, t.name, HIXL_WRITE, &d, 1, k % 2);
        hx_target_verify(&t, r, 0, len, 300 + (uint64_t)k, 0);

        hx_target_fill(&t, r, 0, len, 400 + (uint64_t)k, 0);
        hx_transfer(e, t.name, HIXL_READ, &d, 1, !(k % 2));
        hx_pat_assert(local, len, 400 + (uint64_t)k, 0, "READ from a region "
                      "registered after connect");
    }

    it_teardown(e, &t);
    hx_free_pages(local, local_len);
}
END_TEST

/*
 * Forty regions registered in a row, then one batch touching every one of
 * them: the initiator's table must have all of them.
 */
START_TEST(test_many_regions_one_batch)
{
    enum { NR = 40, LEN = 10007 };
    hixl_transfer_op_desc_t d[NR];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int r[NR], k;

    local = hx_alloc_pages((size_t)NR * LEN);
    e     = it_setup(_i, &t, 4096);
    hx_register(e, local, (size_t)NR * LEN);
    for (k = 0; k < NR; ++k) {
        r[k] = hx_target_register(&t, LEN, (size_t)k % 5);
    }
    hx_pat_fill(local, (size_t)NR * LEN, 77, 0);
    for (k = 0; k < NR; ++k) {
        d[k].local_addr  = (uintptr_t)(local + (size_t)k * LEN);
        d[k].remote_addr = t.addr[r[NR - 1 - k]];
        d[k].len         = LEN;
    }
    hx_transfer(e, t.name, HIXL_WRITE, d, NR, 1);
    for (k = 0; k < NR; ++k) {
        hx_target_verify(&t, r[NR - 1 - k], 0, LEN, 77, (uint64_t)k * LEN);
    }

    it_teardown(e, &t);
    hx_free_pages(local, (size_t)NR * LEN);
}
END_TEST

/*
 * Deregistration reaches the initiator: once the target's
 * hixl_deregister_mem() returned, a descriptor into the old region is
 * PARAM_INVALID naming its index, other regions keep working, and a region
 * registered in its place (the same address, as the kernel tends to hand it
 * out again) works with its new remote key.
 */
START_TEST(test_deregister_then_reuse)
{
    const size_t len = 64 * 1024;
    hixl_transfer_op_desc_t d[3];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int round, r;

    local = hx_alloc_pages(3 * len);
    e     = it_setup(_i, &t, len);
    hx_register(e, local, 3 * len);
    hx_pat_fill(local, 3 * len, 55, 0);

    for (round = 0; round < 4; ++round) {
        r = hx_target_register(&t, len, 0);
        d[0].local_addr  = (uintptr_t)local;
        d[0].remote_addr = t.addr[0];
        d[0].len         = len;
        d[1].local_addr  = (uintptr_t)(local + len);
        d[1].remote_addr = t.addr[r];
        d[1].len         = len;
        hx_transfer(e, t.name, HIXL_WRITE, d, 2, round & 1);
        hx_target_verify(&t, r, 0, len, 55, len);

        hx_target_deregister(&t, r);
        /* descriptor 1 now points at nothing the target has */
        hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, d, 2,
                                     HX_OP_TIMEOUT_MS),
                  HIXL_PARAM_INVALID, "descriptor 1");
        hx_expect(hixl_transfer_sync(e, t.name, HIXL_READ, &d[1], 1,
                                     HX_OP_TIMEOUT_MS),
                  HIXL_PARAM_INVALID, "descriptor 0");
        /* region 0 is unaffected */
        hx_transfer(e, t.name, HIXL_WRITE, d, 1, 0);
        hx_target_verify(&t, 0, 0, len, 55, 0);
    }

    it_teardown(e, &t);
    hx_free_pages(local, 3 * len);
}
END_TEST

static Suite *it_register_suite(void)
{
    Suite *s = suite_create("it_register");
    TCase *tc;

    tc = hx_tcase("register_then_transfer");
    tcase_add_loop_test(tc, test_register_then_transfer, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("many_regions_one_batch");
    tcase_add_loop_test(tc, test_many_regions_one_batch, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("deregister_then_reuse");
    tcase_add_loop_test(tc, test_deregister_then_reuse, 0, IT_NMODES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_register_suite());
}
