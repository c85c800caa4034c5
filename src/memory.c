/*
 * Memory registration: hixl_register_mem / hixl_deregister_mem and the
 * announcements that keep peers' remote tables current.
 *
 * Revocation rule (hixl_deregister_mem): the region leaves the local table
 * first (no new local descriptor can use it), then every accepted peer is
 * sent MEM_DEL followed by SYNC.  A peer answers the SYNC only after it has
 * dropped the region and flushed its endpoint to us, so once every peer has
 * answered, no write into the region can still arrive.  A peer that does not
 * answer within hixl.ConnectTimeoutMs is disconnected.  Only then is the
 * region unmapped.
 */
#include "config.h"
#include "peer.h"
#include "clock.h"
#include "handle.h"
#include "log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static hixl_status_t hixl_mem_send_add(hixl_peer_t *peer,
                                       const hixl_region_t *region)
{
    ctrl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.type               = CTRL_MEM_ADD;
    msg.u.mem_add.id       = region->handle;
    msg.u.mem_add.addr     = region->range.addr;
    msg.u.mem_add.len      = region->range.len;
    msg.u.mem_add.mem_type = (uint32_t)region->type;
    msg.u.mem_add.rkey     = ctrl_bytes(region->rkey_buf, region->rkey_len);
    return ctrl_conn_send(&peer->conn, &msg);
}

hixl_status_t hixl_mem_announce(hixl_engine_t *engine, hixl_peer_t *peer)
{
    hixl_status_t status;
    size_t i;

    for (i = 0; i < engine->mem.by_addr.count; ++i) {
        status = hixl_mem_send_add(peer, (const hixl_region_t*)
                                         engine->mem.by_addr.items[i]);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    return HIXL_SUCCESS;
}

static void hixl_region_free(hixl_engine_t *engine, hixl_region_t *region)
{
    if (region->rkey_buf != NULL) {
        ucp_rkey_buffer_release(region->rkey_buf);
    }
    if (region->memh != NULL) {
        ucp_mem_unmap(engine->ucp_context, region->memh);
    }
    free(region);
}

static hixl_status_t hixl_region_map(hixl_engine_t *engine,
                                     hixl_region_t *region)
{
    ucp_mem_map_params_t params;
    ucs_status_t ustatus;

    memset(&params, 0, sizeof(params));
    params.field_mask  = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                         UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    params.address     = (void*)(uintptr_t)region->range.addr;
    params.length      = region->range.len;
    params.memory_type = UCS_MEMORY_TYPE_HOST;
    ustatus = ucp_mem_map(engine->ucp_context, &params, &region->memh);
    if (ustatus != UCS_OK) {
        region->memh = NULL;
        return hixl_error(HIXL_FAILED, "ucp_mem_map of [0x%" PRIx64 ", +%"
                          PRIu64 ") failed: %s", region->range.addr,
                          region->range.len, ucs_status_string(ustatus));
    }
    ustatus = ucp_rkey_pack(engine->ucp_context, region->memh,
                            &region->rkey_buf, &region->rkey_len);
    if (ustatus != UCS_OK) {
        region->rkey_buf = NULL;
        return hixl_error(HIXL_FAILED, "ucp_rkey_pack failed: %s",
                          ucs_status_string(ustatus));
    }
    if (region->rkey_len > CTRL_MAX_RKEY) {
        return hixl_error(HIXL_UNSUPPORTED, "packed remote key is %zu bytes, "
                          "more than the control channel carries (%d)",
                          region->rkey_len, CTRL_MAX_RKEY);
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_register_mem(hixl_engine_t *engine,
                                const hixl_mem_desc_t *mem,
                                hixl_mem_type_t type,
                                hixl_mem_handle_t *handle_p)
{
    hixl_region_t *region;
    hixl_range_t *other;
    hixl_peer_t *peer;
    hixl_status_t status;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((mem == NULL) || (handle_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL",
                          mem ? "handle_p" : "mem");
    }
    if ((mem->addr == 0) || (mem->len == 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "region [0x%" PRIxPTR ", +%zu) "
                          "has a zero %s", mem->addr, mem->len,
                          mem->addr ? "length" : "address");
    }
    if (mem->addr + mem->len < mem->addr) {
        return hixl_error(HIXL_PARAM_INVALID, "region [0x%" PRIxPTR ", +%zu) "
                          "wraps around the address space", mem->addr,
                          mem->len);
    }
    if (type == HIXL_MEM_DEVICE) {
        return hixl_error(HIXL_UNSUPPORTED, "no memory-type plugin handles "
                          "device memory at 0x%" PRIxPTR " (none is loaded; "
                          "hixl_info lists plugins)", mem->addr);
    }
    if (type != HIXL_MEM_HOST) {
        return hixl_error(HIXL_PARAM_INVALID, "memory type %d is neither "
                          "HIXL_MEM_DEVICE (0) nor HIXL_MEM_HOST (1)",
                          (int)type);
    }

    region = calloc(1, sizeof(*region));
    if (region == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    region->range.addr = mem->addr;
    region->range.len  = mem->len;
    region->type       = type;

    /* Map outside the engine lock: pinning a large region can take long and
     * must not stall control traffic. */
    status = hixl_region_map(engine, region);
    if (status != HIXL_SUCCESS) {
        goto err_free;
    }

    pthread_mutex_lock(&engine->lock);
    other = hixl_range_overlap(&engine->mem.by_addr, mem->addr, mem->len);
    if (other != NULL) {
        status = hixl_error(HIXL_PARAM_INVALID, "region [0x%" PRIxPTR ", +%zu) "
                            "overlaps the registered region [0x%" PRIx64 ", +%"
                            PRIu64 ")", mem->addr, mem->len, other->addr,
                            other->len);
        goto err_unlock;
    }
    status = hixl_mem_table_insert(&engine->mem, engine->serial, region);
    if (status != HIXL_SUCCESS) {
        goto err_unlock;
    }
    /* Tell connected peers now; one that transfers into the region before
     * this arrives asks for it (SYNC) instead of refusing. */
    for (peer = engine->peers; peer != NULL; peer = peer->next) {
        if (!peer->outgoing && (peer->state == HIXL_PEER_READY)) {
            hixl_mem_send_add(peer, region);
        }
    }
    hixl_progress_kick(engine);
    pthread_mutex_unlock(&engine->lock);
    *handle_p = (hixl_mem_handle_t)(uintptr_t)region->handle;
    return HIXL_SUCCESS;

err_unlock:
    pthread_mutex_unlock(&engine->lock);
err_free:
    hixl_region_free(engine, region);
    return status;
}

typedef struct hixl_revoke_wait {
    hixl_engine_t *engine;
    uint64_t       token;
} hixl_revoke_wait_t;

/* Every accepted peer has answered the revoke SYNC (or is gone). */
static int hixl_revoke_done(void *arg)
{
    hixl_revoke_wait_t *w = arg;
    hixl_peer_t *peer;

    for (peer = w->engine->peers; peer != NULL; peer = peer->next) {
        if (!peer->outgoing && (peer->state == HIXL_PEER_READY) &&
            (peer->sync_acked < w->token)) {
            return 0;
        }
    }
    return 1;
}

static void hixl_revoke(hixl_engine_t *engine, hixl_region_t *region)
{
    hixl_revoke_wait_t wait = {engine, ++engine->next_token};
    hixl_peer_t *peer, *next;
    ctrl_msg_t del, sync;

    memset(&del, 0, sizeof(del));
    del.type            = CTRL_MEM_DEL;
    del.u.mem_del.id    = region->handle;
    del.u.mem_del.addr  = region->range.addr;
    memset(&sync, 0, sizeof(sync));
    sync.type           = CTRL_SYNC;
    sync.u.sync.token   = wait.token;
    for (peer = engine->peers; peer != NULL; peer = next) {
        next = peer->next;
        if (peer->outgoing || (peer->state != HIXL_PEER_READY)) {
            continue;
        }
        if ((ctrl_conn_send(&peer->conn, &del) != HIXL_SUCCESS) ||
            (ctrl_conn_send(&peer->conn, &sync) != HIXL_SUCCESS)) {
            hixl_peer_close(engine, peer, HIXL_FAILED, "cannot revoke a "
                            "region: %s", hixl_error_message());
        }
    }
    hixl_progress_kick(engine);
    if (hixl_engine_wait(engine, hixl_deadline_ns(
            engine->opts.connect_timeout_ms), hixl_revoke_done, &wait)) {
        return;
    }
    for (peer = engine->peers; peer != NULL; peer = next) {
        next = peer->next;
        if (!peer->outgoing && (peer->state == HIXL_PEER_READY) &&
            (peer->sync_acked < wait.token)) {
            hixl_peer_close(engine, peer, HIXL_TIMEOUT, "did not confirm the "
                            "revocation of region [0x%" PRIx64 ", +%" PRIu64
                            ") within %d ms", region->range.addr,
                            region->range.len,
                            engine->opts.connect_timeout_ms);
        }
    }
}

hixl_status_t hixl_deregister_mem(hixl_engine_t *engine,
                                  hixl_mem_handle_t handle)
{
    hixl_region_t *region;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    pthread_mutex_lock(&engine->lock);
    region = hixl_mem_table_get(&engine->mem, engine->serial,
                                (uintptr_t)handle);
    if (region == NULL) {
        pthread_mutex_unlock(&engine->lock);
        return hixl_error(HIXL_PARAM_INVALID, "memory handle %p is not "
                          "registered with this engine (already deregistered, "
                          "or from another engine)", (void*)handle);
    }
    hixl_mem_table_remove(&engine->mem, region);
    hixl_revoke(engine, region);
    pthread_mutex_unlock(&engine->lock);

    hixl_region_free(engine, region);
    return HIXL_SUCCESS;
}

void hixl_mem_cleanup(hixl_engine_t *engine)
{
    hixl_region_t *region;
    size_t i;

    for (i = 0; i < engine->mem.nslots; ++i) {
        region = engine->mem.slots[i];
        if (region != NULL) {
            hixl_region_free(engine, region);
        }
    }
    hixl_mem_table_cleanup(&engine->mem);
}
