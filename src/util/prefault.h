/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting memory: page tables filled (writable) for a range without
 * touching its bytes, so that the first transfer into freshly allocated or
 * freshly mapped memory does not pay a page fault per page on its critical
 * path (on these machines a first write into fresh memory runs at about a
 * tenth of the speed of the second).
 */
#ifndef HIXL_UTIL_PREFAULT_H_
#define HIXL_UTIL_PREFAULT_H_

#include <stddef.h>

/* Fill the page tables of [addr, +len) for writing (MADV_POPULATE_WRITE,
 * Linux 5.14+; the whole pages the range touches).  Returns 0, or the errno
 * that stopped it (EINVAL: a kernel without it; ENOMEM/EFAULT: part of the
 * range is not mapped); the bytes are never changed either way. */
int hixl_prefault(const void *addr, size_t len);

#endif
