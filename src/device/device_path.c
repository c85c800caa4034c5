/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-descriptor path choice for device memory, and posting of the device
 * copies of the IPC path (staging lives in staging.c).  See device.h for
 * the paths; hixl.DevicePath forces one (ipc, nic or staging) so that each
 * can be exercised on one machine, and a descriptor the forced path cannot
 * carry is refused, not rerouted.
 */
#include "config.h"
#include "device/device_path.h"
#include "device/staging.h"
#include "util/array.h"
#include "core/engine.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *const hixl_path_mode_names[] = {
    [HIXL_DEVICE_PATH_AUTO]    = "auto",
    [HIXL_DEVICE_PATH_IPC]     = "ipc",
    [HIXL_DEVICE_PATH_NIC]     = "nic",
    [HIXL_DEVICE_PATH_STAGING] = "staging",
};

static const char *hixl_mem_kind(hixl_mem_type_t type)
{
    return (type == HIXL_MEM_DEVICE) ? "device" : "host";
}

/* Why the IPC path cannot carry (lr, rr), or NULL when it can (imports
 * the remote memory on first use).  It also carries local device memory
 * to and from host memory of a peer engine in this process (no import:
 * the address is valid here). */
static const char *hixl_dev_no_ipc(hixl_engine_t *engine, hixl_peer_t *peer,
                                   hixl_region_t *lr, hixl_rregion_t *rr,
                                   char *buf, size_t len)
{
    hixl_remote_dev_t *remote_dev = rr->dev;

    if ((rr->mem_type != HIXL_MEM_DEVICE) && (lr->type == HIXL_MEM_DEVICE) &&
        hixl_dev_peer_local(engine, peer)) {
        return NULL;
    }
    if ((rr->mem_type != HIXL_MEM_DEVICE) || (remote_dev == NULL)) {
        return "IPC reaches only remote device memory (or host memory of "
               "an engine in this process)";
    }
    if (!remote_dev->same_node) {
        return "the remote device memory is on another node";
    }
    if (remote_dev->dp == NULL) {
        snprintf(buf, len,
                 "the '%s' plugin that owns the remote memory is "
                 "not available here",
                 remote_dev->plugin);
        return buf;
    }
    if ((lr->type == HIXL_MEM_DEVICE) && (lr->dev->dp != remote_dev->dp)) {
        snprintf(buf, len,
                 "local memory belongs to plugin '%s', remote to "
                 "'%s'",
                 lr->dev->dp->plugin->name, remote_dev->plugin);
        return buf;
    }
    if (hixl_dev_remote_import(engine, remote_dev) != HIXL_SUCCESS) {
        return remote_dev->why;
    }
    return NULL;
}

static const char *hixl_dev_no_ucx(hixl_region_t *lr, hixl_rregion_t *rr)
{
    if (lr->memh == NULL) {
        return "the local device region is not NIC-registered "
               "(hixl.DeviceNicReg=0, or ucp_mem_map refused it)";
    }
    if (rr->rkey == NULL) {
        return "the remote device region has no UCX remote key (its owner "
               "did not NIC-register it: hixl.DeviceNicReg)";
    }
    return NULL;
}

static const char *hixl_dev_no_stage(hixl_engine_t *engine,
                                     hixl_region_t *lr, hixl_rregion_t *rr)
{
    if (lr->type != HIXL_MEM_DEVICE) {
        return "staging moves local device memory only";
    }
    if (rr->rkey == NULL) {
        return "the remote device region has no UCX remote key: device "
               "memory on another node is reachable only if its owner "
               "NIC-registers it (hixl.DeviceNicReg=1); staging on the "
               "remote side is not implemented";
    }
    if (hixl_stage_ready(engine, lr->dev->dp) != HIXL_SUCCESS) {
        return hixl_error_message();
    }
    return NULL;
}

hixl_status_t hixl_dev_route(hixl_engine_t *engine, hixl_peer_t *peer,
                             size_t i, const hixl_transfer_op_desc_t *d,
                             hixl_region_t *lr, hixl_rregion_t *rr,
                             hixl_path_t *path_p)
{
    int mode = engine->opts.device_path;
    const char *no_ipc = NULL, *no_ucx = NULL, *no_stage = NULL;
    char buf[256], why[640];
    hixl_path_t path;

    pthread_mutex_lock(&engine->dev->lock);
    if ((mode == HIXL_DEVICE_PATH_AUTO) || (mode == HIXL_DEVICE_PATH_IPC)) {
        no_ipc = hixl_dev_no_ipc(engine, peer, lr, rr, buf, sizeof(buf));
        if (no_ipc == NULL) {
            path = HIXL_PATH_IPC;
            goto found;
        }
    }
    if ((mode == HIXL_DEVICE_PATH_AUTO) || (mode == HIXL_DEVICE_PATH_NIC)) {
        no_ucx = hixl_dev_no_ucx(lr, rr);
        if (no_ucx == NULL) {
            path = HIXL_PATH_RMA;
            goto found;
        }
    }
    if ((mode == HIXL_DEVICE_PATH_AUTO) ||
        (mode == HIXL_DEVICE_PATH_STAGING)) {
        no_stage = hixl_dev_no_stage(engine, lr, rr);
        if (no_stage == NULL) {
            path = HIXL_PATH_STAGE;
            goto found;
        }
    }
    snprintf(why, sizeof(why), "%s%s%s%s%s%s%s%s", no_ipc ? "ipc: " : "",
             no_ipc ? no_ipc : "", (no_ipc && (no_ucx || no_stage)) ? "; " : "",
             no_ucx ? "nic: " : "", no_ucx ? no_ucx : "",
             (no_ucx && no_stage) ? "; " : "", no_stage ? "staging: " : "",
             no_stage ? no_stage : "");
    pthread_mutex_unlock(&engine->dev->lock);
    return hixl_error(HIXL_UNSUPPORTED, "descriptor %zu: no path between "
                      "%s memory [0x%" PRIxPTR ", +%zu) here and %s memory "
                      "0x%" PRIxPTR " of %s (hixl.DevicePath=%s): %s", i,
                      hixl_mem_kind(lr->type), d->local_addr, d->len,
                      hixl_mem_kind((hixl_mem_type_t)rr->mem_type),
                      d->remote_addr, peer->name,
                      hixl_path_mode_names[mode], why);

found:
    pthread_mutex_unlock(&engine->dev->lock);
    hixl_log(HIXL_LOG_TRACE, "descriptor %zu to %s: %s path", i, peer->name,
             (path == HIXL_PATH_IPC) ? "IPC" : (path == HIXL_PATH_RMA) ?
             "UCX" : "staging");
    if (path_p != NULL) {
        *path_p = path;
    }
    return HIXL_SUCCESS;
}

/* Note a copy queued on (dp, device) for the unit's marks. */
static int hixl_dev_unit_queued(hixl_dev_unit_t *unit, hixl_dev_plugin_t *dp,
                                int32_t device)
{
    unsigned i;

    for (i = 0; i < unit->nmarks; ++i) {
        if ((unit->marks[i].dp == dp) && (unit->marks[i].device == device)) {
            unit->marks[i].queued++;
            return 0;
        }
    }
    if (unit->nmarks == HIXL_UNIT_MARKS) {
        return -1;
    }
    unit->marks[unit->nmarks].dp     = dp;
    unit->marks[unit->nmarks].device = device;
    unit->marks[unit->nmarks].queued = 1;
    unit->nmarks++;
    return 0;
}

/* Keep remote_dev alive while the unit's copies may use its import. */
static int hixl_dev_unit_hold(hixl_dev_unit_t   *unit,
                              hixl_remote_dev_t *remote_dev)
{
    if ((unit->num_remote_devs > 0) &&
        (unit->remote_devs[unit->num_remote_devs - 1] == remote_dev)) {
        return 0;   /* batches mostly target one region */
    }
    if (hixl_array_reserve(&unit->remote_devs, &unit->remote_devs_cap,
                           unit->num_remote_devs + 1,
                           sizeof(*unit->remote_devs), 8) != 0) {
        return -1;
    }
    hixl_dev_remote_get(remote_dev);
    unit->remote_devs[unit->num_remote_devs++] = remote_dev;
    return 0;
}

/* Local device memory to or from host memory of a peer engine in this
 * process (hixl_dev_no_ipc allowed it): one copy by the local device. */
static int hixl_dev_post_own_host(hixl_dev_unit_t *unit, size_t i,
                                  const hixl_transfer_op_desc_t *d,
                                  hixl_region_t *lr)
{
    hixl_dev_plugin_t *dp = lr->dev->dp;
    hixl_mem_copy_t c;

    c.len         = d->len;
    c.exec_device = lr->dev->attr.device;
    if (unit->req->op == HIXL_WRITE) {
        c.dst        = (void*)d->remote_addr;
        c.dst_device = -1;
        c.src        = (const void*)d->local_addr;
        c.src_device = c.exec_device;
    } else {
        c.dst        = (void*)d->local_addr;
        c.dst_device = c.exec_device;
        c.src        = (const void*)d->remote_addr;
        c.src_device = -1;
    }
    if (hixl_dev_unit_queued(unit, dp, c.exec_device) != 0) {
        hixl_req_fail(unit->req, HIXL_RESOURCE_EXHAUSTED, "descriptor %zu: "
                      "more than %d devices in one transfer", i,
                      HIXL_UNIT_MARKS);
        return -1;
    }
    if (dp->ops->copy(dp->ctx, &c) != HIXL_SUCCESS) {
        hixl_req_fail(unit->req, HIXL_FAILED, "descriptor %zu: device copy "
                      "to %s failed: %s", i, unit->peer->name,
                      hixl_error_message());
        return -1;
    }
    return 1;
}

static int hixl_dev_post_ipc(hixl_dev_unit_t *unit, size_t i,
                             const hixl_transfer_op_desc_t *d,
                             hixl_region_t *lr, hixl_rregion_t *rr)
{
    hixl_remote_dev_t *remote_dev = rr->dev;
    int32_t ldev      = (lr->type == HIXL_MEM_DEVICE) ? lr->dev->attr.device :
                        -1;
    void *remote;
    hixl_mem_copy_t c;

    if (remote_dev == NULL) {
        return hixl_dev_post_own_host(unit, i, d, lr);
    }
    remote = (uint8_t *)remote_dev->addr + (d->remote_addr - rr->range.addr);

    if (unit->req->op == HIXL_WRITE) {
        c.dst        = remote;
        c.dst_device = remote_dev->attr.device;
        c.src        = (const void*)d->local_addr;
        c.src_device = ldev;
    } else {
        c.dst        = (void*)d->local_addr;
        c.dst_device = ldev;
        c.src        = remote;
        c.src_device = remote_dev->attr.device;
    }
    c.len = d->len;
    /* the local device's engine runs it; for host memory, the engine of
     * the device that holds the imported memory */
    c.exec_device = (ldev >= 0) ? ldev : remote_dev->attr.device;
    if ((hixl_dev_unit_hold(unit, remote_dev) != 0) ||
        (hixl_dev_unit_queued(unit, remote_dev->dp, c.exec_device) != 0)) {
        hixl_req_fail(unit->req, HIXL_RESOURCE_EXHAUSTED, "descriptor %zu: "
                      "out of memory (or more than %d devices) for device "
                      "copies", i, HIXL_UNIT_MARKS);
        return -1;
    }
    if (remote_dev->dp->ops->copy(remote_dev->dp->ctx, &c) != HIXL_SUCCESS) {
        hixl_req_fail(unit->req, HIXL_FAILED, "descriptor %zu: device copy "
                      "to %s failed: %s", i, unit->peer->name,
                      hixl_error_message());
        return -1;
    }
    return 1;
}

int hixl_dev_post(hixl_engine_t *engine, hixl_peer_t *peer,
                  hixl_request_t *req, hixl_dev_unit_t **unit_p, size_t i,
                  const hixl_transfer_op_desc_t *d, hixl_region_t *lr,
                  hixl_rregion_t *rr, hixl_path_t path)
{
    hixl_dev_unit_t *unit;
    int rc;

    pthread_mutex_lock(&engine->dev->lock);
    unit = *unit_p;
    if (unit == NULL) {
        unit = hixl_dev_unit_new(engine, peer, req);
        if (unit == NULL) {
            pthread_mutex_unlock(&engine->dev->lock);
            hixl_req_fail(req, HIXL_RESOURCE_EXHAUSTED, "descriptor %zu: out "
                          "of memory for device work", i);
            return -1;
        }
        *unit_p = unit;
    }
    if (path == HIXL_PATH_IPC) {
        rc = hixl_dev_post_ipc(unit, i, d, lr, rr);
    } else if (hixl_stage_add(unit, req->op, lr->dev->dp,
                              lr->dev->attr.device, d->local_addr,
                              d->remote_addr, d->len, rr->rkey) ==
               HIXL_SUCCESS) {
        rc = 1;
    } else {
        hixl_req_fail(req, HIXL_RESOURCE_EXHAUSTED, "descriptor %zu: %s", i,
                      hixl_error_message());
        rc = -1;
    }
    pthread_mutex_unlock(&engine->dev->lock);
    return rc;
}

void hixl_dev_submit(hixl_engine_t *engine, hixl_dev_unit_t *unit)
{
    hixl_dev_mark_t *m;
    unsigned i;

    pthread_mutex_lock(&engine->dev->lock);
    for (i = 0; i < unit->nmarks; ++i) {
        m = &unit->marks[i];
        if (m->dp->ops->mark(m->dp->ctx, m->device, &m->token) !=
            HIXL_SUCCESS) {
            /* the copies' end cannot be observed: fail the request rather
             * than report data that may still be moving as landed */
            m->token = NULL;
            hixl_req_fail(unit->req, HIXL_FAILED, "cannot track device "
                          "copies to %s: %s", unit->peer->name,
                          hixl_error_message());
        }
        m->queued = 0;
    }
    if (unit->job != NULL) {
        hixl_stage_queue(engine, unit->job);
    }
    unit->submitted = 1;
    pthread_mutex_unlock(&engine->dev->lock);
    hixl_progress_kick(engine);
}
