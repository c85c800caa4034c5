/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Network-namespace "hosts" for multi-host tests (root only).
 *
 * A net is up to HX_NET_MAX_HOSTS network namespaces, every pair joined by
 * its own veth pair with a private /30: two hosts are one veth pair.  The
 * tests make faults on a link (link down on one or both ends, a blackhole
 * qdisc on both ends), heal them, run programs inside a host and list the
 * TCP sockets a host holds.
 *
 * Names carry the pid of the process that created them, so that parallel
 * suites (make -j2 check) never meet and a sweep can tell a stale object
 * from a live one:
 *   namespace  hxt<pid>h<host>            (/var/run/netns/...)
 *   veth ends  hx<pid>l<link>a / ...b     (at most 15 characters)
 *   addresses  10.x.y.z/30 derived from pid and link (hx_net_addr)
 * Every address lives only on a veth pair created here, inside its
 * namespaces; nothing is configured in the namespace the tests start in.
 *
 * Cleanup, also on failure: hx_net_destroy() (tests and the checked
 * teardown), an atexit handler in the creating process, and
 * hx_net_sweep(), which removes every object of this naming whose creating
 * pid is dead (suites call it at start, after each test case from the
 * Check parent, at the end and from their SIGINT/SIGTERM/SIGHUP handlers).
 * A Check failure in fork mode leaves the test process with _exit(), which
 * runs neither atexit handlers nor the checked teardown: the sweep from the
 * parent is what removes those namespaces.  Processes started in a host die
 * with the test process (PR_SET_PDEATHSIG), so a namespace whose name was
 * removed is freed by the kernel once they are gone.
 *
 * Everything here returns 0 or -1 with a message in err (no Check calls),
 * and every wait is bounded.
 */
#ifndef HX_NETNS_H_
#define HX_NETNS_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HX_NET_MAX_HOSTS 4
#define HX_NET_MAX_LINKS (HX_NET_MAX_HOSTS * (HX_NET_MAX_HOSTS - 1) / 2)
/* Longest an `ip` / `tc` command may take before it is killed. */
#define HX_NET_CMD_TIMEOUT_MS 10000
/* Longest wait for a veth end to be running (carrier, operstate UP) after
 * it was set up. */
#define HX_NET_CARRIER_TIMEOUT_MS 5000

typedef struct hx_net_link {
    int  host[2];        /* the two hosts it joins */
    char dev[2][16];     /* veth end in host[0], in host[1] */
    char addr[2][16];    /* dotted IPv4 of each end */
} hx_net_link_t;

typedef struct hx_net {
    pid_t         creator;
    int           nhosts;
    int           nlinks;
    char          ns[HX_NET_MAX_HOSTS][32];
    hx_net_link_t link[HX_NET_MAX_LINKS];
} hx_net_t;

/* 0 when this process can build nets (root, `ip netns` works); else -1
 * with the reason for the SKIP message. */
int hx_net_available(char *why, size_t whylen);

/* Create nhosts namespaces (2..HX_NET_MAX_HOSTS) with lo up, joined
 * pairwise by veth pairs that are up and running. */
int hx_net_create(hx_net_t *net, int nhosts, char *err, size_t errlen);

/* Remove the namespaces (idempotent; veths go with them). */
void hx_net_destroy(hx_net_t *net);

/* The link between hosts a and b (either order), or NULL. */
const hx_net_link_t *hx_net_link(const hx_net_t *net, int a, int b);

/* Address of host h on its link to host peer: the name engines use. */
const char *hx_net_addr(const hx_net_t *net, int h, int peer);

/* Faults.  `ends`: HX_END_A (host[0]'s end), HX_END_B, or both. */
enum { HX_END_A = 1, HX_END_B = 2, HX_END_BOTH = 3 };

/* ip link set DEV down on the given ends. */
int hx_net_link_down(hx_net_t *net, int a, int b, int ends, char *err,
                     size_t errlen);
/* ip link set DEV up on both ends, then wait until both run. */
int hx_net_link_up(hx_net_t *net, int a, int b, char *err, size_t errlen);
/* tc qdisc add dev DEV root blackhole on both ends: every packet sent on
 * the link is dropped, while both hosts still see it up. */
int hx_net_blackhole(hx_net_t *net, int a, int b, char *err, size_t errlen);
/* tc qdisc del dev DEV root on both ends. */
int hx_net_unblackhole(hx_net_t *net, int a, int b, char *err,
                       size_t errlen);

/* ---- running things in a host ------------------------------------------ */

/* In a child just forked: enter host h's namespace (setns(CLONE_NEWNET))
 * and, as `ip netns exec` does, give it a mount namespace whose /sys shows
 * the host's network devices (UCX lists them there).  Call before
 * anything else in the child. */
int hx_net_enter(const hx_net_t *net, int h);

/* Run argv (argv[0] found in PATH) inside host h (h < 0: in this
 * namespace), killing it after timeout_ms; its stdout and stderr go to out
 * (NUL-terminated, truncated to outlen).  Returns its exit status, or -1
 * when it could not run or was killed (err says why). */
int hx_net_run(const hx_net_t *net, int h, char *const argv[],
               int timeout_ms, char *out, size_t outlen, char *err,
               size_t errlen);

/* `ss -tano` inside host h into out, for failure messages and logs. */
void hx_net_ss(const hx_net_t *net, int h, char *out, size_t outlen);

/* ---- TCP sockets of a host ------------------------------------------------ */

typedef struct hx_tcp_sock {
    char     laddr[48];
    char     raddr[48];
    uint16_t lport, rport;
    int      state;       /* TCP_ESTABLISHED ... (netinet/tcp.h numbers) */
    uint32_t txq, rxq;    /* bytes queued to send / not yet read */
    uint64_t inode;       /* 0: no process holds it (TIME_WAIT, orphan) */
} hx_tcp_sock_t;

/* Every TCP socket of host h (/proc/net/tcp and tcp6 read from inside
 * it), at most max; returns the count or -1. */
int hx_net_tcp_socks(const hx_net_t *net, int h, hx_tcp_sock_t *socks,
                     int max, char *err, size_t errlen);

/* Parse the text of /proc/net/tcp (v6 = 0) or tcp6 (v6 = 1) into
 * socks[n..max); returns the new count. */
int hx_tcp_parse(char *text, int v6, hx_tcp_sock_t *socks, int n, int max);

/* "ESTABLISHED", "TIME_WAIT", ... */
const char *hx_tcp_state_name(int state);

/* One line describing s, for messages. */
void hx_tcp_sock_str(const hx_tcp_sock_t *s, char *buf, size_t len);

/* ---- cleanup ---------------------------------------------------------------- */

/* Remove every namespace of our naming whose creating pid no longer runs
 * (veth pairs are created inside the namespaces, never in this one, so
 * they go with them); kill_children: also kill the test processes (children
 * of this process) that own live ones, then remove those too (a signal
 * handler of the suite's main process).  Uses only system calls, so it
 * may run in a signal handler.  Returns how many namespaces it removed. */
int hx_net_sweep(int kill_children);

/* Install hx_net_sweep(1) for SIGINT, SIGTERM and SIGHUP (then the signal
 * is re-raised with its default action). */
void hx_net_sweep_on_signals(void);

#endif
