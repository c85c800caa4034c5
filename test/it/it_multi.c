/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: one initiator and four targets at once.
 *
 * The initiator keeps transfers in flight to all four targets together
 * (async, interleaved), and, separately, four threads of the initiator drive
 * one target each with sync transfers: hixl.h promises every call is safe
 * from any thread on one engine.  Targets mix IPv4 and IPv6 names.
 */
#include "config.h"
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 4

typedef struct it_mode {
    int tls;
    int init_progress;
} it_mode_t;

static const it_mode_t it_modes[] = {
    {0, 1}, {1, 1}, {2, 1}, {0, 0}, {1, 0}, {2, 0},
};
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

static const char *const it_target_names[NT] = {
    "127.0.0.1:0", "[::1]:0", "127.0.0.1:0", "[::1]:0"
};

/* Start four targets (before this process touches UCX), then connect. */
static hixl_engine_t *it_setup(int i, hx_target_t *t, size_t region_len)
{
    hx_target_cfg_t cfg;
    hixl_engine_t *e;
    int k;

    hx_use_tls(it_modes[i].tls);
    for (k = 0; k < NT; ++k) {
        hx_target_cfg_init(&cfg, region_len);
        cfg.name      = it_target_names[k];
        cfg.init_seed = 900 + (uint64_t)k;
        hx_target_start(&t[k], &cfg);
    }
    e = hx_engine("127.0.0.1", "hixl.ProgressThread",
                  it_modes[i].init_progress ? "1" : "0", NULL);
    for (k = 0; k < NT; ++k) {
        hx_connect(e, t[k].name);
    }
    return e;
}

static void it_teardown(hixl_engine_t *e, hx_target_t *t)
{
    int k;

    hx_ok(hixl_finalize(e));
    for (k = 0; k < NT; ++k) {
        hx_target_stop(&t[k]);
    }
}

/*
 * 16 requests per target, WRITE and READ alternating, all posted before the
 * first is polled, then every byte verified at each target and here.
 */
START_TEST(test_four_targets_async)
{
    enum { PER = 16, PIECE = 128 * 1024 + 5, ND = 4 };
    const size_t per_target = (size_t)PER * ND * PIECE;
    const size_t region = per_target + 64;
    hixl_transfer_op_desc_t *descs;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    hixl_req_t reqs[NT][PER];
    int done[NT][PER];
    hx_target_t t[NT];
    hixl_engine_t *e;
    uint8_t *local;
    size_t r, k, j, left = NT * PER;
    char what[96];

    local = hx_alloc_pages(NT * region);
    descs = calloc((size_t)NT * PER * ND, sizeof(*descs));
    ck_assert_ptr_nonnull(descs);
    memset(done, 0, sizeof(done));
    e = it_setup(_i, t, region);
    hx_register(e, local, NT * region);
    hx_pat_fill(local, NT * region, 1, 0);

    /* post round-robin over the targets, so all four have requests in
     * flight at the same time */
    for (r = 0; r < PER; ++r) {
        for (k = 0; k < NT; ++k) {
            int write = ((r + k) % 2 == 0);
            hixl_transfer_op_desc_t *d = &descs[(k * PER + r) * ND];

            for (j = 0; j < ND; ++j) {
                size_t off = (r * ND + j) * PIECE;

                d[j].local_addr  = (uintptr_t)(local + k * region + off);
                d[j].remote_addr = t[k].addr[0] + off;
                d[j].len         = PIECE;
            }
            st = hixl_transfer_async(e, t[k].name,
                                     write ? HIXL_WRITE : HIXL_READ, d, ND,
                                     NULL, &reqs[k][r]);
            ck_assert_msg(st == HIXL_SUCCESS, "post to %s [%s]: %s: %s",
                          t[k].name, hx_tls_label(), hixl_strerror(st),
                          hixl_last_error());
        }
    }
    while (left > 0) {
        for (k = 0; k < NT; ++k) {
            for (r = 0; r < PER; ++r) {
                if (done[k][r]) {
                    continue;
                }
                st = hixl_get_transfer_status(e, reqs[k][r], &ts);
                ck_assert_msg(st == HIXL_SUCCESS, "status [%s]: %s: %s",
                              hx_tls_label(), hixl_strerror(st),
                              hixl_last_error());
                if (ts != HIXL_TRANSFER_WAITING) {
                    ck_assert_msg(ts == HIXL_TRANSFER_COMPLETED, "request %zu "
                                  "to %s ended with %d [%s]: %s", r,
                                  t[k].name, (int)ts, hx_tls_label(),
                                  hixl_last_error());
                    done[k][r] = 1;
                    --left;
                }
            }
        }
    }
    for (k = 0; k < NT; ++k) {
        for (r = 0; r < PER; ++r) {
            size_t off = r * ND * PIECE, len = ND * PIECE;

            if ((r + k) % 2 == 0) {
                /* WRITE: our pattern at the target */
                hx_target_verify(&t[k], 0, off, len, 1, k * region + off);
            } else {
                /* READ: the target's initial pattern here */
                snprintf(what, sizeof(what), "READ %zu from %s", r, t[k].name);
                hx_pat_assert(local + k * region + off, len, 900 + k, off,
                              what);
            }
        }
    }

    it_teardown(e, t);
    free(descs);
    hx_free_pages(local, NT * region);
}
END_TEST

typedef struct it_worker {
    hixl_engine_t *e;
    hx_target_t   *t;
    uint8_t       *local;
    size_t         len;
    int            index;
    char           err[512];   /* empty: all transfers succeeded */
} it_worker_t;

/* Threads must not call ck_assert: they note the first failure. */
static void *it_worker_main(void *arg)
{
    it_worker_t *w = arg;
    hixl_transfer_op_desc_t d;
    hixl_status_t st;
    size_t n, piece = w->len / 50;

    for (n = 0; n < 50; ++n) {
        d.local_addr  = (uintptr_t)(w->local + n * piece);
        d.remote_addr = w->t->addr[0] + n * piece;
        d.len         = piece;
        st = hixl_transfer_sync(w->e, w->t->name, HIXL_WRITE, &d, 1,
                                HX_OP_TIMEOUT_MS);
        if (st != HIXL_SUCCESS) {
            snprintf(w->err, sizeof(w->err), "thread %d, transfer %zu to "
                     "%s: %s: %s", w->index, n, w->t->name,
                     hixl_strerror(st), hixl_last_error());
            return NULL;
        }
    }
    return NULL;
}

/*
 * Four threads, one per target, 50 sync WRITEs each, concurrently on one
 * engine.
 */
START_TEST(test_four_targets_threads)
{
    const size_t len = 50 * 20011;
    it_worker_t w[NT];
    pthread_t th[NT];
    hx_target_t t[NT];
    hixl_engine_t *e;
    uint8_t *local;
    int k;

    local = hx_alloc_pages(NT * len);
    e     = it_setup(_i, t, len);
    hx_register(e, local, NT * len);
    hx_pat_fill(local, NT * len, 2, 0);
    for (k = 0; k < NT; ++k) {
        memset(&w[k], 0, sizeof(w[k]));
        w[k].e     = e;
        w[k].t     = &t[k];
        w[k].local = local + (size_t)k * len;
        w[k].len   = len;
        w[k].index = k;
        ck_assert_int_eq(pthread_create(&th[k], NULL, it_worker_main, &w[k]),
                         0);
    }
    for (k = 0; k < NT; ++k) {
        pthread_join(th[k], NULL);
    }
    for (k = 0; k < NT; ++k) {
        ck_assert_msg(w[k].err[0] == '\0', "[%s] %s", hx_tls_label(),
                      w[k].err);
        hx_target_verify(&t[k], 0, 0, len, 2, (uint64_t)k * len);
    }

    it_teardown(e, t);
    hx_free_pages(local, NT * len);
}
END_TEST

/*
 * Disconnecting one target leaves the others alone, and a target that
 * finalizes while connected is seen to go: transfers to it stop with
 * NOT_CONNECTED or FAILED (never a hang), transfers to the others go on.
 */
START_TEST(test_one_target_leaves)
{
    const size_t len = 256 * 1024;
    hixl_transfer_op_desc_t d;
    hx_target_t t[NT];
    hixl_engine_t *e;
    uint8_t *local;
    hixl_status_t st;
    int k, tries;

    local = hx_alloc_pages(len);
    e     = it_setup(_i, t, len);
    hx_register(e, local, len);
    hx_pat_fill(local, len, 3, 0);
    d.local_addr = (uintptr_t)local;
    d.len        = len;

    hx_ok(hixl_disconnect(e, t[1].name, HX_OP_TIMEOUT_MS));
    d.remote_addr = t[1].addr[0];
    hx_expect(hixl_transfer_sync(e, t[1].name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS), HIXL_NOT_CONNECTED, NULL);

    /* Target 2 goes away on its own: its finalize sends us a BYE and
     * closes the control connection.  A transfer posted to it now (before
     * or after we read the BYE) must end NOT_CONNECTED or FAILED: the peer
     * is closed and its requests "end FAILED" (peer.h, hixl_disconnect).
     * TIMEOUT here means a request to a closed peer waited out its whole
     * deadline instead (as when a forced close of an endpoint in UCX error
     * mode none, used for shared memory, leaves its flush pending). */
    hx_target_stop(&t[2]);
    d.remote_addr = t[2].addr[0];
    st = hixl_transfer_sync(e, t[2].name, HIXL_WRITE, &d, 1, 10000);
    ck_assert_msg((st == HIXL_NOT_CONNECTED) || (st == HIXL_FAILED),
                  "WRITE to a target that had finalized [%s]: %s, expected "
                  "NOT_CONNECTED or FAILED: %s", hx_tls_label(),
                  hixl_strerror(st), hixl_last_error());
    for (tries = 0; (tries < 5000) && (st != HIXL_NOT_CONNECTED); ++tries) {
        usleep(1000);
        st = hixl_transfer_sync(e, t[2].name, HIXL_WRITE, &d, 1, 10000);
        ck_assert_msg((st == HIXL_NOT_CONNECTED) || (st == HIXL_FAILED),
                      "WRITE to a target that had finalized [%s]: %s: %s",
                      hx_tls_label(), hixl_strerror(st), hixl_last_error());
    }
    ck_assert_msg(st == HIXL_NOT_CONNECTED, "a finalized target still "
                  "counts as connected [%s]: %s", hx_tls_label(),
                  hixl_last_error());

    for (k = 0; k < NT; k += 3) {
        d.remote_addr = t[k].addr[0];
        hx_transfer(e, t[k].name, HIXL_WRITE, &d, 1, k & 1);
        hx_target_verify(&t[k], 0, 0, len, 3, 0);
    }

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t[0]);
    hx_target_stop(&t[1]);
    hx_target_stop(&t[3]);
    hx_free_pages(local, len);
}
END_TEST

static Suite *it_multi_suite(void)
{
    Suite *s = suite_create("it_multi");
    TCase *tc;

    tc = hx_tcase("four_targets_async");
    tcase_add_loop_test(tc, test_four_targets_async, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("four_targets_threads");
    tcase_add_loop_test(tc, test_four_targets_threads, 0, IT_NMODES);
    suite_add_tcase(s, tc);

    tc = hx_tcase("one_target_leaves");
    tcase_add_loop_test(tc, test_one_target_leaves, 0, IT_NMODES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_multi_suite());
}
