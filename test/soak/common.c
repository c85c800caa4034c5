/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: the clock, the RSS, and bounded reads of the pipes between the
 * parent and the engines.
 */
#include "soak.h"

uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%lu %lu", &size, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

int read_timed(int fd, void *buf, size_t len, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    struct pollfd pfd;
    uint8_t *p = buf;
    ssize_t n;
    int64_t left;
    int rc;

    while (len > 0) {
        left = (int64_t)deadline - (int64_t)now_ms();
        if (left < 0) {
            return -2;
        }
        pfd.fd      = fd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int)left);
        if ((rc < 0) && (errno == EINTR)) {
            continue;
        }
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            return -2;
        }
        n = read(fd, p, len);
        if (n < 0) {
            if ((errno == EINTR) || (errno == EAGAIN)) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}
