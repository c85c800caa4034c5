/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: what the two bare-UCX modules share (fan_ucx.c, the endpoint cost;
 * fan_ucx_xfer.c, the transfer baseline): the worker address and rkey as
 * text on the coordinator's lines, and an endpoint made as a hixl engine
 * makes one.
 */
#ifndef HIXL_BENCH_FAN_UCX_H_
#define HIXL_BENCH_FAN_UCX_H_

#include <stddef.h>
#include <stdint.h>
#include <ucp/api/ucp.h>

/* A UCP context with these features and one worker in this thread mode,
 * as the engines set them up; 0, or -1 after an ERR line on fd. */
int fan_ucx_open(int fd, uint64_t features, ucs_thread_mode_t mode,
                 ucp_context_h *ctx, ucp_worker_h *worker);
/* What a target announces: its worker address and a region's rkey, as hex
 * for a coordinator line. */
typedef struct fan_ucx_card {
    char *addr_hex;
    char *rkey_hex;
} fan_ucx_card_t;

/* 0, or -1 (nothing to free then). */
int  fan_ucx_card_make(ucp_context_h ctx, ucp_worker_h worker,
                       ucp_mem_h memh, fan_ucx_card_t *card);
void fan_ucx_card_free(fan_ucx_card_t *card);

/* len bytes as lower-case hex (malloc'ed), or NULL */
char *fan_hex(const void *p, size_t len);
/* The first n characters of s as bytes (at most max): 0, or -1 when they
 * are not hex pairs or do not fit. */
int fan_unhex_n(const char *s, size_t n, uint8_t *out, size_t max,
                size_t *len);
/* An endpoint to a worker address in error mode PEER, or NONE where no
 * transport can report a peer's failure (hixl.ErrorMode auto). */
ucs_status_t fan_ucx_ep(ucp_worker_h worker, const ucp_address_t *addr,
                        ucp_ep_h *ep);

#endif
