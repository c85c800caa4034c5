/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: addresses and the plain TCP socket of the staged mode.
 *
 * Engine names are hixl's: "ip:port", "ip", "[v6]:port", "v6".  The
 * staged mode (the traditional host-staged copy it is compared with) uses
 * one TCP connection from prefill to decode's host, on a port decode
 * announces in its LAYOUT.
 */
#include "pd_run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A peer that stops mid-layer must not hang the other side forever. */
static void pd_io_timeout(int fd, int opt, int timeout_ms)
{
    struct timeval tv;

    tv.tv_sec  = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv));
}

int pd_name_split(const char *name, char *host, size_t hostlen,
                  unsigned *port)
{
    const char *colon, *end;
    char *stop;
    unsigned long p = 0;
    size_t n;

    if (name[0] == '[') {                      /* [v6] or [v6]:port */
        end = strchr(name, ']');
        if (end == NULL) {
            return -1;
        }
        n     = (size_t)(end - name - 1);
        colon = (end[1] == ':') ? end + 1 : NULL;
        if ((end[1] != '\0') && (colon == NULL)) {
            return -1;
        }
        name++;
    } else {
        colon = strrchr(name, ':');
        if ((colon != NULL) && (strchr(name, ':') != colon)) {
            colon = NULL;                      /* bare v6: no port */
        }
        n = (colon != NULL) ? (size_t)(colon - name) : strlen(name);
    }
    if ((n == 0) || (n >= hostlen)) {
        return -1;
    }
    memcpy(host, name, n);
    host[n] = '\0';
    if (colon != NULL) {
        p = strtoul(colon + 1, &stop, 10);
        if ((colon[1] == '\0') || (*stop != '\0') || (p > 65535)) {
            return -1;
        }
    }
    *port = (unsigned)p;
    return 0;
}

static int pd_resolve(const char *host, unsigned port,
                      struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints, *ai = NULL;
    char service[16];
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = AI_NUMERICHOST | AI_NUMERICSERV;
    snprintf(service, sizeof(service), "%u", port);
    rc = getaddrinfo(host, service, &hints, &ai);
    if ((rc != 0) || (ai == NULL)) {
        fprintf(stderr, "pd_pipeline: \"%s\" is not a numeric IP address: "
                "%s\n", host, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

int pd_local_ip_toward(const char *remote_host, char *out, size_t outlen)
{
    struct sockaddr_storage ss, me;
    socklen_t len, mlen = sizeof(me);
    int fd, rc = -1;

    /* A connected UDP socket sends nothing, but the kernel picks the
     * source address of the route to the peer: the address to be known by. */
    if (pd_resolve(remote_host, 9, &ss, &len) != 0) {
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_DGRAM, 0);
    if ((fd >= 0) && (connect(fd, (struct sockaddr*)&ss, len) == 0) &&
        (getsockname(fd, (struct sockaddr*)&me, &mlen) == 0)) {
        if (me.ss_family == AF_INET) {
            rc = inet_ntop(AF_INET, &((struct sockaddr_in*)&me)->sin_addr,
                           out, (socklen_t)outlen) ? 0 : -1;
        } else {
            rc = inet_ntop(AF_INET6, &((struct sockaddr_in6*)&me)->sin6_addr,
                           out, (socklen_t)outlen) ? 0 : -1;
        }
    }
    if (rc != 0) {
        fprintf(stderr, "pd_pipeline: no route to %s: %s (give --name)\n",
                remote_host, strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

int pd_tcp_listen(const char *host, unsigned port, unsigned *bound_port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1;

    if (pd_resolve(host, port, &ss, &len) != 0) {
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        perror("pd_pipeline: staged socket");
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr*)&ss, len) || listen(fd, 1) ||
        getsockname(fd, (struct sockaddr*)&ss, &len)) {
        fprintf(stderr, "pd_pipeline: staged socket on %s port %u: %s\n",
                host, port, strerror(errno));
        close(fd);
        return -1;
    }
    *bound_port = ntohs((ss.ss_family == AF_INET) ?
                        ((struct sockaddr_in*)&ss)->sin_port :
                        ((struct sockaddr_in6*)&ss)->sin6_port);
    return fd;
}

int pd_tcp_accept(int listen_fd, int timeout_ms)
{
    struct pollfd pfd = {listen_fd, POLLIN, 0};
    int rc, one = 1, fd;

    do {
        rc = poll(&pfd, 1, timeout_ms);
    } while ((rc < 0) && (errno == EINTR));
    if (rc <= 0) {
        return -1;
    }
    fd = accept(listen_fd, NULL, NULL);
    if (fd >= 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        pd_io_timeout(fd, SO_RCVTIMEO, timeout_ms);
    }
    return fd;
}

int pd_tcp_connect(const char *host, unsigned port, int timeout_ms)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, one = 1;

    if (pd_resolve(host, port, &ss, &len) != 0) {
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if ((fd < 0) || connect(fd, (struct sockaddr*)&ss, len)) {
        fprintf(stderr, "pd_pipeline: staged connect to %s port %u: %s\n",
                host, port, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    pd_io_timeout(fd, SO_SNDTIMEO, timeout_ms);
    return fd;
}
