/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Warming of the memory an engine allocates (hixl_alloc_mem): the engine
 * writes every page once in the background without changing a byte.
 *
 *  - bytes the application writes while the warming runs are all kept;
 *  - hixl_mem_warm_wait ends SUCCESS once it is done, TIMEOUT (0 ms) while
 *    a large region is still being warmed, and refuses bad arguments;
 *  - deregistration and finalize in the middle of a warming end it without
 *    a fault (a write into memory already unmapped would be one);
 *  - with hixl.PrefaultMem=none nothing is warmed and the wait returns at
 *    once.
 */
#include "harness.h"

#include <stdint.h>
#include <string.h>

#define SMALL (48u << 20)
#define LARGE (512u << 20)   /* seconds of warming: still running at once */

START_TEST(test_bytes_written_meanwhile_survive)
{
    hixl_engine_t *e = hx_engine("127.0.0.1", NULL);
    hixl_mem_handle_t h;
    uint8_t *p;
    void *mem;

    hx_ok(hixl_alloc_mem(e, SMALL, HIXL_MEM_HOST, &mem, &h));
    p = mem;
    /* the application fills it while the engine warms it */
    hx_pat_fill(p, SMALL, 31, 0);
    hx_ok(hixl_mem_warm_wait(e, HX_OP_TIMEOUT_MS));
    hx_pat_assert(p, SMALL, 31, 0, "allocated memory after its warming");
    hx_ok(hixl_deregister_mem(e, h));
    hx_ok(hixl_finalize(e));
}
END_TEST

START_TEST(test_wait_and_its_arguments)
{
    hixl_engine_t *e = hx_engine("127.0.0.1", NULL);
    hixl_mem_handle_t h;
    hixl_status_t st;
    void *mem;

    hx_expect(hixl_mem_warm_wait(NULL, 0), HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_mem_warm_wait(e, -2), HIXL_PARAM_INVALID, "timeout");
    hx_ok(hixl_mem_warm_wait(e, 0));   /* nothing allocated yet */
    hx_ok(hixl_alloc_mem(e, LARGE, HIXL_MEM_HOST, &mem, &h));
    /* still warming (seconds here; a machine whose memory is not backed
     * lazily may be done already, and then SUCCESS is right too) */
    st = hixl_mem_warm_wait(e, 0);
    ck_assert_msg((st == HIXL_SUCCESS) ||
                  ((st == HIXL_TIMEOUT) &&
                   (strstr(hixl_last_error(), "being warmed") != NULL)),
                  "%s: %s", hixl_strerror(st), hixl_last_error());
    hx_ok(hixl_mem_warm_wait(e, -1));
    hx_ok(hixl_mem_warm_wait(e, 0));
    hx_ok(hixl_deregister_mem(e, h));
    hx_ok(hixl_finalize(e));
}
END_TEST

/* Deregistered, then finalized, while still warming: no fault, and the
 * wait ends at once (nothing left to warm). */
START_TEST(test_deregister_and_finalize_while_warming)
{
    hixl_engine_t *e = hx_engine("127.0.0.1", NULL);
    hixl_mem_handle_t h1, h2;
    void *m1, *m2;

    hx_ok(hixl_alloc_mem(e, LARGE, HIXL_MEM_HOST, &m1, &h1));
    hx_ok(hixl_alloc_mem(e, SMALL, HIXL_MEM_HOST, &m2, &h2));
    hx_ok(hixl_deregister_mem(e, h1));
    hx_ok(hixl_deregister_mem(e, h2));
    hx_ok(hixl_mem_warm_wait(e, HX_OP_TIMEOUT_MS));
    hx_ok(hixl_alloc_mem(e, LARGE, HIXL_MEM_HOST, &m1, &h1));
    hx_ok(hixl_finalize(e));   /* with the warming running */
}
END_TEST

START_TEST(test_prefault_none_warms_nothing)
{
    hixl_engine_t *e = hx_engine("127.0.0.1", "hixl.PrefaultMem", "none",
                                 NULL);
    hixl_mem_handle_t h;
    void *mem;

    hx_ok(hixl_alloc_mem(e, LARGE, HIXL_MEM_HOST, &mem, &h));
    hx_ok(hixl_mem_warm_wait(e, 0));
    hx_ok(hixl_deregister_mem(e, h));
    hx_ok(hixl_finalize(e));
}
END_TEST

int main(void)
{
    Suite *s  = suite_create("warm");
    TCase *tc = hx_tcase("warm");

    tcase_add_test(tc, test_bytes_written_meanwhile_survive);
    tcase_add_test(tc, test_wait_and_its_arguments);
    tcase_add_test(tc, test_deregister_and_finalize_while_warming);
    tcase_add_test(tc, test_prefault_none_warms_nothing);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
