/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device-memory test helpers over the emulated ACL runtime; see
 * dev_harness.h.
 */
#include "config.h"
#include "dev_harness.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the runtime -------------------------------------------------------- */

static hx_acl_t hx_acl_table;
static int      hx_acl_loaded;

#define HX_SYM(_name) \
    do { \
        void *_s = dlsym(h, #_name); \
        ck_assert_msg(_s != NULL, "%s has no %s", HX_EMU_ACL_LIB, #_name); \
        memcpy(&hx_acl_table._name, &_s, sizeof(_s)); \
    } while (0)

const hx_acl_t *hx_acl(void)
{
    void *h;

    if (hx_acl_loaded) {
        return &hx_acl_table;
    }
    h = dlopen(HX_EMU_ACL_LIB, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(h != NULL, "dlopen %s: %s", HX_EMU_ACL_LIB, dlerror());
    HX_SYM(aclInit);
    HX_SYM(aclrtSetDevice);
    HX_SYM(aclrtGetDeviceCount);
    HX_SYM(aclrtMalloc);
    HX_SYM(aclrtFree);
    HX_SYM(aclrtMallocHost);
    HX_SYM(aclrtFreeHost);
    HX_SYM(aclrtMemcpy);
    HX_SYM(aclrtMemset);
    HX_SYM(aclrtMemcpyAsync);
    HX_SYM(aclrtCreateStream);
    HX_SYM(aclrtDestroyStream);
    HX_SYM(aclrtSynchronizeStream);
    HX_SYM(aclrtCreateEvent);
    HX_SYM(aclrtDestroyEvent);
    HX_SYM(aclrtRecordEvent);
    HX_SYM(aclrtQueryEventStatus);
    HX_SYM(aclrtPointerGetAttributes);
    HX_SYM(aclrtIpcMemGetExportKey);
    HX_SYM(aclrtIpcMemSetImportPid);
    HX_SYM(aclrtIpcMemImportByKey);
    HX_SYM(aclrtIpcMemClose);
    HX_SYM(aclrtDeviceEnablePeerAccess);
    HX_SYM(aclrtGetCurrentContext);
    HX_SYM(aclrtSetCurrentContext);
    hx_acl_loaded = 1;
    hx_acl_table.aclInit(NULL);   /* as an application does, once */
    return &hx_acl_table;
}

const char *hx_acl_runtime_opt(void)
{
    return "ascend=" HX_EMU_ACL_LIB;
}

void *hx_dev_alloc(int32_t dev, size_t len)
{
    const hx_acl_t *acl = hx_acl();
    void *p = NULL;

    ck_assert_int_eq(acl->aclrtSetDevice(dev), ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtMalloc(&p, len, ACL_MEM_MALLOC_HUGE_FIRST),
                     ACL_SUCCESS);
    ck_assert_int_eq(acl->aclrtMemset(p, len, 0, len), ACL_SUCCESS);
    return p;
}

void hx_dev_free(void *p)
{
    ck_assert_int_eq(hx_acl()->aclrtFree(p), ACL_SUCCESS);
}

/* Through a host bounce buffer: the CPU never reads device memory. */
static int hx_dev_fill_rc(void *p, uint64_t off, size_t len, uint64_t seed,
                          uint64_t idx)
{
    uint8_t *tmp = malloc(len ? len : 1);
    int rc;

    if (tmp == NULL) {
        return -1;
    }
    hx_pat_fill(tmp, len, seed, idx);
    rc = hx_acl()->aclrtMemcpy((uint8_t*)p + off, len, tmp, len,
                               ACL_MEMCPY_HOST_TO_DEVICE);
    free(tmp);
    return rc;
}

void hx_dev_fill(void *p, uint64_t off, size_t len, uint64_t seed,
                 uint64_t idx)
{
    ck_assert_int_eq(hx_dev_fill_rc(p, off, len, seed, idx), 0);
}

int hx_dev_check(void *p, uint64_t off, size_t len, uint64_t seed,
                 uint64_t idx, char *msg, size_t msglen)
{
    uint8_t *tmp = malloc(len ? len : 1);
    int rc;

    if (tmp == NULL) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    rc = hx_acl()->aclrtMemcpy(tmp, len, (uint8_t*)p + off, len,
                               ACL_MEMCPY_DEVICE_TO_HOST);
    if (rc != ACL_SUCCESS) {
        snprintf(msg, msglen, "aclrtMemcpy D2H of [%p + %llu, +%zu): %d", p,
                 (unsigned long long)off, len, rc);
        free(tmp);
        return -1;
    }
    rc = hx_pat_check(tmp, len, seed, idx, "device memory", msg, msglen);
    free(tmp);
    return rc;
}

hixl_mem_handle_t hx_register_dev(hixl_engine_t *engine, void *p, size_t len)
{
    hixl_mem_desc_t desc = {(uintptr_t)p, len};
    hixl_mem_handle_t h = NULL;

    hx_ok(hixl_register_mem(engine, &desc, HIXL_MEM_DEVICE, &h));
    ck_assert_ptr_nonnull(h);
    return h;
}

/* ---- target protocol ---------------------------------------------------- */

enum {
    HX_DCMD_REGION = 1,
    HX_DCMD_DEREG,
    HX_DCMD_FILL,
    HX_DCMD_CHECK,
    HX_DCMD_WAIT_LAYER,
    HX_DCMD_WAIT_NOTIFY,
    HX_DCMD_QUIT
};

typedef struct hx_dcmd {
    uint32_t       op;
    int32_t        dev;
    int32_t        region;
    uint32_t       stream, layer;
    uint64_t       gen, len, off, seed, idx;
    hx_dev_watch_t watch;
    char           text[HIXL_ENGINE_NAME_MAX + 1];
} hx_dcmd_t;

typedef struct hx_drep {
    int32_t  status;
    uint64_t value;
    char     msg[768];
} hx_drep_t;

#define HX_DEV_REPLY_MS   90000
#define HX_DEV_WAIT_MS    60000

static int hx_io(int fd, void *buf, size_t len, int writing, int timeout_ms)
{
    struct pollfd pfd = {fd, writing ? POLLOUT : POLLIN, 0};
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        if (!writing && (poll(&pfd, 1, timeout_ms) <= 0)) {
            return -1;
        }
        n = writing ? write(fd, (char*)buf + done, len - done) :
                      read(fd, (char*)buf + done, len - done);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* ---- the target process ------------------------------------------------- */

typedef struct hx_dchild {
    hixl_engine_t     *engine;
    int                rep_fd;
    void              *addr[HX_DEV_MAX_REGIONS];
    size_t             len[HX_DEV_MAX_REGIONS];
    int                dev[HX_DEV_MAX_REGIONS];   /* -1: host */
    hixl_mem_handle_t  h[HX_DEV_MAX_REGIONS];
    int                n;
} hx_dchild_t;

static void hx_dchild_reply(hx_dchild_t *c, int32_t status, uint64_t value,
                            const char *fmt, ...)
{
    hx_drep_t rep;
    va_list ap;

    memset(&rep, 0, sizeof(rep));
    rep.status = status;
    rep.value  = value;
    if (fmt != NULL) {
        va_start(ap, fmt);
        vsnprintf(rep.msg, sizeof(rep.msg), fmt, ap);
        va_end(ap);
    }
    if (hx_io(c->rep_fd, &rep, sizeof(rep), 1, 0) != 0) {
        _exit(3);
    }
}

static int hx_dchild_check(hx_dchild_t *c, int r, uint64_t off, uint64_t len,
                           uint64_t seed, uint64_t idx, char *msg,
                           size_t msglen)
{
    if ((r < 0) || (r >= c->n) || (off + len > c->len[r])) {
        snprintf(msg, msglen, "bad region %d / range", r);
        return -1;
    }
    if (c->dev[r] < 0) {
        return hx_pat_check((uint8_t*)c->addr[r] + off, len, seed, idx,
                            "target host memory", msg, msglen);
    }
    return hx_dev_check(c->addr[r], off, len, seed, idx, msg, msglen);
}

static void hx_dchild_region(hx_dchild_t *c, const hx_dcmd_t *cmd)
{
    const hx_acl_t *acl = hx_acl();
    hixl_mem_desc_t desc;
    hixl_status_t st;
    void *p = NULL;
    int r = c->n;

    if (r == HX_DEV_MAX_REGIONS) {
        hx_dchild_reply(c, -1, 0, "too many regions");
        return;
    }
    if (cmd->dev >= 0) {
        if ((acl->aclrtSetDevice(cmd->dev) != ACL_SUCCESS) ||
            (acl->aclrtMalloc(&p, cmd->len, ACL_MEM_MALLOC_HUGE_FIRST) !=
             ACL_SUCCESS) ||
            (acl->aclrtMemset(p, cmd->len, 0, cmd->len) != ACL_SUCCESS)) {
            hx_dchild_reply(c, -1, 0, "aclrtMalloc on device %d failed",
                            cmd->dev);
            return;
        }
    } else {
        p = mmap(NULL, cmd->len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            hx_dchild_reply(c, -1, 0, "mmap failed");
            return;
        }
    }
    desc.addr = (uintptr_t)p;
    desc.len  = cmd->len;
    st = hixl_register_mem(c->engine, &desc, (cmd->dev >= 0) ?
                           HIXL_MEM_DEVICE : HIXL_MEM_HOST, &c->h[r]);
    if (st != HIXL_SUCCESS) {
        hx_dchild_reply(c, -1, 0, "hixl_register_mem: %s: %s",
                        hixl_strerror(st), hixl_last_error());
        return;
    }
    c->addr[r] = p;
    c->len[r]  = cmd->len;
    c->dev[r]  = cmd->dev;
    c->n++;
    hx_dchild_reply(c, r, (uintptr_t)p, NULL);
}

/* Take notifies until one named `name` is there (bounded). */
static int hx_dchild_notify(hx_dchild_t *c, const char *name)
{
    struct timespec t0, t;
    hixl_notify_t *n;
    size_t count, i;
    int found = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (hixl_get_notifies(c->engine, &n, &count) == HIXL_SUCCESS) {
            for (i = 0; i < count; ++i) {
                found |= !strcmp(n[i].name, name);
            }
            if (count) {
                hixl_release_notifies(n, count);
            }
        }
        if (found) {
            return 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 > HX_DEV_WAIT_MS) {
            return -1;
        }
        usleep(20);
    }
}

static void hx_dchild_command(hx_dchild_t *c, const hx_dcmd_t *cmd)
{
    const hx_dev_watch_t *w = &cmd->watch;
    hixl_status_t st;
    char msg[700];

    switch (cmd->op) {
    case HX_DCMD_REGION:
        hx_dchild_region(c, cmd);
        return;
    case HX_DCMD_DEREG:
        st = hixl_deregister_mem(c->engine, c->h[cmd->region]);
        hx_dchild_reply(c, (st == HIXL_SUCCESS) ? 0 : -1, 0, "%s",
                        hixl_last_error());
        return;
    case HX_DCMD_FILL:
        if (c->dev[cmd->region] < 0) {
            hx_pat_fill((uint8_t*)c->addr[cmd->region] + cmd->off, cmd->len,
                        cmd->seed, cmd->idx);
        } else if (hx_dev_fill_rc(c->addr[cmd->region], cmd->off, cmd->len,
                                  cmd->seed, cmd->idx) != 0) {
            hx_dchild_reply(c, -1, 0, "device fill failed");
            return;
        }
        hx_dchild_reply(c, 0, 0, NULL);
        return;
    case HX_DCMD_CHECK:
        if (hx_dchild_check(c, cmd->region, cmd->off, cmd->len, cmd->seed,
                            cmd->idx, msg, sizeof(msg)) != 0) {
            hx_dchild_reply(c, -1, 0, "%s", msg);
        } else {
            hx_dchild_reply(c, 0, 0, NULL);
        }
        return;
    case HX_DCMD_WAIT_LAYER:
    case HX_DCMD_WAIT_NOTIFY:
        hx_dchild_reply(c, 0, 0, NULL);   /* waiting now */
        if (cmd->op == HX_DCMD_WAIT_LAYER) {
            st = hixl_wait_layer(c->engine, cmd->text, cmd->stream, cmd->gen,
                                 cmd->layer, HX_DEV_WAIT_MS);
            if (st != HIXL_SUCCESS) {
                hx_dchild_reply(c, -1, 0, "hixl_wait_layer: %s: %s",
                                hixl_strerror(st), hixl_last_error());
                return;
            }
        } else if (hx_dchild_notify(c, cmd->text) != 0) {
            hx_dchild_reply(c, -1, 0, "notify %s never came", cmd->text);
            return;
        }
        /* the instant the signal is seen: every byte must be there */
        if (hx_dchild_check(c, w->region, w->off, w->len, w->seed, w->idx,
                            msg, sizeof(msg)) != 0) {
            hx_dchild_reply(c, -1, 0, "data not there when the signal was: "
                            "%s", msg);
        } else {
            hx_dchild_reply(c, 0, 0, NULL);
        }
        return;
    }
    hx_dchild_reply(c, -1, 0, "unknown command %u", cmd->op);
}

static void hx_dchild_main(hixl_option_t *opts, size_t nopts, int cmd_fd,
                           int rep_fd)
{
    hx_dchild_t c;
    hx_dcmd_t cmd;
    hixl_status_t st;
    int r;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(HX_TEST_TIMEOUT_S + 30);
    memset(&c, 0, sizeof(c));
    c.rep_fd = rep_fd;
    st = hixl_initialize("127.0.0.1:0", opts, nopts, &c.engine);
    if (st != HIXL_SUCCESS) {
        hx_dchild_reply(&c, -1, 0, "hixl_initialize: %s", hixl_last_error());
        _exit(2);
    }
    hx_dchild_reply(&c, 0, 0, "%s", hixl_engine_name(c.engine));
    for (;;) {
        if (hx_io(cmd_fd, &cmd, sizeof(cmd), 0, -1) != 0) {
            break;   /* parent gone */
        }
        if (cmd.op == HX_DCMD_QUIT) {
            break;
        }
        hx_dchild_command(&c, &cmd);
    }
    st = hixl_finalize(c.engine);
    for (r = 0; r < c.n; ++r) {
        if (c.dev[r] >= 0) {
            hx_acl()->aclrtFree(c.addr[r]);
        } else {
            munmap(c.addr[r], c.len[r]);
        }
    }
    hx_dchild_reply(&c, (st == HIXL_SUCCESS) ? 0 : -1, 0, NULL);
    _exit(0);
}

/* ---- the parent side ---------------------------------------------------- */

static pid_t hx_dev_live[16];

static void hx_dev_live_set(pid_t old, pid_t pid)
{
    size_t i;

    for (i = 0; i < sizeof(hx_dev_live) / sizeof(hx_dev_live[0]); ++i) {
        if (hx_dev_live[i] == old) {
            hx_dev_live[i] = pid;
            return;
        }
    }
}

void hx_dev_target_kill_all(void)
{
    size_t i;

    for (i = 0; i < sizeof(hx_dev_live) / sizeof(hx_dev_live[0]); ++i) {
        if (hx_dev_live[i] > 0) {
            kill(hx_dev_live[i], SIGKILL);
            waitpid(hx_dev_live[i], NULL, 0);
            hx_dev_live[i] = 0;
        }
    }
}

static void hx_dev_teardown(void)
{
    hx_dev_target_kill_all();
    hx_target_kill_all();
}

TCase *hx_dev_tcase(const char *name)
{
    TCase *tc = tcase_create(name);

    tcase_set_timeout(tc, HX_TEST_TIMEOUT_S);
    tcase_add_checked_fixture(tc, NULL, hx_dev_teardown);
    return tc;
}

static void hx_dev_reply(hx_dev_target_t *t, hx_drep_t *rep)
{
    ck_assert_msg(hx_io(t->rep_fd, rep, sizeof(*rep), 0, HX_DEV_REPLY_MS) ==
                  0, "device target %d did not answer", (int)t->pid);
}

static int32_t hx_dev_call(hx_dev_target_t *t, hx_dcmd_t *cmd, hx_drep_t *rep)
{
    ck_assert_int_eq(hx_io(t->cmd_fd, cmd, sizeof(*cmd), 1, 0), 0);
    hx_dev_reply(t, rep);
    return rep->status;
}

void hx_dev_target_start(hx_dev_target_t *t, ...)
{
    hixl_option_t opts[HX_DEV_MAX_OPTS + 4];
    int cmd[2], rep[2];
    const char *key;
    hx_drep_t r;
    size_t n = 0;
    va_list ap;

    memset(t, 0, sizeof(*t));
    opts[n].key = "hixl.ListenEphemeral";
    opts[n++].value = "1";
    opts[n].key = "hixl.PluginDir";
    opts[n++].value = HX_PLUGIN_DIR;
    opts[n].key = "hixl.PluginRuntime";
    opts[n++].value = hx_acl_runtime_opt();
    va_start(ap, t);
    while ((key = va_arg(ap, const char*)) != NULL) {
        ck_assert_uint_lt(n, sizeof(opts) / sizeof(opts[0]));
        opts[n].key     = key;
        opts[n++].value = va_arg(ap, const char*);
    }
    va_end(ap);
    ck_assert_int_eq(pipe(cmd), 0);
    ck_assert_int_eq(pipe(rep), 0);
    fflush(NULL);
    t->pid = fork();
    ck_assert_int_ge(t->pid, 0);
    if (t->pid == 0) {
        close(cmd[1]);
        close(rep[0]);
        hx_dchild_main(opts, n, cmd[0], rep[1]);
    }
    close(cmd[0]);
    close(rep[1]);
    t->cmd_fd = cmd[1];
    t->rep_fd = rep[0];
    hx_dev_live_set(0, t->pid);
    hx_dev_reply(t, &r);
    ck_assert_msg(r.status == 0, "device target: %s", r.msg);
    snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1,
             r.msg);
}

int hx_dev_target_region(hx_dev_target_t *t, int32_t dev, size_t len)
{
    hx_dcmd_t cmd;
    hx_drep_t r;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op  = HX_DCMD_REGION;
    cmd.dev = dev;
    cmd.len = len;
    ck_assert_msg(hx_dev_call(t, &cmd, &r) >= 0, "target region: %s", r.msg);
    t->addr[r.status] = r.value;
    t->len[r.status]  = len;
    t->nregions       = r.status + 1;
    return r.status;
}

void hx_dev_target_deregister(hx_dev_target_t *t, int region)
{
    hx_dcmd_t cmd;
    hx_drep_t r;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_DCMD_DEREG;
    cmd.region = region;
    ck_assert_msg(hx_dev_call(t, &cmd, &r) == 0, "target deregister: %s",
                  r.msg);
}

void hx_dev_target_fill(hx_dev_target_t *t, int region, uint64_t off,
                        uint64_t len, uint64_t seed, uint64_t idx)
{
    hx_dcmd_t cmd;
    hx_drep_t r;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_DCMD_FILL;
    cmd.region = region;
    cmd.off    = off;
    cmd.len    = len;
    cmd.seed   = seed;
    cmd.idx    = idx;
    ck_assert_msg(hx_dev_call(t, &cmd, &r) == 0, "target fill: %s", r.msg);
}

int hx_dev_target_check(hx_dev_target_t *t, int region, uint64_t off,
                        uint64_t len, uint64_t seed, uint64_t idx, char *msg,
                        size_t msglen)
{
    hx_dcmd_t cmd;
    hx_drep_t r;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_DCMD_CHECK;
    cmd.region = region;
    cmd.off    = off;
    cmd.len    = len;
    cmd.seed   = seed;
    cmd.idx    = idx;
    if (hx_dev_call(t, &cmd, &r) != 0) {
        snprintf(msg, msglen, "%s", r.msg);
        return -1;
    }
    return 0;
}

void hx_dev_target_wait_layer(hx_dev_target_t *t, const char *source,
                              uint32_t stream, uint64_t gen, uint32_t layer,
                              const hx_dev_watch_t *w)
{
    hx_dcmd_t cmd;
    hx_drep_t r;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = HX_DCMD_WAIT_LAYER;
    cmd.stream = stream;
    cmd.gen    = gen;
    cmd.layer  = layer;
    cmd.watch  = *w;
    snprintf(cmd.text, sizeof(cmd.text), "%s", source);
    ck_assert_int_eq(hx_dev_call(t, &cmd, &r), 0);
}

void hx_dev_target_wait_notify(hx_dev_target_t *t, const char *name,
                               const hx_dev_watch_t *w)
{
    hx_dcmd_t cmd;
    hx_drep_t r;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op    = HX_DCMD_WAIT_NOTIFY;
    cmd.watch = *w;
    snprintf(cmd.text, sizeof(cmd.text), "%s", name);
    ck_assert_int_eq(hx_dev_call(t, &cmd, &r), 0);
}

int hx_dev_target_result(hx_dev_target_t *t, char *msg, size_t msglen)
{
    hx_drep_t r;

    hx_dev_reply(t, &r);
    snprintf(msg, msglen, "%s", r.msg);
    return r.status;
}

void hx_dev_target_kill(hx_dev_target_t *t)
{
    kill(t->pid, SIGKILL);
    ck_assert_int_eq(waitpid(t->pid, NULL, 0), t->pid);
    hx_dev_live_set(t->pid, 0);
    close(t->cmd_fd);
    close(t->rep_fd);
}

void hx_dev_target_stop(hx_dev_target_t *t)
{
    hx_dcmd_t cmd;
    hx_drep_t r;
    int wstatus = 0;

    memset(&cmd, 0, sizeof(cmd));
    cmd.op = HX_DCMD_QUIT;
    ck_assert_int_eq(hx_io(t->cmd_fd, &cmd, sizeof(cmd), 1, 0), 0);
    hx_dev_reply(t, &r);
    ck_assert_int_eq(waitpid(t->pid, &wstatus, 0), t->pid);
    hx_dev_live_set(t->pid, 0);
    close(t->cmd_fd);
    close(t->rep_fd);
    ck_assert_msg(WIFEXITED(wstatus) && (WEXITSTATUS(wstatus) == 0) &&
                  (r.status == 0), "device target exited badly (status "
                  "0x%x)", wstatus);
}
