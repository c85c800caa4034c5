/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Layer-granular flush, prefill side: hixl_flush_layer.
 *
 * Ordering: the signal is a waiter of the endpoint-flush service on the
 * endpoint to the decode engine, and the LAYER message goes out on the
 * control connection only from that flush's completion.  A UCX endpoint
 * flush completes when every operation posted on the endpoint before it is
 * remotely complete, i.e. its data is in the target's memory, on every
 * transport (tcp acknowledges puts, shared memory and CMA write
 * synchronously, RDMA waits for the remote ack).  The decode engine marks
 * the layer ready when it reads the message, so the data is visible before
 * the signal can be.
 *
 * Why not cheaper: ucp_worker_fence only orders operations on the same
 * transport lanes, and the signal must also reach a CPU polling memory on
 * the decode side; a fenced signal put would be correct on RC/tcp lanes but
 * UCX 1.13 does not promise it across the lanes a worker may pick for a
 * small put and a large zcopy put (shared memory vs CMA, for one).  A flush
 * costs one round trip per layer per peer, which is small against a layer of
 * a KV cache (megabytes), and it is shared with the transfers' own flushes.
 *
 * Device memory: writes that go through device copies (IPC) or the staging
 * pipeline are not covered by the endpoint flush; they are "units" of
 * device/, and the signal also waits (hixl_dev_barrier) until every unit
 * posted to the peer before the flush call has landed.
 */
#include "config.h"
#include "ops/layer.h"
#include "ctrl/ctrl.h"
#include "ctrl/dispatch.h"
#include "device/device.h"
#include "util/args.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A peer's layer state on the prefill side (peer->layer_out): per stream
 * the newest generation flushed + 1 (0: none). */
struct hixl_layer_out {
    uint64_t *sent_gen;
};

/* A layer flush in flight: a waiter of the peer's endpoint flush, then of
 * the device barrier.  It holds the peer and the engine's busy count until
 * it is settled. */
typedef struct hixl_layer_flush {
    hixl_ep_flush_waiter_t fw;   /* first: the flush service's record */
    hixl_engine_t     *engine;
    hixl_peer_t       *peer;
    uint32_t           stream;
    uint32_t           layer;
    uint64_t           gen;
    uint64_t           dev_seq;  /* device units posted before the call */
    uint64_t           called_ns;   /* when (for the metrics) */
    hixl_dev_barrier_t barrier;
} hixl_layer_flush_t;

static void hixl_layer_flush_free(hixl_layer_flush_t *f)
{
    unsigned before = atomic_fetch_sub(&f->engine->progress.busy, 1);

    hixl_assert(before >= 1);   /* raised when the flush was posted */
    (void)before;
    hixl_peer_release(f->peer);
    free(f);
}

/* Everything before the call landed: signal it. */
static void hixl_layer_send(void *arg)
{
    hixl_layer_flush_t *f = arg;
    hixl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.type           = CTRL_LAYER;
    msg.u.layer.stream = f->stream;
    msg.u.layer.layer  = f->layer;
    msg.u.layer.gen    = f->gen;
    if (f->peer->state != HIXL_PEER_CLOSED) {
        if (hixl_ctrl_send(f->peer, &msg) == HIXL_SUCCESS) {
            hixl_metrics_layer_signal(f->engine->metrics,
                                      hixl_now_ns() - f->called_ns);
        } else {
            hixl_log_warn("layer signal to %s not sent: %s", f->peer->name,
                          hixl_error_message());
        }
    }
    hixl_layer_flush_free(f);
}

/* The endpoint flush is done; device work posted before the call may
 * still be moving, and the signal must not overtake it. */
static void hixl_layer_flushed(hixl_ep_flush_waiter_t *w, ucs_status_t ustatus)
{
    hixl_layer_flush_t *f = (hixl_layer_flush_t*)w;

    if (ustatus == UCS_OK) {
        hixl_dev_barrier(f->engine, f->peer, f->dev_seq, hixl_layer_send, f,
                         &f->barrier);
        return;
    }
    if (ustatus != UCS_ERR_CANCELED) {   /* not a plain close */
        hixl_log_warn("layer signal stream %u gen %" PRIu64 " layer %u to %s "
                      "not sent: flush failed: %s", f->stream, f->gen,
                      f->layer, f->peer->name, ucs_status_string(ustatus));
    }
    hixl_layer_flush_free(f);
}

/* Check (stream, generation, layer) against what peer accepts and what was
 * flushed before, and record it (engine->lock held). */
static hixl_status_t hixl_layer_claim(hixl_peer_t *peer, uint32_t stream,
                                      uint64_t generation, uint32_t layer)
{
    struct hixl_layer_out *out;

    hixl_assert_locked(&peer->engine->lock);
    if ((stream >= peer->handshake->remote_max_streams) ||
        (layer >= peer->handshake->remote_max_layers)) {
        return hixl_error(HIXL_PARAM_INVALID,
                          "%s %u is out of range: %s "
                          "accepts streams 0..%u and layers 0..%u (its "
                          "hixl.MaxStreams / hixl.MaxLayers)",
                          (stream >= peer->handshake->remote_max_streams) ?
                              "stream" :
                              "layer",
                          (stream >= peer->handshake->remote_max_streams) ?
                              stream :
                              layer,
                          peer->name, peer->handshake->remote_max_streams - 1,
                          peer->handshake->remote_max_layers - 1);
    }
    if (peer->layer_out == NULL) {
        out = calloc(1, sizeof(*out));
        if (out != NULL) {
            out->sent_gen = calloc(peer->handshake->remote_max_streams,
                                   sizeof(*out->sent_gen));
        }
        if ((out == NULL) || (out->sent_gen == NULL)) {
            free(out);
            return hixl_error(HIXL_RESOURCE_EXHAUSTED,
                              "out of memory for "
                              "%u stream generations",
                              peer->handshake->remote_max_streams);
        }
        peer->layer_out = out;
    }
    out = peer->layer_out;
    if (generation + 1 < out->sent_gen[stream]) {
        return hixl_error(HIXL_PARAM_INVALID, "stream %u: generation %" PRIu64
                          " is older than generation %" PRIu64 " already "
                          "flushed to %s", stream, generation,
                          out->sent_gen[stream] - 1, peer->name);
    }
    out->sent_gen[stream] = generation + 1;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_flush_layer(hixl_engine_t *engine, const char *remote,
                               uint32_t stream, uint64_t generation,
                               uint32_t layer)
{
    hixl_layer_flush_t *f;
    hixl_peer_t *peer;
    hixl_status_t status;

    status = hixl_check_remote(engine, remote);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (generation == UINT64_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "generation UINT64_MAX is "
                          "reserved");
    }

    pthread_mutex_lock(&engine->lock);
    status = hixl_peer_lookup(engine, remote, 1, &peer);
    if (status == HIXL_SUCCESS) {
        status = hixl_layer_claim(peer, stream, generation, layer);
    }
    if (status != HIXL_SUCCESS) {
        goto out;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        status = hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
        goto out;
    }
    hixl_peer_retain(peer);
    f->fw.cb   = hixl_layer_flushed;
    f->engine  = engine;
    f->peer    = peer;
    f->stream  = stream;
    f->layer   = layer;
    f->gen     = generation;
    f->dev_seq = hixl_dev_seq(engine);
    f->called_ns = hixl_now_ns();   /* one per layer: always timed */
    atomic_fetch_add(&engine->progress.busy, 1);
    hixl_ep_flush_add(peer->ep_flush, &f->fw, 0);
    hixl_progress_kick(engine);   /* the flush needs progress */
out:
    pthread_mutex_unlock(&engine->lock);
    return status;
}

static void hixl_layer_out_destroy(hixl_peer_t *peer)
{
    if (peer->layer_out != NULL) {
        free(peer->layer_out->sent_gen);
        free(peer->layer_out);
        peer->layer_out = NULL;
    }
}

static const hixl_peer_hooks_t hixl_layer_flush_hooks = {
    .name    = "layer-flush",
    .destroy = hixl_layer_out_destroy,
};

hixl_status_t hixl_layer_flush_init(hixl_engine_t *engine)
{
    return hixl_peer_hooks_add(engine, &hixl_layer_flush_hooks);
}
