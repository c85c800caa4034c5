/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw: the timed loops, the responder loops and data verification.
 *
 * Bandwidth tests (put_bw, get_bw, get_lat) mirror ucx_perftest's
 * run_stream_uni: keep up to -O transfers in flight, post the next one as
 * soon as the oldest completes, count an iteration per posted transfer, and
 * drain everything before the clock stops.  A hixl transfer completes when
 * its data is visible at the destination (the library flushes the endpoint),
 * which is a stronger completion than ucx_perftest's local one; with the
 * same window the comparison shows what that costs.
 *
 * put_lat mirrors run_pingpong: the client writes sequence number sn into
 * the last byte of its message and puts it into the server's memory; the
 * server polls its memory for sn and puts the same message back; the client
 * polls its own memory for sn.  One iteration is one round trip; the report
 * halves it.  Sequence numbers cycle through 1..250, 0xfe tells the server
 * to stop.
 *
 * Nothing is checked in the timed loops.  After each measurement one more
 * transfer carries a fresh pattern and the receiving side compares every
 * byte (bench/common's pattern): the program exits 3 on a mismatch.
 *
 * Progress: the engines run without a progress thread (hixl.ProgressThread
 * 0), so every loop drives them itself, as ucx_perftest's loops call
 * ucp_worker_progress: polling a request with hixl_get_transfer_status, or,
 * with nothing in flight, hixl_engine_progress.
 */
#include "config.h"
#include "put_bw.h"
#include "common/clock.h"
#include "common/pattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_SN_CYCLE     250
#define BENCH_SN_STOP      0xfe
#define BENCH_WARMUP_TIME  0.1      /* seconds, as ucx_perftest */
#define BENCH_CHECK_SPINS  4096     /* spins between deadline/socket checks */

typedef struct bench_ring {
    hixl_req_t *reqs;
    unsigned    size;
    unsigned    head;       /* next slot to fill */
    unsigned    tail;       /* oldest in flight */
    unsigned    inflight;
} bench_ring_t;

/* ---- data patterns ------------------------------------------------------- */

void bench_pattern_fill(uint8_t *buf, size_t len, uint64_t seed)
{
    if (bench_mem_is_device(buf)) {   /* -m ascend: through the runtime */
        bench_mem_dev_fill(buf, len, seed);
        return;
    }
    bc_pattern_fill(buf, len, seed);
}

int bench_pattern_check(const uint8_t *buf, size_t len, uint64_t seed,
                        char *msg, size_t msg_len)
{
    bc_pattern_diff_t diff;

    if (bench_mem_is_device(buf)) {
        return bench_mem_dev_check(buf, len, seed, msg, msg_len);
    }
    if (bc_pattern_check(buf, len, seed, &diff) == 0) {
        return 0;
    }
    snprintf(msg, msg_len, "byte %zu of %zu is 0x%02x, expected 0x%02x "
             "(%zu bad byte%s)", diff.first, len, diff.got, diff.want,
             diff.bad, (diff.bad == 1) ? "" : "s");
    return -1;
}

/* Slot of repetition k: k itself, or (scatter) a shuffle of 0..count-1
 * that moves every slot (fixed seed: runs compare).  NULL: out of memory. */
static size_t *bench_slots(unsigned count, bench_layout_t layout)
{
    size_t *slot = malloc((count ? count : 1) * sizeof(*slot));
    uint64_t x = 0x9e3779b97f4a7c15u;
    size_t k, j, t;

    if (slot == NULL) {
        return NULL;
    }
    for (k = 0; k < count; ++k) {
        slot[k] = k;
    }
    if (layout != BENCH_LAYOUT_SCATTER) {
        return slot;
    }
    for (k = count; k > 1; --k) {   /* Sattolo: one cycle, no fixed point */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        j       = (size_t)(x % (k - 1));
        t       = slot[k - 1];
        slot[k - 1] = slot[j];
        slot[j] = t;
    }
    return slot;
}

int bench_build_descs(bench_side_t *side, const bench_run_t *run,
                      bench_layout_t layout)
{
    hixl_transfer_op_desc_t *d;
    size_t unit = run->msg_size / (run->count ? run->count : 1);
    size_t i, k, off = 0, *slot;

    d    = realloc(side->descs, run->num_descs * sizeof(*d));
    slot = bench_slots(run->count, layout);
    if ((d == NULL) || (slot == NULL)) {
        fprintf(stderr, "put_bw: out of memory for %zu descriptors\n",
                run->num_descs);
        free(slot);
        if (d != NULL) {
            side->descs = d;
        }
        return -1;
    }
    side->descs     = d;
    side->num_descs = run->num_descs;
    for (i = 0; i < run->num_descs; ++i) {
        if (i % run->num_sizes == 0) {
            k   = i / run->num_sizes;
            off = (layout == BENCH_LAYOUT_REUSE) ? 0 : slot[k] * unit;
        }
        d[i].local_addr  = (uintptr_t)bench_local(side) + off;
        d[i].remote_addr = side->peer_target + off;
        d[i].len         = run->sizes[i % run->num_sizes];
        off             += d[i].len;
    }
    free(slot);
    return 0;
}

/* ---- requests ------------------------------------------------------------ */

void bench_progress(void *arg)
{
    bench_side_t *side = arg;

    hixl_engine_progress(side->engine);
}

static int bench_ring_init(bench_ring_t *ring, unsigned size)
{
    memset(ring, 0, sizeof(*ring));
    ring->reqs = calloc(size, sizeof(*ring->reqs));
    if (ring->reqs == NULL) {
        fprintf(stderr, "put_bw: out of memory for a window of %u\n", size);
        return -1;
    }
    ring->size = size;
    return 0;
}

static void bench_xfer_error(const bench_side_t *side, const char *what)
{
    fprintf(stderr, "put_bw: %s to %s: %s\n", what, side->peer_name,
            hixl_last_error());
}

static inline int bench_post(bench_side_t *side, bench_ring_t *ring,
                             hixl_transfer_op_t op)
{
    if (hixl_transfer_async(side->engine, side->peer_name, op, side->descs,
                            side->num_descs, NULL,
                            &ring->reqs[ring->head]) != HIXL_SUCCESS) {
        bench_xfer_error(side, "cannot post a transfer");
        return -1;
    }
    ring->head = (ring->head + 1 == ring->size) ? 0 : ring->head + 1;
    ring->inflight++;
    return 0;
}

/* Poll the oldest request once: 1 when it completed, 0 when it is still in
 * flight, -1 when it failed or timed out (printed). */
static inline int bench_poll_oldest(bench_side_t *side, bench_ring_t *ring)
{
    hixl_transfer_status_t xs = HIXL_TRANSFER_WAITING;
    hixl_status_t status;

    status = hixl_get_transfer_status(side->engine, ring->reqs[ring->tail],
                                      &xs);
    if (xs == HIXL_TRANSFER_COMPLETED) {
        ring->tail = (ring->tail + 1 == ring->size) ? 0 : ring->tail + 1;
        ring->inflight--;
        return 1;
    }
    if ((status == HIXL_SUCCESS) && (xs == HIXL_TRANSFER_WAITING)) {
        return 0;
    }
    bench_xfer_error(side, (xs == HIXL_TRANSFER_TIMEOUT) ?
                     "transfer timed out (is the peer stuck?)" :
                     "transfer failed");
    return -1;
}

/* A free slot in the window: the oldest request polled until it is done. */
static inline int bench_wait_room(bench_side_t *side, bench_ring_t *ring)
{
    while (ring->inflight == ring->size) {
        if (bench_poll_oldest(side, ring) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Post the next transfer as soon as the window has room for it. */
static inline int bench_post_next(bench_side_t *side, bench_ring_t *ring,
                                  hixl_transfer_op_t op)
{
    if (bench_wait_room(side, ring) != 0) {
        return -1;
    }
    return bench_post(side, ring, op);
}

static int bench_drain(bench_side_t *side, bench_ring_t *ring)
{
    while (ring->inflight > 0) {
        if (bench_poll_oldest(side, ring) < 0) {
            return -1;
        }
    }
    return 0;
}

int bench_transfer_wait(bench_side_t *side, hixl_transfer_op_t op)
{
    bench_ring_t ring;
    int rc;

    if (bench_ring_init(&ring, 1) != 0) {
        return -1;
    }
    rc = bench_post(side, &ring, op);
    if (rc == 0) {
        rc = bench_drain(side, &ring);
    }
    free(ring.reqs);
    return rc;
}

/* Every BENCH_CHECK_SPINS spins of a memory poll: is the peer still there,
 * and has it answered within the timeout?  0 to keep waiting. */
static int bench_wait_check(bench_side_t *side, double *deadline,
                            const char *what)
{
    int ready;

    ready = bench_oob_ready(side->oob_fd);
    if (ready != 0) {
        fprintf(stderr, "put_bw: %s: the peer %s\n", what, (ready < 0) ?
                "closed the connection (it exited or failed; see its output)" :
                "sent a message out of turn (it gave up)");
        return -1;
    }
    if (side->timeout_s <= 0) {
        return 0;
    }
    if (*deadline == 0) {
        *deadline = bc_now_s() + side->timeout_s;
    } else if (bc_now_s() > *deadline) {
        fprintf(stderr, "put_bw: %s: no answer from the peer for %d s; "
                "giving up (--timeout changes the wait)\n", what,
                side->timeout_s);
        return -1;
    }
    return 0;
}

/* ---- client -------------------------------------------------------------- */

static int bench_client_stream(bench_side_t *side, const bench_opts_t *opts,
                               const bench_run_t *run, bench_stats_t *stats,
                               bench_ring_t *ring, hixl_transfer_op_t op)
{
    uint64_t i, end_tick = UINT64_MAX;
    double warm_end = bc_now_s() + BENCH_WARMUP_TIME;

    for (i = 0; i < opts->warmup; ++i) {
        if (bench_post_next(side, ring, op) != 0) {
            return -1;
        }
        if (((i & 15) == 0) && (bc_now_s() > warm_end)) {
            break;
        }
    }
    if (bench_drain(side, ring) != 0) {
        return -1;
    }

    bench_stats_start(stats, opts, run);
    if (opts->max_time > 0) {
        end_tick = stats->prev_tick +
                   (uint64_t)(opts->max_time * bench_ticks_per_sec());
    }
    for (i = 0; i < opts->iters; ++i) {
        if (bench_post_next(side, ring, op) != 0) {
            return -1;
        }
        bench_stats_update(stats, run->msg_size);
        if (stats->prev_tick > end_tick) {
            break;
        }
    }
    return bench_drain(side, ring);
}

/* Wait for sn in the last byte of our target while keeping our own
 * requests and the engine progressing. */
static int bench_wait_sn(bench_side_t *side, bench_ring_t *ring,
                         const volatile uint8_t *rx, uint8_t sn,
                         int stop_ok, const char *what)
{
    double deadline = 0;
    unsigned spins = 0;
    int rc;

    for (;;) {
        if (*rx == sn) {
            return 1;
        }
        if (stop_ok && (*rx == BENCH_SN_STOP)) {
            return 0;
        }
        if (ring->inflight > 0) {
            rc = bench_poll_oldest(side, ring);
            if (rc < 0) {
                return -1;
            }
            if (rc > 0) {
                continue;
            }
        } else {
            bench_progress(side);
        }
        if ((++spins % BENCH_CHECK_SPINS) == 0) {
            if (bench_wait_check(side, &deadline, what) != 0) {
                return -1;
            }
        }
    }
}

static int bench_client_pingpong(bench_side_t *side, const bench_opts_t *opts,
                                 const bench_run_t *run, bench_stats_t *stats,
                                 bench_ring_t *ring)
{
    volatile uint8_t *tx = bench_local(side) + run->msg_size - 1;
    const volatile uint8_t *rx = bench_target(side) + run->msg_size - 1;
    uint64_t i, end_tick = UINT64_MAX, total = opts->warmup + opts->iters;
    double warm_end = bc_now_s() + BENCH_WARMUP_TIME;
    int measuring = (opts->warmup == 0);
    uint8_t sn;

    if (measuring) {
        bench_stats_start(stats, opts, run);
    }
    for (i = 0; i < total; ++i) {
        sn = (uint8_t)(1 + (i % BENCH_SN_CYCLE));
        if (bench_wait_room(side, ring) != 0) {
            return -1;
        }
        *tx = sn;
        if (bench_post(side, ring, HIXL_WRITE) != 0) {
            return -1;
        }
        if (bench_wait_sn(side, ring, rx, sn, 0, "put_lat") <= 0) {
            return -1;
        }
        if (measuring) {
            bench_stats_update(stats, run->msg_size);
            if (stats->prev_tick > end_tick) {
                break;
            }
        } else if ((i + 1 >= opts->warmup) || (bc_now_s() > warm_end)) {
            /* the measurement starts with the next round trip; sn keeps
             * counting, so the server need not know */
            measuring = 1;
            total     = i + 1 + opts->iters;
            bench_stats_start(stats, opts, run);
            if (opts->max_time > 0) {
                end_tick = stats->prev_tick +
                           (uint64_t)(opts->max_time * bench_ticks_per_sec());
            }
        }
    }
    return bench_drain(side, ring);
}

int bench_client_loop(bench_side_t *side, const bench_opts_t *opts,
                      const bench_run_t *run, bench_stats_t *stats)
{
    const bench_test_info_t *info = &bench_tests[opts->test];
    bench_ring_t ring;
    int rc;

    if (bench_ring_init(&ring, opts->window) != 0) {
        return -1;
    }
    if (info->pingpong) {
        rc = bench_client_pingpong(side, opts, run, stats, &ring);
    } else {
        rc = bench_client_stream(side, opts, run, stats, &ring, info->op);
    }
    free(ring.reqs);
    return rc;
}

/* ---- server -------------------------------------------------------------- */

static int bench_server_pingpong(bench_side_t *side, const bench_opts_t *opts,
                                 const bench_run_t *run)
{
    volatile uint8_t *tx = bench_local(side) + run->msg_size - 1;
    const volatile uint8_t *rx = bench_target(side) + run->msg_size - 1;
    bench_ring_t ring;
    uint64_t i;
    uint8_t sn;
    int rc;

    if (bench_ring_init(&ring, opts->window) != 0) {
        return -1;
    }
    for (i = 0;; ++i) {
        sn = (uint8_t)(1 + (i % BENCH_SN_CYCLE));
        rc = bench_wait_sn(side, &ring, rx, sn, 1, "put_lat responder");
        if (rc <= 0) {
            break;
        }
        if (bench_wait_room(side, &ring) != 0) {
            rc = -1;
            goto out;
        }
        *tx = sn;
        if (bench_post(side, &ring, HIXL_WRITE) != 0) {
            rc = -1;
            goto out;
        }
    }
    if (rc == 0) {
        rc = bench_drain(side, &ring);
    }
out:
    free(ring.reqs);
    return rc;
}

int bench_server_loop(bench_side_t *side, const bench_opts_t *opts,
                      const bench_run_t *run, char **end_line_p)
{
    unsigned spins = 0;
    int ready;

    if (bench_tests[opts->test].pingpong) {
        if ((bench_server_pingpong(side, opts, run) != 0) ||
            (bench_oob_send(side->oob_fd, "STOPPED\n") != 0)) {
            return -1;
        }
        return bench_oob_recv(side->oob_fd, side->timeout_s, bench_progress,
                              side, end_line_p);
    }

    /* One-sided tests: the data needs no call here, but transports that
     * move it in software (tcp) need this engine to progress, as
     * ucx_perftest's responder does.  Look at the socket now and then. */
    for (;;) {
        bench_progress(side);
        if ((++spins & 255) != 0) {
            continue;
        }
        ready = bench_oob_ready(side->oob_fd);
        if (ready < 0) {
            fprintf(stderr, "put_bw: the client closed the connection during "
                    "the test (it exited or failed; see its output)\n");
            return -1;
        }
        if (ready > 0) {
            return bench_oob_recv(side->oob_fd, side->timeout_s, NULL, NULL,
                                  end_line_p);
        }
    }
}
