/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Text lines and key=value words (line.h).
 */
#include "config.h"
#include "line.h"
#include "clock.h"
#include "oob.h"
#include "size.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define BC_LINES_MIN_CAP 4096
#define BC_KV_COPIES     4

void bc_lines_init(bc_lines_t *lb, size_t max)
{
    memset(lb, 0, sizeof(*lb));
    lb->max = max;
}

void bc_lines_free(bc_lines_t *lb)
{
    free(lb->buf);
    free(lb->line);
    bc_lines_init(lb, lb->max);
}

int bc_lines_ready(const bc_lines_t *lb)
{
    return (lb->len > 0) && (memchr(lb->buf, '\n', lb->len) != NULL);
}

/* Room for more bytes, doubling up to max; -1 (EMSGSIZE) when full. */
static int bc_lines_room(bc_lines_t *lb)
{
    size_t cap;
    char *p;

    if (lb->len < lb->cap) {
        return 0;
    }
    if (lb->cap >= lb->max) {
        errno = EMSGSIZE;
        return -1;
    }
    cap = lb->cap ? 2 * lb->cap : BC_LINES_MIN_CAP;
    cap = (cap > lb->max) ? lb->max : cap;
    p   = realloc(lb->buf, cap);
    if (p == NULL) {
        return -1;
    }
    lb->buf = p;
    lb->cap = cap;
    return 0;
}

int bc_lines_fill(bc_lines_t *lb, int fd, int dontwait)
{
    ssize_t n;

    if (bc_lines_room(lb) != 0) {
        return -1;
    }
    do {
        n = recv(fd, lb->buf + lb->len, lb->cap - lb->len,
                 dontwait ? MSG_DONTWAIT : 0);
    } while ((n < 0) && (errno == EINTR));
    if (n > 0) {
        lb->len += (size_t)n;
        return 0;
    }
    if ((n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK))) {
        return 0;
    }
    if (n == 0) {
        errno = 0;
    }
    return -1;
}

char *bc_lines_take(bc_lines_t *lb)
{
    char *nl = (lb->len > 0) ? memchr(lb->buf, '\n', lb->len) : NULL;
    size_t n;
    char *p;

    if (nl == NULL) {
        return NULL;
    }
    n = (size_t)(nl - lb->buf);
    if (n + 1 > lb->line_cap) {
        p = realloc(lb->line, n + 1);
        if (p == NULL) {
            return NULL;
        }
        lb->line     = p;
        lb->line_cap = n + 1;
    }
    memcpy(lb->line, lb->buf, n);
    lb->line[n] = '\0';
    lb->len    -= n + 1;
    memmove(lb->buf, nl + 1, lb->len);
    return lb->line;
}

char *bc_lines_wait(bc_lines_t *lb, int fd, uint64_t deadline_ns,
                    bc_progress_fn_t progress, void *arg)
{
    struct pollfd pfd;
    char *line;
    int rc, ms;

    for (;;) {
        line = bc_lines_take(lb);
        if (line != NULL) {
            return line;
        }
        if ((deadline_ns != 0) && (bc_now_ns() > deadline_ns)) {
            errno = ETIMEDOUT;
            return NULL;
        }
        if (progress != NULL) {
            progress(arg);
        }
        /* with an engine to progress, look at the socket without sleeping
         * long: the peer may be waiting for our engine (a handshake) */
        ms = (progress != NULL) ? 1 : (deadline_ns != 0) ? 100 : -1;
        pfd.fd      = fd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, ms);
        if ((rc < 0) && (errno != EINTR)) {
            return NULL;
        }
        if ((rc > 0) && (bc_lines_fill(lb, fd, 1) != 0)) {
            return NULL;
        }
    }
}

int bc_line_vsend(int fd, size_t max, const char *fmt, va_list ap)
{
    va_list ap2;
    char *buf;
    int n, rc;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        return -1;
    }
    buf = malloc((size_t)n + 2);
    if (buf == NULL) {
        errno = ENOMEM;
        return -1;
    }
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    if ((n == 0) || (buf[n - 1] != '\n')) {
        buf[n++] = '\n';
    }
    if ((max != 0) && ((size_t)n > max)) {
        free(buf);
        errno = EMSGSIZE;
        return -1;
    }
    rc = bc_write_all(fd, buf, (size_t)n);
    free(buf);
    return rc;
}

const char *bc_kv(const char *line, const char *key)
{
    static struct {
        char  *buf;
        size_t cap;
    } copies[BC_KV_COPIES];
    static unsigned next;
    size_t klen = strlen(key), n;
    const char *p = line, *end;
    char *v;
    unsigned i;

    while ((p = strstr(p, key)) != NULL) {
        if (((p == line) || (p[-1] == ' ')) && (p[klen] == '=')) {
            p  += klen + 1;
            end = strchr(p, ' ');
            n   = end ? (size_t)(end - p) : strlen(p);
            i   = next++ % BC_KV_COPIES;
            if (n + 1 > copies[i].cap) {
                v = realloc(copies[i].buf, n + 1);
                if (v == NULL) {
                    return NULL;
                }
                copies[i].buf = v;
                copies[i].cap = n + 1;
            }
            memcpy(copies[i].buf, p, n);
            copies[i].buf[n] = '\0';
            return copies[i].buf;
        }
        p += klen;
    }
    return NULL;
}

int bc_kv_u64(const char *line, const char *key, uint64_t *v)
{
    return bc_parse_u64(bc_kv(line, key), v);
}
