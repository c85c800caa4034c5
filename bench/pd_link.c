/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: pd_msg messages carried as hixl notifies between the
 * prefill and the decode engine, so that the roles find each other through
 * the library alone.  hixl delivers notifies from one engine to another in
 * order; hixl_get_notifies hands over everything queued, so what arrives
 * before it is asked for waits in a small inbox.
 */
#include "pd_run.h"

#include <hixl/hixl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pd_link_send(pd_link_t *l, const uint8_t *buf, size_t len,
                 int timeout_ms)
{
    hixl_notify_desc_t n = {PD_MSG_NAME, buf, len};

    if (len == 0) {
        fprintf(stderr, "pd_pipeline: internal error: empty message\n");
        return -1;
    }
    if (hixl_send_notify(l->engine, l->peer, &n, timeout_ms) !=
        HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: notify to %s: %s\n", l->peer,
                hixl_last_error());
        return -1;
    }
    return 0;
}

/* Tell an engine that is not our peer that we are taken (best effort). */
static void pd_link_refuse_other(pd_link_t *l, const char *other)
{
    uint8_t buf[PD_MSG_HDR + 4 + PD_MSG_TEXT_MAX];
    char text[PD_MSG_TEXT_MAX];
    hixl_notify_desc_t n = {PD_MSG_NAME, buf, 0};

    snprintf(text, sizeof(text), "decode engine busy with prefill %s",
             l->peer);
    n.msg_len = pd_msg_refuse(buf, sizeof(buf), text);
    fprintf(stderr, "pd_pipeline: ignoring %s: %s\n", other, text);
    hixl_send_notify(l->engine, other, &n, 1000);
}

/* Move what hixl queued into the inbox, waiting up to wait_ms for the
 * first (hixl_wait_notifies sleeps: a spinning waiter would take a core
 * from the data path on a small box).  -1 on an inbox overflow. */
static int pd_link_fetch(pd_link_t *l, int *got, int wait_ms)
{
    hixl_notify_t *ns = NULL;
    size_t count = 0, i;
    hixl_status_t status;
    unsigned slot;
    int rc = 0;

    *got   = 0;
    status = hixl_wait_notifies(l->engine, wait_ms, &ns, &count);
    if (status == HIXL_TIMEOUT) {
        return 0;
    }
    if (status != HIXL_SUCCESS) {
        fprintf(stderr, "pd_pipeline: hixl_wait_notifies: %s\n",
                hixl_last_error());
        return -1;
    }
    for (i = 0; i < count; ++i) {
        if (strcmp(ns[i].name, PD_MSG_NAME) != 0) {
            fprintf(stderr, "pd_pipeline: ignoring notify \"%.64s\" from "
                    "%s\n", ns[i].name, ns[i].remote);
            continue;
        }
        if (l->peer[0] == '\0') {   /* the first to speak is the peer */
            snprintf(l->peer, sizeof(l->peer), "%s", ns[i].remote);
        } else if (strcmp(l->peer, ns[i].remote) != 0) {
            pd_link_refuse_other(l, ns[i].remote);
            continue;
        }
        if ((rc == 0) && (l->count == PD_LINK_INBOX)) {
            fprintf(stderr, "pd_pipeline: %s sent more than %u messages "
                    "nobody asked for\n", l->peer, PD_LINK_INBOX);
            rc = -1;
        }
        if (rc != 0) {
            continue;
        }
        slot = (l->head + l->count) % PD_LINK_INBOX;
        l->inbox[slot].buf = malloc(ns[i].msg_len ? ns[i].msg_len : 1);
        if (l->inbox[slot].buf == NULL) {
            rc = -1;
            continue;
        }
        memcpy(l->inbox[slot].buf, ns[i].msg, ns[i].msg_len);
        l->inbox[slot].len = ns[i].msg_len;
        l->count++;
        *got = 1;
    }
    if (count > 0) {
        hixl_release_notifies(ns, count);
    }
    return rc;
}

int pd_link_recv(pd_link_t *l, pd_msg_t *msg, int timeout_ms)
{
    uint64_t deadline = bc_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    uint64_t now;
    char err[256];
    int got, rc;

    while (l->count == 0) {
        now = bc_now_ns();
        if (now >= deadline) {
            fprintf(stderr, "pd_pipeline: no message from %s within %d ms\n",
                    l->peer[0] ? l->peer : "any prefill engine", timeout_ms);
            return -1;
        }
        if (pd_link_fetch(l, &got, (int)((deadline - now + 999999) /
                                         1000000)) != 0) {
            return -1;
        }
    }
    rc = pd_msg_decode(l->inbox[l->head].buf, l->inbox[l->head].len, msg,
                       err, sizeof(err));
    free(l->inbox[l->head].buf);
    l->head = (l->head + 1) % PD_LINK_INBOX;
    l->count--;
    if (rc != 0) {
        fprintf(stderr, "pd_pipeline: bad message from %s: %s\n", l->peer,
                err);
        return -1;
    }
    if (msg->type == PD_MSG_REFUSE) {
        fprintf(stderr, "pd_pipeline: %s refused: %s\n", l->peer,
                msg->u.refuse.text);
        return -1;
    }
    return 0;
}

int pd_link_expect(pd_link_t *l, pd_msg_t *msg, pd_msg_type_t type,
                   int timeout_ms)
{
    if (pd_link_recv(l, msg, timeout_ms) != 0) {
        return -1;
    }
    if (msg->type != type) {
        fprintf(stderr, "pd_pipeline: %s sent %s where %s was due\n", l->peer,
                pd_msg_type_name(msg->type), pd_msg_type_name(type));
        pd_msg_clear(msg);
        return -1;
    }
    return 0;
}

void pd_link_clear(pd_link_t *l)
{
    while (l->count > 0) {
        free(l->inbox[l->head].buf);
        l->head = (l->head + 1) % PD_LINK_INBOX;
        l->count--;
    }
}
