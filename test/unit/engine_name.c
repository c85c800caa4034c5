/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: engine names (src/engine_name.c).  "ip:port" listens, "ip" is
 * client-only, IPv6 as "[addr]:port" / "[addr]" / bare "addr"; names are
 * compared in canonical form; only numeric addresses (a name is an identity
 * every peer must spell the same way, so no resolver is involved).
 */
#include "config.h"
#include "harness.h"
#include "util/engine_name.h"

#include <arpa/inet.h>
#include <string.h>

static void expect_name(const char *text, const char *canon, int family,
                        unsigned port)
{
    hixl_name_t n;
    hixl_status_t st;

    memset(&n, 0x5a, sizeof(n));
    st = hixl_name_parse(text, &n);
    ck_assert_msg(st == HIXL_SUCCESS, "\"%s\": %s: %s", text,
                  hixl_strerror(st), hixl_last_error());
    ck_assert_msg(!strcmp(n.canon, canon), "\"%s\" -> \"%s\", expected "
                  "\"%s\"", text, n.canon, canon);
    ck_assert_int_eq(n.port, port);
    ck_assert_int_eq(n.addr.ss_family, family);
    if (family == AF_INET) {
        const struct sockaddr_in *sa = (const struct sockaddr_in*)&n.addr;

        ck_assert_uint_eq(n.addrlen, sizeof(*sa));
        ck_assert_uint_eq(ntohs(sa->sin_port), port);
    } else {
        const struct sockaddr_in6 *sa = (const struct sockaddr_in6*)&n.addr;

        ck_assert_uint_eq(n.addrlen, sizeof(*sa));
        ck_assert_uint_eq(ntohs(sa->sin6_port), port);
    }
    /* canonical is a fixed point */
    st = hixl_name_parse(canon, &n);
    ck_assert_int_eq(st, HIXL_SUCCESS);
    ck_assert_str_eq(n.canon, canon);
}

START_TEST(test_ipv4)
{
    expect_name("127.0.0.1:1234", "127.0.0.1:1234", AF_INET, 1234);
    expect_name("127.0.0.1", "127.0.0.1", AF_INET, 0);
    expect_name("127.0.0.1:0", "127.0.0.1", AF_INET, 0);   /* port 0: none */
    expect_name("10.1.2.3:65535", "10.1.2.3:65535", AF_INET, 65535);
    expect_name("0.0.0.0:1", "0.0.0.0:1", AF_INET, 1);
    expect_name("192.168.0.1:00080", "192.168.0.1:80", AF_INET, 80);
}
END_TEST

START_TEST(test_ipv6)
{
    expect_name("[::1]:80", "[::1]:80", AF_INET6, 80);
    expect_name("[::1]", "[::1]", AF_INET6, 0);
    expect_name("::1", "[::1]", AF_INET6, 0);
    expect_name("0::1", "[::1]", AF_INET6, 0);
    expect_name("[0:0:0:0:0:0:0:1]:5", "[::1]:5", AF_INET6, 5);
    expect_name("[FE80::ABCD]:9", "[fe80::abcd]:9", AF_INET6, 9);
    expect_name("2001:db8::1", "[2001:db8::1]", AF_INET6, 0);
    expect_name("[2001:db8:0:0:0:0:0:2]:65535", "[2001:db8::2]:65535",
                AF_INET6, 65535);
    expect_name("[::]:1", "[::]:1", AF_INET6, 1);
}
END_TEST

/* Different spellings of one engine have one canonical name. */
START_TEST(test_canonical_equality)
{
    static const char *const same[] = {"[::1]:9", "[0::1]:9",
                                       "[0:0:0:0:0:0:0:1]:9", "[::0:1]:09"};
    hixl_name_t a, b;
    size_t i;

    hx_ok(hixl_name_parse(same[0], &a));
    for (i = 1; i < sizeof(same) / sizeof(same[0]); ++i) {
        hx_ok(hixl_name_parse(same[i], &b));
        ck_assert_str_eq(a.canon, b.canon);
    }
}
END_TEST

START_TEST(test_bad_names)
{
    static const struct { const char *text, *needle; } bad[] = {
        {"", "empty"},
        {"localhost", "localhost"},
        {"localhost:80", "localhost"},
        {"example.com:80", NULL},
        {"host", NULL},
        {"127.0.0.1:", "port"},
        {"127.0.0.1:65536", "port"},
        {"127.0.0.1:99999999999999999999", "port"},
        {"127.0.0.1:-1", "port"},
        {"127.0.0.1:+1", "port"},
        {"127.0.0.1: 1", "port"},
        {"127.0.0.1:1a", "port"},
        {"127.0.0.1:0x10", "port"},
        {"1.2.3.256", NULL},
        {"1.2.3.4.5", NULL},
        {"1.2.3.4:5:6", NULL},
        {":80", NULL},
        {"[::1", "]"},
        {"[::1]x", NULL},
        {"[::1]:", "port"},
        {"[::1]:65536", "port"},
        {"[]:80", NULL},
        {"[]", NULL},
        {"[", NULL},
        {"::1:80:", NULL},
        {"[localhost]:80", NULL},
        {"::g", NULL},
        {" 127.0.0.1", NULL},
        {"127.0.0.1 ", NULL},
    };
    hixl_name_t n;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        hx_expect(hixl_name_parse(bad[i].text, &n), HIXL_PARAM_INVALID,
                  bad[i].needle);
    }
    hx_expect(hixl_name_parse(NULL, &n), HIXL_PARAM_INVALID, "NULL");
}
END_TEST

/* Names longer than HIXL_ENGINE_NAME_MAX are refused before anything is
 * copied (the parser has fixed-size buffers). */
START_TEST(test_long_names)
{
    char name[1024];
    hixl_name_t n;

    memset(name, '1', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    hx_expect(hixl_name_parse(name, &n), HIXL_PARAM_INVALID, NULL);
    name[0] = '[';
    hx_expect(hixl_name_parse(name, &n), HIXL_PARAM_INVALID, NULL);
    name[HIXL_ENGINE_NAME_MAX + 1] = '\0';   /* one too long */
    name[HIXL_ENGINE_NAME_MAX] = ']';
    hx_expect(hixl_name_parse(name, &n), HIXL_PARAM_INVALID, NULL);
    /* exactly the maximum: not an address, but refused for that, not
     * overflowing anything */
    memset(name, ':', HIXL_ENGINE_NAME_MAX);
    name[HIXL_ENGINE_NAME_MAX] = '\0';
    hx_expect(hixl_name_parse(name, &n), HIXL_PARAM_INVALID, NULL);
}
END_TEST

/* After an ephemeral listen the real port goes into the name. */
START_TEST(test_set_port)
{
    hixl_name_t n;

    hx_ok(hixl_name_parse("127.0.0.1", &n));
    hixl_name_set_port(&n, 4242);
    ck_assert_str_eq(n.canon, "127.0.0.1:4242");
    ck_assert_uint_eq(ntohs(((struct sockaddr_in*)&n.addr)->sin_port), 4242);
    hx_ok(hixl_name_parse("::1", &n));
    hixl_name_set_port(&n, 65535);
    ck_assert_str_eq(n.canon, "[::1]:65535");
    ck_assert_uint_eq(ntohs(((struct sockaddr_in6*)&n.addr)->sin6_port),
                      65535);
    hixl_name_set_port(&n, 0);
    ck_assert_str_eq(n.canon, "[::1]");
    ck_assert_uint_eq(n.port, 0);
}
END_TEST

static Suite *unit_engine_name_suite(void)
{
    Suite *s = suite_create("engine_name");
    TCase *tc = hx_tcase("names");

    tcase_add_test(tc, test_ipv4);
    tcase_add_test(tc, test_ipv6);
    tcase_add_test(tc, test_canonical_equality);
    tcase_add_test(tc, test_bad_names);
    tcase_add_test(tc, test_long_names);
    tcase_add_test(tc, test_set_port);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_engine_name_suite());
}
