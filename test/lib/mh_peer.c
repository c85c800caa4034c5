/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The multi-host peer: one engine obeying line commands.  Protocol in
 * mh_peer.h.
 *
 * Threads: the main thread reads commands and writes every reply; a
 * command run with `bg` runs in its own thread and leaves its reply in
 * memory for `job`.  Command handlers write into an mh_out_t, never to
 * stdout, so both ways share one code path.
 */
#define _GNU_SOURCE
#include "mh_peer.h"
#include "harness.h"
#include "netns.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MH_MAX_REGIONS 16
#define MH_MAX_JOBS    256
#define MH_MAX_ARGS    16
#define MH_MAX_COUNT   1000000
#define MH_MAX_INFLIGHT 256
/* A request still WAITING this long after its own deadline is STUCK. */
#define MH_STUCK_GRACE_MS 30000

/* ---- output ------------------------------------------------------------------ */

typedef struct mh_out {
    char  *buf;
    size_t len, cap;
} mh_out_t;

static void mh_printf(mh_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void mh_printf(mh_out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        size_t room = o->cap - o->len;

        va_start(ap, fmt);
        n = vsnprintf(o->buf ? o->buf + o->len : NULL, o->buf ? room : 0,
                      fmt, ap);
        va_end(ap);
        if (n < 0) {
            return;
        }
        if (o->buf && ((size_t)n < room)) {
            o->len += (size_t)n;
            return;
        }
        o->cap = (o->cap + (size_t)n + 1) * 2;
        o->buf = realloc(o->buf, o->cap);
        if (o->buf == NULL) {
            _exit(6);
        }
    }
}

/* A message on one line: newlines would break the protocol. */
static const char *mh_oneline(const char *s, char *buf, size_t len)
{
    size_t i;

    snprintf(buf, len, "%s", s ? s : "");
    for (i = 0; buf[i] != '\0'; ++i) {
        if ((buf[i] == '\n') || (buf[i] == '\r')) {
            buf[i] = ' ';
        }
    }
    return buf;
}

static double mh_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The reply of a hixl call: status, time taken, time of return, reason. */
static void mh_status(mh_out_t *o, hixl_status_t st, double t0)
{
    char msg[1024];
    double t = mh_now_ms();

    mh_printf(o, "OK status=%s code=%d ms=%.1f t=%.1f msg=%s\n",
              hixl_strerror(st), (int)st, t - t0, t,
              (st == HIXL_SUCCESS) ? "" :
              mh_oneline(hixl_last_error(), msg, sizeof(msg)));
}

/* ---- state -------------------------------------------------------------------- */

typedef struct mh_region {
    uint8_t          *base;
    size_t            len;
    int               mapped;   /* 1: our mmap; 0: hixl_alloc_mem */
    hixl_mem_handle_t handle;
} mh_region_t;

typedef struct mh_stream mh_stream_t;

typedef struct mh_job {
    pthread_t    thread;
    int          argc;
    char        *argv[MH_MAX_ARGS];
    atomic_int   done;
    mh_out_t     out;
    mh_stream_t *stream;     /* the stream it runs, if it runs one */
} mh_job_t;

/* The protocol's stream: the stdout the test reads (see mh_peer_main). */
static FILE *mh_proto;

static struct {
    hixl_engine_t  *engine;
    mh_region_t     regions[MH_MAX_REGIONS];
    int             nregions;
    mh_job_t        jobs[MH_MAX_JOBS];
    int             njobs;
    pthread_mutex_t lock;       /* jobs[].stream and done/reply hand-over */
    pthread_cond_t  cond;
} mh;

static mh_region_t *mh_region_arg(mh_out_t *o, const char *s)
{
    long i = strtol(s, NULL, 0);

    if ((i < 0) || (i >= mh.nregions) || (mh.regions[i].base == NULL)) {
        mh_printf(o, "ERR no region %s\n", s);
        return NULL;
    }
    return &mh.regions[i];
}

static uint64_t mh_u64(const char *s)
{
    return strtoull(s, NULL, 0);
}

/* ---- memory -------------------------------------------------------------------- */

static void mh_cmd_alloc(mh_out_t *o, int argc, char **argv, int mapped)
{
    mh_region_t *r;
    hixl_mem_desc_t md;
    hixl_status_t st;
    size_t len;
    void *p = NULL;

    if (argc != 2) {
        mh_printf(o, "ERR usage: %s LEN\n", argv[0]);
        return;
    }
    if (mh.nregions == MH_MAX_REGIONS) {
        mh_printf(o, "ERR too many regions\n");
        return;
    }
    len = (size_t)mh_u64(argv[1]);
    r   = &mh.regions[mh.nregions];
    if (mapped) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            mh_printf(o, "ERR mmap %zu: %s\n", len, strerror(errno));
            return;
        }
        md.addr = (uintptr_t)p;
        md.len  = len;
        st = hixl_register_mem(mh.engine, &md, HIXL_MEM_HOST, &r->handle);
        if (st != HIXL_SUCCESS) {
            mh_printf(o, "ERR hixl_register_mem: %s: %s\n",
                      hixl_strerror(st), hixl_last_error());
            munmap(p, len);
            return;
        }
    } else {
        st = hixl_alloc_mem(mh.engine, len, HIXL_MEM_HOST, &p, &r->handle);
        if (st != HIXL_SUCCESS) {
            mh_printf(o, "ERR hixl_alloc_mem: %s: %s\n", hixl_strerror(st),
                      hixl_last_error());
            return;
        }
    }
    r->base   = p;
    r->len    = len;
    r->mapped = mapped;
    mh_printf(o, "OK region=%d addr=0x%" PRIxPTR " len=%zu\n", mh.nregions,
              (uintptr_t)p, len);
    mh.nregions++;
}

static int mh_range(mh_out_t *o, mh_region_t *r, uint64_t off, uint64_t *len)
{
    if (*len == 0) {
        *len = (off < r->len) ? r->len - off : 0;
    }
    if ((off > r->len) || (*len > r->len - off)) {
        mh_printf(o, "ERR range [%" PRIu64 ", +%" PRIu64 ") outside the "
                  "region (%zu bytes)\n", off, *len, r->len);
        return -1;
    }
    return 0;
}

static void mh_cmd_fill(mh_out_t *o, int argc, char **argv)
{
    mh_region_t *r;
    uint64_t off, len;

    if (argc != 5) {
        mh_printf(o, "ERR usage: fill I OFF LEN SEED\n");
        return;
    }
    if ((r = mh_region_arg(o, argv[1])) == NULL) {
        return;
    }
    off = mh_u64(argv[2]);
    len = mh_u64(argv[3]);
    if (mh_range(o, r, off, &len) != 0) {
        return;
    }
    hx_pat_fill(r->base + off, len, mh_u64(argv[4]), off);
    mh_printf(o, "OK\n");
}

/* Compare in chunks against the expected bytes (fast when all is well),
 * counting per byte only inside chunks that differ. */
static void mh_cmd_verify(mh_out_t *o, int argc, char **argv)
{
    enum { CHUNK = 64 * 1024 };
    uint8_t *want, *old;
    uint64_t off, len, seed, oldseed = 0, pos, n, k;
    uint64_t nbad = 0, nold = 0, first = 0, last = 0;
    uint8_t got0 = 0, want0 = 0;
    mh_region_t *r;

    if ((argc != 5) && (argc != 6)) {
        mh_printf(o, "ERR usage: verify I OFF LEN SEED [OLDSEED]\n");
        return;
    }
    if ((r = mh_region_arg(o, argv[1])) == NULL) {
        return;
    }
    off  = mh_u64(argv[2]);
    len  = mh_u64(argv[3]);
    seed = mh_u64(argv[4]);
    if (argc == 6) {
        oldseed = mh_u64(argv[5]);
    }
    if (mh_range(o, r, off, &len) != 0) {
        return;
    }
    want = malloc(CHUNK);
    old  = malloc(CHUNK);
    if ((want == NULL) || (old == NULL)) {
        _exit(6);
    }
    for (pos = off; pos < off + len; pos += n) {
        n = (off + len - pos < CHUNK) ? off + len - pos : CHUNK;
        hx_pat_fill(want, n, seed, pos);
        if (memcmp(r->base + pos, want, n) == 0) {
            continue;
        }
        if (oldseed != 0) {
            hx_pat_fill(old, n, oldseed, pos);
        }
        for (k = 0; k < n; ++k) {
            if (r->base[pos + k] == want[k]) {
                continue;
            }
            if (nbad == 0) {
                first = pos + k;
                got0  = r->base[pos + k];
                want0 = want[k];
            }
            last = pos + k;
            ++nbad;
            nold += (oldseed != 0) && (r->base[pos + k] == old[k]);
        }
    }
    free(want);
    free(old);
    if (nbad == 0) {
        mh_printf(o, "OK match=1\n");
        return;
    }
    mh_printf(o, "OK match=0 nbad=%" PRIu64 " nold=%" PRIu64 " first=%"
              PRIu64 " last=%" PRIu64 " got=0x%02x want=0x%02x\n", nbad,
              nold, first, last, got0, want0);
}

/* ---- connections, transfers, layers, notifies ------------------------------------ */

static void mh_cmd_connect(mh_out_t *o, int argc, char **argv, int connect)
{
    double t0 = mh_now_ms();
    hixl_status_t st;

    if (argc != 3) {
        mh_printf(o, "ERR usage: %s REMOTE TIMEOUT_MS\n", argv[0]);
        return;
    }
    st = connect ? hixl_connect(mh.engine, argv[1], (int32_t)mh_u64(argv[2]))
                 : hixl_disconnect(mh.engine, argv[1],
                                   (int32_t)mh_u64(argv[2]));
    mh_status(o, st, t0);
}

/* write / read: one hixl_transfer_sync of region I [OFF, +LEN) */
static void mh_cmd_xfer(mh_out_t *o, int argc, char **argv,
                        hixl_transfer_op_t op)
{
    hixl_transfer_op_desc_t d;
    mh_region_t *r;
    uint64_t off, len;
    double t0;

    if (argc != 7) {
        mh_printf(o, "ERR usage: %s REMOTE I OFF RADDR LEN TIMEOUT_MS\n",
                  argv[0]);
        return;
    }
    if ((r = mh_region_arg(o, argv[2])) == NULL) {
        return;
    }
    off = mh_u64(argv[3]);
    len = mh_u64(argv[5]);
    if (mh_range(o, r, off, &len) != 0) {
        return;
    }
    d.local_addr  = (uintptr_t)(r->base + off);
    d.remote_addr = (uintptr_t)mh_u64(argv[4]);
    d.len         = len;
    t0 = mh_now_ms();
    mh_status(o, hixl_transfer_sync(mh.engine, argv[1], op, &d, 1,
                                    (int32_t)mh_u64(argv[6])), t0);
}

static void mh_cmd_flush(mh_out_t *o, int argc, char **argv)
{
    double t0 = mh_now_ms();

    if (argc != 5) {
        mh_printf(o, "ERR usage: flush REMOTE STREAM GEN LAYER\n");
        return;
    }
    mh_status(o, hixl_flush_layer(mh.engine, argv[1],
                                  (uint32_t)mh_u64(argv[2]), mh_u64(argv[3]),
                                  (uint32_t)mh_u64(argv[4])), t0);
}

static void mh_cmd_wait_layer(mh_out_t *o, int argc, char **argv)
{
    double t0 = mh_now_ms();

    if (argc != 6) {
        mh_printf(o, "ERR usage: wait_layer SRC STREAM GEN LAYER "
                  "TIMEOUT_MS\n");
        return;
    }
    mh_status(o, hixl_wait_layer(mh.engine, argv[1],
                                 (uint32_t)mh_u64(argv[2]), mh_u64(argv[3]),
                                 (uint32_t)mh_u64(argv[4]),
                                 (int32_t)mh_u64(argv[5])), t0);
}

static void mh_cmd_test_layer(mh_out_t *o, int argc, char **argv)
{
    char msg[1024];
    hixl_status_t st;
    int ready = 0;

    if (argc != 5) {
        mh_printf(o, "ERR usage: test_layer SRC STREAM GEN LAYER\n");
        return;
    }
    st = hixl_test_layer(mh.engine, argv[1], (uint32_t)mh_u64(argv[2]),
                         mh_u64(argv[3]), (uint32_t)mh_u64(argv[4]), &ready);
    mh_printf(o, "OK status=%s code=%d ready=%d msg=%s\n", hixl_strerror(st),
              (int)st, ready, (st == HIXL_SUCCESS) ? "" :
              mh_oneline(hixl_last_error(), msg, sizeof(msg)));
}

static void mh_cmd_notify(mh_out_t *o, int argc, char **argv)
{
    hixl_notify_desc_t nd;
    double t0 = mh_now_ms();

    if (argc != 4) {
        mh_printf(o, "ERR usage: notify REMOTE NAME TIMEOUT_MS\n");
        return;
    }
    nd.name    = argv[2];
    nd.msg     = "mh";
    nd.msg_len = 2;
    mh_status(o, hixl_send_notify(mh.engine, argv[1], &nd,
                                  (int32_t)mh_u64(argv[3])), t0);
}

/* Whether this engine holds a connection to remote, as the only call that
 * tells does: a notify (name "hx.state", empty, 1 s) that succeeds only
 * on a live connection.  The remote receives it: drain with `notifies`. */
static void mh_cmd_state(mh_out_t *o, int argc, char **argv)
{
    hixl_notify_desc_t nd = {"hx.state", "", 0};
    char msg[1024];
    hixl_status_t st;

    if (argc != 2) {
        mh_printf(o, "ERR usage: state REMOTE\n");
        return;
    }
    st = hixl_send_notify(mh.engine, argv[1], &nd, 1000);
    mh_printf(o, "OK connected=%d status=%s code=%d msg=%s\n",
              st == HIXL_SUCCESS, hixl_strerror(st), (int)st,
              (st == HIXL_SUCCESS) ? "" :
              mh_oneline(hixl_last_error(), msg, sizeof(msg)));
}

static void mh_cmd_notifies(mh_out_t *o)
{
    hixl_notify_t *n = NULL;
    size_t count = 0;
    hixl_status_t st;

    st = hixl_get_notifies(mh.engine, &n, &count);
    if (st != HIXL_SUCCESS) {
        mh_printf(o, "ERR hixl_get_notifies: %s: %s\n", hixl_strerror(st),
                  hixl_last_error());
        return;
    }
    hixl_release_notifies(n, count);
    mh_printf(o, "OK n=%zu\n", count);
}

/* ---- streams ------------------------------------------------------------------------ */

typedef struct mh_req_rec {
    double post_ms, end_ms;
    int    st;          /* hixl_transfer_status_t, or MH_ST_* below */
    int    call;        /* status of the status call */
    char  *msg;
} mh_req_rec_t;

enum { MH_ST_STUCK = 100, MH_ST_CALLERR = 101 };

struct mh_stream {
    atomic_int      stop;
    atomic_uint_fast64_t posted, ended, completed, failed;
    atomic_int      finished;
    int             inflight;
};

static const char *mh_ts_name(int st)
{
    switch (st) {
    case HIXL_TRANSFER_WAITING:   return "WAITING";
    case HIXL_TRANSFER_COMPLETED: return "COMPLETED";
    case HIXL_TRANSFER_TIMEOUT:   return "TIMEOUT";
    case HIXL_TRANSFER_FAILED:    return "FAILED";
    case MH_ST_STUCK:             return "STUCK";
    case MH_ST_CALLERR:           return "CALLERR";
    }
    return "?";
}

static void mh_rec_end(mh_req_rec_t *rec, int st, hixl_status_t call,
                       mh_stream_t *s)
{
    rec->end_ms = mh_now_ms();
    rec->st     = st;
    rec->call   = (int)call;
    if (st != HIXL_TRANSFER_COMPLETED) {
        rec->msg = strdup((st == MH_ST_STUCK) ? "still WAITING" :
                          hixl_last_error());
        atomic_fetch_add(&s->failed, st == HIXL_TRANSFER_FAILED);
    } else {
        atomic_fetch_add(&s->completed, 1);
    }
    atomic_fetch_add(&s->ended, 1);
}

static void mh_cmd_stream(mh_out_t *o, int argc, char **argv,
                          mh_stream_t *s)
{
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_transfer_status_t ts;
    hixl_status_t st, post_st = HIXL_SUCCESS;
    uint64_t raddr, rlen, size, count, inflight, timeout, posted = 0, k;
    hixl_req_t reqs[MH_MAX_INFLIGHT];
    uint64_t idx[MH_MAX_INFLIGHT];
    mh_req_rec_t *rec;
    char *post_msg = NULL, msg[1024];
    double post_t = 0, t;
    mh_region_t *r;
    int n = 0, i, changed;
    const char *remote;
    hixl_transfer_op_t op = HIXL_WRITE;

    if ((argc == 10) && !strcmp(argv[9], "read")) {
        op = HIXL_READ;
    } else if (argc != 9) {
        mh_printf(o, "ERR usage: stream REMOTE I RADDR RLEN SIZE COUNT "
                  "INFLIGHT TIMEOUT_MS [read]\n");
        return;
    }
    remote   = argv[1];
    raddr    = mh_u64(argv[3]);
    rlen     = mh_u64(argv[4]);
    size     = mh_u64(argv[5]);
    count    = mh_u64(argv[6]);
    inflight = mh_u64(argv[7]);
    timeout  = mh_u64(argv[8]);
    if ((r = mh_region_arg(o, argv[2])) == NULL) {
        return;
    }
    if ((size == 0) || (rlen < size) || (rlen % size) || (rlen > r->len) ||
        (count > MH_MAX_COUNT) || (inflight == 0) ||
        (inflight > MH_MAX_INFLIGHT)) {
        mh_printf(o, "ERR stream: bad sizes\n");
        return;
    }
    rec = calloc(count ? count : 1, sizeof(*rec));
    if (rec == NULL) {
        _exit(6);
    }
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = (int32_t)timeout;

    for (;;) {
        while (!atomic_load(&s->stop) && (post_st == HIXL_SUCCESS) &&
               (posted < count) && ((uint64_t)n < inflight)) {
            k             = (posted * size) % rlen;
            d.local_addr  = (uintptr_t)(r->base + k);
            d.remote_addr = (uintptr_t)(raddr + k);
            d.len         = size;
            t  = mh_now_ms();
            st = hixl_transfer_async(mh.engine, remote, op, &d, 1,
                                     &args, &reqs[n]);
            if (st != HIXL_SUCCESS) {
                post_st  = st;
                post_t   = mh_now_ms();
                post_msg = strdup(hixl_last_error());
                break;
            }
            rec[posted].post_ms = t;
            idx[n++] = posted++;
            atomic_store(&s->posted, posted);
        }
        s->inflight = n;
        if ((n == 0) && (atomic_load(&s->stop) || (post_st != HIXL_SUCCESS) ||
                         (posted == count))) {
            break;
        }
        changed = 0;
        for (i = 0; i < n; ++i) {
            mh_req_rec_t *rc = &rec[idx[i]];

            ts = HIXL_TRANSFER_WAITING;
            st = hixl_get_transfer_status(mh.engine, reqs[i], &ts);
            if (st != HIXL_SUCCESS) {
                mh_rec_end(rc, MH_ST_CALLERR, st, s);
            } else if (ts != HIXL_TRANSFER_WAITING) {
                mh_rec_end(rc, ts, st, s);
            } else if (mh_now_ms() > rc->post_ms + (double)timeout +
                       MH_STUCK_GRACE_MS) {
                /* the library missed its own deadline: stop waiting */
                mh_rec_end(rc, MH_ST_STUCK, st, s);
            } else {
                continue;
            }
            /* drop slot i: the last one moves in */
            reqs[i] = reqs[n - 1];
            idx[i]  = idx[n - 1];
            --n;
            --i;
            changed = 1;
        }
        if (!changed) {
            usleep(200);   /* two cores: leave room for the engines */
        }
    }
    atomic_store(&s->finished, 1);

    mh_printf(o, "OK lines=%" PRIu64 " posted=%" PRIu64 " completed=%"
              PRIu64 " failed=%" PRIu64 "\n", posted + 1, posted,
              (uint64_t)atomic_load(&s->completed),
              (uint64_t)atomic_load(&s->failed));
    for (k = 0; k < posted; ++k) {
        mh_printf(o, "r %" PRIu64 " post=%.1f end=%.1f st=%s call=%s "
                  "msg=%s\n", k, rec[k].post_ms, rec[k].end_ms,
                  mh_ts_name(rec[k].st), hixl_strerror(rec[k].call),
                  mh_oneline(rec[k].msg, msg, sizeof(msg)));
        free(rec[k].msg);
    }
    mh_printf(o, "post status=%s t=%.1f msg=%s\n",
              (post_st == HIXL_SUCCESS) ? "NONE" : hixl_strerror(post_st),
              post_t, mh_oneline(post_msg, msg, sizeof(msg)));
    free(post_msg);
    free(rec);
}

static mh_job_t *mh_job_arg(mh_out_t *o, const char *s)
{
    long i = strtol(s, NULL, 0);

    if ((i < 0) || (i >= mh.njobs)) {
        mh_printf(o, "ERR no job %s\n", s);
        return NULL;
    }
    return &mh.jobs[i];
}

static void mh_cmd_progress(mh_out_t *o, int argc, char **argv, int stop)
{
    mh_stream_t *s;
    mh_job_t *j;

    if ((argc != 2) || ((j = mh_job_arg(o, argv[1])) == NULL)) {
        if (argc != 2) {
            mh_printf(o, "ERR usage: %s JOB\n", argv[0]);
        }
        return;
    }
    pthread_mutex_lock(&mh.lock);
    s = j->stream;
    if (s == NULL) {
        pthread_mutex_unlock(&mh.lock);
        mh_printf(o, "ERR job %s runs no stream\n", argv[1]);
        return;
    }
    if (stop) {
        atomic_store(&s->stop, 1);
    }
    mh_printf(o, "OK posted=%" PRIu64 " ended=%" PRIu64 " inflight=%" PRIu64
              " completed=%" PRIu64 " failed=%" PRIu64 " finished=%d\n",
              (uint64_t)atomic_load(&s->posted),
              (uint64_t)atomic_load(&s->ended),
              (uint64_t)(atomic_load(&s->posted) - atomic_load(&s->ended)),
              (uint64_t)atomic_load(&s->completed),
              (uint64_t)atomic_load(&s->failed), atomic_load(&s->finished));
    pthread_mutex_unlock(&mh.lock);
}

/* ---- process ---------------------------------------------------------------------------- */

static int mh_count_fds(void)
{
    struct dirent *de;
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        n += (de->d_name[0] != '.');
    }
    closedir(d);
    return n - 1;   /* the directory's own descriptor */
}

static int mh_read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL) {
        return -1;
    }
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return 0;
}

/* TCP sockets this process holds: socket inodes of /proc/self/fd matched
 * against this namespace's TCP tables. */
static void mh_cmd_socks(mh_out_t *o)
{
    enum { MAXS = 4096 };
    static const char *const tables[2] = {"/proc/self/net/tcp",
                                          "/proc/self/net/tcp6"};
    uint64_t inodes[1024];
    hx_tcp_sock_t *socks = calloc(MAXS, sizeof(*socks));
    size_t textlen = 1 << 20, ni = 0;
    char *text = malloc(textlen), path[300], link[128], line[256];
    struct dirent *de;
    int n = 0, t, i, mine = 0;
    mh_out_t lines = {NULL, 0, 0};
    DIR *d;

    if ((socks == NULL) || (text == NULL)) {
        _exit(6);
    }
    d = opendir("/proc/self/fd");
    while ((d != NULL) && ((de = readdir(d)) != NULL) &&
           (ni < sizeof(inodes) / sizeof(inodes[0]))) {
        ssize_t l;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
        l = readlink(path, link, sizeof(link) - 1);
        if (l <= 0) {
            continue;
        }
        link[l] = '\0';
        if (sscanf(link, "socket:[%" SCNu64 "]", &inodes[ni]) == 1) {
            ++ni;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    for (t = 0; t < 2; ++t) {
        if (mh_read_file(tables[t], text, textlen) == 0) {
            n = hx_tcp_parse(text, t, socks, n, MAXS);
        }
    }
    for (i = 0; i < n; ++i) {
        size_t k;

        for (k = 0; (k < ni) && (inodes[k] != socks[i].inode); ++k) {
        }
        if ((k == ni) || (socks[i].inode == 0)) {
            continue;
        }
        hx_tcp_sock_str(&socks[i], line, sizeof(line));
        mh_printf(&lines, "%s\n", line);
        ++mine;
    }
    mh_printf(o, "OK lines=%d\n%s", mine, lines.buf ? lines.buf : "");
    free(lines.buf);
    free(socks);
    free(text);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

static int mh_jobs_running(void)
{
    int i, n = 0;

    for (i = 0; i < mh.njobs; ++i) {
        n += !atomic_load(&mh.jobs[i].done);
    }
    return n;
}

static void mh_run(mh_out_t *o, int argc, char **argv, mh_job_t *self);

static void *mh_job_main(void *arg)
{
    mh_job_t *j = arg;

    mh_run(&j->out, j->argc, j->argv, j);
    pthread_mutex_lock(&mh.lock);
    atomic_store(&j->done, 1);
    pthread_cond_broadcast(&mh.cond);
    pthread_mutex_unlock(&mh.lock);
    return NULL;
}

static void mh_cmd_bg(mh_out_t *o, int argc, char **argv)
{
    mh_job_t *j;
    int i;

    if (argc < 2) {
        mh_printf(o, "ERR usage: bg COMMAND ...\n");
        return;
    }
    if (mh.njobs == MH_MAX_JOBS) {
        mh_printf(o, "ERR too many jobs\n");
        return;
    }
    j = &mh.jobs[mh.njobs];
    memset(j, 0, sizeof(*j));
    j->argc = argc - 1;
    for (i = 1; i < argc; ++i) {
        j->argv[i - 1] = strdup(argv[i]);
    }
    /* made before the thread starts, so `progress` answers at once; kept
     * after the stream ends, so it still answers then */
    if (!strcmp(argv[1], "stream")) {
        j->stream = calloc(1, sizeof(*j->stream));
        if (j->stream == NULL) {
            _exit(6);
        }
    }
    if (pthread_create(&j->thread, NULL, mh_job_main, j) != 0) {
        mh_printf(o, "ERR pthread_create\n");
        return;
    }
    mh_printf(o, "OK job=%d\n", mh.njobs);
    mh.njobs++;
}

static void mh_cmd_job(mh_out_t *o, int argc, char **argv)
{
    struct timespec ts;
    double deadline;
    mh_job_t *j;

    if (argc != 3) {
        mh_printf(o, "ERR usage: job N TIMEOUT_MS\n");
        return;
    }
    if ((j = mh_job_arg(o, argv[1])) == NULL) {
        return;
    }
    deadline = mh_now_ms() + (double)mh_u64(argv[2]);
    pthread_mutex_lock(&mh.lock);
    while (!atomic_load(&j->done) && (mh_now_ms() < deadline)) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&mh.cond, &mh.lock, &ts);
    }
    pthread_mutex_unlock(&mh.lock);
    if (!atomic_load(&j->done)) {
        mh_printf(o, "PENDING job=%s\n", argv[1]);
        return;
    }
    mh_printf(o, "%s", j->out.buf ? j->out.buf : "ERR job said nothing\n");
}

static void mh_run(mh_out_t *o, int argc, char **argv, mh_job_t *self)
{
    const char *c = argv[0];

    if (!strcmp(c, "alloc") || !strcmp(c, "mmap")) {
        mh_cmd_alloc(o, argc, argv, !strcmp(c, "mmap"));
    } else if (!strcmp(c, "fill")) {
        mh_cmd_fill(o, argc, argv);
    } else if (!strcmp(c, "verify")) {
        mh_cmd_verify(o, argc, argv);
    } else if (!strcmp(c, "connect") || !strcmp(c, "disconnect")) {
        mh_cmd_connect(o, argc, argv, !strcmp(c, "connect"));
    } else if (!strcmp(c, "write") || !strcmp(c, "read")) {
        mh_cmd_xfer(o, argc, argv, !strcmp(c, "write") ? HIXL_WRITE :
                    HIXL_READ);
    } else if (!strcmp(c, "stream")) {
        mh_stream_t fg;

        if (self == NULL) {
            memset(&fg, 0, sizeof(fg));
        }
        mh_cmd_stream(o, argc, argv, self ? self->stream : &fg);
    } else if (!strcmp(c, "progress") || !strcmp(c, "stop")) {
        mh_cmd_progress(o, argc, argv, !strcmp(c, "stop"));
    } else if (!strcmp(c, "flush")) {
        mh_cmd_flush(o, argc, argv);
    } else if (!strcmp(c, "wait_layer")) {
        mh_cmd_wait_layer(o, argc, argv);
    } else if (!strcmp(c, "test_layer")) {
        mh_cmd_test_layer(o, argc, argv);
    } else if (!strcmp(c, "notify")) {
        mh_cmd_notify(o, argc, argv);
    } else if (!strcmp(c, "notifies")) {
        mh_cmd_notifies(o);
    } else if (!strcmp(c, "state")) {
        mh_cmd_state(o, argc, argv);
    } else if (!strcmp(c, "fds")) {
        mh_printf(o, "OK fds=%d\n", mh_count_fds());
    } else if (!strcmp(c, "socks")) {
        mh_cmd_socks(o);
    } else if (!strcmp(c, "name")) {
        mh_printf(o, "OK name=%s\n", hixl_engine_name(mh.engine));
    } else if (self != NULL) {
        mh_printf(o, "ERR %s cannot run in the background\n", c);
    } else if (!strcmp(c, "bg")) {
        mh_cmd_bg(o, argc, argv);
    } else if (!strcmp(c, "job")) {
        mh_cmd_job(o, argc, argv);
    } else if (!strcmp(c, "finalize")) {
        double t0 = mh_now_ms();

        if (mh_jobs_running() && ((argc < 2) || strcmp(argv[1], "force"))) {
            mh_printf(o, "ERR %d jobs still run\n", mh_jobs_running());
            return;
        }
        mh_status(o, hixl_finalize(mh.engine), t0);
        mh.engine = NULL;
    } else {
        mh_printf(o, "ERR unknown command %s\n", c);
    }
}

/* Commands that need the engine after finalize are refused. */
static int mh_needs_engine(const char *c)
{
    return strcmp(c, "quit") && strcmp(c, "fds") && strcmp(c, "socks") &&
           strcmp(c, "job") && strcmp(c, "verify") && strcmp(c, "fill");
}

int mh_peer_main(int argc, char **argv)
{
    hixl_option_t opts[32];
    char line[4096], *args[MH_MAX_ARGS + 1], *save, *tok, msg[1024];
    size_t nopts = 0;
    hixl_status_t st;
    mh_out_t o = {NULL, 0, 0};
    int i, n, proto;

    signal(SIGPIPE, SIG_IGN);
    alarm(MH_PEER_ALARM_S);
    /* UCX logs to stdout: the protocol gets stdout's pipe to itself and
     * everything else printed on fd 1 goes where stderr goes (the file the
     * test reads for warnings and aborts) */
    proto = dup(STDOUT_FILENO);
    if ((proto < 0) || (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) ||
        ((mh_proto = fdopen(proto, "w")) == NULL)) {
        return 2;
    }
    pthread_mutex_init(&mh.lock, NULL);
    pthread_cond_init(&mh.cond, NULL);
    if (argc < 2) {
        fprintf(mh_proto, "FAIL status=HIXL_PARAM_INVALID msg=usage: --peer "
                "NAME [KEY=VALUE ...]\n");
        return 2;
    }
    for (i = 2; (i < argc) && (nopts < 32); ++i) {
        char *eq = strchr(argv[i], '=');

        if (eq == NULL) {
            continue;
        }
        *eq = '\0';
        opts[nopts].key     = argv[i];
        opts[nopts++].value = eq + 1;
    }
    st = hixl_initialize(argv[1], opts, nopts, &mh.engine);
    if (st != HIXL_SUCCESS) {
        fprintf(mh_proto, "FAIL status=%s msg=%s\n", hixl_strerror(st),
                mh_oneline(hixl_last_error(), msg, sizeof(msg)));
        fflush(mh_proto);
        return 2;
    }
    fprintf(mh_proto, "READY name=%s pid=%d\n", hixl_engine_name(mh.engine),
            (int)getpid());
    fflush(mh_proto);

    while (fgets(line, sizeof(line), stdin) != NULL) {
        line[strcspn(line, "\r\n")] = '\0';
        n = 0;
        for (tok = strtok_r(line, " \t", &save); (tok != NULL) &&
             (n < MH_MAX_ARGS); tok = strtok_r(NULL, " \t", &save)) {
            args[n++] = tok;
        }
        args[n] = NULL;
        o.len = 0;
        if (n == 0) {
            mh_printf(&o, "ERR empty command\n");
        } else if (!strcmp(args[0], "quit")) {
            fprintf(mh_proto, "OK\n");
            fflush(mh_proto);
            fflush(stdout);
            _exit(0);
        } else if ((mh.engine == NULL) && mh_needs_engine(args[0])) {
            mh_printf(&o, "ERR the engine was finalized\n");
        } else {
            mh_run(&o, n, args, NULL);
        }
        if (o.len == 0) {
            mh_printf(&o, "ERR no reply\n");
        }
        fwrite(o.buf, 1, o.len, mh_proto);
        fflush(mh_proto);
    }
    /* the test is gone: leave without touching the engine */
    _exit(0);
}
