/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the strict JSON reader (src/util/json.c) that option values in
 * JSON (GlobalResourceConfig, LocalCommRes) go through.
 *
 * What it must take (RFC 8259 documents, the value shapes hixl's options
 * use), what it must refuse with a reason (every common deviation, nesting
 * past the limit, more tokens than allowed), and that it never reads past
 * its input: every prefix of a valid document and random byte mutations
 * are parsed from a buffer of exactly their length (the sanitized build
 * catches a read beyond it).
 */
#include "config.h"
#include "harness.h"
#include "util/json.h"

#include <stdlib.h>
#include <string.h>

static int parse(hixl_json_t *j, const char *text)
{
    return hixl_json_parse(j, text, strlen(text), 1024);
}

/* Parse text; assert the outcome, free. */
static void expect_ok(const char *text)
{
    hixl_json_t j;

    ck_assert_msg(parse(&j, text) == 0, "refused %s: %s", text, j.err);
    hixl_json_free(&j);
}

static void expect_bad(const char *text, const char *why)
{
    hixl_json_t j;

    ck_assert_msg(parse(&j, text) == -1, "accepted %s", text);
    ck_assert_msg(strstr(j.err, why) != NULL, "%s: \"%s\" lacks \"%s\"",
                  text, j.err, why);
    hixl_json_free(&j);
}

START_TEST(test_accepts)
{
    static const char *const good[] = {
        "0", "-0", "12", "-1.5e-3", "1E+9", "0.25", "true", "false", "null",
        "\"\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\"", "[]", "{}",
        " \t\r\n[ 1 , [ ] , { } , \"x\" ] \n", "{\"a\":{\"b\":[1,{\"c\":null}]}}",
        "{\"version\": \"1.3\", \"endpoint_list\": [{\"protocol\": \"roce\"}]}",
    };
    size_t i;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); ++i) {
        expect_ok(good[i]);
    }
}
END_TEST

START_TEST(test_refuses)
{
    static const struct { const char *text, *why; } bad[] = {
        {"", "unexpected end"}, {"   ", "unexpected end"},
        {"[1,]", "expected a value"}, {"{\"a\":1,}", "expected a string key"},
        {"{'a':1}", "expected a string key"}, {"{a:1}", "expected a string key"},
        {"{\"a\" 1}", "expected ':'"}, {"{\"a\":1 \"b\":2}", "expected ','"},
        {"[1 2]", "expected ','"}, {"[1}", "expected ','"}, {"{\"a\":1]", "expected ','"},
        {"01", "characters after"}, {"1.", "malformed number"},
        {".5", "expected a value"}, {"-", "malformed number"},
        {"1e", "malformed number"}, {"+1", "expected a value"},
        {"0x10", "characters after"}, {"NaN", "expected a value"},
        {"Infinity", "expected a value"}, {"tru", "expected a value"},
        {"nul", "expected a value"}, {"\"abc", "unterminated"},
        {"\"a\\x\"", "bad escape"}, {"\"\\u12\"", "bad \\u escape"},
        {"\"\\u12g4\"", "bad \\u escape"}, {"\"a\tb\"", "control character"},
        {"1 2", "characters after"}, {"{} {}", "characters after"},
        {"[1] x", "characters after"}, {"// c\n1", "expected a value"},
        {"[", "unexpected end"}, {"{\"a\":", "unexpected end"},
    };
    hixl_json_t j;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        expect_bad(bad[i].text, bad[i].why);
    }
    /* a NUL byte inside the given length is not whitespace */
    ck_assert_int_eq(hixl_json_parse(&j, "1\0", 2, 16), -1);
    hixl_json_free(&j);
    ck_assert_int_eq(hixl_json_parse(&j, "[\0]", 3, 16), -1);
    hixl_json_free(&j);
    ck_assert_int_eq(hixl_json_parse(&j, NULL, 0, 16), -1);
    hixl_json_free(&j);
}
END_TEST

/* HIXL_JSON_MAX_DEPTH levels parse, one more is refused, and a huge
 * nesting costs a refusal, not the stack. */
START_TEST(test_depth_and_tokens)
{
    size_t big = 1000000, i;
    char *s = malloc(2 * big + 1);
    hixl_json_t j;

    ck_assert_ptr_nonnull(s);
    memset(s, '[', HIXL_JSON_MAX_DEPTH);
    memset(s + HIXL_JSON_MAX_DEPTH, ']', HIXL_JSON_MAX_DEPTH);
    ck_assert_int_eq(hixl_json_parse(&j, s, 2 * HIXL_JSON_MAX_DEPTH, 1024), 0);
    ck_assert_uint_eq(j.ntok, HIXL_JSON_MAX_DEPTH);
    ck_assert_uint_eq(j.tok[0].next, HIXL_JSON_MAX_DEPTH);
    hixl_json_free(&j);
    memset(s, '[', HIXL_JSON_MAX_DEPTH + 1);
    memset(s + HIXL_JSON_MAX_DEPTH + 1, ']', HIXL_JSON_MAX_DEPTH + 1);
    ck_assert_int_eq(hixl_json_parse(&j, s, 2 * HIXL_JSON_MAX_DEPTH + 2,
                                     1024), -1);
    ck_assert_ptr_nonnull(strstr(j.err, "nested too deeply"));
    hixl_json_free(&j);
    memset(s, '[', big);
    ck_assert_int_eq(hixl_json_parse(&j, s, big, 1024), -1);
    ck_assert_ptr_nonnull(strstr(j.err, "nested too deeply"));
    hixl_json_free(&j);

    /* the token limit holds, however many values the text has */
    s[0] = '[';
    for (i = 1; i < big; i += 2) {
        s[i]     = '0';
        s[i + 1] = ',';
    }
    s[big - 1] = ']';
    ck_assert_int_eq(hixl_json_parse(&j, s, big, 100), -1);
    ck_assert_ptr_nonnull(strstr(j.err, "too many values"));
    ck_assert_uint_le(j.ntok, 100);
    hixl_json_free(&j);
    ck_assert_int_eq(hixl_json_parse(&j, "[1,2,3]", 7, 4), 0);
    hixl_json_free(&j);
    ck_assert_int_eq(hixl_json_parse(&j, "[1,2,3]", 7, 3), -1);
    hixl_json_free(&j);
    free(s);
}
END_TEST

START_TEST(test_navigation)
{
    const char *text = "{\"a\": 1, \"b\": [10, \"20\", {\"c\": true}], "
                       "\"a\": -7, \"e\\u0073c\": \"x\", \"d\": 2.5}";
    hixl_json_t j;
    uint32_t b, c;
    int64_t v;
    double d;
    int flag;

    ck_assert_int_eq(parse(&j, text), 0);
    ck_assert_int_eq(hixl_json_type(&j, 0), HIXL_JSON_OBJECT);
    ck_assert_uint_eq(j.tok[0].count, 5);
    ck_assert_uint_eq(j.tok[0].next, j.ntok);
    /* a repeated key: the last one */
    ck_assert_int_eq(hixl_json_int(&j, hixl_json_member(&j, 0, "a"), &v), 0);
    ck_assert_int_eq(v, -7);
    /* an escaped key matches its text */
    ck_assert_uint_ne(hixl_json_member(&j, 0, "esc"), HIXL_JSON_NONE);
    ck_assert_uint_eq(hixl_json_member(&j, 0, "zz"), HIXL_JSON_NONE);
    b = hixl_json_member(&j, 0, "b");
    ck_assert_int_eq(hixl_json_type(&j, b), HIXL_JSON_ARRAY);
    ck_assert_uint_eq(j.tok[b].count, 3);
    ck_assert_int_eq(hixl_json_int(&j, hixl_json_element(&j, b, 0), &v), 0);
    ck_assert_int_eq(v, 10);
    /* "20": a numeric string is an integer too, as in CANN hixl */
    ck_assert_int_eq(hixl_json_int(&j, hixl_json_element(&j, b, 1), &v), 0);
    ck_assert_int_eq(v, 20);
    c = hixl_json_member(&j, hixl_json_element(&j, b, 2), "c");
    ck_assert_int_eq(hixl_json_bool(&j, c, &flag), 0);
    ck_assert_int_eq(flag, 1);
    ck_assert_uint_eq(hixl_json_element(&j, b, 3), HIXL_JSON_NONE);
    ck_assert_int_eq(hixl_json_int(&j, hixl_json_member(&j, 0, "d"), &v), -1);
    ck_assert_int_eq(hixl_json_double(&j, hixl_json_member(&j, 0, "d"), &d),
                     0);
    ck_assert(d == 2.5);
    ck_assert_int_eq(hixl_json_bool(&j, b, &flag), -1);
    ck_assert_uint_eq(hixl_json_member(&j, b, "a"), HIXL_JSON_NONE);
    ck_assert_uint_eq(hixl_json_element(&j, 0, 0), HIXL_JSON_NONE);
    hixl_json_free(&j);
}
END_TEST

START_TEST(test_values)
{
    static const struct { const char *text; int ok; int64_t v; } ints[] = {
        {"0", 1, 0}, {"-12", 1, -12}, {"\"128\"", 1, 128},
        {"9223372036854775807", 1, INT64_MAX},
        {"9223372036854775808", 0, 0}, {"\"-9223372036854775809\"", 0, 0},
        {"1.0", 0, 0}, {"1e3", 0, 0}, {"\" 12\"", 0, 0}, {"\"+12\"", 0, 0},
        {"\"0x10\"", 0, 0}, {"\"12abc\"", 0, 0}, {"\"\"", 0, 0},
        {"true", 0, 0}, {"null", 0, 0}, {"[1]", 0, 0},
    };
    hixl_json_t j;
    char buf[16];
    int64_t v;
    double d;
    size_t i;

    for (i = 0; i < sizeof(ints) / sizeof(ints[0]); ++i) {
        ck_assert_int_eq(parse(&j, ints[i].text), 0);
        ck_assert_msg((hixl_json_int(&j, 0, &v) == 0) == ints[i].ok,
                      "%s", ints[i].text);
        if (ints[i].ok) {
            ck_assert_int_eq(v, ints[i].v);
        }
        hixl_json_free(&j);
    }
    ck_assert_int_eq(parse(&j, "\"0.3\""), 0);
    ck_assert_int_eq(hixl_json_double(&j, 0, &d), 0);
    ck_assert(d > 0.29 && d < 0.31);
    hixl_json_free(&j);
    ck_assert_int_eq(parse(&j, "\"1e999\""), 0);
    ck_assert_int_eq(hixl_json_double(&j, 0, &d), -1);
    hixl_json_free(&j);

    /* strings: escapes, UTF-8 from \u and surrogate pairs, the bounds */
    ck_assert_int_eq(parse(&j, "\"a\\n\\u00e9\\ud83d\\ude00\""), 0);
    ck_assert_int_eq(hixl_json_string(&j, 0, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "a\n\xc3\xa9\xf0\x9f\x98\x80");
    ck_assert_int_eq(hixl_json_string(&j, 0, buf, 8), -1);   /* no room */
    hixl_json_free(&j);
    ck_assert_int_eq(parse(&j, "\"\\ud83d\""), 0);   /* lone surrogate */
    ck_assert_int_eq(hixl_json_string(&j, 0, buf, sizeof(buf)), -1);
    hixl_json_free(&j);
    ck_assert_int_eq(parse(&j, "\"a\\u0000b\""), 0);   /* NUL: not a C string */
    ck_assert_int_eq(hixl_json_string(&j, 0, buf, sizeof(buf)), -1);
    hixl_json_free(&j);
    ck_assert_int_eq(parse(&j, "7"), 0);
    ck_assert_int_eq(hixl_json_string(&j, 0, buf, sizeof(buf)), -1);
    ck_assert(!hixl_json_string_eq(&j, 0, "7"));
    hixl_json_free(&j);
}
END_TEST

/* Every proper prefix of a valid document is refused, each parsed from a
 * heap copy of exactly its length; random mutations never crash and a
 * success always describes the whole text. */
START_TEST(test_prefixes_and_mutations)
{
    const char *doc = "{\"version\":\"1.3\",\"endpoint_list\":[{\"protocol\":"
                      "\"roce\",\"comm_id\":\"10.0.0.1\",\"placement\":"
                      "\"device\"}],\"n\":[-1.5e3,true,null,\"\\u00e9\"]}";
    size_t n = strlen(doc), len, k;
    uint64_t rng = 12345;
    hixl_json_t j;
    char *copy;
    int round;

    for (len = 0; len < n; ++len) {
        copy = malloc(len + 1);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, doc, len);
        ck_assert_msg(hixl_json_parse(&j, copy, len, 1024) == -1,
                      "prefix of %zu bytes accepted", len);
        hixl_json_free(&j);
        free(copy);
    }
    for (round = 0; round < 20000; ++round) {
        copy = malloc(n);
        ck_assert_ptr_nonnull(copy);
        memcpy(copy, doc, n);
        for (k = 0; k < 1 + hx_rand(&rng) % 4; ++k) {
            copy[hx_rand(&rng) % n] = (char)(hx_rand(&rng) & 0xff);
        }
        len = 1 + hx_rand(&rng) % n;
        if (hixl_json_parse(&j, copy, len, 64) == 0) {
            ck_assert_uint_ge(j.ntok, 1);
            ck_assert_uint_eq(j.tok[0].next, j.ntok);
        }
        hixl_json_free(&j);
        free(copy);
    }
}
END_TEST

static Suite *unit_json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = hx_tcase("json");

    tcase_add_test(tc, test_accepts);
    tcase_add_test(tc, test_refuses);
    tcase_add_test(tc, test_depth_and_tokens);
    tcase_add_test(tc, test_navigation);
    tcase_add_test(tc, test_values);
    tcase_add_test(tc, test_prefixes_and_mutations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_json_suite());
}
