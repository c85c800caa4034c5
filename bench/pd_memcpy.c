/*
 * bench/pd_pipeline: the machine's limit, measured in the same run.
 *
 * On one host a put over shared memory is a memcpy into the peer's pages,
 * so one core's memcpy of the same number of bytes is the speed to compare
 * with (issue 15).  Two figures, because both happen to a serving system:
 *
 *   cold  into freshly mapped shared memory (MAP_SHARED | MAP_ANONYMOUS, as
 *         UCX's shared-memory allocators hand out): every page faults in
 *         during the copy, as when a KV cache allocated at start-up receives
 *         its first request;
 *   warm  the same copy again into the now touched pages (the better of two
 *         copies): the steady state, which the timed runs of pd_pipeline
 *         are (decode touches its cache and an untimed warm-up run goes
 *         first).
 *
 * Measured by the decode side before its engine starts, so nothing else of
 * pd_pipeline runs on the machine meanwhile.
 */
#include "pd_run.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static double pd_copy_gbs(void *dst, const void *src, size_t bytes)
{
    uint64_t t0 = pd_now_ns(), dt;

    memcpy(dst, src, bytes);
    /* the destination is read back by nobody: keep the copy observable */
    __asm__ __volatile__("" : : "r"(dst) : "memory");
    dt = pd_now_ns() - t0;
    return (dt > 0) ? bytes / (double)dt : 0.0;   /* bytes per ns = GB/s */
}

int pd_memcpy_measure(size_t bytes, pd_memcpy_t *out)
{
    void *src, *dst;
    double w;

    memset(out, 0, sizeof(*out));
    out->bytes = bytes;
    src = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (src == MAP_FAILED) {
        return -1;
    }
    dst = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (dst == MAP_FAILED) {
        munmap(src, bytes);
        return -1;
    }
    /* not zeros: an untouched source would read the shared zero page */
    memset(src, 0x5a, bytes);
    out->cold_gbs = pd_copy_gbs(dst, src, bytes);
    out->warm_gbs = pd_copy_gbs(dst, src, bytes);
    w             = pd_copy_gbs(dst, src, bytes);
    if (w > out->warm_gbs) {
        out->warm_gbs = w;
    }
    munmap(dst, bytes);
    munmap(src, bytes);
    out->measured = 1;
    return 0;
}
