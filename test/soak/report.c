/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: the end of a run: every engine collected, one table, the summary
 * line and the exit status.
 */
#include "soak.h"

/* One line of the table; the RSS columns only for an engine that
 * reported (rss: 1). */
static void print_row(const char *label, const char *name, const stats_t *s,
                      int rss, const char *result)
{
    char mem[64];

    if (rss) {
        snprintf(mem, sizeof(mem), "%6.1f %6.1f %6.1f %+7.1f",
                 MiB(s->rss_start), MiB(s->rss_warm), MiB(s->rss_end),
                 (double)((int64_t)s->rss_end - (int64_t)s->rss_warm) /
                 1048576.0);
    } else {
        snprintf(mem, sizeof(mem), "%6s %6s %6s %7s", "-", "-", "-", "-");
    }
    printf("%-5s %-21s %9" PRIu64 " %8" PRIu64 " %10.1f %9" PRIu64 " %8" PRIu64
           " %8" PRIu64 " %7" PRIu64 " %6" PRIu64 " %s  %s\n", label, name,
           s->writes, s->reads, MiB(s->bytes_written + s->bytes_read),
           s->verified, s->layer_signals, s->xfer_notifies + s->done_recv,
           s->corruptions, s->failures, mem, result);
}

int soak_report(unsigned n, int churn_bad)
{
    stats_t total;
    uint64_t f;
    unsigned i, passed = 0, failed = 0, rss_bad = 0, mismatch = 0;
    int64_t growth;

    for (i = 0; i < n; ++i) {
        kid_t *k = &g_kids[i];

        if (k->pid > 0) {
            if (!k->reported) {
                k->hung = 1;
                kill(k->pid, SIGKILL);
            }
            kid_gone(k, k->reported ? "exited" : "did not finish in time");
        }
    }

    printf("\n%-5s %-21s %9s %8s %10s %9s %8s %8s %7s %6s %6s %6s %6s %7s  "
           "%s\n", "eng", "name", "writes", "reads", "MiB moved", "checked",
           "signals", "notifies", "corrupt", "failed", "rss0", "rssW",
           "rssEnd", "growth", "result");
    memset(&total, 0, sizeof(total));
    for (i = 0; i < n; ++i) {
        kid_t *k = &g_kids[i];
        char label[16], result[256];
        int ok;

        snprintf(label, sizeof(label), "e%u", i);
        growth = (int64_t)k->st.rss_end - (int64_t)k->st.rss_warm;
        ok = k->reported && !k->dead && (k->st.corruptions == 0) &&
             (k->st.failures == 0);
        if (!k->reported) {
            snprintf(result, sizeof(result), "FAIL: %s%s%s",
                     k->why[0] ? k->why : "no report",
                     k->text[0] ? ": " : "", k->text);
        } else if (!ok) {
            snprintf(result, sizeof(result), "FAIL: %s", k->text[0] ? k->text :
                     "see above");
        } else if (growth > (int64_t)g_cfg.rss_limit) {
            snprintf(result, sizeof(result), "pass, but RSS grew by %.1f MiB "
                     "after warm-up (limit %.0f)", (double)growth / 1048576.0,
                     MiB(g_cfg.rss_limit));
            ++rss_bad;
        } else {
            snprintf(result, sizeof(result), "pass");
        }
        passed += ok;
        failed += !ok;
        print_row(label, k->name[0] ? k->name : "?", &k->st, k->reported,
                  result);
        for (f = 0; f < offsetof(stats_t, rss_start) / sizeof(uint64_t); ++f) {
            ((uint64_t*)&total)[f] += ((uint64_t*)&k->st)[f];
        }
    }
    print_row("all", "", &total, 0, "");
    printf("\nsoak: %" PRIu64 " bytes moved (%.1f MiB/s), %" PRIu64 " writes "
           "checked by their receivers (%" PRIu64 " by layer signal, %" PRIu64
           " of them superseded; %" PRIu64 " by per-transfer notify), %"
           PRIu64 " sync writes, %" PRIu64 " reads, %" PRIu64 " corruptions (%"
           PRIu64 " bad bytes), %" PRIu64 " failures, %" PRIu64 " slots stuck\n",
           total.bytes_written + total.bytes_read,
           MiB(total.bytes_written + total.bytes_read) / g_cfg.seconds,
           total.verified, total.layer_signals, total.superseded,
           total.xfer_notifies, total.writes_sync, total.reads,
           total.corruptions, total.bad_bytes, total.failures, total.stuck);
    if ((total.failures == 0) && (total.writes != total.verified)) {
        /* without failures, every completed write was checked by its
         * receiver exactly once */
        printf("soak: %" PRIu64 " writes completed but %" PRIu64 " were "
               "checked by their receivers\n", total.writes, total.verified);
        mismatch = 1;
    }
    if (rss_bad) {
        printf("soak: %u engine(s) grew their RSS by more than %.0f MiB after "
               "warm-up (option -r)\n", rss_bad, MiB(g_cfg.rss_limit));
    }
    printf("%u passed, %u failed\n", passed, failed);
    fflush(stdout);
    return (failed || rss_bad || mismatch || churn_bad) ? 1 : 0;
}
