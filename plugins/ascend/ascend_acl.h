/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The part of the Ascend ACL runtime (CANN, libascendcl.so) the plugin
 * uses, reached through dlopen so the plugin builds everywhere and loads
 * only where CANN (or the test double in test/emu_acl) is installed.
 *
 * Types, constants and function types below are written from CANN's
 * public runtime API documentation (the "aclrt*" pages of the CANN
 * application development API reference and the headers acl_base_rt.h,
 * acl_rt.h and rt_error_codes.h they describe).  Each function type names
 * the documented prototype it follows; keep them in step with it.
 */
#ifndef HIXL_ASCEND_ACL_H_
#define HIXL_ASCEND_ACL_H_

#include <stddef.h>
#include <stdint.h>

/* acl_base_rt.h */
typedef int   aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;

#define ACL_SUCCESS                 0
#define ACL_ERROR_INVALID_PARAM     100000
#define ACL_ERROR_UNINITIALIZE      100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002

/* rt_error_codes.h (the ones messages name) */
#define ACL_ERROR_RT_PARAM_INVALID       107000
#define ACL_ERROR_RT_INVALID_DEVICEID    107001
#define ACL_ERROR_RT_CONTEXT_NULL        107002
#define ACL_ERROR_RT_STREAM_CONTEXT      107003
#define ACL_ERROR_RT_INVALID_HANDLE      107017
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION   207001
#define ACL_ERROR_RT_NO_PERMISSION       207006

/* acl_rt.h: aclrtMemcpyKind (order is the ABI) */
typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE
} aclrtMemcpyKind;

/* acl_rt.h: aclrtEventRecordedStatus */
typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE  = 1
} aclrtEventRecordedStatus;

/* acl_rt.h: aclrtMemLocationType, aclrtMemLocation, aclrtPtrAttributes */
typedef enum aclrtMemLocationType {
    ACL_MEM_LOCATION_TYPE_HOST = 0,
    ACL_MEM_LOCATION_TYPE_DEVICE,
    ACL_MEM_LOCATION_TYPE_UNREGISTERED,
    ACL_MEM_LOCATION_TYPE_MANAGED
} aclrtMemLocationType;

typedef struct aclrtMemLocation {
    uint32_t             id;
    aclrtMemLocationType type;
} aclrtMemLocation;

typedef struct aclrtPtrAttributes {
    aclrtMemLocation location;
    uint32_t         pageSize;
    uint32_t         rsv[4];
} aclrtPtrAttributes;

/* acl_rt.h: IPC flags; the key buffer is documented as 65 bytes */
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT                0x0UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT                0x0UL
#define ACL_RT_IPC_KEY_LEN                                65

/* The entry points, one member per documented prototype. */
typedef struct ascend_acl {
    void *handle;
    char  path[256];   /* what dlopen loaded (dladdr of a symbol) */

    /* aclError aclInit(const char *configPath) */
    aclError (*init)(const char *config_path);
    /* aclError aclrtGetDeviceCount(uint32_t *count) */
    aclError (*get_device_count)(uint32_t *count);
    /* aclError aclrtSetDevice(int32_t deviceId) */
    aclError (*set_device)(int32_t device_id);
    /* aclError aclrtGetCurrentContext(aclrtContext *context) */
    aclError (*get_current_context)(aclrtContext *context);
    /* aclError aclrtSetCurrentContext(aclrtContext context) */
    aclError (*set_current_context)(aclrtContext context);
    /* aclError aclrtCreateStream(aclrtStream *stream) */
    aclError (*create_stream)(aclrtStream *stream);
    /* aclError aclrtDestroyStream(aclrtStream stream) */
    aclError (*destroy_stream)(aclrtStream stream);
    /* aclError aclrtSynchronizeStream(aclrtStream stream) */
    aclError (*synchronize_stream)(aclrtStream stream);
    /* aclError aclrtCreateEvent(aclrtEvent *event) */
    aclError (*create_event)(aclrtEvent *event);
    /* aclError aclrtDestroyEvent(aclrtEvent event) */
    aclError (*destroy_event)(aclrtEvent event);
    /* aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) */
    aclError (*record_event)(aclrtEvent event, aclrtStream stream);
    /* aclError aclrtQueryEventStatus(aclrtEvent event,
     *                                aclrtEventRecordedStatus *status) */
    aclError (*query_event_status)(aclrtEvent event,
                                   aclrtEventRecordedStatus *status);
    /* aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
     *                           size_t count, aclrtMemcpyKind kind,
     *                           aclrtStream stream) */
    aclError (*memcpy_async)(void *dst, size_t dest_max, const void *src,
                             size_t count, aclrtMemcpyKind kind,
                             aclrtStream stream);
    /* aclError aclrtPointerGetAttributes(const void *ptr,
     *                                    aclrtPtrAttributes *attributes) */
    aclError (*pointer_get_attributes)(const void *ptr,
                                       aclrtPtrAttributes *attributes);
    /* aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer,
     *                                   int32_t deviceId,
     *                                   int32_t peerDeviceId) */
    aclError (*device_can_access_peer)(int32_t *can_access_peer,
                                       int32_t device_id,
                                       int32_t peer_device_id);
    /* aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId,
     *                                      uint32_t flags) */
    aclError (*device_enable_peer_access)(int32_t peer_device_id,
                                          uint32_t flags);
    /* aclError aclrtMallocHost(void **hostPtr, size_t size) */
    aclError (*malloc_host)(void **host_ptr, size_t size);
    /* aclError aclrtFreeHost(void *hostPtr) */
    aclError (*free_host)(void *host_ptr);

    /* Optional: older CANN releases lack them (NULL then). */
    /* aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size,
     *                                  char *key, size_t len,
     *                                  uint64_t flags) */
    aclError (*ipc_mem_get_export_key)(void *dev_ptr, size_t size, char *key,
                                       size_t len, uint64_t flags);
    /* aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid,
     *                                  size_t num) */
    aclError (*ipc_mem_set_import_pid)(const char *key, int32_t *pid,
                                       size_t num);
    /* aclError aclrtIpcMemImportByKey(void **devPtr, const char *key,
     *                                 uint64_t flags) */
    aclError (*ipc_mem_import_by_key)(void **dev_ptr, const char *key,
                                      uint64_t flags);
    /* aclError aclrtIpcMemClose(const char *key) */
    aclError (*ipc_mem_close)(const char *key);
    /* aclError aclrtDeviceGetBareTgid(int32_t *pid) */
    aclError (*device_get_bare_tgid)(int32_t *pid);
    /* aclError aclrtGetVersion(int32_t *majorVersion,
     *                          int32_t *minorVersion,
     *                          int32_t *patchVersion) */
    aclError (*get_version)(int32_t *major, int32_t *minor, int32_t *patch);
} ascend_acl_t;

/* The default runtime library name (found through the loader's path). */
#define ASCEND_ACL_DEFAULT "libascendcl.so"

/* Load the runtime once per process (path NULL: the default).  Returns
 * the table, or NULL with the reason in err.  A later call naming another
 * library fails: a process has one ACL runtime. */
const ascend_acl_t *ascend_acl_load(const char *path, char *err,
                                    size_t errlen);

/* "ACL_ERROR_RT_PARAM_INVALID" for the codes above, "" for others. */
const char *ascend_acl_strerror(aclError rc);

#endif
