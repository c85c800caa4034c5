/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: the verbs of hixl_verbs.h between two processes.
 *
 *  - symmetric: both engines listen and pass the same world list, so rank 0
 *    is the parent and rank 1 the child everywhere; each writes the other's
 *    two receive regions (one from HixlMemAlloc, one registered mmap'd
 *    pages) whole, in chunks of varying size, with HixlRdmaWrite and
 *    HixlRdmaWriteAsync, from two threads with a stream each, then
 *    HixlFlush on each region (one while the other thread still posts) and
 *    says so over a pipe; the other then checks every byte;
 *  - client-only writer: the parent is client-only and passes only its peer
 *    (ranks local to it); the child listens, learns the parent's table
 *    through the connection the parent made, and is refused a write to it;
 *  - misuse: writes before the exchange, to this process' own rank, out of
 *    a region, to an unknown region or rank, a second exchange, an
 *    unregistered local buffer: each PARAM_INVALID with a message.
 *
 * The two processes talk over a pair of pipes; the child reports failures
 * there and in its exit status, never through Check.
 */
#include "config.h"
#include "harness.h"

#include <hixl/hixl_verbs.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define VT_RECV_LEN   (3 * HX_MIB + 123)   /* each receive region */
#define VT_EXCHANGE_MS 60000
#define VT_PIPE_MS     90000

/* One message between the two processes. */
typedef struct vt_msg {
    char    tag[16];
    int32_t code;
    char    text[1000];
} vt_msg_t;

typedef struct vt_link {
    int rd;
    int wr;
} vt_link_t;

static int vt_send(const vt_link_t *l, const char *tag, int32_t code,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int vt_send(const vt_link_t *l, const char *tag, int32_t code,
                   const char *fmt, ...)
{
    vt_msg_t m;
    va_list ap;

    memset(&m, 0, sizeof(m));
    snprintf(m.tag, sizeof(m.tag), "%s", tag);
    m.code = code;
    va_start(ap, fmt);
    vsnprintf(m.text, sizeof(m.text), fmt, ap);
    va_end(ap);
    /* smaller than PIPE_BUF: one write is atomic and whole */
    return (write(l->wr, &m, sizeof(m)) == (ssize_t)sizeof(m)) ? 0 : -1;
}

static int vt_recv(const vt_link_t *l, const char *tag, vt_msg_t *m)
{
    struct pollfd pfd = {l->rd, POLLIN, 0};
    size_t got = 0;
    ssize_t n;

    while (got < sizeof(*m)) {
        if (poll(&pfd, 1, VT_PIPE_MS) <= 0) {
            return -1;
        }
        n = read(l->rd, (char*)m + got, sizeof(*m) - got);
        if (n <= 0) {
            return -1;
        }
        got += (size_t)n;
    }
    return strcmp(m->tag, tag) ? -1 : 0;
}

/* What one side does; run by the parent and by the child. */
typedef struct vt_side {
    const char *name;         /* engine name to initialize */
    int         listen;       /* with hixl.ListenEphemeral */
    int         world;        /* pass [parent, child]; else only the peer */
    int         is_parent;
    int         writes;       /* writes into the peer */
    uint64_t    seed;         /* what this side writes */
    uint64_t    peer_seed;    /* what the peer writes here */
} vt_side_t;

/* The failures of a side, as text: the child sends it to the parent. */
typedef struct vt_result {
    int  failed;
    char text[900];
} vt_result_t;

static void vt_fail(vt_result_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void vt_fail(vt_result_t *r, const char *fmt, ...)
{
    va_list ap;

    if (r->failed++) {
        return;   /* the first failure explains the rest */
    }
    va_start(ap, fmt);
    vsnprintf(r->text, sizeof(r->text), fmt, ap);
    va_end(ap);
}

#define VT_OK(_r, _call) \
    do { \
        HixlResult _st = (_call); \
        if (_st != HIXL_SUCCESS) { \
            vt_fail((_r), "%s: %s (%d): %s", #_call, hixl_strerror(_st), \
                    (int)_st, hixl_last_error()); \
        } \
    } while (0)

#define VT_INVALID(_r, _call, _substr) \
    do { \
        HixlResult _st = (_call); \
        if ((_st != HIXL_PARAM_INVALID) || \
            !strstr(hixl_last_error(), (_substr))) { \
            vt_fail((_r), "%s gave %s \"%s\", expected PARAM_INVALID " \
                    "\"...%s...\"", #_call, hixl_strerror(_st), \
                    hixl_last_error(), (_substr)); \
        } \
    } while (0)

/* Write region `mr` of rank `peer` whole: blocking writes, and async writes
 * on `stream`, in chunks of 1 B .. 300 KiB so that both small and large puts
 * are exercised.  The source holds the pattern at the same offsets. */
typedef struct vt_writer {
    HixlContext     ctx;
    uint32_t        peer;
    uint32_t        mr;
    HixlStream      stream;
    const uint8_t  *src;
    uint64_t        rnd;
    vt_result_t     r;
} vt_writer_t;

static void *vt_write_region(void *arg)
{
    vt_writer_t *w = arg;
    uint64_t off, len;
    unsigned n = 0;

    for (off = 0; off < VT_RECV_LEN; off += len, ++n) {
        len = 1 + hx_rand(&w->rnd) % (300 * 1024);
        if (len > VT_RECV_LEN - off) {
            len = VT_RECV_LEN - off;
        }
        if (n % 3 == 0) {
            VT_OK(&w->r, HixlRdmaWrite(w->ctx, w->peer, w->mr, off,
                                       w->src + off, len));
        } else {
            VT_OK(&w->r, HixlRdmaWriteAsync(w->ctx, w->peer, w->mr, off,
                                            w->src + off, len, w->stream));
        }
    }
    return NULL;
}

/* Both receive regions of the peer, from two threads at once (one stream
 * each); region 0 is flushed while region 1 may still be being posted. */
static void vt_write_peer(HixlContext ctx, uint32_t peer, const uint8_t *src,
                          const vt_side_t *s, vt_result_t *r)
{
    vt_writer_t w[2];
    pthread_t thread;
    int i;

    memset(w, 0, sizeof(w));
    for (i = 0; i < 2; ++i) {
        w[i].ctx  = ctx;
        w[i].peer = peer;
        w[i].mr   = (uint32_t)i;
        w[i].src  = src;
        w[i].rnd  = s->seed + (uint64_t)i;
        VT_OK(r, HixlStreamCreate(ctx, &w[i].stream));
    }
    if (r->failed) {
        return;
    }
    if (pthread_create(&thread, NULL, vt_write_region, &w[1]) != 0) {
        vt_fail(r, "pthread_create failed");
        return;
    }
    vt_write_region(&w[0]);
    /* the flush, not the streams, is what makes the data visible */
    VT_OK(&w[0].r, HixlFlush(ctx, peer, 0));
    pthread_join(thread, NULL);
    VT_OK(&w[1].r, HixlFlush(ctx, peer, 1));
    for (i = 0; i < 2; ++i) {
        if (w[i].r.failed) {
            vt_fail(r, "writer of region %d: %s", i, w[i].r.text);
        }
        VT_OK(r, HixlStreamDestroy(w[i].stream));
    }
}

/* The misuse checks, once the exchange is done. */
static void vt_misuse(HixlContext ctx, uint32_t self, uint32_t peer,
                      const uint8_t *src, const void *unregistered,
                      vt_result_t *r)
{
    const char *const names[] = {"127.0.0.1:1"};

    if (self != HIXL_VERBS_NO_RANK) {
        VT_INVALID(r, HixlRdmaWrite(ctx, self, 0, 0, src, 8), "this engine");
    }
    VT_INVALID(r, HixlRdmaWrite(ctx, 7, 0, 0, src, 8), "rank 7");
    VT_INVALID(r, HixlRdmaWrite(ctx, peer, 9, 0, src, 8), "no region 9");
    VT_INVALID(r, HixlRdmaWrite(ctx, peer, 0, VT_RECV_LEN - 4, src, 8),
               "outside");
    VT_INVALID(r, HixlFlush(ctx, peer, 5), "no region 5");
    VT_INVALID(r, HixlExchangeMrInfo(ctx, names, 1, 1000), "already");
    VT_INVALID(r, HixlRdmaWrite(ctx, peer, 0, 0, unregistered, 8), "");
}

/* One side, parent or child: returns its failures in r. */
static void vt_run_side(const vt_side_t *s, const vt_link_t *l,
                        vt_result_t *r)
{
    const hixl_option_t listen_opt[] = {{"hixl.ListenEphemeral", "1"}};
    HixlContext ctx = NULL;
    HixlMrHandle mr_alloc = NULL, mr_pages = NULL, mr_src = NULL;
    const char *names[2];
    uint32_t self = HIXL_VERBS_NO_RANK, peer, nranks = 0;
    uint8_t *pages = NULL, *src = NULL, *loose = NULL;
    char peer_name[HIXL_ENGINE_NAME_MAX + 1];
    void *alloc = NULL;
    uint64_t raddr, rlen;
    int64_t bad;
    vt_msg_t m;

    pages = mmap(NULL, VT_RECV_LEN, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    src   = mmap(NULL, VT_RECV_LEN, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    loose = malloc(64);
    if ((pages == MAP_FAILED) || (src == MAP_FAILED) || (loose == NULL)) {
        vt_fail(r, "out of memory");
        return;
    }
    memset(pages, 0, VT_RECV_LEN);
    hx_pat_fill(src, VT_RECV_LEN, s->seed, 0);

    VT_OK(r, HixlInit(s->name, s->listen ? listen_opt : NULL,
                      s->listen ? 1 : 0, &ctx));
    if (r->failed) {
        goto out;
    }
    /* region 0: memory peers write into, from the engine; region 1:
     * registered pages; region 2: the source of this side's writes */
    VT_OK(r, HixlMemAlloc(ctx, VT_RECV_LEN, &alloc, &mr_alloc));
    VT_OK(r, HixlMemReg(ctx, pages, VT_RECV_LEN, &mr_pages));
    VT_OK(r, HixlMemReg(ctx, src, VT_RECV_LEN, &mr_src));
    if (r->failed) {
        goto out;
    }
    memset(alloc, 0, VT_RECV_LEN);
    if ((HixlMrGetIndex(mr_alloc) != 0) || (HixlMrGetIndex(mr_pages) != 1) ||
        (HixlMrGetIndex(mr_src) != 2) || (HixlMrGetAddr(mr_pages) != pages) ||
        (HixlMrGetLen(mr_src) != VT_RECV_LEN)) {
        vt_fail(r, "region numbers %u %u %u, expected 0 1 2",
                HixlMrGetIndex(mr_alloc), HixlMrGetIndex(mr_pages),
                HixlMrGetIndex(mr_src));
    }
    VT_INVALID(r, HixlRdmaWrite(ctx, 0, 0, 0, src, 8), "HixlExchangeMrInfo");

    /* names over the pipe; parent first in the world list */
    vt_send(l, "name", 0, "%s", HixlGetName(ctx));
    if (vt_recv(l, "name", &m) != 0) {
        vt_fail(r, "no name from the other process");
        goto out;
    }
    if (strlen(m.text) >= sizeof(peer_name)) {
        vt_fail(r, "the other process' name is too long");
        goto out;
    }
    memcpy(peer_name, m.text, strlen(m.text) + 1);
    names[s->is_parent ? 0 : 1] = HixlGetName(ctx);
    names[s->is_parent ? 1 : 0] = peer_name;
    if (s->world) {
        VT_OK(r, HixlExchangeMrInfo(ctx, names, 2, VT_EXCHANGE_MS));
    } else {
        VT_OK(r, HixlExchangeMrInfo(ctx, &names[s->is_parent ? 1 : 0], 1,
                                    VT_EXCHANGE_MS));
    }
    if (r->failed) {
        goto out;
    }
    VT_OK(r, HixlGetRank(ctx, &self, &nranks));
    if (s->world) {
        if ((self != (s->is_parent ? 0u : 1u)) || (nranks != 2)) {
            vt_fail(r, "rank %u of %u, expected %u of 2", self, nranks,
                    s->is_parent ? 0u : 1u);
        }
        peer = 1 - self;
    } else if ((self != HIXL_VERBS_NO_RANK) || (nranks != 1)) {
        vt_fail(r, "peers-only list: rank %u of %u", self, nranks);
        peer = 0;
    } else {
        peer = 0;
    }
    VT_OK(r, HixlGetRemoteMr(ctx, peer, 1, &raddr, &rlen));
    if (!r->failed && (rlen != VT_RECV_LEN)) {
        vt_fail(r, "peer's region 1 is %llu bytes", (unsigned long long)rlen);
    }

    if (s->writes && !r->failed) {
        vt_write_peer(ctx, peer, src, s, r);
        vt_misuse(ctx, self, peer, src, loose, r);
    } else if (!r->failed) {
        /* the peer is client-only here: it cannot be written to */
        VT_INVALID(r, HixlRdmaWrite(ctx, peer, 0, 0, src, 8), "client-only");
    }

    /* both flushed: each checks what the other wrote, every byte */
    vt_send(l, "flushed", r->failed, "%s", r->text);
    if (vt_recv(l, "flushed", &m) != 0) {
        vt_fail(r, "the other process never flushed");
        goto out;
    }
    if (m.code == 0 && s->peer_seed != 0) {
        bad = hx_pat_find_bad(alloc, VT_RECV_LEN, s->peer_seed, 0);
        if (bad >= 0) {
            vt_fail(r, "region 0 (HixlMemAlloc) byte %lld is %u, expected %u",
                    (long long)bad, ((uint8_t*)alloc)[bad],
                    hx_pat(s->peer_seed, (uint64_t)bad));
        }
        bad = hx_pat_find_bad(pages, VT_RECV_LEN, s->peer_seed, 0);
        if (bad >= 0) {
            vt_fail(r, "region 1 (HixlMemReg) byte %lld is %u, expected %u",
                    (long long)bad, pages[bad], hx_pat(s->peer_seed,
                                                       (uint64_t)bad));
        }
    }
    /* nobody finalizes before both checked */
    vt_send(l, "checked", r->failed, "%s", r->text);
    if (vt_recv(l, "checked", &m) != 0) {
        vt_fail(r, "the other process never checked");
    }

out:
    if (ctx != NULL) {
        VT_OK(r, HixlMemDereg(ctx, mr_pages));
        VT_INVALID(r, HixlMemDereg(ctx, mr_pages), "not a live region");
        VT_OK(r, HixlFinalize(ctx));   /* frees region 0, deregisters 2 */
    }
    if (pages != MAP_FAILED) {
        munmap(pages, VT_RECV_LEN);
    }
    if (src != MAP_FAILED) {
        munmap(src, VT_RECV_LEN);
    }
    free(loose);
}

static void vt_pair(const vt_side_t *parent, const vt_side_t *child)
{
    int to_child[2], to_parent[2], status = 0;
    vt_result_t mine, theirs;
    vt_link_t pl, cl;
    vt_msg_t m;
    pid_t pid;

    ck_assert_int_eq(pipe(to_child), 0);
    ck_assert_int_eq(pipe(to_parent), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* the child: no Check here, its verdict goes over the pipe */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(HX_TEST_TIMEOUT_S);
        close(to_child[1]);
        close(to_parent[0]);
        cl.rd = to_child[0];
        cl.wr = to_parent[1];
        memset(&theirs, 0, sizeof(theirs));
        vt_run_side(child, &cl, &theirs);
        vt_send(&cl, "verdict", theirs.failed, "%s", theirs.text);
        _exit(theirs.failed ? 1 : 0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    pl.rd = to_parent[0];
    pl.wr = to_child[1];
    memset(&mine, 0, sizeof(mine));
    vt_run_side(parent, &pl, &mine);
    memset(&m, 0, sizeof(m));
    if (vt_recv(&pl, "verdict", &m) != 0) {
        snprintf(m.text, sizeof(m.text), "(no verdict from the child)");
        m.code = 1;
    }
    close(pl.rd);
    close(pl.wr);
    if (mine.failed || m.code) {
        kill(pid, SIGKILL);
    }
    waitpid(pid, &status, 0);
    ck_assert_msg(!mine.failed, "parent [%s]: %s", hx_tls_label(), mine.text);
    ck_assert_msg(!m.code, "child [%s]: %s", hx_tls_label(), m.text);
    ck_assert_msg(WIFEXITED(status) && (WEXITSTATUS(status) == 0),
                  "child [%s] ended with status %#x", hx_tls_label(), status);
}

/*
 * Both listen, same world list, both write both regions of the other.
 */
START_TEST(test_symmetric)
{
    vt_side_t p = {"127.0.0.1:0", 1, 1, 1, 1, 1001, 2002};
    vt_side_t c = {"127.0.0.1:0", 1, 1, 0, 1, 2002, 1001};

    hx_use_tls(_i);
    vt_pair(&p, &c);
}
END_TEST

/*
 * A client-only parent writes into a listening child; the parent passes
 * only its peer.
 */
START_TEST(test_client_only_writer)
{
    vt_side_t p = {"127.0.0.1", 0, 0, 1, 1, 3003, 0};
    vt_side_t c = {"127.0.0.1:0", 1, 1, 0, 0, 0, 3003};

    hx_use_tls(_i);
    vt_pair(&p, &c);
}
END_TEST

/*
 * The exchange fails cleanly: a peer that never answers is TIMEOUT naming
 * it; two client-only engines and bad lists are PARAM_INVALID.
 */
START_TEST(test_exchange_errors)
{
    const hixl_option_t listen_opt[] = {{"hixl.ListenEphemeral", "1"}};
    const char *dup[]  = {"127.0.0.1:7", "127.0.0.1:7"};
    const char *cli[]  = {"127.0.0.2"};
    const char *null[] = {NULL};
    const char *gone[1];
    HixlContext a, b;

    hx_use_tls(0);
    hx_ok(HixlInit("127.0.0.1:0", listen_opt, 1, &a));
    hx_ok(HixlInit("127.0.0.1", NULL, 0, &b));
    hx_expect(HixlExchangeMrInfo(a, dup, 2, 1000), HIXL_PARAM_INVALID,
              "both");
    hx_expect(HixlExchangeMrInfo(a, null, 1, 1000), HIXL_PARAM_INVALID,
              "NULL");
    hx_expect(HixlExchangeMrInfo(a, cli, 0, 1000), HIXL_PARAM_INVALID,
              "num_names");
    hx_expect(HixlExchangeMrInfo(b, cli, 1, 1000), HIXL_PARAM_INVALID,
              "client-only");
    /* a listening peer that never exchanges: connected, but silent */
    gone[0] = HixlGetName(a);
    hx_expect(HixlExchangeMrInfo(b, gone, 1, 1500), HIXL_TIMEOUT,
              HixlGetName(a));
    hx_expect(HixlSetTimeout(a, 0), HIXL_PARAM_INVALID, "timeout");
    hx_ok(HixlFinalize(b));
    hx_ok(HixlFinalize(a));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("it_verbs");
    TCase *tc;

    tc = hx_tcase("symmetric");
    tcase_add_loop_test(tc, test_symmetric, 0, hx_tls_count);
    suite_add_tcase(s, tc);

    tc = hx_tcase("client_only_writer");
    tcase_add_loop_test(tc, test_client_only_writer, 0, hx_tls_count);
    suite_add_tcase(s, tc);

    tc = hx_tcase("exchange_errors");
    tcase_add_test(tc, test_exchange_errors);
    suite_add_tcase(s, tc);

    return hx_main(s);
}
