/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: time, memory, socket I/O and the shape line.
 */
#include "pd_run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

const char *pd_mode_name(unsigned mode)
{
    static const char *const names[PD_NMODES] = {"pipelined", "bulk",
                                                 "staged"};

    return (mode < PD_NMODES) ? names[mode] : "?";
}

uint64_t pd_now_ns(void)
{
    struct timespec ts;

    /* CLOCK_MONOTONIC is one clock for every process on the host, so
     * decode's ready times compare with prefill's start time. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void pd_sleep_ms(double ms)
{
    struct timespec ts;

    if (ms <= 0) {
        return;
    }
    /* sleep, not spin: an accelerator computing leaves the CPU free */
    ts.tv_sec  = (time_t)(ms / 1000.0);
    ts.tv_nsec = (long)((ms - ts.tv_sec * 1000.0) * 1e6);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
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

int pd_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}

int pd_recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;   /* EOF: the other side is gone */
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
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
