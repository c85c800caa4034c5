/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: the engine processes.
 *
 * decode:  one listening engine and one registered region (the KV cache
 *          the prefill engines write into).  After it says READY its main
 *          thread only waits on the coordinator's socket: it makes no hixl
 *          call until QUIT, so every CPU tick it spends is the library's
 *          (progress thread) or UCX's.  It reads its own memory only when
 *          the coordinator asks it to verify a slice.
 * prefill: one engine, one source region; connects to the peers it is
 *          given (PEER lines) and writes its slice of each (fan_xfer.c).
 *
 * Every engine is named "127.0.0.1:0" with hixl.ListenEphemeral=1: it
 * listens on a port the kernel picks, which is what makes N engines on one
 * host distinct names (client-only engines of one host would all be
 * "127.0.0.1" and collide at the decode side).
 *
 * Lines (coordinator -> engine, engine -> coordinator):
 *   both:    -> QUIT
 *            <- READY engine=NAME addr=ADDR len=LEN  (or ERR msg=...)
 *   decode:  -> VERIFY off=O len=L seed=S   <- VERIFIED ok=1 | ok=0 msg=...
 *   prefill: -> PEER name=NAME addr=ADDR len=L off=O   (no answer)
 *            -> FILL seed=S     slice j gets pattern S+j   <- FILLED
 *            -> CONNECT at=T0   <- CONNECTED ms=a,b,... late=a,b,... cpu=S
 *            -> RUN at=T0 passes=P deadline=D
 *            <- DONE cpu=SECONDS ends=e,... done=b,... partial=0|1
 */
#include "config.h"
#include "stats_csv.h"
#include "fan.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- data pattern ------------------------------------------------------- */

uint64_t fan_seed(unsigned point, unsigned pass, unsigned peer)
{
    return bc_pattern_seed(((uint64_t)point << 40) ^ ((uint64_t)pass << 20) ^
                           peer);
}

/* Check a slice the prefills wrote: 0, or -1 and what was wrong in msg. */
static int fan_verify(const uint8_t *buf, size_t len, uint64_t seed,
                      char *msg, size_t msg_len)
{
    bc_pattern_diff_t diff;

    if (bc_pattern_check(buf, len, seed, &diff) == 0) {
        return 0;
    }
    snprintf(msg, msg_len, "%zu bad byte(s) of %zu, the first at offset %zu",
             diff.bad, len, diff.first);
    return -1;
}

/* ---- engines ------------------------------------------------------------ */

static hixl_engine_t *fan_engine_init(const fan_engine_cfg_t *cfg, int role,
                                      int fd)
{
    const fan_opts_t *o = cfg->opts;
    const fan_optlist_t *all = &o->hopts[FAN_OPT_ALL], *mine = &o->hopts[role];
    hixl_option_t *v;
    hixl_engine_t *engine = NULL;
    hixl_status_t status;
    char timeout_ms[24];
    size_t n = 0, i;

    v = calloc(2 + all->n + mine->n, sizeof(*v));
    if (v == NULL) {
        fan_child_send(fd, "ERR msg=out of memory");
        return NULL;
    }
    v[n].key = "hixl.ListenEphemeral"; v[n++].value = "1";
    /* a transfer may wait behind everything the other peers have in
     * flight: let our own budget (RUN deadline) end a slow pass, not the
     * library's default transfer deadline; the user's -O come after and win */
    snprintf(timeout_ms, sizeof(timeout_ms), "%.0f",
             (o->point_timeout + 120.0) * 1000.0);
    v[n].key = "hixl.TransferTimeoutMs"; v[n++].value = timeout_ms;
    for (i = 0; i < all->n; ++i) {
        v[n++] = all->v[i];
    }
    for (i = 0; i < mine->n; ++i) {
        v[n++] = mine->v[i];
    }
    status = hixl_initialize("127.0.0.1:0", v, n, &engine);
    free(v);
    if (status != HIXL_SUCCESS) {
        fan_child_send(fd, "ERR msg=hixl_initialize: %s: %s",
                       hixl_strerror(status), hixl_last_error());
        return NULL;
    }
    return engine;
}

/* Longest wait for the warming of a fresh region (seconds per GiB here). */
#define FAN_WARM_WAIT_MS 300000

/* The region: hixl_alloc_mem (UCX allocates: on one host, shared memory
 * the peers map), or anonymous memory registered with hixl_register_mem. */
static int fan_region(hixl_engine_t *engine, int alloc, size_t len,
                      uint8_t **p_out, int fd)
{
    hixl_mem_handle_t h;
    hixl_mem_desc_t desc;
    hixl_status_t status;
    void *p;

    if (alloc == FAN_ALLOC_HIXL) {
        status = hixl_alloc_mem(engine, len, HIXL_MEM_HOST, &p, &h);
        if (status != HIXL_SUCCESS) {
            fan_child_send(fd, "ERR msg=hixl_alloc_mem(%zu): %s: %s", len,
                           hixl_strerror(status), hixl_last_error());
            return -1;
        }
        /* measure what an engine that has been up a while meets: memory
         * its background warming has written (hixl_mem_warm_wait; with
         * hixl.PrefaultMem=none there is none, and this returns at once) */
        (void)hixl_mem_warm_wait(engine, FAN_WARM_WAIT_MS);
        *p_out = p;
        return 0;
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED) {
        fan_child_send(fd, "ERR msg=mmap(%zu) failed", len);
        return -1;
    }
    desc.addr = (uintptr_t)p;
    desc.len  = len;
    status = hixl_register_mem(engine, &desc, HIXL_MEM_HOST, &h);
    if (status != HIXL_SUCCESS) {
        fan_child_send(fd, "ERR msg=hixl_register_mem(%zu): %s: %s", len,
                       hixl_strerror(status), hixl_last_error());
        munmap(p, len);
        return -1;
    }
    *p_out = p;
    return 0;
}

int fan_decode_line(int fd, const char *line, const uint8_t *mem,
                    size_t mem_len, const char *broken)
{
    uint64_t off, len, seed;
    char msg[200];

    if (!strcmp(line, "QUIT")) {
        return 1;
    }
    if (!strncmp(line, "VERIFY", 6) && !bc_kv_u64(line, "off", &off) &&
        !bc_kv_u64(line, "len", &len) && !bc_kv_u64(line, "seed", &seed) &&
        (off <= mem_len) && (len <= mem_len - off)) {
        if (broken != NULL) {
            fan_child_send(fd, "VERIFIED ok=0 msg=%s", broken);
        } else if (fan_verify(mem + off, len, seed, msg, sizeof(msg))) {
            fan_child_send(fd, "VERIFIED ok=0 msg=%s", msg);
        } else {
            fan_child_send(fd, "VERIFIED ok=1");
        }
        return 0;
    }
    fan_child_send(fd, "ERR msg=unexpected line: %.80s", line);
    return -1;
}

int fan_decode_main(int fd, void *arg)
{
    const fan_engine_cfg_t *cfg = arg;
    bench_stats_t *stats;
    hixl_engine_t *engine;
    uint8_t *mem = NULL;
    char *line;
    int rc = FAN_EXIT_ERROR, r = -1;

    engine = fan_engine_init(cfg, FAN_OPT_DECODE, fd);
    if (engine == NULL) {
        return FAN_EXIT_ERROR;
    }
    stats = bench_stats_start(engine, "decode");   /* HIXL_BENCH_STATS */
    if (fan_region(engine, cfg->alloc, cfg->region_len, &mem, fd) != 0) {
        goto out;
    }
    if (cfg->touch) {
        memset(mem, 0, cfg->region_len);   /* a warm KV cache */
    }
    fan_child_send(fd, "READY engine=%s addr=%" PRIu64 " len=%zu pid=%d",
                   hixl_engine_name(engine), (uint64_t)(uintptr_t)mem,
                   cfg->region_len, (int)getpid());
    while ((fan_child_recv(fd, &line) == 0) &&
           ((r = fan_decode_line(fd, line, mem, cfg->region_len,
                                 NULL)) == 0)) {
    }
    rc = (r > 0) ? FAN_EXIT_OK : FAN_EXIT_ERROR;
out:
    bench_stats_stop(stats);
    hixl_finalize(engine);     /* deregisters (and frees hixl's memory) */
    if ((mem != NULL) && (cfg->alloc == FAN_ALLOC_MMAP)) {
        munmap(mem, cfg->region_len);
    }
    return rc;
}

/* ---- prefill ------------------------------------------------------------ */

typedef struct fan_prefill {
    const fan_engine_cfg_t *cfg;
    hixl_engine_t *engine;
    uint8_t       *src;
    fan_peer_t    *peers;
    unsigned       num_peers;
    int            fd;
} fan_prefill_t;

static int fan_prefill_peer(fan_prefill_t *p, const char *line)
{
    uint64_t addr, len, off;
    const char *name = bc_kv(line, "name");
    fan_peer_t *peer;

    if ((name == NULL) || bc_kv_u64(line, "addr", &addr) ||
        bc_kv_u64(line, "len", &len) || bc_kv_u64(line, "off", &off) ||
        (off > p->cfg->region_len) || (len > p->cfg->region_len - off) ||
        (p->num_peers == FAN_MAX_N) ||
        (strlen(name) >= sizeof(p->peers[0].name))) {
        fan_child_send(p->fd, "ERR msg=bad PEER line: %.80s", line);
        return -1;
    }
    peer = &p->peers[p->num_peers++];
    memset(peer, 0, sizeof(*peer));
    snprintf(peer->name, sizeof(peer->name), "%s", name);
    peer->remote = addr;
    peer->local  = p->src + off;
    peer->len    = len;
    return 0;
}

static void fan_xfer_cfg(fan_prefill_t *p, fan_xfer_cfg_t *x)
{
    const fan_opts_t *o = p->cfg->opts;

    memset(x, 0, sizeof(*x));
    x->engine     = p->engine;
    x->peers      = p->peers;
    x->num_peers  = p->num_peers;
    x->desc_size  = o->desc_size;
    x->per_xfer   = o->per_xfer;
    x->window     = o->window;
    x->poll_us    = o->poll_us;
    x->wait_block = o->wait_block;
    x->timeout_ms = (int32_t)((o->point_timeout + 60.0) * 1000.0);
}

void fan_peer_list(char *buf, size_t len, const fan_peer_t *peers,
                   unsigned n, int what)
{
    size_t used = 0;
    unsigned i;

    buf[0] = '\0';
    for (i = 0; (i < n) && (used + 32 < len); ++i) {
        switch (what) {
        case FAN_LIST_CONNECT_MS:
        case FAN_LIST_LATE_MS:
            used += (size_t)snprintf(buf + used, len - used, "%s%.4f",
                                     i ? "," : "",
                                     (what == FAN_LIST_LATE_MS) ?
                                     peers[i].late_ms : peers[i].connect_ms);
            break;
        default:
            used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64,
                                     i ? "," : "", (what == FAN_LIST_END) ?
                                     peers[i].t_end : peers[i].done);
            break;
        }
    }
}

static int fan_prefill_cmd(void *arg, const char *line)
{
    fan_prefill_t *p = arg;
    static char a[FAN_LINE_MAX / 3], b[FAN_LINE_MAX / 3];
    uint64_t t0, seed, passes, deadline;
    fan_sample_t s0, s1;
    fan_xfer_cfg_t x;
    char err[256];
    unsigned i, partial = 0;

    if (!strncmp(line, "PEER ", 5)) {
        /* no answer: they come in a row, before CONNECT */
        return fan_prefill_peer(p, line);
    }
    if (!strncmp(line, "FILL ", 5) && !bc_kv_u64(line, "seed", &seed)) {
        for (i = 0; i < p->num_peers; ++i) {
            bc_pattern_fill(p->peers[i].local, p->peers[i].len, seed + i);
        }
        return fan_child_send(p->fd, "FILLED");
    }
    fan_xfer_cfg(p, &x);
    if (!strncmp(line, "CONNECT ", 8) && !bc_kv_u64(line, "at", &t0)) {
        fan_proc_sample(getpid(), &s0);
        if (fan_xfer_connect(&x, t0, err, sizeof(err)) != 0) {
            return fan_child_send(p->fd, "ERR msg=%s", err);
        }
        fan_proc_sample(getpid(), &s1);
        /* what an engine that has been connected a while meets: the peers'
         * memory mapped here pre-faulted (shared memory; nothing to wait
         * for elsewhere), after the connects were measured */
        (void)hixl_mem_warm_wait(p->engine, FAN_WARM_WAIT_MS);
        fan_peer_list(a, sizeof(a), p->peers, p->num_peers,
                      FAN_LIST_CONNECT_MS);
        fan_peer_list(b, sizeof(b), p->peers, p->num_peers,
                      FAN_LIST_LATE_MS);
        return fan_child_send(p->fd, "CONNECTED ms=%s late=%s cpu=%.9f", a,
                              b, fan_cpu_s(&s0, &s1));
    }
    if (!strncmp(line, "RUN ", 4) && !bc_kv_u64(line, "at", &t0) &&
        !bc_kv_u64(line, "passes", &passes) &&
        !bc_kv_u64(line, "deadline", &deadline)) {
        x.passes   = (unsigned)passes;
        x.deadline = deadline;
        bc_sleep_until_ns(t0);
        fan_proc_sample(getpid(), &s0);
        if (fan_xfer_run(&x, err, sizeof(err)) != 0) {
            return fan_child_send(p->fd, "ERR msg=%s", err);
        }
        fan_proc_sample(getpid(), &s1);
        for (i = 0; i < p->num_peers; ++i) {
            partial |= (unsigned)p->peers[i].partial;
        }
        fan_peer_list(a, sizeof(a), p->peers, p->num_peers, FAN_LIST_END);
        fan_peer_list(b, sizeof(b), p->peers, p->num_peers, FAN_LIST_DONE);
        return fan_child_send(p->fd, "DONE cpu=%.9f ends=%s done=%s "
                              "partial=%u", fan_cpu_s(&s0, &s1), a, b,
                              partial);
    }
    fan_child_send(p->fd, "ERR msg=unexpected line: %.80s", line);
    return -1;
}

int fan_prefill_main(int fd, void *arg)
{
    bench_stats_t *stats;
    fan_prefill_t p;
    int rc = FAN_EXIT_ERROR;

    memset(&p, 0, sizeof(p));
    p.cfg   = arg;
    p.fd    = fd;
    p.peers = calloc(FAN_MAX_N, sizeof(*p.peers));
    if (p.peers == NULL) {
        fan_child_send(fd, "ERR msg=out of memory");
        return FAN_EXIT_ERROR;
    }
    p.engine = fan_engine_init(p.cfg, FAN_OPT_PREFILL, fd);
    if (p.engine == NULL) {
        free(p.peers);
        return FAN_EXIT_ERROR;
    }
    stats = bench_stats_start(p.engine, "prefill");   /* HIXL_BENCH_STATS */
    /* the source: registered, allocated by UCX, warm (the cold case is
     * about the decode side's memory) */
    if (fan_region(p.engine, FAN_ALLOC_HIXL, p.cfg->region_len, &p.src,
                   fd) != 0) {
        goto out;
    }
    memset(p.src, 0, p.cfg->region_len);
    fan_child_send(fd, "READY engine=%s addr=%" PRIu64 " len=%zu pid=%d",
                   hixl_engine_name(p.engine), (uint64_t)(uintptr_t)p.src,
                   p.cfg->region_len, (int)getpid());
    rc = fan_child_serve(fd, fan_prefill_cmd, &p);
out:
    bench_stats_stop(stats);
    hixl_finalize(p.engine);
    free(p.peers);
    return rc;
}
