/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peers: one per control connection, in either direction, and the table of
 * them.  An outgoing peer (this engine connected to it) has the remote
 * region table with unpacked rkeys and transfers into it; an accepted peer
 * (it connected to us) receives our region announcements and sends us
 * notifies and layer signals.  Both have a UCX endpoint to the other side
 * (core/peer/endpoint.c) with its flush service.
 *
 * Modules above keep their per-peer state behind their own pointer below
 * (core never looks inside) and learn of a peer's life through hooks they
 * register: ready (the handshake completed; may refuse), closing (the
 * connection is about to go: last chance to say why), closed (everything of
 * the connection is released: settle what waited on it) and destroy (the
 * last reference went).
 *
 * Lifetime: the table holds one reference, every request in flight to the
 * peer and every record waiting on it hold one.  hixl_peer_close() ends the
 * connection (the peer leaves the table, its endpoint and rkeys are
 * released); the memory goes when the last reference does.
 *
 * Locking: engine->lock guards the table and every peer's state.
 */
#ifndef HIXL_CORE_PEER_H_
#define HIXL_CORE_PEER_H_

#include "core/peer/ep_err.h"
#include "core/peer/ep_flush.h"
#include "core/peer/rtable.h"
#include "util/log.h"
#include "wire/ctrl_conn.h"

#include <hixl/hixl.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <ucp/api/ucp.h>

typedef struct hixl_engine hixl_engine_t;
typedef struct hixl_peer   hixl_peer_t;

typedef enum hixl_peer_state {
    HIXL_PEER_HANDSHAKE,   /* connected, handshake not complete yet */
    HIXL_PEER_READY,
    HIXL_PEER_CLOSED
} hixl_peer_state_t;


/* How a connection ended, as far as this side can tell: it decides how
 * its UCX endpoint is closed (core/peer/ep_close.h). */
typedef enum hixl_peer_end {
    HIXL_PEER_END_ABRUPT,    /* the peer is gone (its socket closed without
                                a goodbye, an error), or this engine goes:
                                closed at once */
    HIXL_PEER_END_ORDERLY,   /* either application disconnected (or the
                                other side said goodbye): both alive */
    HIXL_PEER_END_CUT        /* no answer for hixl.PeerTimeoutMs: maybe
                                alive behind a partition, its queue blocked */
} hixl_peer_end_t;

/* What a peer is (peer->flags), one bit each. */
enum {
    HIXL_PEER_F_OUTGOING     = 1u << 0,   /* this engine connected to it */
    HIXL_PEER_F_SAME_HOST    = 1u << 1,   /* the other engine is on this host */
    HIXL_PEER_F_EP_PEER_MODE = 1u << 2,   /* its endpoint in UCX's PEER error
                                             mode */
    HIXL_PEER_F_EP_RDMA      = 1u << 3    /* UCX gave its endpoint RDMA lanes */
};

struct hixl_peer {
    hixl_peer_t          *next;
    hixl_engine_t        *engine;
    atomic_uint           refcount;
    uint64_t              serial;
    unsigned              flags;        /* HIXL_PEER_F_* */
    hixl_peer_state_t     state;
    hixl_status_t         close_status;
    hixl_peer_end_t       end;          /* set before hixl_peer_close */
    int                   close_why;    /* 1 + hixl_stats_closed_t when the
                                           closer knows better than `end`
                                           (set before hixl_peer_close) */
    char                  close_reason[HIXL_ERROR_MSG_MAX];
    char                  name[HIXL_ENGINE_NAME_MAX + 1];   /* canonical */
    char                  alias[HIXL_ENGINE_NAME_MAX + 1];  /* as connected */
    uint64_t              remote_instance;  /* accepted: which engine is behind
                                               the name (ctrl/accept.c) */
    uint64_t              conn_id;      /* the listener's id of it */
    struct hixl_chan     *chan;         /* outgoing: its channel */
    hixl_conn_t           conn;
    ucp_ep_h              ep;
    hixl_ep_flush_t      *ep_flush;     /* with the endpoint */
    hixl_ep_err_t        *ep_err;       /* what UCX reported on it */
    pid_t                 cma_pid;      /* outgoing, same host: copies go
                                           straight there (core/peer/cma.h) */
    uint64_t              close_id;     /* closed: its endpoint's closing
                                           (core/peer/ep_close.h), or 0 */
    hixl_rtable_t         rtab;         /* outgoing: the peer's regions */
    atomic_uint           inflight;     /* transfers in flight to it */
    atomic_int            gone;         /* its process is gone, as the
                                           kernel said (hixl_peer_gone) */
    /* per-module state, owned by the module (see the hooks) */
    struct hixl_handshake    *handshake; /* ctrl/: the handshake and what it
                                           settled (ctrl/ctrl.h) */
    struct hixl_notify_peer *notify;    /* ops/notify.c, once READY */
    struct hixl_mem_peer  *mem;         /* ops/memory.c, once READY */
    struct hixl_layer_out *layer_out;   /* ops/: layers flushed to it */
    struct hixl_layer_source *layer_in; /* ops/: its signals to us */
};

static inline int hixl_peer_is(const hixl_peer_t *peer, unsigned flag)
{
    return (peer->flags & flag) != 0;
}

static inline int hixl_peer_outgoing(const hixl_peer_t *peer)
{
    return hixl_peer_is(peer, HIXL_PEER_F_OUTGOING);
}

static inline int hixl_peer_same_host(const hixl_peer_t *peer)
{
    return hixl_peer_is(peer, HIXL_PEER_F_SAME_HOST);
}

static inline void hixl_peer_mark(hixl_peer_t *peer, unsigned flag, int on)
{
    peer->flags = on ? (peer->flags | flag) : (peer->flags & ~flag);
}

typedef struct hixl_peer_hooks {
    const char    *name;
    /* the handshake completed (engine->lock held); an error refuses the
     * connection with that status and the caller's last error */
    hixl_status_t (*ready)(hixl_engine_t *engine, hixl_peer_t *peer);
    /* listener side, after ready: the acceptance is on its way; send what
     * the connector must have before it is ready (the region table) */
    hixl_status_t (*accepted)(hixl_engine_t *engine, hixl_peer_t *peer);
    /* about to close: the control connection still works */
    void          (*closing)(hixl_engine_t *engine, hixl_peer_t *peer);
    /* closed: connection, endpoint and rkeys are gone */
    void          (*closed)(hixl_engine_t *engine, hixl_peer_t *peer);
    /* the last reference went (no lock held) */
    void          (*destroy)(hixl_peer_t *peer);
} hixl_peer_hooks_t;

typedef struct hixl_peer_table {
    hixl_peer_t             *head;
    unsigned                 count;
    uint64_t                 next_serial;
    const hixl_peer_hooks_t **hooks;    /* grows (util/array.h) */
    size_t                   hooks_cap;
    unsigned                 nhooks;
    /* injected by ctrl/: AutoConnect, and why a connection ended */
    hixl_status_t          (*connect)(hixl_engine_t *engine,
                                      const char *remote);
    const char            *(*ended_reason)(hixl_engine_t *engine,
                                           const char *remote, int outgoing);
} hixl_peer_table_t;

/* Register hooks (engine set-up, before any peer exists: the table may
 * move); called in registration order on ready and accepted, in reverse
 * order on closing, closed and destroy.  RESOURCE_EXHAUSTED, with the
 * last error set, when the table cannot grow: the caller's set-up fails. */
hixl_status_t hixl_peer_hooks_add(hixl_engine_t *engine,
                                  const hixl_peer_hooks_t *hooks);

/* Forget every hook (engine teardown, after the last peer went). */
void hixl_peer_hooks_cleanup(hixl_engine_t *engine);

/* New peer around a connected socket, in HANDSHAKE, listed and watched
 * (engine->lock held); NULL with the caller's last error set, and the
 * socket still the caller's. */
hixl_peer_t *hixl_peer_create(hixl_engine_t *engine, int fd, int outgoing);

/* The handshake completed: run the ready hooks and go READY.  On a
 * refusal the peer stays in HANDSHAKE and the status is returned. */
hixl_status_t hixl_peer_set_ready(hixl_engine_t *engine, hixl_peer_t *peer);

/* Listener side, once its acceptance is sent: run the accepted hooks. */
hixl_status_t hixl_peer_accepted(hixl_engine_t *engine, hixl_peer_t *peer);

void hixl_peer_retain(hixl_peer_t *peer);
void hixl_peer_release(hixl_peer_t *peer);

/* The kernel said the peer's process is gone (a same-host copy met
 * ESRCH): from any thread, no lock needed.  Transfers to it are refused
 * as NOT_CONNECTED from now on, and the next periodic pass closes it
 * (abruptly: nothing is left to say goodbye to). */
void hixl_peer_gone(hixl_peer_t *peer);

/* How a connection that both sides may still hold ends when this side
 * ends it: ORDERLY, unless its process is known gone. */
/* Why an established connection ended, as far as this side can tell:
 * peer->close_why where it was said, else as `gone` and `end` say.  What
 * the metrics count and what hixl.NotifyPeerEnded tells. */
hixl_stats_closed_t hixl_peer_closed_why(const hixl_peer_t *peer);

/* Say why peer closes (before hixl_peer_close). */
static inline void hixl_peer_close_why(hixl_peer_t *peer,
                                       hixl_stats_closed_t why)
{
    peer->close_why = 1 + (int)why;
}

static inline hixl_peer_end_t hixl_peer_end_by_us(const hixl_peer_t *peer)
{
    return atomic_load(&peer->gone) ? HIXL_PEER_END_ABRUPT :
           HIXL_PEER_END_ORDERLY;
}

/* End the connection (engine->lock held): closing hooks, the control
 * socket, the endpoint (its waiters end with UCS_ERR_CANCELED), the rkeys,
 * closed hooks, out of the table.  Idempotent.  Counted (core/worker/
 * metrics.h): an established connection as closed, for peer->close_why or
 * else as `end` and `gone` say; an outgoing one in its handshake as a
 * failed connect. */
void hixl_peer_close(hixl_engine_t *engine, hixl_peer_t *peer,
                     hixl_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The live peer called remote (canonical name or the spelling it was
 * connected with); outgoing: 1 only outgoing, 0 only accepted, -1 either
 * (outgoing preferred). */
hixl_peer_t *hixl_peer_find(hixl_engine_t *engine, const char *remote,
                            int outgoing);

/* The peer with this serial, or NULL (socket events). */
hixl_peer_t *hixl_peer_by_serial(hixl_engine_t *engine, uint64_t serial);

/* The READY peer a call names (engine->lock held): outgoing for transfers,
 * either direction otherwise.  Connects first when AutoConnect is on and
 * want_outgoing is set (the lock is released meanwhile).  NOT_CONNECTED
 * with a message saying why when there is none. */
hixl_status_t hixl_peer_lookup(hixl_engine_t *engine, const char *remote,
                               int want_outgoing, hixl_peer_t **peer_p);

/* Register the peer table's progress work (engine set-up, before any
 * other periodic callback): closing peers whose UCX endpoint reported an
 * error (periodic), and issuing the endpoint flushes their completions
 * left due (core/worker/progress.h); both under engine->lock. */
hixl_status_t hixl_peers_init(hixl_engine_t *engine);

/* ---- core/peer/endpoint.c ---- */

/* Create the peer's UCX endpoint to the worker address the other side
 * sent, in the error mode hixl.ErrorMode asks for, with its flush
 * service. */
hixl_status_t hixl_peer_ep_create(hixl_engine_t *engine, hixl_peer_t *peer,
                                  const void *worker_addr, size_t len);

/* Close it: waiters end with status; the endpoint is closed
 * (core/peer/ep_close.h). */
void hixl_peer_ep_close(hixl_engine_t *engine, hixl_peer_t *peer,
                        ucs_status_t status);

/* The error UCX reported on the peer's endpoint, or UCS_OK. */
ucs_status_t hixl_peer_ep_error(const hixl_peer_t *peer);

#endif
