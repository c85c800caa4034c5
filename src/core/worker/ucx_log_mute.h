/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Keeping UCX quiet for one call of one thread, without touching UCX's
 * process-wide log level (another engine, or another UCX user in the same
 * process, relies on it).
 */
#ifndef HIXL_CORE_UCX_LOG_MUTE_H_
#define HIXL_CORE_UCX_LOG_MUTE_H_

/* Between begin and end, UCX log messages raised by the calling thread are
 * dropped; other threads are untouched.  Nests. */
void hixl_ucx_log_mute_begin(void);
void hixl_ucx_log_mute_end(void);

#endif
