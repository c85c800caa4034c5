/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Argument checks every public call that names a remote engine shares, so
 * the same mistake gets the same message whichever call it is made on.
 */
#ifndef HIXL_ARGS_H_
#define HIXL_ARGS_H_

#include "util/log.h"

#include <hixl/hixl.h>

/* engine not NULL, remote a non-empty string */
static inline hixl_status_t hixl_check_remote(const hixl_engine_t *engine,
                                              const char *remote)
{
    if (engine == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "engine is NULL");
    }
    if ((remote == NULL) || (*remote == '\0')) {
        return hixl_error(HIXL_PARAM_INVALID, "remote engine name is %s",
                          remote ? "empty" : "NULL");
    }
    return HIXL_SUCCESS;
}

static inline hixl_status_t hixl_check_timeout(int32_t timeout_ms)
{
    if (timeout_ms <= 0) {
        return hixl_error(HIXL_PARAM_INVALID, "timeout_ms %d is not positive",
                          (int)timeout_ms);
    }
    return HIXL_SUCCESS;
}

/* Both: the prologue of the calls that name a peer and wait for it. */
static inline hixl_status_t hixl_check_remote_timeout(
        const hixl_engine_t *engine, const char *remote, int32_t timeout_ms)
{
    hixl_status_t status = hixl_check_remote(engine, remote);

    return (status == HIXL_SUCCESS) ? hixl_check_timeout(timeout_ms) : status;
}

#endif
