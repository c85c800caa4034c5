/*
 * Layer-granular flush.
 *
 * Ordering: hixl_flush_layer posts ucp_ep_flush_nbx on the endpoint to the
 * decode engine and sends the LAYER message on the control connection only
 * from that flush's completion.  A UCX endpoint flush completes when every
 * operation posted on the endpoint before it is remotely complete, i.e. its
 * data is in the target's memory, on every transport (tcp acknowledges puts,
 * shared memory and CMA write synchronously, RDMA waits for the remote ack).
 * The decode engine marks the layer ready when it reads the message, so the
 * data is visible before the signal can be.
 *
 * Why not cheaper: ucp_worker_fence only orders operations on the same
 * transport lanes, and the signal must also reach a CPU polling memory on
 * the decode side; a fenced signal put would be correct on RC/tcp lanes but
 * UCX 1.13 does not promise it across the lanes a worker may pick for a
 * small put and a large zcopy put (shared memory vs CMA, for one).  A flush
 * costs one round trip per layer per peer, which is small against a layer of
 * a KV cache (megabytes); the decode side needs no receive call either way.
 *
 * Device memory: writes that go through device copies (IPC) or the staging
 * pipeline are not covered by the endpoint flush; they are "units" of
 * device.c, and the signal also waits (hixl_dev_barrier) until every unit
 * posted to the peer before the flush call has landed.
 */
#include "config.h"
#include "core/peer.h"
#include "util/args.h"
#include "util/clock.h"
#include "device/device.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A layer flush in flight.  It is on its peer's lf_pending list until the
 * flush (and device barrier) calls back; `settled` says whether its outcome
 * (signal sent or not, engine->busy released) is decided: by that callback,
 * or at peer close, since UCX 1.13 may call a force-closed endpoint's flush
 * back only when the worker is destroyed. */
typedef struct hixl_layer_flush {
    struct hixl_layer_flush *next;
    struct hixl_layer_flush *prev;
    hixl_engine_t *engine;
    hixl_peer_t   *peer;
    atomic_int     settled;
    uint32_t       stream;
    uint32_t       layer;
    uint64_t       gen;
    uint64_t       dev_seq;   /* device units posted before the call */
    hixl_dev_barrier_t barrier;
} hixl_layer_flush_t;

static void hixl_layer_unlink(hixl_layer_flush_t *f)
{
    hixl_peer_t *peer = f->peer;

    pthread_mutex_lock(&peer->lf_lock);
    if (f->prev != NULL) {
        f->prev->next = f->next;
    } else {
        peer->lf_pending = f->next;
    }
    if (f->next != NULL) {
        f->next->prev = f->prev;
    }
    pthread_mutex_unlock(&peer->lf_lock);
}

void hixl_layer_flushes_cancel(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_layer_flush_t *f;
    int zero;

    pthread_mutex_lock(&peer->lf_lock);
    for (f = peer->lf_pending; f != NULL; f = f->next) {
        zero = 0;
        if (atomic_compare_exchange_strong(&f->settled, &zero, 1)) {
            atomic_fetch_sub(&engine->busy, 1);
        }
    }
    pthread_mutex_unlock(&peer->lf_lock);
}

/* The flush's last callback: send the signal unless the peer was closed
 * meanwhile, and free it. */
static void hixl_layer_send(hixl_layer_flush_t *f, ucs_status_t ustatus)
{
    ctrl_msg_t msg;
    int zero = 0;

    if (!atomic_compare_exchange_strong(&f->settled, &zero, 1)) {
        /* settled at peer close: no signal, busy already released */
    } else if (ustatus != UCS_OK) {
        hixl_log_warn("layer signal stream %u gen %" PRIu64 " layer %u to %s "
                      "not sent: flush failed: %s", f->stream, f->gen,
                      f->layer, f->peer->name, ucs_status_string(ustatus));
    } else {
        memset(&msg, 0, sizeof(msg));
        msg.type           = CTRL_LAYER;
        msg.u.layer.stream = f->stream;
        msg.u.layer.layer  = f->layer;
        msg.u.layer.gen    = f->gen;
        if (ctrl_conn_send(&f->peer->conn, &msg) != HIXL_SUCCESS) {
            hixl_log_warn("layer signal to %s not sent: %s", f->peer->name,
                          hixl_error_message());
        }
    }
    if (zero == 0) {
        atomic_fetch_sub(&f->engine->busy, 1);
    }
    hixl_layer_unlink(f);
    hixl_peer_release(f->peer);
    free(f);
}

static void hixl_layer_send_ok(void *arg)
{
    hixl_layer_send(arg, UCS_OK);
}

/* The endpoint flush is done; device work posted before the call may
 * still be moving, and the signal must not overtake it. */
static void hixl_layer_flushed(hixl_layer_flush_t *f, ucs_status_t ustatus)
{
    if (ustatus != UCS_OK) {
        hixl_layer_send(f, ustatus);
        return;
    }
    hixl_dev_barrier(f->engine, f->peer, f->dev_seq, hixl_layer_send_ok, f,
                     &f->barrier);
}

static void hixl_layer_flush_cb(void *request, ucs_status_t ustatus,
                                void *user_data)
{
    hixl_layer_flushed(user_data, ustatus);
    ucp_request_free(request);
}

hixl_status_t hixl_flush_layer(hixl_engine_t *engine, const char *remote,
                               uint32_t stream, uint64_t generation,
                               uint32_t layer)
{
    ucp_request_param_t param;
    hixl_layer_flush_t *f;
    ucs_status_ptr_t sp;
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
    if (status != HIXL_SUCCESS) {
        goto out;
    }
    if ((stream >= peer->remote_max_streams) ||
        (layer >= peer->remote_max_layers)) {
        status = hixl_error(HIXL_PARAM_INVALID, "%s %u is out of range: %s "
                            "accepts streams 0..%u and layers 0..%u (its "
                            "hixl.MaxStreams / hixl.MaxLayers)",
                            (stream >= peer->remote_max_streams) ? "stream" :
                            "layer", (stream >= peer->remote_max_streams) ?
                            stream : layer, peer->name,
                            peer->remote_max_streams - 1,
                            peer->remote_max_layers - 1);
        goto out;
    }
    if (peer->sent_gen == NULL) {
        peer->sent_gen = calloc(peer->remote_max_streams,
                                sizeof(*peer->sent_gen));
        if (peer->sent_gen == NULL) {
            status = hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for "
                                "%u stream generations",
                                peer->remote_max_streams);
            goto out;
        }
    }
    if (generation + 1 < peer->sent_gen[stream]) {
        status = hixl_error(HIXL_PARAM_INVALID, "stream %u: generation %"
                            PRIu64 " is older than generation %" PRIu64
                            " already flushed to %s", stream, generation,
                            peer->sent_gen[stream] - 1, peer->name);
        goto out;
    }
    peer->sent_gen[stream] = generation + 1;

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        status = hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
        goto out;
    }
    hixl_peer_retain(peer);
    f->engine = engine;
    f->peer   = peer;
    f->stream = stream;
    f->layer  = layer;
    f->gen     = generation;
    f->dev_seq = hixl_dev_seq(engine);
    atomic_fetch_add(&engine->busy, 1);
    pthread_mutex_lock(&peer->lf_lock);
    f->next = peer->lf_pending;
    if (f->next != NULL) {
        f->next->prev = f;
    }
    peer->lf_pending = f;
    pthread_mutex_unlock(&peer->lf_lock);

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = hixl_layer_flush_cb;
    param.user_data    = f;
    sp = ucp_ep_flush_nbx(peer->ep, &param);
    if (sp == NULL) {
        hixl_layer_flushed(f, UCS_OK);
    } else if (UCS_PTR_IS_ERR(sp)) {
        status = hixl_error(HIXL_FAILED, "layer flush to %s: %s", peer->name,
                            ucs_status_string(UCS_PTR_STATUS(sp)));
        hixl_layer_send(f, UCS_PTR_STATUS(sp));
        goto out;
    } else {
        hixl_progress_kick(engine);   /* the flush needs progress */
    }
    status = HIXL_SUCCESS;
out:
    pthread_mutex_unlock(&engine->lock);
    return status;
}

/* ---- decode side ---------------------------------------------------------- */

/*
 * Signals are kept per source engine name, not per connection: a prefill
 * engine that flushes its last layer and disconnects at once must not take
 * the signals with it.  A table belongs to one instance of the source (a
 * random id from its HELLO); a new instance under the same name (a restarted
 * process) starts a fresh table and bumps the epoch, so a wait begun on the
 * old instance fails instead of matching the new one's generations.
 */
struct hixl_layer_source {
    hixl_layer_source_t *next;
    char                 name[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t             instance;
    uint64_t             epoch;
    hixl_peer_t         *peer;       /* live connection, or NULL */
    char                 closed_reason[256];
    uint64_t            *gen;        /* per stream: generation + 1, 0: none */
    uint64_t            *bits;       /* per stream: layers signalled */
    uint64_t             stale;      /* older-generation signals dropped */
};

static size_t hixl_layer_words(const hixl_engine_t *engine)
{
    return (engine->opts.max_layers + 63) / 64;
}

static hixl_layer_source_t *hixl_layer_source_find(hixl_engine_t *engine,
                                                   const char *canon)
{
    hixl_layer_source_t *src;

    for (src = engine->layer_sources; src != NULL; src = src->next) {
        if (!strcmp(src->name, canon)) {
            return src;
        }
    }
    return NULL;
}

hixl_status_t hixl_layer_peer_ready(hixl_engine_t *engine, hixl_peer_t *peer,
                                    uint64_t instance)
{
    size_t words = hixl_layer_words(engine);
    hixl_layer_source_t *src;

    src = hixl_layer_source_find(engine, peer->name);
    if (src == NULL) {
        src = calloc(1, sizeof(*src));
        if (src == NULL) {
            return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                              "layer signal table");
        }
        src->gen  = calloc(engine->opts.max_streams, sizeof(uint64_t));
        src->bits = calloc((size_t)engine->opts.max_streams * words,
                           sizeof(uint64_t));
        if ((src->gen == NULL) || (src->bits == NULL)) {
            free(src->gen);
            free(src->bits);
            free(src);
            return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                              "layer signal table of %u streams x %u layers",
                              engine->opts.max_streams,
                              engine->opts.max_layers);
        }
        snprintf(src->name, sizeof(src->name), "%s", peer->name);
        src->instance         = instance;
        src->next             = engine->layer_sources;
        engine->layer_sources = src;
    } else if (src->instance != instance) {
        memset(src->gen, 0, engine->opts.max_streams * sizeof(uint64_t));
        memset(src->bits, 0, (size_t)engine->opts.max_streams * words *
                             sizeof(uint64_t));
        src->instance = instance;
        src->epoch++;
        pthread_cond_broadcast(&engine->cond);
    }
    src->peer       = peer;
    peer->layer_src = src;
    return HIXL_SUCCESS;
}

void hixl_layer_peer_closed(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_layer_source_t *src = peer->layer_src;

    hixl_layer_flushes_cancel(engine, peer);

    if ((src == NULL) || (src->peer != peer)) {
        return;
    }
    src->peer = NULL;
    snprintf(src->closed_reason, sizeof(src->closed_reason), "%s",
             peer->close_reason);
    peer->layer_src = NULL;
}

void hixl_layer_sources_cleanup(hixl_engine_t *engine)
{
    hixl_layer_source_t *src;

    while ((src = engine->layer_sources) != NULL) {
        engine->layer_sources = src->next;
        free(src->gen);
        free(src->bits);
        free(src);
    }
}

int hixl_layer_signal_recv(hixl_engine_t *engine, hixl_peer_t *peer,
                           const ctrl_msg_t *msg)
{
    uint32_t stream = msg->u.layer.stream, layer = msg->u.layer.layer;
    uint64_t gen    = msg->u.layer.gen;
    size_t words    = hixl_layer_words(engine);
    hixl_layer_source_t *src = peer->layer_src;
    uint64_t *bits;

    if ((stream >= engine->opts.max_streams) ||
        (layer >= engine->opts.max_layers) || (gen == UINT64_MAX)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: layer "
                        "signal for stream %u layer %u, beyond the %u streams "
                        "x %u layers announced", stream, layer,
                        engine->opts.max_streams, engine->opts.max_layers);
        return 1;
    }
    bits = &src->bits[(size_t)stream * words];
    if (gen + 1 > src->gen[stream]) {
        src->gen[stream] = gen + 1;
        memset(bits, 0, words * sizeof(uint64_t));
    } else if (gen + 1 < src->gen[stream]) {
        src->stale++;
        hixl_log_debug("%s: stale layer signal stream %u gen %" PRIu64
                       " layer %u (stream is at gen %" PRIu64 ")", src->name,
                       stream, gen, layer, src->gen[stream] - 1);
        return 0;
    }
    bits[layer / 64] |= 1ull << (layer % 64);
    pthread_cond_broadcast(&engine->cond);
    return 0;
}

typedef struct hixl_layer_query {
    hixl_engine_t *engine;
    hixl_name_t    source;
    uint32_t       stream;
    uint32_t       layer;
    uint64_t       gen;
    int            seen;     /* the source's table existed at some check */
    uint64_t       epoch;    /* its epoch then */
    hixl_status_t  status;   /* once decided: SUCCESS or FAILED */
    int            decided;
} hixl_layer_query_t;

/* Decide the query if its answer is known now (engine->lock held). */
static int hixl_layer_check(void *arg)
{
    hixl_layer_query_t *q = arg;
    hixl_layer_source_t *src;
    const uint64_t *bits;
    uint64_t have;

    src = hixl_layer_source_find(q->engine, q->source.canon);
    if (src == NULL) {
        return 0;   /* never connected yet: keep waiting */
    }
    if (!q->seen) {
        q->seen  = 1;
        q->epoch = src->epoch;
    } else if (q->epoch != src->epoch) {
        q->status  = hixl_error(HIXL_FAILED, "layer source %s restarted (a "
                                "new engine instance connected under its "
                                "name)", src->name);
        q->decided = 1;
        return 1;
    }
    have = src->gen[q->stream];
    bits = &src->bits[(size_t)q->stream * hixl_layer_words(q->engine)];
    if ((have == q->gen + 1) && (bits[q->layer / 64] & (1ull << (q->layer % 64)))) {
        q->status  = HIXL_SUCCESS;
        q->decided = 1;
    } else if (have > q->gen + 1) {
        q->status  = hixl_error(HIXL_FAILED, "stream %u generation %" PRIu64
                                " from %s was superseded by generation %"
                                PRIu64, q->stream, q->gen, src->name,
                                have - 1);
        q->decided = 1;
    } else if (src->peer == NULL) {
        q->status  = hixl_error(HIXL_FAILED, "layer source %s disconnected "
                                "before signalling stream %u generation %"
                                PRIu64 " layer %u: %s", src->name, q->stream,
                                q->gen, q->layer, src->closed_reason);
        q->decided = 1;
    }
    return q->decided;
}

static hixl_status_t hixl_layer_query_init(hixl_layer_query_t *q,
                                           hixl_engine_t *engine,
                                           const char *source,
                                           uint32_t stream, uint64_t gen,
                                           uint32_t layer)
{
    hixl_status_t status;

    memset(q, 0, sizeof(*q));
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((source == NULL) || (*source == '\0')) {
        return hixl_error(HIXL_PARAM_INVALID, "source engine name is %s",
                          source ? "empty" : "NULL");
    }
    status = hixl_name_parse(source, &q->source);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if ((stream >= engine->opts.max_streams) ||
        (layer >= engine->opts.max_layers)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s %u is out of range: this "
                          "engine accepts streams 0..%u and layers 0..%u "
                          "(hixl.MaxStreams / hixl.MaxLayers)",
                          (stream >= engine->opts.max_streams) ? "stream" :
                          "layer", (stream >= engine->opts.max_streams) ?
                          stream : layer, engine->opts.max_streams - 1,
                          engine->opts.max_layers - 1);
    }
    if (gen == UINT64_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "generation UINT64_MAX is "
                          "reserved");
    }
    q->engine = engine;
    q->stream = stream;
    q->layer  = layer;
    q->gen    = gen;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_wait_layer(hixl_engine_t *engine, const char *source,
                              uint32_t stream, uint64_t generation,
                              uint32_t layer, int32_t timeout_ms)
{
    hixl_layer_query_t q;
    hixl_status_t status;

    status = hixl_layer_query_init(&q, engine, source, stream, generation,
                                   layer);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_check_timeout(timeout_ms);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&engine->lock);
    if (!hixl_engine_wait(engine, hixl_deadline_ns(timeout_ms),
                          hixl_layer_check, &q)) {
        q.status = hixl_error(HIXL_TIMEOUT, "stream %u generation %" PRIu64
                              " layer %u from %s: no signal within %d ms%s",
                              stream, generation, layer, q.source.canon,
                              (int)timeout_ms, q.seen ? "" :
                              " (the source never connected)");
    }
    pthread_mutex_unlock(&engine->lock);
    return q.status;
}

hixl_status_t hixl_test_layer(hixl_engine_t *engine, const char *source,
                              uint32_t stream, uint64_t generation,
                              uint32_t layer, int *ready_p)
{
    hixl_layer_query_t q;
    hixl_status_t status;

    status = hixl_layer_query_init(&q, engine, source, stream, generation,
                                   layer);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (ready_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "ready_p is NULL");
    }
    if (!engine->progress_running) {
        hixl_progress_for_control(engine);
    }
    pthread_mutex_lock(&engine->lock);
    *ready_p = hixl_layer_check(&q) && (q.status == HIXL_SUCCESS);
    pthread_mutex_unlock(&engine->lock);
    return q.status;
}
