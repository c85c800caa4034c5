/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which process holds the other end of a TCP connection (sock_owner.h).
 */
#include "config.h"
#include "wire/sock_owner.h"

#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One end of a connection as the kernel lists it: an IPv6 address (IPv4
 * as v4-mapped, so that both tables compare alike) and a port. */
typedef struct sock_end {
    uint8_t  addr[16];
    unsigned port;
} sock_end_t;

static int sock_end_from(const struct sockaddr_storage *ss, sock_end_t *e)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0xff, 0xff};
    const struct sockaddr_in *in4   = (const struct sockaddr_in*)ss;
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6*)ss;

    if (ss->ss_family == AF_INET) {
        memcpy(e->addr, v4mapped, sizeof(v4mapped));
        memcpy(e->addr + 12, &in4->sin_addr, 4);
        e->port = ntohs(in4->sin_port);
        return 0;
    }
    if (ss->ss_family == AF_INET6) {
        memcpy(e->addr, &in6->sin6_addr, 16);
        e->port = ntohs(in6->sin6_port);
        return 0;
    }
    return EINVAL;
}

/* "0100007F:1F90" (tcp) or 32 hex digits and a port (tcp6): the kernel
 * prints each 32-bit word of the address as a native integer, so reading
 * the words back natively gives the address bytes in network order. */
static int sock_end_parse(const char *text, sock_end_t *e)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                         0xff, 0xff};
    const char *colon = strchr(text, ':');
    size_t words, i;
    unsigned int w;
    char hex[9];

    if (colon == NULL) {
        return -1;
    }
    words = (size_t)(colon - text) / 8;
    if (((size_t)(colon - text) % 8 != 0) || ((words != 1) && (words != 4))) {
        return -1;
    }
    if (words == 1) {
        memcpy(e->addr, v4mapped, sizeof(v4mapped));
    }
    for (i = 0; i < words; ++i) {
        memcpy(hex, text + 8 * i, 8);
        hex[8] = '\0';
        if (sscanf(hex, "%8x", &w) != 1) {
            return -1;
        }
        memcpy(e->addr + ((words == 1) ? 12 : 4 * i), &w, 4);
    }
    return (sscanf(colon + 1, "%x", &e->port) == 1) ? 0 : -1;
}

static int sock_end_eq(const sock_end_t *a, const sock_end_t *b)
{
    return (a->port == b->port) && !memcmp(a->addr, b->addr, 16);
}

/* The inode of the socket in pid's namespace whose local end is `local`
 * and remote end `remote`, from /proc/PID/net/<table>; 0 if none. */
static unsigned long sock_inode_in(pid_t pid, const char *table,
                                   const sock_end_t *local,
                                   const sock_end_t *remote)
{
    char path[64], line[512], l[64], r[64];
    unsigned long inode, found = 0;
    sock_end_t le, re;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, table);
    f = fopen(path, "re");
    if (f == NULL) {
        return 0;
    }
    while ((found == 0) && (fgets(line, sizeof(line), f) != NULL)) {
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if ((sscanf(line, " %*[0-9]: %63s %63s %*x %*s %*s %*s %*u %*d %lu",
                    l, r, &inode) == 3) &&
            (sock_end_parse(l, &le) == 0) && (sock_end_parse(r, &re) == 0) &&
            sock_end_eq(&le, local) && sock_end_eq(&re, remote)) {
            found = inode;
        }
    }
    fclose(f);
    return found;
}

/* The diag form of one end of a socket of family: address (network order,
 * IPv4 in the first word) and port (network order). */
static void sock_diag_end(const sock_end_t *e, int family, __be32 addr[4],
                          __be16 *port)
{
    memset(addr, 0, 4 * sizeof(addr[0]));
    if (family == AF_INET) {
        memcpy(addr, e->addr + 12, 4);   /* sock_end_t keeps it v4-mapped */
    } else {
        memcpy(addr, e->addr, 16);
    }
    *port = htons((uint16_t)e->port);
}

/*
 * The inode of the socket of this network namespace (family: ours) whose
 * ends are `theirs` (local) and `mine` (remote), looked up by the kernel
 * by its addresses (NETLINK_SOCK_DIAG without a dump); 0 if there is none
 * here or the kernel cannot say.  Why not only /proc/PID/net/tcp: reading
 * it walks every bucket of the host's connection table, milliseconds of
 * CPU per connect, more than the rest of a same-host connect costs its
 * connector.  A socket found here with our ends
 * swapped is the other end of our connection: nothing else in this
 * namespace can have them.
 */
static unsigned long sock_inode_diag(int family, const sock_end_t *theirs,
                                     const sock_end_t *mine)
{
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    struct {
        struct nlmsghdr         nlh;
        struct inet_diag_req_v2 req;
    } msg;
    union {
        struct nlmsghdr nlh;
        char            buf[4096];
    } reply;
    const struct inet_diag_msg *m;
    struct nlmsghdr *nlh;
    unsigned long inode = 0;
    ssize_t n;
    int fd;

    fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) {
        return 0;
    }
    memset(&msg, 0, sizeof(msg));
    msg.nlh.nlmsg_len       = sizeof(msg);
    msg.nlh.nlmsg_type      = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags     = NLM_F_REQUEST;   /* one socket, no dump */
    msg.nlh.nlmsg_seq       = 1;
    msg.req.sdiag_family    = (uint8_t)family;
    msg.req.sdiag_protocol  = IPPROTO_TCP;
    msg.req.idiag_states    = ~0u;
    msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    sock_diag_end(theirs, family, msg.req.id.idiag_src,
                  &msg.req.id.idiag_sport);
    sock_diag_end(mine, family, msg.req.id.idiag_dst,
                  &msg.req.id.idiag_dport);
    /* the kernel answers inside sendto: the reply is queued when it
     * returns, so the receive never waits */
    if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr*)&kernel,
               sizeof(kernel)) == (ssize_t)sizeof(msg)) {
        n = recv(fd, &reply, sizeof(reply), MSG_DONTWAIT);
        for (nlh = &reply.nlh; (n > 0) && NLMSG_OK(nlh, (size_t)n);
             nlh = NLMSG_NEXT(nlh, n)) {
            if ((nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY) ||
                (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))) {
                break;   /* NLMSG_ERROR (none such, no diag module) */
            }
            m = NLMSG_DATA(nlh);
            if ((m->id.idiag_sport == msg.req.id.idiag_sport) &&
                (m->id.idiag_dport == msg.req.id.idiag_dport)) {
                inode = m->idiag_inode;
                break;
            }
        }
    }
    close(fd);
    return inode;
}

/* Whether pid has a descriptor on socket `inode`: 0, or an errno. */
static int sock_held_by(pid_t pid, unsigned long inode)
{
    char path[64], link[64], want[48];
    struct dirent *d;
    int err = ESTALE;
    ssize_t n;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    dir = opendir(path);
    if (dir == NULL) {
        return (errno == ENOENT) ? ESRCH : errno;
    }
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    while ((err != 0) && ((d = readdir(dir)) != NULL)) {
        snprintf(path, sizeof(path), "/proc/%d/fd/%.16s", (int)pid,
                 d->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n > 0) {
            link[n] = '\0';
            err     = strcmp(link, want) ? ESTALE : 0;
        }
    }
    closedir(dir);
    return err;
}

int hixl_sock_owner_check(int fd, pid_t pid)
{
    struct sockaddr_storage mine, theirs;
    socklen_t len_m = sizeof(mine), len_t = sizeof(theirs);
    sock_end_t local, remote;
    unsigned long inode;
    char path[32];

    if ((fd < 0) || (pid <= 0)) {
        return EINVAL;
    }
    if ((getsockname(fd, (struct sockaddr*)&mine, &len_m) != 0) ||
        (getpeername(fd, (struct sockaddr*)&theirs, &len_t) != 0)) {
        return errno;
    }
    if ((sock_end_from(&mine, &local) != 0) ||
        (sock_end_from(&theirs, &remote) != 0)) {
        return EINVAL;
    }
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if (access(path, F_OK) != 0) {
        return ESRCH;
    }
    /* their end: local and remote swapped; the tables of pid's namespace
     * when it is not in ours */
    inode = sock_inode_diag(mine.ss_family, &remote, &local);
    if (inode == 0) {
        inode = sock_inode_in(pid, "tcp", &remote, &local);
    }
    if (inode == 0) {
        inode = sock_inode_in(pid, "tcp6", &remote, &local);
    }
    return (inode == 0) ? ESTALE : sock_held_by(pid, inode);
}
