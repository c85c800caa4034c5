/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline internals: configuration, the two roles' entry points
 * and what they share (memory, the notify link, sockets, report; time and
 * whole reads and writes are bench/common's).
 *
 * The roles talk only through the library: prefill connects to decode's
 * engine and the two exchange pd_msg messages as hixl notifies (pd_msg.h).
 * The one-command loopback form forks a decode process and tells the
 * prefill side its engine name through a pipe, nothing else.
 */
#ifndef HIXL_BENCH_PD_RUN_H_
#define HIXL_BENCH_PD_RUN_H_

#include "common/clock.h"
#include "common/oob.h"
#include "pd_kv.h"
#include "pd_msg.h"

#include <hixl/hixl.h>

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

enum { PD_PIPELINED, PD_BULK, PD_STAGED, PD_NMODES };

typedef enum pd_role {
    PD_ROLE_LOOPBACK,   /* both, forked, on 127.0.0.1 */
    PD_ROLE_DECODE,
    PD_ROLE_PREFILL
} pd_role_t;

typedef struct pd_config {
    pd_role_t   role;
    /* decode (and loopback): the KV cache it holds */
    pd_shape_t  shape;
    const char *preset;
    const char *listen;              /* decode's engine name */
    unsigned    staged_port;         /* 0: the kernel picks */
    double      decode_compute_ms;   /* modelled per layer at decode */
    int         no_memcpy;           /* skip measuring the memcpy limit */
    int         name_fd;             /* loopback: decode writes its name */
    /* prefill (and loopback): what it runs */
    const char *decode;              /* decode's engine name */
    const char *name;                /* own engine name; NULL: derived */
    unsigned    modes;               /* bit per mode */
    double      prefill_compute_ms;  /* slept per layer before posting it */
    int         loopback;            /* decode prints the results */
    /* both */
    int         timeout_ms;          /* any one wait for the peer */
    int         peer_wait_ms;        /* for the peer to appear */
    int         quiet;
} pd_config_t;

/* What the decode side keeps of a mode's run for the report. */
typedef struct pd_mode_result {
    int       ran;
    int       failed;
    uint64_t  t0;          /* decode said GO (CLOCK_MONOTONIC ns) */
    uint64_t *ready;       /* per layer, when decode saw it complete */
    uint64_t  bad_bytes;
} pd_mode_result_t;

/* One core's memcpy of the cache's bytes (pd_memcpy.c). */
typedef struct pd_memcpy {
    int    measured;
    size_t bytes;
    double cold_gbs;       /* the first copy into the fresh KV cache */
    double warm_gbs;       /* the same copy again */
} pd_memcpy_t;

/* What decode learned about its prefill (HELLO), for the report. */
typedef struct pd_session {
    char     prefill[HIXL_ENGINE_NAME_MAX + 1];
    unsigned modes;
    double   prefill_compute_ms;
} pd_session_t;

/* A link to the peer: pd_msg messages as hixl notifies (pd_link.c). */
#define PD_LINK_INBOX 16
typedef struct pd_link {
    hixl_engine_t *engine;
    char           peer[HIXL_ENGINE_NAME_MAX + 1];   /* "": first speaker */
    struct {
        uint8_t *buf;
        size_t   len;
    } inbox[PD_LINK_INBOX];
    unsigned head;
    unsigned count;
} pd_link_t;

const char *pd_mode_name(unsigned mode);
/* Page-aligned, pre-faulted memory (so page faults are not timed). */
void *pd_alloc(size_t bytes);
void pd_free(void *p, size_t bytes);
void pd_print_shape(const char *who, const pd_shape_t *s);

int pd_link_send(pd_link_t *l, const uint8_t *buf, size_t len,
                 int timeout_ms);
int pd_link_recv(pd_link_t *l, pd_msg_t *msg, int timeout_ms);
int pd_link_expect(pd_link_t *l, pd_msg_t *msg, pd_msg_type_t type,
                   int timeout_ms);
void pd_link_clear(pd_link_t *l);

int pd_name_split(const char *name, char *host, size_t hostlen,
                  unsigned *port);
int pd_local_ip_toward(const char *remote_host, char *out, size_t outlen);
int pd_tcp_listen(const char *host, unsigned port, unsigned *bound_port);
int pd_tcp_accept(int listen_fd, int timeout_ms);
int pd_tcp_connect(const char *host, unsigned port, int timeout_ms);

/* Copy `bytes` into dst (decode's new KV cache) twice: cold, then warm. */
int pd_memcpy_measure(void *dst, size_t bytes, pd_memcpy_t *out);
/* Refuse a cache that cannot fit: `copies` of it plus staging. */
int pd_check_memory(const pd_shape_t *s, double copies);

/* Command line (pd_args.c): 0, or -1 after saying what is wrong. */
int pd_parse(int argc, char **argv, pd_config_t *cfg);
void pd_usage(FILE *f);

int pd_prefill_main(const pd_config_t *cfg);
int pd_decode_main(const pd_config_t *cfg);

void pd_report(const pd_config_t *cfg, const pd_session_t *session,
               const pd_memcpy_t *limit, const pd_mode_result_t *results);

#endif
