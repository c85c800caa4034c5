/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Layer-granular flush, decode side: the signal tables, LAYER messages,
 * hixl_wait_layer and hixl_test_layer.
 *
 * Signals are kept per source engine name, not per connection: a prefill
 * engine that flushes its last layer and disconnects at once must not take
 * the signals with it.  A table belongs to one instance of the source (a
 * random id from its HELLO); a new instance under the same name (a restarted
 * process) starts a fresh table and bumps the epoch, so a wait begun on the
 * old instance fails instead of matching the new one's generations.
 *
 * A wait is tied to the connection the source had when the wait first saw
 * it: if that connection ends before the signal came, the wait ends FAILED
 * at once, even if the source has reconnected meanwhile (the new connection
 * satisfies it only by flushing that layer itself, before the wait looks
 * again).
 *
 * A decode engine serves prefill engines for weeks, each under a name of
 * its own, so what a source leaves behind is bounded: its signal table
 * (MaxStreams x MaxLayers bits, 40 KiB at the defaults) is allocated with
 * its first signal, never for a source that signals nothing, and of the
 * sources whose connection ended only the HIXL_LAYER_ENDED_MAX that ended
 * last are kept; a wait that starts after its source was dropped waits as
 * for a source that never connected.
 */
#include "config.h"
#include "ops/layer.h"
#include "ctrl/dispatch.h"
#include "util/args.h"
#include "util/clock.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Sources kept after their connection ended: a decode that waits for the
 * layers of a prefill that flushed and left looks at it soon after, well
 * before this many other prefills have ended. */
#define HIXL_LAYER_ENDED_MAX 64

typedef struct hixl_layer_source {
    struct hixl_layer_source *next;
    char      name[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t  instance;
    uint64_t  epoch;
    uint64_t  conn;          /* serial of its live connection, 0: none */
    uint64_t  ended;         /* its connection ended, in order; 0: live */
    char      closed_reason[HIXL_ERROR_MSG_MAX];
    uint64_t *gen;           /* per stream: generation + 1, 0: none; NULL
                                until its first signal */
    uint64_t *bits;          /* per stream: layers signalled */
    uint64_t  stale;         /* older-generation signals dropped */
} hixl_layer_source_t;

struct hixl_layers {
    hixl_layer_source_t *sources;
    unsigned             nended;      /* sources with ended set */
    uint64_t             ends;        /* connections ended so far */
};

static size_t hixl_layer_words(const hixl_engine_t *engine)
{
    return (engine->opts.max_layers + 63) / 64;
}

static hixl_layer_source_t *hixl_layer_source_find(hixl_engine_t *engine,
                                                   const char *canon)
{
    hixl_layer_source_t *src;

    for (src = engine->layers->sources; src != NULL; src = src->next) {
        if (!strcmp(src->name, canon)) {
            return src;
        }
    }
    return NULL;
}

static hixl_layer_source_t *hixl_layer_source_new(hixl_engine_t *engine,
                                                  const char *name)
{
    hixl_layer_source_t *src = calloc(1, sizeof(*src));

    if (src == NULL) {
        hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a layer "
                   "source");
        return NULL;
    }
    snprintf(src->name, sizeof(src->name), "%s", name);
    src->next               = engine->layers->sources;
    engine->layers->sources = src;
    return src;
}

/* Its signal table, at its first signal. */
static hixl_status_t hixl_layer_source_table(hixl_engine_t *engine,
                                             hixl_layer_source_t *src)
{
    size_t words = hixl_layer_words(engine);

    if (src->gen != NULL) {
        return HIXL_SUCCESS;
    }
    src->gen  = calloc(engine->opts.max_streams, sizeof(uint64_t));
    src->bits = calloc((size_t)engine->opts.max_streams * words,
                       sizeof(uint64_t));
    if ((src->gen == NULL) || (src->bits == NULL)) {
        free(src->gen);
        free(src->bits);
        src->gen  = NULL;
        src->bits = NULL;
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a layer "
                          "signal table of %u streams x %u layers",
                          engine->opts.max_streams, engine->opts.max_layers);
    }
    return HIXL_SUCCESS;
}

static void hixl_layer_source_free(hixl_layer_source_t *src)
{
    free(src->gen);
    free(src->bits);
    free(src);
}

/* Past the bound, drop the source whose connection ended first. */
static void hixl_layer_sources_trim(hixl_engine_t *engine)
{
    struct hixl_layers *l = engine->layers;
    hixl_layer_source_t **pp, **oldest;
    hixl_layer_source_t *src;

    while (l->nended > HIXL_LAYER_ENDED_MAX) {
        oldest = NULL;
        for (pp = &l->sources; *pp != NULL; pp = &(*pp)->next) {
            if (((*pp)->ended != 0) &&
                ((oldest == NULL) || ((*pp)->ended < (*oldest)->ended))) {
                oldest = pp;
            }
        }
        if (oldest == NULL) {
            l->nended = 0;   /* not reached: every ended one is counted */
            return;
        }
        src     = *oldest;
        *oldest = src->next;
        --l->nended;
        hixl_layer_source_free(src);
    }
}

/* Ready hook: an accepted peer may signal layers (engine->lock held). */
static hixl_status_t hixl_layer_peer_ready(hixl_engine_t *engine,
                                           hixl_peer_t *peer)
{
    size_t words = hixl_layer_words(engine);
    hixl_layer_source_t *src;

    hixl_assert_locked(&engine->lock);
    if (hixl_peer_outgoing(peer)) {
        return HIXL_SUCCESS;
    }
    src = hixl_layer_source_find(engine, peer->name);
    if (src == NULL) {
        src = hixl_layer_source_new(engine, peer->name);
        if (src == NULL) {
            return HIXL_RESOURCE_EXHAUSTED;
        }
        src->instance = peer->remote_instance;
    } else if (src->instance != peer->remote_instance) {
        if (src->gen != NULL) {
            memset(src->gen, 0, engine->opts.max_streams * sizeof(uint64_t));
            memset(src->bits, 0, (size_t)engine->opts.max_streams * words *
                                 sizeof(uint64_t));
        }
        src->instance = peer->remote_instance;
        src->epoch++;
        pthread_cond_broadcast(&engine->cond);
        hixl_events_signal(&engine->events);
    }
    if (src->ended != 0) {   /* back before it was dropped */
        src->ended = 0;
        --engine->layers->nended;
    }
    src->conn       = peer->serial;
    peer->layer_in  = src;
    return HIXL_SUCCESS;
}

static void hixl_layer_peer_closed(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_layer_source_t *src = peer->layer_in;

    if ((src == NULL) || (src->conn != peer->serial)) {
        return;
    }
    src->conn  = 0;
    src->ended = ++engine->layers->ends;
    ++engine->layers->nended;
    snprintf(src->closed_reason, sizeof(src->closed_reason), "%s",
             peer->close_reason);
    peer->layer_in = NULL;
    hixl_layer_sources_trim(engine);
    /* waits on it end FAILED: an event-driven waiter must look */
    hixl_events_signal(&engine->events);
}

static const hixl_peer_hooks_t hixl_layer_wait_hooks = {
    .name   = "layer-wait",
    .ready  = hixl_layer_peer_ready,
    .closed = hixl_layer_peer_closed,
};

static int hixl_on_layer(hixl_engine_t *engine, hixl_peer_t *peer,
                         const hixl_msg_t *msg)
{
    uint32_t stream = msg->u.layer.stream, layer = msg->u.layer.layer;
    uint64_t gen    = msg->u.layer.gen;
    size_t words    = hixl_layer_words(engine);
    hixl_layer_source_t *src = peer->layer_in;
    uint64_t *bits;

    if ((stream >= engine->opts.max_streams) ||
        (layer >= engine->opts.max_layers) || (gen == UINT64_MAX)) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "protocol error: layer "
                        "signal for stream %u layer %u, beyond the %u streams "
                        "x %u layers announced", stream, layer,
                        engine->opts.max_streams, engine->opts.max_layers);
        return 1;
    }
    if (hixl_layer_source_table(engine, src) != HIXL_SUCCESS) {
        hixl_peer_close(engine, peer, HIXL_RESOURCE_EXHAUSTED, "%s",
                        hixl_error_message());
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
    hixl_metrics_count(engine->metrics, HIXL_MX_LAYER_RECEIVED, 1);
    pthread_cond_broadcast(&engine->cond);
    hixl_events_signal(&engine->events);
    return 0;
}

/* ---- waiting ------------------------------------------------------------ */

typedef struct hixl_layer_query {
    hixl_engine_t *engine;
    hixl_name_t    source;
    uint32_t       stream;
    uint32_t       layer;
    uint64_t       gen;
    int            seen;     /* the source's table existed at some check */
    uint64_t       epoch;    /* its epoch then */
    uint64_t       conn;     /* the connection the wait is tied to */
    hixl_status_t  status;   /* once decided: SUCCESS or FAILED */
    int            decided;
} hixl_layer_query_t;

static int hixl_layer_decide(hixl_layer_query_t *q, hixl_status_t status)
{
    q->status  = status;
    q->decided = 1;
    return 1;
}

/* Decide the query if its answer is known now (engine->lock held). */
static int hixl_layer_check(void *arg)
{
    hixl_layer_query_t *q = arg;
    hixl_layer_source_t *src;
    const uint64_t *bits;
    uint64_t have;

    if (hixl_events_closing(&q->engine->events)) {
        return hixl_layer_decide(q, hixl_error(HIXL_FAILED, "engine %s is "
                                 "being finalized", q->engine->name.canon));
    }
    src = hixl_layer_source_find(q->engine, q->source.canon);
    if (src == NULL) {
        return 0;   /* never connected yet: keep waiting */
    }
    if (!q->seen) {
        q->seen  = 1;
        q->epoch = src->epoch;
    } else if (q->epoch != src->epoch) {
        return hixl_layer_decide(q, hixl_error(HIXL_FAILED, "layer source %s "
                                 "restarted (a new engine instance connected "
                                 "under its name)", src->name));
    }
    have = (src->gen != NULL) ? src->gen[q->stream] : 0;
    bits = (src->gen != NULL) ?
           &src->bits[(size_t)q->stream * hixl_layer_words(q->engine)] : NULL;
    if ((have == q->gen + 1) &&
        (bits[q->layer / 64] & (1ull << (q->layer % 64)))) {
        return hixl_layer_decide(q, HIXL_SUCCESS);
    }
    if (have > q->gen + 1) {
        return hixl_layer_decide(q, hixl_error(HIXL_FAILED, "stream %u "
                                 "generation %" PRIu64 " from %s was "
                                 "superseded by generation %" PRIu64,
                                 q->stream, q->gen, src->name, have - 1));
    }
    if (q->conn == 0) {
        q->conn = src->conn;
    }
    if ((src->conn == 0) || (src->conn != q->conn)) {
        return hixl_layer_decide(q, hixl_error(HIXL_FAILED, "layer source %s "
                                 "disconnected before signalling stream %u "
                                 "generation %" PRIu64 " layer %u: %s",
                                 src->name, q->stream, q->gen, q->layer,
                                 src->closed_reason));
    }
    return 0;
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
    if (status == HIXL_SUCCESS) {
        status = hixl_events_enter(engine);   /* finalize may end it */
    }
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
    hixl_events_leave(engine);
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
    hixl_progress_pass(engine, HIXL_PROGRESS_POLL_CONTROL);   /* a loop may poll this */
    pthread_mutex_lock(&engine->lock);
    *ready_p = hixl_layer_check(&q) && (q.status == HIXL_SUCCESS);
    pthread_mutex_unlock(&engine->lock);
    return q.status;
}

/* ---- set-up --------------------------------------------------------------- */

hixl_status_t hixl_layer_init(hixl_engine_t *engine)
{
    hixl_status_t status;

    engine->layers = calloc(1, sizeof(*engine->layers));
    if (engine->layers == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    status = hixl_layer_flush_init(engine);
    if (status == HIXL_SUCCESS) {
        status = hixl_peer_hooks_add(engine, &hixl_layer_wait_hooks);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_ctrl_handle(engine, CTRL_LAYER, hixl_on_layer,
                     HIXL_CTRL_ON_ACCEPTED | HIXL_CTRL_WHEN_READY);
    return HIXL_SUCCESS;
}

void hixl_layer_cleanup(hixl_engine_t *engine)
{
    hixl_layer_source_t *src;

    if (engine->layers == NULL) {
        return;
    }
    while ((src = engine->layers->sources) != NULL) {
        engine->layers->sources = src->next;
        hixl_layer_source_free(src);
    }
    free(engine->layers);
    engine->layers = NULL;
}
