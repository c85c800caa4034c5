/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device regions: local ones (which plugin claims the memory, its export
 * and the composite key peers get) and remote ones (the peer's key
 * checked and kept; its memory imported on first use, on this node only).
 *
 * Two engines of one process (CANN hixl's hixl_example_d2rd runs so):
 * device runtimes refuse a process the import of its own export
 * (aclrtIpcMemImportByKey), but none is needed, the memory is already
 * mapped here.  So every device region an engine of this process exports
 * is listed, and a peer region whose key and range are one of them is
 * used in place: the IPC path then copies device to device directly.  The
 * engines are listed too, so that host memory of a peer engine in this
 * process is reached by one device copy as well (hixl_example_d2rh with
 * BufferPool "0:0", no staging pool).
 */
#include "config.h"
#include "device/device_mem.h"
#include "core/engine.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The device regions the engines of this process export.  A key holds
 * the plugin, the node and the plugin's blob (the Ascend one: the
 * exporter's pid and IPC key), so equal keys and ranges are one region. */
static pthread_mutex_t hixl_dev_local_lock = PTHREAD_MUTEX_INITIALIZER;
static hixl_dev_reg_t *hixl_dev_local_head;

static void hixl_dev_local_add(hixl_dev_reg_t *dreg)
{
    pthread_mutex_lock(&hixl_dev_local_lock);
    dreg->next_local    = hixl_dev_local_head;
    hixl_dev_local_head = dreg;
    pthread_mutex_unlock(&hixl_dev_local_lock);
}

static void hixl_dev_local_del(hixl_dev_reg_t *dreg)
{
    hixl_dev_reg_t **pp;

    pthread_mutex_lock(&hixl_dev_local_lock);
    for (pp = &hixl_dev_local_head; *pp != NULL; pp = &(*pp)->next_local) {
        if (*pp == dreg) {
            *pp = dreg->next_local;
            break;
        }
    }
    pthread_mutex_unlock(&hixl_dev_local_lock);
}

/* Whether [addr, +len) with this key is exported by an engine of this
 * process; *attr is its device then. */
static int hixl_dev_local_find(const void *key, size_t key_len, uint64_t addr,
                               uint64_t len, hixl_mem_attr_t *attr)
{
    hixl_dev_reg_t *d;
    int found = 0;

    pthread_mutex_lock(&hixl_dev_local_lock);
    for (d = hixl_dev_local_head; (d != NULL) && !found; d = d->next_local) {
        found = (d->addr == addr) && (d->len == len) &&
                (d->key_len == key_len) && !memcmp(d->key, key, key_len);
        if (found) {
            *attr = d->attr;
        }
    }
    pthread_mutex_unlock(&hixl_dev_local_lock);
    return found;
}

/* Append "name: why" to a reasons buffer. */
static void hixl_dev_reason(char *buf, size_t len, const char *name,
                            const char *why)
{
    size_t used = strlen(buf), nlen = strlen(name);

    /* a plugin's own message may start with its name already */
    if ((strncmp(why, name, nlen) == 0) && (why[nlen] == ':')) {
        name = "";
    }
    if (used + 4 < len) {
        snprintf(buf + used, len - used, "%s%s%s%s", used ? "; " : "", name,
                 *name ? ": " : "", why);
    }
}

/* The engines of this process with device support. */
typedef struct hixl_dev_local_eng {
    struct hixl_dev_local_eng *next;
    const hixl_engine_t       *engine;
} hixl_dev_local_eng_t;

static hixl_dev_local_eng_t *hixl_dev_local_engines;

void hixl_dev_local_engine(hixl_engine_t *engine, int add)
{
    hixl_dev_local_eng_t **pp, *e;

    pthread_mutex_lock(&hixl_dev_local_lock);
    if (add) {
        e = malloc(sizeof(*e));
        if (e != NULL) {   /* without it, peers here take other paths */
            e->engine              = engine;
            e->next                = hixl_dev_local_engines;
            hixl_dev_local_engines = e;
        }
    } else {
        for (pp = &hixl_dev_local_engines; *pp != NULL; pp = &(*pp)->next) {
            if ((*pp)->engine == engine) {
                e   = *pp;
                *pp = e->next;
                free(e);
                break;
            }
        }
    }
    pthread_mutex_unlock(&hixl_dev_local_lock);
}

int hixl_dev_peer_local(const hixl_engine_t *engine, const hixl_peer_t *peer)
{
    hixl_dev_local_eng_t *e;
    int found = 0;

    if (!hixl_peer_same_host(peer)) {
        return 0;
    }
    pthread_mutex_lock(&hixl_dev_local_lock);
    for (e = hixl_dev_local_engines; (e != NULL) && !found; e = e->next) {
        found = (e->engine != engine) && e->engine->listening &&
                !strcmp(e->engine->name.canon, peer->name);
    }
    pthread_mutex_unlock(&hixl_dev_local_lock);
    return found;
}

hixl_status_t hixl_dev_region_register(hixl_engine_t *engine,
                                       hixl_region_t *region)
{
    void *addr = (void*)(uintptr_t)region->range.addr;
    size_t len = region->range.len;
    hixl_dev_t *dev = engine->dev;
    uint8_t blob[HIXL_MEM_BLOB_MAX];
    hixl_dev_plugin_t *dp = NULL;
    char reasons[768] = "", dirs[512];
    hixl_mem_attr_t attr;
    hixl_dev_reg_t *dreg;
    hixl_status_t status;
    size_t blob_len, i;
    void *reg;

    if ((dev == NULL) || (dev->nplugins == 0)) {
        hixl_plugins_searched(dirs, sizeof(dirs));
        return hixl_error(HIXL_UNSUPPORTED, "no memory-type plugin is loaded "
                          "to handle device memory at 0x%" PRIx64 " (%s; "
                          "searched %s; hixl_info lists plugins)",
                          region->range.addr,
                          !strcmp(engine->opts.plugins, "none") ?
                          "hixl.Plugins=none" : "none found", dirs);
    }
    pthread_mutex_lock(&dev->lock);
    for (i = 0; i < dev->nplugins; ++i) {
        if (dev->plugins[i].ctx == NULL) {
            hixl_dev_reason(reasons, sizeof(reasons),
                            dev->plugins[i].plugin->name,
                            dev->plugins[i].why);
            continue;
        }
        memset(&attr, 0, sizeof(attr));
        status = dev->plugins[i].ops->detect(dev->plugins[i].ctx, addr, len,
                                             &attr);
        if (status == HIXL_SUCCESS) {
            dp = &dev->plugins[i];
            break;
        }
        hixl_dev_reason(reasons, sizeof(reasons),
                        dev->plugins[i].plugin->name, hixl_error_message());
    }
    if (dp == NULL) {
        pthread_mutex_unlock(&dev->lock);
        return hixl_error(HIXL_UNSUPPORTED, "no memory-type plugin claims "
                          "device memory [0x%" PRIx64 ", +%" PRIu64 "): %s",
                          region->range.addr, region->range.len, reasons);
    }
    blob_len = sizeof(blob);
    status   = dp->ops->reg(dp->ctx, addr, len, &attr, &reg, blob, &blob_len);
    if (status != HIXL_SUCCESS) {
        pthread_mutex_unlock(&dev->lock);
        return status;
    }
    dreg = calloc(1, sizeof(*dreg));
    if ((dreg != NULL) && (blob_len <= sizeof(blob))) {
        /* 0 (refused below) when a field is beyond its limit */
        dreg->key_len = hixl_dev_key_pack(dreg->key, dp->plugin->name,
                                          engine->host_id, attr.device, blob,
                                          blob_len);
    }
    if ((dreg == NULL) || (dreg->key_len == 0)) {
        dp->ops->dereg(dp->ctx, reg);
        pthread_mutex_unlock(&dev->lock);
        free(dreg);
        return hixl_error((dreg == NULL) ? HIXL_RESOURCE_EXHAUSTED :
                          HIXL_FAILED, "%s", (dreg == NULL) ? "out of memory"
                          : "memory-type plugin produced an oversized key");
    }
    pthread_mutex_unlock(&dev->lock);
    dreg->dp    = dp;
    dreg->reg   = reg;
    dreg->attr  = attr;
    dreg->addr  = region->range.addr;
    dreg->len   = region->range.len;
    region->dev = dreg;
    hixl_dev_local_add(dreg);
    hixl_log_debug("device region [0x%" PRIx64 ", +%" PRIu64 ") on %s device "
                   "%d", region->range.addr, region->range.len,
                   dp->plugin->name, attr.device);
    return HIXL_SUCCESS;
}

void hixl_dev_region_release(hixl_engine_t *engine, hixl_region_t *region)
{
    hixl_dev_reg_t *dreg = region->dev;

    if (dreg == NULL) {
        return;
    }
    hixl_dev_local_del(dreg);
    pthread_mutex_lock(&engine->dev->lock);
    dreg->dp->ops->dereg(dreg->dp->ctx, dreg->reg);
    pthread_mutex_unlock(&engine->dev->lock);
    free(dreg);
    region->dev = NULL;
}

hixl_status_t hixl_dev_rregion_create(hixl_engine_t *engine,
                                      hixl_rregion_t *rr, const void *key,
                                      size_t key_len)
{
    hixl_dev_t *dev = engine->dev;
    hixl_dev_plugin_t *dp = NULL;
    hixl_dev_key_t k;
    hixl_remote_dev_t *remote_dev;
    hixl_status_t status;
    uint64_t exported = 0;
    char err[160];
    size_t i;

    if (hixl_dev_key_unpack(key, key_len, &k, err, sizeof(err)) != 0) {
        return hixl_error(HIXL_FAILED, "MEM_ADD of [0x%" PRIx64 ", +%" PRIu64
                          "): %s", rr->range.addr, rr->range.len, err);
    }
    remote_dev = calloc(1, sizeof(*remote_dev));
    if (remote_dev == NULL) {
        return hixl_error(HIXL_FAILED, "out of memory for a remote region");
    }
    atomic_init(&remote_dev->refs, 1);
    snprintf(remote_dev->plugin, sizeof(remote_dev->plugin), "%s", k.plugin);
    remote_dev->device    = k.device;
    remote_dev->same_node = !strcmp(k.node, engine->host_id);
    for (i = 0; (dev != NULL) && (i < dev->nplugins); ++i) {
        if ((dev->plugins[i].ctx != NULL) &&
            !strcmp(dev->plugins[i].plugin->name, k.plugin)) {
            dp = &dev->plugins[i];
        }
    }
    if (dp != NULL) {
        pthread_mutex_lock(&dev->lock);
        status = dp->ops->unpack(dp->ctx, k.blob, k.blob_len, &remote_dev->rmem,
                                 &exported);
        if ((status == HIXL_SUCCESS) && (exported != rr->range.len)) {
            dp->ops->release(dp->ctx, remote_dev->rmem);
            status = hixl_error(HIXL_FAILED, "its %s key exports %" PRIu64
                                " bytes", k.plugin, exported);
        }
        pthread_mutex_unlock(&dev->lock);
        if (status != HIXL_SUCCESS) {
            free(remote_dev);
            return hixl_error(HIXL_FAILED, "MEM_ADD of device region [0x%"
                              PRIx64 ", +%" PRIu64 "): %s", rr->range.addr,
                              rr->range.len, hixl_error_message());
        }
        remote_dev->dp = dp;
        if (remote_dev->same_node &&
            hixl_dev_local_find(key, key_len, rr->range.addr, rr->range.len,
                                &remote_dev->attr)) {
            /* this process' own memory: used in place, never imported */
            remote_dev->own_process  = 1;
            remote_dev->addr         = (void *)(uintptr_t)rr->range.addr;
            remote_dev->import_state = 1;
            hixl_log_debug("device region [0x%" PRIx64 ", +%" PRIu64 ") of "
                           "a peer is this process' own (device %d): "
                           "direct device copies",
                           rr->range.addr, rr->range.len,
                           remote_dev->attr.device);
        }
    }
    rr->dev = remote_dev;
    return HIXL_SUCCESS;
}

void hixl_dev_remote_get(hixl_remote_dev_t *remote_dev)
{
    atomic_fetch_add(&remote_dev->refs, 1);
}

void hixl_dev_remote_put(hixl_engine_t *engine, hixl_remote_dev_t *remote_dev)
{
    unsigned before = atomic_fetch_sub(&remote_dev->refs, 1);

    hixl_assert(before >= 1);   /* never below zero */
    if (before != 1) {
        return;
    }
    if ((remote_dev->dp != NULL) && (remote_dev->rmem != NULL)) {
        /* closes the import: no copy into it is left */
        pthread_mutex_lock(&engine->dev->lock);
        remote_dev->dp->ops->release(remote_dev->dp->ctx, remote_dev->rmem);
        pthread_mutex_unlock(&engine->dev->lock);
    }
    free(remote_dev);
}

hixl_status_t hixl_dev_remote_import(hixl_engine_t     *engine,
                                     hixl_remote_dev_t *remote_dev)
{
    hixl_status_t status;

    (void)engine;
    if (remote_dev->import_state == 0) {
        status =
            remote_dev->dp->ops->import(remote_dev->dp->ctx, remote_dev->rmem,
                                        &remote_dev->addr, &remote_dev->attr);
        if (status == HIXL_SUCCESS) {
            remote_dev->import_state = 1;
        } else {
            remote_dev->import_state = -1;
            snprintf(remote_dev->why, sizeof(remote_dev->why),
                     "IPC import failed: %s", hixl_error_message());
        }
    }
    if (remote_dev->import_state > 0) {
        return HIXL_SUCCESS;
    }
    return hixl_error(HIXL_UNSUPPORTED, "%s", remote_dev->why);
}
