/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Parsing and judging a peer's stream report.  See mh_stream.h.
 */
#include "mh_stream.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* value of "key=" in line (up to the next space; msg= to the end) */
static const char *mh_field(const char *line, const char *key, char *buf,
                            size_t len)
{
    char pat[32];
    const char *p;
    size_t l;

    snprintf(pat, sizeof(pat), " %s=", key);
    p = strstr(line, pat);
    if (p == NULL) {
        buf[0] = '\0';
        return buf;
    }
    p += strlen(pat);
    l  = !strcmp(key, "msg") ? strcspn(p, "\n") : strcspn(p, " \n");
    snprintf(buf, len, "%.*s", (int)l, p);
    return buf;
}

void mh_stream_parse(const char *reply, mh_stream_res_t *res)
{
    const char *line = reply, *next;
    char v[512];
    size_t lines, k = 0;

    memset(res, 0, sizeof(*res));
    ck_assert_msg(strncmp(reply, "OK lines=", 9) == 0, "not a stream "
                  "report: %.200s", reply);
    lines  = strtoul(reply + 9, NULL, 10);
    ck_assert_uint_ge(lines, 1);
    res->n   = lines - 1;
    res->req = calloc(res->n + 1, sizeof(*res->req));
    ck_assert_ptr_nonnull(res->req);
    for (line = strchr(reply, '\n'); (line != NULL) && (line[1] != '\0');
         line = next) {
        ++line;
        next = strchr(line, '\n');
        if (strncmp(line, "r ", 2) == 0) {
            mh_req_t *r;

            ck_assert_uint_lt(k, res->n);
            r = &res->req[k++];
            r->post = strtod(mh_field(line, "post", v, sizeof(v)), NULL);
            r->end  = strtod(mh_field(line, "end", v, sizeof(v)), NULL);
            mh_field(line, "st", r->st, sizeof(r->st));
            mh_field(line, "msg", r->msg, sizeof(r->msg));
            if (!strcmp(r->st, "COMPLETED")) {
                res->completed++;
            } else if (!strcmp(r->st, "FAILED")) {
                res->failed++;
            } else if (!strcmp(r->st, "TIMEOUT")) {
                res->timeout++;
            } else {
                res->other++;
            }
        } else if (strncmp(line, "post ", 5) == 0) {
            mh_field(line, "status", res->post_status,
                     sizeof(res->post_status));
            res->post_t = strtod(mh_field(line, "t", v, sizeof(v)), NULL);
            mh_field(line, "msg", res->post_msg, sizeof(res->post_msg));
        }
    }
    ck_assert_msg(k == res->n, "stream report has %zu of %zu requests", k,
                  res->n);
}

void mh_stream_free(mh_stream_res_t *res)
{
    free(res->req);
    res->req = NULL;
}

static void mh_bad(mh_verdict_t *v, size_t i, const mh_req_t *r,
                   double t_fault, const char *why)
{
    if (v->bad++ == 0) {
        snprintf(v->first_bad, sizeof(v->first_bad), "request %zu (posted "
                 "%+.0f ms from the fault) ended %s %+.0f ms from the fault: "
                 "%s; its message: \"%s\"", i, r->post - t_fault, r->st,
                 r->end - t_fault, why, r->msg);
    }
}

void mh_stream_judge(const mh_stream_res_t *res, double t_fault,
                     double bound_ms, mh_verdict_t *v)
{
    size_t i;

    memset(v, 0, sizeof(*v));
    for (i = 0; i < res->n; ++i) {
        const mh_req_t *r = &res->req[i];
        double rel = r->end - t_fault;

        if (rel <= 0) {
            continue;
        }
        v->after++;
        if (rel > v->last_ms) {
            v->last_ms = rel;
        }
        if (!strcmp(r->st, "COMPLETED")) {
            if (rel > MH_LATE_COMPLETION_MS) {
                mh_bad(v, i, r, t_fault, "success reported for bytes the "
                       "peer cannot have acknowledged");
            }
            continue;
        }
        if (strcmp(r->st, "FAILED") != 0) {
            mh_bad(v, i, r, t_fault, "expected FAILED");
            continue;
        }
        if (r->msg[0] == '\0') {
            mh_bad(v, i, r, t_fault, "FAILED without a reason");
            continue;
        }
        if (rel > bound_ms) {
            mh_bad(v, i, r, t_fault, "later than the detection bound");
            continue;
        }
        v->failed++;
    }
}

void mh_stream_summary(const mh_stream_res_t *res, double t_fault,
                       char *buf, size_t len)
{
    mh_verdict_t v;

    mh_stream_judge(res, t_fault, 1e12, &v);
    snprintf(buf, len, "%zu posted: %zu COMPLETED, %zu FAILED, %zu TIMEOUT, "
             "%zu other; %zu ended after the fault, the last %+.0f ms from "
             "it; refused post: %s%s%s", res->n, res->completed, res->failed,
             res->timeout, res->other, v.after, v.last_ms, res->post_status,
             res->post_msg[0] ? ": " : "", res->post_msg);
}
