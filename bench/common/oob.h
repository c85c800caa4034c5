/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The out-of-band channel of the benchmarks: plain TCP sockets (and
 * pipes) beside the engines, for parameters, names and addresses, the
 * start and end of a measurement, and pd_pipeline's host-staged copy.
 *
 * Every wait is bounded: accept and connect take a time limit, and
 * bc_tcp_io_timeout bounds each read or write of a socket, so a peer that
 * vanished ends a run with an error instead of hanging it.
 *
 * These functions print nothing: they return -1 with errno set (a
 * getaddrinfo code for bc_tcp_resolve), and each program says what failed
 * in its own words.
 */
#ifndef HIXL_BENCH_COMMON_OOB_H_
#define HIXL_BENCH_COMMON_OOB_H_

#include <stddef.h>
#include <netdb.h>
#include <sys/socket.h>

/* getaddrinfo for a TCP socket: host NULL with AI_PASSIVE is every local
 * address; family AF_INET, AF_INET6 or AF_UNSPEC; flags AI_*.  0, or the
 * getaddrinfo error (gai_strerror). */
int bc_tcp_resolve(const char *host, unsigned port, int family, int flags,
                   struct addrinfo **res_p);

/* A listening socket on the first address of res that binds. */
int bc_tcp_listen(const struct addrinfo *res, int backlog);

/* Accept one connection within timeout_ms (< 0: no limit); errno
 * ETIMEDOUT when none came.  peer/peer_len may be NULL. */
int bc_tcp_accept(int listen_fd, int timeout_ms,
                  struct sockaddr_storage *peer, socklen_t *peer_len);

/* Connect to the first address of res that answers.  A peer started a
 * moment ago may not listen yet: "connection refused" is retried every
 * 100 ms for retry_ms (0: not retried). */
int bc_tcp_connect(const struct addrinfo *res, int retry_ms);

void bc_tcp_nodelay(int fd);
/* Short keep-alive intervals: a peer whose host vanished is noticed even
 * while no message is expected. */
void bc_tcp_keepalive(int fd);
/* Bound each read (SO_RCVTIMEO) or write (SO_SNDTIMEO) of fd. */
void bc_tcp_io_timeout(int fd, int opt, int timeout_ms);

/* The port of a socket's own address (after binding port 0). */
unsigned bc_tcp_local_port(int fd);

/* Numeric "host" or "host:port" of an address; IPv6 in brackets. */
void bc_sockaddr_str(const struct sockaddr *sa, socklen_t len, char *buf,
                     size_t size, int with_port);

/* Write or read exactly len bytes of a socket or a pipe: 0, or -1 (errno;
 * 0 when the peer closed before len bytes). */
int bc_write_all(int fd, const void *buf, size_t len);
int bc_read_all(int fd, void *buf, size_t len);

#endif
