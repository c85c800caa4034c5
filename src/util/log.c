/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging and the per-thread last-error message.
 */
#include "config.h"
#include "util/log.h"
#include "util/debug.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HIXL_LOG_LEVELS    5

int hixl_log_level = HIXL_LOG_WARN;

/* How many live engines asked for each level; the threshold is the most
 * verbose one asked for. */
static atomic_uint hixl_log_holds[HIXL_LOG_LEVELS];

static hixl_log_fn_t hixl_log_fn;     /* NULL: stderr */
static void         *hixl_log_arg;
static pthread_mutex_t hixl_log_fn_lock = PTHREAD_MUTEX_INITIALIZER;

/* Thread-local, like errno: a failed call on one thread never overwrites the
 * message another thread is about to read. */
static __thread char hixl_last_error_buf[HIXL_ERROR_MSG_MAX];

static const char *const hixl_log_level_names[] = {
    "ERROR", "WARN", "INFO", "DEBUG", "TRACE"
};

static int hixl_log_clamp(int level)
{
    return (level < 0) ? 0 : (level >= HIXL_LOG_LEVELS) ?
           HIXL_LOG_LEVELS - 1 : level;
}

static void hixl_log_level_update(void)
{
    int level;

    for (level = HIXL_LOG_LEVELS - 1; level > HIXL_LOG_WARN; --level) {
        if (atomic_load(&hixl_log_holds[level]) > 0) {
            break;
        }
    }
    hixl_log_level = level;
}

void hixl_log_level_hold(int level)
{
    atomic_fetch_add(&hixl_log_holds[hixl_log_clamp(level)], 1);
    hixl_log_level_update();
}

void hixl_log_level_drop(int level)
{
    /* every drop follows its hold */
    hixl_assert(atomic_load(&hixl_log_holds[hixl_log_clamp(level)]) >= 1);
    atomic_fetch_sub(&hixl_log_holds[hixl_log_clamp(level)], 1);
    hixl_log_level_update();
}

hixl_status_t hixl_set_log_handler(hixl_log_fn_t fn, void *arg)
{
    pthread_mutex_lock(&hixl_log_fn_lock);
    hixl_log_fn  = fn;
    hixl_log_arg = arg;
    pthread_mutex_unlock(&hixl_log_fn_lock);
    return HIXL_SUCCESS;
}

void hixl_log_printf(hixl_log_level_t level, const char *file, int line,
                     const char *fmt, ...)
{
    char msg[1024];
    struct timespec ts;
    const char *base = strrchr(file, '/');
    va_list ap;

    base = base ? base + 1 : file;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&hixl_log_fn_lock);
    if (hixl_log_fn != NULL) {
        hixl_log_fn((int)level, base, line, msg, hixl_log_arg);
        pthread_mutex_unlock(&hixl_log_fn_lock);
        return;
    }
    pthread_mutex_unlock(&hixl_log_fn_lock);
    clock_gettime(CLOCK_REALTIME, &ts);
    /* One fprintf per line keeps lines whole when threads log together. */
    fprintf(stderr, "[%ld.%06ld] [hixl %d] %-5s %s:%d %s\n", (long)ts.tv_sec,
            ts.tv_nsec / 1000, (int)getpid(), hixl_log_level_names[level],
            base, line, msg);
}

hixl_status_t hixl_error_at(const char *file, int line, hixl_status_t status,
                            const char *fmt, ...)
{
    char msg[HIXL_ERROR_MSG_MAX];
    va_list ap;

    /* format aside first: callers pass the previous message as an argument
     * ("AutoConnect: %s", hixl_error_message()) */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (strcmp(msg, hixl_last_error_buf) == 0) {
        return status;   /* passed on unchanged: logged already */
    }
    memcpy(hixl_last_error_buf, msg, sizeof(msg));
    if (HIXL_LOG_DEBUG <= hixl_log_level) {
        hixl_log_printf(HIXL_LOG_DEBUG, file, line, "%s: %s",
                        hixl_strerror(status), hixl_last_error_buf);
    }
    return status;
}

const char *hixl_error_message(void)
{
    return hixl_last_error_buf;
}

void hixl_error_save(hixl_error_saved_t *saved)
{
    memcpy(saved->msg, hixl_last_error_buf, sizeof(saved->msg));
}

void hixl_error_restore(const hixl_error_saved_t *saved)
{
    memcpy(hixl_last_error_buf, saved->msg, sizeof(hixl_last_error_buf));
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
