/*
 * Diagnostics: leveled logging to stderr and the per-thread last-error
 * message behind hixl_last_error().
 */
#ifndef HIXL_LOG_H_
#define HIXL_LOG_H_

#include <hixl/hixl.h>

typedef enum hixl_log_level {
    HIXL_LOG_ERROR = 0,
    HIXL_LOG_WARN  = 1,
    HIXL_LOG_INFO  = 2,
    HIXL_LOG_DEBUG = 3,
    HIXL_LOG_TRACE = 4
} hixl_log_level_t;

/* Process-wide: log lines are for operators, who want one knob. */
extern int hixl_log_level;

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
 * paths read "return hixl_error(HIXL_PARAM_INVALID, "...", ...);". */
hixl_status_t hixl_error(hixl_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Last error of this thread, for internal callers that pass it on. */
const char *hixl_error_message(void);

#endif
