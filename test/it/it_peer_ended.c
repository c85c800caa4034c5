/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: hixl.NotifyPeerEnded.  A decode that sets it learns, as a
 * notify named HIXL_NOTIFY_PEER_ENDED from the engine concerned, that a
 * prefill disconnected and that a peer's process died (SIGKILL), over tcp
 * and shared memory, with how and why in the message; an engine without
 * the option queues nothing of the kind.
 */
#include "config.h"
#include "harness.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#define WAIT_MS 30000

/* The next notify of engine, which must be one HIXL_NOTIFY_PEER_ENDED from
 * remote whose message starts with how. */
static void it_expect_ended(hixl_engine_t *engine, const char *remote,
                            const char *how)
{
    hixl_notify_t *n = NULL;
    size_t count = 0;

    hx_ok(hixl_wait_notifies(engine, WAIT_MS, &n, &count));
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(n[0].name, HIXL_NOTIFY_PEER_ENDED);
    ck_assert_str_eq(n[0].remote, remote);
    ck_assert_msg(strncmp((const char*)n[0].msg, how, strlen(how)) == 0,
                  "message \"%s\" does not start with \"%s\"",
                  (const char*)n[0].msg, how);
    hixl_release_notifies(n, count);
}

START_TEST(test_peer_ended)
{
    hixl_engine_t *decode, *prefill;
    hixl_notify_t *n = NULL;
    hx_target_cfg_t cfg;
    hx_target_t t;
    char dname[HIXL_ENGINE_NAME_MAX + 1], pname[HIXL_ENGINE_NAME_MAX + 1];
    size_t count = 0;
    int wstatus;

    hx_use_tls(_i);
    /* the target is forked before this process starts UCX */
    hx_target_cfg_init(&cfg, 4096);
    hx_target_start(&t, &cfg);
    decode  = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                        "hixl.NotifyPeerEnded", "1", NULL);
    prefill = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    snprintf(dname, sizeof(dname), "%s", hixl_engine_name(decode));
    snprintf(pname, sizeof(pname), "%s", hixl_engine_name(prefill));

    /* a prefill that disconnects */
    hx_connect(prefill, dname);
    hx_ok(hixl_disconnect(prefill, dname, WAIT_MS));
    it_expect_ended(decode, pname, "disconnected: ");
    /* the prefill, without the option, heard of nothing */
    hx_ok(hixl_get_notifies(prefill, &n, &count));
    ck_assert_uint_eq(count, 0);
    hixl_release_notifies(n, count);

    /* a peer whose process is killed */
    hx_connect(decode, t.name);
    ck_assert_int_eq(kill(t.pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(t.pid, &wstatus, 0), t.pid);
    it_expect_ended(decode, t.name, "gone: ");

    hx_ok(hixl_finalize(prefill));
    hx_ok(hixl_finalize(decode));
}
END_TEST

static Suite *it_peer_ended_suite(void)
{
    Suite *s  = suite_create("it_peer_ended");
    TCase *tc = hx_tcase("peer_ended");

    tcase_add_loop_test(tc, test_peer_ended, 0, 2);   /* tcp, sm */
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_peer_ended_suite());
}
