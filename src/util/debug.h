/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal assertions, compiled in by ./configure --enable-debug
 * (HIXL_DEBUG; CI's sanitized build has it) and to nothing otherwise, as
 * UCX's ucs_assert.  They state invariants the code relies on (a lock
 * held, a request in the state a transition expects, a counter that cannot
 * go below zero), never conditions that input from outside can make
 * false: those are errors returned to the caller, in every build.
 */
#ifndef HIXL_UTIL_DEBUG_H_
#define HIXL_UTIL_DEBUG_H_

#include <errno.h>
#include <pthread.h>

/* Logs the failed condition with its place and aborts. */
void hixl_assert_fail(const char *cond, const char *file, int line,
                      const char *func) __attribute__((noreturn));

#ifdef HIXL_DEBUG
#define hixl_assert(_cond) \
    do { \
        if (!(_cond)) { \
            hixl_assert_fail(#_cond, __FILE__, __LINE__, __func__); \
        } \
    } while (0)
/* Held by some thread (POSIX cannot say which without an owner field):
 * catches the common slip, a call made without the lock at all. */
#define hixl_assert_locked(_mutex) \
    hixl_assert(pthread_mutex_trylock(_mutex) == EBUSY)
#else
/* sizeof: the condition still compiles (and its names count as used),
 * but nothing is evaluated */
#define hixl_assert(_cond)         ((void)sizeof(!(_cond)))
#define hixl_assert_locked(_mutex) ((void)sizeof(_mutex))
#endif

#endif
