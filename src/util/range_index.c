/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Range index: an AVL tree threaded through the indexed ranges (see
 * range_index.h).  Every change walks from where it happened to the root
 * restoring heights and balance, at most 1.44 log2(n) steps; no early stop,
 * which keeps the code one loop.
 */
#include "config.h"
#include "util/range_index.h"
#include "util/debug.h"

#include <string.h>

static inline int32_t hixl_range_height(const hixl_range_t *n)
{
    return (n != NULL) ? n->height : 0;
}

static void hixl_range_update(hixl_range_t *n)
{
    int32_t l = hixl_range_height(n->child[0]);
    int32_t r = hixl_range_height(n->child[1]);

    n->height = 1 + ((l > r) ? l : r);
}

/* Put `to` where `from` hangs below parent (or at the root). */
static void hixl_range_replace(hixl_range_index_t *idx, hixl_range_t *parent,
                               hixl_range_t *from, hixl_range_t *to)
{
    if (parent == NULL) {
        idx->root = to;
    } else {
        parent->child[parent->child[1] == from] = to;
    }
    if (to != NULL) {
        to->parent = parent;
    }
}

/* Rotate x down towards side `dir` (1: right rotation, its lower child
 * rises); returns the node now in x's place. */
static hixl_range_t *hixl_range_rotate(hixl_range_index_t *idx, hixl_range_t *x,
                                       int dir)
{
    hixl_range_t *y = x->child[!dir];

    x->child[!dir] = y->child[dir];
    if (y->child[dir] != NULL) {
        y->child[dir]->parent = x;
    }
    hixl_range_replace(idx, x->parent, x, y);
    y->child[dir] = x;
    x->parent     = y;
    hixl_range_update(x);
    hixl_range_update(y);
    return y;
}

/* Restore heights and balance from n up to the root. */
static void hixl_range_rebalance(hixl_range_index_t *idx, hixl_range_t *n)
{
    hixl_range_t *c;
    int32_t       bal;
    int           heavy;

    for (; n != NULL; n = n->parent) {
        hixl_range_update(n);
        bal = hixl_range_height(n->child[0]) - hixl_range_height(n->child[1]);
        if ((bal >= -1) && (bal <= 1)) {
            continue;
        }
        heavy = (bal < 0); /* the side that is two higher */
        c     = n->child[heavy];
        if (hixl_range_height(c->child[!heavy]) >
            hixl_range_height(c->child[heavy])) {
            hixl_range_rotate(idx, c, heavy); /* inner grandchild up */
        }
        n = hixl_range_rotate(idx, n, !heavy);
    }
}

hixl_range_t *hixl_range_overlap(const hixl_range_index_t *idx, uint64_t addr,
                                 uint64_t len)
{
    hixl_range_t *n = idx->root, *below = NULL, *above = NULL;

    /* one descent: the last range starting at or below addr and the first
     * starting above it; only these two can overlap without containing
     * another that starts in between */
    while (n != NULL) {
        if (n->addr <= addr) {
            below = n;
            n     = n->child[1];
        } else {
            above = n;
            n     = n->child[0];
        }
    }
    if ((below != NULL) && (addr - below->addr < below->len)) {
        return below;
    }
    if ((above != NULL) && (above->addr - addr < len)) {
        return above;
    }
    return NULL;
}

hixl_status_t hixl_range_insert(hixl_range_index_t *idx, hixl_range_t *item)
{
    hixl_range_t **link = &idx->root, *parent = NULL;

    while (*link != NULL) {
        parent = *link;
        link   = &parent->child[item->addr >= parent->addr];
    }
    item->child[0] = NULL;
    item->child[1] = NULL;
    item->parent   = parent;
    item->height   = 1;
    *link          = item;
    hixl_range_rebalance(idx, parent);
    idx->count++;
    idx->hint = item;
    return HIXL_SUCCESS;
}

static int hixl_range_member(const hixl_range_index_t *idx,
                             const hixl_range_t       *item)
{
    const hixl_range_t *n = item;

    /* the item's own links lead to the root of the tree it is in; a range
     * never inserted (or removed: its links are cleared) has none */
    if ((item->height == 0) || (idx->root == NULL)) {
        return 0;
    }
    while (n->parent != NULL) {
        n = n->parent;
    }
    return n == idx->root;
}

void hixl_range_remove(hixl_range_index_t *idx, hixl_range_t *item)
{
    hixl_range_t *s, *start, *child;

    if (!hixl_range_member(idx, item)) {
        return;
    }
    if ((item->child[0] != NULL) && (item->child[1] != NULL)) {
        /* its successor (no lower child) takes its place */
        for (s = item->child[1]; s->child[0] != NULL; s = s->child[0]) {
        }
        if (s->parent != item) {
            start = s->parent;
            hixl_range_replace(idx, start, s, s->child[1]);
            s->child[1]         = item->child[1];
            s->child[1]->parent = s;
        } else {
            start = s;
        }
        s->child[0]         = item->child[0];
        s->child[0]->parent = s;
        hixl_range_replace(idx, item->parent, item, s);
        s->height = item->height;
    } else {
        child = (item->child[0] != NULL) ? item->child[0] : item->child[1];
        start = item->parent;
        hixl_range_replace(idx, start, item, child);
    }
    hixl_range_rebalance(idx, start);
    hixl_assert(idx->count >= 1); /* it was a member */
    idx->count--;
    if (idx->hint == item) {
        idx->hint = NULL;
    }
    memset(item->child, 0, sizeof(item->child));
    item->parent = NULL;
    item->height = 0;
}

hixl_range_t *hixl_range_first(const hixl_range_index_t *idx)
{
    hixl_range_t *n = idx->root;

    while ((n != NULL) && (n->child[0] != NULL)) {
        n = n->child[0];
    }
    return n;
}

hixl_range_t *hixl_range_next(const hixl_range_t *r)
{
    const hixl_range_t *n;

    if (r->child[1] != NULL) {
        for (n = r->child[1]; n->child[0] != NULL; n = n->child[0]) {
        }
        return (hixl_range_t *)n;
    }
    /* up until we come from a lower child */
    for (n = r; (n->parent != NULL) && (n->parent->child[1] == n);
         n = n->parent) {
    }
    return n->parent;
}

void hixl_range_index_drain(hixl_range_index_t *idx,
                            void (*fn)(hixl_range_t *r, void *arg), void *arg)
{
    hixl_range_t *n = idx->root, *parent;

    /* descend to a leaf, cut it off, hand it over, go back up */
    while (n != NULL) {
        if (n->child[0] != NULL) {
            n = n->child[0];
            continue;
        }
        if (n->child[1] != NULL) {
            n = n->child[1];
            continue;
        }
        parent = n->parent;
        if (parent != NULL) {
            parent->child[parent->child[1] == n] = NULL;
        }
        n->parent = NULL;
        n->height = 0;
        fn(n, arg);
        n = parent;
    }
    memset(idx, 0, sizeof(*idx));
}

void hixl_range_index_cleanup(hixl_range_index_t *idx)
{
    memset(idx, 0, sizeof(*idx));
}
