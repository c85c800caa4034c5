/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transfers by block table (hixl.h, "Transfers by block table").
 *
 * A prepared layout is each block's address, checked once against the
 * regions of its engine.  A request by block ids becomes the descriptors
 * hixl_transfer_async takes, built in one pass under the engine lock (the
 * ids bounds-checked on the way), so it is checked and posted exactly as
 * any transfer is: a region deregistered since the layout was prepared is
 * refused there, never written.  What a block table saves is the caller's
 * side: one call and two integer arrays however many blocks, instead of a
 * descriptor built per block in the application's language.
 *
 * Layouts live on a list of their engine (engine->lock), so a handle that
 * is not one of its engine's live layouts is refused, and finalize frees
 * what the application left.
 */
#include "config.h"
#include "ops/blocks.h"
#include "util/args.h"
#include "util/debug.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct hixl_blocks {
    struct hixl_blocks *next;
    int                 remote;        /* of a remote engine's memory */
    char                peer[HIXL_ENGINE_NAME_MAX + 1];   /* its name */
    uint64_t            block_size;
    uint64_t            num_blocks;
    uint64_t            addrs[];       /* each block's address */
};

/* Whether blocks is one of engine's live layouts (engine->lock held). */
static int hixl_blocks_live(hixl_engine_t *engine,
                            const struct hixl_blocks *blocks)
{
    const struct hixl_blocks *b;

    hixl_assert_locked(&engine->lock);
    for (b = engine->blocks; b != NULL; b = b->next) {
        if (b == blocks) {
            return 1;
        }
    }
    return 0;
}

static hixl_status_t hixl_blocks_check_layout(const hixl_block_layout_t *l)
{
    uint64_t stride, i;

    if (l == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "layout is NULL");
    }
    if ((l->base == 0) || (l->block_size == 0) || (l->num_blocks == 0)) {
        return hixl_error(HIXL_PARAM_INVALID, "layout: base 0x%" PRIx64
                          ", block_size %" PRIu64 ", num_blocks %" PRIu64
                          ": none may be 0", l->base, l->block_size,
                          l->num_blocks);
    }
    if (l->num_blocks > UINT32_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "layout: %" PRIu64 " blocks; "
                          "block ids are 32-bit", l->num_blocks);
    }
    stride = (l->stride != 0) ? l->stride : l->block_size;
    for (i = 0; i < l->num_blocks; ++i) {
        uint64_t off = (l->offsets != NULL) ? l->offsets[i] : i * stride;

        if ((l->offsets == NULL) && (i != 0) && (off / i != stride)) {
            off = UINT64_MAX;   /* i * stride overflowed */
        }
        if ((off > UINT64_MAX - l->base) ||
            (l->base + off > UINT64_MAX - l->block_size)) {
            return hixl_error(HIXL_PARAM_INVALID, "layout: block %" PRIu64
                              " (offset %" PRIu64 ") overflows the address "
                              "space", i, off);
        }
    }
    return HIXL_SUCCESS;
}

/* Address of block i of a checked layout. */
static uint64_t hixl_blocks_addr(const hixl_block_layout_t *l, uint64_t i)
{
    uint64_t stride = (l->stride != 0) ? l->stride : l->block_size;

    return l->base + ((l->offsets != NULL) ? l->offsets[i] : i * stride);
}

/* Fill b's addresses, each block checked against the regions of its
 * engine (engine->lock held). */
static hixl_status_t hixl_blocks_fill(hixl_engine_t *engine,
                                      hixl_peer_t *peer,
                                      const hixl_block_layout_t *l,
                                      struct hixl_blocks *b)
{
    hixl_range_t *straddle;
    const void *found;
    uint64_t i, addr;

    for (i = 0; i < l->num_blocks; ++i) {
        addr     = hixl_blocks_addr(l, i);
        straddle = NULL;
        found    = (peer == NULL) ?
                       (const void*)hixl_range_find(&engine->mem.by_addr,
                                                    addr, l->block_size,
                                                    &straddle) :
                       (const void*)hixl_rtable_find(&peer->rtab, addr,
                                                     l->block_size,
                                                     &straddle);
        if (found == NULL) {
            return hixl_error(HIXL_PARAM_INVALID, "layout: block %" PRIu64
                              " [0x%" PRIx64 ", +%" PRIu64 ") %s any region "
                              "registered %s%s", i, addr, l->block_size,
                              (straddle != NULL) ? "straddles the end of" :
                              "is not inside",
                              (peer != NULL) ? "by " : "with this engine",
                              (peer != NULL) ? peer->name : "");
        }
        b->addrs[i] = addr;
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_blocks_prepare(hixl_engine_t *engine,
                                  const char *remote_engine,
                                  const hixl_block_layout_t *layout,
                                  hixl_blocks_t *blocks_p)
{
    struct hixl_blocks *b;
    hixl_peer_t *peer = NULL;
    hixl_status_t status;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((remote_engine != NULL) && (*remote_engine == '\0')) {
        return hixl_error(HIXL_PARAM_INVALID, "remote engine name is empty "
                          "(NULL prepares this engine's memory)");
    }
    if (blocks_p == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "blocks_p is NULL");
    }
    status = hixl_blocks_check_layout(layout);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (layout->num_blocks > (SIZE_MAX - sizeof(*b)) / sizeof(uint64_t)) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "layout: %" PRIu64
                          " blocks do not fit in memory", layout->num_blocks);
    }
    b = calloc(1, sizeof(*b) + layout->num_blocks * sizeof(uint64_t));
    if (b == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %"
                          PRIu64 " blocks", layout->num_blocks);
    }
    b->block_size = layout->block_size;
    b->num_blocks = layout->num_blocks;
    pthread_mutex_lock(&engine->lock);
    if (remote_engine != NULL) {
        status = hixl_peer_lookup(engine, remote_engine, 1, &peer);
    }
    if (status == HIXL_SUCCESS) {
        status = hixl_blocks_fill(engine, peer, layout, b);
    }
    if (status == HIXL_SUCCESS) {
        b->remote = (peer != NULL);
        if (peer != NULL) {
            snprintf(b->peer, sizeof(b->peer), "%s", peer->name);
        }
        b->next        = engine->blocks;
        engine->blocks = b;
        *blocks_p      = b;
    }
    pthread_mutex_unlock(&engine->lock);
    if (status != HIXL_SUCCESS) {
        free(b);
    }
    return status;
}

hixl_status_t hixl_blocks_release(hixl_engine_t *engine, hixl_blocks_t blocks)
{
    struct hixl_blocks **pp;

    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    pthread_mutex_lock(&engine->lock);
    for (pp = &engine->blocks; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == blocks) {
            *pp = blocks->next;
            pthread_mutex_unlock(&engine->lock);
            free(blocks);
            return HIXL_SUCCESS;
        }
    }
    pthread_mutex_unlock(&engine->lock);
    return hixl_error(HIXL_PARAM_INVALID, "blocks %p are not a layout this "
                      "engine prepared (released already?)", (void*)blocks);
}

void hixl_blocks_cleanup(hixl_engine_t *engine)
{
    struct hixl_blocks *b;

    while ((b = engine->blocks) != NULL) {
        engine->blocks = b->next;
        free(b);
    }
}

/* The two layouts belong together and to this call (engine->lock held). */
static hixl_status_t hixl_blocks_pair(hixl_engine_t *engine,
                                      const char *remote_engine,
                                      const struct hixl_blocks *local,
                                      const struct hixl_blocks *remote)
{
    hixl_peer_t *peer;
    hixl_status_t status;

    if (!hixl_blocks_live(engine, local) || local->remote) {
        return hixl_error(HIXL_PARAM_INVALID, "local blocks are not a layout "
                          "of this engine's memory it prepared");
    }
    if (!hixl_blocks_live(engine, remote) || !remote->remote) {
        return hixl_error(HIXL_PARAM_INVALID, "remote blocks are not a "
                          "layout of a remote engine's memory this engine "
                          "prepared");
    }
    if (local->block_size != remote->block_size) {
        return hixl_error(HIXL_PARAM_INVALID, "block sizes differ: local %"
                          PRIu64 ", remote %" PRIu64, local->block_size,
                          remote->block_size);
    }
    status = hixl_peer_lookup(engine, remote_engine, 1, &peer);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if (strcmp(peer->name, remote->peer) != 0) {
        return hixl_error(HIXL_PARAM_INVALID, "remote blocks were prepared "
                          "for %s, not %s", remote->peer, peer->name);
    }
    return HIXL_SUCCESS;
}

/* descs[k] for each pair of ids, bounds-checked. */
static hixl_status_t hixl_blocks_descs(const struct hixl_blocks *local,
                                       const uint32_t *local_ids,
                                       const struct hixl_blocks *remote,
                                       const uint32_t *remote_ids,
                                       size_t count,
                                       hixl_transfer_op_desc_t *descs)
{
    size_t k;

    for (k = 0; k < count; ++k) {
        if ((local_ids[k] >= local->num_blocks) ||
            (remote_ids[k] >= remote->num_blocks)) {
            int loc = local_ids[k] >= local->num_blocks;

            return hixl_error(HIXL_PARAM_INVALID, "%s block id %" PRIu32
                              " at position %zu is not below the layout's %"
                              PRIu64 " blocks", loc ? "local" : "remote",
                              loc ? local_ids[k] : remote_ids[k], k,
                              loc ? local->num_blocks : remote->num_blocks);
        }
        descs[k].local_addr  = local->addrs[local_ids[k]];
        descs[k].remote_addr = remote->addrs[remote_ids[k]];
        descs[k].len         = local->block_size;
    }
    return HIXL_SUCCESS;
}

hixl_status_t hixl_transfer_blocks_async(
    hixl_engine_t *engine, const char *remote_engine, hixl_transfer_op_t op,
    hixl_blocks_t local, const uint32_t *local_ids, hixl_blocks_t remote,
    const uint32_t *remote_ids, size_t count,
    const hixl_transfer_args_t *args, hixl_req_t *req_p)
{
    hixl_transfer_op_desc_t *descs;
    hixl_status_t status = hixl_check_remote(engine, remote_engine);

    if (status != HIXL_SUCCESS) {
        return status;
    }
    if ((local_ids == NULL) || (remote_ids == NULL)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s block ids are NULL",
                          (local_ids == NULL) ? "local" : "remote");
    }
    if (count == 0) {
        return hixl_error(HIXL_PARAM_INVALID, "no blocks (count 0)");
    }
    if (count > SIZE_MAX / sizeof(*descs)) {
        return hixl_error(HIXL_PARAM_INVALID, "count %zu is too large",
                          count);
    }
    descs = malloc(count * sizeof(*descs));
    if (descs == NULL) {
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %zu "
                          "blocks", count);
    }
    pthread_mutex_lock(&engine->lock);
    status = hixl_blocks_pair(engine, remote_engine, local, remote);
    if (status == HIXL_SUCCESS) {
        status = hixl_blocks_descs(local, local_ids, remote, remote_ids,
                                   count, descs);
    }
    pthread_mutex_unlock(&engine->lock);
    if (status == HIXL_SUCCESS) {
        status = hixl_transfer_async(engine, remote_engine, op, descs, count,
                                     args, req_p);
    }
    free(descs);
    return status;
}
