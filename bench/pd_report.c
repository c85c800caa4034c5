/*
 * bench/pd_pipeline: the per-layer table and the per-mode summary.
 *
 * Times are milliseconds after prefill started layer 0 of that mode (one
 * CLOCK_MONOTONIC for both processes).  "decode done" models decode compute
 * overlapped with arrival: layer L starts at max(ready(L), end of L-1) and
 * takes --decode-compute-ms.
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

void pd_report(const pd_config_t *cfg, const pd_mode_result_t *results)
{
    const pd_shape_t *s = &cfg->shape;
    const pd_mode_result_t *r;
    double total, gib = pd_cache_bytes(s) / (double)(1 << 30);
    unsigned layer, mode;
    uint64_t bad = 0;

    printf("\nReady at decode, ms after prefill started layer 0:\n");
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

    printf("\n%-10s %10s %8s %14s %14s %14s\n", "mode", "total ms", "GiB/s",
           "layer 0 ready", "decode done", "bytes wrong");
    printf("%-10s %10s %8s %14s %14s %14s\n", "", "(all layers", "", "(ms)",
           "(ms, compute", "");
    printf("%-10s %10s %8s %14s %14s %14s\n", "", "at decode)", "", "",
           "overlapped)", "");
    for (mode = 0; mode < PD_NMODES; ++mode) {
        r = &results[mode];
        if (!r->ran) {
            continue;
        }
        total = pd_rel_ms(r, r->ready[s->layers - 1]);
        printf("%-10s %10.2f %8.2f %14.3f %14.2f %14" PRIu64 "\n",
               pd_mode_name(mode), total, (total > 0) ? gib / (total / 1e3) :
               0.0, pd_rel_ms(r, r->ready[0]), pd_decode_done_ms(cfg, r),
               r->bad_bytes);
        bad += r->bad_bytes;
    }
    printf("\nverified at decode: every byte of every mode, %" PRIu64
           " wrong\n", bad);
}
