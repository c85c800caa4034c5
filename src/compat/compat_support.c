/*
 * The services compat/compat.h offers the compatibility surfaces, over
 * util/ (they may not include it themselves).  This file is the one part
 * of compat/ built with the core: it includes util/, which sits below.
 */
#include "config.h"
#include "compat/compat.h"
#include "util/clock.h"
#include "util/engine_name.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

hixl_status_t hixl_compat_error(hixl_status_t status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return hixl_error(status, "%s", msg);
}

void hixl_compat_debug(const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    hixl_log_debug("%s", msg);
}

int hixl_compat_name_listens(const char *name)
{
    hixl_name_t parsed;

    return (hixl_name_parse(name, &parsed) == HIXL_SUCCESS) &&
           (parsed.port != 0);
}

uint64_t hixl_compat_deadline_ns(int64_t timeout_ms)
{
    return hixl_deadline_ns(timeout_ms);
}

int hixl_compat_ms_left(uint64_t deadline_ns)
{
    return hixl_ms_left(deadline_ns);
}
