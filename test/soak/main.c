/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: N engines in N processes write into each other for a while, and
 * every byte that lands is checked.
 *
 *   soak [-t SECONDS] [-n ENGINES] [-s SEED] [-k SLOTS] [-r RSS_MIB]
 *        [-w WARMUP_SECONDS] [-c CHURN_CYCLES] [-q]
 *
 * The parent forks the engine processes before anything initializes UCX or
 * hixl (it never does itself) and only coordinates them over pipes: it
 * gathers their names and region addresses, hands every engine the table,
 * starts them together, stops them together, collects their reports and
 * prints one summary table, ending with the plain line "N passed, M failed"
 * (an engine passes with no corruption and no failure).  Exit status 0 only
 * when every engine passed and none grew its RSS after warm-up by more than
 * -r MiB.  UCX_TLS is taken from the environment (and printed).
 *
 * Each engine listens on 127.0.0.1:0 (hixl.ListenEphemeral) and allocates
 * one receive region with hixl_alloc_mem(): a ring of K slots per sender,
 * then a static area filled with the engine's own pattern.  It connects to
 * every other engine.  Two threads then run for the duration:
 *
 *  - the sender writes to random peers, one write per free slot of its ring
 *    there: 1 B .. 1 MiB at an unaligned offset in the slot, split into a
 *    random number of unaligned descriptors in random order, with a pattern
 *    derived from (sender, receiver, sequence).  A write is posted async (or,
 *    now and then, sync) and is followed either by hixl_flush_layer (stream =
 *    sender index, generation = sequence, layer 0), posted at once without
 *    waiting for the write, or carries a per-transfer notify.  Now and then
 *    it READs a random range of a peer's static area and checks it.
 *  - the receiver takes notifies, polls the layer signals it expects
 *    (hixl_test_layer; hixl_wait_layer when idle) and, the moment it sees
 *    the signal of a write, checks every byte of the slot: the write's range
 *    against its pattern, everything else against the guard byte the slot
 *    was left with (a write landing beside its range is caught too).  It
 *    then restores the guard and returns the slot to its sender with a
 *    "done" notify, so no slot is overwritten before it was checked.
 *
 * A layer signal of a newer generation supersedes an older one (hixl.h); a
 * receiver that finds the generation it waits for superseded knows the
 * newer flush covered the write (it was posted before it), and checks it
 * as if signalled.
 *
 * Which sequence goes to which slot, with which size, offset and signal,
 * follows from (seed, sender, receiver, sequence), so the receiver computes
 * what it must see without being told.
 *
 * Beside them, clients come and go at engine e0 (churn.h): each connects,
 * writes into e0's churn area, reads it back and checks it, and ends every
 * way a client can (disconnect, finalize alone, _exit, SIGKILL; from
 * short-lived processes and from one that lives through the run); e0's
 * mappings, descriptors, threads and RSS must not grow with them.  -c
 * sets their number: the churn goes on alone after the traffic until that
 * many connections ended (0: as many as the run has time for).
 *
 * Nothing waits forever: every wait on a child is bounded, a child that
 * dies or goes silent is reported (and the others finish without it), every
 * child has an alarm() and dies with the parent.
 */
#include "soak.h"

/* The same command, without arguments, to every engine. */
static void kids_command(unsigned n, uint32_t type)
{
    p2c_t cmd;
    unsigned i;

    memset(&cmd, 0, sizeof(cmd));
    cmd.type = type;
    for (i = 0; i < n; ++i) {
        kid_send(&g_kids[i], &cmd);
    }
}

/* Engines up, their names and regions to all, every engine connected to
 * every other: 0, or -1 (said why). */
static int soak_start(unsigned n)
{
    p2c_t cmd;
    unsigned i;
    int rc;

    /* engines up: their names and regions go to all */
    rc = kids_pump(n, now_ms() + SETUP_TIMEOUT_S * 1000ull, is_ready, 0);
    if ((rc != 0) || (kids_alive(n) != n)) {
        fprintf(stderr, "soak: not every engine came up\n");
        return -1;
    }
    memset(&cmd, 0, sizeof(cmd));
    cmd.type = P_PEERS;
    cmd.n    = n;
    for (i = 0; i < n; ++i) {
        snprintf(cmd.names[i], sizeof(cmd.names[i]), "%s", g_kids[i].name);
        cmd.base[i] = g_kids[i].base;
        if (!g_cfg.quiet) {
            printf("soak: e%u is %s (pid %d)\n", i, g_kids[i].name,
                   (int)g_kids[i].pid);
        }
    }
    for (i = 0; i < n; ++i) {
        kid_send(&g_kids[i], &cmd);
    }
    rc = kids_pump(n, now_ms() + SETUP_TIMEOUT_S * 1000ull, is_connected, 0);
    if ((rc != 0) || (kids_alive(n) != n)) {
        fprintf(stderr, "soak: not every engine connected\n");
        return -1;
    }
    return 0;
}

/* The clients that come and go at e0 (churn.h): 0, or -1. */
static int soak_churn_start(unsigned n)
{
    churn_cfg_t churn;

    /* e0: its churn area follows the static one */
    memset(&churn, 0, sizeof(churn));
    churn.cycles     = g_cfg.churn;
    churn.parallel   = SOAK_CHURN_PARALLEL;
    churn.resident   = 1;
    churn.len        = SOAK_CHURN_LEN;
    churn.close_fds  = 1;   /* the soak engines' pipes are not theirs */
    churn.warmup     = ((g_cfg.churn != 0) && (g_cfg.churn < 1000)) ?
                       g_cfg.churn / 10 : 100;
    churn.target     = g_kids[0].name;
    churn.area       = g_kids[0].base + (uint64_t)n * g_cfg.slots * SLOT_SIZE +
                       STATIC_SIZE;
    churn.target_pid = g_kids[0].pid;
    churn.seed       = mix(g_cfg.seed ^ 0x434855524eull);
    return churn_init(&churn);
}

/* The run: every engine writes until the time is up and reports when it
 * has its slots back; the churn goes on to its end; then every engine
 * stops and finalizes.  Whether the churn's report failed. */
static int soak_run(unsigned n)
{
    uint64_t deadline;
    unsigned i;
    int churn_bad;

    kids_command(n, P_GO);
    g_go_ms  = now_ms();
    for (i = 0; i < n; ++i) {
        g_kids[i].last_msg_ms = g_go_ms;
    }
    deadline = g_go_ms + (uint64_t)g_cfg.seconds * 1000 +
               (DRAIN_TIMEOUT_S + 30) * 1000ull;
    if (kids_pump(n, deadline, is_drained, 1) != 0) {
        fprintf(stderr, "soak: engines did not drain in time\n");
    }
    /* the churn goes on alone until its cycles are done (each client is
     * bounded), or its last clients end; then e0 is read */
    while ((g_cfg.churn != 0) ? !churn_done() : !churn_idle()) {
        churn_step(g_cfg.churn == 0, 10);
    }
    churn_bad = churn_report(stdout, "soak", &soak_churn_slack);
    kids_command(n, P_FINISH);
    if (kids_pump(n, now_ms() + REPORT_TIMEOUT_S * 1000ull, is_stopped,
                  0) != 0) {
        fprintf(stderr, "soak: not every engine stopped\n");
    }
    kids_command(n, P_FINALIZE);
    if (kids_pump(n, now_ms() + REPORT_TIMEOUT_S * 1000ull, is_reported,
                  0) != 0) {
        fprintf(stderr, "soak: not every engine reported\n");
    }
    return churn_bad;
}

int main(int argc, char **argv)
{
    const char *tls = getenv("UCX_TLS");
    unsigned n;
    int rc, churn_bad = 0;

    rc = soak_options(argc, argv);
    if (rc >= 0) {
        return rc;
    }
    n = g_cfg.engines;

    printf("soak: %u engines, %u s (warm-up %u s), seed %" PRIu64 ", %u "
           "slots of %zu bytes per sender, UCX_TLS=%s, libhixl-ucx %s\n", n,
           g_cfg.seconds, g_cfg.warmup, g_cfg.seed, g_cfg.slots,
           (size_t)SLOT_SIZE, tls ? tls : "(unset: UCX's default)",
           hixl_version());
    fflush(NULL);
    signal(SIGPIPE, SIG_IGN);

    if (kids_spawn(n) != 0) {
        return 2;
    }
    if (soak_start(n) != 0) {
        /* the engines that came up are ended by the report */
    } else if (soak_churn_start(n) != 0) {
        churn_bad = 1;
    } else {
        churn_bad = soak_run(n);
    }
    return soak_report(n, churn_bad);
}
