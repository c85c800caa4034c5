/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated ACL runtime (test/emu_acl, a test double) is itself tested
 * here, because the device tests are only worth what it enforces: device
 * memory faults on CPU access, async copies are really asynchronous,
 * misuse gets the documented error codes, IPC works across processes and
 * honours the pid whitelist and close.
 */
#include "config.h"
#include "dev_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (256 * 1024)

START_TEST(test_cpu_touch_faults)
{
    volatile uint8_t *p = hx_dev_alloc(0, LEN);
    int wstatus = 0;
    pid_t pid;

    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        (void)p[LEN / 2];   /* must not return */
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
    /* SIGSEGV; under AddressSanitizer its SEGV report ends in an abort */
    ck_assert_msg(WIFSIGNALED(wstatus) || (WIFEXITED(wstatus) &&
                                           (WEXITSTATUS(wstatus) != 0)),
                  "a CPU read of emulated device memory did not fault "
                  "(status 0x%x)", wstatus);
    /* ... while the runtime's copies reach it */
    hx_dev_fill((void*)p, 100, 4096, 7, 0);
    hx_dev_assert((void*)p, 100, 4096, 7, 0, "copied through the runtime");
    hx_dev_free((void*)p);
}
END_TEST

START_TEST(test_error_codes)
{
    const hx_acl_t *acl = hx_acl();
    aclrtContext c0, c1;
    aclrtStream s1;
    uint8_t host[64];
    void *d0, *d1, *p = NULL;
    char key[EMU_ACL_IPC_KEY_LEN];

    ck_assert_int_eq(acl->aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST),
                     ACL_ERROR_INVALID_PARAM);
    ck_assert_int_eq(acl->aclrtMalloc(&p, 16, ACL_MEM_MALLOC_HUGE_FIRST),
                     ACL_ERROR_RT_CONTEXT_NULL);   /* no device set */
    ck_assert_int_eq(acl->aclrtSetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
    d1 = hx_dev_alloc(1, LEN);
    ck_assert_int_eq(acl->aclrtGetCurrentContext(&c1), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtCreateStream(&s1), ACL_SUCCESS);
    d0 = hx_dev_alloc(0, LEN);
    ck_assert_int_eq(acl->aclrtGetCurrentContext(&c0), ACL_SUCCESS);

    /* bad pointer: a range that runs past the allocation, a kind that
     * does not match the pointers */
    ck_assert_int_eq(acl->aclrtMemcpy((uint8_t*)d0 + LEN - 8, 64, host, 64,
                                      ACL_MEMCPY_HOST_TO_DEVICE),
                     ACL_ERROR_RT_PARAM_INVALID);
    ck_assert_int_eq(acl->aclrtMemcpy(host, 64, d0, 64,
                                      ACL_MEMCPY_HOST_TO_DEVICE),
                     ACL_ERROR_RT_PARAM_INVALID);
    ck_assert_int_eq(acl->aclrtMemcpy(d0, 8, host, 64,
                                      ACL_MEMCPY_HOST_TO_DEVICE),
                     ACL_ERROR_INVALID_PARAM);   /* count > destMax */
    /* wrong device: a stream of device 1 used while device 0 is current,
     * and device 0 memory from device 1's stream without peer access */
    ck_assert_int_eq(acl->aclrtMemcpyAsync(d1, 64, host, 64,
                                           ACL_MEMCPY_HOST_TO_DEVICE, s1),
                     ACL_ERROR_RT_STREAM_CONTEXT);
    ck_assert_int_eq(acl->aclrtSetCurrentContext(c1), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtMemcpyAsync(d1, LEN, d0, LEN,
                                           ACL_MEMCPY_DEVICE_TO_DEVICE, s1),
                     ACL_ERROR_RT_NO_PERMISSION);
    ck_assert_int_eq(acl->aclrtDeviceEnablePeerAccess(0, 0), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtMemcpyAsync(d1, LEN, d0, LEN,
                                           ACL_MEMCPY_DEVICE_TO_DEVICE, s1),
                     ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtMemcpyAsync(host, 64, host + 1, 8,
                                           ACL_MEMCPY_HOST_TO_HOST, s1),
                     ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    ck_assert_int_eq(acl->aclrtSynchronizeStream(s1), ACL_SUCCESS);
    /* unknown key, bad handle */
    ck_assert_int_eq(acl->aclrtIpcMemImportByKey(&p, "emuacl-1-3-0-"
                                                 "00000000000000aa", 0),
                     ACL_ERROR_RT_PARAM_INVALID);
    ck_assert_int_eq(acl->aclrtIpcMemImportByKey(&p, "nonsense", 0),
                     ACL_ERROR_INVALID_PARAM);
    ck_assert_int_eq(acl->aclrtIpcMemClose("emuacl-1-3-0-00000000000000aa"),
                     ACL_ERROR_RT_PARAM_INVALID);
    ck_assert_int_eq(acl->aclrtIpcMemGetExportKey(host, 64, key, sizeof(key),
                                                  0),
                     ACL_ERROR_RT_PARAM_INVALID);   /* not device memory */
    ck_assert_int_eq(acl->aclrtSynchronizeStream((aclrtStream)host),
                     ACL_ERROR_RT_INVALID_HANDLE);
    ck_assert_int_eq(acl->aclrtDestroyStream(s1), ACL_SUCCESS);
    hx_dev_free(d0);
    hx_dev_free(d1);
}
END_TEST

START_TEST(test_async_completion)
{
    const hx_acl_t *acl;
    aclrtEventRecordedStatus st;
    aclrtStream s;
    aclrtEvent e;
    uint8_t *pinned;
    void *d;

    /* each async copy sleeps 300 ms in the stream's worker: a query right
     * after posting must see it unfinished */
    setenv("EMU_ACL_COPY_DELAY_US", "300000", 1);
    acl = hx_acl();
    d   = hx_dev_alloc(2, LEN);
    hx_dev_fill(d, 0, LEN, 11, 0);
    ck_assert_int_eq(acl->aclrtMallocHost((void**)&pinned, LEN), ACL_SUCCESS);
    memset(pinned, 0, LEN);
    ck_assert_int_eq(acl->aclrtCreateStream(&s), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtCreateEvent(&e), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtMemcpyAsync(pinned, LEN, d, LEN,
                                           ACL_MEMCPY_DEVICE_TO_HOST, s),
                     ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtRecordEvent(e, s), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtQueryEventStatus(e, &st), ACL_SUCCESS);
    ck_assert_int_eq(st, ACL_EVENT_RECORDED_STATUS_NOT_READY);
    ck_assert_int_eq(acl->aclrtSynchronizeStream(s), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtQueryEventStatus(e, &st), ACL_SUCCESS);
    ck_assert_int_eq(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
    hx_pat_assert(pinned, LEN, 11, 0, "async D2H into page-locked memory");
    ck_assert_int_eq(acl->aclrtDestroyEvent(e), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtDestroyStream(s), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtFreeHost(pinned), ACL_SUCCESS);
    hx_dev_free(d);
}
END_TEST

/* Exporter (this process) and importer (a child), sequenced by a pipe. */
START_TEST(test_ipc_across_processes)
{
    const hx_acl_t *acl;
    char key[EMU_ACL_IPC_KEY_LEN];
    int go[2], done[2], wstatus = 0;
    int32_t pid;
    void *d, *imp = NULL;
    char c = 0;
    pid_t child;

    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(done), 0);
    child = fork();   /* before this process starts the runtime */
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int rc;

        close(go[1]);
        close(done[0]);
        acl = hx_acl();
        acl->aclrtSetDevice(3);
        if ((read(go[0], key, sizeof(key)) != sizeof(key)) ||
            (acl->aclrtIpcMemImportByKey(&imp, key, 0) !=
             ACL_ERROR_RT_NO_PERMISSION)) {
            _exit(10);   /* not whitelisted yet */
        }
        if (write(done[1], &c, 1) != 1) {
            _exit(11);
        }
        if (read(go[0], &c, 1) != 1) {
            _exit(12);
        }
        rc = acl->aclrtIpcMemImportByKey(&imp, key, 0);
        if ((rc != ACL_SUCCESS) ||
            (hx_dev_check(imp, 4096, LEN - 4096, 21, 4096, key,
                          sizeof(key)) != 0)) {
            _exit(13);   /* sees the exporter's bytes */
        }
        hx_dev_fill(imp, 0, 4096, 22, 0);   /* and writes into them */
        if ((acl->aclrtIpcMemClose(key) != ACL_SUCCESS) ||
            (write(done[1], &c, 1) != 1)) {
            _exit(14);
        }
        _exit(0);
    }
    close(go[0]);     /* so that a failed child reads as EOF here */
    close(done[1]);
    acl = hx_acl();
    d   = hx_dev_alloc(3, LEN);
    hx_dev_fill(d, 0, LEN, 21, 0);
    ck_assert_int_eq(acl->aclrtIpcMemGetExportKey(d, LEN, key, sizeof(key),
                     ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT), ACL_SUCCESS);
    ck_assert_int_eq(write(go[1], key, sizeof(key)), (ssize_t)sizeof(key));
    if (read(done[0], &c, 1) != 1) {
        waitpid(child, &wstatus, 0);
        ck_abort_msg("importer failed at step %d", WEXITSTATUS(wstatus));
    }
    pid = (int32_t)child;
    ck_assert_int_eq(acl->aclrtIpcMemSetImportPid(key, &pid, 1), ACL_SUCCESS);
    ck_assert_int_eq(write(go[1], &c, 1), 1);
    (void)!read(done[0], &c, 1);   /* EOF when it failed: see its status */
    ck_assert_int_eq(waitpid(child, &wstatus, 0), child);
    ck_assert_msg(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0),
                  "importer failed at step %d", WEXITSTATUS(wstatus));
    hx_dev_assert(d, 0, 4096, 22, 0, "written by the importer");
    /* closed by the exporter: the key is dead */
    ck_assert_int_eq(acl->aclrtIpcMemClose(key), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtIpcMemClose(key), ACL_ERROR_RT_PARAM_INVALID);
    hx_dev_free(d);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("emu_acl");
    TCase *tc = hx_dev_tcase("emulated runtime");

    tcase_add_test(tc, test_cpu_touch_faults);
    tcase_add_test(tc, test_error_codes);
    tcase_add_test(tc, test_async_completion);
    tcase_add_test(tc, test_ipc_across_processes);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
