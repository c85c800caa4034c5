/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: pre-faulting (src/util/prefault.c).  Pages of a fresh mapping are
 * resident afterwards (mincore), a range already holding data keeps every
 * byte, a range partly unmapped is reported and nothing breaks.
 */
#include "config.h"
#include "harness.h"
#include "util/prefault.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 512

static size_t resident(void *p, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page, i, r = 0;
    unsigned char vec[PAGES];

    ck_assert_uint_le(n, PAGES);
    ck_assert_int_eq(mincore(p, len, vec), 0);
    for (i = 0; i < n; ++i) {
        r += vec[i] & 1;
    }
    return r;
}

START_TEST(test_fresh_mapping_becomes_resident)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = PAGES * page;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int err;

    ck_assert(p != MAP_FAILED);
    ck_assert_uint_eq(resident(p, len), 0);
    /* an unaligned range covers the pages it touches */
    err = hixl_prefault(p + 100, len - 200);
    if (err == EINVAL) {
        munmap(p, len);
        return;   /* a kernel before 5.14: nothing to check */
    }
    ck_assert_int_eq(err, 0);
    ck_assert_uint_eq(resident(p, len), PAGES);
    munmap(p, len);
}
END_TEST

START_TEST(test_bytes_untouched)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 64 * page;
    char *p = hx_alloc_pages(len);
    int err;

    hx_pat_fill(p, len, 77, 0);
    err = hixl_prefault(p, len);
    ck_assert_msg((err == 0) || (err == EINVAL), "%s", strerror(err));
    hx_pat_assert(p, len, 77, 0, "pre-faulted memory");
    hx_free_pages(p, len);
}
END_TEST

START_TEST(test_unmapped_part_reported)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = 8 * page;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int err;

    ck_assert(p != MAP_FAILED);
    ck_assert_int_eq(munmap(p + 4 * page, 4 * page), 0);
    err = hixl_prefault(p, len);
    ck_assert_msg((err == ENOMEM) || (err == EFAULT) || (err == EINVAL),
                  "pre-faulting a partly unmapped range: %s", strerror(err));
    ck_assert_int_eq(hixl_prefault(p, 0), 0);
    munmap(p, 4 * page);
}
END_TEST

static Suite *unit_prefault_suite(void)
{
    Suite *s = suite_create("prefault");
    TCase *tc = hx_tcase("prefault");

    tcase_add_test(tc, test_fresh_mapping_becomes_resident);
    tcase_add_test(tc, test_bytes_untouched);
    tcase_add_test(tc, test_unmapped_part_reported);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_prefault_suite());
}
