/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copying received data into its destination.
 *
 * The library copies what arrives in UCX's receive buffers (the library's
 * WRITE and READ_DATA messages over tcp) into registered memory: a KV cache
 * of gigabytes that the copy sweeps through once, so every line it writes
 * is one the caches do not hold.  An ordinary copy reads each such line
 * from memory before it overwrites it; stores that bypass the caches do
 * not, and leave the caches to the data the process is working on
 * (docs/performance.md has the figures behind the thresholds below).
 */
#ifndef HIXL_UTIL_COPY_H_
#define HIXL_UTIL_COPY_H_

#include <stddef.h>

/* hixl_copy_streaming copies less than this ordinarily: small writes are
 * latency bound, and a destination small enough to be in the caches is
 * faster to write there (the reader finds it there too). */
#define HIXL_COPY_STREAM_MIN (32u * 1024)

/* A copy into memory it sweeps, whose lines the caches do not hold, is
 * faster with stores that bypass them, however hot the source.  Into a
 * destination the caches do hold it is the other way round, up to about
 * the size of one core's L2, past which streaming wins there too.  A copy
 * sweeps when it is that large, or when its destination lies in a region
 * this large (a KV cache: transfers move through gigabytes). */
#define HIXL_COPY_SWEEP_LEN    (2u << 20)
#define HIXL_COPY_SWEEP_REGION (64u << 20)

/* Into a region that large, pieces from this size up stream too: a paged
 * KV cache is written in blocks of a few KiB, each one a line the caches
 * do not hold.  Page-sized pieces gain less; the floor stays where the
 * gain is clear. */
#define HIXL_COPY_SWEEP_MIN    (8u * 1024)

/* Whether a copy of n bytes into a region of region_len bytes should
 * stream (hixl_copy_past_caches) rather than memcpy. */
static inline int hixl_copy_sweeps(size_t n, size_t region_len)
{
    return (n >= HIXL_COPY_SWEEP_LEN) ||
           ((n >= HIXL_COPY_SWEEP_MIN) &&
            (region_len >= HIXL_COPY_SWEEP_REGION));
}

/* Copy n bytes from src to dst (not overlapping) that the caller will not
 * read again soon: from HIXL_COPY_STREAM_MIN bytes with stores that bypass
 * the caches where the CPU has them (x86-64), else memcpy.  The bytes are
 * visible to every thread, and to anything the caller sends afterwards,
 * when it returns. */
void hixl_copy_streaming(void *dst, const void *src, size_t n);

/* The same from any n up (a few bytes are an ordinary copy), for a copy
 * hixl_copy_sweeps chose to stream. */
void hixl_copy_past_caches(void *dst, const void *src, size_t n);

#endif
