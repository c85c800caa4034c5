/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blocks_submit: what submitting a paged KV request costs the submitting
 * thread, by block table (hixl_transfer_blocks_async) and by descriptors
 * built in advance (hixl_transfer_async), between two engines of this
 * process: the decode listens, the prefill connects.
 *
 *   blocks_submit [-n BLOCKS] [-s BLOCK_SIZE] [-r ROUNDS]
 *
 * The figure is the calling thread's CPU time of the one call (its own
 * clock, so the progress threads' work is not in it), per block, median of
 * the rounds with [min-max]; the request is then waited for and every
 * block checked at the decode.  With small blocks over shared memory (the
 * map path: the library's own memcpy, a few bytes each) the figure is the
 * library's cost per descriptor; over tcp it includes building and
 * posting the library's messages.  Run with UCX_TLS=sm or UCX_TLS=tcp.
 */
#include "common/check.h"
#include "common/stats.h"

#include <hixl/hixl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define OK(_call, _what) BC_OK("blocks_submit", (_call), (_what))

static void wait_done(hixl_engine_t *e, hixl_req_t req)
{
    hixl_transfer_status_t st;

    OK(hixl_wait_transfers(e, &req, 1, HIXL_WAIT_ALL, 60000, &st, NULL),
       "wait_transfers");
    if (st != HIXL_TRANSFER_COMPLETED) {
        fprintf(stderr, "blocks_submit: request ended %d: %s\n", (int)st,
                hixl_last_error());
        exit(1);
    }
}

/* Every decode block table[k] holds prefill block k's bytes (round r). */
static void check(const uint8_t *dst, const uint8_t *src, const uint32_t *tab,
                  size_t n, size_t bs)
{
    size_t k;

    for (k = 0; k < n; ++k) {
        if (memcmp(dst + (size_t)tab[k] * bs, src + k * bs, bs) != 0) {
            fprintf(stderr, "blocks_submit: block %zu (decode block %u) "
                    "differs\n", k, tab[k]);
            exit(1);
        }
    }
}

static void report(const char *what, double *v, size_t rounds, size_t n)
{
    double med;

    bc_sort_double(v, rounds);
    med = bc_median(v, rounds);
    printf("%-34s %9.1f ns/block [%.1f-%.1f]  %8.3f ms per request\n", what,
           med / (double)n, v[0] / (double)n, v[rounds - 1] / (double)n,
           med / 1e6);
}

int main(int argc, char **argv)
{
    size_t n = 32768, bs = 64, rounds = 7, r, k;
    hixl_option_t opt[] = {{"hixl.ListenEphemeral", "1"}};
    hixl_engine_t *dec, *pre;
    hixl_mem_handle_t dh, ph;
    hixl_block_layout_t l;
    hixl_blocks_t lb, rb;
    hixl_transfer_op_desc_t *descs;
    uint32_t *lids, *tab;
    uint8_t *src, *dst;
    double *t_blocks, *t_descs, t0;
    const char *tls = getenv("UCX_TLS");
    hixl_req_t req;
    void *dmem;
    int c;

    while ((c = getopt(argc, argv, "n:s:r:")) != -1) {
        switch (c) {
        case 'n': n = strtoul(optarg, NULL, 0); break;
        case 's': bs = strtoul(optarg, NULL, 0); break;
        case 'r': rounds = strtoul(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: blocks_submit [-n BLOCKS] [-s "
                    "BLOCK_SIZE] [-r ROUNDS]\n");
            return 2;
        }
    }
    if ((n == 0) || (bs == 0) || (rounds == 0) || (n > UINT32_MAX)) {
        fprintf(stderr, "blocks_submit: -n, -s and -r must be positive\n");
        return 2;
    }
    OK(hixl_initialize("127.0.0.1:0", opt, 1, &dec), "initialize decode");
    OK(hixl_initialize("127.0.0.1:0", opt, 1, &pre), "initialize prefill");
    OK(hixl_alloc_mem(dec, n * bs, HIXL_MEM_HOST, &dmem, &dh), "alloc_mem");
    dst = dmem;
    src = malloc(n * bs);
    lids = malloc(n * sizeof(*lids));
    tab = malloc(n * sizeof(*tab));
    descs = malloc(n * sizeof(*descs));
    t_blocks = calloc(rounds, sizeof(double));
    t_descs = calloc(rounds, sizeof(double));
    if (!src || !lids || !tab || !descs || !t_blocks || !t_descs) {
        fprintf(stderr, "blocks_submit: out of memory\n");
        return 1;
    }
    {
        hixl_mem_desc_t m = {(uintptr_t)src, n * bs};

        OK(hixl_register_mem(pre, &m, HIXL_MEM_HOST, &ph), "register_mem");
    }
    OK(hixl_connect(pre, hixl_engine_name(dec), 30000), "connect");
    memset(&l, 0, sizeof(l));
    l.base = (uintptr_t)src; l.block_size = bs; l.num_blocks = n;
    OK(hixl_blocks_prepare(pre, NULL, &l, &lb), "prepare local");
    l.base = (uintptr_t)dst;
    OK(hixl_blocks_prepare(pre, hixl_engine_name(dec), &l, &rb),
       "prepare remote");
    for (r = 0; r < rounds; ++r) {
        /* a fresh random block table and fresh bytes each round */
        srand((unsigned)r + 1);
        for (k = 0; k < n; ++k) {
            lids[k] = (uint32_t)k;
            tab[k]  = (uint32_t)k;
        }
        for (k = n; k > 1; --k) {
            size_t j = (size_t)rand() % k;
            uint32_t t = tab[k - 1];

            tab[k - 1] = tab[j];
            tab[j] = t;
        }
        for (k = 0; k < n * bs; ++k) {
            src[k] = (uint8_t)(k * 31 + r * 7 + 1);
        }
        t0 = thread_cpu_ns();
        OK(hixl_transfer_blocks_async(pre, hixl_engine_name(dec), HIXL_WRITE,
                                      lb, lids, rb, tab, n, NULL, &req),
           "transfer_blocks_async");
        t_blocks[r] = thread_cpu_ns() - t0;
        wait_done(pre, req);
        check(dst, src, tab, n, bs);
        for (k = 0; k < n * bs; ++k) {
            src[k] = (uint8_t)(k * 17 + r * 5 + 3);
        }
        for (k = 0; k < n; ++k) {
            descs[k].local_addr  = (uintptr_t)(src + k * bs);
            descs[k].remote_addr = (uintptr_t)(dst + (size_t)tab[k] * bs);
            descs[k].len         = bs;
        }
        t0 = thread_cpu_ns();
        OK(hixl_transfer_async(pre, hixl_engine_name(dec), HIXL_WRITE, descs,
                               n, NULL, &req), "transfer_async");
        t_descs[r] = thread_cpu_ns() - t0;
        wait_done(pre, req);
        check(dst, src, tab, n, bs);
    }
    printf("# %zu blocks of %zu bytes, UCX_TLS=%s, %zu rounds, every block "
           "checked; the submitting thread's CPU\n", n, bs,
           tls ? tls : "(default)", rounds);
    report("hixl_transfer_blocks_async", t_blocks, rounds, n);
    report("hixl_transfer_async (descs ready)", t_descs, rounds, n);
    OK(hixl_blocks_release(pre, lb), "release");
    OK(hixl_blocks_release(pre, rb), "release");
    OK(hixl_finalize(pre), "finalize prefill");
    OK(hixl_finalize(dec), "finalize decode");
    free(src); free(lids); free(tab); free(descs);
    free(t_blocks); free(t_descs);
    return 0;
}
