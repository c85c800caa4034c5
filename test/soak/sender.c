/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: an engine's sender thread: writes to random peers into the slots
 * they gave back, each followed by a layer flush or carrying a notify,
 * and reads of the peers' static areas.
 */
#include "child.h"

static unsigned child_pick_peer(child_t *c, uint64_t *rng)
{
    unsigned p;

    do {
        p = (unsigned)(rnd(rng) % c->n);
    } while (p == c->me);
    return p;
}

/* Split [0, len) into 1..max descriptors of random, unaligned lengths (some
 * may be 0), in random order. */
static size_t split(hixl_transfer_op_desc_t *d, size_t len, uintptr_t local,
                    uintptr_t remote, uint64_t *rng)
{
    static const size_t maxes[] = {1, 1, 2, 4, 16, 64, MAX_DESCS};
    size_t cuts[MAX_DESCS + 1];
    size_t n, k, j, max = maxes[rnd(rng) % (sizeof(maxes) / sizeof(maxes[0]))];

    if (max > len) {
        max = len;
    }
    n = 1 + (size_t)(rnd(rng) % max);
    cuts[0] = 0;
    for (k = 1; k < n; ++k) {
        size_t c = (size_t)(rnd(rng) % (len + 1));

        for (j = k; (j > 1) && (cuts[j - 1] > c); --j) {
            cuts[j] = cuts[j - 1];
        }
        cuts[j] = c;
    }
    cuts[n] = len;
    for (k = 0; k < n; ++k) {
        d[k].local_addr  = local + cuts[k];
        d[k].remote_addr = remote + cuts[k];
        d[k].len         = cuts[k + 1] - cuts[k];
    }
    if (rnd(rng) & 1) {
        for (k = n - 1; k > 0; --k) {
            hixl_transfer_op_desc_t t;

            j    = (size_t)(rnd(rng) % (k + 1));
            t    = d[k];
            d[k] = d[j];
            d[j] = t;
        }
    }
    return n;
}

/* ---- sender thread ----------------------------------------------------------- */

typedef struct sender {
    child_t   *c;
    uint64_t   rng;
    uint64_t   next_seq[MAX_ENGINES];
    uint64_t   busy[MAX_ENGINES][MAX_SLOTS];  /* seq + 1 in the slot, 0: free */
    hixl_req_t req[MAX_ENGINES][MAX_SLOTS];
    size_t     req_bytes[MAX_ENGINES][MAX_SLOTS];
    int        broken[MAX_ENGINES];           /* a request to it failed */
    /* the READ in flight */
    hixl_req_t rreq;
    unsigned   rpeer;
    size_t     roff, rlen, rskew;
    hixl_transfer_op_desc_t d[MAX_DESCS];
} sender_t;

static uint8_t *send_slot(child_t *c, unsigned p, unsigned j)
{
    return c->local + ((size_t)p * c->k + j) * SLOT_SIZE;
}

static uint8_t *read_buf(child_t *c)
{
    return c->local + (size_t)c->n * c->k * SLOT_SIZE;
}

static uintptr_t remote_slot(child_t *c, unsigned p, unsigned j)
{
    return (uintptr_t)(c->base[p] + ((uint64_t)c->me * c->k + j) * SLOT_SIZE);
}

static void sender_read_check(sender_t *s)
{
    child_t *c = s->c;
    uint8_t *buf = read_buf(c) + s->rskew;
    size_t first, bad;

    bad = pat_check(buf, s->rlen, static_seed(s->rpeer), s->roff, &first);
    if (bad > 0) {
        CNT(&c->ss, corruptions, 1);
        CNT(&c->ss, bad_bytes, bad);
        child_err(c, "READ of [%zu, +%zu) of e%u's static area: %zu bytes "
                  "wrong, the first at %zu: 0x%02x, expected 0x%02x", s->roff,
                  s->rlen, s->rpeer, bad, first, buf[first],
                  pat_byte(static_seed(s->rpeer), s->roff + first));
    }
    CNT(&c->ss, reads, 1);
    CNT(&c->ss, bytes_read, s->rlen);
}

/* Poll a request; 1 when it left WAITING (success counted, failure noted
 * and counted), 0 while it waits. */
static int sender_poll(sender_t *s, hixl_req_t req, unsigned p,
                       const char *what)
{
    child_t *c = s->c;
    hixl_transfer_status_t ts = HIXL_TRANSFER_WAITING;
    hixl_status_t st;

    st = hixl_get_transfer_status(c->e, req, &ts);
    if (st != HIXL_SUCCESS) {
        CNT(&c->ss, failures, 1);
        child_err(c, "status of a %s to e%u: %s: %s", what, p,
                  hixl_strerror(st), hixl_last_error());
        s->broken[p] = 1;
        return 1;
    }
    if (ts == HIXL_TRANSFER_WAITING) {
        return 0;
    }
    if (ts != HIXL_TRANSFER_COMPLETED) {
        CNT(&c->ss, failures, 1);
        child_err(c, "%s to e%u ended %s: %s", what, p,
                  (ts == HIXL_TRANSFER_TIMEOUT) ? "TIMEOUT" : "FAILED",
                  hixl_last_error());
        s->broken[p] = 1;
        return 1;
    }
    return 2;
}

/* Poll every request in flight; returns how many finished. */
static unsigned sender_reap(sender_t *s)
{
    child_t *c = s->c;
    unsigned p, j, n = 0;
    int rc;

    for (p = 0; p < c->n; ++p) {
        for (j = 0; j < c->k; ++j) {
            if (s->req[p][j] == NULL) {
                continue;
            }
            rc = sender_poll(s, s->req[p][j], p, "WRITE");
            if (rc == 0) {
                continue;
            }
            if (rc == 2) {
                CNT(&c->ss, writes, 1);
                CNT(&c->ss, bytes_written, s->req_bytes[p][j]);
            }
            s->req[p][j] = NULL;
            ++n;
        }
    }
    if (s->rreq != NULL) {
        rc = sender_poll(s, s->rreq, s->rpeer, "READ");
        if (rc != 0) {
            if (rc == 2) {
                sender_read_check(s);
            }
            s->rreq = NULL;
            ++n;
        }
    }
    return n;
}

/* Slot j of peer p can take a new write: its last write completed here
 * and was returned by the peer. */
static int slot_free(sender_t *s, unsigned p, unsigned j)
{
    return (s->req[p][j] == NULL) &&
           ((s->busy[p][j] == 0) ||
            (atomic_load_explicit(&s->c->done[p][j], memory_order_acquire) ==
             s->busy[p][j]));
}

static int sender_write(sender_t *s, unsigned p)
{
    child_t *c = s->c;
    uint64_t q = s->next_seq[p];
    unsigned j = (unsigned)(q % c->k);
    hixl_transfer_args_t args;
    xfer_msg_t msg;
    hixl_status_t st;
    uint8_t *src;
    size_t nd;
    plan_t pl;
    int sync;

    if (!slot_free(s, p, j)) {
        return 0;
    }
    plan_write(c->me, p, q, &pl);
    src = send_slot(c, p, j) + pl.off;
    pat_fill(src, pl.size, pl.seed, 0);
    nd = split(s->d, pl.size, (uintptr_t)src, remote_slot(c, p, j) + pl.off,
               &s->rng);
    s->busy[p][j] = q + 1;
    s->next_seq[p]++;

    /* a flushed write is now and then sync (the flush follows it) */
    sync = (pl.signal == SIG_FLUSH) && (rnd(&s->rng) % 4 == 0);
    if (sync) {
        st = hixl_transfer_sync(c->e, c->names[p], HIXL_WRITE, s->d, nd,
                                OP_TIMEOUT_MS);
        if (st != HIXL_SUCCESS) {
            CNT(&c->ss, failures, 1);
            child_err(c, "sync WRITE seq %" PRIu64 " (%zu bytes, %zu "
                      "descriptors) to e%u: %s: %s", q, pl.size, nd, p,
                      hixl_strerror(st), hixl_last_error());
            s->broken[p] = 1;
            return 1;
        }
        CNT(&c->ss, writes, 1);
        CNT(&c->ss, writes_sync, 1);
        CNT(&c->ss, bytes_written, pl.size);
    } else {
        memset(&args, 0, sizeof(args));
        args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
        args.timeout_ms = OP_TIMEOUT_MS;
        if (pl.signal == SIG_NOTIFY) {
            memset(&msg, 0, sizeof(msg));
            msg.magic = NOTIFY_MAGIC;
            msg.from  = c->me;
            msg.slot  = j;
            msg.seq   = q;
            args.field_mask    |= HIXL_TRANSFER_ARG_NOTIFY;
            args.notify.name    = NOTIFY_DATA;
            args.notify.msg     = &msg;
            args.notify.msg_len = sizeof(msg);
        }
        st = hixl_transfer_async(c->e, c->names[p], HIXL_WRITE, s->d, nd,
                                 &args, &s->req[p][j]);
        if (st != HIXL_SUCCESS) {
            s->req[p][j] = NULL;
            CNT(&c->ss, failures, 1);
            child_err(c, "post of WRITE seq %" PRIu64 " (%zu bytes, %zu "
                      "descriptors) to e%u: %s: %s", q, pl.size, nd, p,
                      hixl_strerror(st), hixl_last_error());
            s->broken[p] = 1;
            return 1;
        }
        s->req_bytes[p][j] = pl.size;
    }
    if (pl.signal == SIG_FLUSH) {
        /* at once: the signal must wait for the write by itself */
        st = hixl_flush_layer(c->e, c->names[p], c->me, q, 0);
        if (st != HIXL_SUCCESS) {
            CNT(&c->ss, failures, 1);
            child_err(c, "hixl_flush_layer(e%u, stream %u, gen %" PRIu64
                      "): %s: %s", p, c->me, q, hixl_strerror(st),
                      hixl_last_error());
            s->broken[p] = 1;
        }
    }
    return 1;
}

static int sender_read(sender_t *s)
{
    child_t *c = s->c;
    unsigned p = child_pick_peer(c, &s->rng);
    uint64_t x = rnd(&s->rng);
    hixl_status_t st;
    uint8_t *buf;
    size_t nd, len;
    uintptr_t remote;

    if (s->broken[p]) {
        return 0;
    }
    len = (x % 4 == 0) ? 1 + (size_t)((x >> 8) % 4096) :
                         1 + (size_t)((x >> 8) % SLOT_DATA);
    s->rpeer = p;
    s->rlen  = len;
    s->roff  = (size_t)(rnd(&s->rng) % (STATIC_SIZE - len + 1));
    s->rskew = (size_t)(rnd(&s->rng) % SLOT_SKEW);
    buf      = read_buf(c) + s->rskew;
    memset(buf, 0, len);
    remote = (uintptr_t)(c->base[p] + (uint64_t)c->n * c->k * SLOT_SIZE +
                         s->roff);
    nd = split(s->d, len, (uintptr_t)buf, remote, &s->rng);
    if (rnd(&s->rng) % 2) {
        st = hixl_transfer_sync(c->e, c->names[p], HIXL_READ, s->d, nd,
                                OP_TIMEOUT_MS);
        if (st != HIXL_SUCCESS) {
            CNT(&c->ss, failures, 1);
            child_err(c, "sync READ of %zu bytes (%zu descriptors) from "
                      "e%u: %s: %s", len, nd, p, hixl_strerror(st),
                      hixl_last_error());
            s->broken[p] = 1;
            return 1;
        }
        sender_read_check(s);
        return 1;
    }
    st = hixl_transfer_async(c->e, c->names[p], HIXL_READ, s->d, nd, NULL,
                             &s->rreq);
    if (st != HIXL_SUCCESS) {
        s->rreq = NULL;
        CNT(&c->ss, failures, 1);
        child_err(c, "post of READ of %zu bytes (%zu descriptors) from e%u: "
                  "%s: %s", len, nd, p, hixl_strerror(st), hixl_last_error());
        s->broken[p] = 1;
    }
    return 1;
}

/* Nothing in flight but to peers already given up on (a request to them
 * failed: what is there will not come back). */
static int sender_idle(sender_t *s)
{
    child_t *c = s->c;
    unsigned p, j;

    if ((s->rreq != NULL) && !s->broken[s->rpeer]) {
        return 0;
    }
    for (p = 0; p < c->n; ++p) {
        for (j = 0; j < c->k; ++j) {
            if ((p != c->me) && !s->broken[p] && !slot_free(s, p, j)) {
                return 0;
            }
        }
    }
    return 1;
}

/* At the end: count the slots still out (their writes are lost). */
static void sender_count_stuck(sender_t *s, int timed_out)
{
    child_t *c = s->c;
    unsigned p, j;

    for (p = 0; p < c->n; ++p) {
        for (j = 0; j < c->k; ++j) {
            if ((p == c->me) || slot_free(s, p, j)) {
                continue;
            }
            CNT(&c->ss, stuck, 1);
            if (!s->broken[p]) {
                /* a peer given up on has its failure counted already */
                CNT(&c->ss, failures, 1);
            }
            child_err(c, "slot %u at e%u (seq %" PRIu64 ") not returned%s%s",
                      j, p, s->busy[p][j] - 1, timed_out ? " within the "
                      "drain timeout" : ": a request there failed earlier",
                      s->req[p][j] ? "; its WRITE is still WAITING" : "");
        }
    }
}

void *sender_main(void *arg)
{
    child_t *c = arg;
    sender_t *s;
    uint64_t drain_deadline = 0;
    unsigned p, tries, did;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        child_err(c, "sender: out of memory");
        CNT(&c->ss, failures, 1);
        atomic_store(&c->sender_over, 1);
        return NULL;
    }
    s->c   = c;
    s->rng = mix(g_cfg.seed ^ 0x73656e64ull ^ ((uint64_t)c->me << 32));
    for (;;) {
        did = sender_reap(s);
        if ((now_ms() >= c->end_ms) || atomic_load(&c->stop)) {
            if (drain_deadline == 0) {
                drain_deadline = now_ms() + DRAIN_TIMEOUT_S * 1000ull;
            }
            if (sender_idle(s)) {
                sender_count_stuck(s, 0);
                break;
            }
            if (now_ms() > drain_deadline) {
                sender_count_stuck(s, 1);
                break;
            }
            usleep(did ? 0 : 200);
            continue;
        }
        if ((s->rreq == NULL) && (rnd(&s->rng) % 12 == 0)) {
            did += (unsigned)sender_read(s);
        } else {
            for (tries = 0; tries < 2 * c->n; ++tries) {
                p = child_pick_peer(c, &s->rng);
                if (!s->broken[p] && sender_write(s, p)) {
                    ++did;
                    break;
                }
            }
        }
        if (!did) {
            usleep(100);
        }
    }
    free(s);
    atomic_store(&c->sender_over, 1);
    return NULL;
}
