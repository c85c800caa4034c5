/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The target's half of the WRITE/READ data protocol (am_target.h).
 *
 * Handlers run in UCX callbacks of the in worker and never take
 * engine->lock.  They hold engine->serve_lock for reading while they check
 * the connection and the regions and while they copy, so that a close or
 * a deregistration (which take it for writing) waits for them.
 */
#include "config.h"
#include "core/xfer/am_target.h"
#include "core/xfer/am_table.h"
#include "core/am/am.h"
#include "core/engine.h"
#include "core/peer/ep_close.h"
#include "core/peer/inbound.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <sys/uio.h>

/* READ_DATA goes eagerly, as everything of the library's does
 * (core/am/am.h) */
#define HIXL_AM_ANSWER_FLAGS UCP_AM_SEND_FLAG_EAGER

/*
 * A WRITE or READ that no live connection owns (serve_lock held, released
 * here) is dropped.  If no live connection has its endpoint either, the
 * endpoint is left from a connection that ended while its connector could
 * not tell us (a partition that healed, its queued messages arriving now):
 * close it while UCX vouches for it (core/peer/ep_close.h), or it and its
 * socket stay until the engine goes.
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

/* The answer to h naming what was refused: the piece outside every region
 * (bad), or the whole message when it did not hold together. */
static hixl_am_hdr_t hixl_am_refusal(const hixl_am_hdr_t *h,
                                     const hixl_am_piece_t *bad,
                                     hixl_status_t status)
{
    hixl_am_hdr_t a = *h;

    if (bad != NULL) {
        a.addr = bad->remote;
        a.len  = bad->len;
    }
    a.status = (int32_t)status;
    return a;
}

/* WRITE (checked by the dispatcher: ours, eager, with its reply_ep, its
 * seal intact or data NULL) */
static ucs_status_t hixl_am_on_write(hixl_engine_t *engine,
                                     const hixl_am_hdr_t *h, void *data,
                                     size_t length, ucp_ep_h reply_ep)
{
    hixl_am_piece_t bad;
    hixl_am_table_t t;
    hixl_am_hdr_t a;

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
    if (hixl_am_table_read(h, data, length, 1, &t) != 0) {
        a = hixl_am_refusal(h, NULL, HIXL_PARAM_INVALID);
    } else if (!hixl_am_table_placed(engine, &t, HIXL_AM_SIDE_REMOTE, NULL,
                                     &bad)) {
        a = hixl_am_refusal(h, &bad, HIXL_PARAM_INVALID);
    } else {
        hixl_am_table_scatter(&t, HIXL_AM_SIDE_REMOTE);
        a = hixl_am_refusal(h, NULL, HIXL_SUCCESS);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    hixl_inbound_ack(engine, h->conn, &a, (hixl_status_t)a.status);
    return UCS_OK;
}

/* A READ's answer in flight: its table (the head of its payload), where its
 * pieces are here (the parts), and the regions they keep registered until
 * it is out. */
typedef struct hixl_am_read_answer {
    uint32_t         count;
    hixl_region_t  **regions;   /* NULL where the piece before's */
    struct iovec    *parts;
    hixl_am_piece_t  pieces[];
} hixl_am_read_answer_t;

static void hixl_am_read_sent(void *arg, const hixl_am_hdr_t *hdr)
{
    hixl_am_read_answer_t *ans = arg;
    unsigned before;
    uint32_t k;

    for (k = 0; k < ans->count; ++k) {
        if (ans->regions[k] != NULL) {
            before = atomic_fetch_sub(&ans->regions[k]->am_busy, 1);
            hixl_assert(before >= 1);   /* taken when it was posted */
            (void)before;
        }
    }
    free(ans);
}

/* The answer of a checked READ table, its regions taken (serve_lock
 * held), or NULL when out of memory. */
static hixl_am_read_answer_t *hixl_am_read_answer(hixl_engine_t *engine,
                                                  const hixl_am_table_t *t,
                                                  hixl_am_piece_t *bad,
                                                  int *placed)
{
    hixl_am_read_answer_t *ans;
    uint32_t k;

    ans = malloc(sizeof(*ans) + t->count * (sizeof(ans->pieces[0]) +
                                            sizeof(*ans->parts) +
                                            sizeof(*ans->regions)));
    if (ans == NULL) {
        return NULL;
    }
    ans->count   = t->count;
    ans->parts   = (struct iovec*)&ans->pieces[t->count];
    ans->regions = (hixl_region_t**)&ans->parts[t->count];
    *placed      = hixl_am_table_placed(engine, t, HIXL_AM_SIDE_REMOTE,
                                        ans->regions, bad);
    if (!*placed) {
        free(ans);
        return NULL;
    }
    for (k = 0; k < t->count; ++k) {
        hixl_am_table_piece(t, k, &ans->pieces[k]);
        ans->parts[k].iov_base = (void*)(uintptr_t)ans->pieces[k].remote;
        ans->parts[k].iov_len  = ans->pieces[k].len;
        if (ans->regions[k] != NULL) {
            /* the region stays until the data is out (deregistration
             * waits) */
            atomic_fetch_add(&ans->regions[k]->am_busy, 1);
        }
    }
    return ans;
}

/* READ (checked by the dispatcher: ours, with its reply_ep) */
static ucs_status_t hixl_am_on_read(hixl_engine_t *engine,
                                    const hixl_am_hdr_t *h, void *data,
                                    size_t length, ucp_ep_h reply_ep)
{
    hixl_am_read_answer_t *ans = NULL;
    hixl_am_payload_t pl;
    hixl_am_piece_t bad;
    hixl_am_table_t t;
    ucs_status_t ustatus;
    hixl_am_hdr_t a;
    int placed = 1;

    hixl_progress_data_seen(engine);
    pthread_rwlock_rdlock(&engine->serve_lock);
    if (!hixl_inbound_check(engine, h->conn, reply_ep)) {
        hixl_am_refuse(engine, h, reply_ep);
        return UCS_OK;
    }
    if (hixl_am_table_read(h, data, length, 0, &t) != 0) {
        a = hixl_am_refusal(h, NULL, HIXL_PARAM_INVALID);
    } else {
        ans = hixl_am_read_answer(engine, &t, &bad, &placed);
        a   = placed ? hixl_am_refusal(h, NULL, (ans != NULL) ?
                                       HIXL_SUCCESS : HIXL_RESOURCE_EXHAUSTED) :
              hixl_am_refusal(h, &bad, HIXL_PARAM_INVALID);
    }
    if (ans != NULL) {
        pl.head      = ans->pieces;
        pl.head_len  = (size_t)ans->count * sizeof(ans->pieces[0]);
        pl.parts     = ans->parts;
        pl.num_parts = ans->count;
        pl.parts_len = t.len;
        ustatus = hixl_am_sendv(engine, reply_ep, HIXL_AM_READ_DATA, &a,
                                &pl, HIXL_AM_ANSWER_FLAGS, NULL,
                                hixl_am_read_sent, ans);
        if (ustatus != UCS_OK) {   /* its endpoint failed: the connector's
                                      flush learns it from its own */
            hixl_log_debug("READ_DATA of %" PRIu64 " bytes not sent: %s",
                           t.len, ucs_status_string(ustatus));
        }
    } else {
        hixl_am_send_small(engine, reply_ep, HIXL_AM_READ_DATA, &a, NULL, 0,
                           HIXL_AM_ANSWER_FLAGS, NULL, NULL);
    }
    pthread_rwlock_unlock(&engine->serve_lock);
    return UCS_OK;
}

hixl_status_t hixl_am_target_init(hixl_engine_t *engine)
{
    hixl_status_t status;

    status = hixl_am_set_handler(engine, engine->ucp_worker_in,
                                 HIXL_AM_WRITE, HIXL_AM_RECV_REPLY_EP |
                                 HIXL_AM_RECV_SEALED,
                                 hixl_am_on_write);
    if (status == HIXL_SUCCESS) {
        status = hixl_am_set_handler(engine, engine->ucp_worker_in,
                                     HIXL_AM_READ, HIXL_AM_RECV_REPLY_EP,
                                     hixl_am_on_read);
    }
    return status;
}
