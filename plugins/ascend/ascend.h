/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Ascend memory plugin's engine context, shared by its modules:
 *   ascend_plugin.c  ops table, probe/open/close, detect, host memory
 *   ascend_stream.c  per-device context and stream, copies, event tokens
 *   ascend_ipc.c     export (reg), the blob peers get, import
 */
#ifndef HIXL_ASCEND_H_
#define HIXL_ASCEND_H_

#include "ascend_acl.h"
#include "mem_plugin.h"

#define ASCEND_MAX_DEVICES 64

/* A completion token: an event recorded on a device's stream. */
typedef struct ascend_token {
    struct ascend_token *next;     /* free list of its device */
    aclrtEvent           event;
    int32_t              device;
} ascend_token_t;

typedef struct ascend_dev {
    int             ready;          /* context and stream made */
    aclrtContext    context;
    aclrtStream     stream;         /* owned by the plugin */
    ascend_token_t *free_tokens;
    uint64_t        peer_on[ASCEND_MAX_DEVICES / 64];   /* access enabled */
} ascend_dev_t;

typedef struct ascend_ctx {
    const hixl_mem_host_t *host;
    const ascend_acl_t    *acl;
    uint32_t               ndev;
    int32_t                pid;     /* bare tgid, for the blob */
    ascend_dev_t           dev[ASCEND_MAX_DEVICES];
} ascend_ctx_t;

/* Report a failed ACL call through the host: FAILED (or `status`). */
hixl_status_t ascend_fail(const ascend_ctx_t *ctx, hixl_status_t status,
                          const char *call, aclError rc);

/* ---- ascend_stream.c ---- */
/* Make dev's context current on this thread (creating its context and
 * stream on first use); *saved_p receives the thread's previous context
 * (NULL if none) for ascend_device_leave. */
hixl_status_t ascend_device_enter(ascend_ctx_t *ctx, int32_t dev,
                                  aclrtContext *saved_p);
void ascend_device_leave(ascend_ctx_t *ctx, aclrtContext saved);
hixl_status_t ascend_copy(void *ctx, const hixl_mem_copy_t *copy);
hixl_status_t ascend_mark(void *ctx, int32_t device, void **token_p);
hixl_status_t ascend_test(void *ctx, void *token, int *done_p);
/* Wait for every stream, release streams and tokens. */
void ascend_streams_close(ascend_ctx_t *ctx);

/* ---- ascend_ipc.c ---- */
hixl_status_t ascend_reg(void *ctx, void *addr, size_t len,
                         const hixl_mem_attr_t *attr, void **reg_p,
                         void *blob, size_t *blob_len);
void ascend_dereg(void *ctx, void *reg);
hixl_status_t ascend_unpack(void *ctx, const void *blob, size_t blob_len,
                            void **rmem_p, uint64_t *len_p);
hixl_status_t ascend_import(void *ctx, void *rmem, void **addr_p,
                            hixl_mem_attr_t *attr);
void ascend_release(void *ctx, void *rmem);

#endif
