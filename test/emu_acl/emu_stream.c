/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl (test double): streams, events and asynchronous copies.
 * Signatures follow CANN acl_rt.h (aclrtCreateStream, aclrtMemcpyAsync,
 * aclrtRecordEvent, aclrtQueryEventStatus, ...).
 *
 * A stream is a FIFO of tasks run by its own worker thread, so a copy
 * really is in flight after aclrtMemcpyAsync returns and only an event
 * recorded behind it (or a stream synchronize) tells when it is done.
 */
#define _GNU_SOURCE
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct emu_task {
    struct emu_task *next;
    int              is_copy;
    uint8_t         *dst;
    const uint8_t   *src;
    size_t           len;
    emu_event_t     *event;     /* record: the event and its generation */
    uint64_t         gen;
} emu_task_t;

struct emu_stream {
    uint32_t        magic;
    emu_stream_t   *next;       /* emu.streams */
    emu_ctx_t      *ctx;
    pthread_t       thread;
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    emu_task_t     *head, *tail;
    int             busy;
    int             stop;
};

struct emu_event {
    uint32_t         magic;
    emu_event_t     *next;      /* emu.events */
    emu_stream_t    *stream;    /* last recorded on */
    atomic_uint_fast64_t recorded;   /* generation last recorded */
    atomic_uint_fast64_t reached;    /* generation the stream reached */
};

static void *emu_stream_main(void *arg)
{
    emu_stream_t *s = arg;
    emu_task_t *t;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while ((s->head == NULL) && !s->stop) {
            pthread_cond_wait(&s->cond, &s->lock);
        }
        if (s->head == NULL) {
            break;
        }
        t       = s->head;
        s->head = t->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        s->busy = 1;
        pthread_mutex_unlock(&s->lock);
        if (t->is_copy) {
            if (emu.delay_us) {
                usleep(emu.delay_us);
            }
            memmove(t->dst, t->src, t->len);
        } else {
            atomic_store(&t->event->reached, t->gen);
        }
        free(t);
        pthread_mutex_lock(&s->lock);
        s->busy = 0;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void emu_stream_push(emu_stream_t *s, emu_task_t *t)
{
    pthread_mutex_lock(&s->lock);
    if (s->tail != NULL) {
        s->tail->next = t;
    } else {
        s->head = t;
    }
    s->tail = t;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void emu_stream_drain(emu_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    while ((s->head != NULL) || s->busy) {
        pthread_cond_wait(&s->cond, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
}

/* A live stream handle, or NULL (emu.lock held). */
static emu_stream_t *emu_stream_get(aclrtStream stream)
{
    emu_stream_t *s;

    for (s = emu.streams; s != NULL; s = s->next) {
        if ((s == stream) && (s->magic == EMU_STREAM_MAGIC)) {
            return s;
        }
    }
    return NULL;
}

static emu_event_t *emu_event_get(aclrtEvent event)
{
    emu_event_t *e;

    for (e = emu.events; e != NULL; e = e->next) {
        if ((e == event) && (e->magic == EMU_EVENT_MAGIC)) {
            return e;
        }
    }
    return NULL;
}

void emu_streams_sync_all(void)
{
    emu_stream_t *s;

    pthread_mutex_lock(&emu.lock);
    for (s = emu.streams; s != NULL; s = s->next) {
        emu_stream_drain(s);
    }
    pthread_mutex_unlock(&emu.lock);
}

aclError aclrtCreateStream(aclrtStream *stream)
{
    emu_stream_t *s;

    emu_setup();
    if (stream == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (emu_cur == NULL) {
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    s->magic = EMU_STREAM_MAGIC;
    s->ctx   = emu_cur;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, emu_stream_main, s) != 0) {
        free(s);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    pthread_mutex_lock(&emu.lock);
    s->next     = emu.streams;
    emu.streams = s;
    pthread_mutex_unlock(&emu.lock);
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    emu_stream_t **pp, *s = NULL;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    for (pp = &emu.streams; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp == stream) && ((*pp)->magic == EMU_STREAM_MAGIC)) {
            s   = *pp;
            *pp = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&emu.lock);
    if (s == NULL) {
        return (stream == NULL) ? ACL_ERROR_INVALID_PARAM :
                                  ACL_ERROR_RT_INVALID_HANDLE;
    }
    /* what was queued still runs, as ACL does before releasing a stream */
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->magic = 0;
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
    emu_stream_t *s;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    s = emu_stream_get(stream);
    if (s != NULL) {
        emu_stream_drain(s);
    }
    pthread_mutex_unlock(&emu.lock);
    return (s != NULL) ? ACL_SUCCESS : (stream == NULL) ?
           ACL_ERROR_INVALID_PARAM : ACL_ERROR_RT_INVALID_HANDLE;
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status)
{
    emu_stream_t *s;

    emu_setup();
    if (status == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&emu.lock);
    s = emu_stream_get(stream);
    if (s != NULL) {
        pthread_mutex_lock(&s->lock);
        *status = ((s->head == NULL) && !s->busy) ? ACL_STREAM_STATUS_COMPLETE :
                  ACL_STREAM_STATUS_NOT_READY;
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&emu.lock);
    return (s != NULL) ? ACL_SUCCESS : ACL_ERROR_RT_INVALID_HANDLE;
}

/* Every device operand must be on the stream's device or on a device it
 * has peer access to, as a copy engine reaches only those. */
static int emu_reachable(const emu_stream_t *s, int32_t device)
{
    return (device < 0) || (device == s->ctx->device) ||
           emu.peer[s->ctx->device][device];
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                          size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream)
{
    emu_operand_t d, s;
    emu_stream_t *st;
    emu_task_t *t;
    aclError rc;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    st = emu_stream_get(stream);
    if (st == NULL) {
        rc = (stream == NULL) ? ACL_ERROR_INVALID_PARAM :
             ACL_ERROR_RT_INVALID_HANDLE;
        goto out;
    }
    if (emu_cur != st->ctx) {
        rc = (emu_cur == NULL) ? ACL_ERROR_RT_CONTEXT_NULL :
             ACL_ERROR_RT_STREAM_CONTEXT;
        goto out;
    }
    if (kind == ACL_MEMCPY_HOST_TO_HOST) {
        rc = ACL_ERROR_RT_FEATURE_NOT_SUPPORT;   /* as documented */
        goto out;
    }
    rc = emu_resolve_copy(dst, destMax, src, count, kind, &d, &s);
    if (rc != ACL_SUCCESS) {
        goto out;
    }
    if ((d.device < 0) && (s.device < 0)) {
        rc = ACL_ERROR_RT_FEATURE_NOT_SUPPORT;   /* DEFAULT kind, host-host */
        goto out;
    }
    if (!emu_reachable(st, d.device) || !emu_reachable(st, s.device)) {
        rc = ACL_ERROR_RT_NO_PERMISSION;
        goto out;
    }
    if (((d.device < 0) && !d.pinned) || ((s.device < 0) && !s.pinned)) {
        /* pageable host memory: the call returns once the copy is done,
         * after what the stream had queued before it */
        emu_stream_drain(st);
        memmove(d.ptr, s.ptr, count);
        goto out;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
        goto out;
    }
    t->is_copy = 1;
    t->dst     = d.ptr;
    t->src     = s.ptr;
    t->len     = count;
    emu_stream_push(st, t);
out:
    pthread_mutex_unlock(&emu.lock);
    return rc;
}

aclError aclrtCreateEvent(aclrtEvent *event)
{
    emu_event_t *e;

    emu_setup();
    if (event == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (emu_cur == NULL) {
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    e->magic = EMU_EVENT_MAGIC;
    atomic_init(&e->recorded, 0);
    atomic_init(&e->reached, 0);
    pthread_mutex_lock(&emu.lock);
    e->next    = emu.events;
    emu.events = e;
    pthread_mutex_unlock(&emu.lock);
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event)
{
    emu_event_t **pp, *e = NULL;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    for (pp = &emu.events; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp == event) && ((*pp)->magic == EMU_EVENT_MAGIC)) {
            e   = *pp;
            *pp = e->next;
            break;
        }
    }
    /* a record still queued would write into the freed event */
    if ((e != NULL) && (e->stream != NULL) &&
        (emu_stream_get(e->stream) != NULL)) {
        emu_stream_drain(e->stream);
    }
    pthread_mutex_unlock(&emu.lock);
    if (e == NULL) {
        return (event == NULL) ? ACL_ERROR_INVALID_PARAM :
                                 ACL_ERROR_RT_INVALID_HANDLE;
    }
    e->magic = 0;
    free(e);
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    emu_stream_t *s;
    emu_event_t *e;
    emu_task_t *t;
    aclError rc = ACL_SUCCESS;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    s = emu_stream_get(stream);
    e = emu_event_get(event);
    if ((s == NULL) || (e == NULL)) {
        rc = ((stream == NULL) || (event == NULL)) ? ACL_ERROR_INVALID_PARAM :
             ACL_ERROR_RT_INVALID_HANDLE;
        goto out;
    }
    if (emu_cur != s->ctx) {
        rc = (emu_cur == NULL) ? ACL_ERROR_RT_CONTEXT_NULL :
             ACL_ERROR_RT_STREAM_CONTEXT;
        goto out;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        rc = ACL_ERROR_RT_MEMORY_ALLOCATION;
        goto out;
    }
    e->stream = s;
    t->event  = e;
    t->gen    = atomic_fetch_add(&e->recorded, 1) + 1;
    emu_stream_push(s, t);
out:
    pthread_mutex_unlock(&emu.lock);
    return rc;
}

aclError aclrtQueryEventStatus(aclrtEvent event,
                               aclrtEventRecordedStatus *status)
{
    emu_event_t *e;

    emu_setup();
    if (status == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    pthread_mutex_lock(&emu.lock);
    e = emu_event_get(event);
    if (e != NULL) {
        /* never recorded counts as complete, as in ACL */
        *status = (atomic_load(&e->reached) >= atomic_load(&e->recorded)) ?
                  ACL_EVENT_RECORDED_STATUS_COMPLETE :
                  ACL_EVENT_RECORDED_STATUS_NOT_READY;
    }
    pthread_mutex_unlock(&emu.lock);
    return (e != NULL) ? ACL_SUCCESS : (event == NULL) ?
           ACL_ERROR_INVALID_PARAM : ACL_ERROR_RT_INVALID_HANDLE;
}

aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    aclError rc;

    for (;;) {
        rc = aclrtQueryEventStatus(event, &st);
        if ((rc != ACL_SUCCESS) || (st == ACL_EVENT_RECORDED_STATUS_COMPLETE)) {
            return rc;
        }
        usleep(50);
    }
}
