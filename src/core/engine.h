/*
 * The engine object and the internal interfaces between its modules.
 *
 * Locking (the order is engine->lock, then UCX's worker lock):
 *  - engine->lock guards the peer list, the region table, the notify queue,
 *    layer-signal tables and every peer's state.  API calls take it once
 *    per call (never per descriptor); control messages are handled under it.
 *  - UCX callbacks (completion of a flush, peer error) run inside
 *    ucp_worker_progress() with UCX's lock held and therefore never take
 *    engine->lock: they touch only atomics, the request, and a peer's control
 *    connection (which has its own send lock), and wake waiters through
 *    engine->done_lock / done_cond.
 */
#ifndef HIXL_ENGINE_H_
#define HIXL_ENGINE_H_

#include "wire/ctrl_conn.h"
#include "util/engine_name.h"
#include "core/mem_table.h"
#include "util/options.h"
#include "core/request.h"

#include <hixl/hixl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <ucp/api/ucp.h>

/* What an epoll event belongs to. */
typedef enum hixl_poll_kind {
    HIXL_POLL_LISTEN,
    HIXL_POLL_WORKER,
    HIXL_POLL_PEER
} hixl_poll_kind_t;

/* epoll data: the kind in the top byte, a peer's serial below.  A serial,
 * not a pointer, so an event for a peer closed meanwhile finds nothing. */
#define HIXL_POLL_DATA(_kind, _serial) \
    (((uint64_t)(_kind) << 56) | ((_serial) & ((1ull << 56) - 1)))

typedef struct hixl_notify_node hixl_notify_node_t;
typedef struct hixl_layer_source hixl_layer_source_t;
typedef struct hixl_peer hixl_peer_t;
typedef struct hixl_ended hixl_ended_t;

struct hixl_engine {
    uint16_t           serial;        /* tags handles (handle.h) */
    uint64_t           instance;      /* random: tells restarts apart */
    char               host_id[64];   /* same value <=> same host */
    hixl_name_t        name;
    int                listening;
    hixl_opts_t        opts;

    ucp_context_h      ucp_context;
    ucp_worker_h       ucp_worker;
    ucp_address_t     *worker_addr;
    size_t             worker_addr_len;

    pthread_mutex_t    lock;
    pthread_cond_t     cond;          /* control state changed */

    pthread_mutex_t    done_lock;     /* request completions */
    pthread_cond_t     done_cond;
    atomic_uint        done_waiters;

    int                listen_fd;
    int                epfd;
    int                worker_efd;    /* -1: UCX gave no event fd */
    pthread_mutex_t    poll_lock;     /* one thread reads the sockets */
    unsigned           poll_count;
    uint64_t           next_reap_ns;  /* next handshake-deadline check */

    pthread_t          progress_thread;
    int                progress_running;
    atomic_int         progress_stop;
    atomic_int         progress_sleeping;
    atomic_uint        busy;          /* work in flight: keep polling */
    atomic_int         peer_errors;   /* a UCX endpoint reported an error */
    atomic_uint        cancelled;     /* transfers settled at peer close */

    hixl_mem_table_t   mem;
    hixl_peer_t       *peers;
    uint64_t           next_peer_serial;
    uint64_t           next_token;
    hixl_req_pool_t    reqs;
    atomic_int         fg_wanted;     /* a flush group is due (flush_group.h) */

    hixl_layer_source_t *layer_sources;
    /* connections that ended: why, and which hixl_disconnect() is owed
     * (peer_ended.h) */
    struct hixl_ended  *ended;
    unsigned            ended_count;
    struct hixl_ep_ctx  *ep_ctxs;     /* see hixl_ep_ctx_t */
    struct hixl_dev     *dev;         /* device memory (device.h) */

    hixl_notify_node_t *notify_head;
    hixl_notify_node_t *notify_tail;
    uint32_t            notify_count;
};

/* ---- progress.c ---- */
hixl_status_t hixl_progress_start(hixl_engine_t *engine);
void hixl_progress_stop(hixl_engine_t *engine);
/* Progress UCX, device copies and the control sockets once; returns events
 * handled.  Never call it with engine->lock held: it takes the lock (device
 * progress, control events). */
unsigned hixl_progress(hixl_engine_t *engine);
/* The same for a loop that waits for control traffic (notifies, layer
 * signals, handshakes): it looks at the sockets eight times as often. */
unsigned hixl_progress_for_control(hixl_engine_t *engine);
/* Without a progress thread: read the control connections now (before a
 * post, so a revocation or a close already sent to us takes effect). */
void hixl_progress_control(hixl_engine_t *engine);
/* Work was posted: make sure a sleeping progress thread wakes for it. */
void hixl_progress_kick(hixl_engine_t *engine);
/* Wait (engine->lock held) until pred(arg) or the deadline; progresses
 * when there is no progress thread.  Returns pred's last value. */
int hixl_engine_wait(hixl_engine_t *engine, uint64_t deadline_ns,
                     int (*pred)(void *arg), void *arg);

/* ---- ctrl_dispatch.c ---- */
/* Socket events of a peer's control connection (engine->lock held). */
void hixl_ctrl_event(hixl_engine_t *engine, hixl_peer_t *peer,
                     uint32_t events);

/* ---- connect.c ---- */
hixl_status_t hixl_connect_locked(hixl_engine_t *engine, const char *remote,
                                  int32_t timeout_ms);
/* Find the peer a call names: outgoing (for transfers) or any direction.
 * Connects first when AutoConnect is on and want_outgoing is set.
 * Returns NOT_CONNECTED with a message when there is none. */
hixl_status_t hixl_peer_lookup(hixl_engine_t *engine, const char *remote,
                               int want_outgoing, hixl_peer_t **peer_p);
void hixl_accept(hixl_engine_t *engine);
/* Handshake messages (engine->lock held); non-zero: the peer was closed. */
int hixl_handshake_hello(hixl_engine_t *engine, hixl_peer_t *peer,
                         const ctrl_msg_t *msg);
int hixl_handshake_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                       const ctrl_msg_t *msg);
int hixl_handshake_auth(hixl_engine_t *engine, hixl_peer_t *peer,
                        const ctrl_msg_t *msg);

/* ---- notify.c ---- */
/* Queue a received notify; returns the status the sender is told. */
hixl_status_t hixl_notify_enqueue(hixl_engine_t *engine, const char *remote,
                                  const ctrl_msg_t *msg);
void hixl_notify_queue_cleanup(hixl_engine_t *engine);

/* ---- layer.c ---- */
/* A LAYER message from an accepted peer (engine->lock held); non-zero when
 * the peer was closed for it. */
int hixl_layer_signal_recv(hixl_engine_t *engine, hixl_peer_t *peer,
                           const ctrl_msg_t *msg);
/* An accepted peer completed its handshake / closed (engine->lock held). */
hixl_status_t hixl_layer_peer_ready(hixl_engine_t *engine, hixl_peer_t *peer,
                                    uint64_t instance);
void hixl_layer_peer_closed(hixl_engine_t *engine, hixl_peer_t *peer);
/* Settle the peer's layer flushes in flight (no signal will be sent). */
void hixl_layer_flushes_cancel(hixl_engine_t *engine, hixl_peer_t *peer);
void hixl_layer_sources_cleanup(hixl_engine_t *engine);

/* ---- memory.c ---- */
void hixl_mem_cleanup(hixl_engine_t *engine);
/* Send every local region to a peer (handshake and re-announce). */
hixl_status_t hixl_mem_announce(hixl_engine_t *engine, hixl_peer_t *peer);

#endif
