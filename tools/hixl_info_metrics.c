/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_info --metrics (hixl_info_metrics.h): one HTTP/1.0 GET of /metrics,
 * then the exposition text's samples, those that are not zero, one per
 * line; a histogram as its count and mean instead of its buckets.
 */
#include "hixl_info_metrics.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HIXL_INFO_HTTP_MAX  (8u << 20)   /* an engine's text is kilobytes */
#define HIXL_INFO_HTTP_MS   5000

/* "host:port" or "[v6]:port" into host and port; 0 when well formed. */
static int hixl_info_split(const char *hostport, char *host, size_t hlen,
                           const char **port)
{
    const char *colon = strrchr(hostport, ':');
    const char *h     = hostport;
    size_t n;

    if ((colon == NULL) || (colon[1] == '\0')) {
        return -1;
    }
    n = (size_t)(colon - hostport);
    if ((n >= 2) && (h[0] == '[') && (h[n - 1] == ']')) {
        ++h;
        n -= 2;
    }
    if ((n == 0) || (n >= hlen)) {
        return -1;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    *port   = colon + 1;
    return 0;
}

static int hixl_info_connect(const char *host, const char *port)
{
    struct addrinfo hints, *res, *ai;
    int fd = -1, rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "hixl_info: %s:%s: %s\n", host, port,
                gai_strerror(rc));
        return -1;
    }
    for (ai = res; (ai != NULL) && (fd < 0); ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if ((fd >= 0) && (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "hixl_info: cannot connect to %s:%s: %s (is "
                "hixl.MetricsListen set there?)\n", host, port,
                strerror(errno));
    }
    return fd;
}

/* The whole answer to GET /metrics, NUL-terminated (malloc'd), or NULL. */
static char *hixl_info_get(int fd, const char *host)
{
    char req[512];
    char *buf = NULL;
    size_t len = 0, cap = 0;
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t n;
    int w;

    w = snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\nHost: %s\r\n"
                 "Connection: close\r\n\r\n", host);
    if ((w <= 0) || (send(fd, req, (size_t)w, MSG_NOSIGNAL) != w)) {
        fprintf(stderr, "hixl_info: cannot send the request: %s\n",
                strerror(errno));
        return NULL;
    }
    for (;;) {
        if (len + 4096 + 1 > cap) {
            char *nb;

            cap = cap ? cap * 2 : 65536;
            nb  = (cap <= HIXL_INFO_HTTP_MAX) ? realloc(buf, cap) : NULL;
            if (nb == NULL) {
                fprintf(stderr, "hixl_info: the answer is too large\n");
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        if (poll(&p, 1, HIXL_INFO_HTTP_MS) <= 0) {
            fprintf(stderr, "hixl_info: no answer within %d ms\n",
                    HIXL_INFO_HTTP_MS);
            free(buf);
            return NULL;
        }
        n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "hixl_info: %s\n", strerror(errno));
            free(buf);
            return NULL;
        }
        if (n == 0) {
            break;
        }
        len += (size_t)n;
    }
    if (buf != NULL) {
        buf[len] = '\0';
    }
    return buf;
}

/* Print one sample line of the text, unless it is zero or a bucket. */
static void hixl_info_sample(const char *line)
{
    const char *sp = strrchr(line, ' ');
    double v;

    if ((sp == NULL) || (line[0] == '#') || (line[0] == '\0')) {
        return;
    }
    v = strtod(sp + 1, NULL);
    if ((v == 0.0) || (strstr(line, "_bucket{") != NULL)) {
        return;
    }
    printf("%-.*s%*s %s\n", (int)(sp - line), line,
           (sp - line < 72) ? (int)(72 - (sp - line)) : 0, "", sp + 1);
}

int hixl_info_metrics(const char *hostport)
{
    char host[256], *text, *body, *line, *save = NULL;
    const char *port;
    int fd;

    if (hixl_info_split(hostport, host, sizeof(host), &port) != 0) {
        fprintf(stderr, "hixl_info: --metrics takes HOST:PORT (the "
                "engine's hixl.MetricsListen), not \"%s\"\n", hostport);
        return 1;
    }
    fd = hixl_info_connect(host, port);
    if (fd < 0) {
        return 1;
    }
    text = hixl_info_get(fd, host);
    close(fd);
    if (text == NULL) {
        return 1;
    }
    body = strstr(text, "\r\n\r\n");
    if ((strncmp(text, "HTTP/1.", 7) != 0) || (strlen(text) < 12) ||
        (strncmp(text + 9, "200", 3) != 0) || (body == NULL)) {
        fprintf(stderr, "hixl_info: %s did not answer /metrics with 200: "
                "%.60s\n", hostport, text);
        free(text);
        return 1;
    }
    printf("# metrics of the engine at %s (samples that are not zero; "
           "histograms as _count and _sum; docs/metrics.md)\n", hostport);
    for (line = strtok_r(body + 4, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        hixl_info_sample(line);
    }
    free(text);
    return 0;
}
