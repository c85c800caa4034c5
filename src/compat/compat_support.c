/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The services compat/compat.h offers the compatibility surfaces, over
 * util/ (they may not include it themselves).  This file is the one part
 * of compat/ built with the core: it includes util/, which sits below.
 */
#include "config.h"
#include "compat/compat.h"
#include "util/byteorder.h"
#include "util/clock.h"
#include "util/engine_name.h"
#include "util/json.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint32_t hixl_compat_get_le32(const uint8_t *p)
{
    return hixl_get_le32(p);
}

uint64_t hixl_compat_get_le64(const uint8_t *p)
{
    return hixl_get_le64(p);
}

void hixl_compat_put_le32(uint8_t *p, uint32_t v)
{
    hixl_put_le32(p, v);
}

void hixl_compat_put_le64(uint8_t *p, uint64_t v)
{
    hixl_put_le64(p, v);
}

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

hixl_status_t hixl_compat_cs_config(const char *json, int server)
{
    static const struct {
        const char *name;
        int64_t     min, max;
        int         who;   /* 1 server, 0 client, -1 both */
    } fields[] = {
        {"comm_resource_config.listen_port", 1, 65535, 1},
        {"comm_resource_config.qos", 0, 7, 0},
        {"comm_resource_config.max_active_channels", 1, UINT32_MAX, -1},
    };
    hixl_status_t status = HIXL_SUCCESS;
    hixl_json_t j;
    uint32_t v;
    int64_t x;
    size_t i;

    if ((json == NULL) || (*json == '\0')) {
        return HIXL_SUCCESS;
    }
    if (hixl_json_parse(&j, json, strlen(json), 4096) != 0) {
        status = hixl_error(HIXL_PARAM_INVALID, "global_resource_config: not "
                            "valid JSON: %s", j.err);
    } else if (hixl_json_type(&j, 0) != HIXL_JSON_OBJECT) {
        status = hixl_error(HIXL_PARAM_INVALID, "global_resource_config: "
                            "must be a JSON object");
    }
    for (i = 0; (status == HIXL_SUCCESS) &&
                (i < sizeof(fields) / sizeof(fields[0])); ++i) {
        if ((fields[i].who >= 0) && (fields[i].who != !!server)) {
            continue;   /* the other side's field: not looked at, as CANN */
        }
        v = hixl_json_member(&j, 0, fields[i].name);
        if ((v != HIXL_JSON_NONE) &&
            ((hixl_json_int(&j, v, &x) != 0) || (x < fields[i].min) ||
             (x > fields[i].max))) {
            status = hixl_error(HIXL_PARAM_INVALID, "global_resource_config: "
                                "%s must be an integer in [%" PRId64 ", %"
                                PRId64 "]", fields[i].name, fields[i].min,
                                fields[i].max);
        }
    }
    hixl_json_free(&j);
    return status;
}
