/*
 * bench/pd_pipeline, prefill side: computes (sleeps) and posts the cache
 * layer by layer in each mode, then collects decode's timings and reports.
 */
#include "pd_run.h"

#include <hixl/hixl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct pd_prefill {
    const pd_config_t        *cfg;
    pd_hello_t                decode;
    hixl_engine_t            *engine;
    uint8_t                  *cache;
    uint8_t                  *staging;
    hixl_transfer_op_desc_t  *descs;   /* layers x blocks */
    hixl_req_t               *reqs;    /* one per layer */
    const char               *label;   /* for the progress line */
} pd_prefill_t;

static void pd_progress(const pd_prefill_t *p, unsigned layer)
{
    unsigned n = p->cfg->shape.layers;
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
 * decode's at their block-table slots. */
static void pd_prefill_build_descs(pd_prefill_t *p)
{
    const pd_shape_t *s = &p->cfg->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    hixl_transfer_op_desc_t *d;
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        for (b = 0; b < nb; ++b) {
            d = &p->descs[layer * nb + b];
            d->local_addr  = (uintptr_t)p->cache + layer * lb + b * bb;
            d->remote_addr = p->decode.dst + layer * lb + pd_slot(b, nb) * bb;
            d->len         = bb;
        }
    }
}

static void pd_prefill_fill(pd_prefill_t *p, uint64_t run)
{
    const pd_shape_t *s = &p->cfg->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        for (b = 0; b < nb; ++b) {
            pd_fill_block(p->cache + layer * lb + b * bb, bb, run, layer, b);
        }
    }
}

static int pd_prefill_hixl(pd_prefill_t *p, unsigned mode, uint64_t run)
{
    const pd_shape_t *s = &p->cfg->shape;
    size_t nb = pd_blocks_per_layer(s);
    hixl_transfer_status_t st;
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        pd_sleep_ms(p->cfg->prefill_compute_ms);
        if (hixl_transfer_async(p->engine, p->decode.engine, HIXL_WRITE,
                                &p->descs[layer * nb], nb, NULL,
                                &p->reqs[layer]) != HIXL_SUCCESS) {
            fprintf(stderr, "\npd_pipeline: layer %u: %s\n", layer,
                    hixl_last_error());
            return -1;
        }
        if (((mode == PD_PIPELINED) || (layer + 1 == s->layers)) &&
            (hixl_flush_layer(p->engine, p->decode.engine, 0, run, layer) !=
             HIXL_SUCCESS)) {
            fprintf(stderr, "\npd_pipeline: flush layer %u: %s\n", layer,
                    hixl_last_error());
            return -1;
        }
        pd_progress(p, layer);
    }
    for (layer = 0; layer < s->layers; ++layer) {
        do {
            if (hixl_get_transfer_status(p->engine, p->reqs[layer], &st) !=
                HIXL_SUCCESS) {
                fprintf(stderr, "pd_pipeline: status: %s\n",
                        hixl_last_error());
                return -1;
            }
        } while (st == HIXL_TRANSFER_WAITING);
        if (st != HIXL_TRANSFER_COMPLETED) {
            fprintf(stderr, "pd_pipeline: layer %u transfer ended %s: %s\n",
                    layer, (st == HIXL_TRANSFER_TIMEOUT) ? "TIMEOUT" :
                    "FAILED", hixl_last_error());
            return -1;
        }
    }
    return 0;
}

static int pd_prefill_staged_connect(const pd_prefill_t *p)
{
    struct sockaddr_in sin;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_port        = htons(p->decode.staged_port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((fd < 0) || connect(fd, (struct sockaddr*)&sin, sizeof(sin))) {
        perror("pd_pipeline: staged connect");
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int pd_prefill_staged(pd_prefill_t *p, int fd)
{
    const pd_shape_t *s = &p->cfg->shape;
    size_t lb = pd_layer_bytes(s);
    unsigned layer;

    for (layer = 0; layer < s->layers; ++layer) {
        pd_sleep_ms(p->cfg->prefill_compute_ms);
        memcpy(p->staging, p->cache + layer * lb, lb);
        if (pd_send_all(fd, p->staging, lb) != 0) {
            perror("\npd_pipeline: staged send");
            return -1;
        }
        pd_progress(p, layer);
    }
    return 0;
}

static int pd_prefill_run(pd_prefill_t *p, pd_channel_t *ch, unsigned mode,
                          uint64_t run, pd_mode_result_t *res)
{
    pd_start_t start = {mode, run};

    p->label = (run == 1) ? "warm-up" : pd_mode_name(mode);
    pd_result_t result;
    int fd = -1, rc;
    char ok;

    pd_prefill_fill(p, start.run);
    if (pd_send(ch, &start, sizeof(start)) != 0) {
        return -1;
    }
    if ((mode == PD_STAGED) && ((fd = pd_prefill_staged_connect(p)) < 0)) {
        return -1;
    }
    if (pd_recv(ch, &ok, 1) != 0) {
        return -1;
    }
    res->t0 = pd_now_ns();
    rc = (mode == PD_STAGED) ? pd_prefill_staged(p, fd) :
                               pd_prefill_hixl(p, mode, start.run);
    res->posted = pd_now_ns();
    if (fd >= 0) {
        close(fd);
    }
    if ((pd_recv(ch, &result, sizeof(result)) != 0) ||
        (pd_recv(ch, res->ready, p->cfg->shape.layers * sizeof(uint64_t)) !=
         0)) {
        fprintf(stderr, "pd_pipeline: decode process went away\n");
        return -1;
    }
    res->ran       = 1;
    res->bad_bytes = result.bad_bytes;
    if (result.failed) {
        fprintf(stderr, "pd_pipeline: %s\n", result.error);
        return -1;
    }
    return rc;
}

static int pd_prefill_setup(pd_prefill_t *p, pd_channel_t *ch)
{
    const pd_shape_t *s = &p->cfg->shape;
    char name[128];
    hixl_mem_desc_t md;
    hixl_mem_handle_t h;

    if (pd_recv(ch, &p->decode, sizeof(p->decode)) != 0) {
        fprintf(stderr, "pd_pipeline: decode process did not start\n");
        return -1;
    }
    p->decode.engine[sizeof(p->decode.engine) - 1] = '\0';
    if (hixl_initialize("127.0.0.1", NULL, 0, &p->engine) != HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: prefill engine: %s\n", hixl_last_error());
        return -1;
    }
    p->cache   = pd_alloc(pd_cache_bytes(s));
    p->staging = pd_alloc(pd_layer_bytes(s));
    p->descs   = calloc((size_t)s->layers * pd_blocks_per_layer(s),
                        sizeof(*p->descs));
    p->reqs    = calloc(s->layers, sizeof(*p->reqs));
    if (!p->cache || !p->staging || !p->descs || !p->reqs) {
        fprintf(stderr, "pd_pipeline: prefill: out of memory\n");
        return -1;
    }
    md.addr = (uintptr_t)p->cache;
    md.len  = pd_cache_bytes(s);
    if ((hixl_register_mem(p->engine, &md, HIXL_MEM_HOST, &h) !=
         HIXL_SUCCESS) ||
        (hixl_connect(p->engine, p->decode.engine, 10000) != HIXL_SUCCESS)) {
        fprintf(stderr, "pd_pipeline: prefill: %s\n", hixl_last_error());
        return -1;
    }
    memset(name, 0, sizeof(name));
    snprintf(name, sizeof(name), "%s", hixl_engine_name(p->engine));
    if (pd_send(ch, name, sizeof(name)) != 0) {
        return -1;
    }
    pd_prefill_build_descs(p);
    return 0;
}

int pd_prefill_main(const pd_config_t *cfg, pd_channel_t *ch)
{
    pd_mode_result_t results[PD_NMODES];
    pd_start_t quit = {PD_QUIT, 0};
    const pd_shape_t *s = &cfg->shape;
    pd_prefill_t p;
    uint64_t bad = 0;
    unsigned mode;
    int rc = 0;

    memset(&p, 0, sizeof(p));
    memset(results, 0, sizeof(results));
    p.cfg = cfg;
    printf("pd_pipeline: KV cache %u layers x %u kv-heads x %u head-dim x %u "
           "tokens x %u B x K/V = %.2f GiB (%.2f MiB per layer, %zu blocks of "
           "%zu KiB)\n", s->layers, s->kv_heads, s->head_dim, s->seq_len,
           s->dtype_bytes, pd_cache_bytes(s) / (double)(1 << 30),
           pd_layer_bytes(s) / (double)(1 << 20), pd_blocks_per_layer(s),
           pd_block_bytes(s) >> 10);
    printf("UCX_TLS=%s  prefill compute %.2f ms/layer (slept)  decode compute "
           "%.2f ms/layer (modelled)\n", getenv("UCX_TLS") ? getenv("UCX_TLS")
           : "(default)", cfg->prefill_compute_ms, cfg->decode_compute_ms);
    fflush(stdout);

    if (pd_prefill_setup(&p, ch) != 0) {
        rc = 1;
        goto out;
    }
    /* Warm-up, untimed (but verified): the first transfer into a peer's
     * memory maps it and faults its pages in, once per connection; a
     * serving system pays that at start-up, not per request. */
    results[0].ready = calloc(s->layers, sizeof(uint64_t));
    if ((results[0].ready == NULL) ||
        (pd_prefill_run(&p, ch, PD_BULK, 1, &results[0]) != 0)) {
        rc = 1;
        goto out;
    }
    bad = results[0].bad_bytes;
    free(results[0].ready);
    memset(&results[0], 0, sizeof(results[0]));
    for (mode = 0; mode < PD_NMODES; ++mode) {
        if (!(cfg->modes & (1u << mode))) {
            continue;
        }
        results[mode].ready = calloc(s->layers, sizeof(uint64_t));
        if ((results[mode].ready == NULL) ||
            (pd_prefill_run(&p, ch, mode, mode + 2, &results[mode]) != 0)) {
            rc = 1;
            break;
        }
        bad += results[mode].bad_bytes;
    }
    pd_send(ch, &quit, sizeof(quit));
    if (rc == 0) {
        pd_report(cfg, results);
        if (bad != 0) {
            fprintf(stderr, "pd_pipeline: FAILED: %" PRIu64 " bytes arrived "
                    "wrong\n", bad);
            rc = 1;
        }
    }
out:
    if (p.engine != NULL) {
        hixl_disconnect(p.engine, p.decode.engine, 5000);
        hixl_finalize(p.engine);
    }
    for (mode = 0; mode < PD_NMODES; ++mode) {
        free(results[mode].ready);
    }
    pd_free(p.cache, pd_cache_bytes(s));
    pd_free(p.staging, pd_layer_bytes(s));
    free(p.descs);
    free(p.reqs);
    return rc;
}
