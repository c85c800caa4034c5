/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: device memory between two engines of one process, through
 * the Ascend plugin over the emulated ACL runtime (test/emu_acl, a test
 * double whose device memory faults on any CPU access).
 *
 * CANN hixl's hixl_example_d2rd and hixl_example_d2rh run two engines in
 * one process.  A device runtime refuses a process the import of its own
 * IPC export, so the IPC path must see that the peer's memory is this
 * process' own and copy it in place (src/device/device_mem.c); from local
 * device memory the peer's host memory is reached the same way, which is
 * the only path when the staging pool is off (BufferPool "0:0").  Before
 * that, these transfers were UNSUPPORTED.
 *
 * A program of its own: it_device.c has the paths between processes.
 */
#include "config.h"
#include "dev_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB   (1024 * 1024)
#define SEED  0x5eedull

static hixl_engine_t *it_engine(const char *k1, const char *v1,
                                const char *k2, const char *v2)
{
    return hx_engine("127.0.0.1", "hixl.PluginDir", HX_PLUGIN_DIR,
                     "hixl.PluginRuntime", hx_acl_runtime_opt(), k1, v1, k2,
                     v2, NULL);
}

static hixl_transfer_op_desc_t it_desc(const void *local, uint64_t remote,
                                       size_t len)
{
    hixl_transfer_op_desc_t d = {(uintptr_t)local, (uintptr_t)remote, len};
    return d;
}

/* Two engines in one process, device to device (CANN hixl's
 * hixl_example_d2rd) and device to the peer's host memory (d2rh with
 * BufferPool "0:0"): the runtime refuses a process the import of its own
 * export, and no import is needed: the peer's memory is used in place.
 * The IPC path is forced and the staging pool is off, so nothing else can
 * carry these bytes. */
START_TEST(test_same_process)
{
    hixl_transfer_op_desc_t d[2];
    hixl_engine_t *a, *b;
    uint8_t *da, *db, *host, *hb;
    const char *bname;

    hx_use_tls(_i);
    b = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                  "hixl.PluginDir", HX_PLUGIN_DIR, "hixl.PluginRuntime",
                  hx_acl_runtime_opt(), "BufferPool", "0:0", NULL);
    a = it_engine("hixl.DevicePath", "ipc", "BufferPool", "0:0");
    bname = hixl_engine_name(b);
    hx_connect(a, bname);
    /* registered after the connect: announced to A in MEM_ADD */
    db   = hx_dev_alloc(2, 4 * MIB);
    hx_register_dev(b, db, 4 * MIB);
    da   = hx_dev_alloc(0, 4 * MIB);
    hx_register_dev(a, da, 4 * MIB);
    host = hx_alloc_pages(MIB);
    hx_register(a, host, MIB);

    /* WRITE: D2D (device 0 -> 2) and H2D, in one transfer */
    hx_dev_fill(da, 5, 2 * MIB + 3, SEED, 0);
    hx_pat_fill(host, MIB, SEED + 1, 0);
    d[0] = it_desc(da + 5, (uintptr_t)db + 77, 2 * MIB + 3);
    d[1] = it_desc(host, (uintptr_t)db + 3 * MIB, MIB);
    hx_transfer(a, bname, HIXL_WRITE, d, 2, 1);
    hx_dev_assert(db, 77, 2 * MIB + 3, SEED, 0, "WRITE D2D, same process");
    hx_dev_assert(db, 3 * MIB, MIB, SEED + 1, 0, "WRITE H2D, same process");

    /* READ: D2D (device 2 -> 0) and D2H */
    hx_dev_fill(db, 2 * MIB + 4096, 64 * 1024, SEED + 2, 0);
    memset(host, 0, MIB);
    d[0] = it_desc(da + 3 * MIB, (uintptr_t)db + 2 * MIB + 4096, 64 * 1024);
    d[1] = it_desc(host, (uintptr_t)db + 77, MIB);
    hx_transfer(a, bname, HIXL_READ, d, 2, 0);
    hx_dev_assert(da, 3 * MIB, 64 * 1024, SEED + 2, 0, "READ D2D");
    hx_pat_assert(host, MIB, SEED, 0, "READ D2H, same process");

    /* device here <-> host memory of the peer engine */
    hb = hx_alloc_pages(2 * MIB);
    hx_register(b, hb, 2 * MIB);
    d[0] = it_desc(da + 5, (uintptr_t)hb + 3, 2 * MIB - 3);
    hx_transfer(a, bname, HIXL_WRITE, d, 1, 1);
    hx_pat_assert(hb + 3, 2 * MIB - 3, SEED, 0, "WRITE to the peer's host");
    hx_pat_fill(hb, MIB, SEED + 3, 0);
    d[0] = it_desc(da + 2 * MIB, (uintptr_t)hb, MIB);
    hx_transfer(a, bname, HIXL_READ, d, 1, 0);
    hx_dev_assert(da, 2 * MIB, MIB, SEED + 3, 0, "READ from the peer's host");

    hx_ok(hixl_finalize(a));
    hx_ok(hixl_finalize(b));
    hx_dev_free(da);
    hx_dev_free(db);
    hx_free_pages(host, MIB);
    hx_free_pages(hb, 2 * MIB);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device_same_process");
    TCase *tc = hx_dev_tcase("same_process");

    tcase_add_loop_test(tc, test_same_process, 0, hx_tls_count);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
