/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connections of an incarnation.  See mh_socks.h.
 */
#include "mh_socks.h"
#include "harness.h"

#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MH_MAX_SOCKS 4096

static hx_tcp_sock_t *mh_socks_of(const hx_net_t *net, int h, int *n)
{
    hx_tcp_sock_t *s = calloc(MH_MAX_SOCKS, sizeof(*s));
    char err[512];

    ck_assert_ptr_nonnull(s);
    *n = hx_net_tcp_socks(net, h, s, MH_MAX_SOCKS, err, sizeof(err));
    ck_assert_msg(*n >= 0, "%s", err);
    return s;
}

void mh_conns_take(const hx_net_t *net, int h, const char *peer_addr,
                   mh_conns_t *out)
{
    hx_tcp_sock_t *s;
    int n, i;

    memset(out, 0, sizeof(*out));
    s = mh_socks_of(net, h, &n);
    for (i = 0; (i < n) && (out->n < MH_MAX_CONNS); ++i) {
        if ((s[i].state == TCP_LISTEN) || (s[i].inode == 0) ||
            strcmp(s[i].raddr, peer_addr)) {
            continue;
        }
        out->s[out->n++] = s[i];
    }
    free(s);
}

int mh_conns_left(const hx_net_t *net, int h, const mh_conns_t *old,
                  char *desc, size_t desclen)
{
    hx_tcp_sock_t *s;
    size_t used = 0;
    char line[256];
    int n, i, k, left = 0;

    desc[0] = '\0';
    s = mh_socks_of(net, h, &n);
    for (i = 0; i < n; ++i) {
        if (s[i].inode == 0) {
            continue;
        }
        for (k = 0; k < old->n; ++k) {
            const hx_tcp_sock_t *o = &old->s[k];

            if ((o->lport == s[i].lport) && (o->rport == s[i].rport) &&
                !strcmp(o->laddr, s[i].laddr) &&
                !strcmp(o->raddr, s[i].raddr)) {
                break;
            }
        }
        if (k == old->n) {
            continue;
        }
        ++left;
        hx_tcp_sock_str(&s[i], line, sizeof(line));
        if (used + strlen(line) + 4 < desclen) {
            used += (size_t)snprintf(desc + used, desclen - used, "  %s\n",
                                     line);
        }
    }
    free(s);
    return left;
}

void mh_conns_str(const mh_conns_t *c, char *buf, size_t len)
{
    size_t used = 0;
    char line[256];
    int i;

    buf[0] = '\0';
    for (i = 0; i < c->n; ++i) {
        hx_tcp_sock_str(&c->s[i], line, sizeof(line));
        if (used + strlen(line) + 4 < len) {
            used += (size_t)snprintf(buf + used, len - used, "  %s\n", line);
        }
    }
}
