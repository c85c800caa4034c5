/*
 * bench/pd_pipeline, decode side: a listening engine with the KV cache
 * registered; per mode it records when each layer became usable, then
 * verifies every byte of the cache.
 */
#include "pd_run.h"

#include <hixl/hixl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct pd_decode {
    const pd_config_t *cfg;
    hixl_engine_t     *engine;
    char               prefill[128];
    uint8_t           *cache;
    uint8_t           *staging;
    int                listen_fd;
    uint64_t          *ready;
    pd_result_t        result;
} pd_decode_t;

static int pd_decode_fail(pd_decode_t *d, const char *what)
{
    d->result.failed = 1;
    snprintf(d->result.error, sizeof(d->result.error), "decode: %s: %s", what,
             hixl_last_error());
    return -1;
}

static int pd_decode_layers(pd_decode_t *d, uint64_t run, int pipelined)
{
    const pd_shape_t *s = &d->cfg->shape;
    unsigned layer;

    for (layer = pipelined ? 0 : s->layers - 1; layer < s->layers; ++layer) {
        /* only wait and stamp here: checking bytes would delay noticing
         * the next layer; every byte is checked after the run */
        if (hixl_wait_layer(d->engine, d->prefill, 0, run, layer,
                            d->cfg->timeout_ms) != HIXL_SUCCESS) {
            return pd_decode_fail(d, "hixl_wait_layer");
        }
        d->ready[layer] = pd_now_ns();
    }
    if (!pipelined) {
        for (layer = 0; layer + 1 < s->layers; ++layer) {
            d->ready[layer] = d->ready[s->layers - 1];
        }
    }
    return 0;
}

static int pd_decode_staged(pd_decode_t *d, int fd)
{
    const pd_shape_t *s = &d->cfg->shape;
    size_t lb = pd_layer_bytes(s), bb = pd_block_bytes(s);
    size_t nb = pd_blocks_per_layer(s), b;
    unsigned layer;
    uint8_t *dst;

    for (layer = 0; layer < s->layers; ++layer) {
        if (pd_recv_all(fd, d->staging, lb) != 0) {
            d->result.failed = 1;
            snprintf(d->result.error, sizeof(d->result.error), "decode: "
                     "staged socket closed at layer %u", layer);
            return -1;
        }
        dst = d->cache + (size_t)layer * lb;
        for (b = 0; b < nb; ++b) {
            memcpy(dst + pd_slot(b, nb) * bb, d->staging + b * bb, bb);
        }
        d->ready[layer] = pd_now_ns();
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
            bad += pd_check_block(d->cache + layer * lb + pd_slot(b, nb) * bb,
                                  bb, run, layer, b);
        }
    }
    return bad;
}

static int pd_decode_setup(pd_decode_t *d, pd_channel_t *ch)
{
    hixl_option_t opts[] = {{"hixl.ListenEphemeral", "1"},
                            {"hixl.MaxStreams", "1"},
                            {"hixl.MaxLayers", "256"}};
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    size_t bytes = pd_cache_bytes(&d->cfg->shape);
    hixl_mem_handle_t h;
    pd_hello_t hello;
    void *cache;

    if (hixl_initialize("127.0.0.1:0", opts, 3, &d->engine) != HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: decode engine: %s\n", hixl_last_error());
        return -1;
    }
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
    memset(d->cache, 0, bytes);   /* fault it in before anything is timed */
    d->staging = pd_alloc(pd_layer_bytes(&d->cfg->shape));
    d->ready   = calloc(d->cfg->shape.layers, sizeof(*d->ready));
    if (!d->staging || !d->ready) {
        fprintf(stderr, "pd_pipeline: decode: out of memory\n");
        return -1;
    }

    d->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((d->listen_fd < 0) ||
        bind(d->listen_fd, (struct sockaddr*)&sin, sizeof(sin)) ||
        listen(d->listen_fd, 1) ||
        getsockname(d->listen_fd, (struct sockaddr*)&sin, &len)) {
        perror("pd_pipeline: decode staged socket");
        return -1;
    }

    memset(&hello, 0, sizeof(hello));
    snprintf(hello.engine, sizeof(hello.engine), "%s",
             hixl_engine_name(d->engine));
    hello.dst         = (uintptr_t)d->cache;
    hello.staged_port = ntohs(sin.sin_port);
    if ((pd_send(ch, &hello, sizeof(hello)) != 0) ||
        (pd_recv(ch, d->prefill, sizeof(d->prefill)) != 0)) {
        return -1;
    }
    d->prefill[sizeof(d->prefill) - 1] = '\0';
    return 0;
}

int pd_decode_main(const pd_config_t *cfg, pd_channel_t *ch)
{
    pd_decode_t d;
    pd_start_t start;
    char ok = 1;
    int fd = -1, rc = 1;

    memset(&d, 0, sizeof(d));
    d.cfg       = cfg;
    d.listen_fd = -1;
    if (pd_decode_setup(&d, ch) != 0) {
        goto out;
    }
    while (pd_recv(ch, &start, sizeof(start)) == 0) {
        if (start.mode == PD_QUIT) {
            rc = 0;
            break;
        }
        memset(&d.result, 0, sizeof(d.result));
        memset(d.ready, 0, cfg->shape.layers * sizeof(*d.ready));
        if (start.mode == PD_STAGED) {
            fd = accept(d.listen_fd, NULL, NULL);
        }
        if (pd_send(ch, &ok, 1) != 0) {
            break;
        }
        if (start.mode == PD_STAGED) {
            pd_decode_staged(&d, fd);
            close(fd);
        } else {
            pd_decode_layers(&d, start.run, start.mode == PD_PIPELINED);
        }
        d.result.bad_bytes = pd_decode_verify(&d, start.run);
        if ((pd_send(ch, &d.result, sizeof(d.result)) != 0) ||
            (pd_send(ch, d.ready, cfg->shape.layers * sizeof(*d.ready)) != 0)) {
            break;
        }
    }
out:
    if (d.engine != NULL) {
        hixl_finalize(d.engine);
    }
    if (d.listen_fd >= 0) {
        close(d.listen_fd);
    }
    pd_free(d.staging, pd_layer_bytes(&cfg->shape));
    free(d.ready);
    return rc;
}
