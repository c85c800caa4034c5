/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device copies: one stream per device, owned by the plugin and created on
 * first use; completion through events recorded behind the copies
 * (aclrtRecordEvent + aclrtQueryEventStatus), so the library polls for
 * completion instead of blocking in aclrtSynchronizeStream.
 *
 * ACL's current context is per thread and the library calls us from the
 * application's threads: every call that needs a device context makes the
 * device's context current and puts the caller's back afterwards, so the
 * application's own ACL calls on that thread are not redirected.
 */
#include "ascend.h"

#include <stdlib.h>

hixl_status_t ascend_device_enter(ascend_ctx_t *ctx, int32_t dev,
                                  aclrtContext *saved_p)
{
    const ascend_acl_t *acl = ctx->acl;
    aclrtContext cur = NULL;
    ascend_dev_t *d;
    aclError rc;

    if ((dev < 0) || ((uint32_t)dev >= ctx->ndev) ||
        (dev >= ASCEND_MAX_DEVICES)) {
        return ctx->host->error(HIXL_PARAM_INVALID, "Ascend device %d does "
                                "not exist (the runtime reports %u)", dev,
                                ctx->ndev);
    }
    if (acl->get_current_context(&cur) != ACL_SUCCESS) {
        cur = NULL;   /* this thread has none yet */
    }
    *saved_p = cur;
    d        = &ctx->dev[dev];
    if (d->ready) {
        if (cur == d->context) {
            return HIXL_SUCCESS;
        }
        rc = acl->set_current_context(d->context);
        return (rc == ACL_SUCCESS) ? HIXL_SUCCESS :
               ascend_fail(ctx, HIXL_FAILED, "aclrtSetCurrentContext", rc);
    }
    rc = acl->set_device(dev);
    if (rc != ACL_SUCCESS) {
        return ascend_fail(ctx, HIXL_FAILED, "aclrtSetDevice", rc);
    }
    rc = acl->get_current_context(&d->context);
    if (rc != ACL_SUCCESS) {
        return ascend_fail(ctx, HIXL_FAILED, "aclrtGetCurrentContext", rc);
    }
    rc = acl->create_stream(&d->stream);
    if (rc != ACL_SUCCESS) {
        return ascend_fail(ctx, HIXL_RESOURCE_EXHAUSTED, "aclrtCreateStream",
                           rc);
    }
    d->ready = 1;
    return HIXL_SUCCESS;
}

void ascend_device_leave(ascend_ctx_t *ctx, aclrtContext saved)
{
    if (saved != NULL) {
        ctx->acl->set_current_context(saved);
    }
}

/* Let exec's copy engine reach `other`'s memory (once per pair). */
static hixl_status_t ascend_peer_enable(ascend_ctx_t *ctx, int32_t exec,
                                        int32_t other)
{
    ascend_dev_t *d = &ctx->dev[exec];
    int32_t can     = 0;
    aclError rc;

    if ((other < 0) || (other == exec) ||
        (d->peer_on[other / 64] & (1ull << (other % 64)))) {
        return HIXL_SUCCESS;
    }
    if ((uint32_t)other >= ctx->ndev) {
        return ctx->host->error(HIXL_PARAM_INVALID, "Ascend device %d does "
                                "not exist", other);
    }
    rc = ctx->acl->device_can_access_peer(&can, exec, other);
    if (rc != ACL_SUCCESS) {
        return ascend_fail(ctx, HIXL_FAILED, "aclrtDeviceCanAccessPeer", rc);
    }
    if (!can) {
        return ctx->host->error(HIXL_UNSUPPORTED, "Ascend device %d cannot "
                                "access device %d (aclrtDeviceCanAccessPeer)",
                                exec, other);
    }
    rc = ctx->acl->device_enable_peer_access(other, 0);
    if (rc != ACL_SUCCESS) {
        return ascend_fail(ctx, HIXL_FAILED, "aclrtDeviceEnablePeerAccess",
                           rc);
    }
    d->peer_on[other / 64] |= 1ull << (other % 64);
    return HIXL_SUCCESS;
}

hixl_status_t ascend_copy(void *arg, const hixl_mem_copy_t *c)
{
    ascend_ctx_t *ctx = arg;
    aclrtMemcpyKind kind;
    aclrtContext saved;
    hixl_status_t status;
    aclError rc;

    if ((c->src_device < 0) && (c->dst_device < 0)) {
        return ctx->host->error(HIXL_PARAM_INVALID, "host-to-host copy "
                                "given to the Ascend plugin");
    }
    if ((c->exec_device < 0) || ((c->exec_device != c->src_device) &&
                                 (c->exec_device != c->dst_device))) {
        return ctx->host->error(HIXL_PARAM_INVALID, "copy runs on device %d, "
                                "which holds neither side", c->exec_device);
    }
    kind = (c->src_device < 0) ? ACL_MEMCPY_HOST_TO_DEVICE :
           (c->dst_device < 0) ? ACL_MEMCPY_DEVICE_TO_HOST :
           ACL_MEMCPY_DEVICE_TO_DEVICE;
    status = ascend_device_enter(ctx, c->exec_device, &saved);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = ascend_peer_enable(ctx, c->exec_device, c->src_device);
    if (status == HIXL_SUCCESS) {
        status = ascend_peer_enable(ctx, c->exec_device, c->dst_device);
    }
    if (status == HIXL_SUCCESS) {
        rc = ctx->acl->memcpy_async(c->dst, c->len, c->src, c->len, kind,
                                    ctx->dev[c->exec_device].stream);
        if (rc != ACL_SUCCESS) {
            status = ascend_fail(ctx, HIXL_FAILED, "aclrtMemcpyAsync", rc);
        }
    }
    ascend_device_leave(ctx, saved);
    return status;
}

hixl_status_t ascend_mark(void *arg, int32_t device, void **token_p)
{
    ascend_ctx_t *ctx = arg;
    ascend_token_t *t;
    aclrtContext saved;
    hixl_status_t status;
    aclError rc;

    status = ascend_device_enter(ctx, device, &saved);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    t = ctx->dev[device].free_tokens;
    if (t != NULL) {
        ctx->dev[device].free_tokens = t->next;
    } else {
        t = calloc(1, sizeof(*t));
        if (t == NULL) {
            status = ctx->host->error(HIXL_RESOURCE_EXHAUSTED, "out of "
                                      "memory for an event");
            goto out;
        }
        t->device = device;
        rc        = ctx->acl->create_event(&t->event);
        if (rc != ACL_SUCCESS) {
            free(t);
            status = ascend_fail(ctx, HIXL_RESOURCE_EXHAUSTED,
                                 "aclrtCreateEvent", rc);
            goto out;
        }
    }
    rc = ctx->acl->record_event(t->event, ctx->dev[device].stream);
    if (rc != ACL_SUCCESS) {
        t->next                      = ctx->dev[device].free_tokens;
        ctx->dev[device].free_tokens = t;
        status = ascend_fail(ctx, HIXL_FAILED, "aclrtRecordEvent", rc);
        goto out;
    }
    *token_p = t;
out:
    ascend_device_leave(ctx, saved);
    return status;
}

hixl_status_t ascend_test(void *arg, void *token, int *done_p)
{
    ascend_ctx_t *ctx = arg;
    ascend_token_t *t = token;
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    aclError rc;

    rc = ctx->acl->query_event_status(t->event, &st);
    if (rc != ACL_SUCCESS) {
        ctx->acl->destroy_event(t->event);
        free(t);
        return ascend_fail(ctx, HIXL_FAILED, "aclrtQueryEventStatus", rc);
    }
    *done_p = (st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    if (*done_p) {
        t->next                         = ctx->dev[t->device].free_tokens;
        ctx->dev[t->device].free_tokens = t;
    }
    return HIXL_SUCCESS;
}

void ascend_streams_close(ascend_ctx_t *ctx)
{
    ascend_token_t *t;
    aclrtContext saved;
    uint32_t i;

    for (i = 0; (i < ctx->ndev) && (i < ASCEND_MAX_DEVICES); ++i) {
        if (!ctx->dev[i].ready ||
            (ascend_device_enter(ctx, (int32_t)i, &saved) != HIXL_SUCCESS)) {
            continue;
        }
        ctx->acl->synchronize_stream(ctx->dev[i].stream);
        while ((t = ctx->dev[i].free_tokens) != NULL) {
            ctx->dev[i].free_tokens = t->next;
            ctx->acl->destroy_event(t->event);
            free(t);
        }
        ctx->acl->destroy_stream(ctx->dev[i].stream);
        ctx->dev[i].ready = 0;
        ascend_device_leave(ctx, saved);
    }
}
