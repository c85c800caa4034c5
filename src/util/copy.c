/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copying received data into its destination (see copy.h).
 */
#include "config.h"
#include "util/copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

/* 64 bytes (a cache line) per round, with unaligned loads and aligned
 * non-temporal stores; the head up to the first aligned line and the tail
 * are ordinary copies. */
static void hixl_copy_nt(char *dst, const char *src, size_t n)
{
    size_t head = (size_t)(-(uintptr_t)dst & 63);
    __m128i a, b, c, d;
    size_t i;

    memcpy(dst, src, head);
    dst += head;
    src += head;
    n   -= head;
    for (i = 0; i + 64 <= n; i += 64) {
        a = _mm_loadu_si128((const __m128i*)(src + i));
        b = _mm_loadu_si128((const __m128i*)(src + i + 16));
        c = _mm_loadu_si128((const __m128i*)(src + i + 32));
        d = _mm_loadu_si128((const __m128i*)(src + i + 48));
        _mm_stream_si128((__m128i*)(dst + i), a);
        _mm_stream_si128((__m128i*)(dst + i + 16), b);
        _mm_stream_si128((__m128i*)(dst + i + 32), c);
        _mm_stream_si128((__m128i*)(dst + i + 48), d);
    }
    memcpy(dst + i, src + i, n - i);
    /* streaming stores are weakly ordered: they are all visible before
     * anything this thread stores or sends next (the answer to the
     * WRITE, say) */
    _mm_sfence();
}

void hixl_copy_past_caches(void *dst, const void *src, size_t n)
{
    /* a copier's last chunk may be a few bytes: hixl_copy_nt needs room
     * for its head (up to 63 bytes) and one line */
    if (n < 128) {
        memcpy(dst, src, n);
    } else {
        hixl_copy_nt(dst, src, n);
    }
}

#else

void hixl_copy_past_caches(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

#endif

void hixl_copy_streaming(void *dst, const void *src, size_t n)
{
    if (n < HIXL_COPY_STREAM_MIN) {
        memcpy(dst, src, n);
    } else {
        hixl_copy_past_caches(dst, src, n);
    }
}
