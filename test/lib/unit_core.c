/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bare engine for unit tests of core/ (see unit_core.h).
 */
#include "config.h"
#include "unit_core.h"
#include "harness.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

hixl_engine_t *ut_engine_new(uint32_t pool_size)
{
    hixl_engine_t *engine = calloc(1, sizeof(*engine));

    ck_assert_ptr_nonnull(engine);
    engine->serial = 5;
    pthread_mutex_init(&engine->lock, NULL);
    hixl_cond_init_monotonic(&engine->cond);
    pthread_mutex_init(&engine->progress.poll_lock, NULL);
    engine->progress.epfd       = epoll_create1(EPOLL_CLOEXEC);
    engine->progress.worker_efd = -1;
    ck_assert_int_ge(engine->progress.epfd, 0);
    hx_ok(hixl_req_pool_init(&engine->reqs, pool_size, engine->serial));
    /* the test is the engine's only thread, and the calls it makes expect
     * the engine lock held (the debug build asserts it): hold it for the
     * engine's life */
    pthread_mutex_lock(&engine->lock);
    return engine;
}

void ut_engine_free(hixl_engine_t *engine)
{
    hixl_req_pool_cleanup(&engine->reqs);
    pthread_mutex_unlock(&engine->lock);
    hixl_progress_cleanup(engine);   /* the epoll set, the plug-ins */
    hixl_peer_hooks_cleanup(engine);
    pthread_mutex_destroy(&engine->lock);
    pthread_cond_destroy(&engine->cond);
    free(engine);
}

hixl_peer_t *ut_peer_new(hixl_engine_t *engine, int outgoing,
                         const char *name)
{
    hixl_peer_t *peer;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    peer = hixl_peer_create(engine, sv[0], outgoing);
    ck_assert_ptr_nonnull(peer);
    snprintf(peer->name, sizeof(peer->name), "%s", name);
    snprintf(peer->alias, sizeof(peer->alias), "%s", name);
    return peer;
}
