/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The out-of-band channel: TCP sockets and whole reads and writes (oob.h).
 */
#include "config.h"
#include "oob.h"
#include "clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define BC_CONNECT_PAUSE_MS 100

int bc_tcp_resolve(const char *host, unsigned port, int family, int flags,
                   struct addrinfo **res_p)
{
    struct addrinfo hints;
    char service[16];

    snprintf(service, sizeof(service), "%u", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = flags;
    return getaddrinfo(host, service, &hints, res_p);
}

/* A socket for each address of res in turn until `use` (bind and listen,
 * or connect) succeeds on one: its fd, or -1 with the last errno. */
static int bc_tcp_first(const struct addrinfo *res,
                        int (*use)(int fd, const struct addrinfo *ai,
                                   int arg), int arg)
{
    const struct addrinfo *ai;
    int fd, err = EADDRNOTAVAIL;

    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        if (use(fd, ai, arg) == 0) {
            return fd;
        }
        err = errno;
        close(fd);
    }
    errno = err;
    return -1;
}

static int bc_tcp_bind_listen(int fd, const struct addrinfo *ai, int backlog)
{
    int one = 1;

    /* a benchmark restarted at once must get its port back */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        return -1;
    }
    return listen(fd, backlog);
}

static int bc_tcp_connect_ai(int fd, const struct addrinfo *ai, int unused)
{
    (void)unused;
    return connect(fd, ai->ai_addr, ai->ai_addrlen);
}

int bc_tcp_listen(const struct addrinfo *res, int backlog)
{
    return bc_tcp_first(res, bc_tcp_bind_listen, backlog);
}

int bc_tcp_accept(int listen_fd, int timeout_ms,
                  struct sockaddr_storage *peer, socklen_t *peer_len)
{
    struct pollfd pfd = {listen_fd, POLLIN, 0};
    int rc;

    do {
        rc = poll(&pfd, 1, (timeout_ms >= 0) ? timeout_ms : -1);
    } while ((rc < 0) && (errno == EINTR));
    if (rc == 0) {
        errno = ETIMEDOUT;
    }
    if (rc <= 0) {
        return -1;
    }
    return accept4(listen_fd, (struct sockaddr*)peer, peer_len,
                   SOCK_CLOEXEC);
}

int bc_tcp_connect(const struct addrinfo *res, int retry_ms)
{
    uint64_t deadline = bc_now_ns() + (uint64_t)retry_ms * 1000000ull;
    int fd;

    for (;;) {
        fd = bc_tcp_first(res, bc_tcp_connect_ai, 0);
        if ((fd >= 0) || (errno != ECONNREFUSED) ||
            (bc_now_ns() + BC_CONNECT_PAUSE_MS * 1000000ull > deadline)) {
            return fd;
        }
        bc_sleep_ms(BC_CONNECT_PAUSE_MS);
        errno = ECONNREFUSED;
    }
}

void bc_tcp_nodelay(int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void bc_tcp_keepalive(int fd)
{
    int one = 1, idle = 10, intvl = 5, cnt = 3;

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

void bc_tcp_io_timeout(int fd, int opt, int timeout_ms)
{
    struct timeval tv;

    tv.tv_sec  = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

unsigned bc_tcp_local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr*)&ss, &len) != 0) {
        return 0;
    }
    return ntohs((ss.ss_family == AF_INET) ?
                 ((struct sockaddr_in*)&ss)->sin_port :
                 ((struct sockaddr_in6*)&ss)->sin6_port);
}

void bc_sockaddr_str(const struct sockaddr *sa, socklen_t len, char *buf,
                     size_t size, int with_port)
{
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    int n;

    if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(buf, size, "?");
        return;
    }
    if (sa->sa_family == AF_INET6) {
        n = with_port ? snprintf(buf, size, "[%s]:%s", host, serv) :
                        snprintf(buf, size, "[%s]", host);
    } else {
        n = with_port ? snprintf(buf, size, "%s:%s", host, serv) :
                        snprintf(buf, size, "%s", host);
    }
    /* truncation is harmless here: the check only keeps gcc quiet */
    if ((n < 0) || ((size_t)n >= size)) {
        buf[size - 1] = '\0';
    }
}

int bc_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    int sock = 1;
    ssize_t n;

    while (len > 0) {
        /* MSG_NOSIGNAL: a vanished peer is an error here, not SIGPIPE;
         * a pipe (ENOTSOCK) takes plain writes */
        n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
        if ((n < 0) && sock && (errno == ENOTSOCK)) {
            sock = 0;
            continue;
        }
        if ((n < 0) && (errno == EINTR)) {
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

int bc_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n == 0) {
            errno = 0;      /* EOF: the other side is gone */
        }
        if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}
