/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HixlCSClient*: an engine of the client's own that connects to the
 * server's, fetches its region table (a HIXL_CS_REQ_NAME notify, answered by
 * a HIXL_CS_TABLE_NAME notify carrying the same request id), and moves batches
 * with hixl_transfer_sync / hixl_transfer_async: Put is a WRITE of
 * local_buf into remote_buf, Get a READ.  A CompleteHandle is the core's
 * request handle.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cs_common.h"
#include "cs_msg.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)HIXL_COMPLETE_STATUS_WAITING == HIXL_TRANSFER_WAITING &&
               (int)HIXL_COMPLETE_STATUS_COMPLETED ==
                   HIXL_TRANSFER_COMPLETED &&
               (int)HIXL_COMPLETE_STATUS_TIMEOUT == HIXL_TRANSFER_TIMEOUT &&
               (int)HIXL_COMPLETE_STATUS_FAILED == HIXL_TRANSFER_FAILED,
               "HixlCompleteStatus and hixl_transfer_status_t differ");

/* Unqueried async batches a client may hold, as CANN's. */
#define HIXL_CS_MAX_PENDING 4096
#define HIXL_CS_KIND_CLIENT 2

typedef struct hixl_cs_client {
    hixl_engine_t    *engine;
    char              server[HIXL_ENGINE_NAME_MAX + 1];
    hixl_cs_regions_t regions;
    pthread_mutex_t   lock;          /* the table, the request ids */
    uint64_t          next_id;
    hixl_cs_table_t   table;         /* what GetRemoteMem gave out last */
    atomic_uint       pending;       /* async batches not yet reported */
    atomic_int        failed;        /* a batch ended FAILED or TIMEOUT */
} hixl_cs_client_t;

static hixl_cs_client_t *hixl_cs_client(HixlClientHandle handle)
{
    return hixl_cs_live_has(handle, HIXL_CS_KIND_CLIENT) ? handle : NULL;
}

#define HIXL_CS_CLIENT_OR_RETURN(_c, _h) \
    hixl_cs_client_t *_c = hixl_cs_client(_h); \
    do { \
        if (_c == NULL) { \
            return hixl_compat_error(HIXL_PARAM_INVALID, "client_handle %p " \
                                     "is not from HixlCSClientCreate", \
                                     (void*)(_h)); \
        } \
    } while (0)

HixlStatus HixlCSClientCreate(const HixlClientDesc *client_desc,
                              const HixlClientConfig *config,
                              HixlClientHandle *client_handle)
{
    char ip[64], name[HIXL_ENGINE_NAME_MAX + 1];
    hixl_status_t status;
    hixl_cs_client_t *c;

    if (client_handle == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "client_handle is NULL");
    }
    *client_handle = NULL;
    if ((client_desc == NULL) || (client_desc->server_ip == NULL) ||
        (client_desc->local_endpoint == NULL) ||
        (client_desc->remote_endpoint == NULL) || (config == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                                 (client_desc == NULL) ? "client_desc" :
                                 (config == NULL) ? "config" :
                                 (client_desc->server_ip == NULL) ?
                                 "client_desc->server_ip" :
                                 (client_desc->local_endpoint == NULL) ?
                                 "client_desc->local_endpoint" :
                                 "client_desc->remote_endpoint");
    }
    if ((client_desc->server_port < 1) || (client_desc->server_port > 65535)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "server_port %u is not "
                                 "in [1, 65535]", client_desc->server_port);
    }
    status = hixl_compat_cs_config(config->global_resource_config, 0);
    if (status == HIXL_SUCCESS) {
        status = hixl_cs_local_ip(client_desc->server_ip, ip, sizeof(ip));
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_cs_name(name, sizeof(name), ip, 0);
    }
    c = (status == HIXL_SUCCESS) ? calloc(1, sizeof(*c)) : NULL;
    if ((status == HIXL_SUCCESS) && (c == NULL)) {
        status = hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_cs_name(c->server, sizeof(c->server),
                              client_desc->server_ip, client_desc->server_port);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_cs_engine(name, 1, &c->engine);
    }
    if ((status == HIXL_SUCCESS) &&
        (hixl_cs_live_add(c, HIXL_CS_KIND_CLIENT) != 0)) {
        hixl_finalize(c->engine);
        status = hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    if (status != HIXL_SUCCESS) {
        free(c);
        return status;
    }
    hixl_cs_regions_init(&c->regions);
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->pending, 0);
    atomic_init(&c->failed, 0);
    *client_handle = c;
    hixl_compat_debug("HixlCS client %s for server %s (tc %u, sl %u: no "
                      "effect over UCX)", hixl_engine_name(c->engine),
                      c->server, client_desc->tc, client_desc->sl);
    return HIXL_SUCCESS;
}

/* Ask the server for its table and wait for the answer until the
 * deadline; the table then replaces c->table (c->lock held). */
static hixl_status_t hixl_cs_fetch(hixl_cs_client_t *c, uint64_t deadline_ns)
{
    uint8_t req[HIXL_CS_REQ_LEN];
    hixl_notify_desc_t nd;
    hixl_notify_t *got;
    hixl_cs_table_t table;
    unsigned idle = 0;
    size_t count, i;
    hixl_status_t status;
    uint64_t id = ++c->next_id, rid;
    char why[128];
    int found = 0;

    hixl_cs_req_encode(req, id);
    nd.name    = HIXL_CS_REQ_NAME;
    nd.msg     = req;
    nd.msg_len = sizeof(req);
    status     = hixl_send_notify(c->engine, c->server, &nd,
                                  hixl_compat_ms_left(deadline_ns) + 1);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    while (!found) {
        status = hixl_get_notifies(c->engine, &got, &count);
        if (status != HIXL_SUCCESS) {
            return status;
        }
        for (i = 0; i < count; ++i) {
            if (strcmp(got[i].name, HIXL_CS_TABLE_NAME) != 0) {
                continue;
            }
            if (hixl_cs_table_decode(got[i].msg, got[i].msg_len, &rid, &table,
                                     why, sizeof(why)) != 0) {
                hixl_compat_debug("HixlCS client: bad table from %s: %s",
                                  got[i].remote, why);
                continue;
            }
            if ((rid != id) || found) {
                hixl_cs_table_free(&table);   /* an answer to an older ask */
                continue;
            }
            hixl_cs_table_free(&c->table);
            c->table = table;
            found    = 1;
        }
        if (count != 0) {
            hixl_release_notifies(got, count);
        }
        if (found) {
            break;
        }
        if (hixl_compat_ms_left(deadline_ns) == 0) {
            return hixl_compat_error(HIXL_TIMEOUT, "server %s did not send "
                                     "its memory table in time (does it "
                                     "listen: HixlCSServerListen?)",
                                     c->server);
        }
        hixl_cs_backoff(&idle);
    }
    return HIXL_SUCCESS;
}

HixlStatus HixlCSClientConnect(HixlClientHandle client_handle,
                               uint32_t timeout_ms)
{
    uint64_t deadline = hixl_compat_deadline_ns(hixl_cs_ms(timeout_ms));
    hixl_status_t status;

    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    status = hixl_connect(c->engine, c->server, hixl_cs_ms(timeout_ms));
    if (status != HIXL_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&c->lock);
    status = hixl_cs_fetch(c, deadline);   /* prefetch, as CANN's does */
    pthread_mutex_unlock(&c->lock);
    return status;
}

HixlStatus HixlCSClientGetRemoteMem(HixlClientHandle client_handle,
                                    CommMem **remote_mem_list,
                                    char ***mem_tag_list, uint32_t *list_num,
                                    uint32_t timeout_ms)
{
    hixl_status_t status;

    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    if ((remote_mem_list == NULL) || (mem_tag_list == NULL) ||
        (list_num == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                                 (remote_mem_list == NULL) ?
                                 "remote_mem_list" : (mem_tag_list == NULL) ?
                                 "mem_tag_list" : "list_num");
    }
    pthread_mutex_lock(&c->lock);
    status = hixl_cs_fetch(c, hixl_compat_deadline_ns(hixl_cs_ms(timeout_ms)));
    if (status == HIXL_SUCCESS) {
        *remote_mem_list = c->table.mems;
        *mem_tag_list    = c->table.tags;
        *list_num        = c->table.count;
    }
    pthread_mutex_unlock(&c->lock);
    return status;
}

HixlStatus HixlCSClientRegMem(HixlClientHandle client_handle,
                              const char *mem_tag, const CommMem *mem,
                              MemHandle *mem_handle)
{
    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    if ((mem == NULL) || (mem_handle == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                                 (mem == NULL) ? "mem" : "mem_handle");
    }
    return hixl_cs_region_add(c->engine, &c->regions, mem_tag, mem, mem_handle);
}

HixlStatus HixlCSClientUnregMem(HixlClientHandle client_handle,
                                MemHandle mem_handle)
{
    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    if (mem_handle == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "mem_handle is NULL");
    }
    return hixl_cs_region_remove(c->engine, &c->regions, mem_handle);
}

/* The batch as core descriptors (*descs_p to free), after the checks CANN
 * makes first. */
static hixl_status_t hixl_cs_batch_prepare(hixl_cs_client_t *c,
                                           const char *what, uint32_t list_num,
                                           const HixlOneSideOpDesc *desc_list,
                                           hixl_transfer_op_desc_t **descs_p)
{
    hixl_transfer_op_desc_t *d;
    uint32_t i;

    if (list_num == 0) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s: list_num is 0",
                                 what);
    }
    if (desc_list == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s: desc_list is NULL",
                                 what);
    }
    if (atomic_load(&c->failed)) {
        return hixl_compat_error(HIXL_FAILED, "%s: an earlier batch of this "
                                 "client ended FAILED or TIMEOUT; create a "
                                 "new client", what);
    }
    d = malloc((size_t)list_num * sizeof(*d));
    if (d == NULL) {
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "%s: out of memory "
                                 "for %u descriptors", what, list_num);
    }
    for (i = 0; i < list_num; ++i) {
        d[i].local_addr  = (uintptr_t)desc_list[i].local_buf;
        d[i].remote_addr = (uintptr_t)desc_list[i].remote_buf;
        d[i].len         = (size_t)desc_list[i].len;
    }
    *descs_p = d;
    return HIXL_SUCCESS;
}

/* A batch that ended FAILED or TIMEOUT puts the client in its failed
 * state, as CANN's. */
static hixl_status_t hixl_cs_batch_outcome(hixl_cs_client_t *c,
                                           hixl_status_t status)
{
    if ((status == HIXL_FAILED) || (status == HIXL_TIMEOUT)) {
        atomic_store(&c->failed, 1);
    }
    return status;
}

static HixlStatus hixl_cs_batch_sync(HixlClientHandle client_handle,
                                     hixl_transfer_op_t op, uint32_t list_num,
                                     const HixlOneSideOpDesc *desc_list,
                                     uint32_t timeout_ms)
{
    const char *what = (op == HIXL_WRITE) ? "HixlCSClientBatchPutSync" :
                       "HixlCSClientBatchGetSync";
    hixl_transfer_op_desc_t *d;
    hixl_status_t status;

    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    status = hixl_cs_batch_prepare(c, what, list_num, desc_list, &d);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hixl_transfer_sync(c->engine, c->server, op, d, list_num,
                                hixl_cs_ms(timeout_ms));
    free(d);
    return hixl_cs_batch_outcome(c, status);
}

static HixlStatus hixl_cs_batch_async(HixlClientHandle client_handle,
                                      hixl_transfer_op_t op, uint32_t list_num,
                                      const HixlOneSideOpDesc *desc_list,
                                      CompleteHandle *complete_handle)
{
    const char *what = (op == HIXL_WRITE) ? "HixlCSClientBatchPutAsync" :
                       "HixlCSClientBatchGetAsync";
    hixl_transfer_op_desc_t *d;
    hixl_status_t status;
    hixl_req_t req = NULL;

    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    if (complete_handle == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s: complete_handle is "
                                 "NULL", what);
    }
    status = hixl_cs_batch_prepare(c, what, list_num, desc_list, &d);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (atomic_fetch_add(&c->pending, 1) >= HIXL_CS_MAX_PENDING) {
        atomic_fetch_sub(&c->pending, 1);
        free(d);
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "%s: %u batches "
                                 "are not queried yet (the limit); query "
                                 "them with HixlCSClientQueryCompleteStatus",
                                 what, HIXL_CS_MAX_PENDING);
    }
    status = hixl_transfer_async(c->engine, c->server, op, d, list_num, NULL,
                                 &req);
    free(d);
    if (status != HIXL_SUCCESS) {
        atomic_fetch_sub(&c->pending, 1);
        return hixl_cs_batch_outcome(c, status);
    }
    *complete_handle = req;
    return HIXL_SUCCESS;
}

HixlStatus HixlCSClientBatchPutAsync(HixlClientHandle client_handle,
                                     uint32_t list_num,
                                     const HixlOneSideOpDesc *desc_list,
                                     CompleteHandle *complete_handle)
{
    return hixl_cs_batch_async(client_handle, HIXL_WRITE, list_num, desc_list,
                               complete_handle);
}

HixlStatus HixlCSClientBatchGetAsync(HixlClientHandle client_handle,
                                     uint32_t list_num,
                                     const HixlOneSideOpDesc *desc_list,
                                     CompleteHandle *complete_handle)
{
    return hixl_cs_batch_async(client_handle, HIXL_READ, list_num, desc_list,
                               complete_handle);
}

HixlStatus HixlCSClientBatchPutSync(HixlClientHandle client_handle,
                                    uint32_t list_num,
                                    const HixlOneSideOpDesc *desc_list,
                                    uint32_t timeout_ms)
{
    return hixl_cs_batch_sync(client_handle, HIXL_WRITE, list_num, desc_list,
                              timeout_ms);
}

HixlStatus HixlCSClientBatchGetSync(HixlClientHandle client_handle,
                                    uint32_t list_num,
                                    const HixlOneSideOpDesc *desc_list,
                                    uint32_t timeout_ms)
{
    return hixl_cs_batch_sync(client_handle, HIXL_READ, list_num, desc_list,
                              timeout_ms);
}

HixlStatus HixlCSClientQueryCompleteStatus(HixlClientHandle client_handle,
                                           CompleteHandle complete_handle,
                                           HixlCompleteStatus *complete_status)
{
    hixl_transfer_status_t st = HIXL_TRANSFER_FAILED;
    hixl_status_t status;

    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    if ((complete_handle == NULL) || (complete_status == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                                 (complete_handle == NULL) ?
                                 "complete_handle" : "complete_status");
    }
    status = hixl_get_transfer_status(c->engine, complete_handle, &st);
    if (status != HIXL_SUCCESS) {
        return status;   /* unknown, or reported already */
    }
    *complete_status = (HixlCompleteStatus)st;   /* the same order */
    if (st != HIXL_TRANSFER_WAITING) {
        atomic_fetch_sub(&c->pending, 1);
        hixl_cs_batch_outcome(c,
                              (st == HIXL_TRANSFER_COMPLETED) ? HIXL_SUCCESS :
                              (st == HIXL_TRANSFER_TIMEOUT) ? HIXL_TIMEOUT :
                              HIXL_FAILED);
    }
    return HIXL_SUCCESS;
}

HixlStatus HixlCSClientDestroy(HixlClientHandle client_handle)
{
    hixl_status_t status;

    HIXL_CS_CLIENT_OR_RETURN(c, client_handle);
    hixl_cs_live_del(c);
    status = hixl_finalize(c->engine);
    hixl_cs_regions_fini(&c->regions);
    hixl_cs_table_free(&c->table);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return status;
}
