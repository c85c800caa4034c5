/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: a prefill engine's connects and transfers.
 *
 * Connects: one thread per peer, each sleeping until the common start time
 * t0 and then calling hixl_connect, so that N connects (fan-out) start
 * together as N processes' do (fan-in).  The time reported is from the call
 * to its return; how late the call started after t0 (scheduling on a busy
 * host) is reported beside it.
 *
 * Transfers: every peer's slice is cut into descriptors of desc_size bytes,
 * per_xfer descriptors make one hixl_transfer_async, up to `window` of them
 * in flight per peer; the peers are served round-robin from this one
 * thread, which polls only the oldest request of each peer (completions are
 * counted in order, so what completed is always a prefix of the slice: after
 * an early stop that prefix is what gets verified).  When a sweep over the
 * peers completed nothing, the thread pauses poll_us microseconds: an
 * application computing between status polls, so that the CPU this process
 * uses is mostly the library's, not this loop spinning (--poll-us 0 spins,
 * as ucx_perftest and put_bw do).  With --wait block it sleeps in
 * hixl_wait_transfers on the oldest request of every peer instead (ANY):
 * what that call reports is released, so it is counted here as the poll
 * would.  At `deadline` it stops posting, lets what is in flight finish and
 * marks the peers whose slice did not complete.
 */
#include "config.h"
#include "fan.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- connects ----------------------------------------------------------- */

typedef struct fan_conn {
    fan_xfer_cfg_t *x;
    unsigned        i;
    uint64_t        t0;
    hixl_status_t   status;
    char            err[200];
} fan_conn_t;

static void *fan_conn_thread(void *arg)
{
    fan_conn_t *c = arg;
    fan_peer_t *peer = &c->x->peers[c->i];
    uint64_t start;

    bc_sleep_until_ns(c->t0);
    start     = bc_now_ns();
    c->status = hixl_connect(c->x->engine, peer->name, c->x->timeout_ms);
    peer->connect_ms = (double)(bc_now_ns() - start) / 1e6;
    peer->late_ms    = (double)(start - c->t0) / 1e6;
    if (c->status != HIXL_SUCCESS) {
        /* hixl_last_error() is per thread: copy it here */
        snprintf(c->err, sizeof(c->err), "hixl_connect(\"%s\"): %s: %s",
                 peer->name, hixl_strerror(c->status), hixl_last_error());
    }
    return NULL;
}

int fan_xfer_connect(fan_xfer_cfg_t *x, uint64_t t0, char *err,
                     size_t err_len)
{
    fan_conn_t *c = calloc(x->num_peers, sizeof(*c));
    pthread_t *th = calloc(x->num_peers, sizeof(*th));
    unsigned i, started = 0;
    int rc = 0;

    if ((c == NULL) || (th == NULL)) {
        snprintf(err, err_len, "out of memory");
        free(c);
        free(th);
        return -1;
    }
    for (i = 0; i < x->num_peers; ++i) {
        c[i].x  = x;
        c[i].i  = i;
        c[i].t0 = t0;
    }
    if (x->num_peers == 1) {
        fan_conn_thread(&c[0]);      /* fan-in: no thread needed */
    } else {
        for (i = 0; i < x->num_peers; ++i, ++started) {
            if (pthread_create(&th[i], NULL, fan_conn_thread, &c[i]) != 0) {
                snprintf(c[i].err, sizeof(c[i].err), "pthread_create failed");
                c[i].status = HIXL_FAILED;
                break;
            }
        }
        for (i = 0; i < started; ++i) {
            pthread_join(th[i], NULL);
        }
    }
    for (i = 0; i < x->num_peers; ++i) {
        if (c[i].status != HIXL_SUCCESS) {
            snprintf(err, err_len, "%s", c[i].err);
            rc = -1;
            break;
        }
    }
    free(c);
    free(th);
    return rc;
}

/* ---- transfers ---------------------------------------------------------- */

typedef struct fan_flow {
    fan_peer_t              *peer;
    hixl_transfer_op_desc_t *descs;
    size_t                   ndesc;
    uint64_t                 per_pass;    /* transfers per pass */
    uint64_t                 total;       /* transfers in all passes */
    uint64_t                 next;        /* next to post */
    uint64_t                 completed;
    hixl_req_t              *ring;
    unsigned                 head, tail, inflight;
    int                      finished;
} fan_flow_t;

static int fan_flow_init(fan_flow_t *f, const fan_xfer_cfg_t *x,
                         fan_peer_t *peer)
{
    size_t i, off;

    memset(f, 0, sizeof(*f));
    f->peer  = peer;
    f->ndesc = (peer->len + x->desc_size - 1) / x->desc_size;
    f->descs = calloc(f->ndesc ? f->ndesc : 1, sizeof(*f->descs));
    f->ring  = calloc(x->window, sizeof(*f->ring));
    if ((f->descs == NULL) || (f->ring == NULL)) {
        return -1;
    }
    for (i = 0, off = 0; i < f->ndesc; ++i, off += x->desc_size) {
        f->descs[i].local_addr  = (uintptr_t)peer->local + off;
        f->descs[i].remote_addr = peer->remote + off;
        f->descs[i].len = (peer->len - off < x->desc_size) ? peer->len - off :
                          x->desc_size;
    }
    f->per_pass = (f->ndesc + x->per_xfer - 1) / x->per_xfer;
    f->total    = f->per_pass * x->passes;
    peer->done    = 0;
    peer->partial = 0;
    peer->t_end   = 0;
    return 0;
}

/* Descriptors [first, first + count) of transfer k. */
static void fan_flow_slot(const fan_flow_t *f, const fan_xfer_cfg_t *x,
                          uint64_t k, size_t *first, size_t *count)
{
    size_t t = (size_t)(k % f->per_pass);

    *first = t * x->per_xfer;
    *count = (f->ndesc - *first < x->per_xfer) ? f->ndesc - *first :
             x->per_xfer;
}

static uint64_t fan_flow_bytes(const fan_flow_t *f, const fan_xfer_cfg_t *x,
                               uint64_t k)
{
    size_t first, count, i;
    uint64_t sum = 0;

    fan_flow_slot(f, x, k, &first, &count);
    for (i = 0; i < count; ++i) {
        sum += f->descs[first + i].len;
    }
    return sum;
}

static int fan_flow_post(fan_flow_t *f, const fan_xfer_cfg_t *x, char *err,
                         size_t err_len)
{
    size_t first, count;
    hixl_status_t status;

    fan_flow_slot(f, x, f->next, &first, &count);
    status = hixl_transfer_async(x->engine, f->peer->name, HIXL_WRITE,
                                 &f->descs[first], count, NULL,
                                 &f->ring[f->head]);
    if (status != HIXL_SUCCESS) {
        snprintf(err, err_len, "hixl_transfer_async to %s: %s: %s",
                 f->peer->name, hixl_strerror(status), hixl_last_error());
        return -1;
    }
    f->head = (f->head + 1) % x->window;
    f->inflight++;
    f->next++;
    return 0;
}

/* The oldest request ended as xs (status: the call that said so): 1
 * completed, 0 in flight, -1 failed. */
static int fan_flow_ended(fan_flow_t *f, const fan_xfer_cfg_t *x,
                          hixl_status_t status, hixl_transfer_status_t xs,
                          char *err, size_t err_len)
{
    if (xs == HIXL_TRANSFER_COMPLETED) {
        f->peer->done  += fan_flow_bytes(f, x, f->completed);
        f->peer->t_end  = bc_now_ns();
        f->completed++;
        f->tail = (f->tail + 1) % x->window;
        f->inflight--;
        return 1;
    }
    if ((status == HIXL_SUCCESS) && (xs == HIXL_TRANSFER_WAITING)) {
        return 0;
    }
    snprintf(err, err_len, "transfer to %s %s: %s", f->peer->name,
             (xs == HIXL_TRANSFER_TIMEOUT) ? "timed out" : "failed",
             hixl_last_error());
    return -1;
}

/* Poll the oldest request: 1 completed, 0 in flight, -1 failed. */
static int fan_flow_poll(fan_flow_t *f, const fan_xfer_cfg_t *x, char *err,
                         size_t err_len)
{
    hixl_transfer_status_t xs = HIXL_TRANSFER_WAITING;
    hixl_status_t status;

    status = hixl_get_transfer_status(x->engine, f->ring[f->tail], &xs);
    return fan_flow_ended(f, x, status, xs, err, err_len);
}

/* Longest sleep of a blocking wait: the loop looks at the deadline. */
#define FAN_WAIT_SLICE_MS 100

/* --wait block: sleep until the oldest request of some peer ends; 0, or
 * -1 with err. */
static int fan_wait_any(fan_flow_t *flows, const fan_xfer_cfg_t *x,
                        char *err, size_t err_len)
{
    hixl_transfer_status_t st[FAN_MAX_N];
    hixl_req_t reqs[FAN_MAX_N];
    unsigned idx[FAN_MAX_N];
    hixl_status_t status;
    unsigned i, n = 0;

    for (i = 0; i < x->num_peers; ++i) {
        if (!flows[i].finished && (flows[i].inflight > 0)) {
            idx[n]    = i;
            reqs[n++] = flows[i].ring[flows[i].tail];
        }
    }
    if (n == 0) {
        return 0;
    }
    status = hixl_wait_transfers(x->engine, reqs, n, HIXL_WAIT_ANY,
                                 FAN_WAIT_SLICE_MS, st, NULL);
    if ((status != HIXL_SUCCESS) && (status != HIXL_TIMEOUT)) {
        snprintf(err, err_len, "hixl_wait_transfers: %s: %s",
                 hixl_strerror(status), hixl_last_error());
        return -1;
    }
    for (i = 0; i < n; ++i) {
        if ((st[i] != HIXL_TRANSFER_WAITING) &&
            (fan_flow_ended(&flows[idx[i]], x, HIXL_SUCCESS, st[i], err,
                            err_len) < 0)) {
            return -1;
        }
    }
    return 0;
}

static void fan_pause(unsigned us)
{
    struct timespec ts = {0, (long)us * 1000};

    nanosleep(&ts, NULL);
}

int fan_xfer_run(fan_xfer_cfg_t *x, char *err, size_t err_len)
{
    fan_flow_t *flows = calloc(x->num_peers, sizeof(*flows));
    unsigned i, active;
    int rc = -1, stop = 0, progress, r;
    fan_flow_t *f;

    if (flows == NULL) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (i = 0; i < x->num_peers; ++i) {
        if (fan_flow_init(&flows[i], x, &x->peers[i]) != 0) {
            snprintf(err, err_len, "out of memory");
            goto out;
        }
    }
    /* bounded: posting stops at the deadline, and every request in flight
     * ends by hixl.TransferTimeoutMs at the latest */
    for (;;) {
        progress = 0;
        active   = 0;
        for (i = 0; i < x->num_peers; ++i) {
            f = &flows[i];
            if (f->finished) {
                continue;
            }
            while (!stop && (f->inflight < x->window) &&
                   (f->next < f->total)) {
                if (fan_flow_post(f, x, err, err_len) != 0) {
                    goto out;
                }
                progress = 1;
            }
            while (f->inflight > 0) {
                r = fan_flow_poll(f, x, err, err_len);
                if (r < 0) {
                    goto out;
                }
                if (r == 0) {
                    break;
                }
                progress = 1;
            }
            if ((f->inflight == 0) && (stop || (f->next == f->total))) {
                f->finished      = 1;
                f->peer->partial = (f->completed < f->total);
                continue;
            }
            ++active;
        }
        if (active == 0) {
            break;
        }
        if (!stop && (bc_now_ns() >= x->deadline)) {
            stop = 1;
        }
        if (!progress && x->wait_block) {
            if (fan_wait_any(flows, x, err, err_len) != 0) {
                goto out;
            }
        } else if (!progress && x->poll_us) {
            fan_pause(x->poll_us);
        }
    }
    rc = 0;
out:
    for (i = 0; i < x->num_peers; ++i) {
        free(flows[i].descs);
        free(flows[i].ring);
    }
    free(flows);
    return rc;
}
