/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loading the ACL runtime with dlopen.  One runtime per process: engines
 * opened later reuse it, so an application's own ACL calls and ours talk
 * to the same library instance (dlopen of an already loaded library
 * returns it).
 */
#define _GNU_SOURCE
#include "ascend_acl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t ascend_acl_lock = PTHREAD_MUTEX_INITIALIZER;
static ascend_acl_t    ascend_acl;
static char            ascend_acl_asked[256];   /* path of the first load */

typedef struct ascend_sym {
    const char *name;
    size_t      offset;
    int         required;
} ascend_sym_t;

#define SYM(_n, _m, _r) {_n, offsetof(ascend_acl_t, _m), _r}

static const ascend_sym_t ascend_syms[] = {
    SYM("aclInit", init, 1),
    SYM("aclrtGetDeviceCount", get_device_count, 1),
    SYM("aclrtSetDevice", set_device, 1),
    SYM("aclrtGetCurrentContext", get_current_context, 1),
    SYM("aclrtSetCurrentContext", set_current_context, 1),
    SYM("aclrtCreateStream", create_stream, 1),
    SYM("aclrtDestroyStream", destroy_stream, 1),
    SYM("aclrtSynchronizeStream", synchronize_stream, 1),
    SYM("aclrtCreateEvent", create_event, 1),
    SYM("aclrtDestroyEvent", destroy_event, 1),
    SYM("aclrtRecordEvent", record_event, 1),
    SYM("aclrtQueryEventStatus", query_event_status, 1),
    SYM("aclrtMemcpyAsync", memcpy_async, 1),
    SYM("aclrtPointerGetAttributes", pointer_get_attributes, 1),
    SYM("aclrtDeviceCanAccessPeer", device_can_access_peer, 1),
    SYM("aclrtDeviceEnablePeerAccess", device_enable_peer_access, 1),
    SYM("aclrtMallocHost", malloc_host, 1),
    SYM("aclrtFreeHost", free_host, 1),
    SYM("aclrtIpcMemGetExportKey", ipc_mem_get_export_key, 0),
    SYM("aclrtIpcMemSetImportPid", ipc_mem_set_import_pid, 0),
    SYM("aclrtIpcMemImportByKey", ipc_mem_import_by_key, 0),
    SYM("aclrtIpcMemClose", ipc_mem_close, 0),
    SYM("aclrtDeviceGetBareTgid", device_get_bare_tgid, 0),
    SYM("aclrtGetVersion", get_version, 0),
};

static int ascend_acl_resolve(ascend_acl_t *acl, char *err, size_t errlen)
{
    const ascend_sym_t *s;
    Dl_info info;
    void *fn, *any;
    size_t i;

    for (i = 0; i < sizeof(ascend_syms) / sizeof(ascend_syms[0]); ++i) {
        s  = &ascend_syms[i];
        fn = dlsym(acl->handle, s->name);
        if ((fn == NULL) && s->required) {
            snprintf(err, errlen, "%s has no %s (CANN too old?)", acl->path,
                     s->name);
            return -1;
        }
        /* function pointers are stored through their slot's address */
        memcpy((char*)acl + s->offset, &fn, sizeof(fn));
    }
    memcpy(&any, &acl->init, sizeof(any));
    if (dladdr(any, &info) && (info.dli_fname != NULL)) {
        snprintf(acl->path, sizeof(acl->path), "%s", info.dli_fname);
    }
    /* an IPC set is usable only whole */
    if ((acl->ipc_mem_get_export_key == NULL) ||
        (acl->ipc_mem_import_by_key == NULL) || (acl->ipc_mem_close == NULL)) {
        acl->ipc_mem_get_export_key = NULL;
        acl->ipc_mem_import_by_key  = NULL;
        acl->ipc_mem_close          = NULL;
    }
    return 0;
}

const ascend_acl_t *ascend_acl_load(const char *path, char *err,
                                    size_t errlen)
{
    const ascend_acl_t *result = NULL;
    ascend_acl_t acl;

    if ((path == NULL) || (*path == '\0')) {
        path = ASCEND_ACL_DEFAULT;
    }
    pthread_mutex_lock(&ascend_acl_lock);
    if (ascend_acl.handle != NULL) {
        if (strcmp(path, ascend_acl_asked)) {
            snprintf(err, errlen, "this process already loaded the ACL "
                     "runtime %s; cannot load %s too", ascend_acl.path, path);
        } else {
            result = &ascend_acl;
        }
        goto out;
    }
    memset(&acl, 0, sizeof(acl));
    acl.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (acl.handle == NULL) {
        snprintf(err, errlen, "%s", dlerror());
        goto out;
    }
    snprintf(acl.path, sizeof(acl.path), "%s", path);
    if (ascend_acl_resolve(&acl, err, errlen) != 0) {
        dlclose(acl.handle);
        goto out;
    }
    /* kept loaded for the life of the process: the application may share
     * it, and ACL does not support being unloaded and reloaded */
    ascend_acl = acl;
    snprintf(ascend_acl_asked, sizeof(ascend_acl_asked), "%s", path);
    result = &ascend_acl;
out:
    pthread_mutex_unlock(&ascend_acl_lock);
    return result;
}

const char *ascend_acl_strerror(aclError rc)
{
#define ASCEND_ERR(_c) case _c: return #_c
    switch (rc) {
    ASCEND_ERR(ACL_ERROR_INVALID_PARAM);
    ASCEND_ERR(ACL_ERROR_UNINITIALIZE);
    ASCEND_ERR(ACL_ERROR_REPEAT_INITIALIZE);
    ASCEND_ERR(ACL_ERROR_RT_PARAM_INVALID);
    ASCEND_ERR(ACL_ERROR_RT_INVALID_DEVICEID);
    ASCEND_ERR(ACL_ERROR_RT_CONTEXT_NULL);
    ASCEND_ERR(ACL_ERROR_RT_STREAM_CONTEXT);
    ASCEND_ERR(ACL_ERROR_RT_INVALID_HANDLE);
    ASCEND_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    ASCEND_ERR(ACL_ERROR_RT_MEMORY_ALLOCATION);
    ASCEND_ERR(ACL_ERROR_RT_NO_PERMISSION);
    }
#undef ASCEND_ERR
    return "";
}
