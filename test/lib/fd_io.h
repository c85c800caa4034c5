/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pipe I/O shared by the test programs that talk to forked children (the
 * Check harness and the soak, which does not link the harness).
 */
#ifndef HX_FD_IO_H_
#define HX_FD_IO_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* Write all of buf, retrying short and interrupted writes; -1 on error. */
static inline int hx_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}

#endif
