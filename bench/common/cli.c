/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bad command line (cli.h).
 */
#include "config.h"
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void bc_cli_fail(const char *prog, const char *hint, int status,
                 const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s\n", hint);
    exit(status);
}
