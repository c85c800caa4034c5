/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: an engine whose threads all share one core.
 *
 * A prefill pinned to one core, or kept to one by its container's
 * cpuset, runs the thread that posts its transfers, the engine's progress
 * thread and UCX's own thread there.  UCX serialises a worker
 * with a spinlock; a thread that waits for it while its holder is
 * preempted on the same core spins until its time slice ends.  The
 * library's threads must leave the core to the poster instead
 * (core/worker/ucx_posting.h).
 *
 * This process pins itself to one CPU before it starts an engine (every
 * thread it starts inherits the mask), then streams 3 GiB of WRITEs into
 * a target as put_bw and bench/fan do: a window of four 4 MiB transfers,
 * status polls with short pauses between them.  It does so with the
 * engine's progress thread and without it, alternately, twice each.  The
 * target verifies each run's last pass byte for byte.  Over tcp, where
 * the poster's sends are the library's messages (UCX's active messages,
 * a 60 KiB pack and write each under UCX's lock).  (Over posix,cma, UCX
 * puts, the progress thread never spun here: no case for it.)
 *
 * The check: with a progress thread the process spends under
 * IT_THREAD_CPU_MAX times the CPU it spends without one, for the same
 * bytes (the least of each's runs).  Spinning on UCX's lock made it
 * 1.45-1.67 times over tcp; giving way, 0.96-1.09.  It is a bound on
 * wasted CPU, not on time: a slow run passes.
 */
#include "config.h"
#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define IT_SLICE            (4 * HX_MIB)
#define IT_SLICES           16                      /* the target region */
#define IT_PASSES           48                      /* 3 GiB a run */
#define IT_WINDOW           4                       /* transfers in flight */
#define IT_PAUSE_NS         50000                   /* between status polls */
#define IT_ROUNDS           2
#define IT_THREAD_CPU_MAX   1.25   /* with a progress thread / without */
#define IT_SEED             0x5c0eu
#define IT_TGT_SEED         0x7a11u

static double it_cpu_ms(clockid_t clock)
{
    struct timespec ts;

    ck_assert(clock_gettime(clock, &ts) == 0);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Pin this thread, and every thread it starts from now on, to the first
 * CPU it may run on. */
static int it_pin_to_one_cpu(void)
{
    cpu_set_t set, one;
    int cpu;

    ck_assert(sched_getaffinity(0, sizeof(set), &set) == 0);
    for (cpu = 0; (cpu < CPU_SETSIZE) && !CPU_ISSET(cpu, &set); ++cpu) {
    }
    ck_assert(cpu < CPU_SETSIZE);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ck_assert(sched_setaffinity(0, sizeof(one), &one) == 0);
    return cpu;
}

/* Wait for the oldest of the window's requests, polling as an
 * application that does other work between polls. */
static void it_wait_one(hixl_engine_t *e, hixl_req_t req)
{
    const struct timespec  pause = {0, IT_PAUSE_NS};
    hixl_transfer_status_t st = HIXL_TRANSFER_WAITING;
    unsigned polls;

    for (polls = 0; st == HIXL_TRANSFER_WAITING; ++polls) {
        hx_ok(hixl_get_transfer_status(e, req, &st));
        if (st == HIXL_TRANSFER_WAITING) {
            ck_assert_msg(polls < 2000000, "a transfer never ended");
            nanosleep(&pause, NULL);
        }
    }
    ck_assert_msg(st == HIXL_TRANSFER_COMPLETED, "a WRITE ended %d [%s]: %s",
                  (int)st, hx_tls_label(), hixl_last_error());
}

/* One pass: every slice of local written to the same slice of the
 * target's region, IT_WINDOW transfers in flight. */
static void it_pass(hixl_engine_t *e, const hx_target_t *t, uint8_t *local)
{
    hixl_req_t reqs[IT_SLICES];
    hixl_transfer_op_desc_t d;
    size_t k;

    for (k = 0; k < IT_SLICES; ++k) {
        if (k >= IT_WINDOW) {
            it_wait_one(e, reqs[k - IT_WINDOW]);
        }
        d.local_addr  = (uintptr_t)(local + k * IT_SLICE);
        d.remote_addr = t->addr[0] + k * IT_SLICE;
        d.len         = IT_SLICE;
        hx_ok(hixl_transfer_async(e, t->name, HIXL_WRITE, &d, 1, NULL,
                                  &reqs[k]));
    }
    for (k = IT_SLICES - IT_WINDOW; k < IT_SLICES; ++k) {
        it_wait_one(e, reqs[k]);
    }
}

/* Stream IT_PASSES passes into t from an engine with or without a
 * progress thread; the process's CPU time for them, in ms.  The last pass
 * lands over other bytes and is verified by the target. */
static double it_stream_cpu(hx_target_t *t, uint8_t *local,
                            size_t region, int thread)
{
    hixl_engine_t *e;
    double cpu0, cpu;
    int pass;

    e = hx_engine("127.0.0.1:0", "hixl.ProgressThread", thread ? "1" : "0",
                  NULL);
    hx_connect(e, t->name);
    hx_register(e, local, region);
    it_pass(e, t, local);   /* warm-up: connections, remote keys */
    cpu0 = it_cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
    for (pass = 0; pass < IT_PASSES; ++pass) {
        if (pass == IT_PASSES - 1) {
            hx_target_fill(t, 0, 0, region, IT_TGT_SEED, 0);
        }
        it_pass(e, t, local);
    }
    cpu = it_cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    hx_target_verify(t, 0, 0, region, IT_SEED, 0);
    hx_ok(hixl_finalize(e));
    return cpu;
}

START_TEST(test_threads_leave_the_core_to_the_poster)
{
    const size_t region = (size_t)IT_SLICES * IT_SLICE;
    double alone = 0, with = 0, cpu;
    hx_target_cfg_t cfg;
    hx_target_t t;
    uint8_t *local;
    int cpu_id, round;

    hx_use_tls(0);   /* tcp */
    hx_target_cfg_init(&cfg, region);
    cfg.init_seed = IT_TGT_SEED;
    hx_target_start(&t, &cfg);   /* forked before the pin: not pinned */

    cpu_id = it_pin_to_one_cpu();
    local  = hx_alloc_pages(region);
    hx_pat_fill(local, region, IT_SEED, 0);
    /* alternated, the least of each: the host's noise hits both alike */
    for (round = 0; round < IT_ROUNDS; ++round) {
        cpu   = it_stream_cpu(&t, local, region, 0);
        alone = (round == 0) || (cpu < alone) ? cpu : alone;
        cpu   = it_stream_cpu(&t, local, region, 1);
        with  = (round == 0) || (cpu < with) ? cpu : with;
    }
    fprintf(stderr, "%s, every thread on CPU %d: 3 GiB of WRITEs took "
            "%.0f ms of CPU without a progress thread, %.0f ms with one "
            "(%.2fx)\n", hx_tls_label(), cpu_id, alone, with, with / alone);
    ck_assert_msg(with < IT_THREAD_CPU_MAX * alone, "%s: with a progress "
                  "thread on the poster's core the process took %.0f ms of "
                  "CPU, without one %.0f ms", hx_tls_label(), with, alone);
    hx_target_stop(&t);
    hx_free_pages(local, region);
}
END_TEST

int main(void)
{
    Suite *s   = suite_create("shared_core");
    TCase *tc  = hx_tcase("one_core");

    tcase_add_test(tc, test_threads_leave_the_core_to_the_poster);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
