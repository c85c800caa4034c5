/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: completion without polling.
 *
 *  - hixl_wait_transfers, ALL and ANY: every request reported once, its
 *    handle released, the bytes checked where they landed; TIMEOUT while
 *    the target is stalled (the requests stay valid and are waited on
 *    again); a target killed while waited on ends its request FAILED; a
 *    finalize from another thread ends the waits of others (transfers,
 *    notifies, layers) with FAILED;
 *  - the engine's event fd in epoll: readable on a completion, a notify and
 *    a layer signal; hixl_arm's re-check (events since the last arm);
 *  - hixl_wait_notifies: TIMEOUT with nothing queued, then the notify.
 * Each runs over tcp and sm, with and without the engine's progress thread
 * (the stalled-target tests over tcp only: shared memory completes inside
 * the post).  Bounded waits only; nothing asserts on time.
 */
#include "config.h"
#include "harness.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#define IT_N      8
#define IT_PIECE  (1024 * 1024)

typedef struct it_mode {
    int tls;        /* hx_tls_table index: 0 tcp, 1 sm */
    int progress;   /* the engine under test's progress thread */
} it_mode_t;

static const it_mode_t it_modes[] = { {0, 1}, {1, 1}, {0, 0}, {1, 0} };
#define IT_NMODES ((int)(sizeof(it_modes) / sizeof(it_modes[0])))

static hixl_engine_t *it_engine(const char *name, int progress)
{
    return hx_engine(name, "hixl.ListenEphemeral", "1", "hixl.ProgressThread",
                     progress ? "1" : "0", "hixl.PeerTimeoutMs", "5000",
                     "hixl.FinalizeTimeoutMs", "1000", NULL);
}

/* Post IT_N writes of a piece each, pattern seed + i. */
static void it_post(hixl_engine_t *e, hx_target_t *t, uint8_t *local,
                    uint64_t seed, hixl_req_t *reqs)
{
    hixl_transfer_op_desc_t d;
    int i;

    for (i = 0; i < IT_N; ++i) {
        hx_pat_fill(local + (size_t)i * IT_PIECE, IT_PIECE, seed + i, 0);
        d.local_addr  = (uintptr_t)local + (size_t)i * IT_PIECE;
        d.remote_addr = t->addr[0] + (uint64_t)i * IT_PIECE;
        d.len         = IT_PIECE;
        hx_ok(hixl_transfer_async(e, t->name, HIXL_WRITE, &d, 1, NULL,
                                  &reqs[i]));
    }
}

static void it_verify(hx_target_t *t, uint64_t seed)
{
    int i;

    for (i = 0; i < IT_N; ++i) {
        hx_target_verify(t, 0, (uint64_t)i * IT_PIECE, IT_PIECE, seed + i, 0);
    }
}

/* A released handle is refused. */
static void it_released(hixl_engine_t *e, hixl_req_t req)
{
    hixl_transfer_status_t st;

    ck_assert_int_eq(hixl_get_transfer_status(e, req, &st),
                     HIXL_PARAM_INVALID);
}

/*
 * ANY returns at least one request, reported and released; ALL the rest.
 */
START_TEST(test_all_any)
{
    const it_mode_t *m = &it_modes[_i];
    hixl_transfer_status_t st[IT_N];
    hixl_req_t reqs[IT_N], rest[IT_N];
    hx_target_cfg_t cfg;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t first, nrest = 0;
    int i;

    hx_use_tls(m->tls);
    hx_target_cfg_init(&cfg, (size_t)IT_N * IT_PIECE);
    hx_target_start(&t, &cfg);
    e     = it_engine("127.0.0.1", m->progress);
    local = hx_alloc_pages((size_t)IT_N * IT_PIECE);
    hx_register(e, local, (size_t)IT_N * IT_PIECE);
    hx_connect(e, t.name);

    it_post(e, &t, local, 100, reqs);
    hx_ok(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ANY, HX_OP_TIMEOUT_MS,
                              st, &first));
    ck_assert_uint_lt(first, IT_N);
    ck_assert_int_eq(st[first], HIXL_TRANSFER_COMPLETED);
    for (i = 0; i < IT_N; ++i) {
        if (st[i] == HIXL_TRANSFER_WAITING) {
            rest[nrest++] = reqs[i];
            continue;
        }
        ck_assert_int_eq(st[i], HIXL_TRANSFER_COMPLETED);
        ck_assert_uint_ge((size_t)i, first);
        it_released(e, reqs[i]);
    }
    if (nrest > 0) {
        hx_ok(hixl_wait_transfers(e, rest, nrest, HIXL_WAIT_ALL,
                                  HX_OP_TIMEOUT_MS, st, NULL));
        for (i = 0; i < (int)nrest; ++i) {
            ck_assert_int_eq(st[i], HIXL_TRANSFER_COMPLETED);
            it_released(e, rest[i]);
        }
    }
    it_verify(&t, 100);

    /* ALL at once, -1: no deadline (the transfers end) */
    it_post(e, &t, local, 200, reqs);
    hx_ok(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ALL, -1, st, &first));
    ck_assert_uint_eq(first, 0);
    for (i = 0; i < IT_N; ++i) {
        ck_assert_int_eq(st[i], HIXL_TRANSFER_COMPLETED);
    }
    it_verify(&t, 200);

    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, (size_t)IT_N * IT_PIECE);
}
END_TEST

/* A target over tcp, stopped (SIGSTOP) before the writes are posted:
 * they cannot complete until it continues (SIGCONT). */
static hixl_engine_t *it_stalled(const it_mode_t *m, hx_target_t *t,
                                 uint8_t **local, hixl_req_t *reqs)
{
    hx_target_cfg_t cfg;
    hixl_engine_t *e;

    hx_use_tls(0);
    hx_target_cfg_init(&cfg, (size_t)IT_N * IT_PIECE);
    hx_target_start(t, &cfg);
    e      = it_engine("127.0.0.1", m->progress);
    *local = hx_alloc_pages((size_t)IT_N * IT_PIECE);
    hx_register(e, *local, (size_t)IT_N * IT_PIECE);
    hx_connect(e, t->name);
    hx_stop_child(t->pid);
    it_post(e, t, *local, 300, reqs);
    return e;
}

/*
 * TIMEOUT while the target stalls; the requests stay valid and a second
 * wait sees them complete.
 */
START_TEST(test_timeout)
{
    const it_mode_t *m = &it_modes[_i];
    hixl_transfer_status_t st[IT_N];
    hixl_req_t reqs[IT_N];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    size_t first;
    int i;

    e = it_stalled(m, &t, &local, reqs);
    hx_expect(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ALL, 200, st,
                                  &first), HIXL_TIMEOUT, "within 200 ms");
    hx_expect(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ANY, 0, st,
                                  &first), HIXL_TIMEOUT, "any");
    ck_assert_uint_eq(first, IT_N);
    for (i = 0; i < IT_N; ++i) {
        ck_assert_int_eq(st[i], HIXL_TRANSFER_WAITING);
    }
    ck_assert_int_eq(kill(t.pid, SIGCONT), 0);
    hx_ok(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ALL, HX_OP_TIMEOUT_MS,
                              st, NULL));
    for (i = 0; i < IT_N; ++i) {
        ck_assert_int_eq(st[i], HIXL_TRANSFER_COMPLETED);
    }
    it_verify(&t, 300);
    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, (size_t)IT_N * IT_PIECE);
}
END_TEST

typedef struct it_killer {
    pid_t pid;
    int   delay_ms;
} it_killer_t;

static void *it_kill_later(void *arg)
{
    it_killer_t *k = arg;

    usleep((useconds_t)k->delay_ms * 1000);
    kill(k->pid, SIGKILL);
    return NULL;
}

/*
 * The target is killed while the requests are waited on: they end FAILED
 * (the wait returns, whatever the deadline), and the reason names it.
 */
START_TEST(test_peer_dies)
{
    const it_mode_t *m = &it_modes[_i];
    hixl_transfer_status_t st[IT_N];
    hixl_req_t reqs[IT_N];
    it_killer_t k;
    pthread_t th;
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int i;

    e     = it_stalled(m, &t, &local, reqs);
    k.pid = t.pid;
    k.delay_ms = 200;
    ck_assert_int_eq(pthread_create(&th, NULL, it_kill_later, &k), 0);
    hx_ok(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ALL, -1, st, NULL));
    pthread_join(th, NULL);
    for (i = 0; i < IT_N; ++i) {
        ck_assert_msg(st[i] == HIXL_TRANSFER_FAILED, "request %d: %d", i,
                      (int)st[i]);
        it_released(e, reqs[i]);
    }
    waitpid(t.pid, NULL, 0);
    hx_ok(hixl_finalize(e));
    hx_free_pages(local, (size_t)IT_N * IT_PIECE);
}
END_TEST

typedef struct it_waiter {
    hixl_engine_t         *e;
    hixl_req_t            *reqs;
    int                    what;   /* 0 transfers, 1 notifies, 2 layer */
    hixl_status_t          status;
    hixl_transfer_status_t st[IT_N];
    char                   msg[256];
} it_waiter_t;

static void *it_wait_thread(void *arg)
{
    it_waiter_t *w = arg;
    hixl_notify_t *n;
    size_t count;

    if (w->what == 0) {
        w->status = hixl_wait_transfers(w->e, w->reqs, IT_N, HIXL_WAIT_ALL,
                                        -1, w->st, NULL);
    } else if (w->what == 1) {
        w->status = hixl_wait_notifies(w->e, -1, &n, &count);
    } else {
        w->status = hixl_wait_layer(w->e, "127.0.0.9:1", 0, 1, 0, 600000);
    }
    snprintf(w->msg, sizeof(w->msg), "%s", hixl_last_error());
    return NULL;
}

/*
 * hixl_finalize from this thread ends the waits of three others (on
 * transfers, notifies, a layer) with FAILED, without a crash.
 */
START_TEST(test_finalize_while_waiting)
{
    const it_mode_t *m = &it_modes[_i];
    it_waiter_t w[3];
    pthread_t th[3];
    hixl_req_t reqs[IT_N];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int i, j;

    e = it_stalled(m, &t, &local, reqs);
    for (i = 0; i < 3; ++i) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].e    = e;
        w[i].reqs = reqs;
        w[i].what = i;
        ck_assert_int_eq(pthread_create(&th[i], NULL, it_wait_thread, &w[i]),
                         0);
    }
    usleep(200 * 1000);   /* let them sleep (not required for the outcome) */
    hx_ok(hixl_finalize(e));
    ck_assert_int_eq(kill(t.pid, SIGCONT), 0);
    for (i = 0; i < 3; ++i) {
        pthread_join(th[i], NULL);
        ck_assert_msg(w[i].status == HIXL_FAILED, "waiter %d: %s (%s)", i,
                      hixl_strerror(w[i].status), w[i].msg);
        ck_assert_msg(strstr(w[i].msg, "finalize") != NULL, "%s", w[i].msg);
    }
    for (j = 0; j < IT_N; ++j) {
        ck_assert_int_eq(w[0].st[j], HIXL_TRANSFER_WAITING);
    }
    hx_target_stop(&t);
    hx_free_pages(local, (size_t)IT_N * IT_PIECE);
}
END_TEST

/* ---- in-process pair: event fd, notifies ----------------------------------- */

typedef struct it_pair {
    hixl_engine_t *d, *p;    /* d: the engine under test; p: its peer */
    uint8_t       *dmem, *pmem;
    int            efd, ep;
} it_pair_t;

#define IT_MEM (4 * 1024 * 1024)

static void it_pair_start(it_pair_t *x, const it_mode_t *m)
{
    struct epoll_event ev;

    hx_use_tls(m->tls);
    x->d = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                     "hixl.ProgressThread", m->progress ? "1" : "0", NULL);
    x->p = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    x->dmem = hx_alloc_pages(IT_MEM);
    x->pmem = hx_alloc_pages(IT_MEM);
    hx_register(x->d, x->dmem, IT_MEM);
    hx_register(x->p, x->pmem, IT_MEM);
    hx_ok(hixl_get_event_fd(x->d, &x->efd));
    x->ep = epoll_create1(0);
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ck_assert_int_eq(epoll_ctl(x->ep, EPOLL_CTL_ADD, x->efd, &ev), 0);
}

static void it_pair_stop(it_pair_t *x)
{
    close(x->ep);
    hx_ok(hixl_finalize(x->p));
    hx_ok(hixl_finalize(x->d));
    hx_free_pages(x->dmem, IT_MEM);
    hx_free_pages(x->pmem, IT_MEM);
}

/* A blocking call of the peer's, in a thread: without a progress thread
 * the engine under test progresses only when the test calls it. */
typedef struct it_job {
    it_pair_t      *x;
    int             what;   /* 0 connect p -> d, 1 connect d -> p,
                               2 notify p -> d */
    const char     *name;
    hixl_status_t   status;
} it_job_t;

static void *it_job_main(void *arg)
{
    it_job_t *j = arg;
    hixl_notify_desc_t nd;

    if (j->what == 0) {
        j->status = hixl_connect(j->x->p, hixl_engine_name(j->x->d),
                                 HX_OP_TIMEOUT_MS);
    } else if (j->what == 1) {
        j->status = hixl_connect(j->x->d, hixl_engine_name(j->x->p),
                                 HX_OP_TIMEOUT_MS);
    } else {
        nd.name    = j->name;
        nd.msg     = "payload";
        nd.msg_len = 7;
        j->status  = hixl_send_notify(j->x->p, hixl_engine_name(j->x->d), &nd,
                                      HX_OP_TIMEOUT_MS);
    }
    return NULL;
}

/* Run a job while the engine under test is kept going by event-fd waits
 * (which progress it, without a progress thread). */
static void it_job_run(it_pair_t *x, int what, const char *name)
{
    struct epoll_event ev;
    it_job_t j = { x, what, name, HIXL_FAILED };
    pthread_t th;
    int armed, done = 0;

    ck_assert_int_eq(pthread_create(&th, NULL, it_job_main, &j), 0);
    while (!done) {
        hx_ok(hixl_arm(x->d, &armed));
        if (armed) {
            epoll_wait(x->ep, &ev, 1, 10);
        }
        done = (pthread_tryjoin_np(th, NULL) == 0);
    }
    hx_ok(j.status);
}

/* Look, arm, sleep until look() says done (bounded: HX_OP_TIMEOUT_MS of
 * sleeps that saw nothing fails the test). */
static void it_until(it_pair_t *x, int (*look)(void *arg), void *arg)
{
    struct epoll_event ev;
    int armed, idle = 0, n;

    while (!look(arg)) {
        hx_ok(hixl_arm(x->d, &armed));
        if (!armed) {
            continue;
        }
        n = epoll_wait(x->ep, &ev, 1, 1000);
        ck_assert_int_ge(n, 0);
        idle = (n == 0) ? idle + 1000 : 0;
        ck_assert_msg(idle < HX_OP_TIMEOUT_MS, "no event [%s]",
                      hx_tls_label());
    }
}

typedef struct it_look {
    it_pair_t             *x;
    hixl_req_t             req;
    hixl_transfer_status_t st;
    size_t                 nnotify;
    char                   name[64];
} it_look_t;

static int it_look_req(void *arg)
{
    it_look_t *l = arg;

    hx_ok(hixl_get_transfer_status(l->x->d, l->req, &l->st));
    return l->st != HIXL_TRANSFER_WAITING;
}

static int it_look_notify(void *arg)
{
    it_look_t *l = arg;
    hixl_notify_t *n;
    size_t count, i;

    hx_ok(hixl_get_notifies(l->x->d, &n, &count));
    for (i = 0; i < count; ++i) {
        ck_assert_str_eq(n[i].name, l->name);
        ck_assert_uint_eq(n[i].msg_len, 7);
        ck_assert_mem_eq(n[i].msg, "payload", 7);
        ck_assert_str_eq(n[i].remote, hixl_engine_name(l->x->p));
    }
    hixl_release_notifies(n, count);
    l->nnotify += count;
    return l->nnotify > 0;
}

static int it_look_layer(void *arg)
{
    it_look_t *l = arg;
    int ready;

    hx_ok(hixl_test_layer(l->x->d, hixl_engine_name(l->x->p), 0, 1, 0,
                          &ready));
    return ready;
}

/*
 * The event fd wakes an epoll loop for a notify, a layer signal (the bytes
 * flushed before it are there) and a transfer's completion.
 */
START_TEST(test_event_fd)
{
    const it_mode_t *m = &it_modes[_i];
    hixl_transfer_op_desc_t d;
    it_look_t l;
    it_pair_t x;

    it_pair_start(&x, m);
    it_job_run(&x, 0, NULL);
    it_job_run(&x, 1, NULL);

    /* a notify */
    memset(&l, 0, sizeof(l));
    l.x = &x;
    snprintf(l.name, sizeof(l.name), "evt.notify");
    it_job_run(&x, 2, l.name);   /* returns once it is queued at d */
    it_until(&x, it_look_notify, &l);
    ck_assert_uint_eq(l.nnotify, 1);

    /* a layer signal: the bytes written before the flush are there */
    hx_pat_fill(x.pmem, IT_MEM, 41, 0);
    d.local_addr  = (uintptr_t)x.pmem;
    d.remote_addr = (uintptr_t)x.dmem;
    d.len         = IT_MEM;
    hx_ok(hixl_transfer_async(x.p, hixl_engine_name(x.d), HIXL_WRITE, &d, 1,
                              NULL, &l.req));
    hx_ok(hixl_flush_layer(x.p, hixl_engine_name(x.d), 0, 1, 0));
    it_until(&x, it_look_layer, &l);
    hx_pat_assert(x.dmem, IT_MEM, 41, 0, "layer 0 at its signal");
    ck_assert_int_eq(hx_wait_req(x.p, l.req, NULL), HIXL_TRANSFER_COMPLETED);

    /* a completion of d's own transfer */
    hx_pat_fill(x.dmem, IT_MEM, 42, 0);
    d.local_addr  = (uintptr_t)x.dmem;
    d.remote_addr = (uintptr_t)x.pmem;
    hx_ok(hixl_transfer_async(x.d, hixl_engine_name(x.p), HIXL_WRITE, &d, 1,
                              NULL, &l.req));
    it_until(&x, it_look_req, &l);
    ck_assert_int_eq(l.st, HIXL_TRANSFER_COMPLETED);
    hx_pat_assert(x.pmem, IT_MEM, 42, 0, "written by d");
    it_pair_stop(&x);
}
END_TEST

/*
 * hixl_arm: after an event it answers 0 once (events since the last arm),
 * then 1; an event after an arm makes the fd readable.  With a progress
 * thread nothing else makes it readable.
 */
START_TEST(test_arm)
{
    const it_mode_t *m = &it_modes[_i];
    hixl_notify_desc_t nd;
    struct epoll_event ev;
    it_look_t l;
    it_pair_t x;
    int armed, tries;

    it_pair_start(&x, m);
    it_job_run(&x, 0, NULL);
    memset(&l, 0, sizeof(l));
    l.x = &x;
    snprintf(l.name, sizeof(l.name), "arm");

    for (tries = 0, armed = 0; !armed && (tries < 1000); ++tries) {
        hx_ok(hixl_arm(x.d, &armed));   /* settles what connecting left */
    }
    ck_assert_int_eq(armed, 1);
    if (m->progress) {
        ck_assert_int_eq(epoll_wait(x.ep, &ev, 1, 0), 0);
        nd.name    = l.name;         /* an event after the arm */
        nd.msg     = "payload";
        nd.msg_len = 7;
        hx_ok(hixl_send_notify(x.p, hixl_engine_name(x.d), &nd,
                               HX_OP_TIMEOUT_MS));
        ck_assert_int_eq(epoll_wait(x.ep, &ev, 1, 1000 * 30), 1);
        hx_ok(hixl_arm(x.d, &armed));
        ck_assert_int_eq(armed, 0);  /* the notify came since the last arm */
        ck_assert_int_eq(it_look_notify(&l), 1);
        hx_ok(hixl_arm(x.d, &armed));
        ck_assert_int_eq(armed, 1);
        ck_assert_int_eq(epoll_wait(x.ep, &ev, 1, 0), 0);   /* cleared */
    } else {
        it_job_run(&x, 2, l.name);
        it_until(&x, it_look_notify, &l);
    }
    it_pair_stop(&x);
}
END_TEST

/*
 * hixl_wait_notifies: TIMEOUT (count 0, NULL) with nothing queued, then
 * the notify a peer sent.
 */
START_TEST(test_wait_notifies)
{
    const it_mode_t *m = &it_modes[_i];
    hixl_notify_t *n = (hixl_notify_t*)&n;
    it_job_t j;
    pthread_t th;
    it_pair_t x;
    size_t count = 99;

    it_pair_start(&x, m);
    it_job_run(&x, 0, NULL);
    hx_expect(hixl_wait_notifies(x.d, 100, &n, &count), HIXL_TIMEOUT,
              "no notify");
    ck_assert_uint_eq(count, 0);
    ck_assert_ptr_null(n);
    hx_expect(hixl_wait_notifies(x.d, 0, &n, &count), HIXL_TIMEOUT, NULL);

    j.x = &x; j.what = 2; j.name = "blocking"; j.status = HIXL_FAILED;
    ck_assert_int_eq(pthread_create(&th, NULL, it_job_main, &j), 0);
    hx_ok(hixl_wait_notifies(x.d, HX_OP_TIMEOUT_MS, &n, &count));
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(n[0].name, "blocking");
    ck_assert_uint_eq(n[0].msg_len, 7);
    ck_assert_mem_eq(n[0].msg, "payload", 7);
    hixl_release_notifies(n, count);
    /* without a progress thread the sender's answer needs d's progress */
    while (pthread_tryjoin_np(th, NULL) != 0) {
        hixl_wait_notifies(x.d, 10, &n, &count);
        hixl_release_notifies(n, count);
    }
    hx_ok(j.status);
    it_pair_stop(&x);
}
END_TEST

/*
 * Every argument checked, with a message naming it.
 */
START_TEST(test_bad_args)
{
    hixl_transfer_status_t st[2];
    hixl_req_t reqs[2];
    hixl_notify_t *n;
    hixl_engine_t *e;
    size_t count;
    int fd, armed;

    e = hx_engine("127.0.0.1", NULL);
    reqs[0] = reqs[1] = (hixl_req_t)(uintptr_t)0x1234;
    hx_expect(hixl_wait_transfers(NULL, reqs, 1, HIXL_WAIT_ALL, 0, st, NULL),
              HIXL_PARAM_INVALID, "engine is NULL");
    hx_expect(hixl_wait_transfers(e, NULL, 1, HIXL_WAIT_ALL, 0, st, NULL),
              HIXL_PARAM_INVALID, "reqs is NULL");
    hx_expect(hixl_wait_transfers(e, reqs, 0, HIXL_WAIT_ALL, 0, st, NULL),
              HIXL_PARAM_INVALID, "n 0");
    hx_expect(hixl_wait_transfers(e, reqs, 1, HIXL_WAIT_ALL, 0, NULL, NULL),
              HIXL_PARAM_INVALID, "statuses is NULL");
    hx_expect(hixl_wait_transfers(e, reqs, 1, (hixl_wait_mode_t)7, 0, st,
                                  NULL), HIXL_PARAM_INVALID, "wait mode 7");
    hx_expect(hixl_wait_transfers(e, reqs, 1, HIXL_WAIT_ANY, -2, st, NULL),
              HIXL_PARAM_INVALID, "timeout_ms -2");
    hx_expect(hixl_wait_transfers(e, reqs, 2, HIXL_WAIT_ANY, 0, st, NULL),
              HIXL_PARAM_INVALID, "request 0");
    hx_expect(hixl_get_event_fd(NULL, &fd), HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_get_event_fd(e, NULL), HIXL_PARAM_INVALID, "fd_p");
    hx_expect(hixl_arm(NULL, &armed), HIXL_PARAM_INVALID, "engine");
    hx_expect(hixl_arm(e, NULL), HIXL_PARAM_INVALID, "armed_p");
    hx_expect(hixl_wait_notifies(NULL, 0, &n, &count), HIXL_PARAM_INVALID,
              "engine");
    hx_expect(hixl_wait_notifies(e, 0, NULL, &count), HIXL_PARAM_INVALID,
              "notifies_p");
    hx_expect(hixl_wait_notifies(e, 0, &n, NULL), HIXL_PARAM_INVALID,
              "count_p");
    hx_expect(hixl_wait_notifies(e, -5, &n, &count), HIXL_PARAM_INVALID,
              "timeout_ms -5");
    hx_ok(hixl_get_event_fd(e, &fd));
    ck_assert_int_ge(fd, 0);
    hx_ok(hixl_arm(e, &armed));
    hx_ok(hixl_finalize(e));
}
END_TEST

/* The same request twice is refused before anything is reported. */
START_TEST(test_duplicate)
{
    hixl_transfer_status_t st[IT_N];
    hixl_req_t reqs[IT_N], two[2];
    hx_target_t t;
    hixl_engine_t *e;
    uint8_t *local;
    int i;

    e = it_stalled(&it_modes[0], &t, &local, reqs);
    two[0] = two[1] = reqs[0];
    hx_expect(hixl_wait_transfers(e, two, 2, HIXL_WAIT_ALL, 0, st, NULL),
              HIXL_PARAM_INVALID, "twice");
    ck_assert_int_eq(kill(t.pid, SIGCONT), 0);
    hx_ok(hixl_wait_transfers(e, reqs, IT_N, HIXL_WAIT_ALL, HX_OP_TIMEOUT_MS,
                              st, NULL));
    for (i = 0; i < IT_N; ++i) {
        ck_assert_int_eq(st[i], HIXL_TRANSFER_COMPLETED);
    }
    it_verify(&t, 300);
    hx_ok(hixl_finalize(e));
    hx_target_stop(&t);
    hx_free_pages(local, (size_t)IT_N * IT_PIECE);
}
END_TEST

static Suite *it_wait_suite(void)
{
    Suite *s = suite_create("it_wait");
    TCase *tc;

    tc = hx_tcase("all_any");
    tcase_add_loop_test(tc, test_all_any, 0, IT_NMODES);
    suite_add_tcase(s, tc);
    tc = hx_tcase("stalled");
    /* tcp only: modes 0 and 2 */
    tcase_add_loop_test(tc, test_timeout, 0, 1);
    tcase_add_loop_test(tc, test_timeout, 2, 3);
    tcase_add_loop_test(tc, test_peer_dies, 0, 1);
    tcase_add_loop_test(tc, test_peer_dies, 2, 3);
    tcase_add_loop_test(tc, test_finalize_while_waiting, 0, 1);
    tcase_add_loop_test(tc, test_finalize_while_waiting, 2, 3);
    tcase_add_test(tc, test_duplicate);
    suite_add_tcase(s, tc);
    tc = hx_tcase("events");
    tcase_add_loop_test(tc, test_event_fd, 0, IT_NMODES);
    tcase_add_loop_test(tc, test_arm, 0, IT_NMODES);
    tcase_add_loop_test(tc, test_wait_notifies, 0, IT_NMODES);
    tcase_add_test(tc, test_bad_args);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_wait_suite());
}
