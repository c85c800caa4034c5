/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: a connect to an engine with tens of thousands of regions.
 *
 * The listener registers 20,000 small regions, touching one another, in a
 * shuffled order, and deregisters every 97th before anyone connects.  Its
 * table (megabytes of MEM_ADD, more than a socket takes at once) reaches
 * the connector whole: a batch of descriptors into the first, the last and
 * hundreds of other live regions lands byte for byte, while a descriptor
 * into a deregistered region, or across two touching ones, is refused
 * naming its index.  Both engines live in this process.
 */
#include "config.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

enum { NR = 20000, LEN = 64, GONE_EVERY = 97, NDESC = 512 };

static int gone(size_t k)
{
    return (k % GONE_EVERY) == 5;
}

START_TEST(test_connect_to_many_regions)
{
    hixl_mem_handle_t      *h     = calloc(NR, sizeof(*h));
    size_t                 *order = calloc(NR, sizeof(*order));
    hixl_transfer_op_desc_t d[NDESC + 2];
    uint64_t                rng = 11 + (uint64_t)_i;
    hixl_engine_t          *lis, *con;
    uint8_t                *remote, *local;
    size_t                  i, j, k, tmp;
    hixl_mem_desc_t         m;

    ck_assert(h && order);
    hx_use_tls(_i);
    remote = hx_alloc_pages((size_t)NR * LEN);
    local  = hx_alloc_pages((size_t)NDESC * LEN);
    lis    = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    for (i = 0; i < NR; ++i) {
        order[i] = i;
    }
    for (i = NR; i > 1; --i) {
        j            = (size_t)(hx_rand(&rng) % i);
        tmp          = order[i - 1];
        order[i - 1] = order[j];
        order[j]     = tmp;
    }
    for (i = 0; i < NR; ++i) {
        k      = order[i];
        m.addr = (uintptr_t)(remote + k * LEN);
        m.len  = LEN;
        hx_ok(hixl_register_mem(lis, &m, HIXL_MEM_HOST, &h[k]));
    }
    for (k = 0; k < NR; ++k) {
        if (gone(k)) {
            hx_ok(hixl_deregister_mem(lis, h[k]));
        }
    }

    con = hx_engine("127.0.0.1", NULL);
    hx_register(con, local, (size_t)NDESC * LEN);
    hx_connect(con, hixl_engine_name(lis));

    /* the first and the last region, then live ones at random */
    hx_pat_fill(local, (size_t)NDESC * LEN, 91, 0);
    for (i = 0; i < NDESC; ++i) {
        k = (i == 0) ? 0 : (i == 1) ? NR - 1 : hx_rand(&rng) % NR;
        while (gone(k) || ((i > 1) && ((k == 0) || (k == NR - 1)))) {
            k = (k + 1) % NR;
        }
        order[i]         = k;
        d[i].local_addr  = (uintptr_t)(local + i * LEN);
        d[i].remote_addr = (uintptr_t)(remote + k * LEN);
        d[i].len         = LEN;
        for (j = 0; j < i; ++j) {
            if (order[j] == k) { /* one writer per region */
                d[i].len = 0;
            }
        }
        if (d[i].len == 0) {
            --i;
        }
    }
    hx_transfer(con, hixl_engine_name(lis), HIXL_WRITE, d, NDESC, 1);
    for (i = 0; i < NDESC; ++i) {
        hx_pat_assert(remote + order[i] * LEN, LEN, 91, i * LEN,
                      "a region of a 20,000-region table");
    }

    /* a deregistered region, and two touching regions at once */
    d[NDESC]             = d[0];
    d[NDESC].remote_addr = (uintptr_t)(remote + 5 * LEN);
    hx_expect(hixl_transfer_sync(con, hixl_engine_name(lis), HIXL_WRITE,
                                 &d[NDESC - 1], 2, HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 1");
    d[NDESC + 1]             = d[0];
    d[NDESC + 1].remote_addr = (uintptr_t)(remote + 10 * LEN + LEN / 2);
    hx_expect(hixl_transfer_sync(con, hixl_engine_name(lis), HIXL_WRITE,
                                 &d[NDESC + 1], 1, HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 0");

    hx_ok(hixl_finalize(con));
    hx_ok(hixl_finalize(lis));
    hx_free_pages(local, (size_t)NDESC * LEN);
    hx_free_pages(remote, (size_t)NR * LEN);
    free(order);
    free(h);
}
END_TEST

static Suite *it_many_regions_suite(void)
{
    Suite *s  = suite_create("it_many_regions");
    TCase *tc = hx_tcase("connect_to_many_regions");

    tcase_add_loop_test(tc, test_connect_to_many_regions, 0, hx_tls_count);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_many_regions_suite());
}
