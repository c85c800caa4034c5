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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* A numeric address: an engine name is an identity, not a host name. */
static int pd_resolve(const char *host, unsigned port, struct addrinfo **res)
{
    int rc = bc_tcp_resolve(host, port, AF_UNSPEC,
                            AI_NUMERICHOST | AI_NUMERICSERV, res);

    if (rc != 0) {
        fprintf(stderr, "pd_pipeline: \"%s\" is not a numeric IP address: "
                "%s\n", host, gai_strerror(rc));
        return -1;
    }
    return 0;
}

int pd_local_ip_toward(const char *remote_host, char *out, size_t outlen)
{
    struct sockaddr_storage me;
    socklen_t mlen = sizeof(me);
    struct addrinfo *ai;
    int fd, rc = -1;

    /* A connected UDP socket sends nothing, but the kernel picks the
     * source address of the route to the peer: the address to be known by. */
    if (pd_resolve(remote_host, 9, &ai) != 0) {
        return -1;
    }
    fd = socket(ai->ai_family, SOCK_DGRAM, 0);
    if ((fd >= 0) && (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) &&
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
    freeaddrinfo(ai);
    return rc;
}

/* The staged mode's listening (decode) or connected (prefill) socket. */
static int pd_tcp_socket(const char *host, unsigned port, int listening)
{
    struct addrinfo *ai;
    int fd;

    if (pd_resolve(host, port, &ai) != 0) {
        return -1;
    }
    fd = listening ? bc_tcp_listen(ai, 1) : bc_tcp_connect(ai, 0);
    freeaddrinfo(ai);
    if (fd < 0) {
        fprintf(stderr, "pd_pipeline: staged %s %s port %u: %s\n",
                listening ? "socket on" : "connect to", host, port,
                strerror(errno));
    }
    return fd;
}

int pd_tcp_listen(const char *host, unsigned port, unsigned *bound_port)
{
    int fd = pd_tcp_socket(host, port, 1);

    if (fd >= 0) {
        *bound_port = bc_tcp_local_port(fd);
    }
    return fd;
}

/* Each read and write of a layer is bounded too: a peer that stops
 * mid-layer must not hang the other side forever. */
int pd_tcp_accept(int listen_fd, int timeout_ms)
{
    int fd = bc_tcp_accept(listen_fd, timeout_ms, NULL, NULL);

    if (fd >= 0) {
        bc_tcp_nodelay(fd);
        bc_tcp_io_timeout(fd, SO_RCVTIMEO, timeout_ms);
    }
    return fd;
}

int pd_tcp_connect(const char *host, unsigned port, int timeout_ms)
{
    int fd = pd_tcp_socket(host, port, 0);

    if (fd >= 0) {
        bc_tcp_nodelay(fd);
        bc_tcp_io_timeout(fd, SO_SNDTIMEO, timeout_ms);
    }
    return fd;
}
