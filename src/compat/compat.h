/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the compatibility surfaces (the verbs, upstream's C interface) may
 * use beyond the public API.  They are compiled against include/ and this
 * file only, so that they stay what they claim to be, layers over the
 * public API (a make check step enforces it); these few services are
 * implemented in compat/compat_support.c and hidden from the library's users.
 */
#ifndef HIXL_COMPAT_COMPAT_H_
#define HIXL_COMPAT_COMPAT_H_

#include <hixl/hixl.h>
#include <stdint.h>

#define HIXL_COMPAT_HIDDEN __attribute__((visibility("hidden")))

/* Record the calling thread's last error (hixl_last_error) and return
 * status, like every public call does. */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_compat_error(hixl_status_t status,
                                                   const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A debug line in the library's log. */
HIXL_COMPAT_HIDDEN void hixl_compat_debug(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Whether an engine name listens ("ip:port" with a non-zero port). */
HIXL_COMPAT_HIDDEN int hixl_compat_name_listens(const char *name);

/* Monotonic deadlines, as the library keeps them: timeout_ms from now,
 * and the milliseconds left until one (0 when passed). */
HIXL_COMPAT_HIDDEN uint64_t hixl_compat_deadline_ns(int64_t timeout_ms);
HIXL_COMPAT_HIDDEN int hixl_compat_ms_left(uint64_t deadline_ns);

/* Little-endian fields of the surfaces' own wire formats (the verbs'
 * region table, HixlCS's messages): util/byteorder.h's. */
HIXL_COMPAT_HIDDEN uint32_t hixl_compat_get_le32(const uint8_t *p);
HIXL_COMPAT_HIDDEN uint64_t hixl_compat_get_le64(const uint8_t *p);
HIXL_COMPAT_HIDDEN void hixl_compat_put_le32(uint8_t *p, uint32_t v);
HIXL_COMPAT_HIDDEN void hixl_compat_put_le64(uint8_t *p, uint64_t v);

/* Check a HixlCS global_resource_config as CANN hixl does: NULL or "" is
 * none; otherwise a JSON object whose comm_resource_config.listen_port (a
 * server's) or comm_resource_config.qos (a client's) and
 * comm_resource_config.max_active_channels (both), when present, are
 * integers in range.  PARAM_INVALID with a message otherwise. */
HIXL_COMPAT_HIDDEN hixl_status_t hixl_compat_cs_config(const char *json,
                                                       int server);

#endif
