/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Keeping UCX quiet for one call (see ucx_log_mute.h).
 *
 * Why: UCX logs an ERROR when an endpoint cannot be created in PEER error
 * mode because no transport with peer-failure handling reaches the peer
 * (UCX_TLS=sm on 1.13), although the library expects that and falls back;
 * and UCX writes its log to stdout by default, into the application's own
 * output.  Lowering ucs_global_opts' level around the call, as an earlier
 * version did, changed it for every thread of the process.  Instead a log
 * handler, pushed once per process, stops UCX's messages only on a thread
 * that asked for quiet, and lets every other message through untouched.
 * The library is linked with -z nodelete, so the handler never dangles.
 */
#include "config.h"
#include "core/worker/ucx_log_mute.h"

#include <pthread.h>
#include <ucs/debug/log_def.h>

static __thread int   hixl_ucx_log_mute_depth;
static pthread_once_t hixl_ucx_log_mute_once = PTHREAD_ONCE_INIT;

static ucs_log_func_rc_t hixl_ucx_log_mute_handler(
    const char *file, unsigned line, const char *function,
    ucs_log_level_t level, const ucs_log_component_config_t *comp_conf,
    const char *message, va_list ap)
{
    if ((hixl_ucx_log_mute_depth > 0) && (level > UCS_LOG_LEVEL_FATAL)) {
        return UCS_LOG_FUNC_RC_STOP;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

static void hixl_ucx_log_mute_install(void)
{
    ucs_log_push_handler(hixl_ucx_log_mute_handler);
}

void hixl_ucx_log_mute_begin(void)
{
    pthread_once(&hixl_ucx_log_mute_once, hixl_ucx_log_mute_install);
    ++hixl_ucx_log_mute_depth;
}

void hixl_ucx_log_mute_end(void)
{
    --hixl_ucx_log_mute_depth;
}
