/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the HixlCS server and client share (cs_common.c): their engines'
 * names and options, and the table of regions registered through them,
 * whose records are the MemHandles the application holds.
 */
#ifndef HIXL_COMPAT_CS_COMMON_H_
#define HIXL_COMPAT_CS_COMMON_H_

#include "compat.h"

#include <cs/hixl_cs.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A region registered through HixlCS*RegMem; a MemHandle points at one. */
typedef struct hixl_cs_region {
    struct hixl_cs_region *next;
    hixl_mem_handle_t      handle;
    CommMem                mem;
    char                  *tag;        /* "" when registered without one */
    size_t                 tag_len;
} hixl_cs_region_t;

typedef struct hixl_cs_regions {
    pthread_mutex_t   lock;
    hixl_cs_region_t *head;
    uint32_t          count;
} hixl_cs_regions_t;

HIXL_COMPAT_HIDDEN void hixl_cs_regions_init(hixl_cs_regions_t *r);
/* Free the records (the engine's finalize deregisters the memory). */
HIXL_COMPAT_HIDDEN void hixl_cs_regions_fini(hixl_cs_regions_t *r);

/* Register mem on engine and record it under tag (may be NULL). */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_cs_region_add(hixl_engine_t *engine,
                                                    hixl_cs_regions_t *r,
                                                    const char *tag,
                                                    const CommMem *mem,
                                                    MemHandle *handle_p);
/* Deregister a record of r; PARAM_INVALID for a handle r does not hold. */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_cs_region_remove(hixl_engine_t *engine,
                                                       hixl_cs_regions_t *r,
                                                       MemHandle handle);

/* "ip:port", or "[ip]:port" for IPv6. */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_cs_name(char *buf, size_t len,
                                              const char *ip, uint32_t port);

/* This host's address on the route to ip (a UDP socket connected there;
 * nothing is sent). */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_cs_local_ip(const char *ip, char *buf,
                                                  size_t len);

/* An engine for a HixlCS server or client: name, plus the options every
 * CS engine needs (notifies large enough for a region table) and, for a
 * client, a port of its own so that names stay unique. */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_cs_engine(const char *name, int client,
                                                hixl_engine_t **engine_p);

/* The server and client objects alive, so that a handle the application
 * passes is checked without reading through it (a destroyed or foreign
 * one is PARAM_INVALID, not a crash).  kind tells servers from clients. */
HIXL_COMPAT_HIDDEN int hixl_cs_live_add(void *obj, int kind);
HIXL_COMPAT_HIDDEN int hixl_cs_live_has(const void *obj, int kind);
HIXL_COMPAT_HIDDEN void hixl_cs_live_del(void *obj);

/* A uint32_t timeout in ms as the core API takes it. */
static inline int32_t hixl_cs_ms(uint32_t ms)
{
    return (ms > (uint32_t)INT32_MAX) ? INT32_MAX : (int32_t)ms;
}

/* Sleep between polls: short while something just happened, longer when
 * idle, so a waiting server costs little. */
HIXL_COMPAT_HIDDEN void hixl_cs_backoff(unsigned *idle);

#endif
