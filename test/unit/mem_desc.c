/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Exported memory descriptions: the codec (round trip, every kind of
 * malformed input refused with a reason) and the public calls on one
 * engine (export, import, bounds of (region, offset, length)).
 */
#include "harness.h"
#include "wire/mem_desc.h"

#include <stdlib.h>
#include <string.h>

static const hixl_mdesc_region_t regions[3] = {
    {0x10000, 4096, 7, HIXL_MEM_HOST},
    {0x20000, 1u << 20, 8, HIXL_MEM_DEVICE},
    {0x7fff0000, 1, 9, HIXL_MEM_HOST},
};

static uint8_t *encoded(size_t *len)
{
    uint8_t *buf;

    *len = hixl_mdesc_size(strlen("10.0.0.1:5000"), 3);
    buf  = malloc(*len);
    ck_assert_ptr_nonnull(buf);
    hixl_mdesc_encode(buf, "10.0.0.1:5000", regions, 3);
    return buf;
}

static void expect_refused(const uint8_t *buf, size_t len, const char *why)
{
    hixl_mdesc_t d;

    hx_expect(hixl_mdesc_decode(buf, len, &d), HIXL_PARAM_INVALID, why);
}

START_TEST(test_round_trip)
{
    hixl_mdesc_t d;
    size_t len, i;
    uint8_t *buf = encoded(&len);

    ck_assert_uint_eq(len, 16 + 13 + 3 * 32);
    hx_ok(hixl_mdesc_decode(buf, len, &d));
    ck_assert_str_eq(d.owner, "10.0.0.1:5000");
    ck_assert_uint_eq(d.count, 3);
    for (i = 0; i < 3; ++i) {
        ck_assert_uint_eq(d.regions[i].addr, regions[i].addr);
        ck_assert_uint_eq(d.regions[i].len, regions[i].len);
        ck_assert_uint_eq(d.regions[i].id, regions[i].id);
        ck_assert_int_eq(d.regions[i].type, regions[i].type);
    }
    free(d.regions);
    free(buf);
}
END_TEST

START_TEST(test_truncated_and_trailing)
{
    size_t len, cut;
    uint8_t *buf = encoded(&len), *longer;

    for (cut = 0; cut < len; ++cut) {
        expect_refused(buf, cut, (cut < 16) ? "header" : "truncated");
    }
    longer = calloc(1, len + 1);
    memcpy(longer, buf, len);
    expect_refused(longer, len + 1, "trailing");
    free(longer);
    free(buf);
}
END_TEST

START_TEST(test_header_fields)
{
    size_t len;
    uint8_t *buf = encoded(&len);

    buf[0] = 'X';
    expect_refused(buf, len, "magic");
    buf[0] = 'H';
    buf[4] = 2;
    expect_refused(buf, len, "version 2");
    buf[4] = 1;
    buf[6] = 1;
    expect_refused(buf, len, "flags");
    buf[6] = 0;
    buf[12] = 0xff; buf[13] = 0xff; buf[14] = 0xff; buf[15] = 0xff;
    expect_refused(buf, len, "more than");   /* a hostile count */
    buf[12] = 4; buf[13] = 0; buf[14] = 0; buf[15] = 0;
    expect_refused(buf, len, "truncated");   /* count beyond the bytes */
    buf[12] = 3;
    buf[8] = 0;
    expect_refused(buf, len, "owner name");
    buf[8] = 13;
    buf[16 + 3] = '\0';
    expect_refused(buf, len, "NUL");
    free(buf);
}
END_TEST

START_TEST(test_bad_regions)
{
    size_t len, base = 16 + 13;
    uint8_t *buf = encoded(&len);
    uint8_t *r1 = buf + base + 32;

    memset(r1 + 8, 0, 8);                      /* length 0 */
    expect_refused(buf, len, "region 1 has a zero length");
    memset(r1 + 8, 0xff, 8);                   /* wraps */
    expect_refused(buf, len, "wraps");
    memset(r1 + 8, 0, 8);
    r1[8] = 1;
    r1[24] = 2;                                /* no such memory type */
    expect_refused(buf, len, "memory type 2");
    free(buf);
}
END_TEST

START_TEST(test_engine_export_import)
{
    hixl_engine_t *e = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    hixl_mem_handle_t h[2], stale;
    hixl_remote_mem_t *rm = NULL;
    hixl_mem_type_t type;
    uint8_t *a = hx_alloc_pages(8192), *b = hx_alloc_pages(4096);
    uint64_t raddr, rlen;
    size_t need = 0, len;
    uint8_t *buf;

    h[0] = hx_register(e, a, 8192);
    h[1] = hx_register(e, b, 4096);
    hx_ok(hixl_export_mem(e, h, 2, NULL, &need));
    buf = malloc(need);
    len = need - 1;
    hx_expect(hixl_export_mem(e, h, 2, buf, &len), HIXL_PARAM_INVALID,
              "needs");
    ck_assert_uint_eq(len, need);
    hx_ok(hixl_export_mem(e, h, 2, buf, &len));
    hx_ok(hixl_import_mem(e, buf, len, &rm));
    ck_assert_uint_eq(hixl_remote_mem_count(rm), 2);
    ck_assert_str_eq(hixl_remote_mem_engine(rm), hixl_engine_name(e));
    hx_ok(hixl_remote_mem_region(rm, 1, &rlen, &type));
    ck_assert_uint_eq(rlen, 4096);
    ck_assert_int_eq(type, HIXL_MEM_HOST);
    hx_ok(hixl_remote_mem_addr(rm, 0, 100, 8092, &raddr));
    ck_assert_uint_eq(raddr, (uintptr_t)a + 100);
    hx_ok(hixl_remote_mem_addr(rm, 1, 4096, 0, &raddr));
    /* one byte past region 0 would be the neighbour's: refused, named */
    hx_expect(hixl_remote_mem_addr(rm, 0, 100, 8093, &raddr),
              HIXL_PARAM_INVALID,
              "region 0 of 127.0.0.1:");
    hx_expect(hixl_remote_mem_addr(rm, 1, 4000, 97, &raddr),
              HIXL_PARAM_INVALID,
              "offset 4000 + length 97 exceeds its size 4096");
    hx_expect(hixl_remote_mem_addr(rm, 1, UINT64_MAX, 2, &raddr),
              HIXL_PARAM_INVALID, "exceeds");
    hx_expect(hixl_remote_mem_addr(rm, 2, 0, 1, &raddr), HIXL_PARAM_INVALID,
              "holds 2 regions");
    hx_expect(hixl_remote_mem_region(rm, 5, NULL, NULL), HIXL_PARAM_INVALID,
              "region 5");
    hixl_remote_mem_free(rm);
    hx_expect(hixl_import_mem(e, buf, 3, &rm), HIXL_PARAM_INVALID,
              "truncated");
    /* a deregistered handle cannot be exported */
    stale = h[1];
    hx_ok(hixl_deregister_mem(e, stale));
    len = need;
    hx_expect(hixl_export_mem(e, h, 2, buf, &len), HIXL_PARAM_INVALID,
              "handles[1]");
    free(buf);
    hx_ok(hixl_finalize(e));
    hx_free_pages(a, 8192);
    hx_free_pages(b, 4096);
}
END_TEST

static Suite *unit_mem_desc_suite(void)
{
    Suite *s = suite_create("mem_desc");
    TCase *tc = tcase_create("codec");

    tcase_set_timeout(tc, HX_TEST_TIMEOUT_S);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_truncated_and_trailing);
    tcase_add_test(tc, test_header_fields);
    tcase_add_test(tc, test_bad_regions);
    tcase_add_test(tc, test_engine_export_import);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_mem_desc_suite());
}
