/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the region-table messages of the HixlCS surface
 * (src/compat/cs_msg.c).  A table arrives from the network, so the
 * decoder must take exactly well-formed tables: round trips of every
 * shape, then every truncation, every limit, and random corruption, each
 * decoded from a buffer of exactly its length (the sanitized build turns a
 * read past it into a failure).
 */
#include "config.h"
#include "harness.h"
#include "compat/cs_msg.h"

#include <stdlib.h>
#include <string.h>

static uint8_t *encode(const hixl_cs_entry_t *e, uint32_t n, uint64_t id,
                       size_t *len)
{
    uint8_t *buf;

    *len = hixl_cs_table_len(e, n);
    buf  = malloc(*len);
    ck_assert_ptr_nonnull(buf);
    hixl_cs_table_encode(buf, id, e, n);
    return buf;
}

START_TEST(test_round_trip)
{
    hixl_cs_entry_t e[3] = {
        {COMM_MEM_TYPE_HOST, 0x1000, 4096, "kv", 2},
        {COMM_MEM_TYPE_DEVICE, 0xffffffffffff0000ull, 1ull << 40, "", 0},
        {COMM_MEM_TYPE_HOST, 7, 1, "a tag with spaces", 17},
    };
    uint8_t req[HIXL_CS_REQ_LEN], *buf;
    hixl_cs_table_t t;
    char why[128];
    uint64_t id;
    size_t len;

    hixl_cs_req_encode(req, 0x0102030405060708ull);
    ck_assert_int_eq(hixl_cs_req_decode(req, sizeof(req), &id), 0);
    ck_assert_uint_eq(id, 0x0102030405060708ull);
    ck_assert_int_eq(hixl_cs_req_decode(req, sizeof(req) - 1, &id), -1);
    req[0] = 'X';
    ck_assert_int_eq(hixl_cs_req_decode(req, sizeof(req), &id), -1);

    buf = encode(e, 3, 42, &len);
    ck_assert_uint_eq(len, HIXL_CS_TABLE_HDR + 3 * HIXL_CS_ENTRY_HDR + 19);
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     0);
    ck_assert_uint_eq(id, 42);
    ck_assert_uint_eq(t.count, 3);
    ck_assert_int_eq(t.mems[1].type, COMM_MEM_TYPE_DEVICE);
    ck_assert_ptr_eq(t.mems[1].addr, (void*)(uintptr_t)0xffffffffffff0000ull);
    ck_assert_uint_eq(t.mems[1].size, 1ull << 40);
    ck_assert_str_eq(t.tags[0], "kv");
    ck_assert_str_eq(t.tags[1], "");
    ck_assert_str_eq(t.tags[2], "a tag with spaces");
    hixl_cs_table_free(&t);
    free(buf);

    buf = encode(NULL, 0, 1, &len);   /* an empty table */
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     0);
    ck_assert_uint_eq(t.count, 0);
    hixl_cs_table_free(&t);
    free(buf);
}
END_TEST

START_TEST(test_refusals)
{
    char tag[HIXL_CS_TAG_MAX + 2];
    hixl_cs_entry_t e = {COMM_MEM_TYPE_HOST, 1, 2, "ab", 2};
    uint8_t *buf, *copy;
    hixl_cs_table_t t;
    char why[128];
    uint64_t id;
    size_t len, cut;

    buf = encode(&e, 1, 9, &len);
    /* every truncation, from a buffer of exactly that length */
    for (cut = 0; cut < len; ++cut) {
        copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        ck_assert_int_eq(hixl_cs_table_decode(copy, cut, &id, &t, why,
                                              sizeof(why)), -1);
        free(copy);
    }
    /* one byte too many */
    copy = malloc(len + 1);
    memcpy(copy, buf, len);
    copy[len] = 0;
    ck_assert_int_eq(hixl_cs_table_decode(copy, len + 1, &id, &t, why,
                                          sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "after the last entry"));
    free(copy);
    /* a bad memory type, a NUL in a tag, a count past the limit, a
     * version and a reserved field of the future */
    buf[HIXL_CS_TABLE_HDR] = 5;
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "memory type"));
    buf[HIXL_CS_TABLE_HDR] = COMM_MEM_TYPE_HOST;
    buf[HIXL_CS_TABLE_HDR + HIXL_CS_ENTRY_HDR] = '\0';
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "NUL"));
    buf[HIXL_CS_TABLE_HDR + HIXL_CS_ENTRY_HDR] = 'a';
    buf[16] = 0xff; buf[17] = 0xff;
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "limit"));
    buf[16] = 1; buf[17] = 0;
    buf[4] = 2;
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     -1);
    buf[4] = 1;
    buf[20] = 1;
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     -1);
    buf[20] = 0;
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     0);
    hixl_cs_table_free(&t);
    free(buf);
    /* a tag beyond the limit */
    memset(tag, 'x', sizeof(tag));
    e.tag     = tag;
    e.tag_len = HIXL_CS_TAG_MAX + 1;
    buf = encode(&e, 1, 9, &len);
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     -1);
    ck_assert_ptr_nonnull(strstr(why, "tag of"));
    free(buf);
    e.tag_len = HIXL_CS_TAG_MAX;
    buf = encode(&e, 1, 9, &len);
    ck_assert_int_eq(hixl_cs_table_decode(buf, len, &id, &t, why, sizeof(why)),
                     0);
    ck_assert_uint_eq(strlen(t.tags[0]), HIXL_CS_TAG_MAX);
    hixl_cs_table_free(&t);
    free(buf);
}
END_TEST

/* Random corruption of a valid table: never a crash, and a success always
 * describes a table whose tags are strings of its own. */
START_TEST(test_corruption)
{
    hixl_cs_entry_t e[4] = {
        {COMM_MEM_TYPE_HOST, 1, 2, "one", 3}, {COMM_MEM_TYPE_DEVICE, 3, 4, "", 0},
        {COMM_MEM_TYPE_HOST, 5, 6, "three", 5}, {COMM_MEM_TYPE_HOST, 7, 8, "4", 1},
    };
    uint64_t rng = 99, id;
    uint8_t *buf, *copy;
    hixl_cs_table_t t;
    char why[128];
    size_t len, n, k;
    uint32_t i;
    int round;

    buf = encode(e, 4, 5, &len);
    for (round = 0; round < 50000; ++round) {
        n    = 1 + hx_rand(&rng) % len;
        copy = malloc(n);
        memcpy(copy, buf, n);
        for (k = 0; k < 1 + hx_rand(&rng) % 3; ++k) {
            copy[hx_rand(&rng) % n] = (uint8_t)hx_rand(&rng);
        }
        if (hixl_cs_table_decode(copy, n, &id, &t, why, sizeof(why)) == 0) {
            ck_assert_uint_le(t.count, HIXL_CS_MAX_REGIONS);
            for (i = 0; i < t.count; ++i) {
                ck_assert_uint_le(strlen(t.tags[i]), HIXL_CS_TAG_MAX);
            }
            hixl_cs_table_free(&t);
        }
        free(copy);
    }
    free(buf);
}
END_TEST

static Suite *unit_cs_msg_suite(void)
{
    Suite *s = suite_create("cs_msg");
    TCase *tc = hx_tcase("cs_msg");

    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_corruption);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_cs_msg_suite());
}
