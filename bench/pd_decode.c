/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline, decode side: a listening engine that owns the KV
 * cache.  It allocates and registers the cache, measures one core's memcpy
 * into it, waits for one prefill engine, tells it the layout (LAYOUT), then
 * serves its runs: per run it says GO, records when each layer became usable
 * and verifies every byte of the cache.  It prints the per-layer table and
 * the summary, and its exit status says whether every byte of every run
 * arrived right.
 */
#include "pd_run.h"
#include "stats_csv.h"

#include <hixl/hixl.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PD_WARMUP_BIT 0x80000000u

typedef struct pd_decode {
    const pd_config_t *cfg;
    hixl_engine_t     *engine;
    pd_link_t          link;
    pd_session_t       session;
    pd_memcpy_t        limit;
    uint8_t           *cache;
    uint8_t           *staging;
    int                listen_fd;
    unsigned           staged_port;
    char               host[64];
    uint64_t           last_run;
    uint64_t           warm_ready_buf[PD_MAX_LAYERS];
    pd_mode_result_t   results[PD_NMODES];
    unsigned           runs;      /* verified runs, warm-up included */
    uint64_t           bad;       /* bytes wrong over every run */
    int                failed;    /* a run did not complete */
    char               error[PD_MSG_TEXT_MAX];
} pd_decode_t;

static int pd_decode_fail(pd_decode_t *d, const char *fmt, const char *what)
{
    snprintf(d->error, sizeof(d->error), fmt, what);
    fprintf(stderr, "pd_pipeline: decode: %s\n", d->error);
    return -1;
}

static int pd_decode_layers(pd_decode_t *d, pd_mode_result_t *r,
                            uint64_t run, int pipelined)
{
    const pd_shape_t *s = &d->cfg->shape;
    unsigned layer;

    for (layer = pipelined ? 0 : s->layers - 1; layer < s->layers; ++layer) {
        /* only wait and stamp here: checking bytes would delay noticing
         * the next layer; every byte is checked after the run */
        if (hixl_wait_layer(d->engine, d->session.prefill, 0, run, layer,
                            d->cfg->timeout_ms) != HIXL_SUCCESS) {
            return pd_decode_fail(d, "hixl_wait_layer: %s",
                                  hixl_last_error());
        }
        r->ready[layer] = bc_now_ns();
    }
    if (!pipelined) {
        for (layer = 0; layer + 1 < s->layers; ++layer) {
            r->ready[layer] = r->ready[s->layers - 1];
        }
    }
    return 0;
}

static int pd_decode_staged(pd_decode_t *d, pd_mode_result_t *r, int fd)
{
    const pd_shape_t *s = &d->cfg->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    unsigned layer;
    uint8_t *dst;

    for (layer = 0; layer < s->layers; ++layer) {
        if (bc_read_all(fd, d->staging, lb) != 0) {
            return pd_decode_fail(d, "staged socket: %s at a layer",
                                  "closed or silent");
        }
        dst = d->cache + (size_t)layer * lb;
        for (b = 0; b < nb; ++b) {
            memcpy(dst + pd_slot(b, nb) * bb, d->staging + b * bb, bb);
        }
        r->ready[layer] = bc_now_ns();
    }
    return 0;
}

static uint64_t pd_decode_verify(pd_decode_t *d, uint64_t run)
{
    const pd_shape_t *s = &d->cfg->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    uint64_t bad = 0;
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        for (b = 0; b < nb; ++b) {
            bad += bc_pattern_check(d->cache + layer * lb +
                                    pd_slot(b, nb) * bb, bb,
                                    pd_block_seed(run, layer, b), NULL);
        }
    }
    return bad;
}

/* One START .. RESULT exchange. */
static int pd_decode_run(pd_decode_t *d, const pd_msg_t *start)
{
    const pd_shape_t *s = &d->cfg->shape;
    uint32_t mode = start->u.start.mode & ~PD_WARMUP_BIT;
    uint64_t run = start->u.start.run, last;
    uint8_t buf[PD_MSG_HDR + 64 + PD_MSG_TEXT_MAX];
    pd_mode_result_t warm, *r;
    int fd = -1, rc;
    size_t len;

    if ((mode >= PD_NMODES) || (run <= d->last_run)) {
        /* a generation must grow (hixl layer signals drop older ones) */
        len = pd_msg_refuse(buf, sizeof(buf), "START: unknown mode or a run "
                            "number that does not grow");
        pd_link_send(&d->link, buf, len, d->cfg->timeout_ms);
        return pd_decode_fail(d, "%s", "prefill sent a bad START");
    }
    d->last_run = run;
    if (start->u.start.mode & PD_WARMUP_BIT) {
        memset(&warm, 0, sizeof(warm));
        warm.ready = d->warm_ready_buf;
        r          = &warm;
    } else {
        r = &d->results[mode];
    }
    memset(r->ready, 0, s->layers * sizeof(*r->ready));
    d->error[0] = '\0';
    if ((mode == PD_STAGED) &&
        ((fd = pd_tcp_accept(d->listen_fd, d->cfg->timeout_ms)) < 0)) {
        rc = pd_decode_fail(d, "%s", "no staged connection from prefill");
    } else {
        /* the clock starts when decode says go: the times include that
         * notify's one-way trip (tens of microseconds), and need no clock
         * shared with the prefill host */
        r->t0 = bc_now_ns();
        len   = pd_msg_start(buf, sizeof(buf), PD_MSG_GO, mode, run);
        rc    = pd_link_send(&d->link, buf, len, d->cfg->timeout_ms);
        if (rc == 0) {
            rc = (mode == PD_STAGED) ?
                 pd_decode_staged(d, r, fd) :
                 pd_decode_layers(d, r, run, mode == PD_PIPELINED);
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    r->ran    = 1;
    r->failed = (rc != 0);
    if (rc == 0) {
        r->bad_bytes = pd_decode_verify(d, run);
        d->bad      += r->bad_bytes;
        d->runs++;
    }
    d->failed |= r->failed;
    last = r->ready[s->layers - 1];
    len  = pd_msg_result(buf, sizeof(buf), mode, (uint32_t)r->failed, run,
                         r->bad_bytes, last ? last - r->t0 : 0,
                         r->ready[0] ? r->ready[0] - r->t0 : 0, d->error);
    if (pd_link_send(&d->link, buf, len, d->cfg->timeout_ms) != 0) {
        return -1;
    }
    return rc;
}

static int pd_decode_layout(pd_decode_t *d)
{
    const pd_shape_t *s = &d->cfg->shape;
    size_t nb = pd_blocks_per_layer(s), lb = pd_layer_bytes(s), b;
    pd_layout_t l;
    uint8_t *buf;
    size_t len = 0;
    unsigned i;

    memset(&l, 0, sizeof(l));
    l.shape       = *s;
    l.block_bytes = pd_block_bytes(s);
    l.blocks      = (uint32_t)nb;
    l.staged_port = (uint16_t)d->staged_port;
    l.layer_addr  = calloc(s->layers, sizeof(*l.layer_addr));
    l.slot        = calloc(nb, sizeof(*l.slot));
    buf           = malloc(PD_MSG_MAX);
    if ((l.layer_addr != NULL) && (l.slot != NULL) && (buf != NULL)) {
        for (i = 0; i < s->layers; ++i) {
            l.layer_addr[i] = (uintptr_t)d->cache + (uint64_t)i * lb;
        }
        for (b = 0; b < nb; ++b) {
            l.slot[b] = (uint32_t)pd_slot(b, nb);
        }
        len = pd_msg_layout(buf, PD_MSG_MAX, &l);
    }
    free(l.layer_addr);
    free(l.slot);
    if ((len == 0) ||
        (pd_link_send(&d->link, buf, len, d->cfg->timeout_ms) != 0)) {
        free(buf);
        return pd_decode_fail(d, "%s", "cannot send the KV layout");
    }
    free(buf);
    return 0;
}

static int pd_decode_setup(pd_decode_t *d)
{
    const pd_config_t *cfg = d->cfg;
    hixl_option_t opts[] = {{"hixl.ListenEphemeral", "1"},
                            {"hixl.MaxStreams", "1"},
                            {"hixl.MaxLayers", "256"}};
    size_t bytes = pd_cache_bytes(&cfg->shape);
    char name[HIXL_ENGINE_NAME_MAX + 1];
    hixl_mem_handle_t h;
    unsigned port;
    void *cache;

    /* a name without a port would make a client-only engine: nobody
     * could connect to it */
    if ((pd_name_split(cfg->listen, d->host, sizeof(d->host), &port) != 0) ||
        ((cfg->listen[0] == '[') ? (strstr(cfg->listen, "]:") == NULL) :
         ((strchr(cfg->listen, ':') == NULL) ||
          (strchr(cfg->listen, ':') != strrchr(cfg->listen, ':'))))) {
        fprintf(stderr, "pd_pipeline: decode: --listen %s: expected IP:PORT "
                "or [IPv6]:PORT (decode must listen)\n", cfg->listen);
        return -1;
    }
    if (hixl_initialize(cfg->listen, opts, 3, &d->engine) != HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: decode engine %s: %s\n", cfg->listen,
                hixl_last_error());
        return -1;
    }
    d->link.engine = d->engine;
    /* The cache prefill writes into is allocated by the engine, as hixl
     * users allocate it with the runtime's allocator: on one host UCX then
     * reaches it through shared memory. */
    if (hixl_alloc_mem(d->engine, bytes, HIXL_MEM_HOST, &cache, &h) !=
        HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: decode KV cache: %s\n",
                hixl_last_error());
        return -1;
    }
    d->cache = cache;
    /* one core's memcpy into this very memory: the limit the report shows;
     * it also faults the cache in before anything is timed */
    if (cfg->no_memcpy || (pd_memcpy_measure(d->cache, bytes,
                                             &d->limit) != 0)) {
        if (!cfg->no_memcpy) {
            fprintf(stderr, "pd_pipeline: decode: no memory for a second "
                    "copy of the cache: the memcpy limit is not measured\n");
        }
        memset(d->cache, 0, bytes);
    }
    d->staging = pd_alloc(pd_layer_bytes(&cfg->shape));
    d->results[0].ready = calloc(PD_NMODES * (size_t)cfg->shape.layers,
                                 sizeof(uint64_t));
    if (!d->staging || !d->results[0].ready) {
        fprintf(stderr, "pd_pipeline: decode: out of memory\n");
        return -1;
    }
    for (port = 1; port < PD_NMODES; ++port) {
        d->results[port].ready = d->results[0].ready +
                                 port * (size_t)cfg->shape.layers;
    }
    d->listen_fd = pd_tcp_listen(d->host, cfg->staged_port, &d->staged_port);
    if (d->listen_fd < 0) {
        return -1;
    }
    memset(name, 0, sizeof(name));
    snprintf(name, sizeof(name), "%s", hixl_engine_name(d->engine));
    if (cfg->role == PD_ROLE_DECODE) {
        printf("pd_pipeline decode: engine %s listening (staged mode: TCP "
               "port %u); waiting up to %d s for a prefill engine\n", name,
               d->staged_port, cfg->peer_wait_ms / 1000);
        fflush(stdout);
    }
    if ((cfg->name_fd >= 0) &&
        (bc_write_all(cfg->name_fd, name, sizeof(name)) != 0)) {
        return -1;
    }
    return 0;
}

/* HELLO from the first prefill engine that speaks; LAYOUT back. */
static int pd_decode_greet(pd_decode_t *d)
{
    pd_msg_t m;

    if (pd_link_expect(&d->link, &m, PD_MSG_HELLO,
                       d->cfg->peer_wait_ms) != 0) {
        return -1;
    }
    snprintf(d->session.prefill, sizeof(d->session.prefill), "%s",
             d->link.peer);
    d->session.modes              = m.u.hello.modes;
    d->session.prefill_compute_ms = m.u.hello.prefill_compute_us / 1000.0;
    if (d->cfg->role == PD_ROLE_DECODE) {
        printf("pd_pipeline decode: prefill engine %s connected\n",
               d->session.prefill);
        fflush(stdout);
    }
    return pd_decode_layout(d);
}

static int pd_decode_serve(pd_decode_t *d)
{
    pd_msg_t m;

    for (;;) {
        if (pd_link_recv(&d->link, &m, d->cfg->timeout_ms) != 0) {
            return -1;
        }
        if (m.type == PD_MSG_QUIT) {
            return 0;
        }
        if (m.type != PD_MSG_START) {
            fprintf(stderr, "pd_pipeline: decode: prefill sent %s where START "
                    "or QUIT was due\n", pd_msg_type_name(m.type));
            pd_msg_clear(&m);
            return -1;
        }
        if (pd_decode_run(d, &m) != 0) {
            return -1;
        }
    }
}

int pd_decode_main(const pd_config_t *cfg)
{
    bench_stats_t *stats = NULL;
    pd_decode_t d;
    int rc = 1;

    memset(&d, 0, sizeof(d));
    d.cfg       = cfg;
    d.listen_fd = -1;
    pd_print_shape((cfg->role == PD_ROLE_DECODE) ? "pd_pipeline decode: " :
                   "pd_pipeline: ", &cfg->shape);
    printf("UCX_TLS=%s  decode compute %.2f ms/layer (modelled)\n",
           getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)",
           cfg->decode_compute_ms);
    fflush(stdout);
    if (pd_decode_setup(&d) == 0) {
        stats = bench_stats_start(d.engine, "decode");   /* HIXL_BENCH_STATS */
        if (cfg->name_fd >= 0) {
            close(cfg->name_fd);
        }
        if ((pd_decode_greet(&d) == 0) && (pd_decode_serve(&d) == 0)) {
            rc = 0;
        }
    } else if (cfg->name_fd >= 0) {
        close(cfg->name_fd);   /* prefill reads EOF: decode did not start */
    }
    if (d.session.prefill[0] != '\0') {
        pd_report(cfg, &d.session, &d.limit, d.results);
        printf("verified at decode: %u run(s), every byte; %" PRIu64
               " wrong%s\n", d.runs, d.bad, d.failed ? "; a run FAILED" : "");
    }
    if ((d.runs == 0) || (d.bad != 0) || d.failed) {
        rc = 1;
    }
    if (rc != 0) {
        fprintf(stderr, "pd_pipeline: decode: FAILED\n");
    }
    fflush(stdout);   /* the loopback form ends this process with _exit */
    pd_link_clear(&d.link);
    bench_stats_stop(stats);
    if (d.engine != NULL) {
        hixl_finalize(d.engine);
    }
    if (d.listen_fd >= 0) {
        close(d.listen_fd);
    }
    pd_free(d.staging, pd_layer_bytes(&cfg->shape));
    free(d.results[0].ready);
    return rc;
}
