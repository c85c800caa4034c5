/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: the per-layer table and the per-mode summary, printed
 * by the decode side (which saw every layer arrive and checked its bytes).
 *
 * Times are milliseconds on decode's clock after decode said GO to that
 * run, so they hold across two hosts without a shared clock; they include
 * the GO notify's one-way trip.  "decode done" models decode compute
 * overlapped with arrival: layer L starts at max(ready(L), end of L-1) and
 * takes --decode-compute-ms.  GB/s are 10^9 bytes per second, beside the
 * one-core memcpy of the same bytes measured in the same run (pd_memcpy.c).
 */
#include "pd_run.h"

#include <inttypes.h>
#include <stdio.h>

static double pd_rel_ms(const pd_mode_result_t *r, uint64_t t)
{
    return (t > r->t0) ? (t - r->t0) / 1e6 : 0.0;
}

static double pd_decode_done_ms(const pd_config_t *cfg,
                                const pd_mode_result_t *r)
{
    double end = 0, ready;
    unsigned layer;

    for (layer = 0; layer < cfg->shape.layers; ++layer) {
        ready = pd_rel_ms(r, r->ready[layer]);
        end   = ((ready > end) ? ready : end) + cfg->decode_compute_ms;
    }
    return end;
}

static void pd_report_layers(const pd_config_t *cfg,
                             const pd_mode_result_t *results)
{
    const pd_shape_t *s = &cfg->shape;
    const pd_mode_result_t *r;
    unsigned layer, mode;

    printf("\nReady at decode, ms after decode said GO:\n");
    printf("%6s %12s", "layer", "bytes");
    for (mode = 0; mode < PD_NMODES; ++mode) {
        if (results[mode].ran) {
            printf(" %11s", pd_mode_name(mode));
        }
    }
    printf("\n");
    for (layer = 0; layer < s->layers; ++layer) {
        printf("%6u %8.2f MiB", layer, pd_layer_bytes(s) / (double)(1 << 20));
        for (mode = 0; mode < PD_NMODES; ++mode) {
            r = &results[mode];
            if (r->ran) {
                printf(" %11.3f", pd_rel_ms(r, r->ready[layer]));
            }
        }
        printf("\n");
    }
}

static void pd_report_limit(const pd_memcpy_t *limit)
{
    if (!limit->measured) {
        printf("\nmemcpy limit: not measured\n");
        return;
    }
    printf("\nmemcpy limit, one core at decode, the same %.1f MB into the KV "
           "cache in this run: %.2f GB/s warm (touched), %.2f GB/s cold (the "
           "first copy after hixl_alloc_mem)\n", limit->bytes / 1e6,
           limit->warm_gbs, limit->cold_gbs);
}

void pd_report(const pd_config_t *cfg, const pd_session_t *session,
               const pd_memcpy_t *limit, const pd_mode_result_t *results)
{
    const pd_shape_t *s = &cfg->shape;
    const pd_mode_result_t *r;
    double total, gbs, gb = pd_cache_bytes(s) / 1e9;
    unsigned mode;

    if (cfg->role == PD_ROLE_DECODE) {
        printf("\nprefill engine %s: prefill compute %.2f ms/layer (slept)\n",
               session->prefill, session->prefill_compute_ms);
    }
    pd_report_layers(cfg, results);
    pd_report_limit(limit);

    printf("\n%-10s %10s %7s %13s %13s %13s %12s\n", "mode", "total ms",
           "GB/s", "x memcpy", "layer 0", "decode done", "bytes wrong");
    printf("%-10s %10s %7s %6s %6s %13s %13s\n", "", "(all layers", "",
           "warm", "cold", "ready (ms)", "(ms, compute");
    printf("%-10s %10s %7s %6s %6s %13s %13s\n", "", "at decode)", "", "",
           "", "", "overlapped)");
    for (mode = 0; mode < PD_NMODES; ++mode) {
        r = &results[mode];
        if (!r->ran) {
            continue;
        }
        if (r->failed) {
            printf("%-10s %10s %7s %13s %13s %13s %12s\n", pd_mode_name(mode),
                   "FAILED", "-", "-", "-", "-", "-");
            continue;
        }
        total = pd_rel_ms(r, r->ready[s->layers - 1]);
        gbs   = (total > 0) ? gb / (total / 1e3) : 0.0;
        printf("%-10s %10.2f %7.2f ", pd_mode_name(mode), total, gbs);
        if (limit->measured && (limit->warm_gbs > 0) &&
            (limit->cold_gbs > 0)) {
            printf("%6.2f %6.2f", gbs / limit->warm_gbs,
                   gbs / limit->cold_gbs);
        } else {
            printf("%6s %6s", "-", "-");
        }
        printf(" %13.3f %13.2f %12" PRIu64 "\n", pd_rel_ms(r, r->ready[0]),
               pd_decode_done_ms(cfg, r), r->bad_bytes);
    }
}
