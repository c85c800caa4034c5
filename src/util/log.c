/*
 * Logging and the per-thread last-error message.
 */
#include "config.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int hixl_log_level = HIXL_LOG_WARN;

#define HIXL_ERROR_MSG_MAX 512

/* Thread-local, like errno: a failed call on one thread never overwrites the
 * message another thread is about to read. */
static __thread char hixl_last_error_buf[HIXL_ERROR_MSG_MAX];

static const char *const hixl_log_level_names[] = {
    "ERROR", "WARN", "INFO", "DEBUG", "TRACE"
};

void hixl_log_printf(hixl_log_level_t level, const char *file, int line,
                     const char *fmt, ...)
{
    char msg[1024];
    struct timespec ts;
    const char *base = strrchr(file, '/');
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &ts);
    /* One fprintf per line keeps lines whole when threads log together. */
    fprintf(stderr, "[%ld.%06ld] [hixl %d] %-5s %s:%d %s\n", (long)ts.tv_sec,
            ts.tv_nsec / 1000, (int)getpid(), hixl_log_level_names[level],
            base ? base + 1 : file, line, msg);
}

hixl_status_t hixl_error(hixl_status_t status, const char *fmt, ...)
{
    char msg[HIXL_ERROR_MSG_MAX];
    va_list ap;

    /* format aside first: callers pass the previous message as an argument
     * ("AutoConnect: %s", hixl_error_message()) */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    memcpy(hixl_last_error_buf, msg, sizeof(msg));
    hixl_log_debug("%s: %s", hixl_strerror(status), hixl_last_error_buf);
    return status;
}

const char *hixl_error_message(void)
{
    return hixl_last_error_buf;
}

const char *hixl_last_error(void)
{
    return hixl_last_error_buf;
}

const char *hixl_strerror(hixl_status_t status)
{
    switch (status) {
    case HIXL_SUCCESS:            return "HIXL_SUCCESS";
    case HIXL_PARAM_INVALID:      return "HIXL_PARAM_INVALID";
    case HIXL_TIMEOUT:            return "HIXL_TIMEOUT";
    case HIXL_NOT_CONNECTED:      return "HIXL_NOT_CONNECTED";
    case HIXL_ALREADY_CONNECTED:  return "HIXL_ALREADY_CONNECTED";
    case HIXL_NOTIFY_FAILED:      return "HIXL_NOTIFY_FAILED";
    case HIXL_UNSUPPORTED:        return "HIXL_UNSUPPORTED";
    case HIXL_RESOURCE_EXHAUSTED: return "HIXL_RESOURCE_EXHAUSTED";
    case HIXL_FAILED:             return "HIXL_FAILED";
    }
    return "HIXL_UNKNOWN_STATUS";
}

const char *hixl_version(void)
{
    return PACKAGE_VERSION;
}
