/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sizes and counts (size.h).
 */
#include "config.h"
#include "size.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int bc_parse_u64(const char *s, uint64_t *v)
{
    unsigned long long n;
    char *end;

    /* strtoull would take blanks, a sign and wrap "-1" around */
    if ((s == NULL) || (*s < '0') || (*s > '9')) {
        return -1;
    }
    errno = 0;
    n     = strtoull(s, &end, 10);
    if ((errno != 0) || (*end != '\0')) {
        return -1;
    }
    *v = n;
    return 0;
}

static int bc_size_shift(char unit)
{
    switch (unit) {
    case 'k': case 'K': return 10;
    case 'm': case 'M': return 20;
    case 'g': case 'G': return 30;
    default:            return -1;
    }
}

const char *bc_size_parse(const char *s, size_t *v)
{
    unsigned long long n;
    const char *p;
    char *end;
    int shift = 0;

    if ((s == NULL) || (*s < '0') || (*s > '9')) {
        return "not a number";
    }
    errno = 0;
    n     = strtoull(s, &end, 10);
    if (errno != 0) {
        return "too large";
    }
    p = end;
    if (bc_size_shift(*p) >= 0) {
        shift = bc_size_shift(*p++);
        if ((*p == 'i') || (*p == 'I')) {
            ++p;
            if ((*p != 'b') && (*p != 'B')) {
                return "unknown unit";
            }
        }
    }
    if ((*p == 'b') || (*p == 'B')) {
        ++p;
    }
    if (*p != '\0') {
        return (p == end) && (*p == '.') ? "not a whole number" :
               "unknown unit";
    }
    if (n == 0) {
        return "zero bytes";
    }
    if (n > (SIZE_MAX >> shift)) {
        return "too large";
    }
    *v = (size_t)n << shift;
    return NULL;
}

void bc_size_str(size_t n, char *buf, size_t len)
{
    if ((n >= (1ull << 30)) && !(n % (1ull << 30))) {
        snprintf(buf, len, "%zu GiB", n >> 30);
    } else if ((n >= (1u << 20)) && !(n % (1u << 20))) {
        snprintf(buf, len, "%zu MiB", n >> 20);
    } else if ((n >= 1024) && !(n % 1024)) {
        snprintf(buf, len, "%zu KiB", n >> 10);
    } else {
        snprintf(buf, len, "%zu B", n);
    }
}
