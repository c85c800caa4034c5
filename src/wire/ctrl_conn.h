/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One control connection: a non-blocking TCP socket with a framed receive
 * buffer and a send queue.  Sends never block the caller: what the socket
 * does not take now is queued and written when the progress engine sees the
 * socket writable (EPOLLOUT is armed only while something is queued).
 */
#ifndef HIXL_CTRL_CONN_H_
#define HIXL_CTRL_CONN_H_

#include "wire/ctrl_msg.h"
#include "util/engine_name.h"

#include <pthread.h>

/* Queued bytes beyond which a peer that does not read is given up on. */
#define CTRL_TX_MAX (256u * 1024 * 1024)

typedef struct hixl_conn {
    int             fd;
    int             epfd;      /* epoll set the fd is in, -1 if none */
    uint64_t        ep_data;   /* epoll_event.data.u64 of the fd */
    pthread_mutex_t tx_lock;   /* tx, tx_off, pollout, closed */
    hixl_msg_buf_t      tx;
    size_t          tx_off;    /* bytes of tx already written */
    int             pollout;   /* EPOLLOUT armed */
    int             closed;
    uint8_t        *rx;
    size_t          rx_len;
    size_t          rx_cap;
    /* what may arrive now: a bit per message type (0: any), each no
     * longer than its longest form; checked as soon as a header is in,
     * before its payload is read (a peer that has not proven itself
     * cannot make this side buffer megabytes) */
    uint64_t        rx_types;
} hixl_conn_t;

/* Accept only these message types from now on (a mask of bits
 * 1 << type; 0: every type, at any length up to CTRL_MAX_PAYLOAD). */
void hixl_conn_expect(hixl_conn_t *conn, uint64_t types);

/* Return 0 to go on with the next message, non-zero to stop (the handler
 * found the connection must end; it must not free the connection). */
typedef int (*hixl_msg_handler_t)(void *arg, const hixl_msg_t *msg);

void hixl_conn_init(hixl_conn_t *conn, int fd);

/* Close the socket (if open) and free the buffers. */
void hixl_conn_cleanup(hixl_conn_t *conn);

/* Add the socket to an epoll set for input (and output while queued). */
hixl_status_t hixl_conn_watch(hixl_conn_t *conn, int epfd, uint64_t ep_data);

/* Close the socket (the peer sees EOF); later sends fail. */
void hixl_conn_close(hixl_conn_t *conn);

/* Queue a message and write what the socket takes.  FAILED when closed. */
hixl_status_t hixl_conn_send(hixl_conn_t *conn, const hixl_msg_t *msg);

/* Queue a message without writing it, for a caller that writes several
 * with one hixl_conn_flush: 1 when nothing was queued before it (the
 * caller is the one to flush), 0 when something was (a flush or the
 * EPOLLOUT writer will take it along), or -1 with the error set (FAILED
 * when closed or when the peer does not read). */
int hixl_conn_queue(hixl_conn_t *conn, const hixl_msg_t *msg);

/* Write queued bytes (on EPOLLOUT).  0 on success, -1 with err on error. */
int hixl_conn_flush(hixl_conn_t *conn, char *err, size_t errlen);

/*
 * Read what the socket has and call handler for every complete message.
 * Returns 0 while the connection lives, -1 when it ended: EOF, socket error,
 * a malformed message or a handler that stopped; err says which.
 */
int hixl_conn_receive(hixl_conn_t *conn, hixl_msg_handler_t handler,
                      void *arg, char *err, size_t errlen);

/* Listening socket bound to exactly name's address; *port_p is the port. */
hixl_status_t hixl_sock_listen(const hixl_name_t *name, int *fd_p,
                               uint16_t *port_p);

/* Connect within the deadline; FAILED (refused, unreachable) or TIMEOUT. */
hixl_status_t hixl_sock_connect(const hixl_name_t *name, uint64_t deadline_ns,
                                int peer_timeout_ms, int *fd_p);

/* Socket options every control socket gets (non-blocking, no Nagle,
 * close-on-exec, and a silent peer's bound: keepalive and
 * TCP_USER_TIMEOUT from hixl.PeerTimeoutMs). */
void hixl_sock_setup(int fd, int peer_timeout_ms);

#endif
