/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hixl_connect_async / hixl_disconnect_async: a small pool of threads that
 * run hixl_connect / hixl_disconnect, and the status table the application
 * polls, with hixl's rules:
 *  - submitting sets the remote's status at once (CONNECT_PENDING,
 *    DISCONNECT_PENDING), so it always shows the latest operation asked
 *    for;
 *  - operations on one remote run one at a time, in submission order;
 *    different remotes run at once;
 *  - a running connect does not overwrite a disconnect submitted after it
 *    (and the reverse), and NOT_CONNECT removes the remote from the table.
 * The pool starts at the first call and stops at finalize (queued
 * operations are dropped; running ones end within their timeouts).
 */
#include "config.h"
#include "ops/connect_async.h"
#include "util/args.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

typedef struct hixl_async_op {
    char    remote[HIXL_ENGINE_NAME_MAX + 1];
    int     connect;            /* else disconnect */
    int32_t timeout_ms;
} hixl_async_op_t;

typedef struct hixl_async_entry {
    char                        remote[HIXL_ENGINE_NAME_MAX + 1];
    hixl_async_connect_status_t status;
    int                         running;   /* an operation of it runs */
} hixl_async_entry_t;

struct hixl_async {
    hixl_engine_t     *engine;
    pthread_mutex_t    lock;
    pthread_cond_t     cond;
    pthread_t         *threads;
    unsigned           nthreads;
    int                stop;
    hixl_async_op_t   *queue;      /* FIFO of waiting operations */
    size_t             nqueue;
    size_t             cap;        /* hixl.ConnectPoolQueue */
    hixl_async_entry_t *entries;
    size_t             nentries;
    size_t             entries_cap;
};

static hixl_async_entry_t *hixl_async_entry(struct hixl_async *a,
                                            const char *remote, int create)
{
    size_t i;

    for (i = 0; i < a->nentries; ++i) {
        if (!strcmp(a->entries[i].remote, remote)) {
            return &a->entries[i];
        }
    }
    if (!create || (hixl_array_reserve(&a->entries, &a->entries_cap,
                                       a->nentries + 1, sizeof(*a->entries),
                                       8) != 0)) {
        return NULL;
    }
    memset(&a->entries[a->nentries], 0, sizeof(a->entries[0]));
    snprintf(a->entries[a->nentries].remote, sizeof(a->entries[0].remote),
             "%s", remote);
    return &a->entries[a->nentries++];
}

static void hixl_async_entry_drop(struct hixl_async *a, hixl_async_entry_t *e)
{
    *e = a->entries[--a->nentries];
}

/* A running operation moves the status on, unless an operation of the
 * other kind was submitted meanwhile (hixl's guard). */
static void hixl_async_set(struct hixl_async *a, const char *remote,
                           int connect, hixl_async_connect_status_t status)
{
    hixl_async_entry_t *e = hixl_async_entry(a, remote, 0);

    if ((e == NULL) ||
        (e->status == (connect ? HIXL_ASYNC_DISCONNECT_PENDING :
                                 HIXL_ASYNC_CONNECT_PENDING))) {
        return;
    }
    if (status == HIXL_ASYNC_NOT_CONNECT) {
        hixl_async_entry_drop(a, e);
    } else {
        e->status = status;
    }
}

/* The first queued operation whose remote has none running (lock held). */
static int hixl_async_take(struct hixl_async *a, hixl_async_op_t *op)
{
    hixl_async_entry_t *e;
    size_t i;

    for (i = 0; i < a->nqueue; ++i) {
        e = hixl_async_entry(a, a->queue[i].remote, 0);
        if ((e != NULL) && e->running) {
            continue;
        }
        *op = a->queue[i];
        memmove(&a->queue[i], &a->queue[i + 1],
                (a->nqueue - i - 1) * sizeof(*a->queue));
        a->nqueue--;
        if (e != NULL) {
            e->running = 1;
        }
        return 1;
    }
    return 0;
}

static void hixl_async_run(struct hixl_async *a, const hixl_async_op_t *op)
{
    hixl_async_entry_t *e;
    hixl_status_t status;

    pthread_mutex_lock(&a->lock);
    hixl_async_set(a, op->remote, op->connect, op->connect ?
                   HIXL_ASYNC_CONNECTING : HIXL_ASYNC_DISCONNECTING);
    pthread_mutex_unlock(&a->lock);
    if (op->connect) {
        status = hixl_connect(a->engine, op->remote, op->timeout_ms);
    } else {
        status = hixl_disconnect(a->engine, op->remote, op->timeout_ms);
    }
    pthread_mutex_lock(&a->lock);
    e = hixl_async_entry(a, op->remote, 0);
    if (e != NULL) {
        e->running = 0;
    }
    hixl_async_set(a, op->remote, op->connect, !op->connect ?
                   HIXL_ASYNC_NOT_CONNECT :
                   ((status == HIXL_SUCCESS) ||
                    (status == HIXL_ALREADY_CONNECTED)) ?
                   HIXL_ASYNC_CONNECTED : HIXL_ASYNC_CONNECT_FAILED);
    pthread_cond_broadcast(&a->cond);   /* that remote's next may run */
    pthread_mutex_unlock(&a->lock);
    if ((status != HIXL_SUCCESS) && (status != HIXL_ALREADY_CONNECTED)) {
        hixl_log_info("async %s of %s: %s", op->connect ? "connect" :
                      "disconnect", op->remote, hixl_error_message());
    }
}

static void *hixl_async_main(void *arg)
{
    struct hixl_async *a = arg;
    hixl_async_op_t op;

    pthread_mutex_lock(&a->lock);
    while (!a->stop) {
        if (!hixl_async_take(a, &op)) {
            pthread_cond_wait(&a->cond, &a->lock);
            continue;
        }
        pthread_mutex_unlock(&a->lock);
        hixl_async_run(a, &op);
        pthread_mutex_lock(&a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* The pool, started at the first call (engine->lock held: one start). */
static hixl_status_t hixl_async_start(hixl_engine_t *engine)
{
    struct hixl_async *a;
    unsigned i;

    if (engine->async != NULL) {
        return HIXL_SUCCESS;
    }
    a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->threads = calloc(engine->opts.connect_pool_threads,
                            sizeof(*a->threads));
        a->queue   = calloc(engine->opts.connect_pool_queue,
                            sizeof(*a->queue));
    }
    if ((a == NULL) || (a->threads == NULL) || (a->queue == NULL)) {
        if (a != NULL) {
            free(a->threads);
            free(a->queue);
            free(a);
        }
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "connect pool");
    }
    a->engine = engine;
    a->cap    = engine->opts.connect_pool_queue;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->cond, NULL);
    for (i = 0; i < engine->opts.connect_pool_threads; ++i) {
        if (pthread_create(&a->threads[a->nthreads], NULL, hixl_async_main,
                           a) == 0) {
            a->nthreads++;
        }
    }
    if (a->nthreads == 0) {
        pthread_mutex_destroy(&a->lock);
        pthread_cond_destroy(&a->cond);
        free(a->threads);
        free(a->queue);
        free(a);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "cannot start the "
                          "connect pool's threads");
    }
    engine->async = a;
    return HIXL_SUCCESS;
}

static hixl_status_t hixl_async_submit(hixl_engine_t *engine,
                                       const char *remote, int32_t timeout_ms,
                                       int connect)
{
    hixl_async_entry_t *e;
    hixl_status_t status;
    struct hixl_async *a;
    hixl_name_t name;

    status = hixl_check_remote_timeout(engine, remote, timeout_ms);
    if (status == HIXL_SUCCESS) {
        status = hixl_name_parse(remote, &name);
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&engine->lock);
    status = hixl_async_start(engine);
    pthread_mutex_unlock(&engine->lock);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    a = engine->async;
    pthread_mutex_lock(&a->lock);
    if (a->nqueue == a->cap) {
        pthread_mutex_unlock(&a->lock);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "the connect pool's queue "
                          "is full (%zu operations, hixl.ConnectPoolQueue)",
                          a->cap);
    }
    e = hixl_async_entry(a, remote, 1);
    if (e == NULL) {
        pthread_mutex_unlock(&a->lock);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    e->status = connect ? HIXL_ASYNC_CONNECT_PENDING :
                HIXL_ASYNC_DISCONNECT_PENDING;
    snprintf(a->queue[a->nqueue].remote, sizeof(a->queue[0].remote), "%s",
             remote);
    a->queue[a->nqueue].connect    = connect;
    a->queue[a->nqueue].timeout_ms = timeout_ms;
    a->nqueue++;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    return HIXL_SUCCESS;
}

hixl_status_t hixl_connect_async(hixl_engine_t *engine,
                                 const char *remote_engine, int32_t timeout_ms)
{
    return hixl_async_submit(engine, remote_engine, timeout_ms, 1);
}

hixl_status_t hixl_disconnect_async(hixl_engine_t *engine,
                                    const char *remote_engine,
                                    int32_t timeout_ms)
{
    return hixl_async_submit(engine, remote_engine, timeout_ms, 0);
}

hixl_status_t hixl_get_async_connect_status(
        hixl_engine_t *engine, const char *remote_engine,
        hixl_async_connect_status_t *status_p)
{
    struct hixl_async *a;
    hixl_async_entry_t *e;
    hixl_status_t status;

    status = hixl_check_remote(engine, remote_engine);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (status_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "status_p is NULL");
    }
    *status_p = HIXL_ASYNC_NOT_CONNECT;
    a = engine->async;
    if (a == NULL) {
        return HIXL_SUCCESS;
    }
    pthread_mutex_lock(&a->lock);
    e = hixl_async_entry(a, remote_engine, 0);
    if (e != NULL) {
        *status_p = e->status;
    }
    pthread_mutex_unlock(&a->lock);
    return HIXL_SUCCESS;
}

hixl_status_t hixl_get_all_async_connect_status(
        hixl_engine_t *engine, hixl_async_connect_entry_t **entries_p,
        size_t *count_p)
{
    hixl_async_connect_entry_t *out;
    struct hixl_async *a;
    size_t i, n;
    char *names;

    if ((engine == NULL) || (entries_p == NULL) || (count_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL", !engine ?
                          "engine" : !entries_p ? "entries_p" : "count_p");
    }
    *entries_p = NULL;
    *count_p   = 0;
    a = engine->async;
    if (a == NULL) {
        return HIXL_SUCCESS;
    }
    pthread_mutex_lock(&a->lock);
    n = a->nentries;
    if (n == 0) {
        pthread_mutex_unlock(&a->lock);
        return HIXL_SUCCESS;
    }
    /* one block: the array, then the names */
    out = malloc(n * (sizeof(*out) + sizeof(a->entries[0].remote)));
    if (out == NULL) {
        pthread_mutex_unlock(&a->lock);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    names = (char*)(out + n);
    for (i = 0; i < n; ++i) {
        memcpy(names, a->entries[i].remote, sizeof(a->entries[i].remote));
        out[i].remote = names;
        out[i].status = a->entries[i].status;
        names        += sizeof(a->entries[i].remote);
    }
    pthread_mutex_unlock(&a->lock);
    *entries_p = out;
    *count_p   = n;
    return HIXL_SUCCESS;
}

void hixl_release_async_connect_status(hixl_async_connect_entry_t *entries,
                                       size_t count)
{
    (void)count;
    free(entries);
}

void hixl_connect_async_cleanup(hixl_engine_t *engine)
{
    struct hixl_async *a = engine->async;
    unsigned i;

    if (a == NULL) {
        return;
    }
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    for (i = 0; i < a->nthreads; ++i) {
        pthread_join(a->threads[i], NULL);
    }
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->cond);
    free(a->threads);
    free(a->queue);
    free(a->entries);
    free(a);
    engine->async = NULL;
}
