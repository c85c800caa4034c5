/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline, prefill side: connects to the decode engine, learns
 * the KV cache's shape, layer addresses and block table from it (HELLO ->
 * LAYOUT), then per mode computes (sleeps) and posts the cache layer by
 * layer once decode says GO, and collects decode's verdict (RESULT).
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

typedef struct pd_prefill {
    const pd_config_t        *cfg;
    pd_shape_t                shape;     /* decode's, from LAYOUT */
    pd_layout_t               layout;
    char                      decode_host[64];
    hixl_engine_t            *engine;
    pd_link_t                 link;
    uint8_t                  *cache;
    uint8_t                  *staging;
    hixl_transfer_op_desc_t  *descs;     /* layers x blocks */
    hixl_req_t               *reqs;      /* one per layer */
    hixl_transfer_status_t   *st;        /* what the wait reported */
    const char               *label;     /* for the progress line */
} pd_prefill_t;

static void pd_progress(const pd_prefill_t *p, unsigned layer)
{
    unsigned n = p->shape.layers;
    static int tty = -1;

    if (p->cfg->quiet) {
        return;
    }
    if (tty < 0) {
        tty = isatty(STDERR_FILENO);
    }
    if (tty) {
        fprintf(stderr, "\r  %-9s layer %3u/%u %s", p->label, layer + 1, n,
                (layer + 1 == n) ? "posted\n" : "");
    } else if (((layer + 1) * 4 / n) != (layer * 4 / n) || (layer + 1 == n)) {
        fprintf(stderr, "  %-9s layer %3u/%u posted\n", p->label, layer + 1,
                n);
    }
}

/* Per layer, the descriptors of its blocks: prefill's blocks in order,
 * decode's where its LAYOUT says (layer address + block-table slot). */
static void pd_prefill_build_descs(pd_prefill_t *p)
{
    const pd_shape_t *s = &p->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    hixl_transfer_op_desc_t *d;
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        for (b = 0; b < nb; ++b) {
            d = &p->descs[layer * nb + b];
            d->local_addr  = (uintptr_t)p->cache + layer * lb + b * bb;
            d->remote_addr = p->layout.layer_addr[layer] +
                             p->layout.slot[b] * bb;
            d->len         = bb;
        }
    }
}

static void pd_prefill_fill(pd_prefill_t *p, uint64_t run)
{
    const pd_shape_t *s = &p->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        for (b = 0; b < nb; ++b) {
            bc_pattern_fill(p->cache + layer * lb + b * bb, bb,
                            pd_block_seed(run, layer, b));
        }
    }
}

static int pd_prefill_hixl(pd_prefill_t *p, unsigned mode, uint64_t run)
{
    const pd_shape_t *s = &p->shape;
    const char *decode = p->cfg->decode;
    size_t nb = pd_blocks_per_layer(s);
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        bc_sleep_ms(p->cfg->prefill_compute_ms);
        if (hixl_transfer_async(p->engine, decode, HIXL_WRITE,
                                &p->descs[layer * nb], nb, NULL,
                                &p->reqs[layer]) != HIXL_SUCCESS) {
            fprintf(stderr, "\npd_pipeline: layer %u: %s\n", layer,
                    hixl_last_error());
            return -1;
        }
        if (((mode == PD_PIPELINED) || (layer + 1 == s->layers)) &&
            (hixl_flush_layer(p->engine, decode, 0, run, layer) !=
             HIXL_SUCCESS)) {
            fprintf(stderr, "\npd_pipeline: flush layer %u: %s\n", layer,
                    hixl_last_error());
            return -1;
        }
        pd_progress(p, layer);
    }
    /* sleep until every layer's request ended (bounded: a request ends
     * TIMEOUT at its own deadline) */
    if (hixl_wait_transfers(p->engine, p->reqs, s->layers, HIXL_WAIT_ALL, -1,
                            p->st, NULL) != HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: wait: %s\n", hixl_last_error());
        return -1;
    }
    for (layer = 0; layer < s->layers; ++layer) {
        if (p->st[layer] != HIXL_TRANSFER_COMPLETED) {
            fprintf(stderr, "pd_pipeline: layer %u transfer ended %s: %s\n",
                    layer, (p->st[layer] == HIXL_TRANSFER_TIMEOUT) ?
                    "TIMEOUT" : "FAILED", hixl_last_error());
            return -1;
        }
    }
    return 0;
}

static int pd_prefill_staged(pd_prefill_t *p, int fd)
{
    const pd_shape_t *s = &p->shape;
    size_t lb = pd_layer_bytes(s);
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        bc_sleep_ms(p->cfg->prefill_compute_ms);
        memcpy(p->staging, p->cache + layer * lb, lb);
        if (bc_write_all(fd, p->staging, lb) != 0) {
            perror("\npd_pipeline: staged send");
            return -1;
        }
        pd_progress(p, layer);
    }
    return 0;
}

static void pd_prefill_say(const pd_prefill_t *p, const pd_msg_t *res)
{
    double gb = pd_cache_bytes(&p->shape) / 1e9;
    double ms = res->u.result.total_ns / 1e6;

    /* in the loopback form decode prints the whole report */
    if (p->cfg->loopback) {
        return;
    }
    printf("%-9s all layers at decode after %.2f ms (%.2f GB/s), layer 0 "
           "after %.3f ms; decode found %" PRIu64 " bytes wrong%s%s\n",
           pd_mode_name(res->u.result.mode), ms, (ms > 0) ? gb / (ms / 1e3) :
           0.0, res->u.result.layer0_ns / 1e6, res->u.result.bad_bytes,
           res->u.result.failed ? "; FAILED: " : "", res->u.result.text);
    fflush(stdout);
}

/* START, GO, post, RESULT.  0 when decode verified every byte. */
static int pd_prefill_run(pd_prefill_t *p, unsigned mode, uint64_t run,
                          int warmup)
{
    uint8_t buf[PD_MSG_HDR + 64];
    pd_msg_t m;
    int fd = -1, rc;
    size_t len;

    p->label = warmup ? "warm-up" : pd_mode_name(mode);
    pd_prefill_fill(p, run);
    len = pd_msg_start(buf, sizeof(buf), PD_MSG_START,
                       mode | (warmup ? PD_WARMUP_BIT : 0), run);
    if (pd_link_send(&p->link, buf, len, p->cfg->timeout_ms) != 0) {
        return -1;
    }
    if ((mode == PD_STAGED) &&
        ((fd = pd_tcp_connect(p->decode_host, p->layout.staged_port,
                              p->cfg->timeout_ms)) < 0)) {
        return -1;
    }
    rc = pd_link_expect(&p->link, &m, PD_MSG_GO, p->cfg->timeout_ms);
    if ((rc == 0) && ((m.u.start.mode != mode) || (m.u.start.run != run))) {
        fprintf(stderr, "pd_pipeline: decode said GO to another run\n");
        rc = -1;
    }
    if (rc == 0) {
        rc = (mode == PD_STAGED) ? pd_prefill_staged(p, fd) :
                                   pd_prefill_hixl(p, mode, run);
    }
    if (fd >= 0) {
        close(fd);
    }
    if (rc != 0) {
        return -1;   /* decode times out on the missing layers */
    }
    if (pd_link_expect(&p->link, &m, PD_MSG_RESULT,
                       p->cfg->timeout_ms) != 0) {
        return -1;
    }
    if ((m.u.result.mode != mode) || (m.u.result.run != run)) {
        fprintf(stderr, "pd_pipeline: decode's RESULT is for another run\n");
        return -1;
    }
    if (!warmup) {
        pd_prefill_say(p, &m);
    }
    if (m.u.result.failed || (m.u.result.bad_bytes != 0)) {
        fprintf(stderr, "pd_pipeline: %s run: decode %s\n", p->label,
                m.u.result.failed ? m.u.result.text : "found bytes wrong");
        return -1;
    }
    return 0;
}

/* Keep knocking until the decode engine listens (it may still be
 * measuring memcpy, or be started second), within --peer-wait-s. */
static int pd_prefill_connect(pd_prefill_t *p)
{
    uint64_t deadline = bc_now_ns() +
                        (uint64_t)p->cfg->peer_wait_ms * 1000000ull;
    hixl_status_t st;

    for (;;) {
        st = hixl_connect(p->engine, p->cfg->decode, 5000);
        if (st == HIXL_SUCCESS) {
            return 0;
        }
        if (bc_now_ns() > deadline) {
            fprintf(stderr, "pd_pipeline: prefill: cannot connect to decode "
                    "engine %s within %d s: %s\n", p->cfg->decode,
                    p->cfg->peer_wait_ms / 1000, hixl_last_error());
            return -1;
        }
        bc_sleep_ms(200);
    }
}

/* HELLO, then decode's LAYOUT: the cache this side writes into. */
static int pd_prefill_learn(pd_prefill_t *p)
{
    uint8_t buf[PD_MSG_HDR + 16];
    pd_msg_t m;
    size_t len;

    len = pd_msg_hello(buf, sizeof(buf), p->cfg->modes,
                       (uint32_t)(p->cfg->prefill_compute_ms * 1000.0));
    /* decode may still be measuring memcpy into its fresh cache (its
     * cold copy of gigabytes takes tens of seconds): --peer-wait-s */
    if ((pd_link_send(&p->link, buf, len, p->cfg->timeout_ms) != 0) ||
        (pd_link_expect(&p->link, &m, PD_MSG_LAYOUT,
                        p->cfg->peer_wait_ms) != 0)) {
        return -1;
    }
    p->layout = m.u.layout;   /* takes its arrays */
    p->shape  = m.u.layout.shape;
    if (!p->cfg->loopback) {
        pd_print_shape("pd_pipeline prefill: decode's ", &p->shape);
        printf("pd_pipeline prefill: layers at 0x%" PRIx64 "..0x%" PRIx64
               ", block table of %u slots, staged mode on TCP port %u\n",
               p->layout.layer_addr[0],
               p->layout.layer_addr[p->shape.layers - 1],
               p->layout.blocks, p->layout.staged_port);
        fflush(stdout);
    }
    return 0;
}

static int pd_prefill_setup(pd_prefill_t *p)
{
    const pd_config_t *cfg = p->cfg;
    char name[HIXL_ENGINE_NAME_MAX + 1];
    hixl_mem_desc_t md;
    hixl_mem_handle_t h;
    unsigned port;

    if (pd_name_split(cfg->decode, p->decode_host, sizeof(p->decode_host),
                      &port) || (port == 0)) {
        fprintf(stderr, "pd_pipeline: prefill: --decode %s: expected IP:PORT "
                "or [IPv6]:PORT\n", cfg->decode);
        return -1;
    }
    if (cfg->name != NULL) {
        snprintf(name, sizeof(name), "%s", cfg->name);
    } else if (pd_local_ip_toward(p->decode_host, name, sizeof(name)) != 0) {
        return -1;
    }
    if (hixl_initialize(name, NULL, 0, &p->engine) != HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: prefill engine %s: %s\n", name,
                hixl_last_error());
        return -1;
    }
    p->link.engine = p->engine;
    snprintf(p->link.peer, sizeof(p->link.peer), "%s", cfg->decode);
    if (!cfg->loopback) {
        printf("pd_pipeline prefill: engine %s connecting to decode engine "
               "%s (UCX_TLS=%s)\n", hixl_engine_name(p->engine), cfg->decode,
               getenv("UCX_TLS") ? getenv("UCX_TLS") : "(default)");
        fflush(stdout);
    }
    if ((pd_prefill_connect(p) != 0) || (pd_prefill_learn(p) != 0) ||
        (pd_check_memory(&p->shape, 1.0) != 0)) {
        return -1;
    }
    p->cache   = pd_alloc(pd_cache_bytes(&p->shape));
    p->staging = pd_alloc(pd_layer_bytes(&p->shape));
    p->descs   = calloc((size_t)p->shape.layers *
                        pd_blocks_per_layer(&p->shape), sizeof(*p->descs));
    p->reqs    = calloc(p->shape.layers, sizeof(*p->reqs));
    p->st      = calloc(p->shape.layers, sizeof(*p->st));
    if (!p->cache || !p->staging || !p->descs || !p->reqs || !p->st) {
        fprintf(stderr, "pd_pipeline: prefill: out of memory\n");
        return -1;
    }
    md.addr = (uintptr_t)p->cache;
    md.len  = pd_cache_bytes(&p->shape);
    if (hixl_register_mem(p->engine, &md, HIXL_MEM_HOST, &h) !=
        HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: prefill: %s\n", hixl_last_error());
        return -1;
    }
    pd_prefill_build_descs(p);
    return 0;
}

int pd_prefill_main(const pd_config_t *cfg)
{
    uint8_t buf[PD_MSG_HDR];
    bench_stats_t *stats = NULL;
    pd_prefill_t p;
    unsigned mode;
    int rc = 0;

    memset(&p, 0, sizeof(p));
    p.cfg = cfg;
    if (pd_prefill_setup(&p) != 0) {
        rc = 1;
        goto out;
    }
    stats = bench_stats_start(p.engine, "prefill");   /* HIXL_BENCH_STATS */
    /* Warm-up, untimed (but verified): the first transfer into a peer's
     * memory maps it and faults its pages in, once per connection; a
     * serving system pays that at start-up, not per request. */
    if (pd_prefill_run(&p, PD_BULK, 1, 1) != 0) {
        rc = 1;
        goto out;
    }
    for (mode = 0; mode < PD_NMODES; ++mode) {
        if ((cfg->modes & (1u << mode)) &&
            (pd_prefill_run(&p, mode, mode + 2, 0) != 0)) {
            rc = 1;
            break;
        }
    }
    if (rc == 0) {
        pd_link_send(&p.link, buf, pd_msg_quit(buf, sizeof(buf)),
                     cfg->timeout_ms);
    }
out:
    bench_stats_stop(stats);
    if (p.engine != NULL) {
        hixl_disconnect(p.engine, cfg->decode, 5000);
        hixl_finalize(p.engine);
    }
    pd_link_clear(&p.link);
    free(p.layout.layer_addr);
    free(p.layout.slot);
    if (p.shape.layers != 0) {   /* else decode never told the shape */
        pd_free(p.cache, pd_cache_bytes(&p.shape));
        pd_free(p.staging, pd_layer_bytes(&p.shape));
    }
    free(p.descs);
    free(p.reqs);
    free(p.st);
    if (rc != 0) {
        fprintf(stderr, "pd_pipeline: prefill: FAILED\n");
    }
    return rc;
}
