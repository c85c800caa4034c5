/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every multi-host suite (it_mh_*) shares: its main(), test cases
 * with the right teardowns, the namespace hosts of a test, and the bounds
 * the tests assert.
 *
 * Bounds.  Failure detection is configured through the environment twin
 * of the engine option hixl.PeerTimeoutMs, HIXL_PEER_TIMEOUT_MS, given to
 * every peer: an engine that does not know the option ignores the
 * variable, so the tests run against such a library and show what it
 * does.  A peer must be found dead or unreachable within
 * MH_DETECT_BOUND_MS of the fault (the option plus a stated slack for
 * scheduling on a loaded 2-core machine and for the heartbeat period the
 * library picks).  Nothing else about time is asserted.
 */
#ifndef HX_MH_SUITE_H_
#define HX_MH_SUITE_H_

#include "harness.h"
#include "netns.h"
#include "mh_proc.h"

#define MH_PEER_TIMEOUT_MS   2000
#define MH_DETECT_SLACK_MS   3000
#define MH_DETECT_BOUND_MS   (MH_PEER_TIMEOUT_MS + MH_DETECT_SLACK_MS)
#define MH_PEER_TIMEOUT_ENV  "HIXL_PEER_TIMEOUT_MS=2000"

/* The hosts every two-host test uses: a prefill and a decode. */
#define MH_HOST_PREFILL 0
#define MH_HOST_DECODE  1

/* main() of an it_mh_* program: runs the peer when argv says --peer;
 * otherwise prints "SKIP: <reason>" and returns 77 without root or
 * `ip netns`, else sweeps stale namespaces, runs the suite from make(),
 * sweeps again. */
int mh_main(int argc, char **argv, Suite *(*make)(void));

/* A test case: Check timeout timeout_s (a failing run against a library
 * that misses its bounds takes longer than a passing one), a checked
 * teardown that kills the peers and removes the hosts of the test, and an
 * unchecked one (in Check's parent) that sweeps what a test that died
 * with _exit() left. */
TCase *mh_tcase(const char *name, int timeout_s);

/* Create the test's hosts (asserts); removed by the teardown. */
hx_net_t *mh_net(int nhosts);

/* Start a peer in host h of net, named "<addr>:0" (listening, decode) or
 * "<addr>" (client-only, prefill), where addr is h's address on its link
 * to host `peer`.  env: "UCX_TLS=..." (or "UCX_TLS" to unset) and more,
 * NULL-terminated; HIXL_PEER_TIMEOUT_MS is the caller's to add. */
void mh_start_in(mh_proc_t *p, const hx_net_t *net, int h, int peer,
                 int listen, const char *label, const char *const *env,
                 const char *const *opts);

#endif
