/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who a listener lets in, and what proves an engine is the one it was.
 *
 *  - Idle and slow-loris connections: a separate process opens hundreds of
 *    TCP connections to a listener that never say HELLO, and dozens that
 *    dribble a HELLO header a byte at a time.  A real engine must still
 *    connect and move verified bytes, and every one of those connections
 *    must be closed by the listener's handshake deadline
 *    (hixl.HandshakeTimeoutMs), as the attacking process sees it.
 *  - Borrowed identity: what a listener answers a stranger (its HELLO_ACK)
 *    must not let that stranger pass for the listener elsewhere.  The
 *    stranger reads the resume token engine V issued to it, presents it to
 *    another listener L under V's name, and must be refused while V's own
 *    connection to L keeps carrying verified bytes.
 *  - Protocol versions: a peer of another version is refused with both
 *    versions named, on either side of the handshake.
 */
#define _GNU_SOURCE   /* memmem */
#include "config.h"
#include "harness.h"
#include "wire/ctrl_msg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IDLE_CONNS        500
#define SLOW_CONNS        50
#define HANDSHAKE_MS      1000
/* how long the attacker watches its connections before it reports those
 * still open: the deadline, plus room for a loaded machine */
#define WATCH_MS          (HANDSHAKE_MS + 20000)
#define SLOW_GAP_MS       100
#define LEGIT_BYTES       (1u << 20)

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void pipe_write(int fd, const void *p, size_t len)
{
    ck_assert(write(fd, p, len) == (ssize_t)len);
}

static int pipe_read(int fd, void *p, size_t len)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    size_t done = 0;
    ssize_t n;

    while (done < len) {
        if (poll(&pfd, 1, HX_REPLY_TIMEOUT_MS) != 1) {
            return -1;
        }
        n = read(fd, (char*)p + done, len - done);
        if (n <= 0) {
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* ---- the attacking process ------------------------------------------------ */

typedef struct attack_report {
    int      opened;
    int      still_open;    /* after WATCH_MS */
    uint64_t last_close_ms; /* after the last connection was opened */
} attack_report_t;

/* Open the connections, say "ready", then watch them: the slow ones get
 * one more byte of a HELLO header every SLOW_GAP_MS; every connection is
 * done when the listener closes it. */
static void attacker_main(int in, int out)
{
    static int fds[IDLE_CONNS + SLOW_CONNS];
    static struct pollfd pfds[IDLE_CONNS + SLOW_CONNS];
    uint8_t hdr[CTRL_HDR_LEN] = {'H', 'I', 'X', 'L', CTRL_VERSION & 0xff,
                                 CTRL_VERSION >> 8, CTRL_HELLO, 0, 200};
    attack_report_t rep = {0, 0, 0};
    size_t sent[SLOW_CONNS] = {0};
    uint64_t start, next_drip;
    char name[128], buf[256];
    int i, open_n;

    alarm((WATCH_MS / 1000) + 60);
    if (pipe_read(in, name, sizeof(name)) != 0) {
        _exit(2);
    }
    for (i = 0; i < IDLE_CONNS + SLOW_CONNS; ++i) {
        fds[i] = hx_raw_connect(name);
        pfds[i].fd     = fds[i];
        pfds[i].events = POLLIN;
    }
    rep.opened = i;
    start      = now_ms();
    pipe_write(out, "r", 1);
    open_n    = rep.opened;
    next_drip = start;
    while ((open_n > 0) && (now_ms() - start < WATCH_MS)) {
        if (now_ms() >= next_drip) {
            for (i = 0; i < SLOW_CONNS; ++i) {
                if ((pfds[IDLE_CONNS + i].fd >= 0) && (sent[i] < sizeof(hdr))) {
                    (void)!send(fds[IDLE_CONNS + i], &hdr[sent[i]++], 1,
                                MSG_NOSIGNAL);
                }
            }
            next_drip += SLOW_GAP_MS;
        }
        if (poll(pfds, (nfds_t)rep.opened, SLOW_GAP_MS) <= 0) {
            continue;
        }
        for (i = 0; i < rep.opened; ++i) {
            if ((pfds[i].fd >= 0) && pfds[i].revents &&
                (recv(pfds[i].fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0) &&
                (errno != EAGAIN)) {
                close(pfds[i].fd);
                pfds[i].fd        = -1;   /* poll skips it */
                rep.last_close_ms = now_ms() - start;
                --open_n;
            }
        }
    }
    rep.still_open = open_n;
    pipe_write(out, &rep, sizeof(rep));
    _exit(0);
}

START_TEST(test_idle_and_slow_do_not_lock_out)
{
    static uint8_t src[LEGIT_BYTES];
    hixl_engine_t *victim, *legit;
    int to[2], from[2], st;
    attack_report_t rep;
    const char *name;
    char namebuf[128] = {0}, ready;
    uint64_t t0, took;
    hixl_mem_handle_t h;
    void *mem;
    pid_t pid;

    hx_use_tls(_i);
    ck_assert(pipe(to) == 0 && pipe(from) == 0);
    pid = fork();   /* before any engine: the attacker never touches UCX */
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(to[1]);
        close(from[0]);
        attacker_main(to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);

    victim = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                       "hixl.HandshakeTimeoutMs", "1000", NULL);
    hx_ok(hixl_alloc_mem(victim, LEGIT_BYTES, HIXL_MEM_HOST, &mem, &h));
    name = hixl_engine_name(victim);
    snprintf(namebuf, sizeof(namebuf), "%s", name);
    pipe_write(to[1], namebuf, sizeof(namebuf));
    ck_assert_int_eq(pipe_read(from[0], &ready, 1), 0);

    /* every attacking connection is open (in the listener's backlog or
     * handshake table): a real engine comes now */
    legit = hx_engine("127.0.0.1", NULL);
    hx_pat_fill(src, sizeof(src), 77, 0);
    hx_register(legit, src, sizeof(src));
    t0 = now_ms();
    hx_ok(hixl_connect(legit, name, HX_OP_TIMEOUT_MS));
    took = now_ms() - t0;
    {
        hixl_transfer_op_desc_t d = {(uintptr_t)src, (uintptr_t)mem,
                                     sizeof(src)};

        hx_ok(hixl_transfer_sync(legit, name, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS));
    }
    hx_pat_assert(mem, sizeof(src), 77, 0, "victim memory");

    ck_assert_int_eq(pipe_read(from[0], &rep, sizeof(rep)), 0);
    printf("%s: %d idle + %d slow connections open; a real engine "
           "connected in %llu ms; the listener closed the last of them "
           "%llu ms after they were all open (deadline %d ms); %d still "
           "open after %d ms\n", hx_tls_label(), IDLE_CONNS, SLOW_CONNS,
           (unsigned long long)took, (unsigned long long)rep.last_close_ms,
           HANDSHAKE_MS, rep.still_open, WATCH_MS);
    ck_assert_int_eq(rep.opened, IDLE_CONNS + SLOW_CONNS);
    ck_assert_msg(rep.still_open == 0, "%d of %d connections that never "
                  "completed a handshake were still open %d ms later",
                  rep.still_open, rep.opened, WATCH_MS);
    ck_assert(waitpid(pid, &st, 0) == pid);
    ck_assert(WIFEXITED(st) && (WEXITSTATUS(st) == 0));
    hx_ok(hixl_finalize(legit));
    hx_ok(hixl_finalize(victim));
    close(to[1]);
    close(from[0]);
}
END_TEST

/* ---- borrowed identity ------------------------------------------------------ */

static void raw_send(int fd, const hixl_msg_t *msg)
{
    hixl_msg_buf_t buf = {NULL, 0, 0};

    ck_assert(hixl_msg_encode(&buf, msg) == HIXL_SUCCESS);
    ck_assert(send(fd, buf.data, buf.len, MSG_NOSIGNAL) == (ssize_t)buf.len);
    hixl_buf_cleanup(&buf);
}

/* Read until one whole message of `type` is decoded into msg (its bytes
 * stay in buf); other messages before it are skipped. */
static void raw_expect(int fd, uint16_t type, hixl_msg_t *msg, uint8_t *buf,
                       size_t cap)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    size_t len = 0, used;
    char err[256];
    ssize_t n;

    for (;;) {
        while (len > 0) {
            hixl_msg_decode_result_t r = hixl_msg_decode(buf, len, msg, &used,
                                                     err, sizeof(err));

            ck_assert_msg(r != CTRL_DECODE_ERROR, "undecodable answer: %s",
                          err);
            if (r == CTRL_DECODE_NEED_MORE) {
                break;
            }
            if (msg->type == type) {
                return;
            }
            memmove(buf, buf + used, len - used);
            len -= used;
        }
        ck_assert_msg(poll(&pfd, 1, HX_OP_TIMEOUT_MS) == 1, "no %s",
                      hixl_msg_type_name(type));
        n = recv(fd, buf + len, cap - len, 0);
        ck_assert_msg(n > 0, "connection closed before %s",
                      hixl_msg_type_name(type));
        len += (size_t)n;
    }
}

static void hello_as(hixl_msg_t *m, const char *name, const uint8_t *resume,
                     size_t resume_len)
{
    memset(m, 0, sizeof(*m));
    m->type                = CTRL_HELLO;
    m->u.hello.name        = hixl_msg_bytes(name, strlen(name));
    m->u.hello.host        = hixl_msg_bytes("another-host", 12);
    m->u.hello.worker_addr = hixl_msg_bytes("x", 1);
    m->u.hello.resume      = hixl_msg_bytes(resume, resume_len);
}

START_TEST(test_borrowed_token_does_not_replace)
{
    static uint8_t buf[256 * 1024];
    uint8_t token[CTRL_MAX_AUTH], src[4096];
    hixl_engine_t *l, *v;
    const char *lname, *vname;
    hixl_mem_handle_t h;
    size_t token_len;
    hixl_msg_t m;
    void *mem;
    int fd;

    l = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    lname = hixl_engine_name(l);
    hx_ok(hixl_alloc_mem(l, sizeof(src), HIXL_MEM_HOST, &mem, &h));
    v = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    vname = hixl_engine_name(v);
    hx_register(v, src, sizeof(src));
    hx_ok(hixl_connect(v, lname, HX_OP_TIMEOUT_MS));

    /* a stranger says hello to V and keeps what V answers */
    fd = hx_raw_connect(vname);
    hello_as(&m, "127.0.0.1:1", NULL, 0);
    raw_send(fd, &m);
    raw_expect(fd, CTRL_HELLO_ACK, &m, buf, sizeof(buf));
    ck_assert_int_eq(m.u.hello_ack.status, HIXL_SUCCESS);
    ck_assert_msg(m.u.hello_ack.pid == 0, "a listener told a connector of "
                  "another host its pid (%u)", m.u.hello_ack.pid);
    token_len = m.u.hello_ack.resume.len;
    ck_assert_uint_gt(token_len, 0);
    memcpy(token, m.u.hello_ack.resume.ptr, token_len);
    close(fd);

    /* ... and presents it to L as V */
    fd = hx_raw_connect(lname);
    hello_as(&m, vname, token, token_len);
    raw_send(fd, &m);
    raw_expect(fd, CTRL_HELLO_ACK, &m, buf, sizeof(buf));
    ck_assert_msg(m.u.hello_ack.status != HIXL_SUCCESS, "a borrowed resume "
                  "token was accepted as engine %s", vname);
    ck_assert_msg(memmem(m.u.hello_ack.reason.ptr, m.u.hello_ack.reason.len,
                         "another engine named", 20) != NULL,
                  "refused for another reason: %.*s",
                  (int)m.u.hello_ack.reason.len,
                  (const char*)m.u.hello_ack.reason.ptr);
    close(fd);

    /* V's own connection to L is untouched */
    hx_pat_fill(src, sizeof(src), 91, 0);
    {
        hixl_transfer_op_desc_t d = {(uintptr_t)src, (uintptr_t)mem,
                                     sizeof(src)};

        hx_ok(hixl_transfer_sync(v, lname, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS));
    }
    hx_pat_assert(mem, sizeof(src), 91, 0, "L's memory after the attempt");
    hx_ok(hixl_finalize(v));
    hx_ok(hixl_finalize(l));
}
END_TEST

/*
 * The real reconnect still works: an engine whose connection ended on its
 * side only (it disconnected, the listener has not seen it yet, or it did)
 * presents its token and gets in at once; the layer signals of the same
 * engine go on (the listener tells it is the same).
 */
START_TEST(test_same_engine_reconnects)
{
    uint8_t src[4096];
    hixl_engine_t *l, *v;
    const char *lname;
    hixl_mem_handle_t h;
    void *mem;
    int i;

    l = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    lname = hixl_engine_name(l);
    hx_ok(hixl_alloc_mem(l, sizeof(src), HIXL_MEM_HOST, &mem, &h));
    v = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    hx_register(v, src, sizeof(src));
    for (i = 0; i < 5; ++i) {
        hixl_transfer_op_desc_t d = {(uintptr_t)src, (uintptr_t)mem,
                                     sizeof(src)};

        hx_ok(hixl_connect(v, lname, HX_OP_TIMEOUT_MS));
        hx_pat_fill(src, sizeof(src), 100 + (uint64_t)i, 0);
        hx_ok(hixl_transfer_sync(v, lname, HIXL_WRITE, &d, 1,
                                 HX_OP_TIMEOUT_MS));
        hx_pat_assert(mem, sizeof(src), 100 + (uint64_t)i, 0, "L's memory");
        hx_ok(hixl_disconnect(v, lname, HX_OP_TIMEOUT_MS));
    }
    hx_ok(hixl_finalize(v));
    hx_ok(hixl_finalize(l));
}
END_TEST

/* ---- protocol versions ------------------------------------------------------ */

/* A HELLO of the version before this one: the listener answers (in its own
 * version) with a BYE whose reason names both. */
START_TEST(test_older_peer_told_both_versions)
{
    static uint8_t buf[64 * 1024];
    uint8_t hdr[CTRL_HDR_LEN] = {'H', 'I', 'X', 'L', (CTRL_VERSION - 1) & 0xff,
                                 (CTRL_VERSION - 1) >> 8, CTRL_HELLO, 0, 0};
    char want_old[32], want_new[32];
    hixl_engine_t *l;
    hixl_msg_t m;
    int fd;

    l = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1", NULL);
    fd = hx_raw_connect(hixl_engine_name(l));
    ck_assert(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL) == sizeof(hdr));
    raw_expect(fd, CTRL_BYE, &m, buf, sizeof(buf));
    snprintf(want_old, sizeof(want_old), "version %d", CTRL_VERSION - 1);
    snprintf(want_new, sizeof(want_new), "version %d", CTRL_VERSION);
    ck_assert_msg(memmem(m.u.bye.reason.ptr, m.u.bye.reason.len, want_old,
                         strlen(want_old)) &&
                  memmem(m.u.bye.reason.ptr, m.u.bye.reason.len, want_new,
                         strlen(want_new)),
                  "refusal does not name both versions: %.*s",
                  (int)m.u.bye.reason.len, (const char*)m.u.bye.reason.ptr);
    close(fd);
    hx_ok(hixl_finalize(l));
}
END_TEST

/* A listener that answers in the version before this one: connect fails
 * with both versions named. */
START_TEST(test_older_listener_named)
{
    uint8_t ack[CTRL_HDR_LEN] = {'H', 'I', 'X', 'L', (CTRL_VERSION - 1) & 0xff,
                                 (CTRL_VERSION - 1) >> 8, CTRL_HELLO_ACK, 0, 0};
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    char name[64], want[32], buf[4096];
    hixl_engine_t *e;
    int lfd, fd;
    pid_t pid;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(0x7f000001);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert(lfd >= 0);
    ck_assert(bind(lfd, (struct sockaddr*)&sin, sizeof(sin)) == 0);
    ck_assert(listen(lfd, 1) == 0);
    ck_assert(getsockname(lfd, (struct sockaddr*)&sin, &len) == 0);
    snprintf(name, sizeof(name), "127.0.0.1:%u", ntohs(sin.sin_port));
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        alarm(60);
        fd = accept(lfd, NULL, NULL);
        (void)!read(fd, buf, sizeof(buf));   /* the HELLO */
        (void)!write(fd, ack, sizeof(ack));
        usleep(200 * 1000);
        _exit(0);
    }
    close(lfd);
    e = hx_engine("127.0.0.1", NULL);
    snprintf(want, sizeof(want), "version %d", CTRL_VERSION - 1);
    hx_expect(hixl_connect(e, name, HX_OP_TIMEOUT_MS), HIXL_FAILED, want);
    snprintf(want, sizeof(want), "version %d", CTRL_VERSION);
    ck_assert_msg(strstr(hixl_last_error(), want) != NULL, "%s",
                  hixl_last_error());
    ck_assert(waitpid(pid, NULL, 0) == pid);
    hx_ok(hixl_finalize(e));
}
END_TEST

int main(void)
{
    Suite *s  = suite_create("admission");
    TCase *tc = hx_tcase("admission");
    struct rlimit rl;

    /* the victim holds up to every attacking connection at once */
    if ((getrlimit(RLIMIT_NOFILE, &rl) == 0) && (rl.rlim_cur < 4096) &&
        (rl.rlim_max > rl.rlim_cur)) {
        rl.rlim_cur = (rl.rlim_max < 4096) ? rl.rlim_max : 4096;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* tcp and sm: the transports of the two kinds of deployment here */
    tcase_add_loop_test(tc, test_idle_and_slow_do_not_lock_out, 0, 2);
    tcase_add_test(tc, test_borrowed_token_does_not_replace);
    tcase_add_test(tc, test_same_engine_reconnects);
    tcase_add_test(tc, test_older_peer_told_both_versions);
    tcase_add_test(tc, test_older_listener_named);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
