/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What UCX_TLS allows (ucx_tls.h).
 */
#include "config.h"
#include "core/worker/ucx_tls.h"

#include <stdlib.h>
#include <string.h>

static int hixl_ucx_tls_lists(const char *tls, const char *const *names,
                              size_t count)
{
    size_t i;

    for (i = 0; i < count; ++i) {
        if (strstr(tls, names[i]) != NULL) {
            return 1;
        }
    }
    return 0;
}

/* Unset or "all": every transport.  "^a,b": all but those.  Otherwise the
 * list itself (a name that contains another, "sm" in "posix,sysv" for
 * instance, is listed by its aliases in `names`). */
int hixl_ucx_tls_allows(const char *const *names, size_t count)
{
    const char *tls = getenv("UCX_TLS");

    if ((tls == NULL) || (*tls == '\0')) {
        return 1;
    }
    if (*tls == '^') {
        return !hixl_ucx_tls_lists(tls + 1, names, count);
    }
    return (strstr(tls, "all") != NULL) ||
           hixl_ucx_tls_lists(tls, names, count);
}
