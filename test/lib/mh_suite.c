/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared main, test cases and hosts of the multi-host suites.  See
 * mh_suite.h.
 */
#include "mh_suite.h"
#include "mh_peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hx_net_t mh_the_net;

static void mh_checked_teardown(void)
{
    mh_kill_all();
    hx_net_destroy(&mh_the_net);
}

/* In Check's parent, after the test case: what a failed test (ended with
 * _exit, which skips the checked teardown) left behind. */
static void mh_unchecked_teardown(void)
{
    hx_net_sweep(0);
    mh_sweep_files();
}

TCase *mh_tcase(const char *name, int timeout_s)
{
    TCase *tc = tcase_create(name);

    tcase_set_timeout(tc, timeout_s);
    tcase_add_checked_fixture(tc, NULL, mh_checked_teardown);
    tcase_add_unchecked_fixture(tc, NULL, mh_unchecked_teardown);
    return tc;
}

hx_net_t *mh_net(int nhosts)
{
    char err[2048];

    ck_assert_msg(hx_net_create(&mh_the_net, nhosts, err, sizeof(err)) == 0,
                  "cannot build %d namespace hosts: %s", nhosts, err);
    return &mh_the_net;
}

void mh_start_in(mh_proc_t *p, const hx_net_t *net, int h, int peer,
                 int listen, const char *label, const char *const *env,
                 const char *const *opts)
{
    char engine[64];
    mh_spawn_t sp;
    int i;

    memset(&sp, 0, sizeof(sp));
    snprintf(engine, sizeof(engine), "%s%s", hx_net_addr(net, h, peer),
             listen ? ":0" : "");
    sp.net    = net;
    sp.host   = h;
    sp.label  = label;
    sp.engine = engine;
    for (i = 0; (env != NULL) && (env[i] != NULL) && (i < 15); ++i) {
        sp.env[i] = env[i];
    }
    i = 0;
    if (listen) {
        sp.opts[i++] = "hixl.ListenEphemeral=1";
    }
    for (; (opts != NULL) && (*opts != NULL) && (i < 15); ++opts) {
        sp.opts[i++] = *opts;
    }
    mh_start(p, &sp);
}

int mh_main(int argc, char **argv, Suite *(*make)(void))
{
    char why[512];
    int rc;

    if ((argc >= 2) && !strcmp(argv[1], "--peer")) {
        return mh_peer_main(argc - 1, argv + 1);
    }
    if (hx_net_available(why, sizeof(why)) != 0) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    hx_net_sweep(0);
    mh_sweep_files();
    hx_net_sweep_on_signals();
    rc = hx_main(make());
    hx_net_sweep(0);
    mh_sweep_files();
    return rc;
}
