/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: move a KV cache from a prefill engine to a decode
 * engine and compare, in one run:
 *
 *   pipelined  hixl writes per layer + hixl_flush_layer per layer: decode
 *              starts on layer 0 while later layers are in flight;
 *   bulk       the same writes, one flush after the last layer: decode
 *              starts when the whole cache has landed;
 *   staged     the traditional path: copy a layer into a host staging
 *              buffer, send it over a TCP socket, receive into staging on
 *              the decode side, copy into place.
 *
 * Every byte of every mode is verified on the decode side; any mismatch
 * makes the exit status non-zero.  Transports come from UCX_TLS.
 *
 * Three ways to start it:
 *   pd_pipeline [options]                     both roles on this host (a
 *                                             forked decode on 127.0.0.1)
 *   pd_pipeline decode --listen IP:PORT ...   the decode role, started first
 *   pd_pipeline prefill --decode IP:PORT ...  the prefill role, anywhere that
 *                                             reaches it; it learns the KV
 *                                             layout from decode's engine
 */
#include "pd_run.h"

#include <hixl/hixl.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Both roles on this host: a forked decode on 127.0.0.1 (a port the kernel
 * picks) tells this process its engine name through a pipe; everything
 * else goes through the library as between two hosts. */
static int pd_loopback(const pd_config_t *cfg)
{
    char name[HIXL_ENGINE_NAME_MAX + 1];
    pd_config_t dcfg = *cfg, pcfg = *cfg;
    struct pollfd pfd;
    int fds[2], status, rc;
    pid_t pid;

    if (pipe(fds) != 0) {
        perror("pd_pipeline: pipe");
        return 1;
    }
    /* fork before either side touches UCX */
    pid = fork();
    if (pid < 0) {
        perror("pd_pipeline: fork");
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        dcfg.listen  = "127.0.0.1:0";
        dcfg.name_fd = fds[1];
        _exit(pd_decode_main(&dcfg));
    }
    close(fds[1]);
    memset(name, 0, sizeof(name));
    pfd.fd     = fds[0];
    pfd.events = POLLIN;
    /* decode measures memcpy over the whole cache before it listens */
    rc = poll(&pfd, 1, cfg->peer_wait_ms);
    if ((rc <= 0) || (bc_read_all(fds[0], name, sizeof(name)) != 0)) {
        fprintf(stderr, "pd_pipeline: the decode process did not start\n");
        close(fds[0]);
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        return 1;
    }
    close(fds[0]);
    name[sizeof(name) - 1] = '\0';
    pcfg.decode   = name;
    pcfg.name     = "127.0.0.1";
    pcfg.loopback = 1;
    rc = pd_prefill_main(&pcfg);
    /* decode ends on prefill's QUIT or disconnect, within its timeouts */
    if ((waitpid(pid, &status, 0) == pid) &&
        (!WIFEXITED(status) || (WEXITSTATUS(status) != 0))) {
        fprintf(stderr, "pd_pipeline: decode process failed (status 0x%x)\n",
                status);
        rc = rc ? rc : 1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    pd_config_t cfg;

    if (pd_parse(argc, argv, &cfg) != 0) {
        fprintf(stderr, "pd_pipeline --help lists the options\n");
        return 2;
    }
    switch (cfg.role) {
    case PD_ROLE_DECODE:
        /* for a moment, the memcpy measurement holds two copies */
        if (pd_check_memory(&cfg.shape, cfg.no_memcpy ? 1.0 : 2.0) != 0) {
            return 2;
        }
        return pd_decode_main(&cfg);
    case PD_ROLE_PREFILL:
        return pd_prefill_main(&cfg);   /* checks memory once it knows */
    default:
        /* decode's memcpy copies are gone before prefill allocates */
        if (pd_check_memory(&cfg.shape, 2.0) != 0) {
            return 2;
        }
        return pd_loopback(&cfg);
    }
}
