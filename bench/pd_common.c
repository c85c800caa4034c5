/*
 * bench/pd_pipeline: time, memory and the pipe channel.
 */
#include "pd_run.h"

#include <errno.h>
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

int pd_channel_open(pd_channel_t *ch)
{
    if ((pipe(ch->p2d) != 0) || (pipe(ch->d2p) != 0)) {
        return -1;
    }
    return 0;
}

void pd_channel_side(pd_channel_t *ch, int decode)
{
    if (decode) {
        close(ch->p2d[1]);
        close(ch->d2p[0]);
        ch->rd = ch->p2d[0];
        ch->wr = ch->d2p[1];
    } else {
        close(ch->p2d[0]);
        close(ch->d2p[1]);
        ch->rd = ch->d2p[0];
        ch->wr = ch->p2d[1];
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

int pd_send(pd_channel_t *ch, const void *buf, size_t len)
{
    return pd_send_all(ch->wr, buf, len);
}

int pd_recv(pd_channel_t *ch, void *buf, size_t len)
{
    return pd_recv_all(ch->rd, buf, len);
}
