/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which process holds the other end of a TCP connection of this host.
 *
 * Why: same-host kernel copies (core/peer/cma.h) need the peer's pid, and a pid
 * alone proves nothing (another pid namespace, a pid reused after a death,
 * a peer that lies).  The kernel knows the answer: the socket at the other
 * end of our connection (its addresses are ours swapped) has an inode,
 * which the kernel looks up by those addresses (NETLINK_SOCK_DIAG) in our
 * network namespace, or lists in the peer's (/proc/PID/net/tcp, tcp6)
 * when the peer is in another; and the process that holds it has a
 * descriptor naming that inode (/proc/PID/fd).  No address inside the
 * peer's process, nor any secret of it, has to cross the wire for this.
 */
#ifndef HIXL_WIRE_SOCK_OWNER_H_
#define HIXL_WIRE_SOCK_OWNER_H_

#include <sys/types.h>

/* 0 when process pid holds the other end of the connected TCP socket fd;
 * else the errno that says why not: ESTALE (it does not: another process,
 * or the socket is not found in its namespace), ESRCH (no such process),
 * EACCES/EPERM (not allowed to look), EINVAL (bad arguments). */
int hixl_sock_owner_check(int fd, pid_t pid);

#endif
