/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw: the out-of-band TCP socket between server and client.
 *
 * Like ucx_perftest's -p port, it carries the test parameters, the engine
 * names and buffer addresses, and the start/end of every measurement; data
 * never goes over it.  Messages are text lines of space-separated key=value
 * words, so a stuck exchange can be read with strace or tcpdump.
 *
 * Both ends turn on TCP keep-alive with short intervals, so a peer whose
 * host vanished is noticed even while no line is expected.
 */
#include "config.h"
#include "put_bw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BENCH_LINE_MAX      (1u << 20)
#define BENCH_CONNECT_RETRY 3          /* seconds of "connection refused" */

static char  *bench_rx_buf;
static size_t bench_rx_len;
static size_t bench_rx_cap;

static void bench_oob_keepalive(int fd)
{
    int one = 1, idle = 10, intvl = 5, cnt = 3;

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void bench_sockaddr_str(const struct sockaddr *sa, socklen_t len,
                               char *buf, size_t size, int with_port)
{
    char host[NI_MAXHOST], serv[NI_MAXSERV];

    if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(buf, size, "?");
        return;
    }
    /* truncation is harmless here: the checks only keep gcc quiet */
    if (sa->sa_family == AF_INET6) {
        if ((with_port ? snprintf(buf, size, "[%s]:%s", host, serv) :
                         snprintf(buf, size, "[%s]", host)) >= (int)size) {
            buf[size - 1] = '\0';
        }
    } else if ((with_port ? snprintf(buf, size, "%s:%s", host, serv) :
                            snprintf(buf, size, "%s", host)) >= (int)size) {
        buf[size - 1] = '\0';
    }
}

int bench_oob_listen(const bench_opts_t *opts, int *listen_fd_p)
{
    struct addrinfo hints, *res, *ai;
    char service[16];
    int fd = -1, one = 1, rc;

    snprintf(service, sizeof(service), "%u", opts->port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_flags    = AI_PASSIVE;
    hints.ai_family   = opts->ipv6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(NULL, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "put_bw: getaddrinfo(port %u): %s\n", opts->port,
                gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if ((bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) &&
            (listen(fd, 4) == 0)) {
            break;
        }
        rc = errno;
        close(fd);
        fd    = -1;
        errno = rc;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "put_bw: cannot listen on %s port %u: %s\n",
                opts->ipv6 ? "IPv6" : "IPv4", opts->port, strerror(errno));
        return -1;
    }
    *listen_fd_p = fd;
    return 0;
}

int bench_oob_accept(int listen_fd, int timeout_s, int quiet, int *fd_p)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct pollfd pfd;
    char peer[NI_MAXHOST + 16];
    int rc, fd;

    if (!quiet) {
        printf("Waiting for connection...\n");
        fflush(stdout);
    }
    pfd.fd     = listen_fd;
    pfd.events = POLLIN;
    do {
        rc = poll(&pfd, 1, (timeout_s > 0) ? timeout_s * 1000 : -1);
    } while ((rc < 0) && (errno == EINTR));
    if (rc == 0) {
        fprintf(stderr, "put_bw: no client connected within %d s; giving up "
                "(--timeout changes the wait)\n", timeout_s);
        return -1;
    }
    fd = (rc > 0) ? accept4(listen_fd, (struct sockaddr*)&ss, &len,
                            SOCK_CLOEXEC) : -1;
    if (fd < 0) {
        fprintf(stderr, "put_bw: accept: %s\n", strerror(errno));
        return -1;
    }
    bench_oob_keepalive(fd);
    if (!quiet) {
        bench_sockaddr_str((struct sockaddr*)&ss, len, peer, sizeof(peer), 1);
        printf("Accepted connection from %s\n", peer);
        fflush(stdout);
    }
    *fd_p = fd;
    return 0;
}

int bench_oob_connect(const bench_opts_t *opts, int *fd_p)
{
    struct addrinfo hints, *res, *ai;
    struct timespec nap = {0, 100 * 1000 * 1000};
    char service[16];
    int fd = -1, rc, err = 0, tries;
    int max_tries = 10 * ((opts->timeout_s > 0 &&
                           opts->timeout_s < BENCH_CONNECT_RETRY) ?
                          opts->timeout_s : BENCH_CONNECT_RETRY);

    snprintf(service, sizeof(service), "%u", opts->port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = opts->ipv6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(opts->server, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "put_bw: cannot resolve server \"%s\"%s: %s\n",
                opts->server, opts->ipv6 ? " as IPv6" : " as IPv4 (-6 for IPv6)",
                gai_strerror(rc));
        return -1;
    }
    /* A server started a moment ago may not listen yet: retry "refused"
     * for a few seconds, then give up with the reason. */
    for (tries = 0; (fd < 0) && (tries < max_tries); ++tries) {
        if (tries > 0) {
            nanosleep(&nap, NULL);
        }
        for (ai = res; ai != NULL; ai = ai->ai_next) {
            fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                        ai->ai_protocol);
            if (fd < 0) {
                err = errno;
                continue;
            }
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                break;
            }
            err = errno;
            close(fd);
            fd = -1;
        }
        if ((fd < 0) && (err != ECONNREFUSED)) {
            break;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "put_bw: cannot connect to %s port %u: %s%s\n",
                opts->server, opts->port, strerror(err),
                (err == ECONNREFUSED) ? " (is a put_bw server running there "
                "with the same -p?)" : "");
        return -1;
    }
    bench_oob_keepalive(fd);
    *fd_p = fd;
    return 0;
}

int bench_oob_local_host(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);

    if (getsockname(fd, (struct sockaddr*)&ss, &sslen) != 0) {
        fprintf(stderr, "put_bw: getsockname: %s\n", strerror(errno));
        return -1;
    }
    bench_sockaddr_str((struct sockaddr*)&ss, sslen, buf, len, 0);
    return 0;
}

int bench_oob_send(int fd, const char *fmt, ...)
{
    char *line = NULL;
    va_list ap;
    size_t off = 0;
    ssize_t n;
    int len;

    va_start(ap, fmt);
    len = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (len < 0) {
        fprintf(stderr, "put_bw: out of memory\n");
        return -1;
    }
    while (off < (size_t)len) {
        n = send(fd, line + off, (size_t)len - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "put_bw: lost the connection to the %s: %s\n",
                    "peer", strerror(errno));
            free(line);
            return -1;
        }
        off += (size_t)n;
    }
    free(line);
    return 0;
}

/* Read what the socket has (non-blocking); -1 on EOF or error. */
static int bench_oob_fill(int fd)
{
    ssize_t n;
    char *p;

    if (bench_rx_cap - bench_rx_len < 4096) {
        if (bench_rx_cap >= BENCH_LINE_MAX) {
            fprintf(stderr, "put_bw: a line from the peer exceeds %u bytes\n",
                    BENCH_LINE_MAX);
            return -1;
        }
        p = realloc(bench_rx_buf, bench_rx_cap ? bench_rx_cap * 2 : 8192);
        if (p == NULL) {
            fprintf(stderr, "put_bw: out of memory\n");
            return -1;
        }
        bench_rx_buf = p;
        bench_rx_cap = bench_rx_cap ? bench_rx_cap * 2 : 8192;
    }
    n = recv(fd, bench_rx_buf + bench_rx_len, bench_rx_cap - bench_rx_len - 1,
             MSG_DONTWAIT);
    if (n > 0) {
        bench_rx_len += (size_t)n;
        return 0;
    }
    if ((n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK) ||
                    (errno == EINTR))) {
        return 0;
    }
    return -1;
}

static char *bench_oob_take_line(void)
{
    static char *line;
    static size_t line_cap;
    char *nl;
    size_t n;

    nl = (bench_rx_len > 0) ? memchr(bench_rx_buf, '\n', bench_rx_len) : NULL;
    if (nl == NULL) {
        return NULL;
    }
    n = (size_t)(nl - bench_rx_buf);
    if (n + 1 > line_cap) {
        free(line);
        line_cap = n + 1;
        line     = malloc(line_cap);
        if (line == NULL) {
            line_cap = 0;
            return NULL;
        }
    }
    memcpy(line, bench_rx_buf, n);
    line[n] = '\0';
    memmove(bench_rx_buf, nl + 1, bench_rx_len - n - 1);
    bench_rx_len -= n + 1;
    return line;
}

int bench_oob_ready(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};

    if ((bench_rx_len > 0) && memchr(bench_rx_buf, '\n', bench_rx_len)) {
        return 1;
    }
    if (poll(&pfd, 1, 0) <= 0) {
        return 0;
    }
    if (bench_oob_fill(fd) != 0) {
        return -1;
    }
    return (bench_rx_len > 0) && memchr(bench_rx_buf, '\n', bench_rx_len);
}

int bench_oob_recv(int fd, int timeout_s, bench_progress_fn_t progress,
                   void *arg, char **line_p)
{
    double deadline = (timeout_s > 0) ? bench_time() + timeout_s : 0;
    struct pollfd pfd;
    char *line;
    int rc;

    for (;;) {
        line = bench_oob_take_line();
        if (line != NULL) {
            *line_p = line;
            return 0;
        }
        if ((deadline > 0) && (bench_time() > deadline)) {
            fprintf(stderr, "put_bw: the peer sent nothing for %d s; giving "
                    "up (--timeout changes the wait)\n", timeout_s);
            return -1;
        }
        if (progress != NULL) {
            progress(arg);
        }
        pfd.fd      = fd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        /* with an engine to progress, look at the socket without sleeping
         * long: the peer may be waiting for our engine (a handshake) */
        rc = poll(&pfd, 1, (progress != NULL) ? 1 : 100);
        if ((rc < 0) && (errno != EINTR)) {
            fprintf(stderr, "put_bw: poll: %s\n", strerror(errno));
            return -1;
        }
        if ((rc > 0) && (bench_oob_fill(fd) != 0)) {
            fprintf(stderr, "put_bw: the peer closed the connection%s\n",
                    (progress != NULL) ? " (it exited or failed; see its "
                    "output)" : "");
            return -1;
        }
    }
}

const char *bench_kv(const char *line, const char *key)
{
    static char *value;
    static size_t cap;
    size_t klen = strlen(key), n;
    const char *p = line, *end;
    char *v;

    while ((p = strstr(p, key)) != NULL) {
        if (((p == line) || (p[-1] == ' ')) && (p[klen] == '=')) {
            p  += klen + 1;
            end = strchr(p, ' ');
            n   = end ? (size_t)(end - p) : strlen(p);
            if (n + 1 > cap) {
                v = realloc(value, n + 1);
                if (v == NULL) {
                    return NULL;
                }
                value = v;
                cap   = n + 1;
            }
            memcpy(value, p, n);
            value[n] = '\0';
            return value;
        }
        p += klen;
    }
    return NULL;
}
