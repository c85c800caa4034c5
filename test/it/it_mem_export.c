/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Exported memory descriptions across two processes, as a disaggregated
 * decode uses them: decode registers three regions, exports their
 * description and sends it by notify; prefill imports it, writes by
 * (region, offset) and is refused a range one byte past a region; decode
 * then checks every byte of its regions (written ranges hold the pattern,
 * the rest is untouched).  Looped over UCX_TLS.
 */
#include "harness.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NREG  3
#define SEED  0x3e5d

static const size_t reg_len[NREG] = {4096, 3 * 4096, 4096};
/* what prefill writes into each region: offset and length */
static const size_t wr_off[NREG] = {0, 5000, 1000};
static const size_t wr_len[NREG] = {4096, 7000, 96};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Wait (bounded) for a notify called `name`; its message and sender are
 * copied out. */
static int wait_notify(hixl_engine_t *e, const char *name, void *msg,
                       size_t *msg_len, char *remote)
{
    hixl_notify_t *n;
    size_t count, i;
    int tries, found = 0;

    for (tries = 0; (tries < 20000) && !found; ++tries) {
        if (hixl_get_notifies(e, &n, &count) != HIXL_SUCCESS) {
            return -1;
        }
        for (i = 0; i < count; ++i) {
            if (!found && !strcmp(n[i].name, name)) {
                if (msg != NULL) {
                    *msg_len = n[i].msg_len < *msg_len ? n[i].msg_len
                                                       : *msg_len;
                    memcpy(msg, n[i].msg, *msg_len);
                }
                if (remote != NULL) {
                    snprintf(remote, HIXL_ENGINE_NAME_MAX + 1, "%s",
                             n[i].remote);
                }
                found = 1;
            }
        }
        if (count) {
            hixl_release_notifies(n, count);
        }
        if (!found) {
            sleep_ms(1);
        }
    }
    return found ? 0 : -1;
}

static int decode_verify(uint8_t *const *reg)
{
    size_t r, i;
    uint8_t want;

    for (r = 0; r < NREG; ++r) {
        for (i = 0; i < reg_len[r]; ++i) {
            int inside = (i >= wr_off[r]) && (i < wr_off[r] + wr_len[r]);

            want = inside ? hx_pat(SEED + r, i - wr_off[r]) : 0;
            if (reg[r][i] != want) {
                fprintf(stderr, "decode: region %zu byte %zu is 0x%02x, "
                        "expected 0x%02x\n", r, i, reg[r][i], want);
                return 1;
            }
        }
    }
    return 0;
}

/* The decode process: returns its exit status. */
static int decode_main(int name_fd)
{
    char prefill[HIXL_ENGINE_NAME_MAX + 1];
    hixl_mem_handle_t h[NREG];
    uint8_t *reg[NREG];
    hixl_notify_desc_t nd;
    hixl_engine_t *e;
    uint8_t desc[1024];
    size_t len = sizeof(desc), r;
    const char *name;
    /* ":0" listens on a port the kernel picks only when asked to */
    hixl_option_t opt = {"hixl.ListenEphemeral", "1"};
    void *p;

    if (hixl_initialize("127.0.0.1:0", &opt, 1, &e) != HIXL_SUCCESS) {
        return 2;
    }
    for (r = 0; r < NREG; ++r) {
        if (hixl_alloc_mem(e, reg_len[r], HIXL_MEM_HOST, &p, &h[r]) !=
            HIXL_SUCCESS) {
            return 3;
        }
        reg[r] = p;
        memset(reg[r], 0, reg_len[r]);
    }
    name = hixl_engine_name(e);
    if (write(name_fd, name, strlen(name) + 1) < 0) {
        return 4;
    }
    if ((wait_notify(e, "hello", NULL, NULL, prefill) != 0) ||
        (hixl_export_mem(e, h, NREG, desc, &len) != HIXL_SUCCESS)) {
        return 5;
    }
    nd.name = "memdesc";
    nd.msg = desc;
    nd.msg_len = len;
    if ((hixl_send_notify(e, prefill, &nd, HX_OP_TIMEOUT_MS) !=
         HIXL_SUCCESS) || (wait_notify(e, "done", NULL, NULL, NULL) != 0)) {
        return 6;
    }
    r = (size_t)decode_verify(reg);
    hixl_finalize(e);
    return (int)r;
}

static pid_t start_decode(char *name)
{
    int fds[2];
    pid_t pid;
    ssize_t n;

    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        alarm(60);
        _exit(decode_main(fds[1]));
    }
    close(fds[1]);
    n = read(fds[0], name, HIXL_ENGINE_NAME_MAX + 1);
    close(fds[0]);
    ck_assert_msg(n > 0, "decode did not start");
    return pid;
}

START_TEST(test_export_notify_write)
{
    char decode[HIXL_ENGINE_NAME_MAX + 1];
    hixl_transfer_op_desc_t d[NREG];
    hixl_notify_desc_t nd = {"hello", "", 0};
    hixl_remote_mem_t *rm;
    hixl_engine_t *e;
    uint8_t desc[1024], *src;
    size_t len = sizeof(desc), r;
    uint64_t raddr;
    pid_t pid;
    int wst;

    hx_use_tls(_i);
    pid = start_decode(decode);
    e = hx_engine("127.0.0.1", NULL);
    src = hx_alloc_pages(NREG * 8192);
    hx_register(e, src, NREG * 8192);
    hx_connect(e, decode);
    hx_ok(hixl_send_notify(e, decode, &nd, HX_OP_TIMEOUT_MS));
    ck_assert_int_eq(wait_notify(e, "memdesc", desc, &len, NULL), 0);
    hx_ok(hixl_import_mem(e, desc, len, &rm));
    ck_assert_str_eq(hixl_remote_mem_engine(rm), decode);
    ck_assert_uint_eq(hixl_remote_mem_count(rm), NREG);
    for (r = 0; r < NREG; ++r) {
        hx_pat_fill(src + r * 8192, wr_len[r], SEED + r, 0);
        hx_ok(hixl_remote_mem_addr(rm, r, wr_off[r], wr_len[r], &raddr));
        d[r].local_addr  = (uintptr_t)(src + r * 8192);
        d[r].remote_addr = (uintptr_t)raddr;
        d[r].len         = wr_len[r];
    }
    /* one byte more would run into whatever decode keeps beside region 2 */
    hx_expect(hixl_remote_mem_addr(rm, 2, wr_off[2], reg_len[2] - wr_off[2] +
                                   1, &raddr), HIXL_PARAM_INVALID,
              "exceeds its size 4096");
    hx_ok(hixl_transfer_sync(e, decode, HIXL_WRITE, d, NREG,
                             HX_OP_TIMEOUT_MS));
    nd.name = "done";
    hx_ok(hixl_send_notify(e, decode, &nd, HX_OP_TIMEOUT_MS));
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert_msg(WIFEXITED(wst) && (WEXITSTATUS(wst) == 0),
                  "decode ended with status 0x%x [%s]", wst, hx_tls_label());
    hixl_remote_mem_free(rm);
    hx_ok(hixl_finalize(e));
    hx_free_pages(src, NREG * 8192);
}
END_TEST

static Suite *it_mem_export_suite(void)
{
    Suite *s = suite_create("it_mem_export");
    TCase *tc = tcase_create("pd");

    tcase_set_timeout(tc, HX_TEST_TIMEOUT_S);
    tcase_add_loop_test(tc, test_export_notify_write, 0, hx_tls_count);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_mem_export_suite());
}
