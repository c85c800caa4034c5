/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The strict JSON reader of json.h: one pass, an explicit stack instead of
 * recursion (a deeply nested value costs a refusal, not the thread's
 * stack), a bounded token table, and every read checked against the
 * text's length.
 */
#include "config.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the parser expects next. */
typedef enum json_expect {
    X_VALUE,
    X_VALUE_OR_END,   /* just after '[' */
    X_KEY,            /* after ',' in an object */
    X_KEY_OR_END,     /* just after '{' */
    X_COLON,
    X_COMMA_OR_END,
    X_DONE
} json_expect_t;

static int json_fail(hixl_json_t *j, size_t pos, const char *what)
{
    snprintf(j->err, sizeof(j->err), "%s at byte %zu", what, pos);
    return -1;
}

/* Append a token; its index, or HIXL_JSON_NONE (j->err set) at the
 * caller's limit or without memory. */
static uint32_t json_add(hixl_json_t *j, uint32_t *cap, uint32_t max,
                         hixl_json_type_t type, size_t start, size_t len)
{
    hixl_json_tok_t *grown, *t;
    uint32_t ncap;

    if (j->ntok >= max) {
        json_fail(j, start, "too many values");
        snprintf(j->err + strlen(j->err), sizeof(j->err) - strlen(j->err),
                 " (limit %u)", max);
        return HIXL_JSON_NONE;
    }
    if (j->ntok == *cap) {
        ncap = (*cap == 0) ? 16 : ((*cap > max / 2) ? max : *cap * 2);
        if (ncap > max) {
            ncap = max;
        }
        grown = realloc(j->tok, (size_t)ncap * sizeof(*grown));
        if (grown == NULL) {
            json_fail(j, start, "out of memory");
            return HIXL_JSON_NONE;
        }
        j->tok = grown;
        *cap   = ncap;
    }
    t        = &j->tok[j->ntok];
    t->type  = (uint8_t)type;
    t->start = (uint32_t)start;
    t->len   = (uint32_t)len;
    t->count = 0;
    t->next  = j->ntok + 1;
    return j->ntok++;
}

static int json_hex(char c)
{
    if ((c >= '0') && (c <= '9')) {
        return c - '0';
    }
    if ((c >= 'a') && (c <= 'f')) {
        return c - 'a' + 10;
    }
    if ((c >= 'A') && (c <= 'F')) {
        return c - 'A' + 10;
    }
    return -1;
}

/* A string starting at the quote text[p]: the offset of its closing
 * quote, or 0 (j->err set). */
static size_t json_scan_string(hixl_json_t *j, size_t p)
{
    const char *s = j->text;
    size_t n = j->text_len, k;

    for (++p; p < n; ++p) {
        unsigned char c = (unsigned char)s[p];

        if (c == '"') {
            return p;
        }
        if (c < 0x20) {
            json_fail(j, p, "control character in a string");
            return 0;
        }
        if (c != '\\') {
            continue;
        }
        if (++p >= n) {
            break;
        }
        if (s[p] == 'u') {
            for (k = 1; k <= 4; ++k) {
                if ((p + k >= n) || (json_hex(s[p + k]) < 0)) {
                    json_fail(j, p, "bad \\u escape");
                    return 0;
                }
            }
            p += 4;
        } else if (strchr("\"\\/bfnrt", s[p]) == NULL || (s[p] == '\0')) {
            json_fail(j, p, "bad escape");
            return 0;
        }
    }
    json_fail(j, n, "unterminated string");
    return 0;
}

/* A number starting at text[p]: the offset just past it, or 0. */
static size_t json_scan_number(hixl_json_t *j, size_t p)
{
    const char *s = j->text;
    size_t n = j->text_len, q = p;

#define DIGIT(_i) (((_i) < n) && (s[_i] >= '0') && (s[_i] <= '9'))
    if ((q < n) && (s[q] == '-')) {
        ++q;
    }
    if (!DIGIT(q)) {
        goto bad;
    }
    if (s[q] == '0') {
        ++q;   /* no leading zeros */
    } else {
        while (DIGIT(q)) {
            ++q;
        }
    }
    if ((q < n) && (s[q] == '.')) {
        ++q;
        if (!DIGIT(q)) {
            goto bad;
        }
        while (DIGIT(q)) {
            ++q;
        }
    }
    if ((q < n) && ((s[q] == 'e') || (s[q] == 'E'))) {
        ++q;
        if ((q < n) && ((s[q] == '+') || (s[q] == '-'))) {
            ++q;
        }
        if (!DIGIT(q)) {
            goto bad;
        }
        while (DIGIT(q)) {
            ++q;
        }
    }
#undef DIGIT
    return q;
bad:
    json_fail(j, p, "malformed number");
    return 0;
}

/* A scalar value at text[p] appended as a token: the offset past it, or
 * 0. */
static size_t json_scalar(hixl_json_t *j, uint32_t *cap, uint32_t max,
                          size_t p)
{
    static const struct {
        const char      *word;
        hixl_json_type_t type;
    } words[] = {{"true", HIXL_JSON_BOOL}, {"false", HIXL_JSON_BOOL},
                 {"null", HIXL_JSON_NULL}};
    size_t end, i, wl;
    char c = j->text[p];

    if (c == '"') {
        end = json_scan_string(j, p);
        if ((end == 0) || (json_add(j, cap, max, HIXL_JSON_STRING, p + 1,
                                    end - p - 1) == HIXL_JSON_NONE)) {
            return 0;
        }
        return end + 1;
    }
    if ((c == '-') || ((c >= '0') && (c <= '9'))) {
        end = json_scan_number(j, p);
        if ((end == 0) || (json_add(j, cap, max, HIXL_JSON_NUMBER, p,
                                    end - p) == HIXL_JSON_NONE)) {
            return 0;
        }
        return end;
    }
    for (i = 0; i < sizeof(words) / sizeof(words[0]); ++i) {
        wl = strlen(words[i].word);
        if ((j->text_len - p >= wl) && !memcmp(j->text + p, words[i].word,
                                               wl)) {
            if (json_add(j, cap, max, words[i].type, p, wl) ==
                HIXL_JSON_NONE) {
                return 0;
            }
            return p + wl;
        }
    }
    json_fail(j, p, "expected a value");
    return 0;
}

int hixl_json_parse(hixl_json_t *j, const char *text, size_t len,
                    uint32_t max_tokens)
{
    uint32_t stack[HIXL_JSON_MAX_DEPTH], cap = 0, top, t;
    json_expect_t expect = X_VALUE;
    unsigned depth = 0;
    size_t p = 0;
    char c;

    memset(j, 0, sizeof(*j));
    j->text     = text;
    j->text_len = len;
    if ((text == NULL) || (len >= UINT32_MAX) || (max_tokens == 0) ||
        (max_tokens == HIXL_JSON_NONE)) {
        return json_fail(j, 0, "no text, or too long");
    }
    for (;;) {
        while ((p < len) && strchr(" \t\r\n", text[p]) && (text[p] != '\0')) {
            ++p;
        }
        if (expect == X_DONE) {
            return (p == len) ? 0 : json_fail(j, p, "characters after the "
                                              "value");
        }
        if (p >= len) {
            return json_fail(j, p, "unexpected end");
        }
        c   = text[p];
        top = depth ? stack[depth - 1] : HIXL_JSON_NONE;
        switch (expect) {
        case X_VALUE_OR_END:
            if (c == ']') {
                goto close;
            }
            /* fall through */
        case X_VALUE:
            if ((top != HIXL_JSON_NONE) &&
                (j->tok[top].type == HIXL_JSON_ARRAY)) {
                j->tok[top].count++;   /* an element */
            }
            if ((c == '{') || (c == '[')) {
                if (depth == HIXL_JSON_MAX_DEPTH) {
                    return json_fail(j, p, "nested too deeply");
                }
                t = json_add(j, &cap, max_tokens, (c == '{') ?
                             HIXL_JSON_OBJECT : HIXL_JSON_ARRAY, p, 0);
                if (t == HIXL_JSON_NONE) {
                    return -1;
                }
                stack[depth++] = t;
                expect = (c == '{') ? X_KEY_OR_END : X_VALUE_OR_END;
                ++p;
                continue;
            }
            p = json_scalar(j, &cap, max_tokens, p);
            if (p == 0) {
                return -1;
            }
            expect = depth ? X_COMMA_OR_END : X_DONE;
            continue;
        case X_KEY_OR_END:
            if (c == '}') {
                goto close;
            }
            /* fall through */
        case X_KEY:
            if (c != '"') {
                return json_fail(j, p, "expected a string key");
            }
            j->tok[top].count++;   /* a member */
            p = json_scalar(j, &cap, max_tokens, p);
            if (p == 0) {
                return -1;
            }
            expect = X_COLON;
            continue;
        case X_COLON:
            if (c != ':') {
                return json_fail(j, p, "expected ':'");
            }
            ++p;
            expect = X_VALUE;
            continue;
        case X_COMMA_OR_END:
            if (c == ',') {
                ++p;
                expect = (j->tok[top].type == HIXL_JSON_OBJECT) ? X_KEY :
                         X_VALUE;
                continue;
            }
            if (c == ((j->tok[top].type == HIXL_JSON_OBJECT) ? '}' : ']')) {
                goto close;
            }
            return json_fail(j, p, (j->tok[top].type == HIXL_JSON_OBJECT) ?
                             "expected ',' or '}'" : "expected ',' or ']'");
        case X_DONE:
            break;
        }
        return json_fail(j, p, "internal: bad parser state");
close:
        j->tok[top].len  = (uint32_t)(p + 1 - j->tok[top].start);
        j->tok[top].next = j->ntok;
        --depth;
        ++p;
        expect = depth ? X_COMMA_OR_END : X_DONE;
    }
}

void hixl_json_free(hixl_json_t *j)
{
    free(j->tok);
    j->tok  = NULL;
    j->ntok = 0;
}

uint32_t hixl_json_member(const hixl_json_t *j, uint32_t obj,
                          const char *key)
{
    uint32_t i, k, found = HIXL_JSON_NONE;

    if ((obj >= j->ntok) || (j->tok[obj].type != HIXL_JSON_OBJECT)) {
        return HIXL_JSON_NONE;
    }
    for (i = obj + 1, k = 0; k < j->tok[obj].count; ++k) {
        if (hixl_json_string_eq(j, i, key)) {
            found = i + 1;
        }
        i = j->tok[i + 1].next;
    }
    return found;
}

uint32_t hixl_json_element(const hixl_json_t *j, uint32_t arr, uint32_t idx)
{
    uint32_t i, k;

    if ((arr >= j->ntok) || (j->tok[arr].type != HIXL_JSON_ARRAY) ||
        (idx >= j->tok[arr].count)) {
        return HIXL_JSON_NONE;
    }
    for (i = arr + 1, k = 0; k < idx; ++k) {
        i = j->tok[i].next;
    }
    return i;
}

/* UTF-8 of code point cp into out (room for 4); its length. */
static size_t json_utf8(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static uint32_t json_u4(const char *s)
{
    return ((uint32_t)json_hex(s[0]) << 12) | ((uint32_t)json_hex(s[1]) << 8) |
           ((uint32_t)json_hex(s[2]) << 4) | (uint32_t)json_hex(s[3]);
}

int hixl_json_string(const hixl_json_t *j, uint32_t i, char *buf,
                     size_t buflen)
{
    const char *s, *end;
    size_t o = 0, n;
    uint32_t cp, lo;
    char u[4];

    if ((i >= j->ntok) || (j->tok[i].type != HIXL_JSON_STRING) ||
        (buflen == 0)) {
        return -1;
    }
    s   = j->text + j->tok[i].start;
    end = s + j->tok[i].len;
    /* the scan checked every escape: each is complete within the token */
    while (s < end) {
        if (*s != '\\') {
            u[0] = *s++;
            n    = 1;
        } else if (s[1] != 'u') {
            u[0] = (s[1] == 'b') ? '\b' : (s[1] == 'f') ? '\f' :
                   (s[1] == 'n') ? '\n' : (s[1] == 'r') ? '\r' :
                   (s[1] == 't') ? '\t' : s[1];
            s   += 2;
            n    = 1;
        } else {
            cp  = json_u4(s + 2);
            s  += 6;
            if ((cp >= 0xd800) && (cp < 0xdc00)) {
                if ((end - s < 6) || (s[0] != '\\') || (s[1] != 'u')) {
                    return -1;   /* a lone high surrogate */
                }
                lo = json_u4(s + 2);
                if ((lo < 0xdc00) || (lo >= 0xe000)) {
                    return -1;
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                s += 6;
            } else if ((cp >= 0xdc00) && (cp < 0xe000)) {
                return -1;       /* a lone low surrogate */
            }
            if (cp == 0) {
                return -1;       /* C strings cannot hold it */
            }
            n = json_utf8(cp, u);
        }
        if (o + n >= buflen) {
            return -1;
        }
        memcpy(buf + o, u, n);
        o += n;
    }
    buf[o] = '\0';
    return 0;
}

int hixl_json_string_eq(const hixl_json_t *j, uint32_t i, const char *s)
{
    size_t n = strlen(s);
    char buf[256];

    if ((i >= j->ntok) || (j->tok[i].type != HIXL_JSON_STRING)) {
        return 0;
    }
    if (memchr(j->text + j->tok[i].start, '\\', j->tok[i].len) == NULL) {
        return (j->tok[i].len == n) &&
               !memcmp(j->text + j->tok[i].start, s, n);
    }
    return (n < sizeof(buf)) && (hixl_json_string(j, i, buf,
                                                  sizeof(buf)) == 0) &&
           !strcmp(buf, s);
}

/* The text of a number token, or of a string token (unescaped), into buf;
 * 0 or -1. */
static int json_number_text(const hixl_json_t *j, uint32_t i, char *buf,
                            size_t buflen)
{
    if (i >= j->ntok) {
        return -1;
    }
    if (j->tok[i].type == HIXL_JSON_STRING) {
        return hixl_json_string(j, i, buf, buflen);
    }
    if ((j->tok[i].type != HIXL_JSON_NUMBER) || (j->tok[i].len >= buflen)) {
        return -1;
    }
    memcpy(buf, j->text + j->tok[i].start, j->tok[i].len);
    buf[j->tok[i].len] = '\0';
    return 0;
}

int hixl_json_int(const hixl_json_t *j, uint32_t i, int64_t *v)
{
    char buf[32], *end;
    const char *d;
    long long x;

    if (json_number_text(j, i, buf, sizeof(buf)) != 0) {
        return -1;
    }
    /* decimal digits with an optional '-', nothing else (strtoll alone
     * would take spaces, '+', hex and trailing junk) */
    d = (buf[0] == '-') ? buf + 1 : buf;
    if ((*d == '\0') || (strspn(d, "0123456789") != strlen(d))) {
        return -1;
    }
    errno = 0;
    x     = strtoll(buf, &end, 10);
    if ((errno != 0) || (*end != '\0')) {
        return -1;
    }
    *v = (int64_t)x;
    return 0;
}

int hixl_json_double(const hixl_json_t *j, uint32_t i, double *v)
{
    char buf[64], *end;
    double x;

    if ((json_number_text(j, i, buf, sizeof(buf)) != 0) || (buf[0] == '\0') ||
        (strchr(" \t\n\r\f\v+", buf[0]) != NULL)) {
        return -1;
    }
    errno = 0;
    x     = strtod(buf, &end);
    if ((errno != 0) || (*end != '\0') || !isfinite(x)) {
        return -1;
    }
    *v = x;
    return 0;
}

int hixl_json_bool(const hixl_json_t *j, uint32_t i, int *v)
{
    if ((i >= j->ntok) || (j->tok[i].type != HIXL_JSON_BOOL)) {
        return -1;
    }
    *v = (j->text[j->tok[i].start] == 't');
    return 0;
}
