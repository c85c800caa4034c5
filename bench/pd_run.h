/*
 * bench/pd_pipeline internals: configuration, the pipe channel between the
 * prefill and the decode process, and the two sides' entry points.
 */
#ifndef HIXL_BENCH_PD_RUN_H_
#define HIXL_BENCH_PD_RUN_H_

#include "pd_kv.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

enum { PD_PIPELINED, PD_BULK, PD_STAGED, PD_NMODES };
#define PD_QUIT 0xffffffffu

typedef struct pd_config {
    pd_shape_t  shape;
    const char *preset;
    unsigned    modes;               /* bit per mode */
    double      prefill_compute_ms;  /* slept per layer before posting it */
    double      decode_compute_ms;   /* modelled per layer at decode */
    int         timeout_ms;
    int         quiet;
} pd_config_t;

/* Two pipes: prefill -> decode and decode -> prefill. */
typedef struct pd_channel {
    int p2d[2];
    int d2p[2];
    int rd;
    int wr;
} pd_channel_t;

/* Messages on the channel. */
typedef struct pd_hello {
    char     engine[128];
    uint64_t dst;          /* decode's registered KV cache */
    uint16_t staged_port;  /* decode's TCP port for the staged mode */
} pd_hello_t;

typedef struct pd_start {
    uint32_t mode;         /* or PD_QUIT */
    uint64_t run;          /* pattern seed and layer-signal generation */
} pd_start_t;

typedef struct pd_result {
    int32_t  failed;
    uint64_t bad_bytes;
    char     error[256];
    /* followed by shape.layers uint64_t ready times (CLOCK_MONOTONIC ns) */
} pd_result_t;

/* What the prefill side keeps of a mode's run for the report. */
typedef struct pd_mode_result {
    int       ran;
    uint64_t  t0;          /* prefill started layer 0 */
    uint64_t  posted;      /* prefill posted the last layer */
    uint64_t *ready;       /* per layer, at decode */
    uint64_t  bad_bytes;
} pd_mode_result_t;

const char *pd_mode_name(unsigned mode);
uint64_t pd_now_ns(void);
void pd_sleep_ms(double ms);
/* Page-aligned, pre-faulted memory (so page faults are not timed). */
void *pd_alloc(size_t bytes);
void pd_free(void *p, size_t bytes);

int pd_channel_open(pd_channel_t *ch);
void pd_channel_side(pd_channel_t *ch, int decode);
int pd_send(pd_channel_t *ch, const void *buf, size_t len);
int pd_recv(pd_channel_t *ch, void *buf, size_t len);
int pd_send_all(int fd, const void *buf, size_t len);
int pd_recv_all(int fd, void *buf, size_t len);

int pd_prefill_main(const pd_config_t *cfg, pd_channel_t *ch);
int pd_decode_main(const pd_config_t *cfg, pd_channel_t *ch);

void pd_report(const pd_config_t *cfg, const pd_mode_result_t *results);

#endif
