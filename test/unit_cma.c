/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: same-host kernel copies (src/core/cma.c) between this process and
 * a child it forks, and what UCX_TLS allows (src/core/ucx_tls.c).
 *
 * The child holds a buffer and a random instance id, as a listener does;
 * the parent proves the child's identity the way a connector does, copies
 * into and out of the child's buffer, and the child checks every byte it
 * got (and sends back what it holds) over a pipe.
 */
#include "config.h"
#include "harness.h"
#include "core/cma.h"
#include "core/ucx_tls.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (3 * HX_MIB + 4093)   /* not a multiple of anything */

typedef struct child {
    pid_t    pid;
    int      to[2], from[2];
    uint64_t buf;        /* in the child */
    uint64_t ident;      /* where its instance is */
    uint64_t instance;
} child_t;

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

/* The child: announce (buf, ident, instance), then on each command byte
 * 'v' verify the buffer against seed 7 and answer the count of bad bytes;
 * 'f' fill it with seed 9; 'q' leave. */
static void child_main(int in, int out)
{
    static uint64_t instance;
    unsigned char *buf = malloc(LEN);
    uint64_t hello[3], bad;
    size_t i;
    char cmd;

    instance = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
    memset(buf, 0, LEN);
    hello[0] = (uint64_t)(uintptr_t)buf;
    hello[1] = (uint64_t)(uintptr_t)&instance;
    hello[2] = instance;
    xfer(out, hello, sizeof(hello), 1);
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

static void child_start(child_t *c)
{
    uint64_t hello[3];

    ck_assert(pipe(c->to) == 0 && pipe(c->from) == 0);
    c->pid = fork();
    ck_assert(c->pid >= 0);
    if (c->pid == 0) {
        close(c->to[1]);
        close(c->from[0]);
        child_main(c->to[0], c->from[1]);
    }
    close(c->to[0]);
    close(c->from[1]);
    xfer(c->from[0], hello, sizeof(hello), 0);
    c->buf      = hello[0];
    c->ident    = hello[1];
    c->instance = hello[2];
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
}

START_TEST(test_probe)
{
    child_t c;

    child_start(&c);
    ck_assert_int_eq(hixl_cma_probe(c.pid, c.ident, c.instance), 0);
    /* the right process must hold the right value at that address */
    ck_assert_int_eq(hixl_cma_probe(c.pid, c.ident, c.instance + 1), ESTALE);
    ck_assert_int_eq(hixl_cma_probe(getpid(), c.ident, c.instance), ESTALE);
    ck_assert_int_eq(hixl_cma_probe(c.pid, 0, c.instance), EINVAL);
    ck_assert_int_eq(hixl_cma_probe(0, c.ident, c.instance), EINVAL);
    child_stop(&c);
    /* a process that is gone */
    ck_assert_int_eq(hixl_cma_probe(c.pid, c.ident, c.instance), ESRCH);
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
    Suite *s = suite_create("unit_cma");
    TCase *tc = hx_tcase("cma");

    tcase_add_test(tc, test_probe);
    tcase_add_test(tc, test_copy_both_ways);
    tcase_add_test(tc, test_copy_unmapped);
    tcase_add_test(tc, test_tls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(unit_cma_suite());
}
