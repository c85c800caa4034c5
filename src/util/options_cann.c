/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GlobalResourceConfig and LocalCommRes: the checks CANN hixl makes
 * (src/hixl/engine/hixl_options.cc and its documentation upstream),
 * written here over util/json.h.
 *
 * Integers may be JSON numbers or decimal strings ("128" and 128), as
 * upstream's JsonToNumber takes them; booleans must be JSON booleans.
 * Unknown fields are ignored, as upstream ignores them.
 */
#include "config.h"
#include "util/options_cann.h"
#include "util/json.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tokens a value may hold: far beyond any real configuration (a 1.3
 * endpoint list of a big node is tens of entries), small enough that a
 * hostile one costs little. */
#define HIXL_CANN_MAX_TOKENS  65536
/* LocalCommRes files, as upstream: 1 byte to 1 MiB. */
#define HIXL_COMM_RES_FILE_MAX (1024u * 1024u)

typedef struct res_config_int {
    const char *name;
    int64_t     min, max;
    uint32_t    bit;
    size_t      offset;   /* uint32_t field of hixl_res_config_t */
} res_config_int_t;

#define G(_f) offsetof(hixl_res_config_t, _f)

/* The integer fields and their ranges (upstream's). */
static const res_config_int_t res_config_ints[] = {
    {"connect_pool.thread_num", 1, 64, HIXL_RES_CONFIG_THREAD_NUM,
     G(thread_num)},
    {"connect_pool.task_queue_capacity", 1, 65535,
     HIXL_RES_CONFIG_TASK_QUEUE_CAPACITY, G(task_queue_capacity)},
    {"comm_resource_config.listen_port", 1, 65535, HIXL_RES_CONFIG_LISTEN_PORT,
     G(listen_port)},
    {"comm_resource_config.qos", 0, 7, HIXL_RES_CONFIG_QOS, G(qos)},
    {"comm_resource_config.max_active_channels", 1, UINT32_MAX,
     HIXL_RES_CONFIG_MAX_ACTIVE_CHANNELS, G(max_active_channels)},
    {"fabric_memory.max_capacity", 1, 1024, HIXL_RES_CONFIG_FM_MAX_CAPACITY,
     G(fm_max_capacity_tb)},
    {"fabric_memory.start_address", 0, 1024, HIXL_RES_CONFIG_FM_START_ADDRESS,
     G(fm_start_address_tb)},
    {"fabric_memory.task_stream_num", 1, 8, HIXL_RES_CONFIG_FM_TASK_STREAM_NUM,
     G(fm_task_stream_num)},
};
#define RES_CONFIG_NINTS (sizeof(res_config_ints) / sizeof(res_config_ints[0]))

/* comm_resource_config.protocol_desc values upstream documents. */
static const char *const res_config_protocols[] =
    {"roce:device",   "hccs:device", "ub_ctp:device", "uboe:device",
     "ub_rtp:device", "roce:host",   "ub_ctp:host",   NULL};

static int cann_in(const char *s, const char *const *set)
{
    size_t i;

    for (i = 0; set[i] != NULL; ++i) {
        if (!strcmp(s, set[i])) {
            return 1;
        }
    }
    return 0;
}

/* One integer field: `name` in obj (key as written there), absent or
 * within range. */
static hixl_status_t res_config_int_field(const char        *origin,
                                          const hixl_json_t *j, uint32_t obj,
                                          const char             *key,
                                          const res_config_int_t *f,
                                          hixl_res_config_t      *res_config)
{
    uint32_t i = hixl_json_member(j, obj, key);
    int64_t v;

    if (i == HIXL_JSON_NONE) {
        return HIXL_SUCCESS;
    }
    if (hixl_json_int(j, i, &v) != 0) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: %s must be an integer "
                          "(a JSON number or a decimal string)", origin,
                          f->name);
    }
    if ((v < f->min) || (v > f->max)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: %s must be in [%" PRId64
                          ", %" PRId64 "], got %" PRId64, origin, f->name,
                          f->min, f->max, v);
    }
    *(uint32_t *)((char *)res_config + f->offset) = (uint32_t)v;
    res_config->set |= f->bit;
    return HIXL_SUCCESS;
}

static hixl_status_t res_config_protocol_desc(const char        *origin,
                                              const hixl_json_t *j, uint32_t v,
                                              hixl_res_config_t *res_config)
{
    uint32_t n = 1, k, e;
    char one[32];
    size_t used;

    if (hixl_json_type(j, v) == HIXL_JSON_ARRAY) {
        n = j->tok[v].count;
    }
    for (k = 0; k < n; ++k) {
        e = (hixl_json_type(j, v) == HIXL_JSON_ARRAY) ?
            hixl_json_element(j, v, k) : v;
        if ((hixl_json_string(j, e, one, sizeof(one)) != 0) ||
            !cann_in(one, res_config_protocols)) {
            return hixl_error(HIXL_PARAM_INVALID, "%s: comm_resource_config."
                              "protocol_desc must be a string or an array "
                              "of strings among roce:device, hccs:device, "
                              "ub_ctp:device, uboe:device, ub_rtp:device, "
                              "roce:host, ub_ctp:host", origin);
        }
        used = strlen(res_config->protocol_desc);
        snprintf(res_config->protocol_desc + used,
                 sizeof(res_config->protocol_desc) - used, "%s%s",
                 used ? "," : "", one);
    }
    res_config->set |= HIXL_RES_CONFIG_PROTOCOL_DESC;
    return HIXL_SUCCESS;
}

/* channel_pool.*: max_channel in (0, 512]; the two waterlines in (0, 1),
 * given together, low below high. */
static hixl_status_t res_config_channel_pool(const char        *origin,
                                             const hixl_json_t *j,
                                             hixl_res_config_t *res_config)
{
    static const res_config_int_t max = {"channel_pool.max_channel", 1, 512, 0,
                                         G(channel_max)};
    uint32_t hi = hixl_json_member(j, 0, "channel_pool.high_waterline");
    uint32_t lo = hixl_json_member(j, 0, "channel_pool.low_waterline");
    uint32_t mc = hixl_json_member(j, 0, max.name);
    hixl_status_t status;

    res_config->channel_max = 512;
    status = res_config_int_field(origin, j, 0, max.name, &max, res_config);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    if ((hi == HIXL_JSON_NONE) != (lo == HIXL_JSON_NONE)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: channel_pool."
                          "high_waterline and channel_pool.low_waterline "
                          "are given together or not at all", origin);
    }
    if ((hi != HIXL_JSON_NONE) &&
        ((hixl_json_double(j, hi, &res_config->channel_high) != 0) ||
         (hixl_json_double(j, lo, &res_config->channel_low) != 0) ||
         !(res_config->channel_high > 0.0) ||
         !(res_config->channel_high < 1.0) ||
         !(res_config->channel_low > 0.0) ||
         !(res_config->channel_low < res_config->channel_high))) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: channel_pool waterlines "
                          "must be numbers in (0, 1) with low_waterline "
                          "below high_waterline", origin);
    }
    if ((mc != HIXL_JSON_NONE) || (hi != HIXL_JSON_NONE)) {
        res_config->set |= HIXL_RES_CONFIG_CHANNEL_POOL;
    }
    return HIXL_SUCCESS;
}

/* fabric_memory.*, flat ("fabric_memory.max_capacity") or nested
 * ({"fabric_memory": {"max_capacity": ...}}); the flat keys win. */
static hixl_status_t res_config_fabric_memory(const char        *origin,
                                              const hixl_json_t *j,
                                              hixl_res_config_t *res_config)
{
    static const char *const bare[] = {"max_capacity", "start_address",
                                       "task_stream_num"};
    uint32_t nested = hixl_json_member(j, 0, "fabric_memory"), u;
    hixl_status_t status;
    size_t i;
    int pass, v;

    for (pass = 0; pass < 2; ++pass) {
        uint32_t obj = (pass == 0) ? nested : 0;

        if ((obj == HIXL_JSON_NONE) ||
            (hixl_json_type(j, obj) != HIXL_JSON_OBJECT)) {
            continue;
        }
        for (i = 0; i < 3; ++i) {
            const res_config_int_t *f =
                &res_config_ints[RES_CONFIG_NINTS - 3 + i];

            status = res_config_int_field(origin, j, obj,
                                          (pass == 0) ? bare[i] : f->name, f,
                                          res_config);
            if (status != HIXL_SUCCESS) {
                return status;
            }
        }
        u = hixl_json_member(j, obj, (pass == 0) ? "enable_aicpu_unfold" :
                             "fabric_memory.enable_aicpu_unfold");
        if (u != HIXL_JSON_NONE) {
            if (hixl_json_bool(j, u, &v) != 0) {
                return hixl_error(HIXL_PARAM_INVALID, "%s: fabric_memory."
                                  "enable_aicpu_unfold must be true or "
                                  "false", origin);
            }
            res_config->fm_aicpu_unfold = v;
            res_config->set |= HIXL_RES_CONFIG_FM_AICPU_UNFOLD;
        }
    }
    /* unfolding (the default) runs one stream per task */
    if (((res_config->set & HIXL_RES_CONFIG_FM_AICPU_UNFOLD) == 0 ||
         res_config->fm_aicpu_unfold) &&
        (res_config->set & HIXL_RES_CONFIG_FM_TASK_STREAM_NUM) &&
        (res_config->fm_task_stream_num != 1)) {
        return hixl_error(HIXL_PARAM_INVALID,
                          "%s: with fabric_memory."
                          "enable_aicpu_unfold (the default) fabric_memory."
                          "task_stream_num must be 1, got %u",
                          origin, res_config->fm_task_stream_num);
    }
    return HIXL_SUCCESS;
}

static hixl_status_t res_config_fields(const char *origin,
                                       const hixl_json_t *j,
                                       hixl_res_config_t *res_config)
{
    hixl_status_t status;
    uint32_t v;
    size_t i;

    for (i = 0; i < RES_CONFIG_NINTS - 3; ++i) {
        status = res_config_int_field(origin, j, 0, res_config_ints[i].name,
                                      &res_config_ints[i], res_config);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    v = hixl_json_member(j, 0, "comm_resource_config.protocol_desc");
    if (v != HIXL_JSON_NONE) {
        status = res_config_protocol_desc(origin, j, v, res_config);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    v = hixl_json_member(j, 0, "local_comm_res_path");
    if (v != HIXL_JSON_NONE) {
        if ((hixl_json_string(j, v, res_config->local_comm_res_path,
                              sizeof(res_config->local_comm_res_path)) != 0) ||
            (res_config->local_comm_res_path[0] == '\0')) {
            return hixl_error(HIXL_PARAM_INVALID,
                              "%s: local_comm_res_path "
                              "must be a non-empty file path (a string of "
                              "at most %zu bytes)",
                              origin,
                              sizeof(res_config->local_comm_res_path) - 1);
        }
        res_config->set |= HIXL_RES_CONFIG_LOCAL_COMM_RES_PATH;
    }
    status = res_config_channel_pool(origin, j, res_config);
    if (status != HIXL_SUCCESS) {
        return status;
    }
    return res_config_fabric_memory(origin, j, res_config);
}

hixl_status_t hixl_res_config_parse(const char *origin, const char *text,
                                    hixl_res_config_t *res_config)
{
    hixl_status_t status;
    hixl_json_t j;

    memset(res_config, 0, sizeof(*res_config));
    if (*text == '\0') {
        return HIXL_SUCCESS;
    }
    if (hixl_json_parse(&j, text, strlen(text), HIXL_CANN_MAX_TOKENS) != 0) {
        status = hixl_error(HIXL_PARAM_INVALID, "%s: not valid JSON: %s",
                            origin, j.err);
    } else if (hixl_json_type(&j, 0) != HIXL_JSON_OBJECT) {
        status = hixl_error(HIXL_PARAM_INVALID, "%s: must be a JSON object",
                            origin);
    } else {
        status = res_config_fields(origin, &j, res_config);
    }
    hixl_json_free(&j);
    if (status != HIXL_SUCCESS) {
        memset(res_config, 0, sizeof(*res_config));
        return status;
    }
    snprintf(res_config->thread_num_text, sizeof(res_config->thread_num_text),
             "%u", res_config->thread_num);
    snprintf(res_config->task_queue_capacity_text,
             sizeof(res_config->task_queue_capacity_text), "%u",
             res_config->task_queue_capacity);
    return HIXL_SUCCESS;
}

/* One endpoint_list entry of a version 1.3 LocalCommRes. */
static hixl_status_t comm_res_endpoint(const char *origin,
                                       const hixl_json_t *j, uint32_t e,
                                       uint32_t k)
{
    static const char *const protocols[] = {"roce", "ub_ctp", "uboe",
                                            "ub_rtp", NULL};
    static const char *const placements[] = {"host", "device", NULL};
    static const char *const optional[] = {"plane", "dst_eid", "server_id"};
    char buf[256];
    uint32_t v;
    size_t i;

    if (hixl_json_type(j, e) != HIXL_JSON_OBJECT) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: endpoint_list[%u] must be "
                          "an object", origin, k);
    }
    v = hixl_json_member(j, e, "protocol");
    if ((hixl_json_string(j, v, buf, sizeof(buf)) != 0) ||
        !cann_in(buf, protocols)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: endpoint_list[%u]."
                          "protocol must be \"roce\", \"ub_ctp\", \"uboe\" "
                          "or \"ub_rtp\"", origin, k);
    }
    v = hixl_json_member(j, e, "placement");
    if ((hixl_json_string(j, v, buf, sizeof(buf)) != 0) ||
        !cann_in(buf, placements)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: endpoint_list[%u]."
                          "placement must be \"host\" or \"device\"", origin,
                          k);
    }
    v = hixl_json_member(j, e, "comm_id");
    if ((hixl_json_string(j, v, buf, sizeof(buf)) != 0) || (buf[0] == '\0')) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: endpoint_list[%u].comm_id "
                          "must be a non-empty string", origin, k);
    }
    for (i = 0; i < sizeof(optional) / sizeof(optional[0]); ++i) {
        v = hixl_json_member(j, e, optional[i]);
        if ((v != HIXL_JSON_NONE) &&
            (hixl_json_type(j, v) != HIXL_JSON_STRING)) {
            return hixl_error(HIXL_PARAM_INVALID, "%s: endpoint_list[%u].%s "
                              "must be a string", origin, k, optional[i]);
        }
    }
    return HIXL_SUCCESS;
}

static hixl_status_t comm_res_fields(const char *origin,
                                     const hixl_json_t *j,
                                     hixl_comm_res_t *cr)
{
    static const char *const versions[] = {"1.0", "1.2", "1.3", NULL};
    hixl_status_t status;
    uint32_t v, list, k;

    if (hixl_json_type(j, 0) != HIXL_JSON_OBJECT) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: must be a JSON object",
                          origin);
    }
    v = hixl_json_member(j, 0, "version");
    if ((v != HIXL_JSON_NONE) &&
        ((hixl_json_string(j, v, cr->version, sizeof(cr->version)) != 0) ||
         !cann_in(cr->version, versions))) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: version must be \"1.0\", "
                          "\"1.2\" (a ranktable) or \"1.3\"", origin);
    }
    if (strcmp(cr->version, "1.3") != 0) {
        return HIXL_SUCCESS;   /* a ranktable: HCCL's business */
    }
    v = hixl_json_member(j, 0, "net_instance_id");
    if ((v != HIXL_JSON_NONE) && (hixl_json_type(j, v) != HIXL_JSON_STRING)) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: net_instance_id must be "
                          "a string", origin);
    }
    list = hixl_json_member(j, 0, "endpoint_list");
    if (list == HIXL_JSON_NONE) {
        return HIXL_SUCCESS;   /* the minimal {"version": "1.3"} */
    }
    if (hixl_json_type(j, list) != HIXL_JSON_ARRAY) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: endpoint_list must be an "
                          "array", origin);
    }
    for (k = 0, v = list + 1; k < j->tok[list].count; ++k, v = j->tok[v].next) {
        status = comm_res_endpoint(origin, j, v, k);
        if (status != HIXL_SUCCESS) {
            return status;
        }
    }
    cr->endpoints = j->tok[list].count;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_comm_res_check(const char *origin, const char *text,
                                  size_t len, hixl_comm_res_t *cr)
{
    hixl_status_t status;
    hixl_json_t j;

    memset(cr, 0, sizeof(*cr));
    if (len == 0) {
        return HIXL_SUCCESS;   /* "": generated, as upstream */
    }
    if (len > HIXL_COMM_RES_FILE_MAX) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: %zu bytes, limit %u",
                          origin, len, HIXL_COMM_RES_FILE_MAX);
    }
    if (hixl_json_parse(&j, text, len, HIXL_CANN_MAX_TOKENS) != 0) {
        status = hixl_error(HIXL_PARAM_INVALID, "%s: not valid JSON: %s",
                            origin, j.err);
    } else {
        status = comm_res_fields(origin, &j, cr);
    }
    hixl_json_free(&j);
    if (status != HIXL_SUCCESS) {
        memset(cr, 0, sizeof(*cr));
        return status;
    }
    cr->set = 1;
    return HIXL_SUCCESS;
}

hixl_status_t hixl_comm_res_file(const char *path, hixl_comm_res_t *cr)
{
    char resolved[PATH_MAX], origin[1200];
    hixl_status_t status;
    struct stat st;
    size_t done = 0;
    ssize_t n;
    char *text;
    int fd;

    snprintf(origin, sizeof(origin), "GlobalResourceConfig "
             "local_comm_res_path \"%s\"", path);
    if (realpath(path, resolved) == NULL) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: %s", origin,
                          strerror(errno));
    }
    fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
        return hixl_error(HIXL_PARAM_INVALID, "%s: open: %s", origin,
                          strerror(errno));
    }
    if ((fstat(fd, &st) != 0) || !S_ISREG(st.st_mode) || (st.st_size <= 0) ||
        ((uint64_t)st.st_size > HIXL_COMM_RES_FILE_MAX)) {
        close(fd);
        return hixl_error(HIXL_PARAM_INVALID, "%s: must be a regular file of "
                          "1 byte to 1 MiB", origin);
    }
    text = malloc((size_t)st.st_size);
    if (text == NULL) {
        close(fd);
        return hixl_error(HIXL_RESOURCE_EXHAUSTED, "%s: out of memory",
                          origin);
    }
    while (done < (size_t)st.st_size) {
        n = read(fd, text + done, (size_t)st.st_size - done);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        done += (size_t)n;
    }
    close(fd);
    status = (done == (size_t)st.st_size) ?
             hixl_comm_res_check(origin, text, done, cr) :
             hixl_error(HIXL_PARAM_INVALID, "%s: read %zu of %lld bytes",
                        origin, done, (long long)st.st_size);
    free(text);
    if (status == HIXL_SUCCESS) {
        cr->from_file = 1;
    }
    return status;
}

void hixl_res_config_print(FILE *stream, const hixl_res_config_t *res_config)
{
    size_t i;

    for (i = 0; i < RES_CONFIG_NINTS; ++i) {
        if (res_config->set & res_config_ints[i].bit) {
            fprintf(stream, "      %s = %u: %s\n", res_config_ints[i].name,
                    *(const uint32_t *)((const char *)res_config +
                                        res_config_ints[i].offset),
                    (res_config_ints[i].bit == HIXL_RES_CONFIG_THREAD_NUM) ?
                        "sets hixl.ConnectPoolThreads" :
                    (res_config_ints[i].bit ==
                     HIXL_RES_CONFIG_TASK_QUEUE_CAPACITY) ?
                        "sets hixl.ConnectPoolQueue" :
                        "no effect over UCX");
        }
    }
    if (res_config->set & HIXL_RES_CONFIG_PROTOCOL_DESC) {
        fprintf(stream,
                "      comm_resource_config.protocol_desc = %s: no "
                "effect over UCX (UCX_TLS picks transports)\n",
                res_config->protocol_desc);
    }
    if (res_config->set & HIXL_RES_CONFIG_LOCAL_COMM_RES_PATH) {
        fprintf(stream,
                "      local_comm_res_path = %s: read and checked as "
                "LocalCommRes (no effect over UCX)\n",
                res_config->local_comm_res_path);
    }
    if (res_config->set & HIXL_RES_CONFIG_CHANNEL_POOL) {
        fprintf(stream,
                "      channel_pool.* (max_channel %u): no effect "
                "over UCX\n",
                res_config->channel_max);
    }
    if (res_config->set & HIXL_RES_CONFIG_FM_AICPU_UNFOLD) {
        fprintf(stream,
                "      fabric_memory.enable_aicpu_unfold = %s: no "
                "effect over UCX\n",
                res_config->fm_aicpu_unfold ? "true" : "false");
    }
}

void hixl_res_config_inert_names(const hixl_res_config_t *res_config,
                                 char *buf, size_t len)
{
    static const struct { uint32_t bit; const char *name;
    } extra[] = {
        {HIXL_RES_CONFIG_PROTOCOL_DESC, "comm_resource_config.protocol_desc"},
        {HIXL_RES_CONFIG_LOCAL_COMM_RES_PATH, "local_comm_res_path"},
        {HIXL_RES_CONFIG_CHANNEL_POOL, "channel_pool.*"},
        {HIXL_RES_CONFIG_FM_AICPU_UNFOLD, "fabric_memory.enable_aicpu_unfold"},
    };
    size_t i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < RES_CONFIG_NINTS + 4; ++i) {
        uint32_t    bit  = (i < RES_CONFIG_NINTS) ?
                               res_config_ints[i].bit :
                               extra[i - RES_CONFIG_NINTS].bit;
        const char *name = (i < RES_CONFIG_NINTS) ?
                               res_config_ints[i].name :
                               extra[i - RES_CONFIG_NINTS].name;

        if ((res_config->set & bit) && !(bit & HIXL_RES_CONFIG_HONOURED) &&
            (used + 3 < len)) {
            snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
            used += strlen(buf + used);
        }
    }
}
