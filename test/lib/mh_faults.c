/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collected faults of a scenario.  See mh_faults.h.
 */
#include "mh_faults.h"
#include "mh_proc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void mh_faults_init(mh_faults_t *f, const char *label)
{
    memset(f, 0, sizeof(*f));
    f->t0 = mh_now();
    snprintf(f->label, sizeof(f->label), "%s", label);
}

static void mh_vlog(mh_faults_t *f, const char *kind, const char *fmt,
                    va_list ap, char *buf, size_t len)
{
    vsnprintf(buf, len, fmt, ap);
    fprintf(stderr, "[%s %+8.0f ms] %s%s\n", f->label, mh_now() - f->t0,
            kind, buf);
    fflush(stderr);
}

void mh_fault(mh_faults_t *f, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    int n;

    va_start(ap, fmt);
    mh_vlog(f, "FAULT: ", fmt, ap, buf, sizeof(buf));
    va_end(ap);
    f->n++;
    if (f->len + 16 < sizeof(f->text)) {
        n = snprintf(f->text + f->len, sizeof(f->text) - f->len,
                     "\n  %d. %s", f->n, buf);
        if (n > 0) {
            f->len += (size_t)n;
            if (f->len >= sizeof(f->text)) {
                f->len = sizeof(f->text) - 1;
            }
        }
    }
}

void mh_note(mh_faults_t *f, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;

    va_start(ap, fmt);
    mh_vlog(f, "", fmt, ap, buf, sizeof(buf));
    va_end(ap);
}

/* Check refuses failure messages longer than CK_MAX_MSG_SIZE (4 KiB by
 * default): the message gets each fault's first line, the log has all. */
void mh_faults_check(const mh_faults_t *f)
{
    char msg[3200];
    const char *p = f->text;
    size_t used = 0, l;

    if (f->n == 0) {
        return;
    }
    used = (size_t)snprintf(msg, sizeof(msg), "%s: %d fault(s) (in full in "
                            "the log, marked FAULT):", f->label, f->n);
    /* faults start "\n  N. "; their own lines may start "\n  " too */
    while ((p = strstr(p, "\n  ")) != NULL) {
        ++p;
        if ((p[2] < '0') || (p[2] > '9') ||
            (strstr(p + 2, ". ") != p + 2 + strspn(p + 2, "0123456789"))) {
            continue;
        }
        l = strcspn(p, "\n");
        if (l > 400) {
            l = 400;
        }
        if (used + l + 8 >= sizeof(msg)) {
            snprintf(msg + used, sizeof(msg) - used, "\n  ...");
            break;
        }
        used += (size_t)snprintf(msg + used, sizeof(msg) - used, "\n%.*s",
                                 (int)l, p);
    }
    ck_abort_msg("%s", msg);
}
