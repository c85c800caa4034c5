/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the harness the benchmarks share (bench/common): sizes as people
 * type them, the byte pattern (pinned, so that a put_bw client and server
 * of different builds still agree), medians and percentiles, and the
 * text lines and key=value words of the out-of-band exchanges.
 */
#include "config.h"
#include "harness.h"

#include "common/line.h"
#include "common/oob.h"
#include "common/pattern.h"
#include "common/size.h"
#include "common/stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void expect_size(const char *text, size_t want)
{
    const char *why;
    size_t v = 0;

    why = bc_size_parse(text, &v);
    ck_assert_msg(why == NULL, "\"%s\" refused: %s", text, why);
    ck_assert_msg(v == want, "\"%s\" -> %zu, expected %zu", text, v, want);
}

static void expect_not_size(const char *text, const char *reason)
{
    const char *why;
    size_t v = 7;

    why = bc_size_parse(text, &v);
    ck_assert_msg(why != NULL, "\"%s\" accepted as %zu", text, v);
    ck_assert_msg(strstr(why, reason) != NULL, "\"%s\": \"%s\", expected "
                  "\"%s\"", text, why, reason);
    ck_assert_msg(v == 7, "\"%s\": *v written on failure", text);
}

START_TEST(test_size_forms)
{
    static const char *const k64[] = {"64K", "64k", "64KB", "64kb", "64KiB",
                                      "64kib", "64KIB", "65536", "65536B"};
    size_t i;

    for (i = 0; i < sizeof(k64) / sizeof(k64[0]); ++i) {
        expect_size(k64[i], 65536);
    }
    expect_size("1", 1);
    expect_size("8B", 8);
    expect_size("64M", 64ull << 20);
    expect_size("64MB", 64ull << 20);
    expect_size("64MiB", 64ull << 20);
    expect_size("1G", 1ull << 30);
    expect_size("4GB", 4ull << 30);
    expect_size("007K", 7 << 10);
}
END_TEST

START_TEST(test_size_garbage)
{
    expect_not_size("", "not a number");
    expect_not_size("K", "not a number");
    expect_not_size("-1", "not a number");
    expect_not_size(" 64", "not a number");
    expect_not_size("0", "zero");
    expect_not_size("0K", "zero");
    expect_not_size("64Q", "unknown unit");
    expect_not_size("64KX", "unknown unit");
    expect_not_size("64Ki", "unknown unit");
    expect_not_size("64iB", "unknown unit");
    expect_not_size("64 K", "unknown unit");
    expect_not_size("64KBB", "unknown unit");
    expect_not_size("1.5G", "not a whole number");
    expect_not_size("99999999999999999999", "too large");
    expect_not_size("18446744073709551615K", "too large");
}
END_TEST

START_TEST(test_size_str_and_u64)
{
    char buf[32];
    uint64_t v;

    bc_size_str(4u << 20, buf, sizeof(buf));
    ck_assert_str_eq(buf, "4 MiB");
    bc_size_str(1ull << 30, buf, sizeof(buf));
    ck_assert_str_eq(buf, "1 GiB");
    bc_size_str(3 << 10, buf, sizeof(buf));
    ck_assert_str_eq(buf, "3 KiB");
    bc_size_str(1000, buf, sizeof(buf));
    ck_assert_str_eq(buf, "1000 B");

    ck_assert_int_eq(bc_parse_u64("18446744073709551615", &v), 0);
    ck_assert(v == UINT64_MAX);
    ck_assert_int_eq(bc_parse_u64("0", &v), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(bc_parse_u64("18446744073709551616", &v), -1);
    ck_assert_int_eq(bc_parse_u64("-1", &v), -1);
    ck_assert_int_eq(bc_parse_u64("1x", &v), -1);
    ck_assert_int_eq(bc_parse_u64("", &v), -1);
    ck_assert_int_eq(bc_parse_u64(NULL, &v), -1);
}
END_TEST

/* The words put_bw and fan have always written: both ends of a put_bw
 * run check what the other filled. */
START_TEST(test_pattern_pinned)
{
    ck_assert(bc_pattern_word(0, 0) == 0x642b365eb0080e29ull);
    ck_assert(bc_pattern_word(1, 0) == 0xc1787f9ba8cd9ee7ull);
    ck_assert(bc_pattern_word(5, 12345) == 0xc3131f407f6e20c5ull);
    ck_assert(bc_pattern_seed(0) == 0x5f6a044ca86c5d38ull);
}
END_TEST

/* Every length around the word size, at every misalignment. */
START_TEST(test_pattern_roundtrip)
{
    uint8_t buf[64 + 8];
    bc_pattern_diff_t diff;
    size_t len, off;

    for (off = 0; off < 8; ++off) {
        for (len = 0; len <= 64; ++len) {
            memset(buf, 0xa5, sizeof(buf));
            bc_pattern_fill(buf + off, len, 42);
            ck_assert_uint_eq(bc_pattern_check(buf + off, len, 42, &diff), 0);
            ck_assert_uint_eq(diff.bad, 0);
            if (off > 0) {
                ck_assert_uint_eq(buf[off - 1], 0xa5);   /* no overrun */
            }
            ck_assert_uint_eq(buf[off + len], 0xa5);
        }
    }
}
END_TEST

START_TEST(test_pattern_finds_bad_bytes)
{
    uint8_t buf[1000];
    bc_pattern_diff_t diff;

    bc_pattern_fill(buf, sizeof(buf), 7);
    buf[997] ^= 0x10;
    ck_assert_uint_eq(bc_pattern_check(buf, sizeof(buf), 7, &diff), 1);
    ck_assert_uint_eq(diff.bad, 1);
    ck_assert_uint_eq(diff.first, 997);
    ck_assert_uint_eq(diff.got ^ diff.want, 0x10);

    buf[3] ^= 0xff;
    buf[4] ^= 0x01;
    ck_assert_uint_eq(bc_pattern_check(buf, sizeof(buf), 7, &diff), 3);
    ck_assert_uint_eq(diff.first, 3);
    ck_assert_uint_eq(bc_pattern_check(buf, sizeof(buf), 7, NULL), 3);

    /* another seed is nearly every byte wrong */
    bc_pattern_fill(buf, sizeof(buf), 8);
    ck_assert_uint_gt(bc_pattern_check(buf, sizeof(buf), 7, NULL), 900);
    ck_assert(bc_pattern_seed(1) != bc_pattern_seed(2));
}
END_TEST

START_TEST(test_median)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {9};

    ck_assert(bc_median(odd, 3) == 3);
    ck_assert(odd[0] == 1 && odd[2] == 5);    /* sorted in place */
    ck_assert(bc_median(even, 4) == 2.5);
    ck_assert(bc_median(one, 1) == 9);
    ck_assert(isnan(bc_median(one, 0)));
}
END_TEST

START_TEST(test_percentile_nearest_rank)
{
    double v[100];
    size_t i;

    for (i = 0; i < 100; ++i) {
        v[i] = (double)(100 - i);       /* 100 .. 1, unsorted */
    }
    ck_assert(bc_percentile(v, 100, 99.0) == 99);
    ck_assert(bc_percentile(v, 100, 50.0) == 50);
    ck_assert(bc_percentile(v, 100, 100.0) == 100);
    ck_assert(bc_percentile(v, 100, 0.0) == 1);
    ck_assert(bc_percentile(v, 100, 0.5) == 1);
    ck_assert(bc_percentile(v, 3, 99.0) == 3);   /* of 1, 2, 3 */
    ck_assert(bc_percentile(v, 3, 34.0) == 2);
    ck_assert(isnan(bc_percentile(v, 0, 50.0)));
}
END_TEST

START_TEST(test_percentile_perftest_rank)
{
    uint64_t v[] = {40, 10, 30, 20, 50};

    ck_assert(bc_percentile_floor_u64(v, 5, 50.0) == 30);
    ck_assert(bc_percentile_floor_u64(v, 5, 99.0) == 40);   /* floor(3.96) */
    ck_assert(bc_percentile_floor_u64(v, 5, 100.0) == 50);
    ck_assert(bc_percentile_floor_u64(v, 5, 0.0) == 10);
    ck_assert(bc_percentile_floor_u64(v, 0, 50.0) == 0);
}
END_TEST

START_TEST(test_kv)
{
    const char *line = "READY engine=127.0.0.1:5 addr=4096 xaddr=1 len=";
    const char *a, *b, *c, *d;
    uint64_t v;

    a = bc_kv(line, "engine");
    b = bc_kv(line, "addr");
    c = bc_kv(line, "len");
    d = bc_kv(line, "xaddr");
    /* a few held at once */
    ck_assert_str_eq(a, "127.0.0.1:5");
    ck_assert_str_eq(b, "4096");
    ck_assert_str_eq(c, "");
    ck_assert_str_eq(d, "1");
    ck_assert_ptr_null(bc_kv(line, "READY"));
    ck_assert_ptr_null(bc_kv(line, "eng"));
    ck_assert_int_eq(bc_kv_u64(line, "addr", &v), 0);
    ck_assert(v == 4096);
    ck_assert_int_eq(bc_kv_u64(line, "len", &v), -1);
    ck_assert_int_eq(bc_kv_u64(line, "nothing", &v), -1);
}
END_TEST

static int send_line(int fd, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int send_line(int fd, size_t max, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = bc_line_vsend(fd, max, fmt, ap);
    va_end(ap);
    return rc;
}

/* Lines split and joined as a socket delivers them; the limit holds. */
START_TEST(test_lines)
{
    bc_lines_t lb;
    char big[300];
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    bc_lines_init(&lb, 256);

    ck_assert_int_eq(send_line(sv[0], 0, "HELLO v=%d", 1), 0);  /* + \n */
    ck_assert_int_eq(bc_write_all(sv[0], "GO\nEND ok=1\nPA", 14), 0);
    ck_assert_str_eq(bc_lines_wait(&lb, sv[1], 0, NULL, NULL), "HELLO v=1");
    ck_assert_str_eq(bc_lines_wait(&lb, sv[1], 0, NULL, NULL), "GO");
    ck_assert_int_eq(bc_lines_ready(&lb), 1);
    ck_assert_str_eq(bc_lines_take(&lb), "END ok=1");
    ck_assert_ptr_null(bc_lines_take(&lb));           /* half a line */
    ck_assert_int_eq(bc_lines_ready(&lb), 0);
    ck_assert_int_eq(send_line(sv[0], 0, "RT"), 0);
    ck_assert_str_eq(bc_lines_wait(&lb, sv[1], 0, NULL, NULL), "PART");

    /* nothing comes: a bounded wait ends */
    ck_assert_ptr_null(bc_lines_wait(&lb, sv[1], 1, NULL, NULL));
    ck_assert_int_eq(errno, ETIMEDOUT);

    /* longer than the receiver takes: refused by both ends */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    ck_assert_int_eq(send_line(sv[0], 256, "%s", big), -1);
    ck_assert_int_eq(errno, EMSGSIZE);
    ck_assert_int_eq(bc_write_all(sv[0], big, sizeof(big) - 1), 0);
    ck_assert_ptr_null(bc_lines_wait(&lb, sv[1], 0, NULL, NULL));
    ck_assert_int_eq(errno, EMSGSIZE);
    bc_lines_free(&lb);

    /* the peer closes */
    bc_lines_init(&lb, 256);
    close(sv[0]);
    ck_assert_ptr_null(bc_lines_wait(&lb, sv[1], 0, NULL, NULL));
    ck_assert_int_eq(errno, 0);
    bc_lines_free(&lb);
    close(sv[1]);
}
END_TEST

/* Whole reads and writes work on pipes as on sockets. */
START_TEST(test_read_write_all)
{
    char out[5000], in[5000];
    int p[2];

    memset(out, 'z', sizeof(out));
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(bc_write_all(p[1], out, 3000), 0);
    ck_assert_int_eq(bc_read_all(p[0], in, 3000), 0);
    ck_assert_int_eq(memcmp(in, out, 3000), 0);
    close(p[1]);
    ck_assert_int_eq(bc_read_all(p[0], in, 1), -1);   /* EOF */
    close(p[0]);
}
END_TEST

static Suite *unit_bench_common_suite(void)
{
    Suite *s = suite_create("bench_common");
    TCase *size = hx_tcase("size");
    TCase *pattern = hx_tcase("pattern");
    TCase *stats = hx_tcase("stats");
    TCase *line = hx_tcase("line");

    tcase_add_test(size, test_size_forms);
    tcase_add_test(size, test_size_garbage);
    tcase_add_test(size, test_size_str_and_u64);
    suite_add_tcase(s, size);
    tcase_add_test(pattern, test_pattern_pinned);
    tcase_add_test(pattern, test_pattern_roundtrip);
    tcase_add_test(pattern, test_pattern_finds_bad_bytes);
    suite_add_tcase(s, pattern);
    tcase_add_test(stats, test_median);
    tcase_add_test(stats, test_percentile_nearest_rank);
    tcase_add_test(stats, test_percentile_perftest_rank);
    suite_add_tcase(s, stats);
    tcase_add_test(line, test_kv);
    tcase_add_test(line, test_lines);
    tcase_add_test(line, test_read_write_all);
    suite_add_tcase(s, line);
    return s;
}

int main(void)
{
    return hx_main(unit_bench_common_suite());
}
