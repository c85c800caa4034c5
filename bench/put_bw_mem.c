/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw memory types (-m <send>[,<recv>], as ucx_perftest): host memory,
 * or Ascend device memory allocated through the ACL runtime (CANN's
 * libascendcl.so, or the emulated one of test/emu_acl, named like the
 * plugin's: hixl.PluginRuntime / HIXL_PLUGIN_RUNTIME "ascend=<library>").
 * The client's buffers are of the send type, the server's of the recv
 * type (the client sends it in HELLO).  Device memory is never touched by
 * the CPU here either: patterns go through a host bounce buffer and
 * aclrtMemcpy, zeroing through aclrtMemset.  The runtime is dlopen'ed so
 * put_bw builds and runs without CANN.
 */
#include "put_bw.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

/* ACL prototypes, after CANN's acl_rt.h (aclrtSetDevice, aclrtMalloc,
 * aclrtFree, aclrtMemcpy, aclrtMemset) and acl.h (aclInit). */
typedef int (*bench_acl_init_t)(const char *config_path);
typedef int (*bench_acl_set_device_t)(int32_t device_id);
typedef int (*bench_acl_malloc_t)(void **dev_ptr, size_t size, int policy);
typedef int (*bench_acl_free_t)(void *dev_ptr);
typedef int (*bench_acl_memcpy_t)(void *dst, size_t dest_max, const void *src,
                                  size_t count, int kind);
typedef int (*bench_acl_memset_t)(void *dev_ptr, size_t max_count,
                                  int32_t value, size_t count);

#define BENCH_ACL_H2D 1   /* ACL_MEMCPY_HOST_TO_DEVICE */
#define BENCH_ACL_D2H 2   /* ACL_MEMCPY_DEVICE_TO_HOST */

static struct {
    int                    types[2];     /* 0 host, 1 ascend; send, recv */
    int                    ntypes;
    int                    mine;         /* this side's type */
    const bench_opts_t    *opts;
    uint8_t               *dev_base;     /* this side's device block */
    size_t                 dev_len;
    bench_acl_malloc_t     malloc_fn;
    bench_acl_free_t       free_fn;
    bench_acl_memcpy_t     memcpy_fn;
    bench_acl_memset_t     memset_fn;
} bench_mem;

static const char *const bench_mem_names[] = {"host", "ascend"};

int bench_mem_parse(const char *arg)
{
    char *copy = strdup(arg), *tok, *save = NULL;
    int n = 0, rc = 0;

    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (n == 2) {
            rc = -1;
            break;
        }
        if (!strcasecmp(tok, "host")) {
            bench_mem.types[n++] = 0;
        } else if (!strcasecmp(tok, "ascend") || !strcasecmp(tok, "npu")) {
            bench_mem.types[n++] = 1;
        } else {
            rc = -1;
            break;
        }
    }
    free(copy);
    if ((rc != 0) || (n == 0)) {
        return -1;
    }
    bench_mem.ntypes = n;
    return 0;
}

const char *bench_mem_arg(void)
{
    static char buf[32];

    if (bench_mem.ntypes == 0) {
        return "host";
    }
    snprintf(buf, sizeof(buf), "%s%s%s", bench_mem_names[bench_mem.types[0]],
             (bench_mem.ntypes > 1) ? "," : "",
             (bench_mem.ntypes > 1) ? bench_mem_names[bench_mem.types[1]] :
             "");
    return buf;
}

void bench_mem_role(const bench_opts_t *opts, int server)
{
    bench_mem.opts = opts;
    bench_mem.mine = (bench_mem.ntypes == 0) ? 0 :
                     (server && (bench_mem.ntypes > 1)) ? bench_mem.types[1] :
                     bench_mem.types[0];
}

/* The runtime library: "ascend=<lib>" in hixl.PluginRuntime (option or
 * environment), else the default name. */
static const char *bench_mem_runtime(const bench_opts_t *opts, char *buf,
                                     size_t len)
{
    const char *v = getenv("HIXL_PLUGIN_RUNTIME"), *p, *end;
    unsigned i;

    for (i = 0; i < opts->num_hixl_opts; ++i) {
        if (!strcmp(opts->hixl_opts[i].key, "hixl.PluginRuntime")) {
            v = opts->hixl_opts[i].value;
        }
    }
    p = (v != NULL) ? strstr(v, "ascend=") : NULL;
    if (p == NULL) {
        return "libascendcl.so";
    }
    p  += strlen("ascend=");
    end = strchr(p, ',');
    snprintf(buf, len, "%.*s", (int)(end ? (size_t)(end - p) : strlen(p)),
             p);
    return buf;
}

/* a function pointer from dlsym, without type punning */
#define BENCH_SYM(_dst, _name) \
    do { \
        void *_s = dlsym(h, (_name)); \
        memcpy(&(_dst), &_s, sizeof(_s)); \
    } while (0)

static int bench_mem_load(const bench_opts_t *opts, int32_t device)
{
    bench_acl_set_device_t set_device;
    bench_acl_init_t init;
    const char *lib;
    char path[512];
    void *h;

    lib = bench_mem_runtime(opts, path, sizeof(path));
    h   = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "put_bw: -m ascend: cannot load the ACL runtime: "
                "%s\n", dlerror());
        return -1;
    }
    BENCH_SYM(init, "aclInit");
    BENCH_SYM(set_device, "aclrtSetDevice");
    BENCH_SYM(bench_mem.malloc_fn, "aclrtMalloc");
    BENCH_SYM(bench_mem.free_fn, "aclrtFree");
    BENCH_SYM(bench_mem.memcpy_fn, "aclrtMemcpy");
    BENCH_SYM(bench_mem.memset_fn, "aclrtMemset");
    if (!init || !set_device || !bench_mem.malloc_fn || !bench_mem.free_fn ||
        !bench_mem.memcpy_fn || !bench_mem.memset_fn) {
        fprintf(stderr, "put_bw: %s lacks an ACL memory function\n", lib);
        return -1;
    }
    init(NULL);   /* ACL_ERROR_REPEAT_INITIALIZE is fine */
    if (set_device(device) != 0) {
        fprintf(stderr, "put_bw: aclrtSetDevice(%d) failed\n", device);
        return -1;
    }
    return 0;
}

void *bench_mem_alloc(size_t len, hixl_mem_type_t *type_p)
{
    const char *dev = getenv("PUT_BW_DEVICE");
    void *p = NULL;

    *type_p = HIXL_MEM_HOST;
    if (bench_mem.mine == 0) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            return NULL;
        }
        memset(p, 0, len);      /* no page faults in the timed loops */
        return p;
    }
    if ((bench_mem_load(bench_mem.opts, dev ? atoi(dev) : 0) != 0) ||
        (bench_mem.malloc_fn(&p, len, 0 /* ACL_MEM_MALLOC_HUGE_FIRST */) !=
         0) || (bench_mem.memset_fn(p, len, 0, len) != 0)) {
        fprintf(stderr, "put_bw: aclrtMalloc of %zu bytes failed\n", len);
        return NULL;
    }
    bench_mem.dev_base = p;
    bench_mem.dev_len  = len;
    *type_p            = HIXL_MEM_DEVICE;
    return p;
}

void bench_mem_free(void *p, size_t len)
{
    if (p == bench_mem.dev_base) {
        bench_mem.free_fn(p);
        bench_mem.dev_base = NULL;
    } else {
        munmap(p, len);
    }
}

int bench_mem_is_device(const void *p)
{
    return (bench_mem.dev_base != NULL) && ((const uint8_t*)p >=
                                            bench_mem.dev_base) &&
           ((size_t)((const uint8_t*)p - bench_mem.dev_base) <
            bench_mem.dev_len);
}

void bench_mem_zero(void *p, size_t len)
{
    if (bench_mem_is_device(p)) {
        bench_mem.memset_fn(p, len, 0, len);
    } else {
        memset(p, 0, len);
    }
}

/* Device side of bench_pattern_fill / bench_pattern_check. */
int bench_mem_dev_fill(uint8_t *buf, size_t len, uint64_t seed)
{
    uint8_t *tmp = malloc(len ? len : 1);
    int rc;

    if (tmp == NULL) {
        return -1;
    }
    bench_pattern_fill(tmp, len, seed);
    rc = bench_mem.memcpy_fn(buf, len, tmp, len, BENCH_ACL_H2D);
    free(tmp);
    return rc;
}

int bench_mem_dev_check(const uint8_t *buf, size_t len, uint64_t seed,
                        char *msg, size_t msg_len)
{
    uint8_t *tmp = malloc(len ? len : 1);
    int rc;

    if (tmp == NULL) {
        snprintf(msg, msg_len, "out of memory");
        return -1;
    }
    if (bench_mem.memcpy_fn(tmp, len, buf, len, BENCH_ACL_D2H) != 0) {
        snprintf(msg, msg_len, "aclrtMemcpy of device memory failed");
        free(tmp);
        return -1;
    }
    rc = bench_pattern_check(tmp, len, seed, msg, msg_len);
    free(tmp);
    return rc;
}
