/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program that uses an installed libhixl-ucx the way an application
 * does (test/it_install.sh builds it with pkg-config, a plain Makefile and
 * CMake's find_package(hixl-ucx)): two engines in this process, one
 * listening with memory from hixl_alloc_mem, one writing 1 MiB into it;
 * every byte is checked.  Exit 0 on success.
 */
#include <hixl/hixl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN ((size_t)1 << 20)

static int fail(const char *what, hixl_status_t st)
{
    fprintf(stderr, "consumer: %s: %s: %s\n", what, hixl_strerror(st),
            hixl_last_error());
    return 1;
}

int main(void)
{
    hixl_option_t listen_opt = {"hixl.ListenEphemeral", "1"};
    hixl_engine_t *target, *writer;
    hixl_mem_handle_t th, wh;
    hixl_mem_desc_t md;
    hixl_transfer_op_desc_t d;
    hixl_status_t st;
    uint8_t *src;
    void *dst;
    size_t i, bad = 0;

    if ((st = hixl_initialize("127.0.0.1:0", &listen_opt, 1, &target)))
        return fail("hixl_initialize(target)", st);
    if ((st = hixl_initialize("127.0.0.1", NULL, 0, &writer)))
        return fail("hixl_initialize(writer)", st);
    if ((st = hixl_alloc_mem(target, LEN, HIXL_MEM_HOST, &dst, &th)))
        return fail("hixl_alloc_mem", st);
    memset(dst, 0, LEN);
    src = malloc(LEN);
    if (src == NULL)
        return 1;
    for (i = 0; i < LEN; ++i)
        src[i] = (uint8_t)(i * 7 + (i >> 12));
    md.addr = (uintptr_t)src;
    md.len  = LEN;
    if ((st = hixl_register_mem(writer, &md, HIXL_MEM_HOST, &wh)))
        return fail("hixl_register_mem", st);
    if ((st = hixl_connect(writer, hixl_engine_name(target), 10000)))
        return fail("hixl_connect", st);
    d.local_addr  = (uintptr_t)src;
    d.remote_addr = (uintptr_t)dst;
    d.len         = LEN;
    if ((st = hixl_transfer_sync(writer, hixl_engine_name(target),
                                 HIXL_WRITE, &d, 1, 10000)))
        return fail("hixl_transfer_sync", st);
    for (i = 0; i < LEN; ++i)
        bad += (((uint8_t*)dst)[i] != src[i]);
    hixl_disconnect(writer, hixl_engine_name(target), 5000);
    hixl_deregister_mem(writer, wh);
    hixl_finalize(writer);
    hixl_finalize(target);   /* frees the hixl_alloc_mem memory */
    free(src);
    printf("consumer: libhixl-ucx %s moved %zu bytes, %zu wrong\n",
           hixl_version(), LEN, bad);
    return bad != 0;
}
