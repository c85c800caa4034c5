/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reg_scale: what many registered regions cost.  Two figures:
 *
 *  - registration: hixl_register_mem of n host regions of one size, one
 *    after the other into a fresh engine, for each n of -n; per region, the
 *    mean over all n and the mean over the last tenth (what one more region
 *    costs when n are already there, where an O(n) table shows);
 *  - connect: a listener in another process registers the largest n, and a
 *    fresh engine of this process times hixl_connect to it, which returns
 *    once the listener's whole table has arrived here (every region's key
 *    unpacked or ready to be).
 *
 *   reg_scale [-n N[,N...]] [-s REGION_SIZE] [-r ROUNDS] [-o up|down|random]
 *             [-C | -c]
 *
 * Medians of the rounds with [min-max].  The regions are carved from one
 * untouched anonymous mapping (no page is faulted in; UCX_TLS decides what
 * ucp_mem_map does with them) and registered in a shuffled order unless -o
 * says up or down by address.  -C skips the connect, -c times the connect
 * alone (for a profile of it).  Run it pinned
 * (taskset) with UCX_TLS=tcp or UCX_TLS=sm.
 */
#include "common/check.h"
#include "common/clock.h"
#include "common/stats.h"

#include <hixl/hixl.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_COUNTS 16

#define OK(_call, _what) BC_OK("reg_scale", (_call), (_what))

static uint8_t *reserve(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    if (p == MAP_FAILED) {
        perror("reg_scale: mmap");
        exit(1);
    }
    return p;
}

/* The order regions are registered in: by address up or down (separate
 * mmap calls hand out descending addresses), or shuffled. */
static int order = 'r';

static size_t *make_order(size_t n, unsigned seed)
{
    size_t *slot = malloc(n * sizeof(*slot)), i, j, tmp;

    if (slot == NULL) {
        fprintf(stderr, "reg_scale: out of memory\n");
        exit(1);
    }
    for (i = 0; i < n; ++i) {
        slot[i] = (order == 'd') ? n - 1 - i : i;
    }
    srand(seed);
    for (i = n; (order == 'r') && (i > 1); --i) {
        j           = (size_t)rand() % i;
        tmp         = slot[i - 1];
        slot[i - 1] = slot[j];
        slot[j]     = tmp;
    }
    return slot;
}

/* Register n regions of size bytes from base; the time per region over
 * the last tenth in *last_ns. */
static double register_all(hixl_engine_t *e, uint8_t *base, size_t n,
                           size_t size, double *last_ns)
{
    size_t           *slot = make_order(n, (unsigned)n);
    hixl_mem_handle_t h;
    hixl_mem_desc_t   m;
    uint64_t          t0, tail = 0;
    size_t            i, tenth = n - n / 10;

    t0 = bc_now_ns();
    for (i = 0; i < n; ++i) {
        if (i == tenth) {
            tail = bc_now_ns();
        }
        m.addr = (uintptr_t)(base + slot[i] * size);
        m.len  = size;
        OK(hixl_register_mem(e, &m, HIXL_MEM_HOST, &h), "register_mem");
    }
    *last_ns = (double)(bc_now_ns() - tail) / (double)(n - tenth);
    free(slot);
    return (double)(bc_now_ns() - t0) / (double)n;
}

static void report(const char *what, double *v, size_t rounds, const char *unit,
                   double scale)
{
    double med;

    bc_sort_double(v, rounds);
    med = bc_median(v, rounds);
    printf("%-36s %9.2f %s [%.2f-%.2f]\n", what, med / scale, unit,
           v[0] / scale, v[rounds - 1] / scale);
}

static void bench_register(const size_t *counts, size_t ncounts, size_t size,
                           size_t rounds)
{
    hixl_option_t  opt[] = {{"hixl.ListenEphemeral", "1"}};
    double        *mean  = calloc(rounds, sizeof(double));
    double        *last  = calloc(rounds, sizeof(double));
    hixl_engine_t *e;
    uint8_t       *base;
    char           what[64];
    size_t         c, r;

    if ((mean == NULL) || (last == NULL)) {
        fprintf(stderr, "reg_scale: out of memory\n");
        exit(1);
    }
    for (c = 0; c < ncounts; ++c) {
        base = reserve(counts[c] * size);
        for (r = 0; r < rounds; ++r) {
            OK(hixl_initialize("127.0.0.1:0", opt, 1, &e), "initialize");
            mean[r] = register_all(e, base, counts[c], size, &last[r]);
            OK(hixl_finalize(e), "finalize");
        }
        snprintf(what, sizeof(what), "register %zu: per region", counts[c]);
        report(what, mean, rounds, "us", 1e3);
        snprintf(what, sizeof(what), "register %zu: last tenth", counts[c]);
        report(what, last, rounds, "us", 1e3);
        munmap(base, counts[c] * size);
    }
    free(mean);
    free(last);
}

/* The listener: registers n regions, writes its name to fd, then waits
 * for its parent to close the pipe. */
static void listener(int wfd, int rfd, size_t n, size_t size)
{
    hixl_option_t  opt[] = {{"hixl.ListenEphemeral", "1"}};
    hixl_engine_t *e;
    const char    *name;
    uint8_t       *base = reserve(n * size);
    double         last;
    char           byte;

    OK(hixl_initialize("127.0.0.1:0", opt, 1, &e), "initialize listener");
    register_all(e, base, n, size, &last);
    name = hixl_engine_name(e);
    if (write(wfd, name, strlen(name) + 1) < 0) {
        perror("reg_scale: write");
        exit(1);
    }
    while (read(rfd, &byte, 1) > 0) {
    }
    hixl_finalize(e);
    exit(0);
}

typedef struct remote {
    pid_t pid;
    int   down; /* closed: the listener ends */
    char  name[256];
} remote_t;

/* Fork the listener before this process makes any engine (UCX is not
 * to be forked under), and wait until its table is complete. */
static void remote_start(remote_t *rm, size_t n, size_t size)
{
    int     up[2], down[2];
    ssize_t got;

    if ((pipe(up) != 0) || (pipe(down) != 0)) {
        perror("reg_scale: pipe");
        exit(1);
    }
    fflush(stdout);
    rm->pid = fork();
    if (rm->pid < 0) {
        perror("reg_scale: fork");
        exit(1);
    }
    if (rm->pid == 0) {
        close(up[0]);
        close(down[1]);
        listener(up[1], down[0], n, size);
    }
    close(up[1]);
    close(down[0]);
    rm->down = down[1];
    got      = read(up[0], rm->name, sizeof(rm->name) - 1);
    if (got <= 0) {
        fprintf(stderr, "reg_scale: the listener did not start\n");
        exit(1);
    }
    rm->name[got] = '\0';
    close(up[0]);
}

static void bench_connect(remote_t *rm, size_t n, size_t rounds)
{
    double        *t = calloc(rounds, sizeof(double));
    hixl_engine_t *e;
    char           what[64];
    uint64_t       t0;
    size_t         r;
    int            status;

    if (t == NULL) {
        fprintf(stderr, "reg_scale: out of memory\n");
        exit(1);
    }
    for (r = 0; r < rounds; ++r) {
        /* a fresh engine each round: nothing cached from the last */
        OK(hixl_initialize("127.0.0.1", NULL, 0, &e), "initialize");
        t0 = bc_now_ns();
        OK(hixl_connect(e, rm->name, 60000), "connect");
        t[r] = (double)(bc_now_ns() - t0);
        OK(hixl_disconnect(e, rm->name, 10000), "disconnect");
        OK(hixl_finalize(e), "finalize");
    }
    close(rm->down);
    waitpid(rm->pid, &status, 0);
    snprintf(what, sizeof(what), "connect to %zu regions", n);
    report(what, t, rounds, "ms", 1e6);
    free(t);
}

static size_t parse_counts(char *arg, size_t *counts)
{
    size_t n = 0;
    char  *tok, *save = NULL;

    for (tok = strtok_r(arg, ",", &save); (tok != NULL) && (n < MAX_COUNTS);
         tok = strtok_r(NULL, ",", &save)) {
        counts[n] = strtoul(tok, NULL, 0);
        if (counts[n] == 0) {
            return 0;
        }
        ++n;
    }
    return n;
}

int main(int argc, char **argv)
{
    size_t      counts[MAX_COUNTS] = {1000, 10000, 50000}, ncounts = 3;
    size_t      size = 64 * 1024, rounds = 5, c, most = 0;
    const char *tls = getenv("UCX_TLS");
    int         opt, connect = 1, reg = 1;
    remote_t    rm;

    while ((opt = getopt(argc, argv, "n:s:r:o:Cc")) != -1) {
        switch (opt) {
        case 'n':
            ncounts = parse_counts(optarg, counts);
            break;
        case 's':
            size = strtoul(optarg, NULL, 0);
            break;
        case 'r':
            rounds = strtoul(optarg, NULL, 0);
            break;
        case 'o':
            order = optarg[0];
            break;
        case 'C':
            connect = 0;
            break;
        case 'c':
            reg = 0;
            break;
        default:
            fprintf(stderr, "usage: reg_scale [-n N[,N...]] [-s REGION_SIZE] "
                            "[-r ROUNDS] [-o up|down|random] [-C | -c]\n");
            return 2;
        }
    }
    if ((ncounts == 0) || (size == 0) || (rounds == 0) ||
        ((order != 'u') && (order != 'd') && (order != 'r'))) {
        fprintf(stderr, "reg_scale: -n, -s and -r must be positive, -o up, "
                        "down or random\n");
        return 2;
    }
    for (c = 0; c < ncounts; ++c) {
        most = (counts[c] > most) ? counts[c] : most;
    }
    printf("# regions of %zu bytes registered %s, UCX_TLS=%s, %zu rounds: "
           "median [min-max]\n",
           size,
           (order == 'u') ? "by address up" :
           (order == 'd') ? "by address down" :
                            "in a shuffled order",
           tls ? tls : "(default)", rounds);
    signal(SIGPIPE, SIG_IGN);
    if (connect) {
        remote_start(&rm, most, size); /* then idle while we register */
    }
    if (reg) {
        bench_register(counts, ncounts, size, rounds);
    }
    if (connect) {
        bench_connect(&rm, most, rounds);
    }
    return 0;
}
