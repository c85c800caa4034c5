/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the user's UCX_TLS allows: the library takes no path of its own
 * that the user's transport list leaves out (its same-host copies,
 * core/peer/cma.h), and sets no UCX option for a transport nobody uses (UCX
 * warns about those on stdout).
 */
#ifndef HIXL_CORE_UCX_TLS_H_
#define HIXL_CORE_UCX_TLS_H_

#include <stddef.h>

/* Whether UCX_TLS leaves in any of the transports named (UCX's names or
 * their aliases, e.g. "sm", "posix"). */
int hixl_ucx_tls_allows(const char *const *names, size_t count);

#endif
