/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A flush waiter for unit tests (core/peer/ep_flush.h) that counts its
 * callbacks and keeps the last status.
 */
#ifndef HIXL_TEST_EP_FLUSH_COUNTED_H_
#define HIXL_TEST_EP_FLUSH_COUNTED_H_

#include "core/peer/ep_flush.h"

#include <stdatomic.h>
#include <string.h>
#include <ucs/type/status.h>

typedef struct counted {
    hixl_ep_flush_waiter_t w;
    atomic_int        calls;
    ucs_status_t      status;   /* UCS_INPROGRESS until called back */
} counted_t;

static inline void counted_cb(hixl_ep_flush_waiter_t *w, ucs_status_t status)
{
    counted_t *c = (counted_t*)w;

    c->status = status;
    atomic_fetch_add(&c->calls, 1);
}

/* n waiters, not called back yet */
static inline void counted_init(counted_t *c, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].w.cb   = counted_cb;
        c[i].status = UCS_INPROGRESS;
    }
}

#endif
