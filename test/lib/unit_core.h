/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bare engine for unit tests of core/: the fields core reads, set up
 * without UCX (no context, no worker), and peers around socket pairs.
 */
#ifndef HIXL_TEST_UNIT_CORE_H_
#define HIXL_TEST_UNIT_CORE_H_

#include "core/engine.h"

/* calloc'ed engine with its lock, cond, request pool (size) and epoll set;
 * free with ut_engine_free (which also frees the peer hooks and progress
 * plug-ins registered on it). */
hixl_engine_t *ut_engine_new(uint32_t pool_size);
void ut_engine_free(hixl_engine_t *engine);

/* A peer on one end of a socket pair (the other end is closed). */
hixl_peer_t *ut_peer_new(hixl_engine_t *engine, int outgoing,
                         const char *name);

#endif
