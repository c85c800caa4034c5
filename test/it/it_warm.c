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
 *    once;
 *  - the same wait covers a peer's memory mapped here (shared memory): a
 *    write into it after the wait takes a small part of the page faults
 *    of a writer that does not pre-fault, which takes one per page (so the
 *    check can fail).
 */
#include "harness.h"

#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

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

static long minor_faults(void)
{
    struct rusage ru;

    ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_minflt;
}

/* A write of LARGE bytes (long enough to pre-fault that a transfer which
 * does not wait for it races it) from a fresh writer engine into the
 * decode's allocation; the minor faults the process took meanwhile. */
static long faults_of_first_write(hixl_engine_t *decode, void *dst,
                                  const uint8_t *src, uint64_t seed,
                                  const char *prefault)
{
    hixl_engine_t *w = hx_engine("127.0.0.1", "hixl.PrefaultMem", prefault,
                                 NULL);
    hixl_transfer_op_desc_t d = {(uintptr_t)src, (uintptr_t)dst, LARGE};
    hixl_mem_handle_t h = hx_register(w, (void*)src, LARGE);
    long before;

    hx_connect(w, hixl_engine_name(decode));
    /* the decode's region is announced at connect; its pre-fault (if any)
     * is waited for here */
    hx_ok(hixl_mem_warm_wait(w, HX_OP_TIMEOUT_MS));
    before = minor_faults();
    hx_transfer(w, hixl_engine_name(decode), HIXL_WRITE, &d, 1, 0);
    before = minor_faults() - before;
    hx_pat_assert(dst, LARGE, seed, 0, "the decode's allocation");
    hx_ok(hixl_deregister_mem(w, h));
    hx_ok(hixl_finalize(w));
    return before;
}

START_TEST(test_peer_memory_prefaulted_by_the_wait)
{
    hixl_engine_t *decode;
    hixl_mem_handle_t h;
    uint8_t *src = hx_alloc_pages(LARGE);
    long cold, prefaulted, pages = LARGE / 4096;
    void *dst;

    hx_use_tls(1);   /* sm: memory UCX maps into the writer */
    decode = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    hx_ok(hixl_alloc_mem(decode, LARGE, HIXL_MEM_HOST, &dst, &h));
    hx_ok(hixl_mem_warm_wait(decode, HX_OP_TIMEOUT_MS));
    hx_pat_fill(src, LARGE, 41, 0);
    cold = faults_of_first_write(decode, dst, src, 41, "none");
    hx_pat_fill(src, LARGE, 42, 0);
    prefaulted = faults_of_first_write(decode, dst, src, 42, "auto");
    /* a copy into a mapping without page tables faults once per page
     * (fewer with huge pages, which this shared memory does not get) */
    ck_assert_msg(cold >= pages / 2, "a writer without pre-fault took only "
                  "%ld faults for %ld pages: the copy did not go through a "
                  "mapping of the peer's memory, and this test proves "
                  "nothing", cold, pages);
    /* a quarter, not none: a sanitized build's checks of each copy fault
     * in its shadow pages (one per 8 pages copied) */
    ck_assert_msg(prefaulted <= cold / 4, "%ld faults for %ld pages after "
                  "hixl_mem_warm_wait (%ld without pre-fault)", prefaulted,
                  pages, cold);
    hx_ok(hixl_deregister_mem(decode, h));
    hx_ok(hixl_finalize(decode));
    hx_free_pages(src, LARGE);
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
    tcase_add_test(tc, test_peer_memory_prefaulted_by_the_wait);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
