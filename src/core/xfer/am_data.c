/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The connector's half of the WRITE/READ data protocol (see am_data.h):
 * descriptors gathered into messages, the window of WRITEs per channel,
 * and the answers.  The target's half is am_target.c.
 *
 * Threads: gathering and posting run under engine->lock, and WRITEs that
 * waited for room in their channel's window are posted from a progress
 * callback; answers run in UCX callbacks (inside ucp_worker_progress of
 * the out worker) or from the control connection, which never take
 * engine->lock.  They take engine->serve_lock for reading while they check
 * a channel or a region; closes and region changes take it for writing
 * and call no UCX function while they hold it.
 */
#include "config.h"
#include "core/xfer/am_data.h"
#include "core/xfer/am_reads.h"
#include "core/xfer/am_table.h"
#include "core/xfer/am_target.h"
#include "core/engine.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* WRITE data in UCX's hands at most, per channel: enough to keep a tcp
 * connection busy (tens of milliseconds of data), little enough that a
 * peer that cannot be reached does not hold many callers' transfers in
 * a queue that will only fail (ep_close.h). */
#define HIXL_AM_WINDOW    (16u * 1024 * 1024)
/* WRITE data a request's submitting call sends itself at most: the rest
 * waits for the progress thread (or the caller's next progress call), so
 * that the submit of a large request returns within about a millisecond
 * instead of doing the whole send (over tcp UCX often completes a send
 * inside the call, and the window then never fills), while a small one
 * still goes out without a thread switch. */
#define HIXL_AM_POST_INLINE (1024u * 1024)
/* Pieces a message has room for when it is started; it grows to
 * HIXL_AM_MAX_PIECES when small pieces follow. */
#define HIXL_AM_FIRST_CAP 4

/* A WRITE or READ message being gathered, waiting for room in its
 * channel's window (counted in the channel's slot already, so the flush
 * waits for it; dropped when the channel closes) or in UCX's hands. */
struct hixl_am_msg {
    hixl_am_msg_t     *next;      /* its channel's queue, while it waits */
    hixl_request_t    *req;
    hixl_chan_t       *chan;
    unsigned           id;        /* HIXL_AM_WRITE or HIXL_AM_READ */
    uint32_t           cap;       /* room in pieces[] and parts[] */
    hixl_am_hdr_t      hdr;       /* count and len: of the pieces */
    hixl_am_piece_t   *pieces;    /* the table: the payload's head */
    struct iovec      *parts;     /* WRITE: the pieces' data here */
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

/* ---- messages ----------------------------------------------------------- */

/* m (or a new message when NULL) with room for cap pieces, or NULL when
 * out of memory (m is kept then).  The table and the parts follow the
 * message in one allocation. */
static hixl_am_msg_t *hixl_am_msg_room(hixl_am_msg_t *m, uint32_t cap)
{
    uint32_t old = (m != NULL) ? m->cap : 0;
    hixl_am_msg_t *n;

    n = realloc(m, sizeof(*n) + cap * (sizeof(*n->pieces) +
                                       sizeof(*n->parts)));
    if (n == NULL) {
        return NULL;
    }
    if (m == NULL) {
        memset(n, 0, sizeof(*n));
    }
    n->pieces = (hixl_am_piece_t*)(n + 1);
    n->parts  = (struct iovec*)&n->pieces[cap];
    /* the parts were after the smaller table */
    memmove(n->parts, &n->pieces[old], old * sizeof(*n->parts));
    n->cap    = cap;
    return n;
}

static void hixl_am_msg_free(void *arg, const hixl_am_hdr_t *hdr)
{
    free(arg);
}

/* Bytes of data the next piece of m can carry (its table entry counted). */
static size_t hixl_am_msg_room_for(const hixl_am_msg_t *m)
{
    size_t used = (size_t)(m->hdr.count + 1) * sizeof(hixl_am_piece_t) +
                  m->hdr.len;
    size_t room;

    if ((m->hdr.count >= HIXL_AM_MAX_PIECES) ||
        (used >= HIXL_AM_PAYLOAD_MAX) || (m->hdr.len >= HIXL_AM_CHUNK)) {
        return 0;
    }
    room = HIXL_AM_PAYLOAD_MAX - used;
    return (HIXL_AM_CHUNK - m->hdr.len < room) ? HIXL_AM_CHUNK - m->hdr.len :
           room;
}

/* How much of a piece of len bytes goes into m: all of it, or (cut) as
 * many whole HIXL_AM_CUT units as fit, 0 when none does. */
static size_t hixl_am_msg_take(const hixl_am_msg_t *m, size_t len)
{
    size_t room = hixl_am_msg_room_for(m);

    return (len <= room) ? len : room - room % HIXL_AM_CUT;
}

static void hixl_am_msg_payload(const hixl_am_msg_t *m, hixl_am_payload_t *pl)
{
    pl->head      = m->pieces;
    pl->head_len  = (size_t)m->hdr.count * sizeof(*m->pieces);
    pl->parts     = (m->id == HIXL_AM_WRITE) ? m->parts : NULL;
    pl->num_parts = (m->id == HIXL_AM_WRITE) ? m->hdr.count : 0;
    pl->parts_len = (m->id == HIXL_AM_WRITE) ? m->hdr.len : 0;
}

/* ---- the window of WRITEs ------------------------------------------------ */

/* A WRITE is out of UCX's hands: it no longer counts in its channel's
 * window (hdr->chan: the channel's id when it was sent). */
static void hixl_am_write_done(void *arg, const hixl_am_hdr_t *hdr)
{
    hixl_am_msg_t *m  = arg;
    hixl_chan_t *chan = m->chan;

    /* a channel stopped since has a new window, or none */
    if (chan->id == hdr->chan) {
        atomic_fetch_sub(&chan->am_window, (long)hdr->len);
    }
    free(m);
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
 * Send a WRITE straight from the caller's buffers, which UCX packs part by
 * part as the socket takes them, under the guard above: a transfer that
 * ends (its connection closed) lets go of its buffers at once although its
 * endpoint may keep the send until the network heals (ep_close.h); what
 * is packed after that is zeros under a broken seal, and the target drops
 * it whole.  UCX's status: UCS_OK once posted (m is UCX's then).
 */
static ucs_status_t hixl_am_post_write(hixl_engine_t *engine,
                                       hixl_am_msg_t *m)
{
    hixl_chan_t *chan           = m->chan;
    const hixl_am_guard_t guard = {hixl_am_write_begin, hixl_am_write_end,
                                   chan};
    hixl_am_payload_t pl;

    hixl_am_msg_payload(m, &pl);
    /* the WRITE counts in the window until its send ends, whatever ends
     * it (hixl_am_write_done runs in every case) */
    atomic_fetch_add(&chan->am_window, (long)m->hdr.len);
    return hixl_am_sendv(engine, chan->ep, HIXL_AM_WRITE, &m->hdr, &pl,
                         HIXL_AM_DATA_FLAGS, &guard, hixl_am_write_done, m);
}

/* Whether a WRITE of len bytes may go now on chan: its window has room and
 * none of its earlier ones waits (they go in order). */
static int hixl_am_window_open(const hixl_chan_t *chan, size_t len)
{
    return (chan->am_wait_head == NULL) && (chan->am_draining == 0) &&
           (atomic_load(&chan->am_window) + (long)len <= HIXL_AM_WINDOW);
}

/* Queue a WRITE on its channel until the window has room (pool lock
 * held). */
static void hixl_am_wait(hixl_am_data_t *pool, hixl_am_msg_t *m)
{
    hixl_chan_t *chan = m->chan;

    /* a channel is listed exactly while it has WRITEs waiting */
    hixl_assert((chan->am_wait_head == NULL) == (chan->am_wait_tail == NULL));
    m->next = NULL;
    if (chan->am_wait_tail != NULL) {
        chan->am_wait_tail->next = m;
    } else {
        chan->am_wait_head = m;
        chan->am_next      = pool->waiting;   /* first one: list it */
        pool->waiting      = chan;
        atomic_fetch_add(&pool->nwaiting, 1);
    }
    chan->am_wait_tail = m;
}

/* A WRITE: sent now if the window lets it and the caller may (now), else
 * queued for the progress callback. */
static ucs_status_t hixl_am_send_write(hixl_engine_t *engine,
                                       hixl_am_msg_t *m, int now)
{
    hixl_am_data_t *pool = engine->am_data;

    pthread_spin_lock(&pool->lock);
    if (!now || !hixl_am_window_open(m->chan, m->hdr.len)) {
        hixl_am_wait(pool, m);
        pthread_spin_unlock(&pool->lock);
        return UCS_OK;
    }
    pthread_spin_unlock(&pool->lock);
    return hixl_am_post_write(engine, m);
}

/* A channel closed (channel.h's close hook, serve_lock held for writing):
 * its WRITEs still waiting for room are dropped (their transfers ended
 * with it), and the copies UCX still holds no longer count. */
static void hixl_am_chan_closed(hixl_engine_t *engine, hixl_chan_t *chan)
{
    hixl_am_data_t *pool = engine->am_data;
    hixl_am_read_wait_t *reads;
    hixl_am_msg_t *m, *next;
    hixl_chan_t **pp;

    pthread_spin_lock(&pool->lock);
    m = chan->am_wait_head;
    if (m != NULL) {
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
    reads = hixl_am_reads_take_all(chan);   /* their data will not come */
    pthread_spin_unlock(&pool->lock);
    for (; m != NULL; m = next) {   /* their transfers ended with it */
        next = m->next;
        free(m);
    }
    hixl_am_read_waits_free(reads);
}

/* The WRITEs of waiting channels whose windows have room now, taken off
 * their queues (pool lock held), in order. */
static hixl_am_msg_t *hixl_am_take_ready(hixl_am_data_t *pool, size_t max,
                                         size_t *count)
{
    hixl_am_msg_t *out = NULL, **tail = &out, *m;
    hixl_chan_t **pp, *chan;
    long room;

    *count = 0;
    for (pp = &pool->waiting; ((chan = *pp) != NULL) && (*count < max);) {
        room = HIXL_AM_WINDOW - atomic_load(&chan->am_window);
        hixl_assert(chan->am_wait_head != NULL);   /* listed: it waits */
        while (((m = chan->am_wait_head) != NULL) &&
               ((long)m->hdr.len <= room) && (*count < max)) {
            room              -= (long)m->hdr.len;
            chan->am_wait_head = m->next;
            m->next            = NULL;
            *tail              = m;
            tail               = &m->next;
            (*count)++;
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

/* WRITEs a progress pass posts at most: about a MiB, so that the pass
 * ends soon enough for the rest of the engine's work (the answers that
 * end a layer's flush among it). */
#define HIXL_AM_BATCH 16

/* Send waiting WRITEs whose channel's window has room (a progress
 * callback). */
static unsigned hixl_am_progress(hixl_engine_t *engine)
{
    hixl_am_data_t *pool = engine->am_data;
    hixl_am_msg_t *m, *next;
    hixl_am_hdr_t hdr;
    hixl_request_t *req;
    hixl_chan_t *chan;
    ucs_status_t ustatus;
    size_t n;

    if (atomic_load(&pool->nwaiting) == 0) {
        return 0;
    }
    /* serve_lock first: a close takes it for writing before the pool's
     * lock (hixl_am_chan_closed), so a channel taken here stays open
     * until its WRITEs are posted */
    pthread_rwlock_rdlock(&engine->serve_lock);
    pthread_spin_lock(&pool->lock);
    m = hixl_am_take_ready(pool, HIXL_AM_BATCH, &n);
    pthread_spin_unlock(&pool->lock);
    for (; m != NULL; m = next) {
        next = m->next;
        chan = m->chan;
        req  = m->req;
        hdr  = m->hdr;   /* m is UCX's once posted */
        ustatus = hixl_am_post_write(engine, m);
        pthread_spin_lock(&pool->lock);
        hixl_assert(chan->am_draining > 0);   /* taken above */
        chan->am_draining--;
        pthread_spin_unlock(&pool->lock);
        if (ustatus != UCS_OK) {
            hixl_req_fail(req, HIXL_FAILED, "a WRITE of %" PRIu64
                          " bytes to 0x%" PRIx64 " was not sent: %s",
                          hdr.len, hdr.addr, ucs_status_string(ustatus));
            hixl_chan_answered(chan, hdr.flags & HIXL_AM_FLAG_SLOT,
                               HIXL_ANSWER_ON_CONTROL);
        }
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return (unsigned)n;
}

/* ---- READs -------------------------------------------------------------- */

/* Whether the request with this handle still waits for its data
 * (am_reads.h). */
static int hixl_am_read_live(void *arg, uint64_t cookie)
{
    hixl_engine_t *engine = arg;
    hixl_request_t *req   = hixl_req_lookup(&engine->reqs, cookie);

    return (req != NULL) && (atomic_load(&req->state) == HIXL_REQ_ACTIVE);
}

/* Send a READ, its table kept on its channel until its data comes
 * (am_reads.h).  UCX's status; m is freed in every case. */
static ucs_status_t hixl_am_send_read(hixl_engine_t *engine,
                                      hixl_am_msg_t *m, unsigned slot)
{
    hixl_am_data_t *pool = engine->am_data;
    hixl_chan_t *chan    = m->chan;
    hixl_am_read_wait_t *w, *stale;
    hixl_am_payload_t pl;
    ucs_status_t ustatus;

    w = hixl_am_read_wait_new(&m->hdr, m->pieces, slot);
    if (w == NULL) {
        free(m);
        return UCS_ERR_NO_MEMORY;
    }
    pthread_spin_lock(&pool->lock);
    stale = hixl_am_reads_add(chan, w, hixl_am_read_live, engine);
    pthread_spin_unlock(&pool->lock);
    hixl_am_read_waits_free(stale);
    hixl_am_msg_payload(m, &pl);
    ustatus = hixl_am_sendv(engine, chan->ep, HIXL_AM_READ, &m->hdr, &pl,
                            HIXL_AM_DATA_FLAGS, NULL, hixl_am_msg_free, m);
    if (ustatus != UCS_OK) {
        /* never sent, so never answered: w is still on the list (the
         * channel cannot close meanwhile: engine->lock is held here) */
        pthread_spin_lock(&pool->lock);
        hixl_am_reads_remove(chan, w);
        pthread_spin_unlock(&pool->lock);
        free(w);
    }
    return ustatus;
}

/* ---- gathering descriptors into messages ---------------------------------- */

/* Send the message batch gathered (more: HIXL_AM_FLAG_MORE, or 0 for the
 * request's last); the slot is counted before the send, so an answer can
 * never come first. */
static ucs_status_t hixl_am_batch_send(hixl_engine_t *engine,
                                       hixl_am_batch_t *batch,
                                       unsigned more)
{
    hixl_am_msg_t *m      = batch->msg;
    hixl_chan_t *chan     = m->chan;
    hixl_answer_via_t via = (m->id == HIXL_AM_WRITE) ?
                            HIXL_ANSWER_ON_CONTROL :
                            HIXL_ANSWER_ELSEWHERE;   /* READ_DATA: UCX */
    ucs_status_t ustatus;
    unsigned slot;
    int now;

    hixl_assert_locked(&engine->lock);   /* posts are the caller's */
    hixl_assert((m->hdr.count > 0) && (m->hdr.len > 0));
    batch->msg = NULL;
    slot         = hixl_chan_post(chan, via);
    m->hdr.flags = (uint16_t)(slot | more);
    m->hdr.conn  = chan->conn;
    m->hdr.chan  = chan->id;
    m->hdr.addr  = m->pieces[0].remote;
    if (m->id == HIXL_AM_WRITE) {
        now            = (batch->posted < HIXL_AM_POST_INLINE);
        batch->posted += m->hdr.len;
        ustatus        = hixl_am_send_write(engine, m, now);
    } else {
        ustatus = hixl_am_send_read(engine, m, slot);
    }
    if (ustatus != UCS_OK) {
        hixl_chan_answered(chan, slot, via);   /* no answer will come */
    }
    return ustatus;
}

/* The message to add a piece to: batch's, grown if its table is full, or
 * a new one; NULL when out of memory. */
static hixl_am_msg_t *hixl_am_batch_msg(hixl_am_batch_t *batch,
                                        hixl_chan_t *chan,
                                        hixl_request_t *req, unsigned id)
{
    hixl_am_msg_t *m = batch->msg;
    uint32_t cap;

    if (m == NULL) {
        m = hixl_am_msg_room(NULL, HIXL_AM_FIRST_CAP);
        if (m == NULL) {
            return NULL;
        }
        m->req = req;
        m->chan = chan;
        m->id = id;
        hixl_am_hdr_init(&m->hdr);
        m->hdr.cookie = req->handle;
    } else if (m->hdr.count == m->cap) {
        cap = m->cap * 4;
        m   = hixl_am_msg_room(m, (cap < HIXL_AM_MAX_PIECES) ? cap :
                               HIXL_AM_MAX_PIECES);
        if (m == NULL) {
            return NULL;   /* batch->msg is kept, and freed by its send */
        }
    }
    hixl_assert((m->chan == chan) && (m->req == req) && (m->id == id));
    batch->msg = m;
    return m;
}

ucs_status_t hixl_am_batch_add(hixl_engine_t *engine, hixl_am_batch_t *batch,
                               hixl_chan_t *chan, hixl_request_t *req,
                               unsigned id, uintptr_t local, uint64_t remote,
                               size_t len)
{
    hixl_am_msg_t *m;
    ucs_status_t ustatus;
    size_t n;

    hixl_assert((id == HIXL_AM_WRITE) || (id == HIXL_AM_READ));
    while (len > 0) {
        if ((batch->msg != NULL) && (hixl_am_msg_take(batch->msg, len) == 0)) {
            /* full: it goes, and more follows */
            ustatus = hixl_am_batch_send(engine, batch, HIXL_AM_FLAG_MORE);
            if (ustatus != UCS_OK) {
                return ustatus;
            }
        }
        m = hixl_am_batch_msg(batch, chan, req, id);
        if (m == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        n = hixl_am_msg_take(m, len);
        hixl_assert(n > 0);   /* an empty message takes a whole unit */
        m->pieces[m->hdr.count] = (hixl_am_piece_t){remote, local, n};
        m->parts[m->hdr.count]  = (struct iovec){(void*)local, n};
        m->hdr.count++;
        m->hdr.len += n;
        local      += n;
        remote     += n;
        len        -= n;
    }
    return UCS_OK;
}

ucs_status_t hixl_am_batch_flush(hixl_engine_t *engine,
                                 hixl_am_batch_t *batch)
{
    return (batch->msg != NULL) ? hixl_am_batch_send(engine, batch, 0) :
           UCS_OK;
}

/* ---- the connector's side of the answers ---------------------------------- */

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

/* READ_DATA into the pieces' local ranges (serve_lock held), if they are
 * still registered regions of ours and the request still waits for it;
 * a request that waits fails when its data cannot be placed.  t: the
 * answer's table, checked and matched to its READ. */
static void hixl_am_read_into(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                              const hixl_am_table_t *t)
{
    hixl_request_t *req = hixl_req_lookup(&engine->reqs, h->cookie);
    hixl_am_piece_t bad;

    if (req == NULL) {
        return;   /* it ended (failed, or its connection closed) */
    }
    if (!hixl_am_table_placed(engine, t, HIXL_AM_SIDE_LOCAL, NULL, &bad)) {
        hixl_req_fail(req, HIXL_FAILED, "a READ's data for [0x%" PRIx64
                      ", +%" PRIu64 ") has no registered region here "
                      "(deregistered while the read was in flight?)",
                      bad.local, bad.len);
    } else {
        hixl_am_table_scatter(t, HIXL_AM_SIDE_LOCAL);
    }
}

/* A READ_DATA that does not hold together fails the request it names. */
static void hixl_am_read_broken(hixl_engine_t *engine, const hixl_am_hdr_t *h,
                                size_t length)
{
    hixl_request_t *req = hixl_req_lookup(&engine->reqs, h->cookie);

    if (req != NULL) {
        hixl_req_fail(req, HIXL_FAILED, "a READ's answer from %s does not "
                      "hold together (%u pieces, %" PRIu64 " bytes, %zu "
                      "received)", req->peer->name, h->count, h->len,
                      length);
    }
}

/* READ_DATA (checked by the dispatcher: ours, eager), from the listener
 * of the channel it names, answering a READ of it (am_reads.h): anything
 * else is dropped unanswered and unplaced. */
static ucs_status_t hixl_am_on_read_data(hixl_engine_t *engine,
                                         const hixl_am_hdr_t *h, void *data,
                                         size_t length, ucp_ep_h reply_ep)
{
    hixl_am_data_t *pool = engine->am_data;
    hixl_am_read_wait_t *w = NULL;
    hixl_am_table_t t;
    hixl_chan_t *chan;
    int whole;

    pthread_rwlock_rdlock(&engine->serve_lock);
    chan = hixl_chan_lookup(engine, h->chan);
    if ((chan != NULL) && (h->conn != chan->conn)) {
        /* the channel's listener echoes its own id of the connection,
         * which no other engine knows: a stranger naming the channel */
        hixl_log_debug("dropping a READ_DATA for channel %" PRIx64 " "
                       "with the id of another connection", h->chan);
        chan = NULL;
    }
    if (chan != NULL) {
        whole = (h->status == HIXL_SUCCESS) &&
                (hixl_am_table_read(h, data, length, 1, &t) == 0);
        pthread_spin_lock(&pool->lock);
        w = hixl_am_reads_take(chan, h, whole ? &t : NULL);
        pthread_spin_unlock(&pool->lock);
    }
    if (w == NULL) {
        if (chan != NULL) {
            hixl_log_debug("dropping a READ_DATA for channel %" PRIx64
                           " that answers none of its READs", h->chan);
        }
    } else {
        if (h->status != HIXL_SUCCESS) {
            hixl_am_refused(engine, h, "READ");
        } else if (!whole) {
            hixl_am_read_broken(engine, h, length);
        } else {
            hixl_am_read_into(engine, h, &t);
        }
        hixl_chan_answered(chan, w->slot, HIXL_ANSWER_ELSEWHERE);
        free(w);
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
                                     HIXL_AM_READ_DATA, 0,
                                     hixl_am_on_read_data);
    }
    if ((status == HIXL_SUCCESS) && (engine->ucp_worker_in != NULL)) {
        status = hixl_am_target_init(engine);
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
