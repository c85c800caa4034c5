/*
 * Peers: one per control connection, in either direction.  An outgoing peer
 * (this engine connected to it) has a UCX endpoint and the remote region
 * table with unpacked rkeys; an accepted peer (it connected to us) receives
 * our region announcements and sends us notifies and layer signals.
 *
 * Lifetime: the engine's peer list holds one reference, every request in
 * flight to the peer holds one.  hixl_peer_close() ends the connection (the
 * peer leaves the list, its endpoint and rkeys are released); the memory goes
 * when the last reference does.
 */
#ifndef HIXL_PEER_H_
#define HIXL_PEER_H_

#include "core/engine.h"
#include "util/range_index.h"

typedef enum hixl_auth_state {
    HIXL_AUTH_NONE,        /* no challenge sent or received (yet) */
    HIXL_AUTH_CHALLENGED,  /* listener: challenge sent, answer awaited;
                              connector: challenge answered */
    HIXL_AUTH_DONE
} hixl_auth_state_t;

typedef enum hixl_peer_state {
    HIXL_PEER_HANDSHAKE,   /* connected, HELLO / table not complete yet */
    HIXL_PEER_READY,
    HIXL_PEER_CLOSED
} hixl_peer_state_t;

typedef struct hixl_layer_source hixl_layer_source_t;

/* What a UCX endpoint's error callback gets as its argument.  UCX may call
 * it even after the endpoint was force-closed and the peer freed, so it
 * lives until the engine (and its worker) is destroyed. */
typedef struct hixl_ep_ctx {
    struct hixl_ep_ctx  *next;
    hixl_engine_t       *engine;
    atomic_int           status;   /* ucs_status_t reported, 0 if none */
    /* coalesced transfer flushes (flush_group.h), under fg_lock */
    pthread_spinlock_t   fg_lock;
    int                  fg_lock_init;
    ucp_ep_h             fg_ep;        /* NULL once the endpoint closes */
    atomic_int           fg_busy;      /* a flush is in flight or due */
    int                  fg_due;       /* the waiters' flush is to issue */
    struct hixl_request *fg_group;     /* what the flush in flight covers */
    struct hixl_request *fg_wait_head; /* posted since: the next group */
    struct hixl_request *fg_wait_tail;
} hixl_ep_ctx_t;

typedef struct hixl_rregion {
    hixl_range_t         range;     /* first: indexed by address */
    uint64_t             id;
    uint32_t             mem_type;
    ucp_rkey_h           rkey;      /* NULL: device memory not NIC-mapped */
    struct hixl_rdev    *dev;       /* device memory: its key (device.h) */
    struct hixl_rregion *next_dead;
} hixl_rregion_t;

/* A hixl_send_notify() call waiting for its NOTIFY_ACK (on its stack). */
typedef struct hixl_notify_waiter {
    uint64_t                   seq;
    int                        done;
    hixl_status_t              status;
    struct hixl_notify_waiter *next;
} hixl_notify_waiter_t;

struct hixl_peer {
    hixl_peer_t          *next;
    hixl_engine_t        *engine;
    atomic_uint           refcount;
    uint64_t              serial;
    int                   outgoing;
    int                   same_host;    /* outgoing: listener on this host */
    hixl_peer_state_t     state;
    /* the application saw this connection up (connect returned SUCCESS, or
     * an accepted handshake completed) and has not disconnected it: if it
     * ends otherwise, its hixl_disconnect() is owed (peer_ended.h) */
    int                   app_owned;
    hixl_status_t         close_status;
    char                  close_reason[256];
    char                  name[HIXL_ENGINE_NAME_MAX + 1];   /* canonical */
    char                  alias[HIXL_ENGINE_NAME_MAX + 1];  /* as connected */
    uint64_t              handshake_deadline;
    /* handshake: what an accepted peer claimed in HELLO, kept until it has
     * authenticated; the nonces of both sides (auth.h) */
    char                  claimed[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t              claimed_instance;
    int                   auth_state;   /* hixl_auth_state_t */
    uint8_t               nonce_local[32];
    uint8_t               nonce_remote[32];
    ctrl_conn_t           conn;
    ucp_ep_h              ep;
    hixl_ep_ctx_t        *ep_ctx;       /* with the endpoint */
    hixl_range_index_t    rtab;
    size_t                rtab_count;
    hixl_rregion_t       *dead;         /* revoked; rkeys freed when idle */
    atomic_uint           inflight;     /* requests in flight to the peer */
    uint64_t              sync_acked;   /* highest SYNC_ACK token seen */
    uint64_t              next_seq;
    hixl_notify_waiter_t *notify_waiters;
    /* layer signals, outgoing side: the listener's bounds, and per stream
     * the newest generation flushed + 1 (0: none), allocated on first use */
    uint32_t              remote_max_streams;
    uint32_t              remote_max_layers;
    uint64_t             *sent_gen;
    pthread_mutex_t       lf_lock;      /* lf_pending (UCX callbacks too) */
    struct hixl_layer_flush *lf_pending; /* layer flushes in flight */
    /* layer signals, accepted side: the table of the engine it is */
    hixl_layer_source_t  *layer_src;
};

/* New peer around a connected socket, in HANDSHAKE, not yet listed. */
hixl_peer_t *hixl_peer_create(hixl_engine_t *engine, int fd, int outgoing);

/* Add to the engine's list and to its poll set (engine->lock held). */
hixl_status_t hixl_peer_add(hixl_engine_t *engine, hixl_peer_t *peer);

void hixl_peer_retain(hixl_peer_t *peer);
void hixl_peer_release(hixl_peer_t *peer);

/* End the connection (engine->lock held): say BYE with the reason, close
 * the endpoint (its transfers in flight end FAILED), fail waiters, leave
 * the list.  Idempotent. */
void hixl_peer_close(hixl_engine_t *engine, hixl_peer_t *peer,
                     hixl_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Close peers whose UCX endpoint reported an error (engine->lock held). */
void hixl_peer_reap_errors(hixl_engine_t *engine);

/* The live peer called remote (canonical name or the spelling it was
 * connected with); outgoing: 1 only outgoing, 0 only accepted, -1 either
 * (outgoing preferred). */
hixl_peer_t *hixl_peer_find(hixl_engine_t *engine, const char *remote,
                            int outgoing);

/* Remote regions (engine->lock held).  add validates what the peer sent
 * and returns FAILED with a reason for a table the peer must be dropped
 * for; del moves the region to the dead list. */
hixl_status_t hixl_peer_region_add(hixl_peer_t *peer, const ctrl_msg_t *msg,
                                   uint32_t max_regions);
hixl_status_t hixl_peer_region_del(hixl_peer_t *peer, uint64_t id,
                                   uint64_t addr);

/* Destroy revoked rkeys once nothing is in flight to the peer. */
void hixl_peer_reap_dead_regions(hixl_peer_t *peer);

/* Free every endpoint context (engine destroy, after the worker is gone). */
void hixl_ep_ctx_cleanup(hixl_engine_t *engine);

/* Create the UCX endpoint from the listener's worker address. */
hixl_status_t hixl_peer_create_ep(hixl_engine_t *engine, hixl_peer_t *peer,
                                  const ctrl_bytes_t *worker_addr);

#endif
