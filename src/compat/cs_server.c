/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * HixlCSServer*: a listening engine whose registered regions carry tags,
 * and a thread that answers clients' requests for the region table (a
 * HIXL_CS_REQ_NAME notify in, a HIXL_CS_TABLE_NAME notify back to the sender).
 *
 * The table is built from the records at the moment of each request, so a
 * client always sees what is registered when it asks.  The thread starts
 * at HixlCSServerListen: before it, a client's connect prefetch waits for
 * an answer as it would wait for CANN's listener.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cs_common.h"
#include "cs_msg.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Give a client this long to take the table before it is dropped (the
 * client asks again). */
#define HIXL_CS_REPLY_TIMEOUT_MS 2000

typedef struct hixl_cs_server {
    hixl_engine_t    *engine;
    hixl_cs_regions_t regions;
    uint32_t          port;
    pthread_mutex_t   lock;          /* listening, thread */
    int               listening;
    uint32_t          backlog;
    pthread_t         thread;
    atomic_int        stop;
} hixl_cs_server_t;

#define HIXL_CS_KIND_SERVER 1

static hixl_cs_server_t *hixl_cs_server(HixlServerHandle handle)
{
    return hixl_cs_live_has(handle, HIXL_CS_KIND_SERVER) ? handle : NULL;
}

#define HIXL_CS_SERVER_OR_RETURN(_s, _h) \
    hixl_cs_server_t *_s = hixl_cs_server(_h); \
    do { \
        if (_s == NULL) { \
            return hixl_compat_error(HIXL_PARAM_INVALID, "server_handle %p " \
                                     "is not from HixlCSServerCreate", \
                                     (void*)(_h)); \
        } \
    } while (0)

/* Answer one table request from `remote`. */
static void hixl_cs_server_answer(hixl_cs_server_t *s, const char *remote,
                                  uint64_t id)
{
    hixl_notify_desc_t nd;
    hixl_cs_entry_t *e = NULL;
    hixl_cs_region_t *reg;
    uint8_t *msg = NULL;
    uint32_t n = 0;
    size_t len;

    pthread_mutex_lock(&s->regions.lock);
    e = calloc(s->regions.count ? s->regions.count : 1, sizeof(*e));
    for (reg = s->regions.head; (e != NULL) && (reg != NULL);
         reg = reg->next) {
        e[n].type    = (int32_t)reg->mem.type;
        e[n].addr    = (uint64_t)(uintptr_t)reg->mem.addr;
        e[n].size    = reg->mem.size;
        e[n].tag     = reg->tag;
        e[n].tag_len = reg->tag_len;
        ++n;
    }
    len = hixl_cs_table_len(e, n);
    msg = (e != NULL) ? malloc(len) : NULL;
    if (msg != NULL) {
        hixl_cs_table_encode(msg, id, e, n);
    }
    pthread_mutex_unlock(&s->regions.lock);
    free(e);
    if (msg == NULL) {
        hixl_compat_debug("HixlCS server: out of memory for the table %s "
                          "asked for", remote);
        return;
    }
    nd.name    = HIXL_CS_TABLE_NAME;
    nd.msg     = msg;
    nd.msg_len = len;
    if (hixl_send_notify(s->engine, remote, &nd, HIXL_CS_REPLY_TIMEOUT_MS) !=
        HIXL_SUCCESS) {
        hixl_compat_debug("HixlCS server: table to %s: %s", remote,
                          hixl_last_error());
    }
    free(msg);
}

static void *hixl_cs_server_loop(void *arg)
{
    hixl_cs_server_t *s = arg;
    hixl_notify_t *got;
    unsigned idle = 0;
    size_t count, i;
    uint64_t id;

    while (!atomic_load(&s->stop)) {
        if ((hixl_get_notifies(s->engine, &got, &count) != HIXL_SUCCESS) ||
            (count == 0)) {
            hixl_cs_backoff(&idle);
            continue;
        }
        idle = 0;
        for (i = 0; i < count; ++i) {
            if (!strcmp(got[i].name, HIXL_CS_REQ_NAME) &&
                (hixl_cs_req_decode(got[i].msg, got[i].msg_len, &id) == 0)) {
                hixl_cs_server_answer(s, got[i].remote, id);
            }
        }
        hixl_release_notifies(got, count);
    }
    return NULL;
}

HixlStatus HixlCSServerCreate(const HixlServerDesc *server_desc,
                              const HixlServerConfig *config,
                              HixlServerHandle *server_handle)
{
    char name[HIXL_ENGINE_NAME_MAX + 1];
    hixl_status_t status;
    hixl_cs_server_t *s;

    if (server_handle == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "server_handle is NULL");
    }
    *server_handle = NULL;
    if ((server_desc == NULL) || (server_desc->server_ip == NULL) ||
        (config == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                                 (server_desc == NULL) ? "server_desc" :
                                 (config == NULL) ? "config" :
                                 "server_desc->server_ip");
    }
    if (server_desc->server_port > 65535) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "server_port %u is not "
                                 "in [0, 65535]", server_desc->server_port);
    }
    status = hixl_compat_cs_config(config->global_resource_config, 1);
    if (status == HIXL_SUCCESS) {
        /* port 0: no listening, as in CANN: a client-only engine */
        status = (server_desc->server_port != 0) ?
                 hixl_cs_name(name, sizeof(name), server_desc->server_ip,
                              server_desc->server_port) :
                 ((strlen(server_desc->server_ip) < sizeof(name)) ?
                  HIXL_SUCCESS : hixl_compat_error(HIXL_PARAM_INVALID,
                                                   "server_ip is too long"));
        if ((status == HIXL_SUCCESS) && (server_desc->server_port == 0)) {
            snprintf(name, sizeof(name), "%s", server_desc->server_ip);
        }
    }
    if (status != HIXL_SUCCESS) {
        return status;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    status = hixl_cs_engine(name, 0, &s->engine);
    if (status != HIXL_SUCCESS) {
        free(s);
        return status;
    }
    if (hixl_cs_live_add(s, HIXL_CS_KIND_SERVER) != 0) {
        hixl_finalize(s->engine);
        free(s);
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    hixl_cs_regions_init(&s->regions);
    pthread_mutex_init(&s->lock, NULL);
    atomic_init(&s->stop, 0);
    s->port        = server_desc->server_port;
    *server_handle = s;
    hixl_compat_debug("HixlCS server %s created (%u endpoints given, not "
                      "used over UCX)", hixl_engine_name(s->engine),
                      server_desc->endpoint_list_num);
    return HIXL_SUCCESS;
}

HixlStatus HixlCSServerRegMem(HixlServerHandle server_handle,
                              const char *mem_tag, const CommMem *mem,
                              MemHandle *mem_handle)
{
    HIXL_CS_SERVER_OR_RETURN(s, server_handle);
    if ((mem == NULL) || (mem_handle == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                                 (mem == NULL) ? "mem" : "mem_handle");
    }
    return hixl_cs_region_add(s->engine, &s->regions, mem_tag, mem, mem_handle);
}

HixlStatus HixlCSServerListen(HixlServerHandle server_handle,
                              uint32_t backlog)
{
    HixlStatus status = HIXL_SUCCESS;

    HIXL_CS_SERVER_OR_RETURN(s, server_handle);
    pthread_mutex_lock(&s->lock);
    if (s->listening) {
        status = hixl_compat_error(HIXL_FAILED, "server %s listens already",
                                   hixl_engine_name(s->engine));
    } else if (s->port == 0) {
        s->listening = 1;   /* nothing to listen on: server_port 0 */
    } else if (pthread_create(&s->thread, NULL, hixl_cs_server_loop, s) != 0) {
        status = hixl_compat_error(HIXL_FAILED, "cannot start the server's "
                                   "thread");
    } else {
        s->listening = 2;
        s->backlog   = backlog;   /* the engine's listener takes any number */
    }
    pthread_mutex_unlock(&s->lock);
    return status;
}

HixlStatus HixlCSServerUnregMem(HixlServerHandle server_handle,
                                MemHandle mem_handle)
{
    HIXL_CS_SERVER_OR_RETURN(s, server_handle);
    if (mem_handle == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "mem_handle is NULL");
    }
    return hixl_cs_region_remove(s->engine, &s->regions, mem_handle);
}

/* Frees the server whatever happens, as CANN's does. */
HixlStatus HixlCSServerDestroy(HixlServerHandle server_handle)
{
    hixl_status_t status;

    HIXL_CS_SERVER_OR_RETURN(s, server_handle);
    hixl_cs_live_del(s);
    atomic_store(&s->stop, 1);
    if (s->listening == 2) {
        pthread_join(s->thread, NULL);
    }
    status   = hixl_finalize(s->engine);
    hixl_cs_regions_fini(&s->regions);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return status;
}
