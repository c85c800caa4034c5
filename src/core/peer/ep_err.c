/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A UCX endpoint's error record, and closing an endpoint at once
 * (ep_err.h).
 */
#include "config.h"
#include "core/peer/ep_err.h"
#include "core/engine.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct hixl_ep_err {
    atomic_int     status;    /* ucs_status_t reported, UCS_OK if none */
    atomic_uint    refs;      /* the peer's, and each close's */
    hixl_engine_t *engine;
};

hixl_ep_err_t *hixl_ep_err_new(hixl_engine_t *engine)
{
    hixl_ep_err_t *err = calloc(1, sizeof(*err));

    if (err != NULL) {
        atomic_init(&err->status, UCS_OK);
        atomic_init(&err->refs, 1);
        err->engine = engine;
    }
    return err;
}

static void hixl_ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    hixl_ep_err_t *err = arg;

    /* UCX's lock is held here: only record it; periodic work closes the
     * peer, if it still has this endpoint, under engine->lock
     * (hixl_peers_reap_errors). */
    hixl_log_debug("UCX endpoint %p error: %s", (void*)ep,
                   ucs_status_string(status));
    atomic_store(&err->status, (int)status);
    hixl_progress_urgent(err->engine);
}

void hixl_ep_err_handler(hixl_ep_err_t *err, ucp_ep_params_t *params)
{
    params->field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params->err_handler.cb  = hixl_ep_error_cb;
    params->err_handler.arg = err;
}

ucs_status_t hixl_ep_err_status(const hixl_ep_err_t *err)
{
    return (ucs_status_t)atomic_load(&err->status);
}

void hixl_ep_err_release(hixl_ep_err_t *err)
{
    unsigned before = atomic_fetch_sub(&err->refs, 1);

    hixl_assert(before >= 1);   /* the peer's and each close's */
    if (before == 1) {
        free(err);
    }
}

static void hixl_ep_closed_cb(void *request, ucs_status_t status,
                              void *user_data)
{
    ucp_request_free(request);
    hixl_ep_err_release(user_data);
}

void hixl_ep_close_now(ucp_ep_h ep, hixl_ep_err_t *err, int peer_mode,
                       const char *name)
{
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS |
                         UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    /* FORCE cancels what is queued; UCX refuses it in NONE mode (and then
     * closes nothing): a flush close there */
    param.flags        = peer_mode ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    param.cb.send      = hixl_ep_closed_cb;
    param.user_data    = err;
    /* the error handler's argument must outlive the close */
    atomic_fetch_add(&err->refs, 1);
    sp = ucp_ep_close_nbx(ep, &param);
    if (!UCS_PTR_IS_PTR(sp)) {
        if (UCS_PTR_IS_ERR(sp)) {
            hixl_log_warn("closing the endpoint to %s: %s", name,
                          ucs_status_string(UCS_PTR_STATUS(sp)));
        }
        hixl_ep_err_release(err);
    }
}
