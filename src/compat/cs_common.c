/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared parts of the HixlCS server and client: region records, engine
 * names and options, polling.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cs_common.h"
#include "cs_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void hixl_cs_regions_init(hixl_cs_regions_t *r)
{
    pthread_mutex_init(&r->lock, NULL);
    r->head  = NULL;
    r->count = 0;
}

void hixl_cs_regions_fini(hixl_cs_regions_t *r)
{
    hixl_cs_region_t *reg, *next;

    for (reg = r->head; reg != NULL; reg = next) {
        next = reg->next;
        free(reg->tag);
        free(reg);
    }
    r->head  = NULL;
    r->count = 0;
    pthread_mutex_destroy(&r->lock);
}

hixl_status_t hixl_cs_region_add(hixl_engine_t *engine, hixl_cs_regions_t *r,
                                 const char *tag, const CommMem *mem,
                                 MemHandle *handle_p)
{
    size_t tag_len = (tag != NULL) ? strlen(tag) : 0;
    hixl_mem_desc_t desc;
    hixl_mem_type_t type;
    hixl_status_t status;
    hixl_cs_region_t *reg;

    if ((mem->type != COMM_MEM_TYPE_DEVICE) &&
        (mem->type != COMM_MEM_TYPE_HOST)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "mem->type %d is "
                                 "neither COMM_MEM_TYPE_DEVICE nor "
                                 "COMM_MEM_TYPE_HOST", (int)mem->type);
    }
    if (tag_len > HIXL_CS_TAG_MAX) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "mem_tag is %zu bytes, "
                                 "limit %u", tag_len, HIXL_CS_TAG_MAX);
    }
    type = (mem->type == COMM_MEM_TYPE_DEVICE) ? HIXL_MEM_DEVICE :
           HIXL_MEM_HOST;
    reg  = calloc(1, sizeof(*reg));
    if ((reg == NULL) || ((reg->tag = malloc(tag_len + 1)) == NULL)) {
        free(reg);
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    memcpy(reg->tag, tag ? tag : "", tag_len + 1);
    reg->tag_len = tag_len;
    reg->mem     = *mem;
    pthread_mutex_lock(&r->lock);
    if (r->count >= HIXL_CS_MAX_REGIONS) {
        pthread_mutex_unlock(&r->lock);
        free(reg->tag);
        free(reg);
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "%u regions are "
                                 "registered already, the limit",
                                 HIXL_CS_MAX_REGIONS);
    }
    desc.addr = (uintptr_t)mem->addr;
    desc.len  = (size_t)mem->size;
    status    = hixl_register_mem(engine, &desc, type, &reg->handle);
    if (status != HIXL_SUCCESS) {
        pthread_mutex_unlock(&r->lock);
        free(reg->tag);
        free(reg);
        return status;
    }
    reg->next = r->head;
    r->head   = reg;
    r->count++;
    pthread_mutex_unlock(&r->lock);
    *handle_p = reg;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_cs_region_remove(hixl_engine_t *engine, hixl_cs_regions_t *r,
                                    MemHandle handle)
{
    hixl_cs_region_t **pp, *reg = NULL;
    hixl_status_t status;

    pthread_mutex_lock(&r->lock);
    for (pp = &r->head; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == handle) {
            reg = *pp;
            break;
        }
    }
    if (reg == NULL) {
        pthread_mutex_unlock(&r->lock);
        return hixl_compat_error(HIXL_PARAM_INVALID, "mem_handle %p was not "
                                 "returned by this handle's RegMem, or is "
                                 "unregistered already", handle);
    }
    status = hixl_deregister_mem(engine, reg->handle);
    if (status == HIXL_SUCCESS) {
        *pp = reg->next;
        r->count--;
        free(reg->tag);
        free(reg);
    }
    pthread_mutex_unlock(&r->lock);
    return status;
}

hixl_status_t hixl_cs_name(char *buf, size_t len, const char *ip, uint32_t port)
{
    int n = (strchr(ip, ':') != NULL) ? snprintf(buf, len, "[%s]:%u", ip, port)
                                      : snprintf(buf, len, "%s:%u", ip, port);

    if ((n < 0) || ((size_t)n >= len) || (n > HIXL_ENGINE_NAME_MAX)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "address \"%s\" is too "
                                 "long for an engine name", ip);
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_cs_local_ip(const char *ip, char *buf, size_t len)
{
    struct addrinfo hints, *ai = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    const void *a;
    int fd, rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_flags    = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_socktype = SOCK_DGRAM;
    rc = getaddrinfo(ip, "9", &hints, &ai);
    if (rc != 0) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "server_ip \"%s\" is "
                                 "not a numeric IPv4 or IPv6 address: %s", ip,
                                 gai_strerror(rc));
    }
    fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    rc = (fd < 0) ? -1 : connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc == 0) {
        rc = getsockname(fd, (struct sockaddr*)&ss, &sl);
    }
    freeaddrinfo(ai);
    if (fd >= 0) {
        close(fd);
    }
    if (rc != 0) {
        return hixl_compat_error(HIXL_FAILED, "no route to server_ip \"%s\": "
                                 "%s", ip, strerror(errno));
    }
    a = (ss.ss_family == AF_INET6) ?
        (const void*)&((struct sockaddr_in6*)&ss)->sin6_addr :
        (const void*)&((struct sockaddr_in*)&ss)->sin_addr;
    if (inet_ntop(ss.ss_family, a, buf, (socklen_t)len) == NULL) {
        return hixl_compat_error(HIXL_FAILED, "inet_ntop: %s",
                                 strerror(errno));
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_cs_engine(const char *name, int client,
                             hixl_engine_t **engine_p)
{
    hixl_option_t opts[2] = {
        {"hixl.MaxNotifySize", HIXL_CS_NOTIFY_MAX},
        {"hixl.ListenEphemeral", "1"},
    };

    return hixl_initialize(name, opts, client ? 2 : 1, engine_p);
}

/* Polling answers: short pauses while they are likely to come soon, then
 * longer ones, so that a waiting caller costs little CPU. */
#define HIXL_CS_BACKOFF_SHORT_POLLS 100
#define HIXL_CS_BACKOFF_SHORT_NS    100000L    /* 0.1 ms */
#define HIXL_CS_BACKOFF_LONG_NS     2000000L   /* 2 ms */

void hixl_cs_backoff(unsigned *idle)
{
    struct timespec ts = {0, (*idle < HIXL_CS_BACKOFF_SHORT_POLLS) ?
                             HIXL_CS_BACKOFF_SHORT_NS :
                             HIXL_CS_BACKOFF_LONG_NS};

    if (*idle < HIXL_CS_BACKOFF_SHORT_POLLS) {
        (*idle)++;
    }
    nanosleep(&ts, NULL);
}

/* Few handles live at once: a list is enough. */
typedef struct hixl_cs_live {
    struct hixl_cs_live *next;
    void                *obj;
    int                  kind;
} hixl_cs_live_t;

static pthread_mutex_t hixl_cs_live_lock = PTHREAD_MUTEX_INITIALIZER;
static hixl_cs_live_t     *hixl_cs_live_head;

int hixl_cs_live_add(void *obj, int kind)
{
    hixl_cs_live_t *l = malloc(sizeof(*l));

    if (l == NULL) {
        return -1;
    }
    l->obj  = obj;
    l->kind = kind;
    pthread_mutex_lock(&hixl_cs_live_lock);
    l->next       = hixl_cs_live_head;
    hixl_cs_live_head = l;
    pthread_mutex_unlock(&hixl_cs_live_lock);
    return 0;
}

int hixl_cs_live_has(const void *obj, int kind)
{
    hixl_cs_live_t *l;
    int found = 0;

    pthread_mutex_lock(&hixl_cs_live_lock);
    for (l = hixl_cs_live_head; (l != NULL) && !found; l = l->next) {
        found = (l->obj == obj) && (l->kind == kind);
    }
    pthread_mutex_unlock(&hixl_cs_live_lock);
    return found;
}

void hixl_cs_live_del(void *obj)
{
    hixl_cs_live_t **pp, *l;

    pthread_mutex_lock(&hixl_cs_live_lock);
    for (pp = &hixl_cs_live_head; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->obj == obj) {
            l   = *pp;
            *pp = l->next;
            free(l);
            break;
        }
    }
    pthread_mutex_unlock(&hixl_cs_live_lock);
}
