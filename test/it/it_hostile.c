/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile peers on the control connection.  A raw client sends a listening
 * engine truncated, oversized, wrong-version, out-of-order and garbage
 * messages; a raw server answers a connecting engine with bad handshakes
 * and bad memory tables.  Each must end that one connection (with a logged
 * reason) and nothing else: after every attack the engine still serves a
 * well-behaved peer, with bytes verified.  A listener that answers the
 * handshake and then never lets its UCX answer the wire-up must cost the
 * connector a TIMEOUT, not a core.
 */
#include "harness.h"
#include "wire/ctrl_msg.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

/* ---- raw sockets ---------------------------------------------------------- */

static void raw_write(int fd, const void *buf, size_t len)
{
    /* the engine may close on the first bad byte: EPIPE is fine */
    (void)!send(fd, buf, len, MSG_NOSIGNAL);
}

static void raw_send(int fd, const hixl_msg_t *msg)
{
    hixl_msg_buf_t buf = {NULL, 0, 0};

    ck_assert(hixl_msg_encode(&buf, msg) == HIXL_SUCCESS);
    raw_write(fd, buf.data, buf.len);
    hixl_buf_cleanup(&buf);
}

/* The engine closes the connection within the timeout (reads until EOF). */
static void assert_dropped(int fd, const char *attack)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    char buf[4096];
    ssize_t n = 1;

    while ((n > 0) && (poll(&pfd, 1, HX_OP_TIMEOUT_MS) == 1)) {
        n = recv(fd, buf, sizeof(buf), 0);
    }
    ck_assert_msg(n <= 0, "engine kept the connection of attack \"%s\"",
                  attack);
    close(fd);
}

static void hello_msg(hixl_msg_t *m, const char *name)
{
    memset(m, 0, sizeof(*m));
    m->type                = CTRL_HELLO;
    m->u.hello.name        = hixl_msg_bytes(name, strlen(name));
    m->u.hello.host        = hixl_msg_bytes("h", 1);
    m->u.hello.worker_addr = hixl_msg_bytes("x", 1);
}

/* ---- a listener under attack ------------------------------------------------ */

typedef struct victim {
    hixl_engine_t *engine;
    void          *mem;
    const char    *name;
} victim_t;

static void victim_start(victim_t *v)
{
    hixl_mem_handle_t h;

    v->engine = hx_engine("127.0.0.1:0", "hixl.ListenEphemeral", "1",
                          "hixl.ConnectTimeoutMs", "2000", NULL);
    v->name   = hixl_engine_name(v->engine);
    hx_ok(hixl_alloc_mem(v->engine, 1 << 16, HIXL_MEM_HOST, &v->mem, &h));
}

/* A well-behaved peer still connects and writes verified bytes. */
static void victim_still_serves(victim_t *v, uint64_t seed)
{
    hixl_engine_t *good = hx_engine("127.0.0.1", NULL);
    char src[4096];
    hixl_transfer_op_desc_t d = {(uintptr_t)src, (uintptr_t)v->mem,
                                 sizeof(src)};

    hx_pat_fill(src, sizeof(src), seed, 0);
    hx_register(good, src, sizeof(src));
    hx_ok(hixl_connect(good, v->name, HX_OP_TIMEOUT_MS));
    hx_ok(hixl_transfer_sync(good, v->name, HIXL_WRITE, &d, 1,
                             HX_OP_TIMEOUT_MS));
    hx_pat_assert(v->mem, sizeof(src), seed, 0, "victim memory");
    hx_ok(hixl_finalize(good));
}

/* Each attack: bytes to send on a fresh connection. */
typedef void (*attack_fn)(int fd);

static void attack_garbage(int fd)
{
    raw_write(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
}

static void attack_bad_magic(int fd)
{
    raw_write(fd, "NOPE\x01\x00\x01\x00\x00\x00\x00\x00", 12);
}

static void attack_wrong_version(int fd)
{
    raw_write(fd, "HIXL\x07\x00\x01\x00\x00\x00\x00\x00", 12);
}

static void attack_unknown_type(int fd)
{
    raw_write(fd, "HIXL\x01\x00\xee\x00\x00\x00\x00\x00", 12);
}

static void attack_oversized_length(int fd)
{
    /* announces a 2 GiB payload: must be refused, not allocated */
    raw_write(fd, "HIXL\x01\x00\x08\x00\x00\x00\x00\x80", 12);
}

static void attack_truncated_then_close(int fd)
{
    hixl_msg_buf_t buf = {NULL, 0, 0};
    hixl_msg_t m;

    hello_msg(&m, "127.0.0.5");
    ck_assert(hixl_msg_encode(&buf, &m) == HIXL_SUCCESS);
    raw_write(fd, buf.data, buf.len / 2);
    hixl_buf_cleanup(&buf);
    shutdown(fd, SHUT_WR);
}

static void attack_field_overrun(int fd)
{
    /* a HELLO whose name claims more bytes than the payload holds */
    static const uint8_t m[] = {'H', 'I', 'X', 'L', 1, 0, CTRL_HELLO, 0,
                                8, 0, 0, 0, 0xff, 0, 0, 0, 'a', 'b', 'c', 'd'};
    raw_write(fd, m, sizeof(m));
}

static void attack_trailing_bytes(int fd)
{
    /* a SYNC with 4 bytes more than its fields */
    static const uint8_t m[] = {'H', 'I', 'X', 'L', 1, 0, CTRL_SYNC, 0,
                                12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 9, 9,
                                9};
    raw_write(fd, m, sizeof(m));
}

static void attack_notify_before_hello(int fd)
{
    hixl_msg_t m;

    memset(&m, 0, sizeof(m));
    m.type            = CTRL_NOTIFY;
    m.u.notify.name   = hixl_msg_bytes("x", 1);
    raw_send(fd, &m);
}

static void attack_mem_add_to_listener(int fd)
{
    hixl_msg_t m;

    hello_msg(&m, "127.0.0.6");
    raw_send(fd, &m);
    memset(&m, 0, sizeof(m));
    m.type           = CTRL_MEM_ADD;
    m.u.mem_add.addr = 0x1000;
    m.u.mem_add.len  = 0x1000;
    raw_send(fd, &m);
}

static void attack_double_hello(int fd)
{
    hixl_msg_t m;

    hello_msg(&m, "127.0.0.7");
    raw_send(fd, &m);
    raw_send(fd, &m);
}

static void attack_bad_name(int fd)
{
    hixl_msg_t m;

    hello_msg(&m, "not an address");
    raw_send(fd, &m);
}

static void attack_layer_out_of_range(int fd)
{
    hixl_msg_t m;

    hello_msg(&m, "127.0.0.8");
    raw_send(fd, &m);
    memset(&m, 0, sizeof(m));
    m.type           = CTRL_LAYER;
    m.u.layer.stream = 0xffffffffu;
    raw_send(fd, &m);
}

static void attack_silent(int fd)
{
    /* connects and says nothing: dropped at the handshake timeout */
    (void)fd;
}

static const struct {
    const char *name;
    attack_fn   fn;
} attacks[] = {
    {"garbage", attack_garbage},
    {"bad magic", attack_bad_magic},
    {"wrong version", attack_wrong_version},
    {"unknown type", attack_unknown_type},
    {"oversized length", attack_oversized_length},
    {"truncated then close", attack_truncated_then_close},
    {"field overruns payload", attack_field_overrun},
    {"trailing bytes", attack_trailing_bytes},
    {"notify before hello", attack_notify_before_hello},
    {"mem_add to a listener", attack_mem_add_to_listener},
    {"double hello", attack_double_hello},
    {"bad engine name", attack_bad_name},
    {"layer signal out of range", attack_layer_out_of_range},
    {"silent client", attack_silent},
};

#define NATTACKS (sizeof(attacks) / sizeof(attacks[0]))

START_TEST(test_listener_survives_attack)
{
    victim_t v;
    int fd;

    victim_start(&v);
    fd = hx_raw_connect(v.name);
    attacks[_i].fn(fd);
    assert_dropped(fd, attacks[_i].name);
    victim_still_serves(&v, 100 + (uint64_t)_i);
    hx_ok(hixl_finalize(v.engine));
}
END_TEST

START_TEST(test_listener_survives_all_at_once)
{
    victim_t v;
    int fds[NATTACKS];
    size_t i;

    /* all attackers connected at the same time, with a good peer among them */
    victim_start(&v);
    for (i = 0; i < NATTACKS; ++i) {
        fds[i] = hx_raw_connect(v.name);
        attacks[i].fn(fds[i]);
    }
    victim_still_serves(&v, 7);
    for (i = 0; i < NATTACKS; ++i) {
        assert_dropped(fds[i], attacks[i].name);
    }
    victim_still_serves(&v, 8);
    hx_ok(hixl_finalize(v.engine));
}
END_TEST

/* ---- what strangers can make a listener hold -------------------------------- */

/* This process's resident memory, in KiB (the victim engine lives here). */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) {
            break;
        }
    }
    fclose(f);
    return kib;
}

/* A header that announces a payload of len bytes of the given type. */
static void header(uint8_t *h, uint16_t type, uint32_t len)
{
    memcpy(h, "HIXL", 4);
    h[4]  = CTRL_VERSION & 0xff;
    h[5]  = CTRL_VERSION >> 8;
    h[6]  = type & 0xff;
    h[7]  = type >> 8;
    h[8]  = len & 0xff;
    h[9]  = (len >> 8) & 0xff;
    h[10] = (len >> 16) & 0xff;
    h[11] = len >> 24;
}

#define PREAUTH_CONNS 32
#define PREAUTH_PUSH  (4u << 20)   /* bytes each tries to push */

/*
 * Before a peer has said hello (and proven it, with a secret), only HELLO
 * and AUTH_RESPONSE of their longest possible length are accepted.
 * PREAUTH_CONNS connections each announce the largest payload the codec
 * allows (as a HELLO, and as a type not allowed yet) and push megabytes
 * behind it: every one is dropped at its header, and the listener's memory
 * does not grow by what they sent (before the gate: ~16 MiB each).
 */
START_TEST(test_preauth_memory_bounded)
{
    uint8_t h[CTRL_HDR_LEN], *junk = calloc(1, PREAUTH_PUSH);
    long before, after, grown;
    int fds[PREAUTH_CONNS];
    victim_t v;
    size_t i;

    ck_assert_ptr_nonnull(junk);
    victim_start(&v);
    victim_still_serves(&v, 40);   /* warm: what a connection costs */
    before = rss_kib();
    for (i = 0; i < PREAUTH_CONNS; ++i) {
        fds[i] = hx_raw_connect(v.name);
        header(h, (i % 2) ? CTRL_HELLO : CTRL_MEM_ADD, CTRL_MAX_PAYLOAD);
        raw_write(fds[i], h, sizeof(h));
        raw_write(fds[i], junk, PREAUTH_PUSH);
    }
    for (i = 0; i < PREAUTH_CONNS; ++i) {
        assert_dropped(fds[i], "max-length header, then data");
    }
    after = rss_kib();
    grown = after - before;
    ck_assert_msg(grown < 8 * 1024, "%d connections that announced %u-byte "
                  "payloads before any handshake grew the listener by %ld "
                  "KiB (%ld -> %ld)", PREAUTH_CONNS, CTRL_MAX_PAYLOAD,
                  grown, before, after);
    victim_still_serves(&v, 41);
    hx_ok(hixl_finalize(v.engine));
    free(junk);
}
END_TEST

#define FLOOD_CONNS 200

/*
 * More silent connections than the listener takes into a handshake at
 * once: it stops accepting at its limit instead of holding all of them,
 * and a real peer still gets in (its connect waits in the kernel's
 * backlog until silent ones time out).
 */
START_TEST(test_silent_flood_does_not_lock_out)
{
    int fds[FLOOD_CONNS];
    victim_t v;
    size_t i;

    victim_start(&v);
    for (i = 0; i < FLOOD_CONNS; ++i) {
        fds[i] = hx_raw_connect(v.name);
    }
    victim_still_serves(&v, 42);
    for (i = 0; i < FLOOD_CONNS; ++i) {
        close(fds[i]);
    }
    hx_ok(hixl_finalize(v.engine));
}
END_TEST

/* ---- a connector facing a bad listener ------------------------------------ */

typedef void (*fake_server_fn)(int fd);

/* Listen on an ephemeral port; *port_p is it. */
static int fake_listen(uint16_t *port_p)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert(fd >= 0);
    ck_assert(bind(fd, (struct sockaddr*)&sin, sizeof(sin)) == 0);
    ck_assert(listen(fd, 4) == 0);
    ck_assert(getsockname(fd, (struct sockaddr*)&sin, &len) == 0);
    *port_p = ntohs(sin.sin_port);
    return fd;
}

static void ack_msg(hixl_msg_t *m, const char *name)
{
    memset(m, 0, sizeof(*m));
    m->type                    = CTRL_HELLO_ACK;
    m->u.hello_ack.name        = hixl_msg_bytes(name, strlen(name));
    m->u.hello_ack.host        = hixl_msg_bytes("other-host", 10);
    m->u.hello_ack.max_streams = 1;
    m->u.hello_ack.max_layers  = 1;
}

static void fake_garbage_ack(int fd)
{
    uint8_t h[CTRL_HDR_LEN];

    /* this protocol version, HELLO_ACK, 4 bytes of payload: too short */
    header(h, CTRL_HELLO_ACK, 4);
    raw_write(fd, h, sizeof(h));
    raw_write(fd, "abcd", 4);
}

static void fake_worker_addr_empty(int fd)
{
    hixl_msg_t m;

    ack_msg(&m, "127.0.0.1:1");
    raw_send(fd, &m);
}

static void fake_table_end_first(int fd)
{
    hixl_msg_t m;

    memset(&m, 0, sizeof(m));
    m.type = CTRL_TABLE_END;
    raw_send(fd, &m);
}

static void fake_bye(int fd)
{
    hixl_msg_t m;

    memset(&m, 0, sizeof(m));
    m.type         = CTRL_BYE;
    m.u.bye.reason = hixl_msg_bytes("go away", 7);
    raw_send(fd, &m);
}

static void fake_close(int fd)
{
    (void)fd;
}

static const struct {
    const char    *name;
    fake_server_fn fn;
    const char    *expect;   /* in hixl_last_error() */
} fakes[] = {
    {"garbage HELLO_ACK", fake_garbage_ack, "truncated"},
    {"HELLO_ACK without worker address", fake_worker_addr_empty,
     "worker address"},
    {"TABLE_END before HELLO_ACK", fake_table_end_first, "protocol error"},
    {"BYE", fake_bye, "go away"},
    {"closes at once", fake_close, "closed"},
};

/* Listen on an ephemeral port, write its engine name into name, and fork
 * a fake listener that runs run(lfd, i) (within a minute); its pid. */
static pid_t fake_spawn(void (*run)(int lfd, int i), int i, char *name,
                        size_t len)
{
    uint16_t port;
    pid_t pid;
    int lfd = fake_listen(&port);

    snprintf(name, len, "127.0.0.1:%u", port);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        alarm(60);
        run(lfd, i);
        _exit(0);
    }
    close(lfd);
    return pid;
}

/* Answer the HELLO with fakes[i], then hang up. */
static void bad_listener(int lfd, int i)
{
    char buf[4096];
    int fd = accept(lfd, NULL, NULL);

    (void)!read(fd, buf, sizeof(buf));   /* the HELLO */
    fakes[i].fn(fd);
    usleep(200 * 1000);
    close(fd);
}

START_TEST(test_connector_survives_bad_listener)
{
    hixl_engine_t *e;
    char name[64];
    pid_t pid;

    pid = fake_spawn(bad_listener, _i, name, sizeof(name));
    e   = hx_engine("127.0.0.1", NULL);
    hx_expect(hixl_connect(e, name, HX_OP_TIMEOUT_MS), HIXL_FAILED,
              fakes[_i].expect);
    ck_assert(waitpid(pid, NULL, 0) == pid);
    hx_ok(hixl_finalize(e));
}
END_TEST

/* ---- a listener whose UCX never answers ----------------------------------- */

/* The connector's wait for a wire-up that never finishes may take at most
 * this share of one core (measured: well under 0.05 with the pauses of
 * core/worker/spurious_wakes.h, about 1 without them on an idle host) */
#define STALL_CPU_SHARE_MAX 0.25
#define STALL_TIMEOUT_MS    1500

static double cpu_clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The process's CPU since cpu0 and wall0 (cpu_clock_ms) stayed under
 * STALL_CPU_SHARE_MAX of a core while who waited for the wire-up. */
static void stall_check_cpu(double cpu0, double wall0, const char *who)
{
    double cpu  = cpu_clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    double wall = cpu_clock_ms(CLOCK_MONOTONIC) - wall0;

    fprintf(stderr, "stalled wire-up, %s: %.0f ms CPU in %.0f ms\n", who,
            cpu, wall);
    ck_assert_msg(cpu < STALL_CPU_SHARE_MAX * wall, "%s spent %.0f ms of CPU "
                  "in %.0f ms waiting for a wire-up that never came", who,
                  cpu, wall);
}

/* The fake listener ended by itself, without a fault of its own. */
static void stall_reap(pid_t pid)
{
    int status;

    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFEXITED(status) && (WEXITSTATUS(status) == 0),
                  "the fake listener failed (status %d)", status);
}

/* The fake listener: a UCX worker of its own whose address it gives in a
 * well-formed HELLO_ACK, and which it never progresses (a process stuck
 * after the handshake).  UCX's tcp endpoint of the connector then waits
 * for a connection ack that never comes. */
static void stalled_listener(int lfd, int unused)
{
    ucp_worker_params_t wp;
    ucp_params_t params;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len;
    char buf[4096];
    hixl_msg_t m;
    int fd;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AM |
                        UCP_FEATURE_WAKEUP;
    memset(&wp, 0, sizeof(wp));
    if ((ucp_init(&params, NULL, &ctx) != UCS_OK) ||
        (ucp_worker_create(ctx, &wp, &worker) != UCS_OK) ||
        (ucp_worker_get_address(worker, &addr, &addr_len) != UCS_OK)) {
        _exit(2);
    }
    fd = accept(lfd, NULL, NULL);
    (void)!read(fd, buf, sizeof(buf));   /* the HELLO */
    ack_msg(&m, "127.0.0.1:1");
    m.u.hello_ack.worker_addr = hixl_msg_bytes(addr, (uint32_t)addr_len);
    raw_send(fd, &m);
    memset(&m, 0, sizeof(m));
    m.type = CTRL_TABLE_END;
    raw_send(fd, &m);
    (void)unused;
    while (read(fd, buf, sizeof(buf)) > 0) {
        /* until the connector gives up and closes */
    }
}

/* A listener that answers the handshake but whose UCX never answers the
 * wire-up: the connect ends TIMEOUT, and the connector sleeps meanwhile
 * instead of spinning on UCX's event fd (UCX 1.13's tcp keeps it readable
 * while its connection is not acknowledged).  Run 0 with the engine's
 * progress thread, run 1 without: the caller's thread waits in connect. */
START_TEST(test_connector_sleeps_on_stalled_wire_up)
{
    double cpu0, wall0;
    hixl_engine_t *e;
    char name[64];
    pid_t pid;

    setenv("UCX_TLS", "tcp", 1);   /* this case's process only */
    pid = fake_spawn(stalled_listener, 0, name, sizeof(name));
    e   = hx_engine("127.0.0.1", "hixl.ProgressThread", (_i == 0) ? "1" : "0",
                    NULL);
    wall0 = cpu_clock_ms(CLOCK_MONOTONIC);
    cpu0  = cpu_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    hx_expect(hixl_connect(e, name, STALL_TIMEOUT_MS), HIXL_TIMEOUT,
              "wire-up");
    stall_check_cpu(cpu0, wall0, (_i == 0) ? "the connector (progress thread)"
                    : "the connector (no progress thread)");
    hx_ok(hixl_finalize(e));
    stall_reap(pid);
}
END_TEST

/* The same wait in an application's epoll loop: no progress thread, the
 * connect in the background (hixl_connect_async), the application asleep
 * on the engine's event fd.  The fd holds UCX's, which stays readable all
 * the while: the process must still sleep, and the connect must fail. */
START_TEST(test_event_fd_sleeps_on_stalled_wire_up)
{
    hixl_async_connect_status_t st = HIXL_ASYNC_CONNECT_PENDING;
    double cpu0, wall0, give_up;
    unsigned sleeps = 0;
    struct pollfd pfd;
    hixl_engine_t *e;
    char name[64];
    int fd, armed;
    pid_t pid;

    setenv("UCX_TLS", "tcp", 1);   /* this case's process only */
    pid = fake_spawn(stalled_listener, 0, name, sizeof(name));
    e   = hx_engine("127.0.0.1", "hixl.ProgressThread", "0", NULL);
    hx_ok(hixl_get_event_fd(e, &fd));
    wall0   = cpu_clock_ms(CLOCK_MONOTONIC);
    cpu0    = cpu_clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    give_up = wall0 + STALL_TIMEOUT_MS + 10000;
    hx_ok(hixl_connect_async(e, name, STALL_TIMEOUT_MS));
    while (cpu_clock_ms(CLOCK_MONOTONIC) < give_up) {
        hx_ok(hixl_get_async_connect_status(e, name, &st));
        if ((st == HIXL_ASYNC_CONNECTED) || (st == HIXL_ASYNC_CONNECT_FAILED)) {
            break;
        }
        hx_ok(hixl_arm(e, &armed));
        if (armed) {
            pfd.fd      = fd;
            pfd.events  = POLLIN;
            pfd.revents = 0;
            ++sleeps;
            (void)poll(&pfd, 1, 100);
        }
    }
    fprintf(stderr, "event fd: %u sleeps\n", sleeps);
    ck_assert_msg(st == HIXL_ASYNC_CONNECT_FAILED, "the background connect "
                  "to a stalled listener ended in state %d", (int)st);
    stall_check_cpu(cpu0, wall0, "the application asleep on the event fd");
    hx_ok(hixl_finalize(e));
    stall_reap(pid);
}
END_TEST

int main(void)
{
    Suite *s   = suite_create("hostile");
    TCase *tc  = hx_tcase("hostile");

    tcase_add_loop_test(tc, test_listener_survives_attack, 0, NATTACKS);
    tcase_add_test(tc, test_listener_survives_all_at_once);
    tcase_add_test(tc, test_preauth_memory_bounded);
    tcase_add_test(tc, test_silent_flood_does_not_lock_out);
    tcase_add_loop_test(tc, test_connector_survives_bad_listener, 0,
                        sizeof(fakes) / sizeof(fakes[0]));
    tcase_add_loop_test(tc, test_connector_sleeps_on_stalled_wire_up, 0, 2);
    tcase_add_test(tc, test_event_fd_sleeps_on_stalled_wire_up);
    suite_add_tcase(s, tc);
    return hx_main(s);
}
