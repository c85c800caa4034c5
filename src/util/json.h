/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small, strict JSON reader for option values (CANN hixl's
 * GlobalResourceConfig and LocalCommRes are JSON strings).
 *
 * The text is checked against RFC 8259 in one pass without recursion: an
 * explicit stack bounded by HIXL_JSON_MAX_DEPTH, a token table bounded by
 * the caller, every index checked against the text's length.  Nothing is
 * copied: tokens are offsets into the text, and strings are unescaped only
 * when asked for, into the caller's buffer.  Values come from users and
 * files, so every refusal says where and why.
 *
 * Tokens are in document order.  A container's members follow it; a
 * token's `next` is the index just past its subtree, so siblings are
 * walked with i = tok[i].next.  An object's children alternate key (a
 * string) and value.
 */
#ifndef HIXL_UTIL_JSON_H_
#define HIXL_UTIL_JSON_H_

#include <stddef.h>
#include <stdint.h>

/* Deeper nesting is refused (no option needs more than three levels). */
#define HIXL_JSON_MAX_DEPTH 32
/* Sentinel for "no such token". */
#define HIXL_JSON_NONE UINT32_MAX

typedef enum hixl_json_type {
    HIXL_JSON_NULL,
    HIXL_JSON_BOOL,
    HIXL_JSON_NUMBER,
    HIXL_JSON_STRING,
    HIXL_JSON_ARRAY,
    HIXL_JSON_OBJECT
} hixl_json_type_t;

typedef struct hixl_json_tok {
    uint8_t  type;    /* hixl_json_type_t */
    uint32_t start;   /* first byte (a string: after its opening quote) */
    uint32_t len;     /* bytes (a string: before its closing quote) */
    uint32_t count;   /* array: elements; object: members */
    uint32_t next;    /* index just past this token's subtree */
} hixl_json_tok_t;

typedef struct hixl_json {
    const char      *text;
    size_t           text_len;
    hixl_json_tok_t *tok;
    uint32_t         ntok;
    char             err[160];   /* why parsing failed */
} hixl_json_t;

/* Parse text[0 .. len) (at most UINT32_MAX - 1 bytes) into at most
 * max_tokens tokens (allocated here).  0 on success; -1 with j->err on a
 * syntax error, a nesting or token limit, or out of memory.  Either way
 * free with hixl_json_free. */
int hixl_json_parse(hixl_json_t *j, const char *text, size_t len,
                    uint32_t max_tokens);
void hixl_json_free(hixl_json_t *j);

/* Type of token i. */
static inline hixl_json_type_t hixl_json_type(const hixl_json_t *j,
                                              uint32_t i)
{
    return (hixl_json_type_t)j->tok[i].type;
}

/* The value of member `key` of object token obj (the last one when a key
 * repeats, as common JSON libraries do), or HIXL_JSON_NONE. */
uint32_t hixl_json_member(const hixl_json_t *j, uint32_t obj,
                          const char *key);

/* Element idx of array token arr, or HIXL_JSON_NONE. */
uint32_t hixl_json_element(const hixl_json_t *j, uint32_t arr, uint32_t idx);

/* Unescape string token i into buf (NUL-terminated, UTF-8).  0, or -1 when
 * it is not a string, holds a NUL (\u0000) or does not fit. */
int hixl_json_string(const hixl_json_t *j, uint32_t i, char *buf,
                     size_t buflen);

/* Whether string token i is exactly s. */
int hixl_json_string_eq(const hixl_json_t *j, uint32_t i, const char *s);

/* An integer: a JSON number without fraction or exponent, or a string
 * holding one in decimal (CANN hixl takes "128" and 128 alike).  0, or -1
 * when token i is neither or it does not fit in int64_t. */
int hixl_json_int(const hixl_json_t *j, uint32_t i, int64_t *v);

/* A number: a JSON number or a string holding one.  0 or -1. */
int hixl_json_double(const hixl_json_t *j, uint32_t i, double *v);

/* A JSON true or false.  0 or -1. */
int hixl_json_bool(const hixl_json_t *j, uint32_t i, int *v);

#endif
