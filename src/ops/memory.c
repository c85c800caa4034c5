/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration: hixl_register_mem / hixl_deregister_mem and the
 * announcements that keep peers' remote tables current.
 *
 * Revocation rule (hixl_deregister_mem): the region leaves the local table
 * first (no new local descriptor can use it), then every accepted peer is
 * sent MEM_DEL followed by SYNC.  A peer answers the SYNC only after it has
 * dropped the region and flushed its endpoint to us, so once every peer has
 * answered, no write into the region can still arrive, and only then is the
 * region unmapped and the call successful.  A peer that does not answer
 * within hixl.ConnectTimeoutMs is disconnected and the call returns TIMEOUT
 * with the region still mapped (and out of every table): the application
 * keeps the memory and calls again after a grace period of the same length,
 * in which whatever that peer still had in flight lands.  (Over shared memory
 * and UCX 1.13's tcp emulation of RMA, no transport-level key can be revoked;
 * an engine also reads its control connection before it posts, so a peer
 * running this library stops at once when it is told.)
 */
#include "config.h"
#include "ops/memory.h"
#include "ops/mem_prefault.h"
#include "ops/xfer_path.h"
#include "core/worker/ucx_tls.h"
#include "ctrl/dispatch.h"
#include "device/device_mem.h"
#include "util/clock.h"
#include "util/handle.h"
#include "util/debug.h"
#include "util/log.h"
#include "util/prefault.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* This module's part of the engine (engine->memory) and of a peer
 * (peer->mem, from READY to destroy). */
struct hixl_memory {
    uint64_t next_token;   /* of the SYNCs this engine sends */
};

struct hixl_mem_peer {
    uint64_t sync_acked;   /* highest SYNC_ACK token seen from it */
};

static void hixl_mem_add_msg(hixl_msg_t *msg, const hixl_region_t *region)
{
    memset(msg, 0, sizeof(*msg));
    msg->type               = CTRL_MEM_ADD;
    msg->u.mem_add.id       = region->handle;
    msg->u.mem_add.addr     = region->range.addr;
    msg->u.mem_add.len      = region->range.len;
    msg->u.mem_add.mem_type = (uint32_t)region->type;
    msg->u.mem_add.rkey = hixl_msg_bytes(region->rkey_buf, region->rkey_len);
    if (region->dev != NULL) {
        msg->u.mem_add.dev_key =
            hixl_msg_bytes(region->dev->key, region->dev->key_len);
    }
}

static hixl_status_t hixl_mem_send_add(hixl_peer_t *peer,
                                       const hixl_region_t *region)
{
    hixl_msg_t msg;

    hixl_mem_add_msg(&msg, region);
    return hixl_ctrl_send(peer, &msg);
}

/* Accepted hook: send every local region to a new connector.  Queued, not
 * sent one by one: a table of tens of thousands of regions would cost a
 * system call (and a TCP segment) each; the handshake's TABLE_END, sent
 * next, writes them all.  In address order: the connector's inserts then
 * all extend the same edge of its tree, whose nodes stay in its cache (in
 * the order of the handle slots, which may be any order of addresses, its
 * inserts missed the cache at every level and cost it twice the time this
 * walk saved here). */
static hixl_status_t hixl_mem_announce(hixl_engine_t *engine,
                                       hixl_peer_t *peer)
{
    hixl_status_t status;
    hixl_range_t *r;
    hixl_msg_t    msg;

    for (r = hixl_range_first(&engine->mem.by_addr); r != NULL;
         r = hixl_range_next(r)) {
        hixl_mem_add_msg(&msg, (const hixl_region_t *)r);
        status = hixl_ctrl_queue(peer, &msg);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    return HIXL_SUCCESS;
}

static void hixl_region_unmap(hixl_engine_t *engine, hixl_region_t *region)
{
    if (region->rkey_buf != NULL) {
        ucp_rkey_buffer_release(region->rkey_buf);
        region->rkey_buf = NULL;
        region->rkey_len = 0;
    }
    if (region->memh != NULL) {
        ucp_mem_unmap(engine->ucp_context, region->memh);
        region->memh = NULL;
    }
}

static void hixl_region_free(hixl_engine_t *engine, hixl_region_t *region)
{
    hixl_warm_cancel(region->warm);   /* no page written after this */
    region->warm = NULL;
    hixl_region_unmap(engine, region);
    hixl_dev_region_release(engine, region);
    free(region);
}

/* Map a region with UCX; with `allocate`, UCX allocates it too (and
 * region->range.addr is set from where it did). */
static hixl_status_t hixl_region_map(hixl_engine_t *engine,
                                     hixl_region_t *region, int allocate)
{
    ucp_mem_map_params_t params;
    ucp_mem_attr_t attr;
    ucs_status_t ustatus;

    memset(&params, 0, sizeof(params));
    params.field_mask  = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                         UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    params.address     = (void*)(uintptr_t)region->range.addr;
    params.length      = region->range.len;
    params.memory_type = UCS_MEMORY_TYPE_HOST;
    if (allocate) {
        params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        params.flags       = UCP_MEM_MAP_ALLOCATE;
    }
    ustatus = ucp_mem_map(engine->ucp_context, &params, &region->memh);
    if (ustatus != UCS_OK) {
        region->memh = NULL;
        return hixl_error(allocate ? HIXL_RESOURCE_EXHAUSTED : HIXL_FAILED,
                          "ucp_mem_map of %s%" PRIu64 " bytes at 0x%" PRIx64
                          " failed: %s", allocate ? "(allocating) " : "",
                          region->range.len, region->range.addr,
                          ucs_status_string(ustatus));
    }
    if (allocate) {
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        ustatus = ucp_mem_query(region->memh, &attr);
        if (ustatus != UCS_OK) {
            return hixl_error(HIXL_FAILED, "ucp_mem_query: %s",
                              ucs_status_string(ustatus));
        }
        region->range.addr = (uintptr_t)attr.address;
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

/* Index a mapped region and announce it (both register and alloc). */
static hixl_status_t hixl_region_add(hixl_engine_t *engine,
                                     hixl_region_t *region)
{
    hixl_range_t *other;
    hixl_peer_t *peer;
    hixl_status_t status;
    int           told = 0;

    pthread_mutex_lock(&engine->lock);
    other = hixl_range_overlap(&engine->mem.by_addr, region->range.addr,
                               region->range.len);
    if (other != NULL) {
        status = hixl_error(HIXL_PARAM_INVALID, "region [0x%" PRIx64 ", +%"
                            PRIu64 ") overlaps the registered region [0x%"
                            PRIx64 ", +%" PRIu64 ")", region->range.addr,
                            region->range.len, other->addr, other->len);
        goto out;
    }
    /* the library's message handlers read the index under serve_lock */
    pthread_rwlock_wrlock(&engine->serve_lock);
    status = hixl_mem_table_insert(&engine->mem, engine->serial, region);
    pthread_rwlock_unlock(&engine->serve_lock);
    if (status != HIXL_SUCCESS) {
        goto out;
    }
    /* Tell connected peers now; one that transfers into the region before
     * this arrives asks for it (SYNC) instead of refusing. */
    for (peer = engine->peers.head; peer != NULL; peer = peer->next) {
        if (!hixl_peer_outgoing(peer) && (peer->state == HIXL_PEER_READY)) {
            hixl_mem_send_add(peer, region);
            told = 1;
        }
    }
    if (told) {
        /* waking the progress thread costs two context switches: with
         * nobody to tell, a registration loop would pay them per region */
        hixl_progress_kick(engine);
    }
out:
    pthread_mutex_unlock(&engine->lock);
    return status;
}

/* Device memory: the plugin that claims it exports it (IPC key); with
 * hixl.DeviceNicReg=1 it is also offered to UCX (ucp_mem_map), which
 * succeeds where the NIC can reach device memory (peer-memory RDMA).  A
 * refusal there is not an error: the region is then reached by IPC on
 * this node and by staging from it. */
static hixl_status_t hixl_region_map_device(hixl_engine_t *engine,
                                            hixl_region_t *region)
{
    hixl_status_t status;

    status = hixl_dev_region_register(engine, region);
    if ((status != HIXL_SUCCESS) || !engine->opts.device_nic_reg) {
        return status;
    }
    if (hixl_region_map(engine, region, 0) != HIXL_SUCCESS) {
        hixl_log_info("device region [0x%" PRIx64 ", +%" PRIu64 ") is not "
                      "NIC-registrable (%s): peers on other nodes cannot "
                      "reach it", region->range.addr, region->range.len,
                      hixl_error_message());
        hixl_region_unmap(engine, region);
    }
    return HIXL_SUCCESS;
}

static hixl_status_t hixl_mem_check_type(hixl_mem_type_t type, int allocate)
{
    if ((type == HIXL_MEM_DEVICE) && allocate) {
        return hixl_error(HIXL_UNSUPPORTED, "hixl_alloc_mem allocates host "
                          "memory only: allocate device memory with its "
                          "runtime (aclrtMalloc) and register it");
    }
    if (type == HIXL_MEM_DEVICE) {
        return HIXL_SUCCESS;   /* a plugin must claim it: see map_device */
    }
    if (type != HIXL_MEM_HOST) {
        return hixl_error(HIXL_PARAM_INVALID, "memory type %d is neither "
                          "HIXL_MEM_DEVICE (0) nor HIXL_MEM_HOST (1)",
                          (int)type);
    }
    return HIXL_SUCCESS;
}

static hixl_status_t hixl_mem_create(hixl_engine_t *engine, uintptr_t addr,
                                     size_t len, hixl_mem_type_t type,
                                     int allocate, hixl_region_t **region_p)
{
    hixl_region_t *region;
    hixl_status_t status;

    region = calloc(1, sizeof(*region));
    if (region == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    region->range.addr = addr;
    region->range.len  = len;
    region->type       = type;
    region->allocated  = allocate;
    /* Map outside the engine lock: pinning a large region can take long and
     * must not stall control traffic. */
    status = (type == HIXL_MEM_DEVICE) ?
             hixl_region_map_device(engine, region) :
             hixl_region_map(engine, region, allocate);
    if (status == HIXL_SUCCESS) {
        status = hixl_region_add(engine, region);
    }
    if (status != HIXL_SUCCESS) {
        hixl_region_free(engine, region);
        return status;
    }
    *region_p = region;
    return HIXL_SUCCESS;
}

/* The region's own mapping here, page tables filled (util/prefault.h): a
 * peer's first write into it, by this process's hands (library messages)
 * or through the kernel (same-host copies), faults nothing. */
static void hixl_mem_prefault(const hixl_region_t *region)
{
    int err = hixl_prefault((const void*)(uintptr_t)region->range.addr,
                            region->range.len);

    if (err != 0) {
        hixl_log_debug("pre-faulting [0x%" PRIx64 ", +%" PRIu64 "): %s",
                       region->range.addr, region->range.len, strerror(err));
    }
}

/* The same region registered again is SUCCESS with the same handle, as in
 * hixl (whose users register what they allocate, maybe twice). */
static int hixl_mem_registered(hixl_engine_t *engine,
                               const hixl_mem_desc_t *mem,
                               hixl_mem_type_t type,
                               hixl_mem_handle_t *handle_p)
{
    hixl_region_t *region;

    pthread_mutex_lock(&engine->lock);
    region = hixl_mem_table_same(&engine->mem, mem->addr, mem->len);
    if ((region != NULL) && (region->type == type)) {
        *handle_p = (hixl_mem_handle_t)(uintptr_t)region->handle;
    } else {
        region = NULL;
    }
    pthread_mutex_unlock(&engine->lock);
    return region != NULL;
}

hixl_status_t hixl_register_mem(hixl_engine_t *engine,
                                const hixl_mem_desc_t *mem,
                                hixl_mem_type_t type,
                                hixl_mem_handle_t *handle_p)
{
    hixl_region_t *region;
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
    status = hixl_mem_check_type(type, 0);
    if ((status == HIXL_SUCCESS) &&
        hixl_mem_registered(engine, mem, type, handle_p)) {
        return HIXL_SUCCESS;
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_mem_create(engine, mem->addr, mem->len, type, 0,
                                 &region);
    }
    if ((status == HIXL_SUCCESS) && (type == HIXL_MEM_HOST) &&
        (engine->opts.prefault == HIXL_PREFAULT_ALL)) {
        hixl_mem_prefault(region);
    }
    if (status == HIXL_SUCCESS) {
        *handle_p = (hixl_mem_handle_t)(uintptr_t)region->handle;
    }
    return status;
}

hixl_status_t hixl_alloc_mem(hixl_engine_t *engine, size_t len,
                             hixl_mem_type_t type, void **addr_p,
                             hixl_mem_handle_t *handle_p)
{
    hixl_region_t *region;
    hixl_status_t status;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((addr_p == NULL) || (handle_p == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s is NULL",
                          addr_p ? "handle_p" : "addr_p");
    }
    if (len == 0) {
        return hixl_error(HIXL_PARAM_INVALID, "length is 0");
    }
    status = hixl_mem_check_type(type, 1);
    if (status == HIXL_SUCCESS) {
        status = hixl_mem_create(engine, 0, len, type, 1, &region);
    }
    if ((status == HIXL_SUCCESS) && (type == HIXL_MEM_HOST) &&
        (engine->opts.prefault != HIXL_PREFAULT_NONE)) {
        /* fresh memory of our own: every page written in the background
         * (the bytes stay zero or the application's).  Not pre-faulted
         * first: memory backed lazily by a hypervisor stays slow to copy
         * into after MADV_POPULATE_WRITE even once every page has been
         * written (util/prefault.h), while a first write that faults the
         * page in makes it fast.  Page tables now only where the warming
         * cannot be queued. */
        pthread_mutex_lock(&engine->lock);
        region->warm = hixl_warm_later(engine,
                                       (void*)(uintptr_t)region->range.addr,
                                       region->range.len);
        pthread_mutex_unlock(&engine->lock);
        if (region->warm == NULL) {
            hixl_mem_prefault(region);
        }
    }
    if (status == HIXL_SUCCESS) {
        *addr_p   = (void*)(uintptr_t)region->range.addr;
        *handle_p = (hixl_mem_handle_t)(uintptr_t)region->handle;
    }
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

    for (peer = w->engine->peers.head; peer != NULL; peer = peer->next) {
        if (!hixl_peer_outgoing(peer) && (peer->state == HIXL_PEER_READY) &&
            (peer->mem->sync_acked < w->token)) {
            return 0;
        }
    }
    return 1;
}

/* Revoke a region from every accepted peer; returns how many did not
 * confirm by the deadline (they are disconnected). */
static unsigned hixl_revoke(hixl_engine_t *engine, hixl_region_t *region,
                            uint64_t deadline)
{
    hixl_revoke_wait_t wait = {engine, ++engine->memory->next_token};
    hixl_peer_t *peer, *next;
    hixl_msg_t del, sync;
    unsigned silent = 0;

    memset(&del, 0, sizeof(del));
    del.type            = CTRL_MEM_DEL;
    del.u.mem_del.id    = region->handle;
    del.u.mem_del.addr  = region->range.addr;
    memset(&sync, 0, sizeof(sync));
    sync.type           = CTRL_SYNC;
    sync.u.sync.token   = wait.token;
    for (peer = engine->peers.head; peer != NULL; peer = next) {
        next = peer->next;
        if (hixl_peer_outgoing(peer) || (peer->state != HIXL_PEER_READY)) {
            continue;
        }
        if ((hixl_ctrl_send(peer, &del) != HIXL_SUCCESS) ||
            (hixl_ctrl_send(peer, &sync) != HIXL_SUCCESS)) {
            hixl_peer_close(engine, peer, HIXL_FAILED, "cannot revoke a "
                            "region: %s", hixl_error_message());
        }
    }
    hixl_progress_kick(engine);
    if (hixl_engine_wait(engine, deadline, hixl_revoke_done, &wait)) {
        return 0;
    }
    for (peer = engine->peers.head; peer != NULL; peer = next) {
        next = peer->next;
        if (!hixl_peer_outgoing(peer) && (peer->state == HIXL_PEER_READY) &&
            (peer->mem->sync_acked < wait.token)) {
            hixl_log_warn("%s did not confirm the revocation of region [0x%"
                          PRIx64 ", +%" PRIu64 ") within %d ms; "
                          "disconnecting it", peer->name, region->range.addr,
                          region->range.len, engine->opts.connect_timeout_ms);
            hixl_peer_close(engine, peer, HIXL_TIMEOUT, "did not confirm the "
                            "revocation of region [0x%" PRIx64 ", +%" PRIu64
                            ") within %d ms", region->range.addr,
                            region->range.len,
                            engine->opts.connect_timeout_ms);
            ++silent;
        }
    }
    return silent;
}

/* No library message still reads or writes the region (they began
 * before it left the index). */
static int hixl_region_idle(void *arg)
{
    return atomic_load(&((hixl_region_t*)arg)->am_busy) == 0;
}

hixl_status_t hixl_deregister_mem(hixl_engine_t *engine,
                                  hixl_mem_handle_t handle)
{
    /* one deadline for every wait of the call: they must not add up */
    uint64_t deadline = hixl_deadline_ns(engine ?
                                         engine->opts.connect_timeout_ms : 0);
    hixl_region_t *region;
    unsigned silent;

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
    if (!region->revoked) {
        /* no new descriptor, local or announced, and no library message
         * can name it from here */
        pthread_rwlock_wrlock(&engine->serve_lock);
        hixl_range_remove(&engine->mem.by_addr, &region->range);
        pthread_rwlock_unlock(&engine->serve_lock);
        region->revoked = 1;
        silent = hixl_revoke(engine, region, deadline);
        if (silent != 0) {
            /* Writes a silent peer posted before it learned of the close
             * may still be on their way: over shared memory and UCX's tcp
             * emulation nothing but that peer stops them.  So the memory
             * stays for a grace period (the handle valid, the region out of
             * every table); a call after it succeeds. */
            region->revoke_grace_ns = hixl_deadline_ns(
                    engine->opts.connect_timeout_ms);
        }
    }
    if (hixl_now_ns() < region->revoke_grace_ns) {
        pthread_mutex_unlock(&engine->lock);
        return hixl_error(HIXL_TIMEOUT, "a peer did not confirm the "
                          "revocation of region [0x%" PRIx64 ", +%" PRIu64
                          ") within %d ms and was disconnected; writes it "
                          "posted may still land, so keep the memory and "
                          "call hixl_deregister_mem again after %d ms",
                          region->range.addr, region->range.len,
                          engine->opts.connect_timeout_ms,
                          hixl_ms_left(region->revoke_grace_ns));
    }
    if (!hixl_engine_wait_busy(engine, deadline, hixl_region_idle, region)) {
        pthread_mutex_unlock(&engine->lock);
        return hixl_error(HIXL_TIMEOUT, "region [0x%" PRIx64 ", +%" PRIu64
                          ") is still being read or written by %u message(s) "
                          "of peers after %d ms; keep the memory and call "
                          "hixl_deregister_mem again", region->range.addr,
                          region->range.len, atomic_load(&region->am_busy),
                          engine->opts.connect_timeout_ms);
    }
    pthread_rwlock_wrlock(&engine->serve_lock);
    hixl_mem_table_remove(&engine->mem, region);
    pthread_rwlock_unlock(&engine->serve_lock);
    pthread_mutex_unlock(&engine->lock);

    hixl_region_free(engine, region);
    return HIXL_SUCCESS;
}

void hixl_memory_cleanup(hixl_engine_t *engine)
{
    hixl_region_t *region;
    size_t i;

    for (i = 0; i < engine->mem.nslots; ++i) {
        region = engine->mem.slots[i].region;
        if (region != NULL) {
            hixl_region_free(engine, region);
        }
    }
    hixl_mem_table_cleanup(&engine->mem);
    free(engine->memory);
    engine->memory = NULL;
}

/* ---- the peer's side: its regions in our table ---------------------------- */

/* MEM_ADD: a region the listener registered (and its composite key). */
static int hixl_on_mem_add(hixl_engine_t *engine, hixl_peer_t *peer,
                           const hixl_msg_t *msg)
{
    uint64_t addr = msg->u.mem_add.addr, len = msg->u.mem_add.len;
    hixl_rregion_t *rr;
    hixl_status_t status = HIXL_FAILED;
    ucs_status_t ustatus;

    if (peer->ep == NULL) {
        return hixl_ctrl_protocol_error(engine, peer, msg, "before the "
                                        "handshake answer");
    }
    if ((len == 0) || (addr + len < addr)) {
        hixl_error(HIXL_FAILED, "of a bad range [0x%" PRIx64 ", +%" PRIu64
                   ")", addr, len);
        goto refuse;
    }
    if ((msg->u.mem_add.mem_type != HIXL_MEM_HOST) &&
        (msg->u.mem_add.mem_type != HIXL_MEM_DEVICE)) {
        hixl_error(HIXL_FAILED, "of memory type %u", msg->u.mem_add.mem_type);
        goto refuse;
    }
    /* a composite key: the UCX part (host memory always, device memory
     * when NIC-registered) and the device part (device memory) */
    if ((msg->u.mem_add.rkey.len == 0) &&
        ((msg->u.mem_add.mem_type == HIXL_MEM_HOST) ||
         (msg->u.mem_add.dev_key.len == 0))) {
        hixl_error(HIXL_FAILED, "of [0x%" PRIx64 ", +%" PRIu64 ") without a "
                   "remote key", addr, len);
        goto refuse;
    }
    rr = calloc(1, sizeof(*rr));
    if (rr == NULL) {
        hixl_error(HIXL_FAILED, "out of memory for a remote region");
        goto refuse;
    }
    rr->range.addr = addr;
    rr->range.len  = len;
    rr->id         = msg->u.mem_add.id;
    rr->mem_type   = msg->u.mem_add.mem_type;
    if (msg->u.mem_add.rkey.len != 0) {
        ustatus = ucp_ep_rkey_unpack(peer->ep, msg->u.mem_add.rkey.ptr,
                                     &rr->rkey);
        if (ustatus != UCS_OK) {
            rr->rkey = NULL;
            hixl_error(HIXL_FAILED, "cannot unpack the remote key of region "
                       "[0x%" PRIx64 ", +%" PRIu64 "): %s", addr, len,
                       ucs_status_string(ustatus));
            goto free;
        }
    }
    if (rr->mem_type == HIXL_MEM_DEVICE) {
        status = hixl_dev_rregion_create(engine, rr,
                                         msg->u.mem_add.dev_key.ptr,
                                         msg->u.mem_add.dev_key.len);
        if (status != HIXL_SUCCESS) {
            goto free;
        }
    }
    rr->path = hixl_xfer_path_of_region(engine, peer, rr);
    /* which path a peer's region takes is otherwise invisible: the rma
     * variants of the tests look for this line (test/it/rma_path.sh) */
    hixl_log_debug("%s: region [0x%" PRIx64 ", +%" PRIu64 ") by path %s",
                   peer->name, addr, len, hixl_paths[rr->path].name);
    if ((rr->mapped != NULL) &&
        (engine->opts.prefault != HIXL_PREFAULT_NONE)) {
        hixl_prefault_later(engine, rr->mapped, len);   /* mapped here */
    }
    status = hixl_rtable_insert(&peer->rtab, rr,
                                engine->opts.max_remote_regions);
    if (status == HIXL_SUCCESS) {
        return 0;
    }
free:
    hixl_rregion_free(engine, rr);   /* keeps the message */
refuse:
    return hixl_ctrl_protocol_error(engine, peer, msg, hixl_error_message());
}

/* MEM_DEL: the listener revokes a region. */
static int hixl_on_mem_del(hixl_engine_t *engine, hixl_peer_t *peer,
                           const hixl_msg_t *msg)
{
    if (hixl_rtable_revoke(engine, &peer->rtab, msg->u.mem_del.id,
                           msg->u.mem_del.addr) != HIXL_SUCCESS) {
        return hixl_ctrl_protocol_error(engine, peer, msg,
                                        hixl_error_message());
    }
    if (atomic_load(&peer->inflight) == 0) {
        hixl_rtable_reap(engine, &peer->rtab);
    }
    return 0;
}

/* ---- SYNC: the barrier behind refreshes and revocations -------------------- */

/* A SYNC from the other side asks us to finish everything we posted to it
 * before answering (the revoke barrier of a deregistration): the endpoint
 * flush, then the device copies posted to it (which also closes imports
 * of regions it revoked: device/device.h). */
typedef struct hixl_sync_reply {
    hixl_ep_flush_waiter_t fw;   /* first: the flush service's record */
    hixl_engine_t     *engine;
    hixl_peer_t       *peer;
    uint64_t           token;
    uint64_t           dev_seq;
    hixl_dev_barrier_t barrier;
} hixl_sync_reply_t;

static void hixl_send_sync_ack(hixl_peer_t *peer, uint64_t token)
{
    hixl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.type         = CTRL_SYNC_ACK;
    msg.u.sync.token = token;
    hixl_ctrl_send(peer, &msg);
}

static void hixl_sync_reply_send(void *arg)
{
    hixl_sync_reply_t *reply = arg;

    hixl_send_sync_ack(reply->peer, reply->token);
    hixl_peer_release(reply->peer);
    free(reply);
}

static void hixl_sync_flushed(hixl_ep_flush_waiter_t *w, ucs_status_t ustatus)
{
    hixl_sync_reply_t *reply = (hixl_sync_reply_t*)w;

    /* On error the peer is being closed anyway; the ack would be moot. */
    if (ustatus == UCS_OK) {
        hixl_dev_barrier(reply->engine, reply->peer, reply->dev_seq,
                         hixl_sync_reply_send, reply, &reply->barrier);
        return;
    }
    hixl_peer_release(reply->peer);
    free(reply);
}

static int hixl_on_sync(hixl_engine_t *engine, hixl_peer_t *peer,
                        const hixl_msg_t *msg)
{
    hixl_sync_reply_t *reply;

    if (peer->ep_flush == NULL) {
        hixl_send_sync_ack(peer, msg->u.sync.token);
        return 0;
    }
    reply = calloc(1, sizeof(*reply));
    if (reply == NULL) {
        hixl_peer_close(engine, peer, HIXL_FAILED, "out of memory answering "
                        "SYNC");
        return 1;
    }
    hixl_peer_retain(peer);
    reply->fw.cb   = hixl_sync_flushed;
    reply->engine  = engine;
    reply->peer    = peer;
    reply->token   = msg->u.sync.token;
    reply->dev_seq = hixl_dev_seq(engine);
    hixl_ep_flush_add(peer->ep_flush, &reply->fw, 0);
    hixl_progress_kick(engine);
    return 0;
}

static int hixl_on_sync_ack(hixl_engine_t *engine, hixl_peer_t *peer,
                            const hixl_msg_t *msg)
{
    if (msg->u.sync.token > peer->mem->sync_acked) {
        peer->mem->sync_acked = msg->u.sync.token;
    }
    pthread_cond_broadcast(&engine->cond);
    return 0;
}

typedef struct hixl_refresh_wait {
    hixl_peer_t *peer;
    uint64_t     token;
} hixl_refresh_wait_t;

static int hixl_refresh_acked(void *arg)
{
    hixl_refresh_wait_t *w = arg;

    return (w->peer->state == HIXL_PEER_CLOSED) ||
           (w->peer->mem->sync_acked >= w->token);
}

hixl_status_t hixl_memory_refresh(hixl_engine_t *engine, hixl_peer_t *peer,
                                  uint64_t deadline_ns)
{
    hixl_refresh_wait_t w = {peer, ++engine->memory->next_token};
    hixl_status_t status;
    hixl_msg_t msg;

    hixl_assert_locked(&engine->lock);
    memset(&msg, 0, sizeof(msg));
    msg.type         = CTRL_SYNC;
    msg.u.sync.token = w.token;
    status = hixl_ctrl_send(peer, &msg);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_peer_retain(peer);
    hixl_engine_wait(engine, deadline_ns, hixl_refresh_acked, &w);
    status = (peer->state == HIXL_PEER_CLOSED) ? HIXL_NOT_CONNECTED :
             (peer->mem->sync_acked >= w.token) ? HIXL_SUCCESS : HIXL_TIMEOUT;
    hixl_peer_release(peer);
    return status;
}

/* ---- set-up ------------------------------------------------------------------ */

static hixl_status_t hixl_mem_peer_ready(hixl_engine_t *engine,
                                         hixl_peer_t *peer)
{
    (void)engine;
    peer->mem = calloc(1, sizeof(*peer->mem));
    return (peer->mem != NULL) ? HIXL_SUCCESS :
           hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a peer");
}

static void hixl_mem_peer_destroy(hixl_peer_t *peer)
{
    free(peer->mem);
    peer->mem = NULL;
}

static const hixl_peer_hooks_t hixl_memory_hooks = {
    .name     = "memory",
    .ready    = hixl_mem_peer_ready,
    .accepted = hixl_mem_announce,
    .destroy  = hixl_mem_peer_destroy,
};

hixl_status_t hixl_memory_init(hixl_engine_t *engine)
{
    unsigned table = HIXL_CTRL_ON_OUTGOING | HIXL_CTRL_ANY_STATE;
    unsigned ready = HIXL_CTRL_ON_EITHER | HIXL_CTRL_WHEN_READY;
    hixl_status_t status;

    engine->memory = calloc(1, sizeof(*engine->memory));
    if (engine->memory == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
    }
    status = hixl_peer_hooks_add(engine, &hixl_memory_hooks);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    hixl_ctrl_handle(engine, CTRL_MEM_ADD, hixl_on_mem_add, table);
    hixl_ctrl_handle(engine, CTRL_MEM_DEL, hixl_on_mem_del, table);
    hixl_ctrl_handle(engine, CTRL_SYNC, hixl_on_sync, ready);
    hixl_ctrl_handle(engine, CTRL_SYNC_ACK, hixl_on_sync_ack, ready);
    return HIXL_SUCCESS;
}
