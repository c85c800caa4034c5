/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The TCP connections of one incarnation of a peer connection, as the
 * kernel of each namespace host sees them: taken while the connection is
 * up, and looked for again after it ended.  A connection counts while a
 * process holds its socket (inode != 0): one the application closed
 * (TIME_WAIT, or an orphan still sending its FIN) can deliver nothing to a
 * process, while a socket the library kept open can still receive the old
 * incarnation's queued bytes once the network heals (issue 10, fault 2).
 */
#ifndef HX_MH_SOCKS_H_
#define HX_MH_SOCKS_H_

#include "netns.h"

#define MH_MAX_CONNS 64

typedef struct mh_conns {
    int           n;
    hx_tcp_sock_t s[MH_MAX_CONNS];
} mh_conns_t;

/* Connections host h holds to address peer_addr (not listeners). */
void mh_conns_take(const hx_net_t *net, int h, const char *peer_addr,
                   mh_conns_t *out);

/* Which of `old` host h still holds (same four-tuple, held by a process);
 * their description in desc.  Returns how many. */
int mh_conns_left(const hx_net_t *net, int h, const mh_conns_t *old,
                  char *desc, size_t desclen);

/* All of c, one per line, into buf. */
void mh_conns_str(const mh_conns_t *c, char *buf, size_t len);

#endif
