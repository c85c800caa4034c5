/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: one engine driven from several threads at once.
 *
 * hixl.h promises that every call except hixl_finalize() is safe from any
 * thread.  Four threads of this process share one engine and two targets
 * (forked processes, each with its own engine).  Each thread owns disjoint
 * slices of the local memory and of both targets' memory; per iteration it
 *
 *   - fills its write slice with a pattern unique to (run, thread,
 *     iteration),
 *   - WRITEs it to its slice in one target (alternating targets), by
 *     hixl_transfer_sync or by hixl_transfer_async + hixl_get_transfer_status
 *     polling, in 1..4 descriptors or, every fourth iteration, in hundreds of
 *     unaligned, shuffled ones,
 *   - READs the slice back into its read slice (split differently, sync or
 *     async the other way round) and compares every byte.
 *
 * Meanwhile thread 0 also sends notifies (hixl_send_notify) and per-transfer
 * notifies the target checks on arrival (HX_VERIFY_NOTIFY), and thread 1
 * flushes layers to the target it just wrote to.  At the end each target
 * checks, itself, that it holds every thread's last pattern, and hands over
 * its notifies: all there, in order, verified.
 *
 * The write slices live in memory from hixl_alloc_mem(), the read slices in
 * mmap'd memory registered with hixl_register_mem(): both kinds are used
 * concurrently.
 *
 * Run under UCX_TLS=tcp, sm and UCX's default, and once more with the
 * engine's progress thread off (hixl.ProgressThread=0), where the threads'
 * own calls (status polls, sync transfers) are all the progress there is.
 * Threads never call ck_assert: they note the first failure and stop.
 */
#include "config.h"
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NTHREADS 4
#define NPEERS   2
#define ITERS    48
/* per thread and target; odd, so slices start unaligned */
#define SLICE    ((size_t)512 * 1024 + 13)
/* thread 0's notify-checked writes: a fresh place per iteration, since the
 * target checks them whenever it gets to its notify queue */
#define XCHUNK   ((size_t)24 * 1024 + 7)
#define MANY_MAX 384
/* generous: only a hang may fail the test */
#define IT_TIMEOUT_MS 60000
#define IT_POLL_MS    90000

#define NOTIFY_NAME "it.concurrency"
#define NOTIFY_EVERY 3
#define LAYERS 4

typedef struct it_shared {
    hixl_engine_t *e;
    hx_target_t   *t;          /* NPEERS targets */
    uint8_t       *wbase;      /* NTHREADS write slices, then XCHUNK */
    uint8_t       *rbase;      /* NTHREADS read slices */
    int            run;
} it_shared_t;

typedef struct it_worker {
    it_shared_t *sh;
    int          index;
    uint64_t     last_seed[NPEERS];   /* 0: never written */
    /* thread 0: notifies sent per target; verify notifies per target */
    unsigned     notifies[NPEERS];
    unsigned     verifies[NPEERS];
    /* thread 1: layers flushed */
    unsigned     flushes;
    unsigned     many;         /* iterations with many descriptors */
    char         err[768];     /* empty: no failure */
} it_worker_t;

static uint64_t it_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Split [0, len) into descriptors: 1..4 pieces, or (many) up to MANY_MAX
 * pieces of random, unaligned lengths in shuffled order.  Returns the
 * count. */
static size_t it_split(hixl_transfer_op_desc_t *d, size_t len, int many,
                       uintptr_t local, uintptr_t remote, uint64_t *rng)
{
    size_t n, k, off = 0, left = len, piece;

    n = many ? (MANY_MAX / 2 + hx_rand(rng) % (MANY_MAX / 2 + 1)) :
               (1 + hx_rand(rng) % 4);
    for (k = 0; k < n; ++k) {
        if (k == n - 1) {
            piece = left;
        } else {
            /* around len / n, never more than is left */
            piece = 1 + hx_rand(rng) % (2 * len / n);
            if (piece > left) {
                piece = left;
            }
        }
        d[k].local_addr  = local + off;
        d[k].remote_addr = remote + off;
        d[k].len         = piece;   /* may be 0 at the tail: allowed */
        off  += piece;
        left -= piece;
    }
    if (many) {
        for (k = n - 1; k > 0; --k) {
            size_t j = hx_rand(rng) % (k + 1);
            hixl_transfer_op_desc_t tmp = d[k];

            d[k] = d[j];
            d[j] = tmp;
        }
    }
    return n;
}

/* Poll up to two requests until both left WAITING (bounded).  A NULL
 * request counts as done.  0 on success, else -1 with w->err set. */
static int it_poll(it_worker_t *w, hixl_req_t req[2], const char *what[2])
{
    hixl_engine_t *e = w->sh->e;
    uint64_t deadline = it_now_ms() + IT_POLL_MS;
    hixl_transfer_status_t ts;
    hixl_status_t st;
    int k, left = (req[0] != NULL) + (req[1] != NULL);

    while (left > 0) {
        for (k = 0; k < 2; ++k) {
            if (req[k] == NULL) {
                continue;
            }
            st = hixl_get_transfer_status(e, req[k], &ts);
            if (st != HIXL_SUCCESS) {
                snprintf(w->err, sizeof(w->err), "thread %d: status of %s: "
                         "%s: %s", w->index, what[k], hixl_strerror(st),
                         hixl_last_error());
                return -1;
            }
            if (ts == HIXL_TRANSFER_WAITING) {
                continue;
            }
            if (ts != HIXL_TRANSFER_COMPLETED) {
                snprintf(w->err, sizeof(w->err), "thread %d: %s ended with "
                         "transfer status %d: %s", w->index, what[k], (int)ts,
                         hixl_last_error());
                return -1;
            }
            req[k] = NULL;
            --left;
        }
        if (left == 0) {
            break;
        }
        if (it_now_ms() > deadline) {
            snprintf(w->err, sizeof(w->err), "thread %d: %s still WAITING "
                     "after %d ms", w->index, req[0] ? what[0] : what[1],
                     IT_POLL_MS);
            return -1;
        }
        sched_yield();
    }
    return 0;
}

/* One transfer, sync or async (polled).  0 on success, else -1 with
 * w->err set. */
static int it_move(it_worker_t *w, const char *remote, hixl_transfer_op_t op,
                   const hixl_transfer_op_desc_t *d, size_t n, int async,
                   const char *what)
{
    hixl_req_t req[2] = {NULL, NULL};
    const char *whats[2] = {what, NULL};
    hixl_status_t st;

    if (!async) {
        st = hixl_transfer_sync(w->sh->e, remote, op, d, n, IT_TIMEOUT_MS);
        if (st != HIXL_SUCCESS) {
            snprintf(w->err, sizeof(w->err), "thread %d: %s (sync, %zu "
                     "descriptors) to %s: %s: %s", w->index, what, n, remote,
                     hixl_strerror(st), hixl_last_error());
            return -1;
        }
        return 0;
    }
    st = hixl_transfer_async(w->sh->e, remote, op, d, n, NULL, &req[0]);
    if (st != HIXL_SUCCESS) {
        snprintf(w->err, sizeof(w->err), "thread %d: %s (async, %zu "
                 "descriptors) to %s: %s: %s", w->index, what, n, remote,
                 hixl_strerror(st), hixl_last_error());
        return -1;
    }
    return it_poll(w, req, whats);
}

static void *it_worker_main(void *arg)
{
    it_worker_t *w = arg;
    it_shared_t *sh = w->sh;
    hixl_transfer_op_desc_t *d;
    hixl_transfer_op_desc_t xd;
    hixl_transfer_args_t args;
    hx_verify_spec_t spec;
    hixl_notify_desc_t nd;
    hixl_req_t req[2];
    const char *whats[2];
    uint8_t *ws = sh->wbase + (size_t)w->index * SLICE;
    uint8_t *rs = sh->rbase + (size_t)w->index * SLICE;
    uint8_t *xs = sh->wbase + (size_t)NTHREADS * SLICE;
    uint64_t rng, seed, xseed;
    hixl_status_t st;
    size_t n;
    int64_t bad;
    char msg[64], what[96];
    int iter, p, many, async;
    unsigned notify_seq = 0;
    uint32_t layer;

    d = calloc(MANY_MAX, sizeof(*d));
    if (d == NULL) {
        snprintf(w->err, sizeof(w->err), "thread %d: out of memory",
                 w->index);
        return NULL;
    }
    rng = 0x5eed0000ull + (uint64_t)sh->run * 64 + (uint64_t)w->index;
    for (iter = 0; iter < ITERS; ++iter) {
        hx_target_t *t = &sh->t[(iter + w->index) % NPEERS];
        uintptr_t remote;

        p      = (iter + w->index) % NPEERS;
        remote = t->addr[0] + (uint64_t)w->index * SLICE;
        seed   = ((uint64_t)(sh->run + 1) << 40) |
                 ((uint64_t)(w->index + 1) << 20) | (uint64_t)iter;
        many   = (iter % 4 == 3);
        async  = (iter % 2 == 1);
        w->many += many;

        /* WRITE this iteration's pattern */
        hx_pat_fill(ws, SLICE, seed, 0);
        n = it_split(d, SLICE, many, (uintptr_t)ws, remote, &rng);
        snprintf(what, sizeof(what), "WRITE of iteration %d", iter);
        if (!async) {
            if (it_move(w, t->name, HIXL_WRITE, d, n, 0, what) != 0) {
                break;
            }
        } else {
            req[0] = req[1] = NULL;
            whats[0] = what;
            whats[1] = "notify-checked WRITE";
            st = hixl_transfer_async(sh->e, t->name, HIXL_WRITE, d, n, NULL,
                                     &req[0]);
            if (st != HIXL_SUCCESS) {
                snprintf(w->err, sizeof(w->err), "thread %d: post %s (%zu "
                         "descriptors) to %s: %s: %s", w->index, what, n,
                         t->name, hixl_strerror(st), hixl_last_error());
                break;
            }
            if (w->index == 0) {
                /* a second request in flight, carrying a notify on whose
                 * arrival the target checks these bytes */
                xseed = seed ^ 0xabcdull;
                hx_pat_fill(xs, XCHUNK, xseed, 0);
                xd.local_addr  = (uintptr_t)xs;
                xd.remote_addr = t->addr[1] + (uint64_t)iter * XCHUNK;
                xd.len         = XCHUNK;
                memset(&spec, 0, sizeof(spec));
                spec.region = 1;
                spec.off    = (uint64_t)iter * XCHUNK;
                spec.len    = XCHUNK;
                spec.seed   = xseed;
                spec.idx    = 0;
                memset(&args, 0, sizeof(args));
                args.field_mask     = HIXL_TRANSFER_ARG_NOTIFY |
                                      HIXL_TRANSFER_ARG_TIMEOUT;
                args.timeout_ms     = IT_TIMEOUT_MS;
                args.notify.name    = HX_VERIFY_NOTIFY;
                args.notify.msg     = &spec;
                args.notify.msg_len = sizeof(spec);
                st = hixl_transfer_async(sh->e, t->name, HIXL_WRITE, &xd, 1,
                                         &args, &req[1]);
                if (st != HIXL_SUCCESS) {
                    snprintf(w->err, sizeof(w->err), "thread 0: post of a "
                             "WRITE with a notify to %s: %s: %s", t->name,
                             hixl_strerror(st), hixl_last_error());
                    break;
                }
                w->verifies[p]++;
            }
            if (w->index == 1) {
                /* flush layers while the WRITE is still in flight */
                for (layer = 0; layer < LAYERS; ++layer) {
                    st = hixl_flush_layer(sh->e, t->name, 1, (uint64_t)iter,
                                          layer);
                    if (st != HIXL_SUCCESS) {
                        break;
                    }
                    w->flushes++;
                }
                if (st != HIXL_SUCCESS) {
                    snprintf(w->err, sizeof(w->err), "thread 1: "
                             "hixl_flush_layer(%s, stream 1, gen %d, layer "
                             "%u): %s: %s", t->name, iter, layer,
                             hixl_strerror(st), hixl_last_error());
                    break;
                }
            }
            if (it_poll(w, req, whats) != 0) {
                break;
            }
        }
        if ((w->index == 1) && !async) {
            /* and after a completed WRITE, on another stream */
            for (layer = 0; layer < LAYERS; ++layer) {
                st = hixl_flush_layer(sh->e, t->name, 2, (uint64_t)iter,
                                      layer);
                if (st != HIXL_SUCCESS) {
                    snprintf(w->err, sizeof(w->err), "thread 1: "
                             "hixl_flush_layer(%s, stream 2, gen %d, layer "
                             "%u): %s: %s", t->name, iter, layer,
                             hixl_strerror(st), hixl_last_error());
                    break;
                }
                w->flushes++;
            }
            if (st != HIXL_SUCCESS) {
                break;
            }
        }
        w->last_seed[p] = seed;

        if ((w->index == 0) && (iter % NOTIFY_EVERY == 0)) {
            snprintf(msg, sizeof(msg), "%u", notify_seq++);
            nd.name    = NOTIFY_NAME;
            nd.msg     = msg;
            nd.msg_len = strlen(msg);
            st = hixl_send_notify(sh->e, t->name, &nd, IT_TIMEOUT_MS);
            if (st != HIXL_SUCCESS) {
                snprintf(w->err, sizeof(w->err), "thread 0: notify %s to "
                         "%s: %s: %s", msg, t->name, hixl_strerror(st),
                         hixl_last_error());
                break;
            }
            w->notifies[p]++;
        }

        /* READ it back, split another way, the other way round */
        memset(rs, 0xee, SLICE);
        n = it_split(d, SLICE, (iter % 4 == 1), (uintptr_t)rs, remote, &rng);
        snprintf(what, sizeof(what), "READ of iteration %d", iter);
        if (it_move(w, t->name, HIXL_READ, d, n, !async, what) != 0) {
            break;
        }
        bad = hx_pat_find_bad(rs, SLICE, seed, 0);
        if (bad >= 0) {
            snprintf(w->err, sizeof(w->err), "thread %d, iteration %d: READ "
                     "back from %s: byte %lld of %zu is 0x%02x, expected "
                     "0x%02x (pattern seed 0x%llx)", w->index, iter, t->name,
                     (long long)bad, SLICE, rs[bad],
                     hx_pat(seed, (uint64_t)bad), (unsigned long long)seed);
            break;
        }
    }
    free(d);
    return NULL;
}

static void it_check_notifies(hx_target_t *t, const it_worker_t *w0, int p)
{
    hx_notify_t *got;
    size_t count = 0, k;
    unsigned seqs = 0, verifies = 0;
    char want[32];

    got = hx_target_notifies(t, &count);
    for (k = 0; k < count; ++k) {
        if (!strcmp(got[k].name, HX_VERIFY_NOTIFY)) {
            ck_assert_msg(got[k].verified == 1, "target %s [%s]: the data "
                          "of per-transfer notify %zu was not there on "
                          "arrival: %s", t->name, hx_tls_label(), k,
                          got[k].note ? got[k].note : "");
            ++verifies;
            continue;
        }
        ck_assert_str_eq(got[k].name, NOTIFY_NAME);
        /* thread 0 numbers its notifies over both targets; this target
         * gets every second one or so: they must come in increasing order */
        ck_assert_msg(got[k].msg_len < sizeof(want), "notify too long");
        if (seqs > 0) {
            ck_assert_msg(strtoul((char*)got[k].msg, NULL, 10) >
                          strtoul(want, NULL, 10), "target %s [%s]: notify "
                          "\"%s\" after \"%s\": out of order", t->name,
                          hx_tls_label(), (char*)got[k].msg, want);
        }
        snprintf(want, sizeof(want), "%s", (char*)got[k].msg);
        ++seqs;
    }
    ck_assert_msg(seqs == w0->notifies[p], "target %s [%s]: %u notifies "
                  "arrived, %u were sent", t->name, hx_tls_label(), seqs,
                  w0->notifies[p]);
    ck_assert_msg(verifies == w0->verifies[p], "target %s [%s]: %u "
                  "per-transfer notifies arrived, %u were sent", t->name,
                  hx_tls_label(), verifies, w0->verifies[p]);
    hx_notifies_free(got, count);
}

/* run: distinguishes the patterns of the cases; tls: index for
 * hx_use_tls. */
static void it_run(int run, int tls, int progress_thread)
{
    const size_t wlen = (size_t)NTHREADS * SLICE + XCHUNK;
    const size_t rlen = (size_t)NTHREADS * SLICE;
    hx_target_t t[NPEERS];
    hx_target_cfg_t cfg;
    it_shared_t sh;
    it_worker_t w[NTHREADS];
    pthread_t th[NTHREADS];
    hixl_mem_handle_t wh = NULL;
    void *wmem = NULL;
    uint8_t *rmem;
    int k, p;

    hx_use_tls(tls);
    /* targets first: they must not inherit this process's UCX */
    for (p = 0; p < NPEERS; ++p) {
        hx_target_cfg_init(&cfg, (size_t)NTHREADS * SLICE);
        cfg.region_len[1] = (size_t)ITERS * XCHUNK;
        cfg.nregions      = 2;
        cfg.misalign      = 3;
        cfg.init_seed     = 4242 + (uint64_t)p;
        hx_target_start(&t[p], &cfg);
    }

    memset(&sh, 0, sizeof(sh));
    sh.e   = hx_engine("127.0.0.1", "hixl.ProgressThread",
                       progress_thread ? "1" : "0", NULL);
    sh.t   = t;
    sh.run = run;
    if (!progress_thread) {
        /* the main thread waits for target replies: keep progress going */
        hx_target_set_idle(hx_idle_progress, sh.e);
    }
    for (p = 0; p < NPEERS; ++p) {
        hx_connect(sh.e, t[p].name);
    }
    hx_ok(hixl_alloc_mem(sh.e, wlen, HIXL_MEM_HOST, &wmem, &wh));
    ck_assert_ptr_nonnull(wmem);
    sh.wbase = wmem;
    rmem     = hx_alloc_pages(rlen);
    sh.rbase = rmem;
    hx_register(sh.e, rmem, rlen);

    for (k = 0; k < NTHREADS; ++k) {
        memset(&w[k], 0, sizeof(w[k]));
        w[k].sh    = &sh;
        w[k].index = k;
    }
    for (k = 0; k < NTHREADS; ++k) {
        ck_assert_int_eq(pthread_create(&th[k], NULL, it_worker_main, &w[k]),
                         0);
    }
    for (k = 0; k < NTHREADS; ++k) {
        pthread_join(th[k], NULL);
    }
    for (k = 0; k < NTHREADS; ++k) {
        ck_assert_msg(w[k].err[0] == '\0', "[%s%s] %s", hx_tls_label(),
                      progress_thread ? "" : ", no progress thread",
                      w[k].err);
    }
    ck_assert_uint_gt(w[1].flushes, 0);
    ck_assert_uint_gt(w[0].many, 0);

    /* every thread's last pattern is in both targets, as they see it */
    for (k = 0; k < NTHREADS; ++k) {
        for (p = 0; p < NPEERS; ++p) {
            ck_assert_msg(w[k].last_seed[p] != 0, "thread %d never wrote to "
                          "target %d", k, p);
            hx_target_verify(&t[p], 0, (uint64_t)k * SLICE, SLICE,
                             w[k].last_seed[p], 0);
        }
    }
    /* thread 0's notifies: all there, in order, data verified on arrival */
    for (p = 0; p < NPEERS; ++p) {
        it_check_notifies(&t[p], &w[0], p);
    }

    hx_ok(hixl_deregister_mem(sh.e, wh));
    hx_target_set_idle(NULL, NULL);
    hx_ok(hixl_finalize(sh.e));
    for (p = 0; p < NPEERS; ++p) {
        hx_target_stop(&t[p]);
    }
    hx_free_pages(rmem, rlen);
}

/* UCX_TLS=tcp, sm and UCX's default, with the engine's progress thread. */
START_TEST(test_threads_share_engine)
{
    it_run(_i, _i, 1);
}
END_TEST

/* No progress thread (tcp, where the initiator must progress its sends):
 * status polls and sync transfers of the four threads drive the engine. */
START_TEST(test_threads_no_progress_thread)
{
    it_run(16, 0, 0);
}
END_TEST

static Suite *it_concurrency_suite(void)
{
    Suite *s = suite_create("it_concurrency");
    TCase *tc;

    tc = hx_tcase("threads_share_engine");
    tcase_add_loop_test(tc, test_threads_share_engine, 0, hx_tls_count);
    suite_add_tcase(s, tc);

    tc = hx_tcase("threads_no_progress_thread");
    tcase_add_test(tc, test_threads_no_progress_thread);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_concurrency_suite());
}
