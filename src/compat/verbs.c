/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs of <hixl/hixl_verbs.h> over the core API.
 *
 * A context is an engine, a table of local regions numbered in registration
 * order, the rank table the exchange fills, and a list of streams whose
 * pending writes HixlFlush and HixlStreamSynchronize wait for.  Writes are
 * hixl_transfer_sync / hixl_transfer_async of one WRITE descriptor; the
 * exchange is hixl_connect plus one notify per peer carrying the region
 * table.  Nothing here touches UCX.
 *
 * Why flush is "wait for the pending writes to that region": a core request
 * is COMPLETED only once its bytes are visible at the destination (it ends
 * with an endpoint flush), and a blocking write returns only then, so the
 * writes a flush must cover are exactly the async ones not yet completed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <hixl/hixl_verbs.h>

#include "compat.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Region table message (HIXL_VERBS_MR_NOTIFY), little-endian:
 *   "HXMR"  u32 version  u32 count  u32 reserved
 *   count x { u64 addr, u64 len }      (len 0: deregistered region)      */
#define HV_MAGIC       "HXMR"
#define HV_VERSION     1u
#define HV_HEADER_LEN  16u
#define HV_ENTRY_LEN   16u

/* Sweeps of pending writes spin this many times before sleeping. */
#define HV_SPIN_SWEEPS 256
#define HV_SLEEP_NS    50000L

struct hixl_verbs_mr {
    uint32_t          index;
    void             *addr;
    size_t            len;
    hixl_mem_handle_t handle;
    int               live;
};

typedef struct hv_rmr {
    uint64_t addr;
    uint64_t len;
} hv_rmr_t;

typedef struct hv_rank {
    char     *name;
    int       self;
    int       listening;
    int       have_table;
    uint32_t  num_mrs;
    hv_rmr_t *mrs;
} hv_rank_t;

typedef struct hv_pending {
    hixl_req_t req;
    uint64_t   seq;
    uint32_t   rank;
    uint32_t   mr;
} hv_pending_t;

struct hixl_verbs_stream {
    struct hixl_verbs_ctx    *ctx;
    hv_pending_t             *pending;
    size_t                    count;
    size_t                    reserved;   /* slots of posts in progress */
    size_t                    cap;
    struct hixl_verbs_stream *next;
    struct hixl_verbs_stream *prev;
};

struct hixl_verbs_ctx {
    hixl_engine_t            *engine;
    int                       owns_engine;
    pthread_mutex_t           lock;
    struct hixl_verbs_mr    **mrs;
    uint32_t                  num_mrs;
    uint32_t                  cap_mrs;
    hv_rank_t                *ranks;
    uint32_t                  num_ranks;
    uint32_t                  self_rank;
    int                       exchange_started;
    int                       exchanged;   /* read with acquire */
    int32_t                   timeout_ms;
    uint64_t                  next_seq;
    struct hixl_verbs_stream *streams;
};

/* What a sweep of pending writes waits for. */
typedef struct hv_filter {
    const struct hixl_verbs_stream *stream;   /* NULL: any stream */
    int                             by_target;
    uint32_t                        rank;
    uint32_t                        mr;
    uint64_t                        before_seq;
} hv_filter_t;

static void hv_pause(unsigned *sweeps)
{
    struct timespec ts = {0, HV_SLEEP_NS};

    if (++(*sweeps) < HV_SPIN_SWEEPS) {
        sched_yield();
    } else {
        nanosleep(&ts, NULL);
    }
}

/* An engine name listens when it has a non-zero port: "ip:port" or
 * "[v6]:port"; "ip" and a bare IPv6 address are client-only. */
static int hv_name_listens(const char *name)
{
    return hixl_compat_name_listens(name);
}

/* ---- Context ------------------------------------------------------------ */

static HixlResult hv_ctx_new(hixl_engine_t *engine, int owns,
                             HixlContext *ctx_p)
{
    struct hixl_verbs_ctx *ctx;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "verbs context");
    }
    if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
        free(ctx);
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "cannot create a mutex");
    }
    ctx->engine      = engine;
    ctx->owns_engine = owns;
    ctx->self_rank   = HIXL_VERBS_NO_RANK;
    ctx->timeout_ms  = HIXL_VERBS_DEFAULT_TIMEOUT_MS;
    *ctx_p           = ctx;
    return HIXL_SUCCESS;
}

HixlResult HixlInit(const char *local_engine, const hixl_option_t *options,
                    size_t num_options, HixlContext *ctx_p)
{
    hixl_engine_t *engine;
    HixlResult status;

    if (ctx_p == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "ctx_p is NULL");
    }
    status = hixl_initialize(local_engine, options, num_options, &engine);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hv_ctx_new(engine, 1, ctx_p);
    if (status != HIXL_SUCCESS) {
        hixl_finalize(engine);
    }
    return status;
}

HixlResult HixlInitWithEngine(hixl_engine_t *engine, HixlContext *ctx_p)
{
    if ((engine == NULL) || (ctx_p == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                          engine ? "ctx_p" : "engine");
    }
    return hv_ctx_new(engine, 0, ctx_p);
}

hixl_engine_t *HixlGetEngine(HixlContext ctx)
{
    return ctx ? ctx->engine : NULL;
}

const char *HixlGetName(HixlContext ctx)
{
    return ctx ? hixl_engine_name(ctx->engine) : NULL;
}

HixlResult HixlSetTimeout(HixlContext ctx, int32_t timeout_ms)
{
    if (ctx == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "ctx is NULL");
    }
    if (timeout_ms <= 0) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "timeout_ms %d is not > 0",
                          (int)timeout_ms);
    }
    __atomic_store_n(&ctx->timeout_ms, timeout_ms, __ATOMIC_RELAXED);
    return HIXL_SUCCESS;
}

/* ---- Memory regions ------------------------------------------------------ */

/* Enter a registered region in the context's table, which takes it over:
 * when that fails, the registration is undone here. */
static HixlResult hv_mr_add(HixlContext ctx, void *addr, size_t len,
                            hixl_mem_handle_t handle, HixlMrHandle *mr_p)
{
    struct hixl_verbs_mr *mr, **mrs;
    HixlResult status;
    uint32_t cap;

    mr = calloc(1, sizeof(*mr));
    if (mr == NULL) {
        status = hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                            "region");
        goto undo;
    }
    pthread_mutex_lock(&ctx->lock);
    if (ctx->num_mrs == ctx->cap_mrs) {
        cap = ctx->cap_mrs ? 2 * ctx->cap_mrs : 16;
        mrs = realloc(ctx->mrs, cap * sizeof(*mrs));
        if (mrs == NULL) {
            pthread_mutex_unlock(&ctx->lock);
            free(mr);
            status = hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for "
                                "the region table");
            goto undo;
        }
        ctx->mrs     = mrs;
        ctx->cap_mrs = cap;
    }
    mr->index  = ctx->num_mrs;
    mr->addr   = addr;
    mr->len    = len;
    mr->handle = handle;
    mr->live   = 1;
    ctx->mrs[ctx->num_mrs++] = mr;
    pthread_mutex_unlock(&ctx->lock);
    *mr_p = mr;
    return HIXL_SUCCESS;

undo:
    hixl_deregister_mem(ctx->engine, handle);
    return status;
}

HixlResult HixlMemReg(HixlContext ctx, void *addr, size_t len,
                      HixlMrHandle *mr_p)
{
    hixl_mem_desc_t desc;
    hixl_mem_handle_t handle;
    HixlResult status;

    if ((ctx == NULL) || (mr_p == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                          ctx ? "mr_p" : "ctx");
    }
    desc.addr = (uintptr_t)addr;
    desc.len  = len;
    status = hixl_register_mem(ctx->engine, &desc, HIXL_MEM_HOST, &handle);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    return hv_mr_add(ctx, addr, len, handle, mr_p);
}

HixlResult HixlMemAlloc(HixlContext ctx, size_t len, void **addr_p,
                        HixlMrHandle *mr_p)
{
    hixl_mem_handle_t handle;
    HixlResult status;
    void *addr;

    if ((ctx == NULL) || (addr_p == NULL) || (mr_p == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                          !ctx ? "ctx" : (!addr_p ? "addr_p" : "mr_p"));
    }
    status = hixl_alloc_mem(ctx->engine, len, HIXL_MEM_HOST, &addr, &handle);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    status = hv_mr_add(ctx, addr, len, handle, mr_p);
    if (status == HIXL_SUCCESS) {
        *addr_p = addr;
    }
    return status;
}

HixlResult HixlMemDereg(HixlContext ctx, HixlMrHandle mr)
{
    hixl_mem_handle_t handle;
    uint32_t i;

    if ((ctx == NULL) || (mr == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL", ctx ? "mr" : "ctx");
    }
    pthread_mutex_lock(&ctx->lock);
    for (i = 0; (i < ctx->num_mrs) && (ctx->mrs[i] != mr); ++i) {
    }
    if ((i == ctx->num_mrs) || !mr->live) {
        pthread_mutex_unlock(&ctx->lock);
        return hixl_compat_error(HIXL_PARAM_INVALID, "region handle %p is not a "
                          "live region of this context", (void*)mr);
    }
    mr->live = 0;
    handle   = mr->handle;
    pthread_mutex_unlock(&ctx->lock);
    return hixl_deregister_mem(ctx->engine, handle);
}

uint32_t HixlMrGetIndex(HixlMrHandle mr)
{
    return mr ? mr->index : UINT32_MAX;
}

void *HixlMrGetAddr(HixlMrHandle mr)
{
    return mr ? mr->addr : NULL;
}

size_t HixlMrGetLen(HixlMrHandle mr)
{
    return mr ? mr->len : 0;
}

/* ---- Exchange ------------------------------------------------------------ */

static HixlResult hv_table_pack(HixlContext ctx, uint8_t **msg_p,
                                size_t *len_p)
{
    uint8_t *msg, *p;
    size_t len;
    uint32_t i;

    pthread_mutex_lock(&ctx->lock);
    len = HV_HEADER_LEN + (size_t)ctx->num_mrs * HV_ENTRY_LEN;
    msg = malloc(len);
    if (msg == NULL) {
        pthread_mutex_unlock(&ctx->lock);
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "region table message");
    }
    memcpy(msg, HV_MAGIC, 4);
    hixl_compat_put_le32(msg + 4, HV_VERSION);
    hixl_compat_put_le32(msg + 8, ctx->num_mrs);
    hixl_compat_put_le32(msg + 12, 0);
    for (i = 0, p = msg + HV_HEADER_LEN; i < ctx->num_mrs; ++i) {
        hixl_compat_put_le64(p, ctx->mrs[i]->live ?
                                (uintptr_t)ctx->mrs[i]->addr : 0);
        hixl_compat_put_le64(p + 8, ctx->mrs[i]->live ? ctx->mrs[i]->len : 0);
        p += HV_ENTRY_LEN;
    }
    pthread_mutex_unlock(&ctx->lock);
    *msg_p = msg;
    *len_p = len;
    return HIXL_SUCCESS;
}

/* Decode a peer's table into rank r; bounds-checked, nothing trusted. */
static HixlResult hv_table_unpack(hv_rank_t *rank, uint32_t r,
                                  const hixl_notify_t *n)
{
    const uint8_t *p = n->msg;
    hv_rmr_t *mrs;
    uint32_t count, i;

    if ((n->msg_len < HV_HEADER_LEN) || memcmp(p, HV_MAGIC, 4) ||
        (hixl_compat_get_le32(p + 4) != HV_VERSION)) {
        return hixl_compat_error(HIXL_FAILED, "rank %u (%s) sent a region table of "
                          "an unknown format", r, rank->name);
    }
    count = hixl_compat_get_le32(p + 8);
    if ((n->msg_len - HV_HEADER_LEN) / HV_ENTRY_LEN != count ||
        (n->msg_len - HV_HEADER_LEN) % HV_ENTRY_LEN != 0) {
        return hixl_compat_error(HIXL_FAILED, "rank %u (%s) sent a region table of "
                          "%zu bytes for %u regions", r, rank->name,
                          n->msg_len, count);
    }
    mrs = calloc(count ? count : 1, sizeof(*mrs));
    if (mrs == NULL) {
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for the "
                          "region table of rank %u", r);
    }
    for (i = 0, p += HV_HEADER_LEN; i < count; ++i, p += HV_ENTRY_LEN) {
        mrs[i].addr = hixl_compat_get_le64(p);
        mrs[i].len  = hixl_compat_get_le64(p + 8);
        if (mrs[i].addr + mrs[i].len < mrs[i].addr) {
            free(mrs);
            return hixl_compat_error(HIXL_FAILED, "rank %u (%s) announced region "
                              "%u wrapping the address space", r, rank->name,
                              i);
        }
    }
    free(rank->mrs);
    rank->mrs        = mrs;
    rank->num_mrs    = count;
    rank->have_table = 1;
    return HIXL_SUCCESS;
}

static void hv_ranks_free(hv_rank_t *ranks, uint32_t num)
{
    uint32_t i;

    for (i = 0; ranks && (i < num); ++i) {
        free(ranks[i].name);
        free(ranks[i].mrs);
    }
    free(ranks);
}

static HixlResult hv_ranks_build(HixlContext ctx, const char *const *names,
                                 uint32_t num, hv_rank_t **ranks_p,
                                 uint32_t *self_p)
{
    const char *me = hixl_engine_name(ctx->engine);
    int me_listens = hv_name_listens(me);
    hv_rank_t *ranks;
    uint32_t i, j;

    *self_p = HIXL_VERBS_NO_RANK;
    ranks   = calloc(num, sizeof(*ranks));
    if (ranks == NULL) {
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for %u "
                          "ranks", num);
    }
    for (i = 0; i < num; ++i) {
        if ((names[i] == NULL) || (names[i][0] == '\0') ||
            (strlen(names[i]) > HIXL_ENGINE_NAME_MAX)) {
            hv_ranks_free(ranks, num);
            return hixl_compat_error(HIXL_PARAM_INVALID, "names[%u] is %s", i,
                              !names[i] ? "NULL" : (!names[i][0] ? "empty" :
                              "longer than HIXL_ENGINE_NAME_MAX"));
        }
        for (j = 0; j < i; ++j) {
            if (!strcmp(names[i], names[j])) {
                hv_ranks_free(ranks, num);
                return hixl_compat_error(HIXL_PARAM_INVALID, "names[%u] and "
                                  "names[%u] are both \"%s\"", j, i,
                                  names[i]);
            }
        }
        ranks[i].name = strdup(names[i]);
        if (ranks[i].name == NULL) {
            hv_ranks_free(ranks, num);
            return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
        }
        ranks[i].self      = !strcmp(names[i], me);
        ranks[i].listening = hv_name_listens(names[i]);
        if (ranks[i].self) {
            *self_p = i;
        } else if (!me_listens && !ranks[i].listening) {
            hv_ranks_free(ranks, num);
            return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u (%s) and this "
                              "engine (%s) are both client-only: one of them "
                              "must listen to exchange", i, names[i], me);
        }
    }
    *ranks_p = ranks;
    return HIXL_SUCCESS;
}

/* Connect to every listening peer, retrying while it is not up yet. */
static HixlResult hv_connect_all(HixlContext ctx, hv_rank_t *ranks,
                                 uint32_t num, uint64_t deadline)
{
    struct timespec retry = {0, 10 * 1000000L};
    char why[256];
    HixlResult status;
    uint32_t r;
    int left;

    for (r = 0; r < num; ++r) {
        if (ranks[r].self || !ranks[r].listening) {
            continue;
        }
        for (;;) {
            left   = hixl_compat_ms_left(deadline);
            status = hixl_connect(ctx->engine, ranks[r].name,
                                  left > 0 ? left : 1);
            if ((status == HIXL_SUCCESS) ||
                (status == HIXL_ALREADY_CONNECTED)) {
                break;
            }
            if ((status == HIXL_PARAM_INVALID) || (left <= 0) ||
                (hixl_compat_ms_left(deadline) == 0)) {
                snprintf(why, sizeof(why), "%s", hixl_last_error());
                return hixl_compat_error(status == HIXL_PARAM_INVALID ? status :
                                  HIXL_TIMEOUT, "exchange: cannot connect to "
                                  "rank %u (%s): %s", r, ranks[r].name, why);
            }
            nanosleep(&retry, NULL);   /* the peer is not up yet */
        }
    }
    return HIXL_SUCCESS;
}

/* Take the notifies received so far; keep region tables from ranks. */
static HixlResult hv_take_tables(HixlContext ctx, hv_rank_t *ranks,
                                 uint32_t num)
{
    hixl_notify_t *n = NULL;
    HixlResult status = HIXL_SUCCESS;
    size_t count = 0, i;
    uint32_t r;

    status = hixl_get_notifies(ctx->engine, &n, &count);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    for (i = 0; i < count; ++i) {
        if (strcmp(n[i].name, HIXL_VERBS_MR_NOTIFY)) {
            hixl_compat_debug("exchange: dropped notify \"%s\" from %s",
                           n[i].name, n[i].remote);
            continue;
        }
        for (r = 0; (r < num) && (ranks[r].self ||
                     strcmp(ranks[r].name, n[i].remote)); ++r) {
        }
        if (r == num) {
            hixl_compat_debug("exchange: region table from %s, not a rank",
                           n[i].remote);
            continue;
        }
        status = hv_table_unpack(&ranks[r], r, &n[i]);
        if (status != HIXL_SUCCESS) {
            break;
        }
    }
    hixl_release_notifies(n, count);
    return status;
}

HixlResult HixlExchangeMrInfo(HixlContext ctx, const char *const *names,
                              uint32_t num_names, int32_t timeout_ms)
{
    hixl_notify_desc_t nd;
    hv_rank_t *ranks = NULL;
    uint8_t *msg = NULL;
    uint8_t *sent = NULL;
    HixlResult status;
    unsigned sweeps = 0;
    uint32_t self, r, missing;
    uint64_t deadline;
    size_t msg_len = 0;
    char why[256];
    int left;

    if ((ctx == NULL) || (names == NULL) || (num_names == 0)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s",
                          !ctx ? "ctx is NULL" : (!names ? "names is NULL" :
                          "num_names is 0"));
    }
    if (timeout_ms <= 0) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "timeout_ms %d is not > 0",
                          (int)timeout_ms);
    }
    pthread_mutex_lock(&ctx->lock);
    if (ctx->exchange_started) {
        pthread_mutex_unlock(&ctx->lock);
        return hixl_compat_error(HIXL_PARAM_INVALID, "HixlExchangeMrInfo was already "
                          "called on this context (ranks are fixed once)");
    }
    ctx->exchange_started = 1;
    pthread_mutex_unlock(&ctx->lock);

    deadline = hixl_compat_deadline_ns(timeout_ms);
    status   = hv_ranks_build(ctx, names, num_names, &ranks, &self);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    status = hv_table_pack(ctx, &msg, &msg_len);
    if (status != HIXL_SUCCESS) {
        goto err;
    }
    sent = calloc(num_names, 1);
    if (sent == NULL) {
        status = hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory");
        goto err;
    }
    status = hv_connect_all(ctx, ranks, num_names, deadline);
    if (status != HIXL_SUCCESS) {
        goto err;
    }

    nd.name    = HIXL_VERBS_MR_NOTIFY;
    nd.msg     = msg;
    nd.msg_len = msg_len;
    for (;;) {
        missing = UINT32_MAX;
        for (r = 0; r < num_names; ++r) {
            if (ranks[r].self || sent[r]) {
                continue;
            }
            left   = hixl_compat_ms_left(deadline);
            status = hixl_send_notify(ctx->engine, ranks[r].name, &nd,
                                      left > 0 ? left : 1);
            if (status == HIXL_SUCCESS) {
                sent[r] = 1;
            } else if ((status != HIXL_NOT_CONNECTED) &&
                       (status != HIXL_RESOURCE_EXHAUSTED) &&
                       (status != HIXL_TIMEOUT)) {
                /* A client-only peer is NOT_CONNECTED until it connected
                 * to this engine; anything else is final. */
                snprintf(why, sizeof(why), "%s", hixl_last_error());
                status = hixl_compat_error(status, "exchange: cannot send the region "
                                    "table to rank %u (%s): %s", r,
                                    ranks[r].name, why);
                goto err;
            } else if (missing == UINT32_MAX) {
                missing = r;
            }
        }
        status = hv_take_tables(ctx, ranks, num_names);
        if (status != HIXL_SUCCESS) {
            goto err;
        }
        for (r = 0; r < num_names; ++r) {
            if (!ranks[r].self && !ranks[r].have_table &&
                (missing == UINT32_MAX)) {
                missing = r;
            }
        }
        if (missing == UINT32_MAX) {
            break;
        }
        if (hixl_compat_ms_left(deadline) == 0) {
            status = hixl_compat_error(HIXL_TIMEOUT, "exchange: rank %u (%s) %s "
                                "within %d ms", missing, ranks[missing].name,
                                sent[missing] ? "sent no region table" :
                                "could not be sent the region table (a "
                                "client-only peer must connect to this "
                                "engine)", (int)timeout_ms);
            goto err;
        }
        hv_pause(&sweeps);
    }

    pthread_mutex_lock(&ctx->lock);
    ctx->ranks     = ranks;
    ctx->num_ranks = num_names;
    ctx->self_rank = self;
    pthread_mutex_unlock(&ctx->lock);
    __atomic_store_n(&ctx->exchanged, 1, __ATOMIC_RELEASE);
    free(sent);
    free(msg);
    return HIXL_SUCCESS;

err:
    free(sent);
    free(msg);
    hv_ranks_free(ranks, num_names);
    pthread_mutex_lock(&ctx->lock);
    ctx->exchange_started = 0;   /* the caller may try again */
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

HixlResult HixlGetRank(HixlContext ctx, uint32_t *rank_p,
                       uint32_t *num_ranks_p)
{
    if (ctx == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "ctx is NULL");
    }
    if (!__atomic_load_n(&ctx->exchanged, __ATOMIC_ACQUIRE)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "no ranks before "
                          "HixlExchangeMrInfo");
    }
    if (rank_p != NULL) {
        *rank_p = ctx->self_rank;
    }
    if (num_ranks_p != NULL) {
        *num_ranks_p = ctx->num_ranks;
    }
    return HIXL_SUCCESS;
}

/* The peer region a write goes to, with every check the verbs promise. */
static HixlResult hv_target(HixlContext ctx, uint32_t rank, uint32_t mr,
                            uint64_t off, size_t len, const hv_rank_t **rank_p,
                            uint64_t *remote_addr_p)
{
    const hv_rank_t *rk;
    const hv_rmr_t *rm;

    if (ctx == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "ctx is NULL");
    }
    if (!__atomic_load_n(&ctx->exchanged, __ATOMIC_ACQUIRE)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u: no ranks before "
                          "HixlExchangeMrInfo", rank);
    }
    if (rank >= ctx->num_ranks) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u is not below the %u "
                          "exchanged ranks", rank, ctx->num_ranks);
    }
    rk = &ctx->ranks[rank];
    if (rk->self) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u is this engine (%s)",
                          rank, rk->name);
    }
    if (!rk->listening) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u (%s) is client-only: "
                          "it cannot be written to", rank, rk->name);
    }
    if ((mr >= rk->num_mrs) || (rk->mrs[mr].len == 0)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u (%s) has no region %u "
                          "(it announced %u)", rank, rk->name, mr,
                          rk->num_mrs);
    }
    rm = &rk->mrs[mr];
    if ((off > rm->len) || (len > rm->len - off)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u region %u: [%llu, "
                          "+%zu) is outside its %llu bytes", rank, mr,
                          (unsigned long long)off, len,
                          (unsigned long long)rm->len);
    }
    *rank_p        = rk;
    *remote_addr_p = rm->addr + off;
    return HIXL_SUCCESS;
}

HixlResult HixlGetRemoteMr(HixlContext ctx, uint32_t rank, uint32_t remote_mr,
                           uint64_t *addr_p, uint64_t *len_p)
{
    const hv_rank_t *rk;

    if (ctx == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "ctx is NULL");
    }
    if (!__atomic_load_n(&ctx->exchanged, __ATOMIC_ACQUIRE) ||
        (rank >= ctx->num_ranks) || ctx->ranks[rank].self) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "rank %u is not an exchanged "
                          "peer", rank);
    }
    rk = &ctx->ranks[rank];
    if (addr_p != NULL) {
        *addr_p = (remote_mr < rk->num_mrs) ? rk->mrs[remote_mr].addr : 0;
    }
    if (len_p != NULL) {
        *len_p = (remote_mr < rk->num_mrs) ? rk->mrs[remote_mr].len : 0;
    }
    return HIXL_SUCCESS;
}

/* ---- Writes --------------------------------------------------------------- */

HixlResult HixlRdmaWrite(HixlContext ctx, uint32_t rank, uint32_t remote_mr,
                         uint64_t remote_offset, const void *local_buf,
                         size_t len)
{
    hixl_transfer_op_desc_t desc;
    const hv_rank_t *rk;
    uint64_t raddr;
    HixlResult status;

    status = hv_target(ctx, rank, remote_mr, remote_offset, len, &rk, &raddr);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    desc.local_addr  = (uintptr_t)local_buf;
    desc.remote_addr = (uintptr_t)raddr;
    desc.len         = len;
    return hixl_transfer_sync(ctx->engine, rk->name, HIXL_WRITE, &desc, 1,
                              __atomic_load_n(&ctx->timeout_ms,
                                              __ATOMIC_RELAXED));
}

HixlResult HixlRdmaWriteAsync(HixlContext ctx, uint32_t rank,
                              uint32_t remote_mr, uint64_t remote_offset,
                              const void *local_buf, size_t len,
                              HixlStream stream)
{
    hixl_transfer_op_desc_t desc;
    const hv_rank_t *rk;
    hv_pending_t *pending;
    uint64_t raddr;
    HixlResult status;
    hixl_req_t req;
    size_t cap;

    status = hv_target(ctx, rank, remote_mr, remote_offset, len, &rk, &raddr);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if ((stream == NULL) || (stream->ctx != ctx)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "stream is %s",
                          stream ? "of another context" : "NULL");
    }
    desc.local_addr  = (uintptr_t)local_buf;
    desc.remote_addr = (uintptr_t)raddr;
    desc.len         = len;

    /* The slot is reserved before the post, so that a posted request always
     * has one (it is never left untracked); the post itself runs without
     * the lock, since it may wait (a region table refresh). */
    pthread_mutex_lock(&ctx->lock);
    if (stream->count + stream->reserved == stream->cap) {
        cap     = stream->cap ? 2 * stream->cap : 64;
        pending = realloc(stream->pending, cap * sizeof(*pending));
        if (pending == NULL) {
            pthread_mutex_unlock(&ctx->lock);
            return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for "
                              "the stream");
        }
        stream->pending = pending;
        stream->cap     = cap;
    }
    stream->reserved++;
    pthread_mutex_unlock(&ctx->lock);

    status = hixl_transfer_async(ctx->engine, rk->name, HIXL_WRITE, &desc, 1,
                                 NULL, &req);

    pthread_mutex_lock(&ctx->lock);
    stream->reserved--;
    if (status == HIXL_SUCCESS) {
        pending       = &stream->pending[stream->count++];
        pending->req  = req;
        pending->seq  = ctx->next_seq++;
        pending->rank = rank;
        pending->mr   = remote_mr;
    }
    pthread_mutex_unlock(&ctx->lock);
    return status;
}

/* One non-blocking pass over the pending writes the filter selects: drop
 * the finished ones, count the others.  The first failure is returned (and
 * put in hixl_last_error); the sweep still goes on, so one failed write
 * does not hide the state of the rest. */
static HixlResult hv_sweep(HixlContext ctx, const hv_filter_t *f,
                           size_t *left_p)
{
    char why[256];
    struct hixl_verbs_stream *s;
    hixl_transfer_status_t ts;
    HixlResult status, first = HIXL_SUCCESS;
    hv_pending_t *p;
    size_t i, left = 0;

    pthread_mutex_lock(&ctx->lock);
    for (s = ctx->streams; s != NULL; s = s->next) {
        if ((f->stream != NULL) && (f->stream != s)) {
            continue;
        }
        for (i = 0; i < s->count;) {
            p = &s->pending[i];
            if ((p->seq >= f->before_seq) ||
                (f->by_target && ((p->rank != f->rank) ||
                                  (p->mr != f->mr)))) {
                ++i;
                continue;
            }
            status = hixl_get_transfer_status(ctx->engine, p->req, &ts);
            if ((status == HIXL_SUCCESS) && (ts == HIXL_TRANSFER_WAITING)) {
                ++left;
                ++i;
                continue;
            }
            if ((first == HIXL_SUCCESS) &&
                ((status != HIXL_SUCCESS) ||
                 (ts != HIXL_TRANSFER_COMPLETED))) {
                snprintf(why, sizeof(why), "%s", hixl_last_error());
                first = hixl_compat_error(status != HIXL_SUCCESS ? status :
                                   (ts == HIXL_TRANSFER_TIMEOUT ?
                                    HIXL_TIMEOUT : HIXL_FAILED),
                                   "write to rank %u region %u %s: %s",
                                   p->rank, p->mr, status != HIXL_SUCCESS ?
                                   "could not be queried" :
                                   (ts == HIXL_TRANSFER_TIMEOUT ?
                                    "timed out" : "failed"), why);
            }
            *p = s->pending[--s->count];   /* released by that status call */
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    *left_p = left;
    return first;
}

static HixlResult hv_wait(HixlContext ctx, hv_filter_t *f, const char *what)
{
    HixlResult status;
    unsigned sweeps = 0;
    uint64_t deadline;
    size_t left;

    pthread_mutex_lock(&ctx->lock);
    f->before_seq = ctx->next_seq;
    pthread_mutex_unlock(&ctx->lock);
    deadline = hixl_compat_deadline_ns(__atomic_load_n(&ctx->timeout_ms,
                                                __ATOMIC_RELAXED));
    for (;;) {
        status = hv_sweep(ctx, f, &left);
        if (status != HIXL_SUCCESS) {
            return status;
        }
        if (left == 0) {
            return HIXL_SUCCESS;
        }
        if (hixl_compat_ms_left(deadline) == 0) {
            return hixl_compat_error(HIXL_TIMEOUT, "%s: %zu writes still pending "
                              "after %d ms", what, left,
                              (int)__atomic_load_n(&ctx->timeout_ms,
                                                   __ATOMIC_RELAXED));
        }
        hv_pause(&sweeps);
    }
}

HixlResult HixlFlush(HixlContext ctx, uint32_t rank, uint32_t remote_mr)
{
    hv_filter_t f;
    const hv_rank_t *rk;
    uint64_t raddr;
    HixlResult status;

    status = hv_target(ctx, rank, remote_mr, 0, 0, &rk, &raddr);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    memset(&f, 0, sizeof(f));
    f.by_target = 1;
    f.rank      = rank;
    f.mr        = remote_mr;
    return hv_wait(ctx, &f, "HixlFlush");
}

/* ---- Streams ------------------------------------------------------------- */

HixlResult HixlStreamCreate(HixlContext ctx, HixlStream *stream_p)
{
    struct hixl_verbs_stream *s;

    if ((ctx == NULL) || (stream_p == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                          ctx ? "stream_p" : "ctx");
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return hixl_compat_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a "
                          "stream");
    }
    s->ctx = ctx;
    pthread_mutex_lock(&ctx->lock);
    s->next = ctx->streams;
    if (ctx->streams != NULL) {
        ctx->streams->prev = s;
    }
    ctx->streams = s;
    pthread_mutex_unlock(&ctx->lock);
    *stream_p = s;
    return HIXL_SUCCESS;
}

HixlResult HixlStreamSynchronize(HixlStream stream)
{
    hv_filter_t f;

    if (stream == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "stream is NULL");
    }
    memset(&f, 0, sizeof(f));
    f.stream = stream;
    return hv_wait(stream->ctx, &f, "HixlStreamSynchronize");
}

HixlResult HixlStreamQuery(HixlStream stream, int *done_p)
{
    hv_filter_t f;
    HixlResult status;
    size_t left;

    if ((stream == NULL) || (done_p == NULL)) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "%s is NULL",
                          stream ? "done_p" : "stream");
    }
    memset(&f, 0, sizeof(f));
    f.stream     = stream;
    f.before_seq = UINT64_MAX;
    status       = hv_sweep(stream->ctx, &f, &left);
    *done_p      = (left == 0);
    return status;
}

HixlResult HixlStreamDestroy(HixlStream stream)
{
    HixlContext ctx;
    HixlResult status;

    if (stream == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "stream is NULL");
    }
    ctx    = stream->ctx;
    status = HixlStreamSynchronize(stream);
    /* What is still pending after a failed wait is left to the engine: its
     * requests end when the peer disconnects or the engine is finalized. */
    pthread_mutex_lock(&ctx->lock);
    if (stream->prev != NULL) {
        stream->prev->next = stream->next;
    } else {
        ctx->streams = stream->next;
    }
    if (stream->next != NULL) {
        stream->next->prev = stream->prev;
    }
    pthread_mutex_unlock(&ctx->lock);
    free(stream->pending);
    free(stream);
    return status;
}

HixlResult HixlFinalize(HixlContext ctx)
{
    HixlResult status, first = HIXL_SUCCESS;
    uint32_t i;

    if (ctx == NULL) {
        return hixl_compat_error(HIXL_PARAM_INVALID, "ctx is NULL");
    }
    while (ctx->streams != NULL) {
        status = HixlStreamDestroy(ctx->streams);
        if (first == HIXL_SUCCESS) {
            first = status;
        }
    }
    for (i = 0; i < ctx->num_mrs; ++i) {
        if (ctx->mrs[i]->live) {
            status = hixl_deregister_mem(ctx->engine, ctx->mrs[i]->handle);
            if (first == HIXL_SUCCESS) {
                first = status;
            }
        }
        free(ctx->mrs[i]);
    }
    free(ctx->mrs);
    hv_ranks_free(ctx->ranks, ctx->num_ranks);
    if (ctx->owns_engine) {
        status = hixl_finalize(ctx->engine);
        if (first == HIXL_SUCCESS) {
            first = status;
        }
    }
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return first;
}
