/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Diagnostics: leveled logging and the per-thread last-error message
 * behind hixl_last_error().
 *
 * Log lines go to stderr, or to the handler the application set with
 * hixl_set_log_handler().  The threshold is process-wide, like the
 * destination, but no engine makes it quieter for another: it is the most
 * verbose hixl.LogLevel of the engines alive (warn when there is none).
 */
#ifndef HIXL_UTIL_LOG_H_
#define HIXL_UTIL_LOG_H_

#include <hixl/hixl.h>

typedef enum hixl_log_level {
    HIXL_LOG_ERROR = 0,
    HIXL_LOG_WARN  = 1,
    HIXL_LOG_INFO  = 2,
    HIXL_LOG_DEBUG = 3,
    HIXL_LOG_TRACE = 4
} hixl_log_level_t;

/* The current threshold (read on every log call: a plain load). */
extern int hixl_log_level;

/* An engine with this hixl.LogLevel comes (hold) and goes (drop). */
void hixl_log_level_hold(int level);
void hixl_log_level_drop(int level);

void hixl_log_printf(hixl_log_level_t level, const char *file, int line,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define hixl_log(_lvl, ...) \
    do { \
        if ((int)(_lvl) <= hixl_log_level) { \
            hixl_log_printf((_lvl), __FILE__, __LINE__, __VA_ARGS__); \
        } \
    } while (0)

#define hixl_log_error(...) hixl_log(HIXL_LOG_ERROR, __VA_ARGS__)
#define hixl_log_warn(...)  hixl_log(HIXL_LOG_WARN, __VA_ARGS__)
#define hixl_log_info(...)  hixl_log(HIXL_LOG_INFO, __VA_ARGS__)
#define hixl_log_debug(...) hixl_log(HIXL_LOG_DEBUG, __VA_ARGS__)

/* Record the calling thread's last error and return status, so that error
 * paths read "return hixl_error(HIXL_PARAM_INVALID, "...", ...);".  At
 * debug level it is logged with the caller's location, once (recording the
 * same message again, as callers that pass an inner error on do, is not
 * logged twice). */
#define hixl_error(_status, ...) \
    hixl_error_at(__FILE__, __LINE__, (_status), __VA_ARGS__)

hixl_status_t hixl_error_at(const char *file, int line, hixl_status_t status,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Last error of this thread, for internal callers that pass it on. */
const char *hixl_error_message(void);

/*
 * A step whose failure is not the call's (a plugin that cannot open while
 * the engine comes up without it): the thread's last error is that of the
 * last *failed* call, so the step runs between save and restore, and its
 * message, read with hixl_error_message() before the restore, goes where
 * the caller keeps it.
 */
#define HIXL_ERROR_MSG_MAX 512   /* a last error's length, with its NUL */

typedef struct hixl_error_saved {
    char msg[HIXL_ERROR_MSG_MAX];
} hixl_error_saved_t;

void hixl_error_save(hixl_error_saved_t *saved);
void hixl_error_restore(const hixl_error_saved_t *saved);

#endif
