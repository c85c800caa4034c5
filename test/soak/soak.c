/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: N engines in N processes write into each other for a while, and
 * every byte that lands is checked.
 *
 *   soak [-t SECONDS] [-n ENGINES] [-s SEED] [-k SLOTS] [-r RSS_MIB]
 *        [-w WARMUP_SECONDS] [-c CHURN_CYCLES] [-q]
 *
 * The parent forks the engine processes before anything initializes UCX or
 * hixl (it never does itself) and only coordinates them over pipes: it
 * gathers their names and region addresses, hands every engine the table,
 * starts them together, stops them together, collects their reports and
 * prints one summary table, ending with the plain line "N passed, M failed"
 * (an engine passes with no corruption and no failure).  Exit status 0 only
 * when every engine passed and none grew its RSS after warm-up by more than
 * -r MiB.  UCX_TLS is taken from the environment (and printed).
 *
 * Each engine listens on 127.0.0.1:0 (hixl.ListenEphemeral) and allocates
 * one receive region with hixl_alloc_mem(): a ring of K slots per sender,
 * then a static area filled with the engine's own pattern.  It connects to
 * every other engine.  Two threads then run for the duration:
 *
 *  - the sender writes to random peers, one write per free slot of its ring
 *    there: 1 B .. 1 MiB at an unaligned offset in the slot, split into a
 *    random number of unaligned descriptors in random order, with a pattern
 *    derived from (sender, receiver, sequence).  A write is posted async (or,
 *    now and then, sync) and is followed either by hixl_flush_layer (stream =
 *    sender index, generation = sequence, layer 0), posted at once without
 *    waiting for the write, or carries a per-transfer notify.  Now and then
 *    it READs a random range of a peer's static area and checks it.
 *  - the receiver takes notifies, polls the layer signals it expects
 *    (hixl_test_layer; hixl_wait_layer when idle) and, the moment it sees
 *    the signal of a write, checks every byte of the slot: the write's range
 *    against its pattern, everything else against the guard byte the slot
 *    was left with (a write landing beside its range is caught too).  It
 *    then restores the guard and returns the slot to its sender with a
 *    "done" notify, so no slot is overwritten before it was checked.
 *
 * A layer signal of a newer generation supersedes an older one (hixl.h); a
 * receiver that finds the generation it waits for superseded knows the
 * newer flush covered the write (it was posted before it), and checks it
 * as if signalled.
 *
 * Which sequence goes to which slot, with which size, offset and signal,
 * follows from (seed, sender, receiver, sequence), so the receiver computes
 * what it must see without being told.
 *
 * Beside them, clients come and go at engine e0 (churn.h): each connects,
 * writes into e0's churn area, reads it back and checks it, and ends every
 * way a client can (disconnect, finalize alone, _exit, SIGKILL; from
 * short-lived processes and from one that lives through the run); e0's
 * mappings, descriptors, threads and RSS must not grow with them.  -c
 * sets their number: the churn goes on alone after the traffic until that
 * many connections ended (0: as many as the run has time for).
 *
 * Nothing waits forever: every wait on a child is bounded, a child that
 * dies or goes silent is reported (and the others finish without it), every
 * child has an alarm() and dies with the parent.
 */
#define _GNU_SOURCE
#include "config.h"
#include "fd_io.h"
#include "churn.h"

#include <hixl/hixl.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ENGINES   16
#define MAX_SLOTS     64
#define SLOT_DATA     ((size_t)1 << 20)        /* largest write */
#define SLOT_SKEW     64                       /* largest offset in a slot */
#define SLOT_SIZE     (SLOT_DATA + SLOT_SKEW)
#define STATIC_SIZE   ((size_t)4 << 20)        /* READ area per engine */
/* The churn at e0 (churn.h): one client's write, one-shot clients at a
 * time. */
#define SOAK_CHURN_LEN      ((size_t)256 << 10)
#define SOAK_CHURN_PARALLEL 2
#define MAX_DESCS     256
#define GUARD         0xa5

#define SETUP_TIMEOUT_S  120   /* engines up, then connected */
#define DRAIN_TIMEOUT_S  60    /* slots back after the end */
#define REPORT_TIMEOUT_S 60    /* finalize and report */
#define SILENCE_S        60    /* no heartbeat for this long: hung */
#define OP_TIMEOUT_MS    30000
#define NOTIFY_TIMEOUT_MS 20000

#define NOTIFY_DATA "soak.data"
#define NOTIFY_DONE "soak.done"
#define NOTIFY_MAGIC 0x736f616b6e746679ull

#define MiB(x) ((double)(x) / 1048576.0)

/* ---- configuration, shared by parent and children ------------------------- */

typedef struct cfg {
    unsigned seconds;
    unsigned engines;
    unsigned slots;
    unsigned warmup;
    uint64_t seed;
    uint64_t rss_limit;   /* bytes of growth after warm-up */
    unsigned churn;       /* churn cycles, 0: as many as fit */
    int      quiet;
} cfg_t;

static cfg_t g_cfg;

/*
 * What e0 may grow by over the churn, absolute (the long-lived traffic
 * beside it moves e0's heap and UCX's pools): 16 mappings, 4 descriptors,
 * no thread, 8 MiB.  Over 10,000 connections a leak of one mapping or
 * descriptor per 1,000, or of 1 KiB per connection, is outside it.
 */
static const churn_slack_t soak_churn_slack = {16, 4, 0, 8192};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%lu %lu", &size, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- patterns -------------------------------------------------------------- */

static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mix(*state);
}

/* Byte i of pattern `seed` is byte (i & 7) of mix(i / 8 ^ mix(seed)): an
 * index, not an address, so either side computes it anywhere. */
static inline uint64_t pat_word(uint64_t smix, uint64_t word)
{
    return mix(word ^ smix);
}

static void pat_fill(uint8_t *p, size_t len, uint64_t seed, uint64_t idx)
{
    uint64_t s = mix(seed), w;
    size_t k = 0;
    unsigned b;

    while ((k < len) && ((idx + k) & 7)) {
        w = pat_word(s, (idx + k) >> 3);
        p[k] = (uint8_t)(w >> (8 * ((idx + k) & 7)));
        ++k;
    }
    for (; k + 8 <= len; k += 8) {
        w = pat_word(s, (idx + k) >> 3);
        memcpy(p + k, &w, 8);   /* little-endian: byte b is bits 8b.. */
    }
    if (k < len) {
        w = pat_word(s, (idx + k) >> 3);
        for (b = 0; k < len; ++b, ++k) {
            p[k] = (uint8_t)(w >> (8 * b));
        }
    }
}

static inline uint8_t pat_byte(uint64_t seed, uint64_t idx)
{
    return (uint8_t)(pat_word(mix(seed), idx >> 3) >> (8 * (idx & 7)));
}

/* Number of bytes that differ from the pattern; the first in *first. */
static size_t pat_check(const uint8_t *p, size_t len, uint64_t seed,
                        uint64_t idx, size_t *first)
{
    uint64_t s = mix(seed), w, got;
    size_t k = 0, bad = 0;
    unsigned b;

    *first = len;
    while (k < len) {
        if ((((idx + k) & 7) == 0) && (k + 8 <= len)) {
            w = pat_word(s, (idx + k) >> 3);
            memcpy(&got, p + k, 8);
            if (got == w) {
                k += 8;
                continue;
            }
            for (b = 0; b < 8; ++b) {
                if (p[k + b] != (uint8_t)(w >> (8 * b))) {
                    if (bad++ == 0) {
                        *first = k + b;
                    }
                }
            }
            k += 8;
            continue;
        }
        w = pat_word(s, (idx + k) >> 3);
        if (p[k] != (uint8_t)(w >> (8 * ((idx + k) & 7)))) {
            if (bad++ == 0) {
                *first = k;
            }
        }
        ++k;
    }
    return bad;
}

/* Bytes of [p, +len) that are not the guard byte. */
static size_t guard_check(const uint8_t *p, size_t len, size_t *first)
{
    const uint64_t gw = 0x0101010101010101ull * GUARD;
    size_t k = 0, bad = 0;
    uint64_t w;

    *first = len;
    while (k < len) {
        if ((((uintptr_t)(p + k) & 7) == 0) && (k + 8 <= len)) {
            memcpy(&w, p + k, 8);
            if (w == gw) {
                k += 8;
                continue;
            }
        }
        if (p[k] != GUARD) {
            if (bad++ == 0) {
                *first = k;
            }
        }
        ++k;
    }
    return bad;
}

/* ---- what every write is (both sides compute it) ------------------------- */

enum { SIG_FLUSH = 0, SIG_NOTIFY = 1 };

typedef struct plan {
    int      signal;
    size_t   off;     /* in the slot */
    size_t   size;
    uint64_t seed;    /* pattern */
} plan_t;

static void plan_write(unsigned s, unsigned r, uint64_t q, plan_t *p)
{
    uint64_t base = mix(g_cfg.seed ^ ((uint64_t)s << 56) ^ ((uint64_t)r << 48));
    uint64_t x = mix(base ^ mix(q ^ 0x706c616eull)), y = mix(x);
    unsigned cls = (unsigned)(x % 16), bits;

    p->signal = (int)((x >> 8) & 1);
    p->off    = (size_t)((x >> 16) % SLOT_SKEW);
    if (cls == 0) {
        p->size = 1 + (size_t)(y % 64);               /* tiny */
    } else if (cls < 4) {
        p->size = 65 + (size_t)(y % 4032);            /* small */
    } else if (cls == 4) {
        p->size = SLOT_DATA;                          /* the largest */
    } else {
        bits    = 12 + (unsigned)((y >> 40) % 9);     /* 4 KiB .. 1 MiB */
        p->size = ((size_t)1 << bits) + (size_t)(y % ((uint64_t)1 << bits));
        if (p->size > SLOT_DATA) {
            p->size = SLOT_DATA;
        }
    }
    p->seed = mix(base ^ q);
}

static uint64_t static_seed(unsigned e)
{
    return mix(g_cfg.seed ^ 0x5354415449430000ull ^ e);
}

/* ---- pipes ------------------------------------------------------------------ */

typedef struct stats {
    uint64_t writes, reads;            /* completed, as initiator */
    uint64_t bytes_written, bytes_read;
    uint64_t writes_sync;
    uint64_t verified;                 /* slots checked, as receiver */
    uint64_t verified_bytes;
    uint64_t layer_signals;            /* flushed writes seen signalled */
    uint64_t superseded;               /* ... of them seen superseded */
    uint64_t waits;                    /* hixl_wait_layer calls */
    uint64_t xfer_notifies;            /* per-transfer notifies received */
    uint64_t done_sent, done_recv;
    uint64_t corruptions;              /* writes or reads with bad bytes */
    uint64_t bad_bytes;
    uint64_t failures;                 /* calls or requests that failed */
    uint64_t stuck;                    /* slots never returned */
    uint64_t rss_start, rss_warm, rss_end, rss_max;
    int32_t  finalize_status;
    int32_t  pad;
} stats_t;

enum {
    C_READY = 1,     /* name, base, len */
    C_CONNECTED,
    C_HEARTBEAT,     /* stats */
    C_DRAINED,       /* sender done: every slot back */
    C_STOPPED,       /* no more hixl calls until P_FINALIZE */
    C_REPORT,        /* final stats; text: first problem */
    C_ERROR          /* text; the child exits */
};

typedef struct c2p {
    uint32_t type;
    uint32_t idx;
    uint64_t base, len;
    char     name[HIXL_ENGINE_NAME_MAX + 1];
    stats_t  st;
    char     text[512];
} c2p_t;

enum { P_PEERS = 1, P_GO, P_FINISH, P_FINALIZE };

typedef struct p2c {
    uint32_t type;
    uint32_t n;
    uint64_t base[MAX_ENGINES];
    char     names[MAX_ENGINES][HIXL_ENGINE_NAME_MAX + 1];
} p2c_t;

_Static_assert(sizeof(c2p_t) <= PIPE_BUF, "a message must be atomic");
_Static_assert(sizeof(p2c_t) <= PIPE_BUF, "a message must be atomic");

/* Read exactly len bytes within timeout_ms: 0, -1 on EOF or error, -2 on
 * timeout. */
static int read_timed(int fd, void *buf, size_t len, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    struct pollfd pfd;
    uint8_t *p = buf;
    ssize_t n;
    int64_t left;
    int rc;

    while (len > 0) {
        left = (int64_t)deadline - (int64_t)now_ms();
        if (left < 0) {
            return -2;
        }
        pfd.fd      = fd;
        pfd.events  = POLLIN;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int)left);
        if ((rc < 0) && (errno == EINTR)) {
            continue;
        }
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            return -2;
        }
        n = read(fd, p, len);
        if (n < 0) {
            if ((errno == EINTR) || (errno == EAGAIN)) {
                continue;
            }
            return -1;
        }
        if (n == 0) {
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- engine process ---------------------------------------------------------- */

typedef struct child {
    unsigned        me, n, k;
    int             cmd_fd, rep_fd;
    hixl_engine_t  *e;
    char            names[MAX_ENGINES][HIXL_ENGINE_NAME_MAX + 1];
    uint64_t        base[MAX_ENGINES];   /* peers' receive regions */
    uint8_t        *region;              /* ours: rings, then static */
    size_t          region_len;
    hixl_mem_handle_t region_h;
    uint8_t        *local;               /* send slots, then read buffer */
    size_t          local_len;
    hixl_mem_handle_t local_h;
    uint64_t        start_ms, end_ms;

    /* sender -> receiver thread: per peer and slot, sequence + 1 of the
     * last write the peer returned (0: none) */
    _Atomic uint64_t done[MAX_ENGINES][MAX_SLOTS];
    atomic_int      sender_over;         /* sender finished draining */
    atomic_int      stop;                /* stop the sender (parent said) */

    stats_t         ss;                  /* sender's counters */
    stats_t         rs;                  /* receiver's counters */
    pthread_mutex_t err_lock;
    char            first_err[512];
    unsigned        nerr;
} child_t;

#define CNT(_s, _f, _v) __atomic_fetch_add(&(_s)->_f, (uint64_t)(_v), \
                                           __ATOMIC_RELAXED)

static void child_err(child_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Note a problem: the first is kept for the report, the first few go to
 * stderr. */
static void child_err(child_t *c, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->err_lock);
    if (c->nerr == 0) {
        snprintf(c->first_err, sizeof(c->first_err), "%s", text);
    }
    if (c->nerr < 10) {
        fprintf(stderr, "soak[e%u]: %s\n", c->me, text);
    } else if (c->nerr == 10) {
        fprintf(stderr, "soak[e%u]: (further problems not shown)\n", c->me);
    }
    c->nerr++;
    pthread_mutex_unlock(&c->err_lock);
}

static void child_send(child_t *c, uint32_t type, const char *text)
{
    c2p_t m;
    unsigned f;

    memset(&m, 0, sizeof(m));
    m.type = type;
    m.idx  = c->me;
    if (c->e != NULL) {
        snprintf(m.name, sizeof(m.name), "%s", hixl_engine_name(c->e));
    }
    m.base = (uintptr_t)c->region;
    m.len  = c->region_len;
    /* sum both threads' counters (not the rss fields: rs holds them) */
    for (f = 0; f < offsetof(stats_t, rss_start) / sizeof(uint64_t); ++f) {
        ((uint64_t*)&m.st)[f] =
            __atomic_load_n(&((uint64_t*)&c->ss)[f], __ATOMIC_RELAXED) +
            __atomic_load_n(&((uint64_t*)&c->rs)[f], __ATOMIC_RELAXED);
    }
    m.st.rss_start       = c->rs.rss_start;
    m.st.rss_warm        = c->rs.rss_warm;
    m.st.rss_end         = c->rs.rss_end;
    m.st.rss_max         = c->rs.rss_max;
    m.st.finalize_status = c->rs.finalize_status;
    if (text != NULL) {
        snprintf(m.text, sizeof(m.text), "%s", text);
    }
    if (hx_write_all(c->rep_fd, &m, sizeof(m)) != 0) {
        _exit(5);   /* the parent is gone */
    }
}

static void child_fatal(child_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

static void child_fatal(child_t *c, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fprintf(stderr, "soak[e%u]: fatal: %s\n", c->me, text);
    child_send(c, C_ERROR, text);
    _exit(2);
}

/* Wait for a command of the given type from the parent. */
static void child_expect(child_t *c, p2c_t *m, uint32_t type, int timeout_s)
{
    int rc = read_timed(c->cmd_fd, m, sizeof(*m), timeout_s * 1000);

    if (rc != 0) {
        child_fatal(c, "no command %u from the parent (%s)", type,
                    (rc == -2) ? "timeout" : "pipe closed");
    }
    if (m->type != type) {
        child_fatal(c, "command %u from the parent, expected %u", m->type,
                    type);
    }
}

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

typedef struct xfer_msg {
    uint64_t magic;
    uint32_t from;
    uint32_t slot;
    uint64_t seq;
} xfer_msg_t;

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

static void *sender_main(void *arg)
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

/* ---- receiver (the process's main thread) --------------------------------- */

typedef struct receiver {
    child_t *c;
    uint64_t expect[MAX_ENGINES][MAX_SLOTS];   /* next seq in the slot */
    uint64_t arrived[MAX_ENGINES][MAX_SLOTS];  /* notified seq + 1, 0: none */
    int      broken[MAX_ENGINES];
} receiver_t;

static uint8_t *recv_slot(child_t *c, unsigned s, unsigned j)
{
    return c->region + ((size_t)s * c->k + j) * SLOT_SIZE;
}

static int peer_index(child_t *c, const char *name)
{
    unsigned p;

    for (p = 0; p < c->n; ++p) {
        if (!strcmp(c->names[p], name)) {
            return (int)p;
        }
    }
    return -1;
}

static void recv_notifies(receiver_t *r)
{
    child_t *c = r->c;
    hixl_notify_t *n = NULL;
    size_t count = 0, i;
    xfer_msg_t m;
    hixl_status_t st;
    int from;

    st = hixl_get_notifies(c->e, &n, &count);
    if (st != HIXL_SUCCESS) {
        CNT(&c->rs, failures, 1);
        child_err(c, "hixl_get_notifies: %s: %s", hixl_strerror(st),
                  hixl_last_error());
        return;
    }
    for (i = 0; i < count; ++i) {
        from = peer_index(c, n[i].remote);
        if (n[i].msg_len == sizeof(m)) {
            memcpy(&m, n[i].msg, sizeof(m));
        } else {
            memset(&m, 0, sizeof(m));
        }
        if ((from < 0) || (m.magic != NOTIFY_MAGIC) ||
            (m.from != (uint32_t)from) || (m.slot >= c->k) ||
            (m.seq % c->k != m.slot)) {
            CNT(&c->rs, failures, 1);
            child_err(c, "unexpected notify \"%s\" (%zu bytes) from %s",
                      n[i].name, n[i].msg_len, n[i].remote);
            continue;
        }
        if (!strcmp(n[i].name, NOTIFY_DATA)) {
            CNT(&c->rs, xfer_notifies, 1);
            if ((m.seq != r->expect[from][m.slot]) ||
                (r->arrived[from][m.slot] != 0)) {
                CNT(&c->rs, failures, 1);
                child_err(c, "notify of seq %" PRIu64 " in slot %u from e%d, "
                          "while seq %" PRIu64 " is due there", m.seq,
                          m.slot, from, r->expect[from][m.slot]);
                continue;
            }
            r->arrived[from][m.slot] = m.seq + 1;
        } else if (!strcmp(n[i].name, NOTIFY_DONE)) {
            CNT(&c->rs, done_recv, 1);
            atomic_store_explicit(&c->done[from][m.slot], m.seq + 1,
                                  memory_order_release);
        } else {
            CNT(&c->rs, failures, 1);
            child_err(c, "notify of unknown name \"%s\" from %s", n[i].name,
                      n[i].remote);
        }
    }
    hixl_release_notifies(n, count);
}

/* Check slot j of sender s, which holds write q; restore its guard and
 * return it. */
static void recv_verify(receiver_t *r, unsigned s, unsigned j, uint64_t q,
                        const plan_t *pl)
{
    child_t *c = r->c;
    uint8_t *slot = recv_slot(c, s, j);
    hixl_notify_desc_t nd;
    hixl_status_t st;
    xfer_msg_t m;
    size_t bad, gbad, after, first, gfirst = 0, f;

    /* the write's range, then the guard before and after it */
    bad  = pat_check(slot + pl->off, pl->size, pl->seed, 0, &first);
    gbad = guard_check(slot, pl->off, &f);
    if (gbad) {
        gfirst = f;
    }
    after = guard_check(slot + pl->off + pl->size,
                        SLOT_SIZE - pl->off - pl->size, &f);
    if (after && !gbad) {
        gfirst = pl->off + pl->size + f;
    }
    gbad += after;
    if (bad || gbad) {
        CNT(&c->rs, corruptions, 1);
        CNT(&c->rs, bad_bytes, bad + gbad);
        if (bad) {
            child_err(c, "write seq %" PRIu64 " from e%u (slot %u, [%zu, "
                      "+%zu), %s): %zu bytes wrong when its signal was seen, "
                      "the first at %zu: 0x%02x, expected 0x%02x", q, s, j,
                      pl->off, pl->size, (pl->signal == SIG_FLUSH) ?
                      "layer flush" : "notify", bad, first,
                      slot[pl->off + first], pat_byte(pl->seed, first));
        }
        if (gbad) {
            child_err(c, "write seq %" PRIu64 " from e%u (slot %u, [%zu, "
                      "+%zu)): %zu bytes outside its range changed, the "
                      "first at slot offset %zu: 0x%02x", q, s, j, pl->off,
                      pl->size, gbad, gfirst, slot[gfirst]);
        }
    }
    CNT(&c->rs, verified, 1);
    CNT(&c->rs, verified_bytes, pl->size);
    memset(slot + pl->off, GUARD, pl->size);
    if (gbad) {
        memset(slot, GUARD, SLOT_SIZE);
    }

    memset(&m, 0, sizeof(m));
    m.magic    = NOTIFY_MAGIC;
    m.from     = c->me;
    m.slot     = j;
    m.seq      = q;
    nd.name    = NOTIFY_DONE;
    nd.msg     = &m;
    nd.msg_len = sizeof(m);
    st = hixl_send_notify(c->e, c->names[s], &nd, NOTIFY_TIMEOUT_MS);
    if (st != HIXL_SUCCESS) {
        CNT(&c->rs, failures, 1);
        child_err(c, "done notify for seq %" PRIu64 " to e%u: %s: %s", q, s,
                  hixl_strerror(st), hixl_last_error());
        r->broken[s] = 1;
        return;
    }
    CNT(&c->rs, done_sent, 1);
}

/* Look at every slot; returns how many were checked.  *wait_s / *wait_q
 * name a flushed write still awaited (for an idle hixl_wait_layer). */
static unsigned recv_scan(receiver_t *r, int *wait_s, uint64_t *wait_q)
{
    child_t *c = r->c;
    unsigned s, j, n = 0;
    hixl_status_t st;
    uint64_t q;
    plan_t pl;
    int ready;

    *wait_s = -1;
    for (s = 0; s < c->n; ++s) {
        if ((s == c->me) || r->broken[s]) {
            continue;
        }
        for (j = 0; j < c->k; ++j) {
            q = r->expect[s][j];
            plan_write(s, c->me, q, &pl);
            ready = 0;
            if (pl.signal == SIG_NOTIFY) {
                ready = (r->arrived[s][j] == q + 1);
            } else {
                st = hixl_test_layer(c->e, c->names[s], s, q, 0, &ready);
                if (st == HIXL_SUCCESS) {
                    if (ready) {
                        CNT(&c->rs, layer_signals, 1);
                    } else if (*wait_s < 0) {
                        *wait_s = (int)s;
                        *wait_q = q;
                    }
                } else if ((st == HIXL_FAILED) &&
                           (strstr(hixl_last_error(), "superseded") != NULL)) {
                    /* a later flush of this sender came: it was posted
                     * after this write, so it covers it */
                    ready = 1;
                    CNT(&c->rs, layer_signals, 1);
                    CNT(&c->rs, superseded, 1);
                } else {
                    CNT(&c->rs, failures, 1);
                    child_err(c, "hixl_test_layer(e%u, stream %u, gen %"
                              PRIu64 "): %s: %s", s, s, q, hixl_strerror(st),
                              hixl_last_error());
                    r->broken[s] = 1;
                    break;
                }
            }
            if (!ready) {
                continue;
            }
            recv_verify(r, s, j, q, &pl);
            r->arrived[s][j] = 0;
            r->expect[s][j]  = q + c->k;
            ++n;
        }
    }
    return n;
}

static void child_heartbeat(child_t *c)
{
    uint64_t rss = rss_bytes();

    if (rss > c->rs.rss_max) {
        c->rs.rss_max = rss;
    }
    child_send(c, C_HEARTBEAT, NULL);
}

static int child_main(unsigned me, int cmd_fd, int rep_fd)
{
    hixl_option_t opts[6];
    char streams[16];
    child_t *c;
    p2c_t cmd;
    receiver_t *r;
    pthread_t th;
    hixl_mem_desc_t md;
    hixl_status_t st;
    uint64_t next_beat, next_pipe, warm_at, t;
    unsigned p, j;
    int drained = 0, finish = 0, wait_s, rc;
    uint64_t wait_q = 0;
    struct pollfd pfd;

    c = calloc(1, sizeof(*c));
    r = calloc(1, sizeof(*r));
    if ((c == NULL) || (r == NULL)) {
        _exit(6);
    }
    pthread_mutex_init(&c->err_lock, NULL);
    c->me     = me;
    c->n      = g_cfg.engines;
    c->k      = g_cfg.slots;
    c->cmd_fd = cmd_fd;
    c->rep_fd = rep_fd;
    r->c      = c;
    for (p = 0; p < MAX_ENGINES; ++p) {
        for (j = 0; j < MAX_SLOTS; ++j) {
            r->expect[p][j] = j;   /* sequence q goes to slot q % K */
        }
    }

    snprintf(streams, sizeof(streams), "%u", c->n);
    opts[0].key = "hixl.ListenEphemeral"; opts[0].value = "1";
    opts[1].key = "hixl.MaxStreams";      opts[1].value = streams;
    opts[2].key = "hixl.MaxLayers";       opts[2].value = "1";
    opts[3].key = "hixl.ProgressThread";  opts[3].value = "1";
    st = hixl_initialize("127.0.0.1:0", opts, 4, &c->e);
    if (st != HIXL_SUCCESS) {
        c->e = NULL;
        child_fatal(c, "hixl_initialize: %s: %s", hixl_strerror(st),
                    hixl_last_error());
    }

    /* receive region: a ring per sender, then the static area */
    c->region_len = (size_t)c->n * c->k * SLOT_SIZE + STATIC_SIZE +
                    CHURN_AREA(SOAK_CHURN_LEN, SOAK_CHURN_PARALLEL);
    st = hixl_alloc_mem(c->e, c->region_len, HIXL_MEM_HOST,
                        (void**)&c->region, &c->region_h);
    if (st != HIXL_SUCCESS) {
        child_fatal(c, "hixl_alloc_mem(%zu): %s: %s", c->region_len,
                    hixl_strerror(st), hixl_last_error());
    }
    memset(c->region, GUARD, (size_t)c->n * c->k * SLOT_SIZE);
    pat_fill(c->region + (size_t)c->n * c->k * SLOT_SIZE, STATIC_SIZE,
             static_seed(me), 0);

    /* send slots per peer, then a read buffer: plain memory, registered */
    c->local_len = ((size_t)c->n * c->k + 1) * SLOT_SIZE;
    c->local = mmap(NULL, c->local_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->local == MAP_FAILED) {
        child_fatal(c, "mmap(%zu): %s", c->local_len, strerror(errno));
    }
    memset(c->local, 0, c->local_len);
    md.addr = (uintptr_t)c->local;
    md.len  = c->local_len;
    st = hixl_register_mem(c->e, &md, HIXL_MEM_HOST, &c->local_h);
    if (st != HIXL_SUCCESS) {
        child_fatal(c, "hixl_register_mem(%zu): %s: %s", c->local_len,
                    hixl_strerror(st), hixl_last_error());
    }

    child_send(c, C_READY, NULL);
    child_expect(c, &cmd, P_PEERS, SETUP_TIMEOUT_S);
    if (cmd.n != c->n) {
        child_fatal(c, "the parent sent %u engines, expected %u", cmd.n, c->n);
    }
    for (p = 0; p < c->n; ++p) {
        memcpy(c->names[p], cmd.names[p], sizeof(c->names[p]));
        c->names[p][HIXL_ENGINE_NAME_MAX] = '\0';
        c->base[p] = cmd.base[p];
    }
    for (p = 0; p < c->n; ++p) {
        if (p == me) {
            continue;
        }
        st = hixl_connect(c->e, c->names[p], OP_TIMEOUT_MS);
        if (st != HIXL_SUCCESS) {
            child_fatal(c, "hixl_connect(e%u %s): %s: %s", p, c->names[p],
                        hixl_strerror(st), hixl_last_error());
        }
    }
    child_send(c, C_CONNECTED, NULL);
    child_expect(c, &cmd, P_GO, SETUP_TIMEOUT_S);

    c->start_ms       = now_ms();
    c->end_ms         = c->start_ms + (uint64_t)g_cfg.seconds * 1000;
    c->rs.rss_start   = rss_bytes();
    c->rs.rss_max     = c->rs.rss_start;
    warm_at           = c->start_ms + (uint64_t)g_cfg.warmup * 1000;
    next_beat         = c->start_ms + 1000;
    next_pipe         = c->start_ms;
    if (pthread_create(&th, NULL, sender_main, c) != 0) {
        child_fatal(c, "pthread_create failed");
    }

    /* until the parent says every engine has its slots back */
    while (!finish) {
        recv_notifies(r);
        if (recv_scan(r, &wait_s, &wait_q) == 0) {
            if (wait_s >= 0) {
                /* nothing ready: wait a little for the oldest flush */
                CNT(&c->rs, waits, 1);
                st = hixl_wait_layer(c->e, c->names[wait_s], (uint32_t)wait_s,
                                     wait_q, 0, 1);
                if ((st != HIXL_SUCCESS) && (st != HIXL_TIMEOUT) &&
                    !((st == HIXL_FAILED) &&
                      strstr(hixl_last_error(), "superseded"))) {
                    CNT(&c->rs, failures, 1);
                    child_err(c, "hixl_wait_layer(e%d, gen %" PRIu64 "): "
                              "%s: %s", wait_s, wait_q, hixl_strerror(st),
                              hixl_last_error());
                    r->broken[wait_s] = 1;
                }
            } else {
                usleep(200);
            }
        }
        t = now_ms();
        if ((c->rs.rss_warm == 0) && (t >= warm_at)) {
            c->rs.rss_warm = rss_bytes();
        }
        if (!drained && atomic_load(&c->sender_over)) {
            drained = 1;
            child_send(c, C_DRAINED, NULL);
        }
        if (t >= next_beat) {
            next_beat = t + 1000;
            child_heartbeat(c);
        }
        if (t >= next_pipe) {
            next_pipe = t + 10;
            pfd.fd      = cmd_fd;
            pfd.events  = POLLIN;
            pfd.revents = 0;
            if (poll(&pfd, 1, 0) > 0) {
                rc = read_timed(cmd_fd, &cmd, sizeof(cmd), 10000);
                if (rc != 0) {
                    /* the parent is gone: nobody to report to */
                    _exit(4);
                }
                if (cmd.type == P_FINISH) {
                    finish = 1;
                }
            }
        }
    }
    atomic_store(&c->stop, 1);
    pthread_join(th, NULL);
    /* anything still due was never sent (the senders are drained) */
    recv_notifies(r);
    for (p = 0; p < c->n; ++p) {
        for (j = 0; j < c->k; ++j) {
            if (r->arrived[p][j] != 0) {
                CNT(&c->rs, failures, 1);
                child_err(c, "notify of seq %" PRIu64 " from e%u arrived "
                          "but was not checked", r->arrived[p][j] - 1, p);
            }
        }
    }
    if (c->rs.rss_warm == 0) {
        c->rs.rss_warm = rss_bytes();
    }
    c->rs.rss_end = rss_bytes();
    if (c->rs.rss_end > c->rs.rss_max) {
        c->rs.rss_max = c->rs.rss_end;
    }
    /* no engine finalizes while another still looks for its signals */
    child_send(c, C_STOPPED, NULL);
    child_expect(c, &cmd, P_FINALIZE, REPORT_TIMEOUT_S);

    st = hixl_finalize(c->e);
    c->rs.finalize_status = (int32_t)st;
    if (st != HIXL_SUCCESS) {
        CNT(&c->rs, failures, 1);
        child_err(c, "hixl_finalize: %s: %s", hixl_strerror(st),
                  hixl_last_error());
    }
    c->e = NULL;
    child_send(c, C_REPORT, c->nerr ? c->first_err : NULL);
    munmap(c->local, c->local_len);
    return 0;
}

/* ---- parent ----------------------------------------------------------------- */

typedef struct kid {
    pid_t    pid;
    int      cmd_fd, rep_fd;   /* -1 when closed */
    int      ready, connected, drained, stopped, reported;
    int      dead, hung;
    uint64_t last_msg_ms;
    char     name[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t base;
    stats_t  st;
    char     text[512];
    char     why[160];         /* how it ended, if not cleanly */
} kid_t;

static kid_t g_kids[MAX_ENGINES];

static void kid_close(kid_t *k)
{
    if (k->rep_fd >= 0) {
        close(k->rep_fd);
        k->rep_fd = -1;
    }
    if (k->cmd_fd >= 0) {
        close(k->cmd_fd);
        k->cmd_fd = -1;
    }
}

/* The child's pipe closed or it misbehaved: collect how it ended (bounded
 * wait), kill it if it still runs. */
static void kid_gone(kid_t *k, const char *what)
{
    int wstatus = 0, i;
    pid_t rc = 0;

    kid_close(k);
    if (k->pid <= 0) {
        return;
    }
    for (i = 0; i < 2000; ++i) {
        rc = waitpid(k->pid, &wstatus, WNOHANG);
        if (rc != 0) {
            break;
        }
        usleep(1000);
    }
    if (rc == 0) {
        kill(k->pid, SIGKILL);
        waitpid(k->pid, &wstatus, 0);
    }
    k->pid = 0;
    if (k->reported && WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0)) {
        return;
    }
    k->dead = 1;
    if (WIFSIGNALED(wstatus)) {
        snprintf(k->why, sizeof(k->why), "%s: killed by signal %d (%s)%s",
                 what, WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)),
                 (WTERMSIG(wstatus) == SIGALRM) ? ": hung" : "");
    } else if (WIFEXITED(wstatus)) {
        snprintf(k->why, sizeof(k->why), "%s: exited with status %d", what,
                 WEXITSTATUS(wstatus));
    } else {
        snprintf(k->why, sizeof(k->why), "%s", what);
    }
}

static void kid_send(kid_t *k, const p2c_t *m)
{
    if ((k->cmd_fd >= 0) && (hx_write_all(k->cmd_fd, m, sizeof(*m)) != 0)) {
        kid_gone(k, "command pipe broken");
    }
}

static unsigned kids_alive(unsigned n)
{
    unsigned i, a = 0;

    for (i = 0; i < n; ++i) {
        a += (g_kids[i].rep_fd >= 0);
    }
    return a;
}

static uint64_t g_go_ms;

/* Read what the children say until done() holds for every live child or
 * the deadline passes; returns 0 when it held.  running: children send
 * heartbeats, so one silent for SILENCE_S is hung (killed), and progress
 * is printed every 10 s. */
static int kids_pump(unsigned n, uint64_t deadline, int (*done)(const kid_t*),
                     int running)
{
    struct pollfd pfd[MAX_ENGINES];
    unsigned idx[MAX_ENGINES], i, np, all;
    uint64_t progress_at = g_go_ms + 10000;
    c2p_t m;
    uint64_t t;
    int rc;

    for (;;) {
        if (running) {   /* the churn stops with the run */
            churn_step(now_ms() >= g_go_ms + (uint64_t)g_cfg.seconds * 1000,
                       0);
        }
        all = 1;
        for (i = 0; i < n; ++i) {
            if ((g_kids[i].rep_fd >= 0) && !done(&g_kids[i])) {
                all = 0;
            }
        }
        if (all) {
            return 0;
        }
        t = now_ms();
        if (t >= deadline) {
            return -1;
        }
        np = 0;
        for (i = 0; i < n; ++i) {
            if (g_kids[i].rep_fd < 0) {
                continue;
            }
            if (running && (t - g_kids[i].last_msg_ms > SILENCE_S * 1000ull)) {
                g_kids[i].hung = 1;
                kid_gone(&g_kids[i], "silent for too long");
                fprintf(stderr, "soak: e%u sent nothing for %d s: killed\n",
                        i, SILENCE_S);
                continue;
            }
            pfd[np].fd      = g_kids[i].rep_fd;
            pfd[np].events  = POLLIN;
            pfd[np].revents = 0;
            idx[np++] = i;
        }
        if (np == 0) {
            continue;
        }
        rc = poll(pfd, np, running ? 10 : 200);
        if ((rc < 0) && (errno != EINTR)) {
            perror("soak: poll");
            return -1;
        }
        for (i = 0; (rc > 0) && (i < np); ++i) {
            kid_t *k = &g_kids[idx[i]];

            if (!pfd[i].revents) {
                continue;
            }
            if (read_timed(k->rep_fd, &m, sizeof(m), 5000) != 0) {
                kid_gone(k, k->reported ? "exited" : "died");
                if (k->dead) {
                    fprintf(stderr, "soak: e%u %s\n", idx[i], k->why);
                }
                continue;
            }
            k->last_msg_ms = now_ms();
            if (m.type == C_ERROR) {
                snprintf(k->text, sizeof(k->text), "%s", m.text);
                kid_gone(k, "gave up");
                continue;
            }
            if (m.type == C_READY) {
                k->ready = 1;
                snprintf(k->name, sizeof(k->name), "%s", m.name);
                k->base = m.base;
            }
            k->connected |= (m.type == C_CONNECTED);
            k->drained   |= (m.type == C_DRAINED);
            k->stopped   |= (m.type == C_STOPPED);
            if ((m.type == C_HEARTBEAT) || (m.type == C_DRAINED) ||
                (m.type == C_REPORT)) {
                k->st = m.st;
            }
            if (m.type == C_REPORT) {
                k->reported = 1;
                snprintf(k->text, sizeof(k->text), "%s", m.text);
            }
        }
        if (running && !g_cfg.quiet && (now_ms() >= progress_at)) {
            uint64_t w = 0, b = 0, v = 0, bad = 0, f = 0;

            progress_at += 10000;
            for (i = 0; i < n; ++i) {
                w   += g_kids[i].st.writes + g_kids[i].st.reads;
                b   += g_kids[i].st.bytes_written + g_kids[i].st.bytes_read;
                v   += g_kids[i].st.verified;
                bad += g_kids[i].st.corruptions;
                f   += g_kids[i].st.failures;
            }
            printf("soak: %3u s: %" PRIu64 " transfers, %.1f MiB, %" PRIu64
                   " writes checked, %" PRIu64 " corruptions, %" PRIu64
                   " failures, %u/%u engines alive\n",
                   (unsigned)((now_ms() - g_go_ms + 500) / 1000), w, MiB(b),
                   v, bad, f, kids_alive(n), n);
            fflush(stdout);
        }
    }
}

static int is_ready(const kid_t *k)     { return k->ready; }
static int is_connected(const kid_t *k) { return k->connected; }
static int is_drained(const kid_t *k)   { return k->drained || k->reported; }
static int is_stopped(const kid_t *k)   { return k->stopped || k->reported; }
static int is_reported(const kid_t *k)  { return k->reported; }

static void usage(FILE *f)
{
    fprintf(f,
        "usage: soak [-t SECONDS] [-n ENGINES] [-s SEED] [-k SLOTS] "
        "[-r RSS_MIB] [-w WARMUP] [-q]\n"
        "  -t  how long the engines write (default 60 s)\n"
        "  -n  engine processes, 2..%d (default 3)\n"
        "  -s  seed of sizes, layouts and patterns (default: from the time)\n"
        "  -k  slots per sender in each receive ring, 1..%d (default 4)\n"
        "  -r  largest RSS growth of an engine after warm-up, MiB "
        "(default 64)\n"
        "  -w  warm-up, s (default a sixth of -t, at most 10)\n"
        "  -c  short-lived clients of e0 (default: as many as fit in -t)\n"
        "  -q  only the summary\n"
        "UCX_TLS is taken from the environment.\n", MAX_ENGINES, MAX_SLOTS);
}

static unsigned long parse_num(const char *s, const char *what)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 0);
    if ((errno != 0) || (*s == '\0') || (*end != '\0')) {
        fprintf(stderr, "soak: bad %s \"%s\"\n", what, s);
        usage(stderr);
        exit(2);
    }
    return v;
}

/* One line of the table; the RSS columns only for an engine that
 * reported (rss: 1). */
static void print_row(const char *label, const char *name, const stats_t *s,
                      int rss, const char *result)
{
    char mem[64];

    if (rss) {
        snprintf(mem, sizeof(mem), "%6.1f %6.1f %6.1f %+7.1f",
                 MiB(s->rss_start), MiB(s->rss_warm), MiB(s->rss_end),
                 (double)((int64_t)s->rss_end - (int64_t)s->rss_warm) /
                 1048576.0);
    } else {
        snprintf(mem, sizeof(mem), "%6s %6s %6s %7s", "-", "-", "-", "-");
    }
    printf("%-5s %-21s %9" PRIu64 " %8" PRIu64 " %10.1f %9" PRIu64 " %8" PRIu64
           " %8" PRIu64 " %7" PRIu64 " %6" PRIu64 " %s  %s\n", label, name,
           s->writes, s->reads, MiB(s->bytes_written + s->bytes_read),
           s->verified, s->layer_signals, s->xfer_notifies + s->done_recv,
           s->corruptions, s->failures, mem, result);
}

int main(int argc, char **argv)
{
    const char *tls = getenv("UCX_TLS");
    stats_t total;
    p2c_t cmd;
    uint64_t deadline, f;
    unsigned n, i, passed = 0, failed = 0, rss_bad = 0, mismatch = 0;
    int opt, cmd_pipe[2], rep_pipe[2], rc, churn_bad = 0;
    churn_cfg_t churn;
    pid_t parent = getpid(), pid;
    int64_t growth;

    g_cfg.seconds   = 60;
    g_cfg.engines   = 3;
    g_cfg.slots     = 4;
    g_cfg.warmup    = (unsigned)-1;
    g_cfg.rss_limit = 64ull << 20;
    g_cfg.seed      = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    while ((opt = getopt(argc, argv, "t:n:s:k:r:w:c:qh")) != -1) {
        switch (opt) {
        case 't': g_cfg.seconds = (unsigned)parse_num(optarg, "seconds"); break;
        case 'n': g_cfg.engines = (unsigned)parse_num(optarg, "engines"); break;
        case 's': g_cfg.seed    = parse_num(optarg, "seed"); break;
        case 'k': g_cfg.slots   = (unsigned)parse_num(optarg, "slots"); break;
        case 'r': g_cfg.rss_limit = (uint64_t)parse_num(optarg, "RSS MiB") << 20;
                  break;
        case 'w': g_cfg.warmup  = (unsigned)parse_num(optarg, "warm-up"); break;
        case 'c': g_cfg.churn   = (unsigned)parse_num(optarg, "churn"); break;
        case 'q': g_cfg.quiet   = 1; break;
        case 'h': usage(stdout); return 0;
        default:  usage(stderr); return 2;
        }
    }
    if ((optind != argc) || (g_cfg.engines < 2) ||
        (g_cfg.engines > MAX_ENGINES) || (g_cfg.slots < 1) ||
        (g_cfg.slots > MAX_SLOTS) || (g_cfg.seconds < 1)) {
        usage(stderr);
        return 2;
    }
    if (g_cfg.warmup == (unsigned)-1) {
        g_cfg.warmup = g_cfg.seconds / 6;
        if (g_cfg.warmup > 10) {
            g_cfg.warmup = 10;
        }
    }
    n = g_cfg.engines;

    printf("soak: %u engines, %u s (warm-up %u s), seed %" PRIu64 ", %u "
           "slots of %zu bytes per sender, UCX_TLS=%s, libhixl-ucx %s\n", n,
           g_cfg.seconds, g_cfg.warmup, g_cfg.seed, g_cfg.slots,
           (size_t)SLOT_SIZE, tls ? tls : "(unset: UCX's default)",
           hixl_version());
    fflush(NULL);
    signal(SIGPIPE, SIG_IGN);

    /* fork every engine before anything here touches UCX (nothing will) */
    for (i = 0; i < n; ++i) {
        g_kids[i].cmd_fd = g_kids[i].rep_fd = -1;
        if ((pipe(cmd_pipe) != 0) || (pipe(rep_pipe) != 0)) {
            perror("soak: pipe");
            return 2;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
            perror("soak: fork");
            return 2;
        }
        if (pid == 0) {
            unsigned o;

            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) {
                _exit(3);
            }
            /* last resort against a hang */
            alarm(g_cfg.seconds + 2 * SETUP_TIMEOUT_S + DRAIN_TIMEOUT_S +
                  REPORT_TIMEOUT_S + 60);
            for (o = 0; o < i; ++o) {
                close(g_kids[o].cmd_fd);
                close(g_kids[o].rep_fd);
            }
            close(cmd_pipe[1]);
            close(rep_pipe[0]);
            _exit(child_main(i, cmd_pipe[0], rep_pipe[1]));
        }
        close(cmd_pipe[0]);
        close(rep_pipe[1]);
        g_kids[i].pid         = pid;
        g_kids[i].cmd_fd      = cmd_pipe[1];
        g_kids[i].rep_fd      = rep_pipe[0];
        g_kids[i].last_msg_ms = now_ms();
    }

    /* engines up: their names and regions go to all */
    rc = kids_pump(n, now_ms() + SETUP_TIMEOUT_S * 1000ull, is_ready, 0);
    if ((rc != 0) || (kids_alive(n) != n)) {
        fprintf(stderr, "soak: not every engine came up\n");
        goto report;
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = P_PEERS;
    cmd.n    = n;
    for (i = 0; i < n; ++i) {
        snprintf(cmd.names[i], sizeof(cmd.names[i]), "%s", g_kids[i].name);
        cmd.base[i] = g_kids[i].base;
        if (!g_cfg.quiet) {
            printf("soak: e%u is %s (pid %d)\n", i, g_kids[i].name,
                   (int)g_kids[i].pid);
        }
    }
    for (i = 0; i < n; ++i) {
        kid_send(&g_kids[i], &cmd);
    }
    rc = kids_pump(n, now_ms() + SETUP_TIMEOUT_S * 1000ull, is_connected, 0);
    if ((rc != 0) || (kids_alive(n) != n)) {
        fprintf(stderr, "soak: not every engine connected\n");
        goto report;
    }

    /* the churn at e0: its churn area follows the static one */
    memset(&churn, 0, sizeof(churn));
    churn.cycles     = g_cfg.churn;
    churn.parallel   = SOAK_CHURN_PARALLEL;
    churn.resident   = 1;
    churn.len        = SOAK_CHURN_LEN;
    churn.close_fds  = 1;   /* the soak engines' pipes are not theirs */
    churn.warmup     = ((g_cfg.churn != 0) && (g_cfg.churn < 1000)) ?
                       g_cfg.churn / 10 : 100;
    churn.target     = g_kids[0].name;
    churn.area       = g_kids[0].base + (uint64_t)n * g_cfg.slots * SLOT_SIZE +
                       STATIC_SIZE;
    churn.target_pid = g_kids[0].pid;
    churn.seed       = mix(g_cfg.seed ^ 0x434855524eull);
    if (churn_init(&churn) != 0) {
        churn_bad = 1;
        goto report;
    }

    /* run; every engine reports when it has its slots back */
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = P_GO;
    for (i = 0; i < n; ++i) {
        kid_send(&g_kids[i], &cmd);
    }
    g_go_ms  = now_ms();
    for (i = 0; i < n; ++i) {
        g_kids[i].last_msg_ms = g_go_ms;
    }
    deadline = g_go_ms + (uint64_t)g_cfg.seconds * 1000 +
               (DRAIN_TIMEOUT_S + 30) * 1000ull;
    if (kids_pump(n, deadline, is_drained, 1) != 0) {
        fprintf(stderr, "soak: engines did not drain in time\n");
    }
    /* the churn goes on alone until its cycles are done (each client is
     * bounded), or its last clients end; then e0 is read */
    while ((g_cfg.churn != 0) ? !churn_done() : !churn_idle()) {
        churn_step(g_cfg.churn == 0, 10);
    }
    churn_bad = churn_report(stdout, "soak", &soak_churn_slack);
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = P_FINISH;
    for (i = 0; i < n; ++i) {
        kid_send(&g_kids[i], &cmd);
    }
    if (kids_pump(n, now_ms() + REPORT_TIMEOUT_S * 1000ull, is_stopped,
                  0) != 0) {
        fprintf(stderr, "soak: not every engine stopped\n");
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = P_FINALIZE;
    for (i = 0; i < n; ++i) {
        kid_send(&g_kids[i], &cmd);
    }
    if (kids_pump(n, now_ms() + REPORT_TIMEOUT_S * 1000ull, is_reported,
                  0) != 0) {
        fprintf(stderr, "soak: not every engine reported\n");
    }

report:
    for (i = 0; i < n; ++i) {
        kid_t *k = &g_kids[i];

        if (k->pid > 0) {
            if (!k->reported) {
                k->hung = 1;
                kill(k->pid, SIGKILL);
            }
            kid_gone(k, k->reported ? "exited" : "did not finish in time");
        }
    }

    printf("\n%-5s %-21s %9s %8s %10s %9s %8s %8s %7s %6s %6s %6s %6s %7s  "
           "%s\n", "eng", "name", "writes", "reads", "MiB moved", "checked",
           "signals", "notifies", "corrupt", "failed", "rss0", "rssW",
           "rssEnd", "growth", "result");
    memset(&total, 0, sizeof(total));
    for (i = 0; i < n; ++i) {
        kid_t *k = &g_kids[i];
        char label[16], result[256];
        int ok;

        snprintf(label, sizeof(label), "e%u", i);
        growth = (int64_t)k->st.rss_end - (int64_t)k->st.rss_warm;
        ok = k->reported && !k->dead && (k->st.corruptions == 0) &&
             (k->st.failures == 0);
        if (!k->reported) {
            snprintf(result, sizeof(result), "FAIL: %s%s%s",
                     k->why[0] ? k->why : "no report",
                     k->text[0] ? ": " : "", k->text);
        } else if (!ok) {
            snprintf(result, sizeof(result), "FAIL: %s", k->text[0] ? k->text :
                     "see above");
        } else if (growth > (int64_t)g_cfg.rss_limit) {
            snprintf(result, sizeof(result), "pass, but RSS grew by %.1f MiB "
                     "after warm-up (limit %.0f)", (double)growth / 1048576.0,
                     MiB(g_cfg.rss_limit));
            ++rss_bad;
        } else {
            snprintf(result, sizeof(result), "pass");
        }
        passed += ok;
        failed += !ok;
        print_row(label, k->name[0] ? k->name : "?", &k->st, k->reported,
                  result);
        for (f = 0; f < offsetof(stats_t, rss_start) / sizeof(uint64_t); ++f) {
            ((uint64_t*)&total)[f] += ((uint64_t*)&k->st)[f];
        }
    }
    print_row("all", "", &total, 0, "");
    printf("\nsoak: %" PRIu64 " bytes moved (%.1f MiB/s), %" PRIu64 " writes "
           "checked by their receivers (%" PRIu64 " by layer signal, %" PRIu64
           " of them superseded; %" PRIu64 " by per-transfer notify), %"
           PRIu64 " sync writes, %" PRIu64 " reads, %" PRIu64 " corruptions (%"
           PRIu64 " bad bytes), %" PRIu64 " failures, %" PRIu64 " slots stuck\n",
           total.bytes_written + total.bytes_read,
           MiB(total.bytes_written + total.bytes_read) / g_cfg.seconds,
           total.verified, total.layer_signals, total.superseded,
           total.xfer_notifies, total.writes_sync, total.reads,
           total.corruptions, total.bad_bytes, total.failures, total.stuck);
    if ((total.failures == 0) && (total.writes != total.verified)) {
        /* without failures, every completed write was checked by its
         * receiver exactly once */
        printf("soak: %" PRIu64 " writes completed but %" PRIu64 " were "
               "checked by their receivers\n", total.writes, total.verified);
        mismatch = 1;
    }
    if (rss_bad) {
        printf("soak: %u engine(s) grew their RSS by more than %.0f MiB after "
               "warm-up (option -r)\n", rss_bad, MiB(g_cfg.rss_limit));
    }
    printf("%u passed, %u failed\n", passed, failed);
    fflush(stdout);
    return (failed || rss_bad || mismatch || churn_bad) ? 1 : 0;
}
