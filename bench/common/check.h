/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The small benchmarks' way out of a failed call: the program, what it
 * was doing, hixl's status and the library's message, then exit 1.
 */
#ifndef HIXL_BENCH_COMMON_CHECK_H_
#define HIXL_BENCH_COMMON_CHECK_H_

#include <hixl/hixl.h>

#include <stdio.h>
#include <stdlib.h>

static inline void bc_die(const char *prog, const char *what,
                          hixl_status_t st)
{
    fprintf(stderr, "%s: %s: %s: %s\n", prog, what, hixl_strerror(st),
            hixl_last_error());
    exit(1);
}

/* _call returns a hixl_status_t; anything but success ends the program. */
#define BC_OK(_prog, _call, _what) \
    do { \
        hixl_status_t _st = (_call); \
        if (_st != HIXL_SUCCESS) { \
            bc_die((_prog), (_what), _st); \
        } \
    } while (0)

#endif
