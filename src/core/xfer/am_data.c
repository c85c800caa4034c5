/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library's WRITE/READ data protocol (see am_data.h).
 *
 * Threads: posting runs under engine->lock, and WRITEs that waited for
 * room in their channel's window are posted from a progress callback;
 * everything else runs in UCX callbacks (inside ucp_worker_progress of the
 * in or out worker), which never take engine->lock.  They take engine->serve_lock for reading while
 * they check a connection, a channel or a region and while they use an
 * endpoint that a close could otherwise free; closes and region changes
 * take it for writing and call no UCX function while they hold it.
 */
#include "config.h"
#include "core/xfer/am_data.h"
#include "core/peer/ep_close.h"
#include "core/engine.h"
#include "core/peer/inbound.h"
#include "util/copy.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A WRITE or READ_DATA message carries at most this much: with its
 * headers and seal it fits one of the 64 KiB segments the library gives
 * UCX's tcp (core/engine.c), so the receiver's UCX hands the handler its
 * receive buffer instead of reassembling fragments into a buffer of its
 * own first (a malloc and a copy per message). */
#define HIXL_AM_CHUNK     (60 * 1024)
/* WRITE data in UCX's hands at most, per channel: enough to keep a tcp
 * connection busy (tens of milliseconds of data), little enough that a
 * peer that cannot be reached does not hold many callers' transfers in
 * a queue that will only fail (ep_close.h). */
#define HIXL_AM_WINDOW    (16u * 1024 * 1024)

/* A WRITE waiting for room in its channel's window (counted in the
 * channel's slot already, so the flush waits for it; dropped when the
 * channel closes). */
struct hixl_am_wait {
    hixl_am_wait_t      *next;
    hixl_request_t      *req;
    hixl_am_hdr_t        hdr;
    const void          *data;    /* the caller's: read when it is sent */
};

/* The WRITEs waiting for room: channels with WRITEs waiting, under a
 * spinlock of its own (never held across anything else; chan->am_next
 * links). */
typedef struct hixl_am_data {
    pthread_spinlock_t lock;
    hixl_chan_t       *waiting;
    atomic_uint        nwaiting;
} hixl_am_data_t;

/* REPLY: the target checks that it arrives on the connection's endpoint */
#define HIXL_AM_DATA_FLAGS (UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER)

/* A WRITE is out of UCX's hands: it no longer counts in its channel's
 * window (hdr->chan: the channel's id when it was sent). */
static void hixl_am_write_done(void *arg, const hixl_am_hdr_t *hdr)
{
    hixl_chan_t *chan = arg;

    /* a channel stopped since has a new window, or none */
    if (chan->id == hdr->chan) {
        atomic_fetch_sub(&chan->am_window, (long)hdr->len);
    }
}

/* The guard of a WRITE's data (core/am/am.h): the caller's buffer may be
 * read while the transfer's channel is open, which it is until just
 * before the transfer is reported ended (hixl_chan_stop).  A send posted
 * from hixl_am_progress is packed with serve_lock already held for
 * reading; taking it again for reading does not wait for a writer with
 * the default (reader-preferring) lock glibc and musl give. */
static int hixl_am_write_begin(hixl_engine_t *engine, void *arg,
                               const hixl_am_hdr_t *hdr)
{
    return hixl_chan_copy_begin(engine, arg, hdr->chan);
}

static void hixl_am_write_end(void *arg)
{
    hixl_chan_copy_end(arg);
}

/*
 * Send a WRITE straight from the caller's buffer, which UCX packs part by
 * part as the socket takes them, under the guard above: a transfer that
 * ends (its connection closed) lets go of its buffer at once although its
 * endpoint may keep the send until the network heals (ep_close.h); what
 * is packed after that is zeros under a broken seal, and the target drops
 * it whole.  UCX's status: UCS_OK once posted.
 */
static ucs_status_t hixl_am_post_write(hixl_engine_t *engine,
                                       hixl_chan_t *chan,
                                       const hixl_am_hdr_t *hdr,
                                       const void *data)
{
    const hixl_am_guard_t guard = {hixl_am_write_begin, hixl_am_write_end,
                                   chan};

    /* the WRITE counts in the window until its send ends, whatever ends
     * it (hixl_am_write_done runs in every case) */
    atomic_fetch_add(&chan->am_window, (long)hdr->len);
    return hixl_am_send(engine, chan->ep, HIXL_AM_WRITE, hdr, data, hdr->len,
                        HIXL_AM_DATA_FLAGS, &guard, hixl_am_write_done, chan);
}

/* Whether a WRITE of len bytes may go now on chan: its window has room and
 * none of its earlier ones waits (they go in order). */
static int hixl_am_window_open(const hixl_chan_t *chan, size_t len)
{
    return (chan->am_wait_head == NULL) && (chan->am_draining == 0) &&
           (atomic_load(&chan->am_window) + (long)len <= HIXL_AM_WINDOW);
}

/* Queue a WRITE on chan until its window has room (pool lock held). */
static ucs_status_t hixl_am_wait(hixl_am_data_t *pool, hixl_chan_t *chan,
                                 hixl_request_t *req, const hixl_am_hdr_t *hdr,
                                 const void *data)
{
    hixl_am_wait_t *w;

    hixl_assert((req != NULL) && (hdr->len > 0) && (data != NULL));
    /* a channel is listed exactly while it has WRITEs waiting */
    hixl_assert((chan->am_wait_head == NULL) == (chan->am_wait_tail == NULL));
    w = malloc(sizeof(*w));
    if (w == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    w->next = NULL;
    w->req  = req;
    w->hdr  = *hdr;
    w->data = data;
    if (chan->am_wait_tail != NULL) {
        chan->am_wait_tail->next = w;
    } else {
        chan->am_wait_head = w;
        chan->am_next      = pool->waiting;   /* first one: list it */
        pool->waiting      = chan;
        atomic_fetch_add(&pool->nwaiting, 1);
    }
    chan->am_wait_tail = w;
    return UCS_OK;
}

/* A WRITE: sent now if the window lets it, else queued. */
static ucs_status_t hixl_am_send_write(hixl_engine_t *engine,
                                       hixl_chan_t *chan, hixl_request_t *req,
                                       const hixl_am_hdr_t *hdr,
                                       const void *data)
{
    hixl_am_data_t *pool = engine->am_data;
    ucs_status_t ustatus;

    pthread_spin_lock(&pool->lock);
    if (!hixl_am_window_open(chan, hdr->len)) {
        ustatus = hixl_am_wait(pool, chan, req, hdr, data);
        pthread_spin_unlock(&pool->lock);
        return ustatus;
    }
    pthread_spin_unlock(&pool->lock);
    return hixl_am_post_write(engine, chan, hdr, data);
}

/* A channel closed (channel.h's close hook, serve_lock held for writing):
 * its WRITEs still waiting for room are dropped (their transfers ended
 * with it), and the copies UCX still holds no longer count. */
static void hixl_am_chan_closed(hixl_engine_t *engine, hixl_chan_t *chan)
{
    hixl_am_data_t *pool = engine->am_data;
    hixl_am_wait_t *w, *next;
    hixl_chan_t **pp;

    pthread_spin_lock(&pool->lock);
    w = chan->am_wait_head;
    if (w != NULL) {
        for (pp = &pool->waiting; *pp != chan; pp = &(*pp)->am_next) {
            hixl_assert(*pp != NULL);   /* a channel with WRITEs is listed */
        }
        *pp = chan->am_next;
        hixl_assert(atomic_load(&pool->nwaiting) >= 1);
        atomic_fetch_sub(&pool->nwaiting, 1);
    }
    chan->am_wait_head = chan->am_wait_tail = NULL;
    chan->am_draining  = 0;
    atomic_store(&chan->am_window, 0);
    pthread_spin_unlock(&pool->lock);
    for (; w != NULL; w = next) {   /* their transfers ended with it */
        next = w->next;
        free(w);
    }
}

/* The WRITEs of waiting channels whose windows have room now, taken off
 * their queues (pool lock held), in order, each with its channel. */
static hixl_am_wait_t *hixl_am_take_ready(hixl_am_data_t *pool,
                                          hixl_chan_t **chans, size_t max,
                                          size_t *count)
{
    hixl_am_wait_t *out = NULL, **tail = &out, *w;
    hixl_chan_t **pp, *chan;
    long room;

    *count = 0;
    for (pp = &pool->waiting; ((chan = *pp) != NULL) && (*count < max);) {
        room = HIXL_AM_WINDOW - atomic_load(&chan->am_window);
        hixl_assert(chan->am_wait_head != NULL);   /* listed: it waits */
        while (((w = chan->am_wait_head) != NULL) &&
               ((long)w->hdr.len <= room) && (*count < max)) {
            room              -= (long)w->hdr.len;
            chan->am_wait_head = w->next;
            w->next            = NULL;
            *tail              = w;
            tail               = &w->next;
            chans[(*count)++]  = chan;
            chan->am_draining++;   /* later WRITEs wait for these */
        }
        if (chan->am_wait_head == NULL) {
            chan->am_wait_tail = NULL;
            *pp = chan->am_next;
            hixl_assert(atomic_load(&pool->nwaiting) >= 1);
            atomic_fetch_sub(&pool->nwaiting, 1);
        } else {
            pp = &chan->am_next;
        }
    }
    return out;
}

#define HIXL_AM_BATCH 64

/* Send waiting WRITEs whose channel's window has room (a progress
 * callback). */
static unsigned hixl_am_progress(hixl_engine_t *engine)
{
    hixl_am_data_t *pool = engine->am_data;
    hixl_chan_t *chans[HIXL_AM_BATCH];
    hixl_am_wait_t *w, *next;
    ucs_status_t ustatus;
    size_t i, n;

    if (atomic_load(&pool->nwaiting) == 0) {
        return 0;
    }
    /* serve_lock first: a close takes it for writing before the pool's
     * lock (hixl_am_chan_closed), so a channel taken here stays open
     * until its WRITEs are posted */
    pthread_rwlock_rdlock(&engine->serve_lock);
    pthread_spin_lock(&pool->lock);
    w = hixl_am_take_ready(pool, chans, HIXL_AM_BATCH, &n);
    pthread_spin_unlock(&pool->lock);
    for (i = 0; w != NULL; w = next, ++i) {
        hixl_assert(i < n);   /* a channel taken for every WRITE */
        next    = w->next;
        ustatus = hixl_am_post_write(engine, chans[i], &w->hdr, w->data);
        pthread_spin_lock(&pool->lock);
        hixl_assert(chans[i]->am_draining > 0);   /* taken above */
        chans[i]->am_draining--;
        pthread_spin_unlock(&pool->lock);
        if (ustatus != UCS_OK) {
            hixl_req_fail(w->req, HIXL_FAILED, "a WRITE of %" PRIu64
                          " bytes to 0x%" PRIx64 " was not sent: %s",
                          w->hdr.len, w->hdr.addr,
                          ucs_status_string(ustatus));
            hixl_chan_answered(chans[i], w->hdr.flags & HIXL_AM_FLAG_SLOT,
                               HIXL_ANSWER_ON_CONTROL);
        }
        free(w);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return (unsigned)n;
}

/* A WRITE or READ on the channel (more: HIXL_AM_FLAG_MORE or 0); the slot
 * is counted before the send, so an answer can never come first. */
static ucs_status_t hixl_am_request(hixl_engine_t *engine, hixl_chan_t *chan,
                                    hixl_request_t *req, unsigned id,
                                    uint64_t remote, uint64_t local,
                                    const void *data, size_t len,
                                    unsigned more)
{
    hixl_answer_via_t via = (id == HIXL_AM_WRITE) ? HIXL_ANSWER_ON_CONTROL :
                            HIXL_ANSWER_ELSEWHERE;   /* READ_DATA: UCX */
    ucs_status_t ustatus;
    hixl_am_hdr_t hdr;
    unsigned slot;

    hixl_assert((len > 0) && (len <= HIXL_AM_CHUNK));
    hixl_assert((id != HIXL_AM_WRITE) || (data != NULL));
    hixl_assert_locked(&engine->lock);   /* posts are the caller's */
    hixl_am_hdr_init(&hdr);
    slot       = hixl_chan_post(chan, via);
    hdr.flags  = (uint16_t)(slot | more);
    hdr.conn   = chan->conn;
    hdr.chan   = chan->id;
    hdr.cookie = req->handle;
    hdr.addr   = remote;
    hdr.len    = len;
    hdr.local  = local;
    if (id == HIXL_AM_WRITE) {
        ustatus = hixl_am_send_write(engine, chan, req, &hdr, data);
    } else {
        ustatus = hixl_am_send(engine, chan->ep, id, &hdr, NULL, 0,
                               HIXL_AM_DATA_FLAGS, NULL, NULL, NULL);
    }
    if (ustatus != UCS_OK) {
        hixl_chan_answered(chan, slot, via);   /* no answer will come */
    }
    return ustatus;
}

/*
 * Large transfers go as several messages of at most HIXL_AM_CHUNK bytes,
 * each sent eagerly and answered on its own.  UCX's rendezvous would move
 * them with fewer copies (one CMA copy on one host), but UCX 1.13 does not
 * survive its peer going away in the middle of one: a send whose receiver
 * died is never called back or freed (tcp and shared memory alike), and a
 * receive whose sender closed its endpoint is left on UCX's own endpoint,
 * where worker destroy asserts on it.  A WRITE's data is read from the
 * caller's buffer only while its connection is open (hixl_am_post_write);
 * at most HIXL_AM_WINDOW bytes of WRITEs in UCX's hands per channel.
 */
static ucs_status_t hixl_am_chunks(hixl_engine_t *engine, hixl_chan_t *chan,
                                   hixl_request_t *req, unsigned id,
                                   uint64_t remote, uintptr_t local,
                                   size_t len)
{
    int write            = (id == HIXL_AM_WRITE);
    ucs_status_t ustatus = UCS_OK;
    unsigned more;
    size_t off, n;

    for (off = 0; (off < len) && (ustatus == UCS_OK); off += n) {
        n       = (len - off < HIXL_AM_CHUNK) ? len - off : HIXL_AM_CHUNK;
        /* the answer of a WRITE but the descriptor's last may be held
         * (core/peer/inbound.h) */
        more    = (write && (off + n < len)) ? HIXL_AM_FLAG_MORE : 0;
        ustatus = hixl_am_request(engine, chan, req, id, remote + off,
                                  local + off, write ?
                                  (const void*)(local + off) : NULL, n,
                                  more);
    }
    return ustatus;
}

ucs_status_t hixl_am_write(hixl_engine_t *engine, hixl_chan_t *chan,
                           hixl_request_t *req, const void *local,
                           uint64_t remote, size_t len)
{
    return hixl_am_chunks(engine, chan, req, HIXL_AM_WRITE, remote,
                          (uintptr_t)local, len);
}

ucs_status_t hixl_am_read(hixl_engine_t *engine, hixl_chan_t *chan,
                          hixl_request_t *req, void *local, uint64_t remote,
                          size_t len)
{
    return hixl_am_chunks(engine, chan, req, HIXL_AM_READ, remote,
                          (uintptr_t)local, len);
}

/* ---- the target -------------------------------------------------------------- */

/* The registered host region holding [addr, +len), or NULL (serve_lock
 * held). */
static hixl_region_t *hixl_am_region(hixl_engine_t *engine, uint64_t addr,
                                     uint64_t len)
{
    hixl_region_t *region = (hixl_region_t*)hixl_range_lookup(
            &engine->mem.by_addr, addr, len);

    return ((region != NULL) && (region->type == HIXL_MEM_HOST)) ? region :
           NULL;
}

/* Answer h (WRITE_ACK or READ_DATA without data) on reply_ep. */
static void hixl_am_answer(hixl_engine_t *engine, ucp_ep_h reply_ep,
                           unsigned id, const hixl_am_hdr_t *h,
                           hixl_status_t status)
{
    hixl_am_hdr_t a = *h;

    a.status = (int32_t)status;
    hixl_am_send_small(engine, reply_ep, id, &a, NULL, 0, 0, NULL, NULL);
}

/*
 * A WRITE or READ that no live connection owns (serve_lock held, released here)
 * is dropped.  If no live connection has its endpoint either, the endpoint is
 * left from a connection that ended while its connector could not tell us (a
 * partition that healed, its queued messages arriving now): close it while UCX
 * vouches for it (core/peer/ep_close.h), or it and its socket stay until the
 * engine goes.
 */
static void hixl_am_refuse(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                           ucp_ep_h reply_ep)
{
    int orphan = hixl_inbound_orphan(engine, reply_ep);

    pthread_rwlock_unlock(&engine->serve_lock);
    if (orphan) {
        hixl_ep_close_reply_ep(engine, reply_ep, h->conn,
                               "a message of a "
                               "connection that ended");
    }
}

/* WRITE (checked by the dispatcher: ours, eager, with its reply_ep, its
 * seal intact or data NULL) */
static ucs_status_t hixl_am_on_write(hixl_engine_t *engine,
                                     const hixl_am_hdr_t *h, void *data,
                                     size_t length, ucp_ep_h reply_ep)
{
    hixl_region_t *region;
    hixl_status_t status;

    hixl_progress_data_seen(engine);   /* the next one is near */
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (!hixl_inbound_check(engine, h->conn, reply_ep)) {
        /* a connection that ended, or a stranger: nothing lands */
        hixl_log_debug("dropping a WRITE of %" PRIu64 " bytes: no live "
                       "connection %" PRIx64 " on its endpoint", h->len,
                       h->conn);
        hixl_am_refuse(engine, h, reply_ep);
        return UCS_OK;
    }
    if (data == NULL) {
        /* its seal is broken: its connector's connection ended while it
         * was going out, and nothing of it may land */
        hixl_log_debug("dropping a WRITE of %" PRIu64 " bytes: its sender "
                       "stopped sending it", h->len);
        pthread_rwlock_unlock(&engine->serve_lock);
        hixl_inbound_ack(engine, h->conn, h, HIXL_FAILED);
        return UCS_OK;
    }
    region = (h->len == length) ? hixl_am_region(engine, h->addr, h->len) :
             NULL;
    if (region == NULL) {
        status = HIXL_PARAM_INVALID;
    } else {
        /* under serve_lock: deregistration waits for it */
        hixl_copy_streaming((void*)(uintptr_t)h->addr, data, length);
        status = HIXL_SUCCESS;
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    hixl_inbound_ack(engine, h->conn, h, status);
    return UCS_OK;
}

static void hixl_am_read_sent(void *arg, const hixl_am_hdr_t *hdr)
{
    unsigned before = atomic_fetch_sub(&((hixl_region_t*)arg)->am_busy, 1);

    hixl_assert(before >= 1);   /* taken when its READ_DATA was posted */
    (void)before;
}

/* READ (checked by the dispatcher: ours, with its reply_ep) */
static ucs_status_t hixl_am_on_read(hixl_engine_t *engine,
                                    const hixl_am_hdr_t *h, void *data,
                                    size_t length, ucp_ep_h reply_ep)
{
    hixl_region_t *region;
    hixl_am_hdr_t a;

    hixl_progress_data_seen(engine);
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (!hixl_inbound_check(engine, h->conn, reply_ep)) {
        hixl_am_refuse(engine, h, reply_ep);
        return UCS_OK;
    }
    region = hixl_am_region(engine, h->addr, h->len);
    a      = *h;
    if (region == NULL) {
        hixl_am_answer(engine, reply_ep, HIXL_AM_READ_DATA, h,
                       HIXL_PARAM_INVALID);
    } else {
        /* the region stays until the data is out (deregistration waits) */
        atomic_fetch_add(&region->am_busy, 1);
        a.status = HIXL_SUCCESS;
        hixl_am_send_small(engine, reply_ep, HIXL_AM_READ_DATA, &a,
                           (const void*)(uintptr_t)h->addr, h->len,
                           UCP_AM_SEND_FLAG_EAGER, hixl_am_read_sent, region);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return UCS_OK;
}

/* ---- the initiator's side of the answers -------------------------------------- */

/* Record a refusal in the request it belongs to. */
static void hixl_am_refused(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                            const char *what)
{
    hixl_request_t *req = hixl_req_lookup(&engine->reqs, h->cookie);

    if (req != NULL) {
        hixl_req_fail(req, (h->status == HIXL_PARAM_INVALID) ?
                      HIXL_FAILED : (hixl_status_t)h->status,
                      "%s of [0x%" PRIx64 ", +%" PRIu64 ") refused by %s: %s",
                      what, h->addr, h->len, req->peer->name,
                      (h->status == HIXL_PARAM_INVALID) ?
                      "not inside a region it has registered (revoked?)" :
                      hixl_strerror((hixl_status_t)h->status));
    }
}

void hixl_am_acked(hixl_engine_t *engine, const hixl_am_hdr_t *h)
{
    hixl_chan_t *chan;

    pthread_rwlock_rdlock(&engine->serve_lock);
    chan = hixl_chan_lookup(engine, h->chan);
    if (chan != NULL) {
        if (h->status != HIXL_SUCCESS) {
            hixl_am_refused(engine, h, "WRITE");
        }
        hixl_chan_answered(chan, h->flags & HIXL_AM_FLAG_SLOT,
                           HIXL_ANSWER_ON_CONTROL);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
}

/* READ_DATA into its local range (serve_lock held), if that is still a
 * registered region of ours and the request still waits for it. */
static void hixl_am_read_into(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                              const void *data, size_t length)
{
    hixl_region_t *region;

    region = (length == h->len) ? hixl_am_region(engine, h->local, h->len) :
             NULL;
    if ((region != NULL) &&
        (hixl_req_lookup(&engine->reqs, h->cookie) != NULL)) {
        hixl_copy_streaming((void*)(uintptr_t)h->local, data, length);
    }
}

/* READ_DATA (checked by the dispatcher: ours, eager) */
static ucs_status_t hixl_am_on_read_data(hixl_engine_t *engine,
                                         const hixl_am_hdr_t *h, void *data,
                                         size_t length, ucp_ep_h reply_ep)
{
    hixl_chan_t *chan;

    pthread_rwlock_rdlock(&engine->serve_lock);
    chan = hixl_chan_lookup(engine, h->chan);
    if (chan != NULL) {
        if (h->status != HIXL_SUCCESS) {
            hixl_am_refused(engine, h, "READ");
        } else {
            hixl_am_read_into(engine, h, data, length);
        }
        hixl_chan_answered(chan, h->flags & HIXL_AM_FLAG_SLOT,
                           HIXL_ANSWER_ELSEWHERE);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return UCS_OK;
}

/* ---- set-up ------------------------------------------------------------------ */

hixl_status_t hixl_am_data_init(hixl_engine_t *engine)
{
    hixl_status_t status;

    engine->am_data = calloc(1, sizeof(*engine->am_data));
    if (engine->am_data == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    pthread_spin_init(&engine->am_data->lock, PTHREAD_PROCESS_PRIVATE);
    hixl_chan_on_close(engine, hixl_am_chan_closed);
    status = hixl_progress_add(engine, hixl_am_progress);
    if (status == HIXL_SUCCESS) {
        status = hixl_am_set_handler(engine, engine->ucp_worker,
                                     HIXL_AM_READ_DATA, HIXL_AM_RECV_EAGER,
                                     hixl_am_on_read_data);
    }
    if ((status == HIXL_SUCCESS) && (engine->ucp_worker_in != NULL)) {
        status = hixl_am_set_handler(engine, engine->ucp_worker_in,
                                     HIXL_AM_WRITE, HIXL_AM_RECV_REPLY_EP |
                                     HIXL_AM_RECV_EAGER | HIXL_AM_RECV_SEALED,
                                     hixl_am_on_write);
    }
    if ((status == HIXL_SUCCESS) && (engine->ucp_worker_in != NULL)) {
        status = hixl_am_set_handler(engine, engine->ucp_worker_in,
                                     HIXL_AM_READ, HIXL_AM_RECV_REPLY_EP,
                                     hixl_am_on_read);
    }
    return status;
}

void hixl_am_data_cleanup(hixl_engine_t *engine)
{
    if (engine->am_data == NULL) {
        return;
    }
    pthread_spin_destroy(&engine->am_data->lock);
    free(engine->am_data);
    engine->am_data = NULL;
}
