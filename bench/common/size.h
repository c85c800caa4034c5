/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sizes and counts as people type them on a command line, and sizes as
 * the reports print them.
 *
 * A size is a positive whole number of bytes with an optional unit K, M or
 * G (powers of 1024), in either case, optionally followed by B or iB:
 * 64K, 64k, 64KB and 64KiB are all 65536; 64 and 64B are 64 bytes.
 */
#ifndef HIXL_BENCH_COMMON_SIZE_H_
#define HIXL_BENCH_COMMON_SIZE_H_

#include <stddef.h>
#include <stdint.h>

/* What a usage message can say a size looks like. */
#define BC_SIZE_FORMS "a positive number of bytes with an optional K, M " \
                      "or G (x1024; 64K, 64KB and 64KiB alike)"

/* NULL when s is a size (then *v holds it), otherwise why it is not one
 * ("not a number", "unknown unit", ...); *v is untouched then. */
const char *bc_size_parse(const char *s, size_t *v);

/* A decimal number, digits only (no sign, no blanks): 0, or -1. */
int bc_parse_u64(const char *s, uint64_t *v);

/* "4 MiB", "64 KiB", "1000 B": the largest unit that divides n. */
void bc_size_str(size_t n, char *buf, size_t len);

#endif
