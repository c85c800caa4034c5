/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl: an EMULATED Ascend ACL runtime.  A TEST DOUBLE, not a driver.
 *
 * Built only by `make check` (test/Makefile.am) as test/emu_acl/.libs/
 * libascendcl.so, it is loaded by the Ascend memory plugin in place of
 * CANN's libascendcl.so when a test points hixl.PluginRuntime at it.  It
 * implements the subset of the ACL runtime API the plugin, the tests and
 * bench/put_bw use, with the same function names, argument orders, types,
 * flag values and error codes as CANN's documented API (acl_rt.h /
 * acl_base_rt.h of the CANN runtime; each prototype below names the
 * document it follows).  It moves no data through any accelerator and
 * proves nothing about real hardware; what it proves is that libhixl-ucx
 * drives the API correctly:
 *
 *  - "Device" memory from aclrtMalloc is a memfd mapped PROT_NONE at the
 *    address the caller gets: any CPU read or write of it faults, as a CPU
 *    access of real HBM would.  The runtime moves bytes through a second,
 *    private read-write mapping of the same memfd that only its copy
 *    functions use.  (Exception, on request: devices named in
 *    EMU_ACL_NIC_VISIBLE stand for HBM that an RDMA NIC can register; their
 *    memory is mapped read-write so that UCX's loopback transports can
 *    play the NIC.  Tests use it only for the NIC path.)
 *  - Several devices per process (EMU_ACL_DEVICE_COUNT, default 4), a
 *    current context per thread (aclrtSetDevice / aclrtSetCurrentContext),
 *    streams bound to their context.
 *  - aclrtMemcpyAsync is asynchronous: each stream has a worker thread that
 *    performs its copies in order, events recorded on a stream complete
 *    when the worker reaches them (EMU_ACL_COPY_DELAY_US delays every async
 *    copy, to widen ordering races in tests).  As documented for CANN, an
 *    async copy whose host side is not page-locked (not from
 *    aclrtMallocHost) completes before the call returns.
 *  - IPC: aclrtIpcMemGetExportKey returns a 64-character key naming the
 *    exporting process, the memfd and an export slot; another process
 *    imports it by opening /proc/<pid>/fd/<fd> and mapping the same pages.
 *    The slot table lives in a metadata page at the end of the memfd, so
 *    aclrtIpcMemSetImportPid whitelists and aclrtIpcMemClose are seen by
 *    importers in other processes.
 *  - Misuse returns the documented codes: NULL or zero arguments
 *    ACL_ERROR_INVALID_PARAM; an address outside every allocation or a copy
 *    kind that does not match the pointers ACL_ERROR_RT_PARAM_INVALID; a
 *    bad device ordinal ACL_ERROR_RT_INVALID_DEVICEID; no current context
 *    ACL_ERROR_RT_CONTEXT_NULL; a stream of another context
 *    ACL_ERROR_RT_STREAM_CONTEXT; a device operand the stream's device has
 *    no peer access to, or an importer not on the export's whitelist,
 *    ACL_ERROR_RT_NO_PERMISSION; an unknown or closed IPC key
 *    ACL_ERROR_RT_PARAM_INVALID; an unknown stream/event/context handle
 *    ACL_ERROR_RT_INVALID_HANDLE.  (Which code real CANN returns for some of
 *    these cases is not documented case by case; these choices are the
 *    emulator's and are listed here so tests can rely on them.)
 *
 * Environment: EMU_ACL_DEVICE_COUNT (1..16, default 4), EMU_ACL_NIC_VISIBLE
 * (bit mask of devices, default 0), EMU_ACL_COPY_DELAY_US (default 0).
 */
#ifndef EMU_ACL_H_
#define EMU_ACL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Types, as in CANN acl_base_rt.h / acl_rt.h. */
typedef int   aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtContext;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
    ACL_MEMCPY_DEFAULT
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P
} aclrtMemMallocPolicy;

typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE  = 1
} aclrtEventRecordedStatus;

typedef enum aclrtStreamStatus {
    ACL_STREAM_STATUS_COMPLETE  = 0,
    ACL_STREAM_STATUS_NOT_READY = 1
} aclrtStreamStatus;

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

/* Flag values, as in CANN acl_rt.h. */
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT                0x0UL
#define ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION 0x1UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT                0x0UL
#define ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS     0x1UL
#define EMU_ACL_IPC_KEY_LEN                               65

/* Error codes, as in CANN acl_base_rt.h and rt_error_codes.h. */
#define ACL_SUCCESS                    0
#define ACL_ERROR_INVALID_PARAM        100000
#define ACL_ERROR_UNINITIALIZE         100001
#define ACL_ERROR_REPEAT_INITIALIZE    100002
#define ACL_ERROR_REPEAT_FINALIZE      100037
#define ACL_ERROR_RT_PARAM_INVALID     107000
#define ACL_ERROR_RT_INVALID_DEVICEID  107001
#define ACL_ERROR_RT_CONTEXT_NULL      107002
#define ACL_ERROR_RT_STREAM_CONTEXT    107003
#define ACL_ERROR_RT_INVALID_HANDLE    107017
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_NO_PERMISSION     207006

/* acl.h: aclInit / aclFinalize */
aclError aclInit(const char *configPath);
aclError aclFinalize(void);

/* acl_rt.h: devices and contexts */
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);
aclError aclrtGetDevice(int32_t *deviceId);
aclError aclrtGetDeviceCount(uint32_t *count);
aclError aclrtGetCurrentContext(aclrtContext *context);
aclError aclrtSetCurrentContext(aclrtContext context);
aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId,
                                  int32_t peerDeviceId);
aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);
aclError aclrtDeviceGetBareTgid(int32_t *pid);
aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
                         int32_t *patchVersion);

/* acl_rt.h: memory */
aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMallocHost(void **hostPtr, size_t size);
aclError aclrtFreeHost(void *hostPtr);
aclError aclrtPointerGetAttributes(const void *ptr,
                                   aclrtPtrAttributes *attributes);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind);
aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value,
                     size_t count);

/* acl_rt.h: streams and events */
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status);
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src,
                          size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream);
aclError aclrtCreateEvent(aclrtEvent *event);
aclError aclrtDestroyEvent(aclrtEvent event);
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
aclError aclrtQueryEventStatus(aclrtEvent event,
                               aclrtEventRecordedStatus *status);
aclError aclrtSynchronizeEvent(aclrtEvent event);

/* acl_rt.h: IPC memory sharing */
aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key,
                                 size_t len, uint64_t flags);
aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);
aclError aclrtIpcMemImportByKey(void **devPtr, const char *key,
                                uint64_t flags);
aclError aclrtIpcMemClose(const char *key);

#ifdef __cplusplus
}
#endif

#endif
