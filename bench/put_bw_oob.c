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
 * host vanished is noticed even while no line is expected.  The sockets,
 * the line framing and the key=value words are bench/common's (oob.h,
 * line.h); this file holds put_bw's side of them and its messages.
 */
#include "config.h"
#include "put_bw.h"
#include "common/clock.h"
#include "common/line.h"
#include "common/oob.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_LINE_MAX      (1u << 20)
#define BENCH_CONNECT_RETRY 3          /* seconds of "connection refused" */

/* one socket per process: its receive buffer */
static bc_lines_t bench_rx = {NULL, 0, 0, BENCH_LINE_MAX, NULL, 0};

int bench_oob_listen(const bench_opts_t *opts, int *listen_fd_p)
{
    struct addrinfo *res;
    int fd, rc;

    rc = bc_tcp_resolve(NULL, opts->port, opts->ipv6 ? AF_INET6 : AF_INET,
                        AI_PASSIVE, &res);
    if (rc != 0) {
        fprintf(stderr, "put_bw: getaddrinfo(port %u): %s\n", opts->port,
                gai_strerror(rc));
        return -1;
    }
    fd = bc_tcp_listen(res, 4);
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
    char peer[NI_MAXHOST + 16];
    int fd;

    if (!quiet) {
        printf("Waiting for connection...\n");
        fflush(stdout);
    }
    fd = bc_tcp_accept(listen_fd, (timeout_s > 0) ? timeout_s * 1000 : -1,
                       &ss, &len);
    if ((fd < 0) && (errno == ETIMEDOUT)) {
        fprintf(stderr, "put_bw: no client connected within %d s; giving up "
                "(--timeout changes the wait)\n", timeout_s);
        return -1;
    }
    if (fd < 0) {
        fprintf(stderr, "put_bw: accept: %s\n", strerror(errno));
        return -1;
    }
    bc_tcp_keepalive(fd);
    bc_tcp_nodelay(fd);
    if (!quiet) {
        bc_sockaddr_str((struct sockaddr*)&ss, len, peer, sizeof(peer), 1);
        printf("Accepted connection from %s\n", peer);
        fflush(stdout);
    }
    *fd_p = fd;
    return 0;
}

int bench_oob_connect(const bench_opts_t *opts, int *fd_p)
{
    struct addrinfo *res;
    int fd, rc, err;
    int retry_s = (opts->timeout_s > 0 &&
                   opts->timeout_s < BENCH_CONNECT_RETRY) ?
                  opts->timeout_s : BENCH_CONNECT_RETRY;

    rc = bc_tcp_resolve(opts->server, opts->port,
                        opts->ipv6 ? AF_INET6 : AF_INET, 0, &res);
    if (rc != 0) {
        fprintf(stderr, "put_bw: cannot resolve server \"%s\"%s: %s\n",
                opts->server, opts->ipv6 ? " as IPv6" : " as IPv4 (-6 for IPv6)",
                gai_strerror(rc));
        return -1;
    }
    /* a server started a moment ago may not listen yet */
    fd  = bc_tcp_connect(res, retry_s * 1000);
    err = errno;
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "put_bw: cannot connect to %s port %u: %s%s\n",
                opts->server, opts->port, strerror(err),
                (err == ECONNREFUSED) ? " (is a put_bw server running there "
                "with the same -p?)" : "");
        return -1;
    }
    bc_tcp_keepalive(fd);
    bc_tcp_nodelay(fd);
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
    bc_sockaddr_str((struct sockaddr*)&ss, sslen, buf, len, 0);
    return 0;
}

int bench_oob_send(int fd, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = bc_line_vsend(fd, 0, fmt, ap);
    va_end(ap);
    if (rc != 0) {
        fprintf(stderr, "put_bw: %s%s\n", (errno == ENOMEM) ? "out of memory" :
                "lost the connection to the peer: ",
                (errno == ENOMEM) ? "" : strerror(errno));
    }
    return rc;
}

int bench_oob_ready(int fd)
{
    if (bc_lines_ready(&bench_rx)) {
        return 1;
    }
    if (bc_lines_fill(&bench_rx, fd, 1) != 0) {
        return -1;
    }
    return bc_lines_ready(&bench_rx);
}

int bench_oob_recv(int fd, int timeout_s, bc_progress_fn_t progress,
                   void *arg, char **line_p)
{
    uint64_t deadline = (timeout_s > 0) ?
                        bc_now_ns() + (uint64_t)timeout_s * 1000000000ull : 0;
    char *line;

    line = bc_lines_wait(&bench_rx, fd, deadline, progress, arg);
    if (line != NULL) {
        *line_p = line;
        return 0;
    }
    if (errno == ETIMEDOUT) {
        fprintf(stderr, "put_bw: the peer sent nothing for %d s; giving "
                "up (--timeout changes the wait)\n", timeout_s);
    } else if (errno == EMSGSIZE) {
        fprintf(stderr, "put_bw: a line from the peer exceeds %u bytes\n",
                BENCH_LINE_MAX);
    } else {
        fprintf(stderr, "put_bw: the peer closed the connection%s\n",
                (progress != NULL) ? " (it exited or failed; see its "
                "output)" : "");
    }
    return -1;
}
