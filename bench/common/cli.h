/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bad command line, said the same way by every benchmark: what is wrong,
 * where the help is, and the exit status scripts test for.
 */
#ifndef HIXL_BENCH_COMMON_CLI_H_
#define HIXL_BENCH_COMMON_CLI_H_

/* "prog: <message>\n<hint>\n" on stderr, then exit(status). */
void bc_cli_fail(const char *prog, const char *hint, int status,
                 const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

#endif
