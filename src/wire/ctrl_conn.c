/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control connection I/O.
 */
#include "config.h"
#include "wire/ctrl_conn.h"
#include "util/clock.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define CTRL_RX_CHUNK (64 * 1024)
/* Keepalive from a third of the peer timeout on, probes every sixth, three
 * of them: an idle dead peer is found within the timeout (seconds). */
#define CTRL_KEEPALIVE_IDLE_DIV  3000
#define CTRL_KEEPALIVE_INTVL_DIV 6000
#define CTRL_KEEPALIVE_PROBES    3
/* Connects that wait for accept(): the listener accepts continuously
 * (ctrl/accept.c), this only absorbs a burst. */
#define CTRL_LISTEN_BACKLOG      512

void hixl_sock_setup(int fd, int peer_timeout_ms)
{
    int one = 1, cnt = CTRL_KEEPALIVE_PROBES;
    int idle  = (peer_timeout_ms / CTRL_KEEPALIVE_IDLE_DIV > 0) ?
                peer_timeout_ms / CTRL_KEEPALIVE_IDLE_DIV : 1;
    int intvl = (peer_timeout_ms / CTRL_KEEPALIVE_INTVL_DIV > 0) ?
                peer_timeout_ms / CTRL_KEEPALIVE_INTVL_DIV : 1;
    unsigned ut = (unsigned)peer_timeout_ms;

    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* A peer whose host vanished, or that a partition cut off, answers
     * nothing: keepalive probes find it on an idle connection (from a
     * third of the timeout on), and TCP_USER_TIMEOUT bounds how long sent
     * bytes or probes may stay unacknowledged, which keepalive alone
     * cannot (it stops probing while data is in flight, and the kernel's
     * retransmissions then last ~15 minutes).  The socket then fails with
     * ETIMEDOUT and the peer is closed. */
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
}

void hixl_conn_init(hixl_conn_t *conn, int fd)
{
    memset(conn, 0, sizeof(*conn));
    conn->fd   = fd;
    conn->epfd = -1;
    pthread_mutex_init(&conn->tx_lock, NULL);
}

void hixl_conn_cleanup(hixl_conn_t *conn)
{
    hixl_conn_close(conn);
    hixl_buf_cleanup(&conn->tx);
    free(conn->rx);
    conn->rx = NULL;
    pthread_mutex_destroy(&conn->tx_lock);
}

hixl_status_t hixl_conn_watch(hixl_conn_t *conn, int epfd, uint64_t ep_data)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN;
    ev.data.u64 = ep_data;
    pthread_mutex_lock(&conn->tx_lock);
    conn->epfd    = epfd;
    conn->ep_data = ep_data;
    if (conn->tx.len > conn->tx_off) {
        ev.events    |= EPOLLOUT;
        conn->pollout = 1;
    }
    pthread_mutex_unlock(&conn->tx_lock);
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, conn->fd, &ev) != 0) {
        return hixl_error(HIXL_FAILED, "epoll_ctl(ADD) failed: %s",
                          strerror(errno));
    }
    return HIXL_SUCCESS;
}

void hixl_conn_close(hixl_conn_t *conn)
{
    /* Under tx_lock, so a sender racing with the close either wrote before
     * it or sees `closed`: never a write to a recycled descriptor. */
    pthread_mutex_lock(&conn->tx_lock);
    if (conn->fd >= 0) {
        if (conn->epfd >= 0) {
            epoll_ctl(conn->epfd, EPOLL_CTL_DEL, conn->fd, NULL);
        }
        close(conn->fd);
        conn->fd = -1;
    }
    conn->closed = 1;
    pthread_mutex_unlock(&conn->tx_lock);
}

/* Arm or disarm EPOLLOUT to match the queue.  Called with tx_lock held. */
static void ctrl_conn_update_pollout(hixl_conn_t *conn)
{
    int want = (conn->tx.len > conn->tx_off);
    struct epoll_event ev;

    if ((conn->epfd < 0) || (want == conn->pollout)) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events   = EPOLLIN | (want ? EPOLLOUT : 0);
    ev.data.u64 = conn->ep_data;
    if (epoll_ctl(conn->epfd, EPOLL_CTL_MOD, conn->fd, &ev) == 0) {
        conn->pollout = want;
    }
}

/* Write as much of the queue as the socket takes.  tx_lock held. */
static int ctrl_conn_write_locked(hixl_conn_t *conn, char *err, size_t errlen)
{
    ssize_t n;

    while (conn->tx_off < conn->tx.len) {
        n = send(conn->fd, conn->tx.data + conn->tx_off,
                 conn->tx.len - conn->tx_off, MSG_NOSIGNAL);
        if (n > 0) {
            conn->tx_off += (size_t)n;
            continue;
        }
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if ((n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK))) {
            break;
        }
        snprintf(err, errlen, "send: %s", n < 0 ? strerror(errno) : "0 bytes");
        return -1;
    }
    if (conn->tx_off == conn->tx.len) {
        conn->tx.len = 0;
        conn->tx_off = 0;
    } else if (conn->tx_off > (1u << 20)) {
        /* keep the queue from creeping: drop what was written */
        memmove(conn->tx.data, conn->tx.data + conn->tx_off,
                conn->tx.len - conn->tx_off);
        conn->tx.len -= conn->tx_off;
        conn->tx_off  = 0;
    }
    ctrl_conn_update_pollout(conn);
    return 0;
}

/* Encode msg at the end of the queue (tx_lock held). */
static hixl_status_t ctrl_conn_queue_locked(hixl_conn_t *conn,
                                            const hixl_msg_t *msg)
{
    if (conn->closed || (conn->fd < 0)) {
        return hixl_error(HIXL_FAILED, "control connection is closed");
    }
    if (conn->tx.len - conn->tx_off > CTRL_TX_MAX) {
        return hixl_error(HIXL_FAILED, "peer does not read its control "
                          "connection (%zu bytes queued)",
                          conn->tx.len - conn->tx_off);
    }
    return hixl_msg_encode(&conn->tx, msg);
}

hixl_status_t hixl_conn_send(hixl_conn_t *conn, const hixl_msg_t *msg)
{
    hixl_status_t status;
    char err[128];

    pthread_mutex_lock(&conn->tx_lock);
    status = ctrl_conn_queue_locked(conn, msg);
    if ((status == HIXL_SUCCESS) &&
        (ctrl_conn_write_locked(conn, err, sizeof(err)) != 0)) {
        status = hixl_error(HIXL_FAILED, "control connection: %s", err);
    }
    pthread_mutex_unlock(&conn->tx_lock);
    return status;
}

int hixl_conn_queue(hixl_conn_t *conn, const hixl_msg_t *msg)
{
    int first;

    pthread_mutex_lock(&conn->tx_lock);
    first = (conn->tx_off == conn->tx.len);
    if (ctrl_conn_queue_locked(conn, msg) != HIXL_SUCCESS) {
        first = -1;
    }
    pthread_mutex_unlock(&conn->tx_lock);
    return first;
}

int hixl_conn_flush(hixl_conn_t *conn, char *err, size_t errlen)
{
    int rc = 0;

    pthread_mutex_lock(&conn->tx_lock);
    if (!conn->closed && (conn->fd >= 0)) {
        rc = ctrl_conn_write_locked(conn, err, errlen);
    }
    pthread_mutex_unlock(&conn->tx_lock);
    return rc;
}

void hixl_conn_expect(hixl_conn_t *conn, uint64_t types)
{
    conn->rx_types = types;
}

/* With a restricted set of types: refuse the message whose header is at
 * rx[off] (complete) if its type or its length is not allowed. */
static int ctrl_conn_gate(const hixl_conn_t *conn, size_t off, char *err,
                          size_t errlen)
{
    const uint8_t *h = conn->rx + off;
    uint16_t type    = (uint16_t)(h[6] | (h[7] << 8));
    uint32_t len     = (uint32_t)h[8] | ((uint32_t)h[9] << 8) |
                       ((uint32_t)h[10] << 16) | ((uint32_t)h[11] << 24);

    if ((conn->rx_types == 0) || (conn->rx_len - off < CTRL_HDR_LEN)) {
        return 0;
    }
    if ((type >= 64) || !(conn->rx_types & (1ull << type))) {
        snprintf(err, errlen, "%s before the handshake is complete (only "
                 "the handshake's messages are accepted)",
                 hixl_msg_type_name(type));
        return -1;
    }
    if (len > hixl_msg_max_payload(type)) {
        snprintf(err, errlen, "%s of %u bytes: longer than any %s can be "
                 "(%u)", hixl_msg_type_name(type), len,
                 hixl_msg_type_name(type), hixl_msg_max_payload(type));
        return -1;
    }
    return 0;
}

int hixl_conn_receive(hixl_conn_t *conn, hixl_msg_handler_t handler,
                      void *arg, char *err, size_t errlen)
{
    hixl_msg_decode_result_t res;
    hixl_msg_t msg;
    size_t consumed, off, want;
    uint8_t *rx;
    ssize_t n;
    int eof = 0;

    /* Read everything available, growing the buffer to what the pending
     * message needs (bounded by the decoder's payload limit). */
    for (;;) {
        want = conn->rx_len + CTRL_RX_CHUNK;
        if (want > conn->rx_cap) {
            rx = realloc(conn->rx, want);
            if (rx == NULL) {
                snprintf(err, errlen, "out of memory for the receive buffer");
                return -1;
            }
            conn->rx     = rx;
            conn->rx_cap = want;
        }
        n = recv(conn->fd, conn->rx + conn->rx_len, conn->rx_cap - conn->rx_len,
                 0);
        if (n > 0) {
            conn->rx_len += (size_t)n;
            if (conn->rx_len >= CTRL_HDR_LEN + CTRL_MAX_PAYLOAD) {
                break;   /* decode before reading more */
            }
            if ((conn->rx_types != 0) &&
                (conn->rx_len >= CTRL_HDR_LEN)) {
                break;   /* the gate looks at the header first */
            }
            continue;
        }
        if (n == 0) {
            eof = 1;
            break;
        }
        if (errno == EINTR) {
            continue;
        }
        if ((errno == EAGAIN) || (errno == EWOULDBLOCK)) {
            break;
        }
        snprintf(err, errlen, "recv: %s", strerror(errno));
        return -1;
    }

    off = 0;
    while (off < conn->rx_len) {
        if (ctrl_conn_gate(conn, off, err, errlen) != 0) {
            return -1;
        }
        res = hixl_msg_decode(conn->rx + off, conn->rx_len - off, &msg,
                              &consumed, err, errlen);
        if (res == CTRL_DECODE_NEED_MORE) {
            break;
        }
        if (res == CTRL_DECODE_ERROR) {
            return -1;
        }
        off += consumed;
        if (handler(arg, &msg) != 0) {
            snprintf(err, errlen, "closed after %s", hixl_msg_type_name(msg.type));
            return -1;
        }
    }
    if (off > 0) {
        memmove(conn->rx, conn->rx + off, conn->rx_len - off);
        conn->rx_len -= off;
    }
    if (eof) {
        snprintf(err, errlen, conn->rx_len ? "connection closed in the "
                 "middle of a message" : "connection closed by peer");
        return -1;
    }
    return 0;
}

/* Why a port can be in use with no other server on it: the kernel hands
 * ports of its ephemeral range to every outgoing connection and to every
 * socket bound to port 0, so a listener named by such a port can find it
 * taken after a restart.  Said only where it applies. */
static const char *hixl_sock_port_hint(const hixl_name_t *name)
{
    static __thread char hint[200];
    unsigned lo = 0, hi = 0;
    FILE *f;

    f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f == NULL) {
        return "";
    }
    if (fscanf(f, "%u %u", &lo, &hi) != 2) {
        lo = hi = 0;
    }
    fclose(f);
    if ((name->port < lo) || (name->port > hi)) {
        return "";
    }
    snprintf(hint, sizeof(hint), " (port %u is inside the kernel's "
             "ephemeral range %u-%u, which any outgoing connection may be "
             "given: choose a listening port outside it)", name->port, lo, hi);
    return hint;
}

hixl_status_t hixl_sock_listen(const hixl_name_t *name, int *fd_p,
                               uint16_t *port_p)
{
    struct sockaddr_storage bound;
    socklen_t len = sizeof(bound);
    int fd, one = 1;

    fd = socket(name->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return hixl_error(HIXL_FAILED, "socket: %s", strerror(errno));
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (name->addr.ss_family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    }
    if (bind(fd, (const struct sockaddr*)&name->addr, name->addrlen) != 0) {
        int e = errno;
        close(fd);
        return hixl_error(HIXL_FAILED, "cannot listen on %s: bind: %s%s",
                          name->canon, strerror(e),
                          (e == EADDRINUSE) ? hixl_sock_port_hint(name) : "");
    }
    if (listen(fd, CTRL_LISTEN_BACKLOG) != 0) {
        int e = errno;
        close(fd);
        return hixl_error(HIXL_FAILED, "cannot listen on %s: %s", name->canon,
                          strerror(e));
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    getsockname(fd, (struct sockaddr*)&bound, &len);
    *port_p = ntohs(bound.ss_family == AF_INET6 ?
                    ((struct sockaddr_in6*)&bound)->sin6_port :
                    ((struct sockaddr_in*)&bound)->sin_port);
    *fd_p = fd;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_sock_connect(const hixl_name_t *name, uint64_t deadline_ns,
                                int peer_timeout_ms, int *fd_p)
{
    struct pollfd pfd;
    socklen_t len;
    int fd, rc, err;

    fd = socket(name->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return hixl_error(HIXL_FAILED, "socket: %s", strerror(errno));
    }
    hixl_sock_setup(fd, peer_timeout_ms);
    rc = connect(fd, (const struct sockaddr*)&name->addr, name->addrlen);
    if ((rc != 0) && (errno != EINPROGRESS)) {
        err = errno;
        goto failed;
    }
    while (rc != 0) {
        pfd.fd     = fd;
        pfd.events = POLLOUT;
        rc = poll(&pfd, 1, hixl_ms_left(deadline_ns));
        if (rc < 0) {
            if (errno == EINTR) {
                continue;
            }
            err = errno;
            goto failed;
        }
        if (rc == 0) {
            close(fd);
            return hixl_error(HIXL_TIMEOUT, "connect to %s: no answer within "
                              "the timeout", name->canon);
        }
        len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            goto failed;
        }
        rc = 0;
    }
    *fd_p = fd;
    return HIXL_SUCCESS;

failed:
    close(fd);
    return hixl_error(HIXL_FAILED, "connect to %s: %s%s", name->canon,
                      strerror(err), (err == ECONNREFUSED) ?
                      " (no engine listening there)" : "");
}
