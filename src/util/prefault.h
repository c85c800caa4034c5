/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pre-faulting memory: page tables filled (writable) for a range without
 * touching its bytes, so that the first transfer into freshly allocated or
 * freshly mapped memory does not pay a page fault per page on its critical
 * path (a first write into fresh memory can run at a tenth of the speed
 * of the second).
 */
#ifndef HIXL_UTIL_PREFAULT_H_
#define HIXL_UTIL_PREFAULT_H_

#include <stddef.h>

/* Fill the page tables of [addr, +len) for writing (MADV_POPULATE_WRITE,
 * Linux 5.14+; the whole pages the range touches).  Returns 0, or the errno
 * that stopped it (EINVAL: a kernel without it; ENOMEM/EFAULT: part of the
 * range is not mapped); the bytes are never changed either way. */
int hixl_prefault(const void *addr, size_t len);

/* Write every page of [addr, +len) once without changing a byte (an atomic
 * add of 0 to one byte per page), so that the memory is really backed.
 * Why: where guest memory is backed lazily by the hypervisor (cloud VMs),
 * filled page tables are not enough; only a write makes a page fast.  The
 * add is atomic, so bytes others write meanwhile are never lost; the range
 * must stay mapped.
 *
 * Not after hixl_prefault: there, memory populated first stays slow after
 * every page was written, so a range to be touched is touched alone. */
void hixl_touch_pages(void *addr, size_t len);

#endif
