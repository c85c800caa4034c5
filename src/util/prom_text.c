/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prometheus text exposition, written into a caller's buffer.
 */
#include "config.h"
#include "util/prom_text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define HIXL_PROM_MAX_LABELS 8

void hixl_prom_init(hixl_prom_t *w, char *buf, size_t len)
{
    w->buf  = (len > 0) ? buf : NULL;
    w->len  = (buf != NULL) ? len : 0;
    w->need = 0;
    if (w->len > 0) {
        w->buf[0] = '\0';
    }
}

size_t hixl_prom_end(const hixl_prom_t *w)
{
    return w->need;
}

/* Append n bytes of s (what fits; the count goes on). */
static void hixl_prom_put(hixl_prom_t *w, const char *s, size_t n)
{
    size_t room;

    if ((w->len > 0) && (w->need + 1 < w->len)) {
        room = w->len - 1 - w->need;
        memcpy(w->buf + w->need, s, (n < room) ? n : room);
        w->buf[w->need + ((n < room) ? n : room)] = '\0';
    }
    w->need += n;
}

static void hixl_prom_puts(hixl_prom_t *w, const char *s)
{
    hixl_prom_put(w, s, strlen(s));
}

static void hixl_prom_printf(hixl_prom_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void hixl_prom_printf(hixl_prom_t *w, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0) {
        hixl_prom_put(w, tmp, ((size_t)n < sizeof(tmp)) ? (size_t)n :
                                                          sizeof(tmp) - 1);
    }
}

/* s with each character of `special` and newline escaped by a
 * backslash. */
static void hixl_prom_escaped(hixl_prom_t *w, const char *s,
                              const char *special)
{
    const char *p;

    for (p = s; *p != '\0'; ++p) {
        if (*p == '\n') {
            hixl_prom_put(w, "\\n", 2);
        } else if (strchr(special, *p) != NULL) {
            hixl_prom_put(w, "\\", 1);
            hixl_prom_put(w, p, 1);
        } else {
            hixl_prom_put(w, p, 1);
        }
    }
}

int hixl_prom_name_ok(const char *name)
{
    const char *p;

    if ((name == NULL) || (name[0] == '\0') ||
        ((name[0] >= '0') && (name[0] <= '9'))) {
        return 0;
    }
    for (p = name; *p != '\0'; ++p) {
        if (!(((*p >= 'a') && (*p <= 'z')) || ((*p >= 'A') && (*p <= 'Z')) ||
              ((*p >= '0') && (*p <= '9')) || (*p == '_') || (*p == ':'))) {
            return 0;
        }
    }
    return 1;
}

void hixl_prom_family(hixl_prom_t *w, const char *name, const char *type,
                      const char *help)
{
    hixl_prom_puts(w, "# HELP ");
    hixl_prom_puts(w, name);
    hixl_prom_puts(w, " ");
    hixl_prom_escaped(w, help, "\\");
    hixl_prom_puts(w, "\n# TYPE ");
    hixl_prom_puts(w, name);
    hixl_prom_puts(w, " ");
    hixl_prom_puts(w, type);
    hixl_prom_puts(w, "\n");
}

static void hixl_prom_head(hixl_prom_t *w, const char *name,
                           const char *suffix,
                           const hixl_prom_label_t *labels, unsigned nlabels)
{
    unsigned i;

    hixl_prom_puts(w, name);
    hixl_prom_puts(w, suffix);
    if (nlabels > 0) {
        hixl_prom_puts(w, "{");
        for (i = 0; i < nlabels; ++i) {
            hixl_prom_puts(w, (i > 0) ? "," : "");
            hixl_prom_puts(w, labels[i].name);
            hixl_prom_puts(w, "=\"");
            hixl_prom_escaped(w, labels[i].value, "\\\"");
            hixl_prom_puts(w, "\"");
        }
        hixl_prom_puts(w, "}");
    }
    hixl_prom_puts(w, " ");
}

void hixl_prom_sample(hixl_prom_t *w, const char *name,
                      const hixl_prom_label_t *labels, unsigned nlabels,
                      uint64_t value)
{
    hixl_prom_head(w, name, "", labels, nlabels);
    hixl_prom_printf(w, "%" PRIu64 "\n", value);
}

/* ns as seconds, exactly: integer part, then the 9 decimals without
 * trailing zeros */
static void hixl_prom_seconds(hixl_prom_t *w, uint64_t ns)
{
    char frac[16];
    int n;

    n = snprintf(frac, sizeof(frac), "%09" PRIu64, (uint64_t)(ns % 1000000000u));
    while ((n > 0) && (frac[n - 1] == '0')) {
        frac[--n] = '\0';
    }
    hixl_prom_printf(w, "%" PRIu64 "%s%s", (uint64_t)(ns / 1000000000u),
                     (n > 0) ? "." : "", frac);
}

void hixl_prom_sample_seconds(hixl_prom_t *w, const char *name,
                              const hixl_prom_label_t *labels,
                              unsigned nlabels, uint64_t ns)
{
    hixl_prom_head(w, name, "", labels, nlabels);
    hixl_prom_seconds(w, ns);
    hixl_prom_puts(w, "\n");
}

void hixl_prom_histogram(hixl_prom_t *w, const char *name,
                         const hixl_prom_label_t *labels, unsigned nlabels,
                         const hixl_stats_histogram_t *h)
{
    hixl_prom_label_t all[HIXL_PROM_MAX_LABELS + 1];
    char le[32];
    uint64_t cum = 0;
    unsigned b;

    if (nlabels > HIXL_PROM_MAX_LABELS) {
        nlabels = HIXL_PROM_MAX_LABELS;
    }
    if (nlabels > 0) {   /* labels may be NULL when there are none */
        memcpy(all, labels, nlabels * sizeof(*labels));
    }
    all[nlabels].name  = "le";
    all[nlabels].value = le;
    for (b = 0; b < HIXL_STATS_BUCKETS; ++b) {
        cum += h->bucket[b];
        if (h->le_ns[b] == UINT64_MAX) {
            snprintf(le, sizeof(le), "+Inf");
        } else {
            /* the bounds are whole microseconds: %g prints them exactly */
            snprintf(le, sizeof(le), "%g", (double)h->le_ns[b] / 1e9);
        }
        hixl_prom_head(w, name, "_bucket", all, nlabels + 1);
        hixl_prom_printf(w, "%" PRIu64 "\n", cum);
        if (h->le_ns[b] == UINT64_MAX) {
            break;
        }
    }
    hixl_prom_head(w, name, "_sum", labels, nlabels);
    hixl_prom_seconds(w, h->sum_ns);
    hixl_prom_puts(w, "\n");
    hixl_prom_head(w, name, "_count", labels, nlabels);
    hixl_prom_printf(w, "%" PRIu64 "\n", h->count);
}
