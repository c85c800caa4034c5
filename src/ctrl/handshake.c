/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What both sides of a handshake use (ctrl.h): the peer record with its
 * handshake state, random tokens and their comparison, authentication
 * messages.  Below connect.c and accept.c, which ctrl.c sets up.
 */
#include "config.h"
#include "ctrl/ctrl.h"
#include "ctrl/dispatch.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

hixl_peer_t *hixl_ctrl_peer_create(hixl_engine_t *engine, int fd,
                                   int outgoing, uint64_t deadline_ns)
{
    struct hixl_handshake *handshake = calloc(1, sizeof(*handshake));
    hixl_peer_t *peer;

    if (handshake == NULL) {
        hixl_error(HIXL_RESOURCE_EXHAUSTED, "out of memory for a peer");
        return NULL;
    }
    peer = hixl_peer_create(engine, fd, outgoing);
    if (peer == NULL) {
        free(handshake);
        return NULL;
    }
    handshake->deadline_ns = deadline_ns;
    peer->handshake        = handshake;
    return peer;
}

hixl_status_t hixl_ctrl_random(uint8_t *buf, size_t len)
{
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        n = getrandom(buf + done, len - done, 0);
        if (n > 0) {
            done += (size_t)n;
        } else if ((n < 0) && (errno != EINTR)) {
            return hixl_error(HIXL_FAILED, "getrandom: %s", strerror(errno));
        }
    }
    return HIXL_SUCCESS;
}

int hixl_ctrl_token_eq(const uint8_t *a, const uint8_t *b, size_t len)
{
    uint8_t diff = 0;
    size_t i;

    for (i = 0; i < len; ++i) {
        diff |= (uint8_t)(a[i] ^ b[i]);
    }
    return diff == 0;
}

void hixl_ctrl_send_auth(hixl_peer_t *peer, uint16_t type, const void *data,
                         size_t len, int state)
{
    hixl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.type             = type;
    msg.u.auth.data      = hixl_msg_bytes(data, len);
    peer->handshake->auth_state = state;
    hixl_ctrl_send(peer, &msg);
}
