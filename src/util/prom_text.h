/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A writer of Prometheus's text exposition format (version 0.0.4) into a
 * caller's buffer, snprintf-like: it writes what fits, always
 * NUL-terminated, and counts what the whole text needs, so that the
 * caller can grow its buffer and write again.  It escapes what the format
 * asks: HELP text (backslash, newline) and label values (backslash, double
 * quote, newline).  The names are the caller's and must already match
 * [a-zA-Z_:][a-zA-Z0-9_:]* (hixl_prom_name_ok checks one).
 *
 * No locking: one writer per thread.
 */
#ifndef HIXL_UTIL_PROM_TEXT_H_
#define HIXL_UTIL_PROM_TEXT_H_

#include <hixl/hixl.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hixl_prom {
    char  *buf;
    size_t len;     /* of buf, with room for the NUL */
    size_t need;    /* what the text written so far needs, without it */
} hixl_prom_t;

/* A label of a sample: name="value". */
typedef struct hixl_prom_label {
    const char *name;
    const char *value;
} hixl_prom_label_t;

void hixl_prom_init(hixl_prom_t *w, char *buf, size_t len);

/* The length the whole text needs (without the NUL). */
size_t hixl_prom_end(const hixl_prom_t *w);

/* Whether name is a valid metric or label name. */
int hixl_prom_name_ok(const char *name);

/* "# HELP name help" and "# TYPE name type" (counter, gauge,
 * histogram). */
void hixl_prom_family(hixl_prom_t *w, const char *name, const char *type,
                      const char *help);

/* One sample: name{labels} value. */
void hixl_prom_sample(hixl_prom_t *w, const char *name,
                      const hixl_prom_label_t *labels, unsigned nlabels,
                      uint64_t value);

/* One sample of a value in seconds (a histogram's _sum, a duration). */
void hixl_prom_sample_seconds(hixl_prom_t *w, const char *name,
                              const hixl_prom_label_t *labels,
                              unsigned nlabels, uint64_t ns);

/* A histogram of durations in ns as seconds: its cumulative _bucket
 * samples (le="..." added to labels, +Inf last), _sum and _count. */
void hixl_prom_histogram(hixl_prom_t *w, const char *name,
                         const hixl_prom_label_t *labels, unsigned nlabels,
                         const hixl_stats_histogram_t *h);

#endif
