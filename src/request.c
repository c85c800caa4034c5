/*
 * Request pool.
 */
#include "config.h"
#include "request.h"
#include "handle.h"
#include "log.h"

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
    pthread_mutex_init(&pool->lock, NULL);
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
    pthread_mutex_destroy(&pool->lock);
    memset(pool, 0, sizeof(*pool));
}

hixl_request_t *hixl_req_get(hixl_req_pool_t *pool, uint16_t serial)
{
    hixl_request_t *req;

    pthread_mutex_lock(&pool->lock);
    req = pool->free_list;
    if (req != NULL) {
        pool->free_list = req->next_free;
        pool->in_use++;
    }
    pthread_mutex_unlock(&pool->lock);
    if (req == NULL) {
        return NULL;
    }

    req->gen         = hixl_gen_next(req->gen);
    req->handle      = hixl_handle_make(serial, req->gen, req->index);
    req->peer        = NULL;
    req->notify_name = NULL;
    req->notify_msg  = NULL;
    req->notify_len  = 0;
    req->errmsg[0]   = '\0';
    atomic_store(&req->pending, 1);
    atomic_store(&req->data_pending, 1);
    atomic_store(&req->status, HIXL_SUCCESS);
    atomic_store(&req->await_ack, 0);
    atomic_store(&req->flush_pending, 0);
    atomic_store(&req->state, HIXL_REQ_ACTIVE);
    return req;
}

void hixl_req_put(hixl_req_pool_t *pool, hixl_request_t *req)
{
    free(req->notify_name);
    free(req->notify_msg);
    req->notify_name = NULL;
    req->notify_msg  = NULL;
    atomic_store(&req->state, HIXL_REQ_FREE);
    pthread_mutex_lock(&pool->lock);
    req->next_free  = pool->free_list;
    pool->free_list = req;
    pool->in_use--;
    pthread_mutex_unlock(&pool->lock);
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
