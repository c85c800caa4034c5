/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The failure end of internal assertions (debug.h).
 */
#include "config.h"
#include "util/debug.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>

void hixl_assert_fail(const char *cond, const char *file, int line,
                      const char *func)
{
    /* straight to stderr as well: the log level may hide errors */
    fprintf(stderr, "libhixl-ucx: %s:%d: %s: assertion \"%s\" failed\n",
            file, line, func, cond);
    hixl_log_error("%s:%d: %s: assertion \"%s\" failed", file, line, func,
                   cond);
    abort();
}
