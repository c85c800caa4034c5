/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: device memory between two processes, through the Ascend
 * plugin over the emulated ACL runtime (test/emu_acl, a test double whose
 * device memory faults on any CPU access: a CPU touch of device memory
 * anywhere in the library is a crash here, never a silent pass).
 *
 * Paths and the tests that cover them (device.h):
 *   IPC   (same node: import + one device copy)  test_ipc_host_device,
 *         test_ipc_device_device, test_batch_mixed, test_layer_flush,
 *         test_notify_after_data
 *   UCX   (both sides NIC-registered)             test_nic_forced
 *   STAGE (pipelined through BufferPool)          test_staging_auto,
 *         test_staging_forced, test_batch_mixed, test_layer_flush,
 *         test_notify_after_data
 * and the refusals: test_unsupported_and_invalid, test_plugin_absent,
 * test_runtime_absent; test_revoke_device_region for deregistration;
 * test_plugin_listed for hixl_plugin_print (hixl_info).
 *
 * Every target region is registered after the initiator connected, so
 * device regions always reach the peer through a MEM_ADD announcement.
 */
#include "config.h"
#include "dev_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB   (1024 * 1024)
#define SEED  0x5eedull

/* Emulated devices whose memory UCX may touch (they stand in for HBM a
 * NIC can register): device 3 only. */
#define NIC_DEV      3
#define NIC_DEV_MASK "0x8"

static hixl_engine_t *it_engine(const char *k1, const char *v1,
                                const char *k2, const char *v2)
{
    return hx_engine("127.0.0.1", "hixl.PluginDir", HX_PLUGIN_DIR,
                     "hixl.PluginRuntime", hx_acl_runtime_opt(),
                     k1 ? k1 : "hixl.LogLevel", k1 ? v1 : "warn",
                     k2 ? k2 : "hixl.LogLevel", k2 ? v2 : "warn", NULL);
}

static hixl_transfer_op_desc_t it_desc(const void *local, uint64_t remote,
                                       size_t len)
{
    hixl_transfer_op_desc_t d = {(uintptr_t)local, (uintptr_t)remote, len};
    return d;
}

/* ---- IPC path ----------------------------------------------------------- */

/* Host memory here <-> device memory of the peer: H2D and D2H copies into
 * and out of its imported HBM. */
START_TEST(test_ipc_host_device)
{
    hx_dev_target_t t;
    hixl_transfer_op_desc_t d;
    hixl_engine_t *e;
    uint8_t *host;
    int r;

    hx_dev_target_start(&t, NULL);
    e = it_engine(NULL, NULL, NULL, NULL);
    hx_connect(e, t.name);
    r    = hx_dev_target_region(&t, 1, 4 * MIB);
    host = hx_alloc_pages(4 * MIB);
    hx_register(e, host, 4 * MIB);

    hx_pat_fill(host + 3, MIB + 5, SEED, 0);
    d = it_desc(host + 3, t.addr[r] + 7, MIB + 5);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 0);
    hx_dev_target_verify(&t, r, 7, MIB + 5, SEED, 0);

    hx_dev_target_fill(&t, r, 64 * 1024, MIB, SEED + 1, 0);
    d = it_desc(host + 2 * MIB, t.addr[r] + 64 * 1024, MIB);
    hx_transfer(e, t.name, HIXL_READ, &d, 1, 1);
    hx_pat_assert(host + 2 * MIB, MIB, SEED + 1, 0, "READ of device memory");

    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_free_pages(host, 4 * MIB);
}
END_TEST

/* Device memory here <-> device memory of the peer, on another device
 * (peer access) and on the same device number. */
START_TEST(test_ipc_device_device)
{
    hixl_transfer_op_desc_t d[2];
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *dev;
    int r2, r0;

    hx_dev_target_start(&t, NULL);
    e = it_engine(NULL, NULL, NULL, NULL);
    hx_connect(e, t.name);
    r2  = hx_dev_target_region(&t, 2, 4 * MIB);
    r0  = hx_dev_target_region(&t, 0, MIB);
    dev = hx_dev_alloc(0, 8 * MIB);
    hx_register_dev(e, dev, 8 * MIB);

    hx_dev_fill(dev, 13, 2 * MIB + 3, SEED, 0);
    hx_dev_fill(dev, 4 * MIB, 4096, SEED + 2, 0);
    d[0] = it_desc(dev + 13, t.addr[r2] + 101, 2 * MIB + 3);
    d[1] = it_desc(dev + 4 * MIB, t.addr[r0], 4096);
    hx_transfer(e, t.name, HIXL_WRITE, d, 2, 1);
    hx_dev_target_verify(&t, r2, 101, 2 * MIB + 3, SEED, 0);
    hx_dev_target_verify(&t, r0, 0, 4096, SEED + 2, 0);

    hx_dev_target_fill(&t, r2, MIB, MIB + 9, SEED + 3, 0);
    d[0] = it_desc(dev + 5 * MIB + 1, t.addr[r2] + MIB, MIB + 9);
    hx_transfer(e, t.name, HIXL_READ, d, 1, 0);
    hx_dev_assert(dev, 5 * MIB + 1, MIB + 9, SEED + 3, 0, "READ D2D");

    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

/* ---- staging path ------------------------------------------------------- */

/* Device memory here <-> host memory of the peer: the only way is staging
 * (auto picks it), over every transport. */
START_TEST(test_staging_auto)
{
    hixl_transfer_op_desc_t d;
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *dev;
    int r;

    hx_use_tls(_i);
    hx_dev_target_start(&t, NULL);
    e = it_engine("BufferPool", "3:1", NULL, NULL);
    hx_connect(e, t.name);
    r   = hx_dev_target_region(&t, -1, 8 * MIB);
    dev = hx_dev_alloc(1, 8 * MIB);
    hx_register_dev(e, dev, 8 * MIB);

    /* 3 buffers of 1 MiB for 5 MiB and change: chunks overlap, buffers
     * are reused, the last chunk is short */
    hx_dev_fill(dev, 5, 5 * MIB + 77, SEED, 0);
    d = it_desc(dev + 5, t.addr[r] + 11, 5 * MIB + 77);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 1);
    hx_dev_target_verify(&t, r, 11, 5 * MIB + 77, SEED, 0);

    hx_dev_target_fill(&t, r, 6 * MIB, 2 * MIB - 3, SEED + 1, 0);
    d = it_desc(dev + 6 * MIB, t.addr[r] + 6 * MIB, 2 * MIB - 3);
    hx_transfer(e, t.name, HIXL_READ, &d, 1, 0);
    hx_dev_assert(dev, 6 * MIB, 2 * MIB - 3, SEED + 1, 0, "staged READ");

    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

/* hixl.DevicePath=staging even where IPC would do: into the peer's host
 * memory and into its NIC-registered device memory (the UCX part of the
 * composite key), and back. */
START_TEST(test_staging_forced)
{
    hixl_transfer_op_desc_t d[2];
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *dev;
    int rh, rd;

    hx_use_tls(_i);
    setenv("EMU_ACL_NIC_VISIBLE", NIC_DEV_MASK, 1);
    hx_dev_target_start(&t, "hixl.DeviceNicReg", "1", NULL);
    e = it_engine("hixl.DevicePath", "staging", "BufferPool", "2:1");
    hx_connect(e, t.name);
    rh  = hx_dev_target_region(&t, -1, 4 * MIB);
    rd  = hx_dev_target_region(&t, NIC_DEV, 4 * MIB);
    dev = hx_dev_alloc(0, 8 * MIB);   /* not NIC-visible: faults on touch */
    hx_register_dev(e, dev, 8 * MIB);

    hx_dev_fill(dev, 0, 3 * MIB + 1, SEED, 0);
    hx_dev_fill(dev, 4 * MIB, 2 * MIB + 7, SEED + 1, 0);
    d[0] = it_desc(dev, t.addr[rh] + 1, 3 * MIB + 1);
    d[1] = it_desc(dev + 4 * MIB, t.addr[rd] + 3, 2 * MIB + 7);
    hx_transfer(e, t.name, HIXL_WRITE, d, 2, 1);
    hx_dev_target_verify(&t, rh, 1, 3 * MIB + 1, SEED, 0);
    hx_dev_target_verify(&t, rd, 3, 2 * MIB + 7, SEED + 1, 0);

    hx_dev_fill(dev, 0, 8 * MIB, 0, 0);   /* wipe, then read both back */
    d[0] = it_desc(dev + 2 * MIB, t.addr[rh] + 1, 3 * MIB + 1);
    d[1] = it_desc(dev + 5 * MIB + 4096, t.addr[rd] + 3, 2 * MIB + 7);
    hx_transfer(e, t.name, HIXL_READ, d, 2, 0);
    hx_dev_assert(dev, 2 * MIB, 3 * MIB + 1, SEED, 0, "staged READ (host)");
    hx_dev_assert(dev, 5 * MIB + 4096, 2 * MIB + 7, SEED + 1, 0,
                  "staged READ (device)");

    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

/* ---- NIC path ----------------------------------------------------------- */

/* hixl.DevicePath=nic: both regions NIC-registered (ucp_mem_map of device
 * memory), moved by ucp_put_nbx / ucp_get_nbx alone. */
START_TEST(test_nic_forced)
{
    hixl_transfer_op_desc_t d;
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *dev;
    int r;

    hx_use_tls(_i);
    setenv("EMU_ACL_NIC_VISIBLE", NIC_DEV_MASK, 1);
    hx_dev_target_start(&t, "hixl.DeviceNicReg", "1", NULL);
    e = it_engine("hixl.DevicePath", "nic", "hixl.DeviceNicReg", "1");
    hx_connect(e, t.name);
    r   = hx_dev_target_region(&t, NIC_DEV, 4 * MIB);
    dev = hx_dev_alloc(NIC_DEV, 4 * MIB);
    hx_register_dev(e, dev, 4 * MIB);

    hx_dev_fill(dev, 9, 2 * MIB, SEED, 0);
    d = it_desc(dev + 9, t.addr[r] + 17, 2 * MIB);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 1);
    hx_dev_target_verify(&t, r, 17, 2 * MIB, SEED, 0);

    hx_dev_target_fill(&t, r, 3 * MIB, 12345, SEED + 1, 0);
    d = it_desc(dev + 3 * MIB, t.addr[r] + 3 * MIB, 12345);
    hx_transfer(e, t.name, HIXL_READ, &d, 1, 0);
    hx_dev_assert(dev, 3 * MIB, 12345, SEED + 1, 0, "NIC READ");

    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

/* ---- batches ------------------------------------------------------------ */

/* One transfer of 64 descriptors mixing every pairing: host->device (IPC
 * H2D), device->device (IPC D2D), device->host (staging) and host->host
 * (plain UCX), then all of it read back in one transfer. */
START_TEST(test_batch_mixed)
{
    enum { N = 64, CH = 40000 };
    hixl_transfer_op_desc_t d[N];
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *host, *dev;
    int                     remote_dev, rhost, i;
    uint64_t off;

    hx_use_tls(_i);
    hx_dev_target_start(&t, NULL);
    e = it_engine("BufferPool", "4:1", NULL, NULL);
    hx_connect(e, t.name);
    remote_dev = hx_dev_target_region(&t, 2, N * CH);
    rhost = hx_dev_target_region(&t, -1, N * CH);
    host  = hx_alloc_pages(2 * N * CH);
    dev   = hx_dev_alloc(1, 2 * N * CH);
    hx_register(e, host, 2 * N * CH);
    hx_register_dev(e, dev, 2 * N * CH);
    hx_pat_fill(host, N * CH, SEED, 0);
    hx_dev_fill(dev, 0, N * CH, SEED, 0);

    for (i = 0; i < N; ++i) {
        off = (uint64_t)i * CH;
        switch (i % 4) {
        case 0:
            d[i] = it_desc(host + off, t.addr[remote_dev] + off, CH - i);
            break;
        case 1:
            d[i] = it_desc(dev + off, t.addr[remote_dev] + off, CH - i);
            break;
        case 2: d[i] = it_desc(dev + off, t.addr[rhost] + off, CH - i); break;
        case 3: d[i] = it_desc(host + off, t.addr[rhost] + off, CH - i); break;
        }
    }
    hx_transfer(e, t.name, HIXL_WRITE, d, N, 1);
    for (i = 0; i < N; ++i) {
        off = (uint64_t)i * CH;
        hx_dev_target_verify(&t, ((i % 4) < 2) ? remote_dev : rhost, off,
                             CH - i, SEED, off);
    }
    /* read back, into the other half of both local buffers */
    for (i = 0; i < N; ++i) {
        d[i].local_addr += N * CH;
    }
    hx_transfer(e, t.name, HIXL_READ, d, N, 0);
    for (i = 0; i < N; ++i) {
        off = (uint64_t)i * CH;
        if ((i % 4 == 0) || (i % 4 == 3)) {
            hx_pat_assert(host + N * CH + off, CH - i, SEED, off,
                          "batched READ into host memory");
        } else {
            hx_dev_assert(dev, N * CH + off, CH - i, SEED, off,
                          "batched READ into device memory");
        }
    }
    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
    hx_free_pages(host, 2 * N * CH);
}
END_TEST

/* ---- ordering ----------------------------------------------------------- */

/* Layer signals must not overtake device copies or staged chunks.  Every
 * async copy of the emulator is delayed, so a signal sent after the UCX
 * flush alone would be seen long before the bytes. */
START_TEST(test_layer_flush)
{
    enum { LAYERS = 6, LEN = 768 * 1024 };
    hixl_transfer_op_desc_t d;
    hx_dev_target_t t;
    hx_dev_watch_t w;
    hixl_req_t req[LAYERS];
    hixl_engine_t *e;
    uint8_t *dev;
    char msg[1024];
    int                     remote_dev, rhost, l;

    hx_use_tls(_i);
    setenv("EMU_ACL_COPY_DELAY_US", "20000", 1);
    hx_dev_target_start(&t, NULL);
    e = it_engine("BufferPool", "2:1", NULL, NULL);
    hx_connect(e, t.name);
    remote_dev = hx_dev_target_region(&t, 1, LAYERS * LEN);
    rhost = hx_dev_target_region(&t, -1, LAYERS * LEN);
    dev   = hx_dev_alloc(0, LAYERS * LEN);
    hx_register_dev(e, dev, LAYERS * LEN);
    hx_dev_fill(dev, 0, LAYERS * LEN, SEED, 0);

    for (l = 0; l < LAYERS; ++l) {
        /* even layers into device memory (IPC), odd into host (staging) */
        w.region = (l % 2) ? rhost : remote_dev;
        w.off    = (uint64_t)l * LEN;
        w.len    = LEN;
        w.seed   = SEED;
        w.idx    = (uint64_t)l * LEN;
        hx_dev_target_wait_layer(&t, hixl_engine_name(e), 7, 1, (uint32_t)l,
                                 &w);
        d = it_desc(dev + w.off, t.addr[w.region] + w.off, LEN);
        hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, NULL,
                                  &req[l]));
        hx_ok(hixl_flush_layer(e, t.name, 7, 1, (uint32_t)l));
        ck_assert_msg(hx_dev_target_result(&t, msg, sizeof(msg)) == 0,
                      "layer %d [%s]: %s", l, hx_tls_label(), msg);
    }
    for (l = 0; l < LAYERS; ++l) {
        ck_assert_int_eq(hx_wait_req(e, req[l], NULL), HIXL_TRANSFER_COMPLETED);
    }
    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

/* A per-transfer notify arrives only after its device copies landed, on
 * the IPC and on the staging path. */
START_TEST(test_notify_after_data)
{
    enum { LEN = 3 * MIB };
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hx_dev_target_t t;
    hx_dev_watch_t w;
    hixl_req_t req;
    hixl_engine_t *e;
    uint8_t *dev;
    char msg[1024], name[32];
    int r[2], k;

    setenv("EMU_ACL_COPY_DELAY_US", "20000", 1);
    hx_dev_target_start(&t, NULL);
    e = it_engine("BufferPool", "2:1", NULL, NULL);
    hx_connect(e, t.name);
    r[0] = hx_dev_target_region(&t, 3, LEN);    /* IPC */
    r[1] = hx_dev_target_region(&t, -1, LEN);   /* staging */
    dev  = hx_dev_alloc(2, LEN);
    hx_register_dev(e, dev, LEN);
    hx_dev_fill(dev, 0, LEN, SEED, 0);

    for (k = 0; k < 2; ++k) {
        snprintf(name, sizeof(name), "done-%d", k);
        w.region = r[k];
        w.off    = 0;
        w.len    = LEN;
        w.seed   = SEED;
        w.idx    = 0;
        hx_dev_target_wait_notify(&t, name, &w);
        memset(&args, 0, sizeof(args));
        args.field_mask  = HIXL_TRANSFER_ARG_NOTIFY;
        args.notify.name = name;
        d = it_desc(dev, t.addr[r[k]], LEN);
        hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req));
        ck_assert_msg(hx_dev_target_result(&t, msg, sizeof(msg)) == 0,
                      "%s: %s", name, msg);
        ck_assert_int_eq(hx_wait_req(e, req, NULL), HIXL_TRANSFER_COMPLETED);
    }
    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

/* The peer dies while staged chunks and IPC copies to it are in flight:
 * the requests end FAILED within their timeout (nothing hangs on a UCX
 * callback the forced close may never deliver), the engine finalizes. */
START_TEST(test_peer_dies_mid_transfer)
{
    enum { LEN = 8 * MIB };
    hixl_transfer_op_desc_t d;
    hixl_transfer_args_t args;
    hixl_transfer_status_t xs;
    hixl_status_t st;
    hx_dev_target_t t;
    hixl_req_t req[2];
    hixl_engine_t *e;
    uint8_t *dev;
    int rh, rd, k;

    setenv("EMU_ACL_COPY_DELAY_US", "50000", 1);   /* 8 chunks: 400 ms */
    hx_dev_target_start(&t, NULL);
    e = it_engine("BufferPool", "2:1", NULL, NULL);
    hx_connect(e, t.name);
    rh  = hx_dev_target_region(&t, -1, LEN);
    rd  = hx_dev_target_region(&t, 1, LEN);
    dev = hx_dev_alloc(0, LEN);
    hx_register_dev(e, dev, LEN);
    memset(&args, 0, sizeof(args));
    args.field_mask = HIXL_TRANSFER_ARG_TIMEOUT;
    args.timeout_ms = HX_OP_TIMEOUT_MS;
    d = it_desc(dev, t.addr[rh], LEN);
    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req[0]));
    d = it_desc(dev, t.addr[rd], LEN);
    hx_ok(hixl_transfer_async(e, t.name, HIXL_WRITE, &d, 1, &args, &req[1]));
    hx_dev_target_kill(&t);
    for (k = 0; k < 2; ++k) {
        xs = hx_wait_req(e, req[k], &st);
        /* the IPC copy may well have landed before the peer was noticed
         * gone; the staged one cannot have */
        ck_assert_msg((xs == HIXL_TRANSFER_FAILED) ||
                      ((k == 1) && (xs == HIXL_TRANSFER_COMPLETED)),
                      "request %d: transfer status %d (%s)", k, (int)xs,
                      hixl_last_error());
    }
    hx_ok(hixl_finalize(e));
    hx_dev_free(dev);
}
END_TEST

/* ---- refusals ----------------------------------------------------------- */

START_TEST(test_unsupported_and_invalid)
{
    hixl_transfer_op_desc_t d[2];
    hixl_mem_desc_t md;
    hixl_mem_handle_t h;
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *dev, *host;
    void *p;
    int rd, rh;

    hx_dev_target_start(&t, NULL);
    e = it_engine("hixl.DevicePath", "ipc", NULL, NULL);
    hx_connect(e, t.name);
    rd   = hx_dev_target_region(&t, 1, MIB);
    rh   = hx_dev_target_region(&t, -1, MIB);
    dev  = hx_dev_alloc(0, 2 * MIB);
    host = hx_alloc_pages(MIB);
    hx_dev_target_fill(&t, rd, 0, 4096, SEED + 9, 0);

    /* host memory is not device memory: the plugin says what it is */
    md.addr = (uintptr_t)host;
    md.len  = MIB;
    hx_expect(hixl_register_mem(e, &md, HIXL_MEM_DEVICE, &h),
              HIXL_UNSUPPORTED, "not device memory");
    /* a region running off the end of its allocation */
    md.addr = (uintptr_t)dev + MIB;
    md.len  = 2 * MIB;
    hx_expect(hixl_register_mem(e, &md, HIXL_MEM_DEVICE, &h),
              HIXL_UNSUPPORTED, "one device");
    hx_expect(hixl_alloc_mem(e, MIB, HIXL_MEM_DEVICE, &p, &h),
              HIXL_UNSUPPORTED, "aclrtMalloc");

    /* half of it registered: the other half is an unregistered address */
    hx_register_dev(e, dev, MIB);
    d[0] = it_desc(dev, t.addr[rd], 4096);
    d[1] = it_desc(dev + MIB + 4096, t.addr[rd] + 4096, 4096);
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, d, 2,
                                 HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 1: local range");
    /* forced IPC cannot reach the peer's host memory */
    d[1] = it_desc(dev + 4096, t.addr[rh], 4096);
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, d, 2,
                                 HX_OP_TIMEOUT_MS),
              HIXL_UNSUPPORTED, "descriptor 1: no path");
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, d + 1, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_UNSUPPORTED, "ipc: IPC reaches only remote device memory");
    /* nothing was posted: the first descriptor's target is untouched */
    hx_dev_target_verify(&t, rd, 0, 4096, SEED + 9, 0);

    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
    hx_free_pages(host, MIB);
}
END_TEST

/* No plugin: DEVICE registration is UNSUPPORTED and says why. */
START_TEST(test_plugin_absent)
{
    hixl_mem_desc_t md;
    hixl_mem_handle_t h;
    hixl_engine_t *e;
    char dir[] = "/tmp/hixl_noplugin_XXXXXX";
    uint8_t *dev;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    dev = hx_dev_alloc(0, MIB);
    md.addr = (uintptr_t)dev;
    md.len  = MIB;
    e = hx_engine("127.0.0.1", "hixl.PluginDir", dir, NULL);
    /* an installed copy of the plugin would still be found after the
     * empty directory; the message names a plugin problem either way */
    hx_expect(hixl_register_mem(e, &md, HIXL_MEM_DEVICE, &h),
              HIXL_UNSUPPORTED, "memory-type plugin");
    hx_ok(hixl_finalize(e));
    e = hx_engine("127.0.0.1", "hixl.Plugins", "none", NULL);
    hx_expect(hixl_register_mem(e, &md, HIXL_MEM_DEVICE, &h),
              HIXL_UNSUPPORTED, "hixl.Plugins=none");
    hx_ok(hixl_finalize(e));
    rmdir(dir);
    hx_dev_free(dev);
}
END_TEST

/* The plugin is there but its runtime is not: it loads, says so, and
 * device registration is refused with that reason. */
START_TEST(test_runtime_absent)
{
    hixl_option_t o[2] = {{"hixl.PluginDir", HX_PLUGIN_DIR},
                          {"hixl.PluginRuntime",
                           "ascend=/nonexistent/libascendcl.so"}};
    hixl_mem_desc_t md = {(uintptr_t)&o, sizeof(o)};
    hixl_mem_handle_t h;
    hixl_engine_t *e;
    char *out = NULL;
    size_t outlen = 0;
    FILE *f;

    f = open_memstream(&out, &outlen);
    hx_ok(hixl_plugin_print(f, o, 2));
    fclose(f);
    ck_assert_msg(strstr(out, "ascend") && strstr(out, "runtime NOT found") &&
                  strstr(out, "/nonexistent/libascendcl.so"),
                  "hixl_plugin_print: %s", out);
    free(out);
    hx_ok(hixl_initialize("127.0.0.1", o, 2, &e));
    hx_expect(hixl_register_mem(e, &md, HIXL_MEM_DEVICE, &h),
              HIXL_UNSUPPORTED, "ACL runtime is unavailable");
    hx_ok(hixl_finalize(e));
}
END_TEST

/* What hixl_info prints: the plugin and the runtime it found. */
START_TEST(test_plugin_listed)
{
    hixl_option_t o[2] = {{"hixl.PluginDir", HX_PLUGIN_DIR},
                          {"hixl.PluginRuntime", NULL}};
    char *out = NULL;
    size_t outlen = 0;
    FILE *f;

    o[1].value = hx_acl_runtime_opt();
    f = open_memstream(&out, &outlen);
    hx_ok(hixl_plugin_print(f, o, 2));
    fclose(f);
    ck_assert_msg(strstr(out, "hixl_mem_ascend.so") &&
                  strstr(out, "runtime found") &&
                  strstr(out, HX_EMU_ACL_LIB) && strstr(out, "IPC yes"),
                  "hixl_plugin_print: %s", out);
    free(out);
}
END_TEST

/* The peer deregisters a device region this engine imported: the revoke
 * completes (our import is closed first), later descriptors are refused. */
START_TEST(test_revoke_device_region)
{
    hixl_transfer_op_desc_t d;
    hx_dev_target_t t;
    hixl_engine_t *e;
    uint8_t *dev;
    int r;

    hx_dev_target_start(&t, NULL);
    e = it_engine(NULL, NULL, NULL, NULL);
    hx_connect(e, t.name);
    r   = hx_dev_target_region(&t, 1, MIB);
    dev = hx_dev_alloc(1, MIB);
    hx_register_dev(e, dev, MIB);
    hx_dev_fill(dev, 0, MIB, SEED, 0);
    d = it_desc(dev, t.addr[r], MIB);
    hx_transfer(e, t.name, HIXL_WRITE, &d, 1, 0);
    hx_dev_target_verify(&t, r, 0, MIB, SEED, 0);
    hx_dev_target_deregister(&t, r);
    hx_expect(hixl_transfer_sync(e, t.name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS),
              HIXL_PARAM_INVALID, "descriptor 0: remote range");
    hx_ok(hixl_finalize(e));
    hx_dev_target_stop(&t);
    hx_dev_free(dev);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("device");
    TCase *ipc = hx_dev_tcase("ipc");
    TCase *stage = hx_dev_tcase("staging");
    TCase *nic = hx_dev_tcase("nic");
    TCase *order = hx_dev_tcase("ordering");
    TCase *refuse = hx_dev_tcase("refusals");

    tcase_add_test(ipc, test_ipc_host_device);
    tcase_add_test(ipc, test_ipc_device_device);
    tcase_add_test(ipc, test_revoke_device_region);
    tcase_add_loop_test(stage, test_staging_auto, 0, hx_tls_count);
    tcase_add_loop_test(stage, test_staging_forced, 0, hx_tls_count);
    tcase_add_loop_test(stage, test_batch_mixed, 0, hx_tls_count);
    tcase_add_loop_test(nic, test_nic_forced, 0, hx_tls_count);
    tcase_add_loop_test(order, test_layer_flush, 0, hx_tls_count);
    tcase_add_test(order, test_notify_after_data);
    tcase_add_test(order, test_peer_dies_mid_transfer);
    tcase_add_test(refuse, test_unsupported_and_invalid);
    tcase_add_test(refuse, test_plugin_absent);
    tcase_add_test(refuse, test_runtime_absent);
    tcase_add_test(refuse, test_plugin_listed);
    suite_add_tcase(s, ipc);
    suite_add_tcase(s, stage);
    suite_add_tcase(s, nic);
    suite_add_tcase(s, order);
    suite_add_tcase(s, refuse);
    return hx_main(s);
}
