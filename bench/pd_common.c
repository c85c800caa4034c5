/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: mode names, memory and the shape line.
 */
#include "pd_run.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

const char *pd_mode_name(unsigned mode)
{
    static const char *const names[PD_NMODES] = {"pipelined", "bulk",
                                                 "staged"};

    return (mode < PD_NMODES) ? names[mode] : "?";
}

void *pd_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED) {
        return NULL;
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

void pd_free(void *p, size_t bytes)
{
    if (p != NULL) {
        munmap(p, bytes);
    }
}

void pd_print_shape(const char *who, const pd_shape_t *s)
{
    printf("%sKV cache %u layers x %u kv-heads x %u head-dim x %u tokens x "
           "%u B x K/V = %.2f GiB (%.2f MiB per layer, %zu blocks of %zu "
           "KiB)\n", who, s->layers, s->kv_heads, s->head_dim, s->seq_len,
           s->dtype_bytes, pd_cache_bytes(s) / (double)(1 << 30),
           pd_layer_bytes(s) / (double)(1 << 20), pd_blocks_per_layer(s),
           pd_block_bytes(s) >> 10);
}

int pd_check_memory(const pd_shape_t *s, double copies)
{
    unsigned long long kb = 0;
    char line[256];
    double need = copies * pd_cache_bytes(s) + 4.0 * pd_layer_bytes(s);
    FILE *f = fopen("/proc/meminfo", "r");

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    if ((kb != 0) && (need > kb * 1024.0 * 0.9)) {
        fprintf(stderr, "pd_pipeline: this needs %.1f GiB (%.0f copies of a "
                "%.2f GiB cache plus staging) and %.1f GiB is available\n",
                need / (1 << 30), copies, pd_cache_bytes(s) /
                (double)(1 << 30), kb / (double)(1 << 20));
        return -1;
    }
    return 0;
}
