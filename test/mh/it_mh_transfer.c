/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-host: a transfer between two network-namespace hosts over
 * UCX_TLS=tcp, every byte verified where it landed, and what connecting
 * and disconnecting leave behind on both sides (issue 10, fault 6).
 *
 * The prefill runs in host 0, the decode (listening) in host 1; the only
 * path between them is the veth pair, so every byte crosses it.
 */
#include "mh_suite.h"
#include "mh_faults.h"

#include <stdlib.h>
#include <string.h>

#define REGION   (64 * HX_MIB)
#define PIECE    (4 * HX_MIB)
#define SEED_OLD 101
#define SEED_NEW 102

static const char *const tcp_env[] = {"UCX_TLS=tcp", MH_PEER_TIMEOUT_ENV,
                                      NULL};

typedef struct pair {
    hx_net_t  *net;
    mh_proc_t  decode, prefill;
    uint64_t   daddr;    /* decode's region */
} pair_t;

static void pair_start(pair_t *p)
{
    const char *r;

    p->net = mh_net(2);
    mh_start_in(&p->decode, p->net, MH_HOST_DECODE, MH_HOST_PREFILL, 1,
                "decode", tcp_env, NULL);
    mh_start_in(&p->prefill, p->net, MH_HOST_PREFILL, MH_HOST_DECODE, 0,
                "prefill", tcp_env, NULL);
    r = mh_ok(&p->decode, "alloc %llu", (unsigned long long)REGION);
    p->daddr = mh_u64(r, "addr");
    mh_ok(&p->decode, "fill 0 0 0 %d", SEED_OLD);
    mh_ok(&p->prefill, "mmap %llu", (unsigned long long)REGION);
    mh_ok(&p->prefill, "fill 0 0 0 %d", SEED_NEW);
}

/* A call that must return SUCCESS. */
static void expect_success(mh_proc_t *p, const char *what, const char *r)
{
    char line[1024];

    ck_assert_msg(mh_status(r) == HIXL_SUCCESS, "%s: %s: %s", p->label,
                  what, mh_line(r, line, sizeof(line)));
}

static void verify(mh_proc_t *p, uint64_t off, uint64_t len, int seed)
{
    char line[1024];
    const char *r = mh_ok(p, "verify 0 %llu %llu %d %d",
                          (unsigned long long)off, (unsigned long long)len,
                          seed, seed == SEED_NEW ? SEED_OLD : SEED_NEW);

    ck_assert_msg(mh_u64(r, "match") == 1, "%s region [%llu, +%llu) is "
                  "not pattern %d: %s", p->label, (unsigned long long)off,
                  (unsigned long long)len, seed,
                  mh_line(r, line, sizeof(line)));
}

START_TEST(test_transfer_tcp)
{
    char line[1024];
    const char *r;
    pair_t p;
    int job;

    pair_start(&p);
    r = mh_ok(&p.prefill, "connect %s 10000", p.decode.name);
    expect_success(&p.prefill, "connect", r);

    /* one sync write of a piece, then the whole region as a stream of
     * async writes with several in flight, then a layer signal */
    r = mh_ok(&p.prefill, "write %s 0 0 %llu %llu 30000", p.decode.name,
              (unsigned long long)p.daddr, (unsigned long long)PIECE);
    expect_success(&p.prefill, "sync write", r);
    verify(&p.decode, 0, PIECE, SEED_NEW);
    verify(&p.decode, PIECE, REGION - PIECE, SEED_OLD);

    job = mh_bg(&p.decode, "wait_layer %s 3 1 0 30000", p.prefill.name);
    r = mh_ok(&p.prefill, "stream %s 0 %llu %llu %llu %llu 8 30000",
              p.decode.name, (unsigned long long)p.daddr,
              (unsigned long long)REGION, (unsigned long long)PIECE,
              (unsigned long long)(REGION / PIECE));
    ck_assert_msg(mh_u64(r, "completed") == REGION / PIECE, "stream: %s",
                  mh_line(r, line, sizeof(line)));
    r = mh_ok(&p.prefill, "flush %s 3 1 0", p.decode.name);
    expect_success(&p.prefill, "flush_layer", r);
    r = mh_job(&p.decode, job, 30000);
    ck_assert_msg(r != NULL, "decode's wait for layer (3, 1, 0) still "
                  "waits 30 s after the flush");
    expect_success(&p.decode, "wait_layer", r);
    verify(&p.decode, 0, REGION, SEED_NEW);

    /* and back: a READ of the decode's region into a fresh one */
    mh_ok(&p.prefill, "alloc %llu", (unsigned long long)REGION);
    r = mh_ok(&p.prefill, "read %s 1 0 %llu %llu 30000", p.decode.name,
              (unsigned long long)p.daddr, (unsigned long long)REGION);
    expect_success(&p.prefill, "sync read", r);
    r = mh_ok(&p.prefill, "verify 1 0 0 %d", SEED_NEW);
    ck_assert_msg(mh_u64(r, "match") == 1, "read back: %s",
                  mh_line(r, line, sizeof(line)));

    r = mh_ok(&p.prefill, "disconnect %s 10000", p.decode.name);
    expect_success(&p.prefill, "disconnect", r);
    expect_success(&p.prefill, "finalize", mh_ok(&p.prefill, "finalize"));
    expect_success(&p.decode, "finalize", mh_ok(&p.decode, "finalize"));
    mh_quit(&p.prefill);
    mh_quit(&p.decode);
}
END_TEST

/* TCP sockets `who` holds whose remote end is address `addr`, as lines;
 * returns how many. */
static int socks_to(mh_proc_t *who, const char *addr, char *out,
                    size_t outlen)
{
    const char *r = mh_ok(who, "socks"), *l;
    size_t used = 0;
    char pat[64];
    int n = 0;

    out[0] = '\0';
    snprintf(pat, sizeof(pat), "-> %s:", addr);
    for (l = strchr(r, '\n'); (l != NULL) && (l[1] != '\0');
         l = strchr(l + 1, '\n')) {
        size_t len = strcspn(l + 1, "\n");

        if ((strstr(l + 1, pat) == NULL) ||
            (strstr(l + 1, pat) > l + 1 + len)) {
            continue;
        }
        ++n;
        if (used + len + 2 < outlen) {
            used += (size_t)snprintf(out + used, outlen - used, "  %.*s\n",
                                     (int)len, l + 1);
        }
    }
    return n;
}

/* UCX closes a connection's sockets from its progress, once both sides
 * closed their endpoints: hixl_disconnect gives it a few milliseconds,
 * which a loaded machine can stretch.  Sockets still held SETTLE_MS after
 * the call returned are left behind. */
#define SETTLE_MS 2000

static int socks_left(mh_proc_t *who, const char *addr, char *out,
                      size_t outlen, double *waited_ms)
{
    double start = mh_now();
    int n;

    while (((n = socks_to(who, addr, out, outlen)) != 0) &&
           (mh_now() - start < SETTLE_MS)) {
        mh_sleep_ms(20);
    }
    *waited_ms = mh_now() - start;
    return n;
}

static int fds_of(mh_proc_t *p)
{
    return (int)mh_u64(mh_ok(p, "fds"), "fds");
}

/*
 * Once hixl_disconnect returned on both sides (and UCX had SETTLE_MS to
 * close its sockets), neither holds a socket to the other; after three
 * connect/write/disconnect cycles, each process has the descriptors it had
 * before them.
 *
 * The decode disconnects too: a connection the other side ended is still
 * the application's to disconnect (SUCCESS once), and the test wants a
 * point where both sides are done with it.
 *
 * The descriptor baseline is taken after a first cycle, not before the
 * first connect: UCX opens some descriptors on first use that live as
 * long as the engine (measured: one per side on UCX 1.13.1), which is not
 * a leak.  That first cycle's sockets are checked like the others.
 */
START_TEST(test_disconnect_leaves_no_socket)
{
    const char *paddr, *daddr;
    char list[4096], ss[8192], line[1024];
    int fdi_p, fdi_d, fd0_p = 0, fd0_d = 0, fd_p, fd_d, cycle, n;
    double waited;
    mh_faults_t f;
    const char *r;
    pair_t p;

    mh_faults_init(&f, "disconnect leaves no socket");
    pair_start(&p);
    paddr = hx_net_addr(p.net, MH_HOST_PREFILL, MH_HOST_DECODE);
    daddr = hx_net_addr(p.net, MH_HOST_DECODE, MH_HOST_PREFILL);
    fdi_p = fds_of(&p.prefill);
    fdi_d = fds_of(&p.decode);

    for (cycle = 0; cycle < 4; ++cycle) {
        if (cycle == 1) {
            fd0_p = fds_of(&p.prefill);
            fd0_d = fds_of(&p.decode);
        }
        r = mh_ok(&p.prefill, "connect %s 10000", p.decode.name);
        expect_success(&p.prefill, "connect", r);
        r = mh_ok(&p.prefill, "write %s 0 0 %llu %llu 30000", p.decode.name,
                  (unsigned long long)p.daddr, (unsigned long long)PIECE);
        expect_success(&p.prefill, "write", r);
        verify(&p.decode, 0, PIECE, SEED_NEW);
        mh_ok(&p.decode, "fill 0 0 %llu %d", (unsigned long long)PIECE,
              SEED_OLD);

        r = mh_ok(&p.prefill, "disconnect %s 10000", p.decode.name);
        expect_success(&p.prefill, "disconnect", r);
        n = socks_left(&p.prefill, daddr, list, sizeof(list), &waited);
        if (n != 0) {
            hx_net_ss(p.net, MH_HOST_PREFILL, ss, sizeof(ss));
            mh_fault(&f, "cycle %d: %d ms after hixl_disconnect returned, "
                     "the prefill still holds %d socket(s) to the decode:\n"
                     "%sss in its host:\n%s", cycle + 1, SETTLE_MS, n, list,
                     ss);
        } else if (waited >= 20) {   /* it had to wait */
            mh_note(&f, "cycle %d: the prefill's sockets to the decode went "
                    "%.0f ms after hixl_disconnect returned", cycle + 1,
                    waited);
        }

        r = mh_ok(&p.decode, "disconnect %s 10000", p.prefill.name);
        if (mh_status(r) != HIXL_SUCCESS) {
            mh_fault(&f, "cycle %d: the decode's hixl_disconnect of a "
                     "prefill that disconnected: %s (a connection the other "
                     "side ended is owed one SUCCESS)", cycle + 1,
                     mh_line(r, line, sizeof(line)));
        }
        n = socks_left(&p.decode, paddr, list, sizeof(list), &waited);
        if (n != 0) {
            hx_net_ss(p.net, MH_HOST_DECODE, ss, sizeof(ss));
            mh_fault(&f, "cycle %d: %d ms after hixl_disconnect returned on "
                     "both sides, the decode still holds %d socket(s) to the "
                     "prefill:\n%sss in its host:\n%s", cycle + 1, SETTLE_MS,
                     n, list, ss);
        }
    }
    fd_p = fds_of(&p.prefill);
    fd_d = fds_of(&p.decode);
    if ((fd_p != fd0_p) || (fd_d != fd0_d)) {
        mh_fault(&f, "open descriptors before and after 3 connect/disconnect "
                 "cycles: prefill %d -> %d, decode %d -> %d (before the "
                 "first connect ever: %d and %d)", fd0_p, fd_p, fd0_d, fd_d,
                 fdi_p, fdi_d);
    }
    expect_success(&p.prefill, "finalize", mh_ok(&p.prefill, "finalize"));
    expect_success(&p.decode, "finalize", mh_ok(&p.decode, "finalize"));
    mh_quit(&p.prefill);
    mh_quit(&p.decode);
    mh_faults_check(&f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("mh_transfer");
    TCase *tc;

    tc = mh_tcase("transfer_tcp", 60);
    tcase_add_test(tc, test_transfer_tcp);
    suite_add_tcase(s, tc);
    tc = mh_tcase("disconnect_leaves_no_socket", 60);
    tcase_add_test(tc, test_disconnect_leaves_no_socket);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mh_main(argc, argv, make_suite);
}
