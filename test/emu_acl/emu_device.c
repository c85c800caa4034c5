/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * emu_acl (test double): initialization, devices, per-thread contexts,
 * peer access.  Signatures follow CANN acl.h / acl_rt.h (aclInit,
 * aclrtSetDevice, aclrtGetCurrentContext, aclrtDeviceEnablePeerAccess...).
 */
#define _GNU_SOURCE
#include "emu_internal.h"

#include <unistd.h>

aclError aclInit(const char *configPath)
{
    aclError rc = ACL_SUCCESS;

    (void)configPath;
    emu_setup();
    pthread_mutex_lock(&emu.lock);
    if (emu.acl_inited) {
        rc = ACL_ERROR_REPEAT_INITIALIZE;
    }
    emu.acl_inited = 1;
    pthread_mutex_unlock(&emu.lock);
    return rc;
}

aclError aclFinalize(void)
{
    aclError rc = ACL_SUCCESS;

    emu_setup();
    pthread_mutex_lock(&emu.lock);
    if (!emu.acl_inited) {
        rc = ACL_ERROR_REPEAT_FINALIZE;
    }
    emu.acl_inited = 0;
    pthread_mutex_unlock(&emu.lock);
    return rc;
}

aclError aclrtGetDeviceCount(uint32_t *count)
{
    emu_setup();
    if (count == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    *count = (uint32_t)emu.ndev;
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId)
{
    emu_setup();
    if (!emu_device_valid(deviceId)) {
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    pthread_mutex_lock(&emu.lock);
    if (!emu.ctx_live[deviceId]) {
        emu.ctx[deviceId].magic  = EMU_CTX_MAGIC;
        emu.ctx[deviceId].device = deviceId;
        emu.ctx_live[deviceId]   = 1;
    }
    emu_cur = &emu.ctx[deviceId];
    pthread_mutex_unlock(&emu.lock);
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    emu_setup();
    if (!emu_device_valid(deviceId)) {
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    /* The default context stays: other threads may still use it. */
    if ((emu_cur != NULL) && (emu_cur->device == deviceId)) {
        emu_cur = NULL;
    }
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId)
{
    emu_setup();
    if (deviceId == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (emu_cur == NULL) {
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    *deviceId = emu_cur->device;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context)
{
    emu_setup();
    if (context == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (emu_cur == NULL) {
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    *context = emu_cur;
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context)
{
    emu_ctx_t *c = context;
    int i;

    emu_setup();
    if (c == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    for (i = 0; i < emu.ndev; ++i) {
        if ((c == &emu.ctx[i]) && emu.ctx_live[i]) {
            emu_cur = c;
            return ACL_SUCCESS;
        }
    }
    return ACL_ERROR_RT_INVALID_HANDLE;
}

aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId,
                                  int32_t peerDeviceId)
{
    emu_setup();
    if (canAccessPeer == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    if (!emu_device_valid(deviceId) || !emu_device_valid(peerDeviceId)) {
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    /* every pair of emulated devices is linked; a device is not its own
     * peer */
    *canAccessPeer = (deviceId != peerDeviceId);
    return ACL_SUCCESS;
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags)
{
    emu_setup();
    if (flags != 0) {
        return ACL_ERROR_INVALID_PARAM;   /* reserved, must be 0 */
    }
    if (emu_cur == NULL) {
        return ACL_ERROR_RT_CONTEXT_NULL;
    }
    if (!emu_device_valid(peerDeviceId) ||
        (peerDeviceId == emu_cur->device)) {
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    pthread_mutex_lock(&emu.lock);
    emu.peer[emu_cur->device][peerDeviceId] = 1;
    pthread_mutex_unlock(&emu.lock);
    return ACL_SUCCESS;
}

aclError aclrtDeviceGetBareTgid(int32_t *pid)
{
    if (pid == NULL) {
        return ACL_ERROR_INVALID_PARAM;
    }
    *pid = (int32_t)getpid();
    return ACL_SUCCESS;
}

aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion,
                         int32_t *patchVersion)
{
    if ((majorVersion == NULL) || (minorVersion == NULL) ||
        (patchVersion == NULL)) {
        return ACL_ERROR_INVALID_PARAM;
    }
    /* 0.0.x marks the emulator: no CANN release has that number */
    *majorVersion = 0;
    *minorVersion = 0;
    *patchVersion = 1;
    return ACL_SUCCESS;
}
