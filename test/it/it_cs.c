/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: CANN hixl's C interface (<cs/hixl_cs.h>, the HixlCS*
 * functions) between two processes, as a program written for CANN uses it.
 *
 * A forked server process creates a HixlCS server, registers three host
 * regions (two tagged, one not), fills them with patterns and listens.
 * This process is the client: it fetches the table (HixlCSClientConnect
 * prefetches, HixlCSClientGetRemoteMem gives it), checks every entry and
 * tag against what the server reports over the test's pipe, then moves
 * data every way the interface has (Put / Get, Sync / Async, several
 * descriptors per batch) and verifies every byte where it landed: the
 * server checks its regions on request, the client its own buffer.
 * Looped over UCX_TLS=tcp, sm and UCX's default.
 *
 * Then what CANN defines errors for: NULL arguments, ports out of range,
 * list_num 0, foreign and stale handles, a global_resource_config out of
 * range, a table of a region registered late and one unregistered, and the
 * failed state a TIMEOUT leaves a client in.
 *
 * This file includes <cs/hixl_cs.h> before <hixl/hixl.h>, as C; the C++
 * test (it_cs_cpp.cc) includes them the other way round.
 */
#include "config.h"

#include <cs/hixl_cs.h>
#include <hixl/hixl.h>

#include "harness.h"
#include "fd_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CS_REGIONS    3
#define CS_LATE       3        /* index of the region registered later */
#define CS_REGION_LEN (1 * HX_MIB + 4096 + 16)
#define CS_WAIT_MS    30000

static const char *const cs_tags[CS_REGIONS + 1] = {"kv_cache", "blocks", "",
                                                    "late"};

/* Commands to the server child and its answers (fixed-size, one each). */
enum { CS_CHECK, CS_LATE_REG, CS_UNREG, CS_QUIT };

typedef struct cs_cmd {
    uint32_t op, region;
    uint64_t off, len, seed, idx;
} cs_cmd_t;

typedef struct cs_reply {
    int32_t  status;
    uint32_t port;
    uint64_t addr[CS_REGIONS + 1];
    char     msg[256];
} cs_reply_t;

typedef struct cs_server_proc {
    pid_t    pid;
    int      cmd, rep;
    uint32_t port;
    uint64_t addr[CS_REGIONS + 1];
} cs_server_proc_t;

static int cs_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    uint8_t *b = buf;
    ssize_t n;

    while (len > 0) {
        if (poll(&p, 1, timeout_ms) <= 0) {
            return -1;
        }
        n = read(fd, b, len);
        if (n <= 0) {
            return -1;
        }
        b   += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- the server process -------------------------------------------------- */

static void cs_server_main(int cmd_fd, int rep_fd, uint32_t port)
{
    HixlServerDesc desc;
    HixlServerConfig cfg;
    EndpointDesc ep;
    MemHandle h[CS_REGIONS + 1] = {NULL};
    HixlServerHandle server;
    uint8_t *mem[CS_REGIONS + 1];
    cs_reply_t rep;
    cs_cmd_t c;
    CommMem cm;
    char why[256];
    int i;

    memset(&rep, 0, sizeof(rep));
    memset(&desc, 0, sizeof(desc));
    memset(&cfg, 0, sizeof(cfg));
    EndpointDescInit(&ep, 1);
    ep.protocol               = COMM_PROTOCOL_ROCE;
    ep.commAddr.type          = COMM_ADDR_TYPE_IP_V4;
    ep.commAddr.addr.s_addr   = htonl(INADDR_LOOPBACK);
    ep.loc.locType            = ENDPOINT_LOC_TYPE_HOST;
    desc.endpoint_list        = &ep;
    desc.endpoint_list_num    = 1;
    desc.server_ip            = "127.0.0.1";
    desc.server_port          = port;
    cfg.global_resource_config = "{\"comm_resource_config.listen_port\": "
                                 "26666, \"comm_resource_config.qos\": 99}";
    rep.status = (int32_t)HixlCSServerCreate(&desc, &cfg, &server);
    for (i = 0; (rep.status == HIXL_SUCCESS) && (i <= CS_REGIONS); ++i) {
        mem[i] = hx_alloc_pages(CS_REGION_LEN);
        hx_pat_fill(mem[i], CS_REGION_LEN, 100 + (uint64_t)i, 0);
        rep.addr[i] = (uintptr_t)mem[i];
        if (i < CS_REGIONS) {
            cm.type    = COMM_MEM_TYPE_HOST;
            cm.addr    = mem[i];
            cm.size    = CS_REGION_LEN;
            rep.status = (int32_t)HixlCSServerRegMem(server, i == 2 ? NULL :
                                                     cs_tags[i], &cm, &h[i]);
        }
    }
    if (rep.status == HIXL_SUCCESS) {
        rep.status = (int32_t)HixlCSServerListen(server, 16);
    }
    snprintf(rep.msg, sizeof(rep.msg), "%s", hixl_last_error());
    rep.port = port;
    hx_write_all(rep_fd, &rep, sizeof(rep));
    if (rep.status != HIXL_SUCCESS) {
        _exit(1);
    }
    while (cs_read_all(cmd_fd, &c, sizeof(c), -1) == 0) {
        memset(&rep, 0, sizeof(rep));
        switch (c.op) {
        case CS_CHECK:
            if (hx_pat_check(mem[c.region] + c.off, c.len, c.seed, c.idx,
                             "server region", why, sizeof(why)) != 0) {
                rep.status = -1;
                snprintf(rep.msg, sizeof(rep.msg), "%s", why);
            }
            break;
        case CS_LATE_REG:
            cm.type    = COMM_MEM_TYPE_HOST;
            cm.addr    = mem[CS_LATE];
            cm.size    = CS_REGION_LEN;
            rep.status = (int32_t)HixlCSServerRegMem(server, cs_tags[CS_LATE],
                                                     &cm, &h[CS_LATE]);
            break;
        case CS_UNREG:
            rep.status = (int32_t)HixlCSServerUnregMem(server, h[c.region]);
            if (rep.status == HIXL_SUCCESS) {
                /* once more: a stale handle */
                rep.status = (HixlCSServerUnregMem(server, h[c.region]) ==
                              HIXL_PARAM_INVALID) ? 0 : -2;
            }
            break;
        case CS_QUIT:
            rep.status = (int32_t)HixlCSServerDestroy(server);
            hx_write_all(rep_fd, &rep, sizeof(rep));
            _exit(rep.status == HIXL_SUCCESS ? 0 : 1);
        }
        if ((rep.status != 0) && (rep.msg[0] == '\0')) {
            snprintf(rep.msg, sizeof(rep.msg), "%s", hixl_last_error());
        }
        hx_write_all(rep_fd, &rep, sizeof(rep));
    }
    _exit(2);
}

/* Fork the server (before this process initializes anything). */
static void cs_server_start(cs_server_proc_t *sp)
{
    int cmd[2], rep[2];
    cs_reply_t r;

    ck_assert_int_eq(pipe(cmd), 0);
    ck_assert_int_eq(pipe(rep), 0);
    sp->port = hx_stable_port();
    sp->pid  = fork();
    ck_assert_int_ge(sp->pid, 0);
    if (sp->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(HX_TEST_TIMEOUT_S);
        close(cmd[1]);
        close(rep[0]);
        cs_server_main(cmd[0], rep[1], sp->port);
    }
    close(cmd[0]);
    close(rep[1]);
    sp->cmd = cmd[1];
    sp->rep = rep[0];
    ck_assert_msg(cs_read_all(sp->rep, &r, sizeof(r), CS_WAIT_MS) == 0,
                  "the server process did not start");
    ck_assert_msg(r.status == HIXL_SUCCESS, "server: %d: %s", r.status,
                  r.msg);
    memcpy(sp->addr, r.addr, sizeof(sp->addr));
}

static cs_reply_t cs_ask(cs_server_proc_t *sp, uint32_t op, uint32_t region,
                         uint64_t off, uint64_t len, uint64_t seed,
                         uint64_t idx)
{
    cs_cmd_t c = {op, region, off, len, seed, idx};
    cs_reply_t r;

    ck_assert_int_eq(hx_write_all(sp->cmd, &c, sizeof(c)), 0);
    ck_assert_msg(cs_read_all(sp->rep, &r, sizeof(r), CS_WAIT_MS) == 0,
                  "the server process did not answer");
    return r;
}

static void cs_server_verify(cs_server_proc_t *sp, uint32_t region,
                             uint64_t off, uint64_t len, uint64_t seed,
                             uint64_t idx)
{
    cs_reply_t r = cs_ask(sp, CS_CHECK, region, off, len, seed, idx);

    ck_assert_msg(r.status == 0, "[%s] %s", hx_tls_label(), r.msg);
}

static void cs_server_stop(cs_server_proc_t *sp)
{
    cs_reply_t r = cs_ask(sp, CS_QUIT, 0, 0, 0, 0, 0);
    int st;

    ck_assert_msg(r.status == HIXL_SUCCESS, "HixlCSServerDestroy: %d",
                  r.status);
    ck_assert_int_eq(waitpid(sp->pid, &st, 0), sp->pid);
    ck_assert_msg(WIFEXITED(st) && (WEXITSTATUS(st) == 0), "server status "
                  "%#x", st);
    close(sp->cmd);
    close(sp->rep);
}

/* ---- the client ------------------------------------------------------------- */

static HixlClientHandle cs_client(const cs_server_proc_t *sp,
                                  EndpointDesc *ep)
{
    HixlClientDesc desc;
    HixlClientConfig cfg;
    HixlClientHandle c = (HixlClientHandle)(uintptr_t)1;

    memset(&desc, 0, sizeof(desc));
    memset(&cfg, 0, sizeof(cfg));
    EndpointDescInit(ep, 1);
    desc.local_endpoint  = ep;
    desc.remote_endpoint = ep;
    desc.server_ip       = "127.0.0.1";
    desc.server_port     = sp->port;
    desc.tc              = 132;
    desc.sl              = 4;
    cfg.global_resource_config = "{\"comm_resource_config.qos\": \"7\"}";
    hx_ok(HixlCSClientCreate(&desc, &cfg, &c));
    ck_assert_ptr_nonnull(c);
    return c;
}

/* The table: every region the server has, its address, size and tag. */
static void cs_check_table(HixlClientHandle c, const cs_server_proc_t *sp,
                           int late_too, int without)
{
    CommMem *mems = NULL;
    char **tags = NULL;
    uint32_t n = 0, i;
    int r, seen[CS_REGIONS + 1] = {0}, want = 0;

    hx_ok(HixlCSClientGetRemoteMem(c, &mems, &tags, &n, CS_WAIT_MS));
    for (r = 0; r <= CS_REGIONS; ++r) {
        want += (r != without) && ((r < CS_REGIONS) || late_too);
    }
    ck_assert_uint_eq(n, (uint32_t)want);
    for (i = 0; i < n; ++i) {
        for (r = 0; r <= CS_REGIONS; ++r) {
            if ((uintptr_t)mems[i].addr == sp->addr[r]) {
                break;
            }
        }
        ck_assert_msg(r <= CS_REGIONS, "entry %u: unknown address %p", i,
                      mems[i].addr);
        ck_assert_msg(!seen[r] && (r != without), "entry %u: region %d", i,
                      r);
        seen[r] = 1;
        ck_assert_int_eq(mems[i].type, COMM_MEM_TYPE_HOST);
        ck_assert_uint_eq(mems[i].size, CS_REGION_LEN);
        ck_assert_str_eq(tags[i], cs_tags[r]);
    }
}

static void cs_wait_complete(HixlClientHandle c, CompleteHandle h)
{
    HixlCompleteStatus st = HIXL_COMPLETE_STATUS_WAITING;
    int spins;

    for (spins = 0; spins < CS_WAIT_MS * 10; ++spins) {
        hx_ok(HixlCSClientQueryCompleteStatus(c, h, &st));
        if (st != HIXL_COMPLETE_STATUS_WAITING) {
            break;
        }
        usleep(100);
    }
    ck_assert_msg(st == HIXL_COMPLETE_STATUS_COMPLETED, "[%s] batch ended %d:"
                  " %s", hx_tls_label(), (int)st, hixl_last_error());
    /* reported: the handle is released */
    hx_expect(HixlCSClientQueryCompleteStatus(c, h, &st), HIXL_PARAM_INVALID,
              NULL);
}

START_TEST(test_put_get)
{
    const size_t piece = 64 * 1024 + 8;
    HixlOneSideOpDesc d[4];
    cs_server_proc_t sp;
    HixlClientHandle c;
    CompleteHandle h;
    MemHandle lh, lh2;
    EndpointDesc ep;
    uint8_t *local;
    CommMem cm;
    int k;

    hx_use_tls(_i);
    cs_server_start(&sp);
    c = cs_client(&sp, &ep);
    local   = hx_alloc_pages(CS_REGION_LEN);
    cm.type = COMM_MEM_TYPE_HOST;
    cm.addr = local;
    cm.size = CS_REGION_LEN;
    hx_ok(HixlCSClientRegMem(c, "local", &cm, &lh));
    hx_ok(HixlCSClientConnect(c, CS_WAIT_MS));
    cs_check_table(c, &sp, 0, -1);

    /* Put, sync: four pieces into two regions */
    hx_pat_fill(local, 4 * piece, 7, 0);
    for (k = 0; k < 4; ++k) {
        d[k].local_buf  = local + (size_t)k * piece;
        d[k].remote_buf = (void*)(uintptr_t)(sp.addr[k % 2] + 4096 +
                                             (uint64_t)(k / 2) * piece);
        d[k].len        = piece;
    }
    hx_ok(HixlCSClientBatchPutSync(c, 4, d, CS_WAIT_MS));
    for (k = 0; k < 4; ++k) {
        cs_server_verify(&sp, (uint32_t)(k % 2),
                         4096 + (uint64_t)(k / 2) * piece, piece, 7,
                         (uint64_t)k * piece);
    }
    /* around them the regions are untouched */
    cs_server_verify(&sp, 0, 0, 4096, 100, 0);
    cs_server_verify(&sp, 1, 4096 + 2 * piece, 4096, 101, 4096 + 2 * piece);

    /* Get, sync: the untagged region's pattern, whole */
    memset(local, 0, CS_REGION_LEN);
    d[0].local_buf  = local;
    d[0].remote_buf = (void*)(uintptr_t)sp.addr[2];
    d[0].len        = CS_REGION_LEN;
    hx_ok(HixlCSClientBatchGetSync(c, 1, d, CS_WAIT_MS));
    hx_pat_assert(local, CS_REGION_LEN, 102, 0, "Get into the client");

    /* Put and Get, async, with the handles queried to the end */
    hx_pat_fill(local, CS_REGION_LEN, 9, 0);
    d[0].local_buf  = local;
    d[0].remote_buf = (void*)(uintptr_t)sp.addr[1];
    d[0].len        = CS_REGION_LEN;
    hx_ok(HixlCSClientBatchPutAsync(c, 1, d, &h));
    cs_wait_complete(c, h);
    cs_server_verify(&sp, 1, 0, CS_REGION_LEN, 9, 0);
    memset(local, 0, CS_REGION_LEN);
    d[0].remote_buf = (void*)(uintptr_t)sp.addr[0];
    d[1].local_buf  = local + CS_REGION_LEN / 2;
    d[1].remote_buf = (void*)(uintptr_t)(sp.addr[0] + CS_REGION_LEN / 2);
    d[0].len = d[1].len = CS_REGION_LEN / 2;
    hx_ok(HixlCSClientBatchGetAsync(c, 2, d, &h));
    cs_wait_complete(c, h);
    /* region 0: its first pattern, but where the sync Put wrote */
    hx_pat_assert(local, 4096, 100, 0, "region 0 head");
    hx_pat_assert(local + 4096, piece, 7, 0, "region 0, piece 0");
    hx_pat_assert(local + 4096 + piece, piece, 7, 2 * piece,
                  "region 0, piece 2");
    hx_pat_assert(local + 4096 + 2 * piece, CS_REGION_LEN - 4096 - 2 * piece,
                  100, 4096 + 2 * piece, "region 0 tail");

    /* a region the server registers after the connect is in the next
     * table; one it unregisters is gone from it */
    ck_assert_int_eq(cs_ask(&sp, CS_LATE_REG, 0, 0, 0, 0, 0).status, 0);
    cs_check_table(c, &sp, 1, -1);
    d[0].local_buf  = local;
    d[0].remote_buf = (void*)(uintptr_t)sp.addr[CS_LATE];
    d[0].len        = 4096;
    hx_ok(HixlCSClientBatchGetSync(c, 1, d, CS_WAIT_MS));
    hx_pat_assert(local, 4096, 100 + CS_LATE, 0, "the late region");
    ck_assert_int_eq(cs_ask(&sp, CS_UNREG, 1, 0, 0, 0, 0).status, 0);
    cs_check_table(c, &sp, 1, 1);

    /* client regions: a second one, its stale handle, a foreign one */
    cm.addr = hx_alloc_pages(4096);
    cm.size = 4096;
    hx_ok(HixlCSClientRegMem(c, NULL, &cm, &lh2));
    hx_ok(HixlCSClientUnregMem(c, lh2));
    hx_expect(HixlCSClientUnregMem(c, lh2), HIXL_PARAM_INVALID, "mem_handle");
    hx_expect(HixlCSClientUnregMem(c, (MemHandle)local), HIXL_PARAM_INVALID,
              "mem_handle");
    hx_free_pages(cm.addr, 4096);
    hx_ok(HixlCSClientUnregMem(c, lh));
    hx_ok(HixlCSClientDestroy(c));
    cs_server_stop(&sp);
    hx_free_pages(local, CS_REGION_LEN);
}
END_TEST

/* What CANN defines errors for, none of which may crash. */
START_TEST(test_errors)
{
    HixlServerDesc sd;
    HixlServerConfig scfg;
    HixlClientDesc cd;
    HixlClientConfig ccfg;
    HixlServerHandle s = (HixlServerHandle)(uintptr_t)1;
    HixlClientHandle c = (HixlClientHandle)(uintptr_t)1, c2;
    HixlOneSideOpDesc d = {NULL, NULL, 8};
    HixlCompleteStatus st;
    CompleteHandle h = NULL;
    EndpointDesc ep;
    MemHandle mh;
    CommMem cm = {COMM_MEM_TYPE_HOST, NULL, 0};
    CommMem *mems;
    char **tags;
    uint32_t n;
    int junk = 0;

    memset(&sd, 0, sizeof(sd));
    memset(&scfg, 0, sizeof(scfg));
    memset(&cd, 0, sizeof(cd));
    memset(&ccfg, 0, sizeof(ccfg));
    EndpointDescInit(&ep, 1);
    ck_assert_int_eq(EndpointDescInit(NULL, 1), 2);
    ck_assert_int_eq(ep.protocol, COMM_PROTOCOL_RESERVED);
    ck_assert_int_eq(sizeof(HixlServerDesc), 128);
    ck_assert_int_eq(sizeof(HixlClientDesc), 128);
    ck_assert_int_eq(sizeof(HixlServerConfig), 128);
    ck_assert_int_eq(sizeof(CommAddr), 40);
    ck_assert_int_eq(sizeof(EndpointLoc), 64);

    /* server: the handle is NULL first, then the checks */
    hx_expect(HixlCSServerCreate(&sd, &scfg, NULL), HIXL_PARAM_INVALID, NULL);
    hx_expect(HixlCSServerCreate(NULL, &scfg, &s), HIXL_PARAM_INVALID,
              "server_desc");
    ck_assert_ptr_null(s);
    hx_expect(HixlCSServerCreate(&sd, &scfg, &s), HIXL_PARAM_INVALID,
              "server_ip");
    sd.server_ip = "127.0.0.1";
    hx_expect(HixlCSServerCreate(&sd, NULL, &s), HIXL_PARAM_INVALID, "config");
    sd.server_port = 65536;
    hx_expect(HixlCSServerCreate(&sd, &scfg, &s), HIXL_PARAM_INVALID,
              "65535");
    sd.server_port = hx_stable_port();
    scfg.global_resource_config = "{\"comm_resource_config.listen_port\": 0}";
    hx_expect(HixlCSServerCreate(&sd, &scfg, &s), HIXL_PARAM_INVALID,
              "listen_port");
    scfg.global_resource_config = "[]";
    hx_expect(HixlCSServerCreate(&sd, &scfg, &s), HIXL_PARAM_INVALID,
              "JSON object");
    scfg.global_resource_config = "";
    hx_ok(HixlCSServerCreate(&sd, &scfg, &s));
    hx_expect(HixlCSServerRegMem(s, "t", NULL, &mh), HIXL_PARAM_INVALID,
              "mem");
    hx_expect(HixlCSServerRegMem(s, "t", &cm, NULL), HIXL_PARAM_INVALID,
              "mem_handle");
    cm.type = (CommMemType)7;
    cm.addr = &junk;
    cm.size = sizeof(junk);
    hx_expect(HixlCSServerRegMem(s, "t", &cm, &mh), HIXL_PARAM_INVALID,
              "type");
    hx_expect(HixlCSServerRegMem(NULL, "t", &cm, &mh), HIXL_PARAM_INVALID,
              "server_handle");
    hx_expect(HixlCSServerRegMem(&junk, "t", &cm, &mh), HIXL_PARAM_INVALID,
              "server_handle");
    hx_expect(HixlCSServerUnregMem(s, NULL), HIXL_PARAM_INVALID, NULL);
    hx_expect(HixlCSServerUnregMem(s, &junk), HIXL_PARAM_INVALID,
              "mem_handle");
    hx_ok(HixlCSServerListen(s, 0));
    hx_expect(HixlCSServerListen(s, 0), HIXL_FAILED, "listens already");
    hx_ok(HixlCSServerDestroy(s));
    /* destroyed: a stale handle, refused without being read */
    hx_expect(HixlCSServerListen(s, 1), HIXL_PARAM_INVALID, "server_handle");
    hx_expect(HixlCSServerDestroy(s), HIXL_PARAM_INVALID, "server_handle");

    /* client */
    hx_expect(HixlCSClientCreate(&cd, &ccfg, &c), HIXL_PARAM_INVALID,
              "server_ip");
    ck_assert_ptr_null(c);
    cd.server_ip = "127.0.0.1";
    hx_expect(HixlCSClientCreate(&cd, &ccfg, &c), HIXL_PARAM_INVALID,
              "local_endpoint");
    cd.local_endpoint = cd.remote_endpoint = &ep;
    hx_expect(HixlCSClientCreate(&cd, &ccfg, &c), HIXL_PARAM_INVALID,
              "[1, 65535]");
    cd.server_port = 70000;
    hx_expect(HixlCSClientCreate(&cd, &ccfg, &c), HIXL_PARAM_INVALID,
              "[1, 65535]");
    cd.server_port = 1;
    cd.server_ip   = "localhost";
    hx_expect(HixlCSClientCreate(&cd, &ccfg, &c), HIXL_PARAM_INVALID,
              "numeric");
    cd.server_ip = "127.0.0.1";
    ccfg.global_resource_config = "{\"comm_resource_config.qos\": 8}";
    hx_expect(HixlCSClientCreate(&cd, &ccfg, &c), HIXL_PARAM_INVALID, "qos");
    /* a server's field is not a client's business, as in CANN */
    ccfg.global_resource_config =
        "{\"comm_resource_config.listen_port\": 0, "
        "\"comm_resource_config.max_active_channels\": \"16\"}";
    hx_ok(HixlCSClientCreate(&cd, &ccfg, &c));
    ccfg.global_resource_config = NULL;
    hx_ok(HixlCSClientCreate(&cd, &ccfg, &c2));

    /* nobody listens on port 1 */
    ck_assert_int_ne(HixlCSClientConnect(c, 2000), HIXL_SUCCESS);
    hx_expect(HixlCSClientGetRemoteMem(c, NULL, &tags, &n, 100),
              HIXL_PARAM_INVALID, "remote_mem_list");
    ck_assert_int_ne(HixlCSClientGetRemoteMem(c, &mems, &tags, &n, 100),
                     HIXL_SUCCESS);
    hx_expect(HixlCSClientBatchPutSync(c, 0, &d, 100), HIXL_PARAM_INVALID,
              "list_num is 0");
    hx_expect(HixlCSClientBatchGetSync(c, 1, NULL, 100), HIXL_PARAM_INVALID,
              "desc_list");
    hx_expect(HixlCSClientBatchPutAsync(c, 0, &d, &h), HIXL_PARAM_INVALID,
              "list_num is 0");
    hx_expect(HixlCSClientBatchGetAsync(c, 1, &d, NULL), HIXL_PARAM_INVALID,
              "complete_handle");
    hx_expect(HixlCSClientBatchPutSync(NULL, 1, &d, 100), HIXL_PARAM_INVALID,
              "client_handle");
    hx_expect(HixlCSClientQueryCompleteStatus(c, NULL, &st),
              HIXL_PARAM_INVALID, "complete_handle");
    hx_expect(HixlCSClientQueryCompleteStatus(c, &junk, NULL),
              HIXL_PARAM_INVALID, "complete_status");
    ck_assert_int_ne(HixlCSClientQueryCompleteStatus(c, &junk, &st),
                     HIXL_SUCCESS);
    hx_expect(HixlCSClientRegMem(c, NULL, NULL, &mh), HIXL_PARAM_INVALID,
              "mem");
    hx_expect(HixlCSClientUnregMem(c, NULL), HIXL_PARAM_INVALID, NULL);
    hx_ok(HixlCSClientDestroy(c));
    hx_expect(HixlCSClientConnect(c, 10), HIXL_PARAM_INVALID, "client_handle");
    hx_expect(HixlCSClientDestroy(c), HIXL_PARAM_INVALID, "client_handle");
    hx_ok(HixlCSClientDestroy(c2));
}
END_TEST

/* A batch that ends TIMEOUT puts the client in CANN's failed state: later
 * batches are HIXL_FAILED until it is recreated.  A descriptor refused
 * before anything moved (PARAM_INVALID) does not.  The TIMEOUT is made
 * certain by stopping the server process (SIGSTOP): over tcp its engine
 * must acknowledge the bytes, and a stopped process acknowledges nothing. */
START_TEST(test_failed_state)
{
    HixlOneSideOpDesc d;
    cs_server_proc_t sp;
    HixlClientHandle c;
    MemHandle lh;
    EndpointDesc ep;
    uint8_t *local;
    CommMem cm;
    hixl_status_t st;

    hx_use_tls(0);
    ck_assert_str_eq(hx_tls_label(), "UCX_TLS=tcp");
    cs_server_start(&sp);
    c = cs_client(&sp, &ep);
    local   = hx_alloc_pages(CS_REGION_LEN);
    cm.type = COMM_MEM_TYPE_HOST;
    cm.addr = local;
    cm.size = CS_REGION_LEN;
    hx_ok(HixlCSClientRegMem(c, "local", &cm, &lh));
    hx_ok(HixlCSClientConnect(c, CS_WAIT_MS));
    d.local_buf  = local;
    d.remote_buf = (void*)(uintptr_t)(sp.addr[0] + CS_REGION_LEN);
    d.len        = 16;   /* past the region */
    hx_expect(HixlCSClientBatchPutSync(c, 1, &d, CS_WAIT_MS),
              HIXL_PARAM_INVALID, "descriptor 0");
    d.remote_buf = (void*)(uintptr_t)sp.addr[0];
    d.len        = CS_REGION_LEN;
    hx_pat_fill(local, CS_REGION_LEN, 21, 0);
    hx_ok(HixlCSClientBatchPutSync(c, 1, &d, CS_WAIT_MS));
    cs_server_verify(&sp, 0, 0, CS_REGION_LEN, 21, 0);

    hx_stop_child(sp.pid);   /* stopped for certain before the batch */
    st = HixlCSClientBatchPutSync(c, 1, &d, 300);
    ck_assert_int_eq(kill(sp.pid, SIGCONT), 0);
    ck_assert_msg(st == HIXL_TIMEOUT, "a batch to a stopped server: %s",
                  hixl_strerror(st));
    hx_expect(HixlCSClientBatchGetSync(c, 1, &d, CS_WAIT_MS), HIXL_FAILED,
              "create a new client");
    hx_expect(HixlCSClientBatchPutAsync(c, 1, &d, &(CompleteHandle){NULL}),
              HIXL_FAILED, "create a new client");
    hx_ok(HixlCSClientDestroy(c));

    /* a new client works */
    c = cs_client(&sp, &ep);
    hx_ok(HixlCSClientRegMem(c, "local", &cm, &lh));
    hx_ok(HixlCSClientConnect(c, CS_WAIT_MS));
    hx_pat_fill(local, CS_REGION_LEN, 22, 0);
    hx_ok(HixlCSClientBatchPutSync(c, 1, &d, CS_WAIT_MS));
    cs_server_verify(&sp, 0, 0, CS_REGION_LEN, 22, 0);
    hx_ok(HixlCSClientDestroy(c));
    cs_server_stop(&sp);
    hx_free_pages(local, CS_REGION_LEN);
}
END_TEST

static Suite *it_cs_suite(void)
{
    Suite *s = suite_create("it_cs");
    TCase *tc = hx_tcase("cs");

    tcase_add_loop_test(tc, test_put_get, 0, hx_tls_count);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_failed_state);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_cs_suite());
}
