/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine name parsing.  Only numeric addresses are accepted: a name is an
 * identity that every peer must spell the same way, and resolving host names
 * would make that depend on each peer's resolver.
 */
#include "config.h"
#include "util/engine_name.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hixl_name_format(hixl_name_t *name)
{
    char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    int v6 = (name->addr.ss_family == AF_INET6);

    if (getnameinfo((struct sockaddr*)&name->addr, name->addrlen, host,
                    sizeof(host), NULL, 0, NI_NUMERICHOST) != 0) {
        snprintf(host, sizeof(host), "?");
    }
    if (name->port != 0) {
        snprintf(name->canon, sizeof(name->canon), v6 ? "[%s]:%u" : "%s:%u",
                 host, (unsigned)name->port);
    } else {
        snprintf(name->canon, sizeof(name->canon), v6 ? "[%s]" : "%s", host);
    }
}

void hixl_name_set_port(hixl_name_t *name, uint16_t port)
{
    name->port = port;
    if (name->addr.ss_family == AF_INET6) {
        ((struct sockaddr_in6*)&name->addr)->sin6_port = htons(port);
    } else {
        ((struct sockaddr_in*)&name->addr)->sin_port = htons(port);
    }
    hixl_name_format(name);
}

hixl_status_t hixl_name_parse(const char *text, hixl_name_t *name)
{
    char host[HIXL_ENGINE_NAME_MAX + 1];
    const char *port_str = NULL;
    struct addrinfo hints, *res = NULL;
    size_t len;
    unsigned long port = 0;
    char *end;
    int rc;

    if (text == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine name is NULL");
    }
    len = strlen(text);
    if (len == 0) {
        return hixl_error(HIXL_PARAM_INVALID, "engine name is empty");
    }
    if (len > HIXL_ENGINE_NAME_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "engine name is %zu bytes, "
                          "longer than %d", len, HIXL_ENGINE_NAME_MAX);
    }

    if (text[0] == '[') {
        const char *close = strchr(text, ']');

        if (close == NULL) {
            return hixl_error(HIXL_PARAM_INVALID, "engine name \"%s\": '[' "
                              "without ']'", text);
        }
        len = (size_t)(close - text - 1);
        memcpy(host, text + 1, len);
        host[len] = '\0';
        if (close[1] == ':') {
            port_str = close + 2;
        } else if (close[1] != '\0') {
            return hixl_error(HIXL_PARAM_INVALID, "engine name \"%s\": "
                              "expected ':port' after ']'", text);
        }
    } else {
        const char *colon = strchr(text, ':');

        if ((colon != NULL) && (strchr(colon + 1, ':') == NULL)) {
            /* exactly one colon: IPv4 with a port */
            len = (size_t)(colon - text);
            memcpy(host, text, len);
            host[len] = '\0';
            port_str = colon + 1;
        } else {
            /* no colon (IPv4), or several (bare IPv6 without a port) */
            memcpy(host, text, len + 1);
        }
    }

    if (port_str != NULL) {
        if ((*port_str < '0') || (*port_str > '9')) {
            return hixl_error(HIXL_PARAM_INVALID, "engine name \"%s\": port "
                              "is not a number", text);
        }
        port = strtoul(port_str, &end, 10);
        if ((*end != '\0') || (port > 65535)) {
            return hixl_error(HIXL_PARAM_INVALID, "engine name \"%s\": port "
                              "must be 0..65535", text);
        }
    }

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags    = AI_NUMERICHOST;
    rc = getaddrinfo(host, NULL, &hints, &res);
    if ((rc != 0) || (res == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "engine name \"%s\": \"%s\" is "
                          "not a numeric IPv4 or IPv6 address", text, host);
    }
    if (res->ai_addrlen > sizeof(name->addr)) {
        freeaddrinfo(res);
        return hixl_error(HIXL_PARAM_INVALID, "engine name \"%s\": address "
                          "too long", text);
    }
    memset(name, 0, sizeof(*name));
    memcpy(&name->addr, res->ai_addr, res->ai_addrlen);
    name->addrlen = (socklen_t)res->ai_addrlen;
    freeaddrinfo(res);
    hixl_name_set_port(name, (uint16_t)port);
    return HIXL_SUCCESS;
}
