/*
 * Request pool.
 */
#include "config.h"
#include "core/request.h"
#include "util/handle.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hixl_status_t hixl_req_pool_init(hixl_req_pool_t *pool, uint32_t size)
{
    uint32_t i;

    memset(pool, 0, sizeof(*pool));
    pool->reqs = calloc(size, sizeof(*pool->reqs));
    if (pool->reqs == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %u "
                          "requests (option hixl.MaxRequests)", size);
    }
    pool->size = size;
    /* free list in index order, so a quiet engine reuses the same slots */
    for (i = size; i-- > 0;) {
        pool->reqs[i].index     = i;
        pool->reqs[i].next_free = pool->free_list;
        pool->free_list         = &pool->reqs[i];
        atomic_init(&pool->reqs[i].state, HIXL_REQ_FREE);
    }
    atomic_init(&pool->returned, NULL);
    return HIXL_SUCCESS;
}

void hixl_req_pool_cleanup(hixl_req_pool_t *pool)
{
    uint32_t i;

    if (pool->reqs == NULL) {
        return;
    }
    for (i = 0; i < pool->size; ++i) {
        free(pool->reqs[i].notify_name);
        free(pool->reqs[i].notify_msg);
    }
    free(pool->reqs);
    memset(pool, 0, sizeof(*pool));
}

hixl_request_t *hixl_req_get(hixl_req_pool_t *pool, uint16_t serial)
{
    hixl_request_t *req = pool->hot;

    if (req == NULL) {
        /* take everything returned so far in one exchange (no ABA: nobody
         * else pops); only when nothing was, a slot never used yet, so a
         * steady window cycles through the same few cache-warm slots */
        req = atomic_exchange(&pool->returned, NULL);
        if (req == NULL) {
            req = pool->free_list;
            if (req == NULL) {
                return NULL;
            }
            pool->free_list = req->next_free;
            goto got;
        }
    }
    pool->hot = req->next_free;
got:

    /* nobody else sees the slot before the transfer is posted (UCX's own
     * synchronisation publishes it to its callbacks): relaxed stores */
    req->gen         = hixl_gen_next(req->gen);
    req->handle      = hixl_handle_make(serial, req->gen, req->index);
    req->peer        = NULL;
    req->notify_name = NULL;
    req->notify_msg  = NULL;
    req->notify_len  = 0;
    req->errmsg[0]   = '\0';
    /* two holds from the start: the poster's, and its flush's (a transfer
     * always ends with one, transfer.c) */
    atomic_store_explicit(&req->pending, 2, memory_order_relaxed);
    atomic_store_explicit(&req->data_pending, 2, memory_order_relaxed);
    atomic_store_explicit(&req->status, HIXL_SUCCESS, memory_order_relaxed);
    atomic_store_explicit(&req->await_ack, 0, memory_order_relaxed);
    atomic_store_explicit(&req->flush_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&req->state, HIXL_REQ_ACTIVE, memory_order_release);
    return req;
}

void hixl_req_put(hixl_req_pool_t *pool, hixl_request_t *req)
{
    hixl_request_t *head;

    free(req->notify_name);
    free(req->notify_msg);
    req->notify_name = NULL;
    req->notify_msg  = NULL;
    atomic_store_explicit(&req->state, HIXL_REQ_FREE, memory_order_release);
    head = atomic_load_explicit(&pool->returned, memory_order_relaxed);
    do {
        req->next_free = head;
    } while (!atomic_compare_exchange_weak(&pool->returned, &head, req));
}

hixl_request_t *hixl_req_lookup(hixl_req_pool_t *pool, uint16_t serial,
                                uint64_t handle)
{
    uint32_t i = hixl_handle_index(handle);
    hixl_request_t *req;
    unsigned state;

    if ((hixl_handle_engine(handle) != serial) || (i >= pool->size)) {
        return NULL;
    }
    req   = &pool->reqs[i];
    state = atomic_load(&req->state);
    if ((req->gen != hixl_handle_gen(handle)) ||
        ((state != HIXL_REQ_ACTIVE) && (state != HIXL_REQ_DONE))) {
        return NULL;
    }
    return req;
}

void hixl_req_fail(hixl_request_t *req, hixl_status_t status,
                   const char *fmt, ...)
{
    int expected = HIXL_SUCCESS;
    va_list ap;

    if (!atomic_compare_exchange_strong(&req->status, &expected,
                                        (int)status)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(req->errmsg, sizeof(req->errmsg), fmt, ap);
    va_end(ap);
}
