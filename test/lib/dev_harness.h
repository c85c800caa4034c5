/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device-memory test helpers, over the emulated ACL runtime (test/emu_acl,
 * a test double: see emu_acl.h).
 *
 *  - hx_acl(): the emulated runtime, loaded with dlopen from the same path
 *    the Ascend plugin is pointed at (hixl.PluginRuntime), so the test and
 *    the plugin share one runtime instance, as an application and the
 *    plugin share libascendcl.so.
 *  - device buffers: allocate on an emulated device, fill and check them
 *    only through the runtime's copies (the CPU cannot touch them: a stray
 *    CPU access crashes the test instead of passing it).
 *  - device targets: a forked process with a listening engine that
 *    registers device or host regions on command (after the initiator
 *    connected, so the MEM_ADD path for device memory is exercised), fills
 *    and checks them, and checks bytes the instant a layer signal or a
 *    notify arrives.
 *
 * Like harness.h targets: fork a target before this process initializes
 * the runtime or hixl; it dies with its parent and on its own alarm.
 */
#ifndef HIXL_TEST_DEV_HARNESS_H_
#define HIXL_TEST_DEV_HARNESS_H_

#include "harness.h"
#include "emu_acl/emu_acl.h"

#include <sys/types.h>

/* Set by test/Makefile.am. */
#ifndef HX_EMU_ACL_LIB
#error HX_EMU_ACL_LIB must name the emulated libascendcl.so
#endif
#ifndef HX_PLUGIN_DIR
#error HX_PLUGIN_DIR must name the directory of hixl_mem_ascend.so
#endif

#define HX_ACL_FN(_name) __typeof__(_name) *_name

/* The emulated runtime's entry points (the names are the ACL names). */
typedef struct hx_acl {
    HX_ACL_FN(aclInit);
    HX_ACL_FN(aclrtSetDevice);
    HX_ACL_FN(aclrtGetDeviceCount);
    HX_ACL_FN(aclrtMalloc);
    HX_ACL_FN(aclrtFree);
    HX_ACL_FN(aclrtMallocHost);
    HX_ACL_FN(aclrtFreeHost);
    HX_ACL_FN(aclrtMemcpy);
    HX_ACL_FN(aclrtMemset);
    HX_ACL_FN(aclrtMemcpyAsync);
    HX_ACL_FN(aclrtCreateStream);
    HX_ACL_FN(aclrtDestroyStream);
    HX_ACL_FN(aclrtSynchronizeStream);
    HX_ACL_FN(aclrtCreateEvent);
    HX_ACL_FN(aclrtDestroyEvent);
    HX_ACL_FN(aclrtRecordEvent);
    HX_ACL_FN(aclrtQueryEventStatus);
    HX_ACL_FN(aclrtPointerGetAttributes);
    HX_ACL_FN(aclrtIpcMemGetExportKey);
    HX_ACL_FN(aclrtIpcMemSetImportPid);
    HX_ACL_FN(aclrtIpcMemImportByKey);
    HX_ACL_FN(aclrtIpcMemClose);
    HX_ACL_FN(aclrtDeviceEnablePeerAccess);
    HX_ACL_FN(aclrtGetCurrentContext);
    HX_ACL_FN(aclrtSetCurrentContext);
} hx_acl_t;

/* Load (once) and return the emulated runtime; asserts. */
const hx_acl_t *hx_acl(void);

/* hixl.PluginRuntime value naming the emulated runtime. */
const char *hx_acl_runtime_opt(void);

/* Device memory of len bytes on device dev (aclrtSetDevice + aclrtMalloc),
 * zeroed through the runtime. */
void *hx_dev_alloc(int32_t dev, size_t len);
void hx_dev_free(void *p);

/* [p + off, +len) = pattern (seed, idx), through aclrtMemcpy. */
void hx_dev_fill(void *p, uint64_t off, size_t len, uint64_t seed,
                 uint64_t idx);
/* 0 when [p + off, +len) holds the pattern, else -1 with msg. */
int hx_dev_check(void *p, uint64_t off, size_t len, uint64_t seed,
                 uint64_t idx, char *msg, size_t msglen);

#define hx_dev_assert(_p, _off, _len, _seed, _idx, _what) \
    do { \
        char _m[512]; \
        ck_assert_msg(hx_dev_check((_p), (_off), (_len), (_seed), (_idx), \
                                   _m, sizeof(_m)) == 0, "%s: %s", (_what), \
                      _m); \
    } while (0)

/* Register [p, +len) as DEVICE memory, asserting success. */
hixl_mem_handle_t hx_register_dev(hixl_engine_t *engine, void *p, size_t len);

/* ---- device targets ----------------------------------------------------- */

#define HX_DEV_MAX_OPTS    8
#define HX_DEV_MAX_REGIONS 16

typedef struct hx_dev_target {
    pid_t    pid;
    int      cmd_fd;
    int      rep_fd;
    char     name[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t addr[HX_DEV_MAX_REGIONS];
    uint64_t len[HX_DEV_MAX_REGIONS];
    int      nregions;
} hx_dev_target_t;

/* Fork a target engine with the plugin loaded over the emulated runtime
 * and these extra options ("key", "value", ..., NULL). */
void hx_dev_target_start(hx_dev_target_t *t, ...)
    __attribute__((sentinel));

/* Register a region of len bytes in the target: device memory of device
 * dev (dev >= 0) or host memory (dev < 0).  Returns its index. */
int hx_dev_target_region(hx_dev_target_t *t, int32_t dev, size_t len);

void hx_dev_target_deregister(hx_dev_target_t *t, int region);

void hx_dev_target_fill(hx_dev_target_t *t, int region, uint64_t off,
                        uint64_t len, uint64_t seed, uint64_t idx);

/* 0 when the target's region holds the pattern, else -1 with msg. */
int hx_dev_target_check(hx_dev_target_t *t, int region, uint64_t off,
                        uint64_t len, uint64_t seed, uint64_t idx, char *msg,
                        size_t msglen);

#define hx_dev_target_verify(_t, _r, _off, _len, _seed, _idx) \
    do { \
        char _m[1024]; \
        ck_assert_msg(hx_dev_target_check((_t), (_r), (_off), (_len), \
                                          (_seed), (_idx), _m, \
                                          sizeof(_m)) == 0, \
                      "target check [%s]: %s", hx_tls_label(), _m); \
    } while (0)

/* What the target checks the moment an event arrives. */
typedef struct hx_dev_watch {
    int      region;
    uint64_t off, len, seed, idx;
} hx_dev_watch_t;

/* The target waits (hixl_wait_layer) for (source, stream, gen, layer) and
 * checks the described bytes as soon as it returns.  Starts the wait and
 * returns; hx_dev_target_result() collects the verdict. */
void hx_dev_target_wait_layer(hx_dev_target_t *t, const char *source,
                              uint32_t stream, uint64_t gen, uint32_t layer,
                              const hx_dev_watch_t *w);

/* The target spins on hixl_get_notifies until a notify named `name`
 * arrives and checks the described bytes at once; returns at once. */
void hx_dev_target_wait_notify(hx_dev_target_t *t, const char *name,
                               const hx_dev_watch_t *w);

/* Verdict of the last wait: 0, or -1 with msg. */
int hx_dev_target_result(hx_dev_target_t *t, char *msg, size_t msglen);

/* Finalize and reap the target (asserts a clean exit). */
void hx_dev_target_stop(hx_dev_target_t *t);

/* SIGKILL the target and reap it (a peer dying mid-transfer). */
void hx_dev_target_kill(hx_dev_target_t *t);

/* Kill targets a failed test left (checked teardown of device suites). */
void hx_dev_target_kill_all(void);

/* A test case with the harness' timeout and a teardown for device
 * targets too. */
TCase *hx_dev_tcase(const char *name);

#endif
