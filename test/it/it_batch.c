/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: batches of descriptors in one call, and many requests in
 * flight at once.
 *
 * Layout of a batch: the remote sides of the descriptors tile one
 * contiguous remote range exactly, in shuffled order, with odd lengths; the
 * local sides are scattered over slots with gaps and odd offsets.  Local
 * bytes are filled with the pattern indexed by the remote offset they go to,
 * so after a WRITE the target checks its whole range with one VERIFY, and
 * after a READ every local descriptor is checked here and then every byte of
 * the local buffer outside them is checked for stray writes.
 */
#include "config.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct it_mode {
    int tls;
    int init_progress;
} it_mode_t;

static const it_mode_t it_modes[] = {
    {0, 1}, {1, 1}, {2, 1},   /* tcp, sm, default; progress thread on */
    {0, 0}, {1, 0}, {2, 0},   /* same, status polls drive progress */
};
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

#define TGT_SEED   0x5eedu
#define LOCAL_SEED 0x10ca1u
#define R0         13        /* remote range starts at this odd offset */

typedef struct it_layout {
    size_t                   n;
    size_t                   total;    /* bytes moved */
    size_t                   local_len;
    hixl_transfer_op_desc_t *descs;
    size_t                  *lo;       /* local offset of descs[i] */
    size_t                  *ro;       /* remote offset relative to R0 */
} it_layout_t;

/* n descriptors of 1..maxlen bytes; deterministic in (n, maxlen). */
static void it_layout_make(it_layout_t *l, size_t n, size_t maxlen,
                           uint8_t *local, uint64_t remote_base)
{
    uint64_t rng = n * 7919 + maxlen;
    size_t *tile_off, *tile_len, *order, *slot, i, j, k, tmp, off = 0;
    const size_t slot_len = maxlen + 32;

    memset(l, 0, sizeof(*l));
    l->n     = n;
    l->descs = calloc(n, sizeof(*l->descs));
    l->lo    = calloc(n, sizeof(size_t));
    l->ro    = calloc(n, sizeof(size_t));
    tile_off = calloc(n, sizeof(size_t));
    tile_len = calloc(n, sizeof(size_t));
    order    = calloc(n, sizeof(size_t));
    slot     = calloc(n, sizeof(size_t));
    ck_assert(l->descs && l->lo && l->ro && tile_off && tile_len && order &&
              slot);

    /* tiles of the remote range in address order */
    for (k = 0; k < n; ++k) {
        tile_len[k] = 1 + (size_t)(hx_rand(&rng) % maxlen);
        tile_off[k] = off;
        off        += tile_len[k];
        order[k]    = k;
        slot[k]     = k;
    }
    l->total = off;
    /* descriptor i moves tile order[i] from local slot slot[i] */
    for (i = n; i > 1; --i) {
        j = (size_t)(hx_rand(&rng) % i);
        tmp = order[i - 1]; order[i - 1] = order[j]; order[j] = tmp;
        j = (size_t)(hx_rand(&rng) % i);
        tmp = slot[i - 1]; slot[i - 1] = slot[j]; slot[j] = tmp;
    }
    l->local_len = n * slot_len;
    for (i = 0; i < n; ++i) {
        k        = order[i];
        l->ro[i] = tile_off[k];
        l->lo[i] = slot[i] * slot_len + 1 + (size_t)(hx_rand(&rng) % 16);
        l->descs[i].local_addr  = (uintptr_t)(local + l->lo[i]);
        l->descs[i].remote_addr = remote_base + R0 + tile_off[k];
        l->descs[i].len         = tile_len[k];
    }
    free(tile_off);
    free(tile_len);
    free(order);
    free(slot);
}

static void it_layout_free(it_layout_t *l)
{
    free(l->descs);
    free(l->lo);
    free(l->ro);
}

/* Local bytes of every descriptor = pattern at its remote offset. */
static void it_layout_fill(const it_layout_t *l, uint8_t *local, uint64_t seed)
{
    size_t i;

    for (i = 0; i < l->n; ++i) {
        hx_pat_fill(local + l->lo[i], l->descs[i].len, seed, l->ro[i]);
    }
}

/* After a READ: every descriptor holds the target's pattern, and every
 * other local byte still holds the guard pattern. */
static void it_layout_check_read(const it_layout_t *l, uint8_t *local,
                                 uint64_t seed, size_t n_label)
{
    char what[96];
    size_t i;

    for (i = 0; i < l->n; ++i) {
        snprintf(what, sizeof(what), "READ batch of %zu, descriptor %zu",
                 n_label, i);
        hx_pat_assert(local + l->lo[i], l->descs[i].len, seed, l->ro[i],
                      what);
        hx_pat_fill(local + l->lo[i], l->descs[i].len, LOCAL_SEED, l->lo[i]);
    }
    snprintf(what, sizeof(what), "READ batch of %zu: bytes outside the "
             "descriptors", n_label);
    hx_pat_assert(local, l->local_len, LOCAL_SEED, 0, what);
}

static hixl_engine_t *it_setup(int i, hx_target_t *t, size_t region_len)
{
    hx_target_cfg_t cfg;
    hixl_engine_t *e;

    hx_use_tls(it_modes[i].tls);
    hx_target_cfg_init(&cfg, region_len);
    cfg.init_seed = TGT_SEED;
    hx_target_start(t, &cfg);
    e = hx_engine("127.0.0.1", "hixl.ProgressThread",
                  it_modes[i].init_progress ? "1" : "0", NULL);
    hx_connect(e, t->name);
    return e;
}

/*
 * Batches of 1, 2, 17, 256 and 4096 descriptors, each WRITE and READ, sync
 * and async.
 */
START_TEST(test_batches)
{
    static const struct { size_t n, maxlen; } cases[] = {
        {1, 100000}, {2, 5000}, {17, 3000}, {256, 4100}, {4096, 2000}
    };
    const size_t region = 8 * HX_MIB + 64;
    const size_t local_max = 4096 * (2000 + 32);
    hx_target_t t;
    hixl_engine_t *e;
    it_layout_t l;
    uint8_t *local;
    uint64_t seed;
    size_t c;
    int async;

    local = hx_alloc_pages(local_max);
    e     = it_setup(_i, &t, region);
    hx_register(e, local, local_max);

    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
        it_layout_make(&l, cases[c].n, cases[c].maxlen, local, t.addr[0]);
        ck_assert_uint_le(l.local_len, local_max);
        ck_assert_uint_le(R0 + l.total + 1, region);
        for (async = 0; async < 2; ++async) {
            seed = 100 * c + (uint64_t)async + 1;

            /* WRITE: the target's range holds the pattern, the bytes
             * around it are untouched */
            it_layout_fill(&l, local, seed);
            hx_transfer(e, t.name, HIXL_WRITE, l.descs, l.n, async);
            hx_target_verify(&t, 0, R0, l.total, seed, 0);
            hx_target_verify(&t, 0, 0, R0, TGT_SEED, 0);
            hx_target_verify(&t, 0, R0 + l.total, 1, TGT_SEED,
                             R0 + l.total);

            /* READ: the target's range comes back into the scattered
             * local slots */
            hx_target_fill(&t, 0, R0, l.total, seed + 50, 0);
            hx_pat_fill(local, l.local_len, LOCAL_SEED, 0);
            hx_transfer(e, t.name, HIXL_READ, l.descs, l.n, async);
            it_layout_check_read(&l, local, seed + 50, l.n);
            /* back to the initial pattern: the next case checks the bytes
             * around its (shorter) range against it */
            hx_target_fill(&t, 0, R0, l.total, TGT_SEED, R0);
        }
        it_layout_free(&l);
    }

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, local_max);
}
END_TEST

/*
 * 64 async requests of 64 descriptors each in flight at once, polled in
 * reverse order (and round-robin until all are reported), then verified.
 * Half WRITE into the first half of the target, half READ from the second
 * half.
 */
START_TEST(test_many_in_flight)
{
    enum { NREQ = 64, ND = 64, PIECE = 1031 };
    const size_t span = (size_t)ND * PIECE;
    const size_t region = 2 * NREQ * span + 64;
    hixl_transfer_op_desc_t *descs;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t reqs[NREQ];
    int done[NREQ] = {0};
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t r, k, left = NREQ;
    char what[64];

    local = hx_alloc_pages(region);
    descs = calloc((size_t)NREQ * ND, sizeof(*descs));
    ck_assert_ptr_nonnull(descs);
    e = it_setup(_i, &t, region);
    hx_register(e, local, region);

    /* target's second half holds pattern 9 (to be READ), local first half
     * pattern 8 (to be written) */
    hx_target_fill(&t, 0, NREQ * span, NREQ * span, 9, NREQ * span);
    hx_pat_fill(local, region, 8, 0);

    for (r = 0; r < NREQ; ++r) {
        int write = (r % 2 == 0);
        size_t base = (write ? 0 : NREQ * span) + r * span;

        for (k = 0; k < ND; ++k) {
            /* descriptor k of request r moves piece (ND - 1 - k): the
             * pieces of a request go out of order */
            size_t off = base + (ND - 1 - k) * PIECE;
            hixl_transfer_op_desc_t *d = &descs[r * ND + k];

            d->local_addr  = (uintptr_t)(local + off);
            d->remote_addr = t.addr[0] + off;
            d->len         = PIECE;
        }
        st = hixl_transfer_async(e, t.name, write ? HIXL_WRITE : HIXL_READ,
                                 &descs[r * ND], ND, NULL, &reqs[r]);
        ck_assert_msg(st == HIXL_SUCCESS, "request %zu [%s]: %s: %s", r,
                      hx_tls_label(), hixl_strerror(st), hixl_last_error());
    }

    while (left > 0) {
        for (r = NREQ; r-- > 0;) {
            if (done[r]) {
                continue;
            }
            st = hixl_get_transfer_status(e, reqs[r], &ts);
            ck_assert_msg(st == HIXL_SUCCESS, "status of request %zu [%s]: "
                          "%s: %s", r, hx_tls_label(), hixl_strerror(st),
                          hixl_last_error());
            if (ts == HIXL_TRANSFER_WAITING) {
                continue;
            }
            ck_assert_msg(ts == HIXL_TRANSFER_COMPLETED, "request %zu ended "
                          "with %d [%s]: %s", r, (int)ts, hx_tls_label(),
                          hixl_last_error());
            done[r] = 1;
            --left;
            /* a reported request is released: its handle is refused */
            hx_expect(hixl_get_transfer_status(e, reqs[r], &ts),
                      HIXL_PARAM_INVALID, NULL);
        }
    }

    for (r = 0; r < NREQ; ++r) {
        size_t base = r * span;

        if (r % 2 == 0) {
            hx_target_verify(&t, 0, base, span, 8, base);
        } else {
            snprintf(what, sizeof(what), "READ request %zu", r);
            hx_pat_assert(local + NREQ * span + base, span, 9,
                          NREQ * span + base, what);
        }
    }
    /* the slices no WRITE went to are what they were */
    for (r = 0; r < NREQ; ++r) {
        size_t base = r * span;

        if (r % 2 == 1) {
            hx_target_verify(&t, 0, base, span, TGT_SEED, base);
        }
    }

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    free(descs);
    hx_free_pages(local, region);
}
END_TEST

/*
 * Zero-length descriptors mixed into a batch are accepted and move nothing,
 * whatever their addresses, as long as they are not 0 (hixl.h: its
 * addresses are not looked up; a null one is PARAM_INVALID, as in hixl).
 */
START_TEST(test_zero_length_mixed)
{
    const size_t region = 64 * 1024, piece = 333;
    hixl_transfer_op_desc_t d[96];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t i, n = 0;

    local = hx_alloc_pages(region);
    e     = it_setup(_i, &t, region);
    hx_register(e, local, region);
    hx_pat_fill(local, region, 31, 0);

    for (i = 0; i < 64; ++i) {
        if (i % 3 == 1) {
            /* garbage addresses, no length */
            d[n].local_addr  = (i & 1) ? 1 : UINTPTR_MAX;
            d[n].remote_addr = (i & 2) ? 1 : UINT64_MAX - 5;
            d[n].len         = 0;
            ++n;
        }
        d[n].local_addr  = (uintptr_t)(local + i * piece);
        d[n].remote_addr = t.addr[0] + i * piece;
        d[n].len         = piece;
        ++n;
    }
    hx_transfer(e, t.name, HIXL_WRITE, d, n, 0);
    hx_target_verify(&t, 0, 0, 64 * piece, 31, 0);
    hx_target_verify(&t, 0, 64 * piece, region - 64 * piece, TGT_SEED,
                     64 * piece);

    /* a batch of nothing but zero-length descriptors, both directions */
    for (i = 0; i < 8; ++i) {
        d[i].local_addr  = i + 1;
        d[i].remote_addr = UINT64_MAX - i;
        d[i].len         = 0;
    }
    hx_transfer(e, t.name, HIXL_WRITE, d, 8, 0);
    hx_transfer(e, t.name, HIXL_READ, d, 8, 1);
    hx_target_verify(&t, 0, 0, 64 * piece, 31, 0);
    hx_pat_assert(local, region, 31, 0, "local memory after zero-length "
                  "READs");
    /* a null address is refused, whatever the length, naming it */
    d[3].local_addr = 0;
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, d, 8, 1000),
              HIXL_PARAM_INVALID, "descriptor 3: local address is 0");
    d[3].local_addr  = 1;
    d[5].remote_addr = 0;
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, d, 8, 1000),
              HIXL_PARAM_INVALID, "descriptor 5: remote address is 0");

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, region);
}
END_TEST

static Suite *it_batch_suite(void)
{
    Suite *s = suite_create("it_batch");
    TCase *tc;

    tc = hx_tcase("batches");
    tcase_add_loop_test(tc, test_batches, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("many_in_flight");
    tcase_add_loop_test(tc, test_many_in_flight, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("zero_length_mixed");
    tcase_add_loop_test(tc, test_zero_length_mixed, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_batch_suite());
}
