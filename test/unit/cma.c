/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: same-host kernel copies (src/core/peer/cma.c) between this process and
 * a child it forks, and what UCX_TLS allows (src/core/worker/ucx_tls.c).
 *
 * The child holds a buffer and one end of a TCP connection, as a listener
 * does; the parent proves the child's identity the way a connector does
 * (the kernel says which process holds the other end), copies into and out
 * of the child's buffer, and the child checks every byte it got (and sends
 * back what it holds) over a pipe.  One case puts the child on another
 * "host" (network namespace, test/netns.h; root only), as a container on
 * the same kernel is: its end of the connection is not in our namespace.
 */
#include "config.h"
#include "harness.h"
#include "core/peer/cma.h"
#include "core/worker/ucx_tls.h"
#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (3 * HX_MIB + 4093)   /* not a multiple of anything */

typedef struct child {
    pid_t    pid;
    int      to[2], from[2];
    uint64_t buf;        /* in the child */
    int      conn;       /* our end of the connection the child holds */
} child_t;

/* The child connects over IPv4 to a dual-stack IPv6 listener: our end is
 * an IPv6 socket with IPv4-mapped addresses, the child's an IPv4 one. */
#define V4_MAPPED AF_UNSPEC

/* A listening socket on the loopback address of family (AF_INET,
 * AF_INET6, or V4_MAPPED) and the address the child connects to; -1 when
 * the family is not available. */
static int loopback_listen(int family, struct sockaddr_storage *ss,
                           socklen_t *len_p)
{
    struct sockaddr_in *in4   = (struct sockaddr_in*)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6*)ss;
    int fd = socket((family == V4_MAPPED) ? AF_INET6 : family,
                    SOCK_STREAM | SOCK_CLOEXEC, 0);
    int off = 0;

    memset(ss, 0, sizeof(*ss));
    if (family == V4_MAPPED) {
        in6->sin6_family = AF_INET6;
        in6->sin6_addr   = in6addr_any;
        *len_p           = sizeof(*in6);
        if ((fd < 0) || (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
                                    sizeof(off)) != 0) ||
            (bind(fd, (struct sockaddr*)ss, *len_p) != 0) ||
            (listen(fd, 4) != 0) ||
            (getsockname(fd, (struct sockaddr*)ss, len_p) != 0)) {
            if (fd >= 0) {
                close(fd);
            }
            return -1;
        }
        off = ntohs(in6->sin6_port);   /* the child's target: IPv4 */
        memset(ss, 0, sizeof(*ss));
        in4->sin_family      = AF_INET;
        in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        in4->sin_port        = htons((uint16_t)off);
        *len_p               = sizeof(*in4);
        return fd;
    }
    if (family == AF_INET) {
        in4->sin_family      = AF_INET;
        in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len_p               = sizeof(*in4);
    } else {
        in6->sin6_family = AF_INET6;
        in6->sin6_addr   = in6addr_loopback;
        *len_p           = sizeof(*in6);
    }
    if ((fd < 0) || (bind(fd, (struct sockaddr*)ss, *len_p) != 0) ||
        (listen(fd, 4) != 0) ||
        (getsockname(fd, (struct sockaddr*)ss, len_p) != 0)) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

static void xfer(int fd, void *p, size_t len, int out)
{
    ssize_t n;
    size_t done = 0;

    while (done < len) {
        n = out ? write(fd, (char*)p + done, len - done) :
                  read(fd, (char*)p + done, len - done);
        if (n <= 0) {
            _exit(3);
        }
        done += (size_t)n;
    }
}

static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ seed);
}

/* The child: connect to the parent (it holds that socket until it
 * leaves), announce buf, then on each command byte 'v' verify the buffer
 * against seed 7 and answer the count of bad bytes; 'f' fill it with seed
 * 9; 'q' leave. */
static void child_main(int in, int out, const struct sockaddr_storage *ss,
                       socklen_t sslen)
{
    unsigned char *buf = malloc(LEN);
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    uint64_t hello, bad;
    size_t i;
    char cmd;

    if ((fd < 0) || (connect(fd, (const struct sockaddr*)ss, sslen) != 0)) {
        _exit(4);
    }
    memset(buf, 0, LEN);
    hello = (uint64_t)(uintptr_t)buf;
    xfer(out, &hello, sizeof(hello), 1);
    for (;;) {
        xfer(in, &cmd, 1, 0);
        if (cmd == 'v') {
            for (bad = 0, i = 0; i < LEN; ++i) {
                bad += (buf[i] != pattern(i, 7));
            }
            xfer(out, &bad, sizeof(bad), 1);
        } else if (cmd == 'f') {
            for (i = 0; i < LEN; ++i) {
                buf[i] = pattern(i, 9);
            }
            xfer(out, &cmd, 1, 1);
        } else {
            _exit(0);
        }
    }
}

/* Fork the child, which enters the network namespace netns_fd first
 * (unless it is -1) and connects to ss, where lfd listens. */
static void child_fork(child_t *c, int lfd, const struct sockaddr_storage *ss,
                       socklen_t sslen, int netns_fd)
{
    uint64_t hello;

    ck_assert(pipe(c->to) == 0 && pipe(c->from) == 0);
    c->pid = fork();
    ck_assert(c->pid >= 0);
    if (c->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* not outliving a failed case */
        close(c->to[1]);
        close(c->from[0]);
        close(lfd);
        if ((netns_fd >= 0) && (setns(netns_fd, CLONE_NEWNET) != 0)) {
            _exit(5);
        }
        child_main(c->to[0], c->from[1], ss, sslen);
    }
    close(c->to[0]);
    close(c->from[1]);
    c->conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    ck_assert_int_ge(c->conn, 0);
    close(lfd);
    xfer(c->from[0], &hello, sizeof(hello), 0);
    c->buf = hello;
}

/* Fork the child; 0, or -1 when the loopback of family is missing. */
static int child_start_on(child_t *c, int family)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    int lfd = loopback_listen(family, &ss, &sslen);

    if (lfd < 0) {
        return -1;
    }
    child_fork(c, lfd, &ss, sslen, -1);
    return 0;
}

static void child_start(child_t *c)
{
    ck_assert_int_eq(child_start_on(c, AF_INET), 0);
}

static void child_stop(child_t *c)
{
    int st;

    xfer(c->to[1], "q", 1, 1);
    ck_assert(waitpid(c->pid, &st, 0) == c->pid);
    ck_assert_msg(WIFEXITED(st) && (WEXITSTATUS(st) == 0), "child status "
                  "0x%x", st);
    close(c->to[1]);
    close(c->from[0]);
    close(c->conn);
}

static void expect_probe(child_t *c, int family)
{
    int err;

    if (child_start_on(c, family) != 0) {
        return;   /* no loopback of that family here */
    }
    ck_assert_int_eq(hixl_cma_probe(c->pid, c->conn), 0);
    /* only the process that holds the other end passes: not this one,
     * which holds our end, nor any other */
    ck_assert_int_eq(hixl_cma_probe(getpid(), c->conn), ESTALE);
    err = hixl_cma_probe(getppid(), c->conn);
    ck_assert_msg((err == ESTALE) || (err == EACCES) || (err == EPERM),
                  "a process without the socket: %d", err);
    ck_assert_int_eq(hixl_cma_probe(c->pid, -1), EINVAL);
    ck_assert_int_eq(hixl_cma_probe(0, c->conn), EINVAL);
    child_stop(c);
}

START_TEST(test_probe)
{
    child_t c;
    int fd;

    expect_probe(&c, AF_INET);
    expect_probe(&c, AF_INET6);
    expect_probe(&c, V4_MAPPED);
    /* a process that is gone (its socket with it) */
    child_start(&c);
    fd = dup(c.conn);
    child_stop(&c);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(hixl_cma_probe(c.pid, fd), ESRCH);
    close(fd);
}
END_TEST

/* The network namespace of `host`, opened; -1 on failure. */
static int netns_open(const hx_net_t *net, int host)
{
    char path[128];

    snprintf(path, sizeof(path), "/var/run/netns/%s", net->ns[host]);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* A socket listening on host's address of its link to peer, made inside
 * host's namespace (a socket stays in the namespace it was made in; this
 * process goes back to its own); -1 on failure. */
static int netns_listen(const hx_net_t *net, int host, int peer,
                        struct sockaddr_storage *ss, socklen_t *len_p)
{
    struct sockaddr_in *in4 = (struct sockaddr_in*)ss;
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int there = netns_open(net, host);
    int fd = -1;

    memset(ss, 0, sizeof(*ss));
    in4->sin_family = AF_INET;
    *len_p          = sizeof(*in4);
    if ((self >= 0) && (there >= 0) &&
        (inet_pton(AF_INET, hx_net_addr(net, host, peer),
                   &in4->sin_addr) == 1) &&
        (setns(there, CLONE_NEWNET) == 0)) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if ((fd >= 0) &&
            ((bind(fd, (struct sockaddr*)ss, *len_p) != 0) ||
             (listen(fd, 4) != 0) ||
             (getsockname(fd, (struct sockaddr*)ss, len_p) != 0))) {
            close(fd);
            fd = -1;
        }
        if (setns(self, CLONE_NEWNET) != 0) {
            abort();   /* in the wrong namespace: nothing after is sound */
        }
    }
    if (self >= 0) {
        close(self);
    }
    if (there >= 0) {
        close(there);
    }
    return fd;
}

/* A peer in another network namespace of this kernel (a container, a
 * pod): the kernel cannot look its end of the connection up from ours,
 * so the proof reads the peer's own table (/proc/PID/net/tcp) -- and
 * still passes only for the process that holds that end.  Here neither
 * end is in this process's namespace: the child is on host 1, our end of
 * the connection was accepted on host 0. */
START_TEST(test_probe_other_netns)
{
    unsigned char *mine = malloc(LEN);
    int probe_child = -1, probe_self = -1, probe_parent = -1;
    hixl_status_t copied = HIXL_FAILED;
    struct sockaddr_storage ss;
    char why[256], err[256];
    uint64_t bad = 1;
    socklen_t sslen;
    hx_net_t net;
    int lfd, nsfd, err_no;
    child_t c;
    size_t i;

    ck_assert_ptr_nonnull(mine);
    if (hx_net_available(why, sizeof(why)) != 0) {
        printf("SKIP: the peer in another network namespace: %s\n", why);
        free(mine);
        return;
    }
    hx_net_sweep(0);   /* what a case of an earlier run left */
    ck_assert_msg(hx_net_create(&net, 2, err, sizeof(err)) == 0, "%s", err);
    lfd  = netns_listen(&net, 0, 1, &ss, &sslen);
    nsfd = netns_open(&net, 1);
    if ((lfd < 0) || (nsfd < 0)) {
        err_no = errno;
        hx_net_destroy(&net);
        ck_abort_msg("no listener on %s: %s", hx_net_addr(&net, 0, 1),
                     strerror(err_no));
    }
    /* the results are checked once the net is gone again; only the
     * child's start and stop check on the way (the sweep of a later run
     * removes what such a failure leaves) */
    child_fork(&c, lfd, &ss, sslen, nsfd);
    close(nsfd);
    probe_child  = hixl_cma_probe(c.pid, c.conn);
    probe_self   = hixl_cma_probe(getpid(), c.conn);
    probe_parent = hixl_cma_probe(getppid(), c.conn);
    if (probe_child == 0) {
        for (i = 0; i < LEN; ++i) {
            mine[i] = pattern(i, 7);
        }
        copied = hixl_cma_copy(c.pid, 1, mine, c.buf, LEN);
        xfer(c.to[1], "v", 1, 1);
        xfer(c.from[0], &bad, sizeof(bad), 0);
    }
    child_stop(&c);
    hx_net_destroy(&net);
    free(mine);

    ck_assert_msg(probe_child == 0, "the child on another host of this "
                  "kernel, which holds the other end: %s",
                  strerror(probe_child));
    ck_assert_int_eq(probe_self, ESTALE);
    ck_assert_msg((probe_parent == ESTALE) || (probe_parent == EACCES) ||
                  (probe_parent == EPERM), "a process without the socket: "
                  "%d", probe_parent);
    ck_assert_int_eq(copied, HIXL_SUCCESS);
    ck_assert_msg(bad == 0, "%llu of %u bytes wrong in the child",
                  (unsigned long long)bad, (unsigned)LEN);
}
END_TEST

START_TEST(test_copy_both_ways)
{
    unsigned char *mine = malloc(LEN);
    uint64_t bad;
    child_t c;
    size_t i;
    char ok;

    ck_assert_ptr_nonnull(mine);
    for (i = 0; i < LEN; ++i) {
        mine[i] = pattern(i, 7);
    }
    child_start(&c);
    hx_ok(hixl_cma_copy(c.pid, 1, mine, c.buf, LEN));
    xfer(c.to[1], "v", 1, 1);
    xfer(c.from[0], &bad, sizeof(bad), 0);
    ck_assert_msg(bad == 0, "%llu of %u bytes wrong in the child after the "
                  "write", (unsigned long long)bad, (unsigned)LEN);

    xfer(c.to[1], "f", 1, 1);
    xfer(c.from[0], &ok, 1, 0);
    memset(mine, 0, LEN);
    hx_ok(hixl_cma_copy(c.pid, 0, mine, c.buf, LEN));
    for (bad = 0, i = 0; i < LEN; ++i) {
        bad += (mine[i] != pattern(i, 9));
    }
    ck_assert_msg(bad == 0, "%llu bytes wrong after the read",
                  (unsigned long long)bad);
    child_stop(&c);
    free(mine);
}
END_TEST

/* A range the child does not map: FAILED, saying where it stopped. */
START_TEST(test_copy_unmapped)
{
    unsigned char mine[64] = {0};
    hixl_status_t st;
    child_t c;

    child_start(&c);
    st = hixl_cma_copy(c.pid, 1, mine, 4096, sizeof(mine));
    ck_assert_int_eq(st, HIXL_FAILED);
    ck_assert_msg(strstr(hixl_last_error(), "process_vm_writev") != NULL &&
                  strstr(hixl_last_error(), "stopped after 0") != NULL,
                  "%s", hixl_last_error());
    child_stop(&c);
}
END_TEST

/* A process that is gone: NOT_CONNECTED (the peer died), not FAILED. */
START_TEST(test_copy_dead_process)
{
    unsigned char mine[64] = {0};
    hixl_status_t st;
    pid_t pid;

    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
    st = hixl_cma_copy(pid, 1, mine, 4096, sizeof(mine));
    ck_assert_msg(st == HIXL_NOT_CONNECTED, "write: %s: %s",
                  hixl_strerror(st), hixl_last_error());
    ck_assert_msg(strstr(hixl_last_error(), "is gone") != NULL, "%s",
                  hixl_last_error());
    st = hixl_cma_copy(pid, 0, mine, 4096, sizeof(mine));
    ck_assert_msg(st == HIXL_NOT_CONNECTED, "read: %s: %s",
                  hixl_strerror(st), hixl_last_error());
}
END_TEST

static void expect_tls(const char *tls, int cma, int sm)
{
    static const char *const cma_names[] = {"cma", "sm"};
    static const char *const sm_names[]  = {"sm", "posix", "sysv", "mm"};

    if (tls == NULL) {
        unsetenv("UCX_TLS");
    } else {
        setenv("UCX_TLS", tls, 1);
    }
    ck_assert_msg(hixl_ucx_tls_allows(cma_names, 2) == cma, "UCX_TLS=%s: "
                  "cma %d expected", tls ? tls : "(unset)", cma);
    ck_assert_msg(hixl_ucx_tls_allows(sm_names, 4) == sm, "UCX_TLS=%s: "
                  "sm %d expected", tls ? tls : "(unset)", sm);
}

START_TEST(test_tls)
{
    expect_tls(NULL, 1, 1);
    expect_tls("", 1, 1);
    expect_tls("all", 1, 1);
    expect_tls("tcp", 0, 0);
    expect_tls("tcp,cma", 1, 0);
    expect_tls("sm", 1, 1);
    expect_tls("posix,self", 0, 1);
    expect_tls("^cma", 0, 1);
    expect_tls("^tcp", 1, 1);
    expect_tls("^sm", 0, 0);
    unsetenv("UCX_TLS");
}
END_TEST

static Suite *unit_cma_suite(void)
{
    Suite *s = suite_create("cma");
    TCase *tc = hx_tcase("cma");

    tcase_add_test(tc, test_probe);
    tcase_add_test(tc, test_probe_other_netns);
    tcase_add_test(tc, test_copy_both_ways);
    tcase_add_test(tc, test_copy_unmapped);
    tcase_add_test(tc, test_copy_dead_process);
    tcase_add_test(tc, test_tls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_cma_suite());
}
