/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit: the connections that ended, remembered by name
 * (src/ctrl/peer_ended.c), without an engine: the list takes what it
 * needs of a peer (names, direction, close reason, remote instance).
 *
 * What the rest of the library relies on: the newest record of a name
 * answers (by the spelling used to connect or by the canonical one, in a
 * direction or either); a connection owed to the application is
 * acknowledged once, outgoing first; a new connection to the name makes
 * older records of that direction moot; a resume token comes back with
 * its remote instance; past HIXL_ENDED_MAX the oldest acknowledged record
 * goes first, and the oldest owed one only when nothing else is left.
 */
#include "config.h"
#include "harness.h"
#include "ctrl/peer_ended.h"

#include <stdio.h>
#include <string.h>

/* A peer as the list sees it at hixl_peer_close. */
static void fake_peer(hixl_peer_t *peer, const char *name, const char *alias,
                      int outgoing, const char *reason)
{
    memset(peer, 0, sizeof(*peer));
    snprintf(peer->name, sizeof(peer->name), "%s", name);
    snprintf(peer->alias, sizeof(peer->alias), "%s", alias);
    snprintf(peer->close_reason, sizeof(peer->close_reason), "%s", reason);
    hixl_peer_mark(peer, HIXL_PEER_F_OUTGOING, outgoing);
}

static void record(hixl_ended_list_t *list, const char *name, int outgoing,
                   int owed, const char *reason)
{
    hixl_peer_t peer;

    fake_peer(&peer, name, name, outgoing, reason);
    hixl_ended_record(list, &peer, owed, NULL);
}

START_TEST(test_reason_by_name_and_direction)
{
    hixl_ended_list_t list = {NULL, 0};
    hixl_peer_t peer;

    /* connected as "[0:0::1]:7", canonical "[::1]:7" */
    fake_peer(&peer, "[::1]:7", "[0:0::1]:7", 1, "the peer said BYE: done");
    hixl_ended_record(&list, &peer, 1, NULL);
    ck_assert_uint_eq(list.count, 1);
    ck_assert_str_eq(hixl_ended_reason(&list, "[::1]:7", 1),
                     "the peer said BYE: done");
    ck_assert_str_eq(hixl_ended_reason(&list, "[0:0::1]:7", -1),
                     "the peer said BYE: done");
    /* a third spelling of the same address finds it by its canonical form */
    ck_assert_str_eq(hixl_ended_reason(&list, "[0::1]:7", -1),
                     "the peer said BYE: done");
    /* the other direction, another port, another host: nothing */
    ck_assert_ptr_null(hixl_ended_reason(&list, "[::1]:7", 0));
    ck_assert_ptr_null(hixl_ended_reason(&list, "[::1]:8", -1));
    ck_assert_ptr_null(hixl_ended_reason(&list, "10.0.0.1:7", -1));

    /* the newest record of a name answers */
    record(&list, "10.0.0.1:7", 0, 0, "endpoint timeout");
    record(&list, "10.0.0.1:7", 1, 0, "older, outgoing");
    ck_assert_str_eq(hixl_ended_reason(&list, "10.0.0.1:7", -1),
                     "older, outgoing");
    ck_assert_str_eq(hixl_ended_reason(&list, "10.0.0.1:7", 0),
                     "endpoint timeout");
    ck_assert_uint_eq(list.count, 3);

    /* a peer that ended in its handshake has no name: not recorded */
    record(&list, "", 1, 1, "handshake failed");
    ck_assert_uint_eq(list.count, 3);

    hixl_ended_cleanup(&list);
    ck_assert_uint_eq(list.count, 0);
    ck_assert_ptr_null(list.head);
    ck_assert_ptr_null(hixl_ended_reason(&list, "[::1]:7", -1));
}
END_TEST

START_TEST(test_acknowledge_once)
{
    hixl_ended_list_t list = {NULL, 0};
    char reason[64];

    record(&list, "10.0.0.2:1", 1, 0, "not owed");
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.0.0.2:1", reason,
                                            sizeof(reason)), 0);

    record(&list, "10.0.0.3:1", 0, 1, "accepted one ended");
    record(&list, "10.0.0.3:1", 1, 1, "outgoing one ended");
    /* outgoing first, whatever the order of the records */
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.0.0.3:1", reason,
                                            sizeof(reason)), 1);
    ck_assert_str_eq(reason, "outgoing one ended");
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.0.0.3:1", reason,
                                            sizeof(reason)), 1);
    ck_assert_str_eq(reason, "accepted one ended");
    /* once each: the next disconnect is refused */
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.0.0.3:1", reason,
                                            sizeof(reason)), 0);
    /* but the records stay, for messages */
    ck_assert_str_eq(hixl_ended_reason(&list, "10.0.0.3:1", 1),
                     "outgoing one ended");
    ck_assert_uint_eq(list.count, 3);

    /* the reason is cut to the caller's buffer, terminated */
    record(&list, "10.0.0.4:1", 1, 1, "a reason longer than eight");
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.0.0.4:1", reason, 8),
                     1);
    ck_assert_str_eq(reason, "a reaso");
    hixl_ended_cleanup(&list);
}
END_TEST

START_TEST(test_forget_and_rerecord)
{
    hixl_ended_list_t list = {NULL, 0};
    char reason[64];

    record(&list, "10.0.0.5:1", 1, 1, "first");
    record(&list, "10.0.0.5:1", 0, 1, "accepted");
    /* a new outgoing connection: what ended before on that side is moot */
    hixl_ended_forget(&list, "10.0.0.5:1", 1);
    ck_assert_uint_eq(list.count, 1);
    ck_assert_ptr_null(hixl_ended_reason(&list, "10.0.0.5:1", 1));
    ck_assert_str_eq(hixl_ended_reason(&list, "10.0.0.5:1", 0), "accepted");

    /* recording replaces the older record of the same direction */
    record(&list, "10.0.0.5:1", 0, 0, "second accepted");
    ck_assert_uint_eq(list.count, 1);
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.0.0.5:1", reason,
                                            sizeof(reason)), 0);
    hixl_ended_cleanup(&list);
}
END_TEST

START_TEST(test_resume_token)
{
    hixl_ended_list_t list = {NULL, 0};
    uint8_t token[HIXL_RESUME_LEN], out[HIXL_RESUME_LEN];
    uint64_t instance = 0;
    hixl_peer_t peer;
    int i;

    for (i = 0; i < HIXL_RESUME_LEN; ++i) {
        token[i] = (uint8_t)(0xa0 + i);
    }
    fake_peer(&peer, "10.0.0.6:2", "10.0.0.6:2", 1, "cut off");
    peer.remote_instance = 0x1234567890abcdefull;
    hixl_ended_record(&list, &peer, 1, token);
    ck_assert_int_eq(hixl_ended_resume(&list, "10.0.0.6:2", 1, out,
                                       &instance), 1);
    ck_assert_mem_eq(out, token, sizeof(token));
    ck_assert_uint_eq(instance, 0x1234567890abcdefull);
    /* not for the other direction, not for a record without one */
    ck_assert_int_eq(hixl_ended_resume(&list, "10.0.0.6:2", 0, out,
                                       &instance), 0);
    record(&list, "10.0.0.7:2", 1, 1, "no token");
    ck_assert_int_eq(hixl_ended_resume(&list, "10.0.0.7:2", 1, out,
                                       &instance), 0);
    hixl_ended_cleanup(&list);
}
END_TEST

static void name_of(char *buf, size_t len, unsigned i)
{
    snprintf(buf, len, "10.1.%u.%u:9", i / 250, i % 250 + 1);
}

START_TEST(test_trim_acknowledged_first)
{
    hixl_ended_list_t list = {NULL, 0};
    char name[64], reason[64];
    unsigned i;

    /* the oldest is owed; every later one is not */
    record(&list, "10.2.0.1:9", 1, 1, "owed, oldest");
    for (i = 0; i < HIXL_ENDED_MAX; ++i) {
        name_of(name, sizeof(name), i);
        record(&list, name, 1, 0, "acknowledged");
        ck_assert_uint_le(list.count, HIXL_ENDED_MAX);
    }
    ck_assert_uint_eq(list.count, HIXL_ENDED_MAX);
    /* the bound took the oldest acknowledged one, not the owed one */
    ck_assert_int_eq(hixl_ended_acknowledge(&list, "10.2.0.1:9", reason,
                                            sizeof(reason)), 1);
    ck_assert_str_eq(reason, "owed, oldest");
    name_of(name, sizeof(name), 0);
    ck_assert_ptr_null(hixl_ended_reason(&list, name, -1));
    name_of(name, sizeof(name), 1);
    ck_assert_ptr_nonnull(hixl_ended_reason(&list, name, -1));
    name_of(name, sizeof(name), HIXL_ENDED_MAX - 1);
    ck_assert_ptr_nonnull(hixl_ended_reason(&list, name, -1));
    hixl_ended_cleanup(&list);
}
END_TEST

START_TEST(test_trim_all_owed)
{
    hixl_ended_list_t list = {NULL, 0};
    char name[64], reason[64];
    unsigned i;

    /* nothing acknowledged: the oldest of all goes */
    for (i = 0; i <= HIXL_ENDED_MAX; ++i) {
        name_of(name, sizeof(name), i);
        record(&list, name, 0, 1, "owed");
    }
    ck_assert_uint_eq(list.count, HIXL_ENDED_MAX);
    name_of(name, sizeof(name), 0);
    ck_assert_int_eq(hixl_ended_acknowledge(&list, name, reason,
                                            sizeof(reason)), 0);
    name_of(name, sizeof(name), 1);
    ck_assert_int_eq(hixl_ended_acknowledge(&list, name, reason,
                                            sizeof(reason)), 1);
    name_of(name, sizeof(name), HIXL_ENDED_MAX);
    ck_assert_int_eq(hixl_ended_acknowledge(&list, name, reason,
                                            sizeof(reason)), 1);
    hixl_ended_cleanup(&list);
}
END_TEST

static Suite *peer_ended_suite(void)
{
    Suite *s  = suite_create("peer_ended");
    TCase *tc = hx_tcase("ended");

    tcase_add_test(tc, test_reason_by_name_and_direction);
    tcase_add_test(tc, test_acknowledge_once);
    tcase_add_test(tc, test_forget_and_rerecord);
    tcase_add_test(tc, test_resume_token);
    tcase_add_test(tc, test_trim_acknowledged_first);
    tcase_add_test(tc, test_trim_all_owed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(peer_ended_suite());
}
