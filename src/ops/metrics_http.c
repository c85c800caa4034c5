/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The metrics endpoint (hixl.MetricsListen=HOST:PORT): GET /metrics, the
 * Prometheus text of hixl_metrics_text; GET /healthz, "ok".  Anything
 * else is answered with an error status and changes nothing.
 *
 * libmicrohttpd serves it from a thread of its own, which takes
 * engine->lock only for the instant the gauges are read (ops/metrics.c),
 * as any application thread does; it never calls into UCX.  It is started
 * last in hixl_initialize and stopped first in finalize (MHD_stop_daemon
 * waits for requests being answered), so it never sees an engine half set
 * up or half torn down.  Its limits bound what a client can hold: a few
 * connections at a time, a short idle timeout, small request buffers.
 */
#include "config.h"
#include "ops/metrics.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_MICROHTTPD
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#if MHD_VERSION < 0x00097002
typedef int hixl_mhd_result_t;
#else
typedef enum MHD_Result hixl_mhd_result_t;
#endif

#define HIXL_HTTP_CONNECTIONS  16      /* at once */
#define HIXL_HTTP_PER_IP       4
#define HIXL_HTTP_IDLE_S       10

struct hixl_metrics_http {
    struct MHD_Daemon *daemon;
    char               addr[300];   /* "host:port", as bound */
};

static hixl_mhd_result_t hixl_http_reply(struct MHD_Connection *conn,
                                         unsigned code, const char *type,
                                         char *body, size_t len, int owned)
{
    struct MHD_Response *resp;
    hixl_mhd_result_t ret;

    resp = MHD_create_response_from_buffer(len, body, owned ?
                                           MHD_RESPMEM_MUST_FREE :
                                           MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        if (owned) {
            free(body);
        }
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    }
    ret = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static hixl_mhd_result_t hixl_http_error(struct MHD_Connection *conn,
                                         unsigned code, const char *text)
{
    return hixl_http_reply(conn, code, "text/plain; charset=utf-8",
                           (char*)text, strlen(text), 0);
}

/* The exposition text, in a buffer grown until it fits. */
static hixl_mhd_result_t hixl_http_metrics(hixl_engine_t *engine,
                                           struct MHD_Connection *conn)
{
    size_t cap = 32768, need;
    char *buf;

    for (;;) {
        buf = malloc(cap);
        if (buf == NULL) {
            return hixl_http_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                   "out of memory\n");
        }
        need = hixl_metrics_text(engine, buf, cap);
        if (need < cap) {
            break;
        }
        free(buf);
        cap = need + 1024;   /* a figure may have grown meanwhile */
    }
    return hixl_http_reply(conn, MHD_HTTP_OK,
                           "text/plain; version=0.0.4; charset=utf-8", buf,
                           need, 1);
}

static hixl_mhd_result_t hixl_http_handle(void *cls,
                                          struct MHD_Connection *conn,
                                          const char *url, const char *method,
                                          const char *version,
                                          const char *upload_data,
                                          size_t *upload_data_size,
                                          void **con_cls)
{
    hixl_engine_t *engine = cls;

    (void)version;
    (void)upload_data;
    if ((strcmp(method, MHD_HTTP_METHOD_GET) != 0) &&
        (strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)) {
        return hixl_http_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                               "only GET and HEAD are served\n");
    }
    if (*upload_data_size != 0) {
        return hixl_http_error(conn, MHD_HTTP_BAD_REQUEST,
                               "a GET carries no body\n");
    }
    *con_cls = NULL;
    if (strcmp(url, "/metrics") == 0) {
        return hixl_http_metrics(engine, conn);
    }
    if (strcmp(url, "/healthz") == 0) {
        return hixl_http_error(conn, MHD_HTTP_OK, "ok\n");
    }
    return hixl_http_error(conn, MHD_HTTP_NOT_FOUND,
                           "not found: this endpoint serves /metrics and "
                           "/healthz\n");
}

/* A listening socket on spec ("host:port", "[v6]:port", ":port") into
 * *fd_p, the address it bound into addr. */
static hixl_status_t hixl_http_listen(const char *spec, char *addr,
                                      size_t addrlen, int *fd_p)
{
    char host[256], port[16], shown[INET6_ADDRSTRLEN];
    struct addrinfo hints, *res = NULL, *ai;
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    const char *colon = strrchr(spec, ':');
    size_t hlen;
    int fd = -1, one = 1, rc;

    if ((colon == NULL) || (colon[1] == '\0') ||
        (strlen(colon + 1) >= sizeof(port)) ||
        ((size_t)(colon - spec) >= sizeof(host))) {
        return hixl_error(HIXL_PARAM_INVALID, "hixl.MetricsListen \"%s\" "
                          "is not HOST:PORT", spec);
    }
    hlen = (size_t)(colon - spec);
    if ((hlen >= 2) && (spec[0] == '[') && (spec[hlen - 1] == ']')) {
        memcpy(host, spec + 1, hlen - 2);   /* [v6 address] */
        host[hlen - 2] = '\0';
    } else {
        memcpy(host, spec, hlen);
        host[hlen] = '\0';
    }
    snprintf(port, sizeof(port), "%s", colon + 1);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = AI_PASSIVE | AI_NUMERICSERV;
    rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (rc != 0) {
        return hixl_error(HIXL_PARAM_INVALID, "hixl.MetricsListen \"%s\": "
                          "%s", spec, gai_strerror(rc));
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if ((bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) &&
            (listen(fd, 64) == 0)) {
            break;
        }
        rc = errno;
        close(fd);
        fd    = -1;
        errno = rc;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        return hixl_error(HIXL_FAILED, "hixl.MetricsListen \"%s\": cannot "
                          "listen: %s", spec, strerror(errno));
    }
    getsockname(fd, (struct sockaddr*)&ss, &sslen);
    if (ss.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((struct sockaddr_in6*)&ss)->sin6_addr, shown,
                  sizeof(shown));
        snprintf(addr, addrlen, "[%s]:%u", shown,
                 ntohs(((struct sockaddr_in6*)&ss)->sin6_port));
    } else {
        inet_ntop(AF_INET, &((struct sockaddr_in*)&ss)->sin_addr, shown,
                  sizeof(shown));
        snprintf(addr, addrlen, "%s:%u", shown,
                 ntohs(((struct sockaddr_in*)&ss)->sin_port));
    }
    *fd_p = fd;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_metrics_http_start(hixl_engine_t *engine)
{
    struct hixl_metrics_http *h;
    hixl_status_t status;
    int fd = -1;

    if (engine->opts.metrics_listen[0] == '\0') {
        return HIXL_SUCCESS;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    status = hixl_http_listen(engine->opts.metrics_listen, h->addr,
                              sizeof(h->addr), &fd);
    if (status != HIXL_SUCCESS) {
        free(h);
        return status;
    }
    h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
                                 MHD_USE_AUTO, 0, NULL, NULL,
                                 hixl_http_handle, engine,
                                 MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)HIXL_HTTP_CONNECTIONS,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                 (unsigned)HIXL_HTTP_PER_IP,
                                 MHD_OPTION_CONNECTION_TIMEOUT,
                                 (unsigned)HIXL_HTTP_IDLE_S,
                                 MHD_OPTION_END);
    if (h->daemon == NULL) {
        close(fd);
        free(h);
        return hixl_error(HIXL_FAILED, "hixl.MetricsListen %s: "
                          "libmicrohttpd did not start",
                          engine->opts.metrics_listen);
    }
    engine->metrics_http = h;
    hixl_log_info("engine %s: metrics at http://%s/metrics",
                  engine->name.canon, h->addr);
    return HIXL_SUCCESS;
}

void hixl_metrics_http_stop(hixl_engine_t *engine)
{
    struct hixl_metrics_http *h = engine->metrics_http;

    if (h == NULL) {
        return;
    }
    engine->metrics_http = NULL;
    /* waits for the requests being answered; closes the listening
     * socket */
    MHD_stop_daemon(h->daemon);
    free(h);
}

const char *hixl_metrics_address(const hixl_engine_t *engine)
{
    return ((engine != NULL) && (engine->metrics_http != NULL)) ?
           engine->metrics_http->addr : "";
}

#else   /* !HAVE_MICROHTTPD */

hixl_status_t hixl_metrics_http_start(hixl_engine_t *engine)
{
    if (engine->opts.metrics_listen[0] == '\0') {
        return HIXL_SUCCESS;
    }
    return hixl_error(HIXL_UNSUPPORTED, "hixl.MetricsListen=%s: this "
                      "libhixl-ucx was built without libmicrohttpd, so it "
                      "serves no metrics over HTTP (Debian: apt-get install "
                      "libmicrohttpd-dev, then configure and build again); "
                      "hixl_get_stats and hixl_metrics_text work without it",
                      engine->opts.metrics_listen);
}

void hixl_metrics_http_stop(hixl_engine_t *engine)
{
    (void)engine;
}

const char *hixl_metrics_address(const hixl_engine_t *engine)
{
    (void)engine;
    return "";
}

#endif
