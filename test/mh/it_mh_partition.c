/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multi-host: network partitions between a prefill (host 0) and a decode
 * (host 1) in the middle of a stream of writes, over UCX_TLS=tcp (issue
 * 10, faults 2 to 6).  Each partition is a link cut (`ip link set down`
 * on both veth ends) or a blackhole (a blackhole qdisc on both ends: the
 * link stays up, every packet is dropped), followed by a heal.
 *
 * What one round checks (partition_round):
 *  - the prefill's writes in flight at the fault end FAILED, with a
 *    reason, within MH_DETECT_BOUND_MS (hixl.PeerTimeoutMs, given as
 *    HIXL_PEER_TIMEOUT_MS, plus slack), never TIMEOUT;
 *  - a transfer after that gets NOT_CONNECTED, not TIMEOUT; a notify sent
 *    right after the fault (bytes the control connection cannot get
 *    acknowledged, which keepalive alone never detects) ends FAILED or
 *    NOT_CONNECTED within the bound;
 *  - the decode notices too: a hixl_wait_layer on the prefill, pending
 *    since before the fault, ends FAILED within the bound;
 *  - after the heal, hixl_disconnect is SUCCESS (a connection that ended
 *    without this application's call is owed one) and hixl_connect is
 *    SUCCESS (never ALREADY_CONNECTED because the listener still holds
 *    the old incarnation); the new incarnation rewrites the whole region
 *    with another pattern, which verifies, and its layer signals work;
 *  - within STALE_WAIT_MS of the heal no TCP connection of the old
 *    incarnation is still held by either process (the library can close
 *    the listener's end only once the old connection's queued bytes or its
 *    goodbye arrive, which TCP's retransmission backoff delays), and
 *    STALE_WAIT_MS after the heal (long enough for that backoff to deliver
 *    whatever the old connection still had queued) the WHOLE region still
 *    holds the new pattern: not one byte of the old one (stale bytes of an
 *    old incarnation are silent corruption).
 * A round goes on past a broken promise where it can (mh_faults.h), with
 * bounded extra waits, so one run shows every fault.
 *
 * Time asserted: detection within MH_DETECT_BOUND_MS only.
 */
#include "mh_suite.h"
#include "mh_faults.h"
#include "mh_socks.h"
#include "mh_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REGION        (256 * HX_MIB)
#define PIECE         (16 * HX_MIB)
#define INFLIGHT      8
/* Each write's own deadline: the library's default hixl.TransferTimeoutMs.
 * A write that ends TIMEOUT waited this long: the fault went undetected. */
#define XFER_TIMEOUT_MS 30000
/* After the heal, before the last look for stale bytes.  TCP retransmits
 * with exponential backoff (0.2 s doubling): after a partition of a few
 * seconds the next retransmission of a still-open old connection comes
 * within ~13 s of the heal. */
#define STALE_WAIT_MS 20000
/* How often the region is verified while waiting (to report when stale
 * bytes landed, not only that they did). */
#define STALE_PROBE_MS 5000
/* Extra time given past a missed bound, to see what the library does
 * after all (a failing run only). */
#define GRACE_MS      40000
/* Decode's peer timeout in the quick-reconnect variant: long enough that
 * it cannot notice the partition on its own before the prefill is back. */
#define SLOW_DECODE_TIMEOUT_ENV "HIXL_PEER_TIMEOUT_MS=30000"

enum { CUT_LINK, BLACKHOLE };

typedef struct part {
    hx_net_t   *net;
    mh_proc_t   decode, prefill;
    uint64_t    daddr;         /* decode's region */
    const char *p_ip, *d_ip;   /* addresses on the link */
    int         disconnected;  /* the prefill called hixl_disconnect */
    mh_faults_t f;
} part_t;

typedef struct round_cfg {
    int      fault;       /* CUT_LINK or BLACKHOLE */
    int      pace_ms;     /* how long the stream runs before the fault */
    int      notify;      /* a notify right after the fault */
    int      quick;       /* heal as soon as the prefill detected; the
                             decode has a long peer timeout */
    int      stale_wait;  /* look for stale bytes STALE_WAIT_MS later */
    uint64_t seed_a;      /* old incarnation's pattern */
    uint64_t seed_b;      /* new incarnation's pattern */
    uint32_t stream;      /* layer stream the decode waits on */
} round_cfg_t;

static const char *fault_name(int fault)
{
    return (fault == CUT_LINK) ? "link cut" : "blackhole";
}

static void part_start(part_t *p, const char *label,
                       const char *decode_timeout_env)
{
    const char *denv[] = {"UCX_TLS=tcp", decode_timeout_env, NULL};
    const char *penv[] = {"UCX_TLS=tcp", MH_PEER_TIMEOUT_ENV, NULL};
    char line[512];
    const char *r;

    mh_faults_init(&p->f, label);
    p->net  = mh_net(2);
    p->p_ip = hx_net_addr(p->net, MH_HOST_PREFILL, MH_HOST_DECODE);
    p->d_ip = hx_net_addr(p->net, MH_HOST_DECODE, MH_HOST_PREFILL);
    mh_start_in(&p->decode, p->net, MH_HOST_DECODE, MH_HOST_PREFILL, 1,
                "decode", denv, NULL);
    mh_start_in(&p->prefill, p->net, MH_HOST_PREFILL, MH_HOST_DECODE, 0,
                "prefill", penv, NULL);
    r = mh_ok(&p->decode, "alloc %llu", (unsigned long long)REGION);
    p->daddr = mh_u64(r, "addr");
    mh_ok(&p->prefill, "mmap %llu", (unsigned long long)REGION);   /* A */
    mh_ok(&p->prefill, "mmap %llu", (unsigned long long)REGION);   /* B */
    r = mh_ok(&p->prefill, "connect %s 10000", p->decode.name);
    ck_assert_msg(mh_status(r) == HIXL_SUCCESS, "first connect: %s",
                  mh_line(r, line, sizeof(line)));
}

static void part_stop(part_t *p)
{
    char err[256];

    /* what is left running (a stuck wait) may not stop finalize */
    mh_try(&p->prefill, 30000, err, sizeof(err), "finalize force");
    mh_try(&p->decode, 30000, err, sizeof(err), "finalize force");
    mh_kill(&p->prefill);
    mh_kill(&p->decode);
}

static void part_fault(part_t *p, int fault, int heal)
{
    char err[2048];
    int rc;

    if (fault == CUT_LINK) {
        rc = heal ? hx_net_link_up(p->net, 0, 1, err, sizeof(err))
                  : hx_net_link_down(p->net, 0, 1, HX_END_BOTH, err,
                                     sizeof(err));
    } else {
        rc = heal ? hx_net_unblackhole(p->net, 0, 1, err, sizeof(err))
                  : hx_net_blackhole(p->net, 0, 1, err, sizeof(err));
    }
    ck_assert_msg(rc == 0, "%s %s: %s", heal ? "healing" : "making",
                  fault_name(fault), err);
}

/* Wait for a job until the absolute time `until`; NULL if still running. */
static const char *job_until(mh_proc_t *peer, int job, double until)
{
    double left = until - mh_now();

    return mh_job(peer, job, (left > 0) ? (int)left : 0);
}

/* The decode region against seed (old: the seed stale bytes would have);
 * 1 when it matches, else 0 with the reply in what. */
static int region_ok(part_t *p, uint64_t seed, uint64_t old, char *what,
                     size_t len)
{
    const char *r = mh_cmd(&p->decode, MH_CMD_TIMEOUT_MS, "verify 0 0 0 "
                           "%llu %llu", (unsigned long long)seed,
                           (unsigned long long)old);

    mh_line(r, what, len);
    ck_assert_msg(strncmp(r, "OK", 2) == 0, "decode verify: %s", what);
    return mh_u64(r, "match") == 1;
}

/* No TCP connection of the old incarnation may be held in either host
 * STALE_WAIT_MS after the heal; looked at every 250 ms until then. */
static void old_conns_gone(part_t *p, const mh_conns_t old[2],
                           double t_heal)
{
    char desc[4096], ss[8192];
    int h, n[2];

    for (;;) {
        for (h = 0; h < 2; ++h) {
            n[h] = mh_conns_left(p->net, h, &old[h], desc, sizeof(desc));
        }
        if ((n[0] + n[1] == 0) || (mh_now() >= t_heal + STALE_WAIT_MS)) {
            break;
        }
        mh_sleep_ms(250);
    }
    if (n[0] + n[1] == 0) {
        mh_note(&p->f, "no TCP connection of the old incarnation left "
                "%.0f ms after the heal", mh_now() - t_heal);
        return;
    }
    for (h = 0; h < 2; ++h) {
        if (mh_conns_left(p->net, h, &old[h], desc, sizeof(desc)) == 0) {
            continue;
        }
        hx_net_ss(p->net, h, ss, sizeof(ss));
        mh_fault(&p->f, "%d ms after the heal, the %s still holds %d TCP "
                 "connection(s) of the old incarnation:\n%sss in its "
                 "host:\n%s", STALE_WAIT_MS,
                 h == MH_HOST_DECODE ? "decode" : "prefill", n[h], desc, ss);
    }
}

/* Step 1: the prefill's stream must end, its writes in flight FAILED, in
 * time.  When they did not (quick: the application gives up on the
 * connection then, as a server with its own deadline would, and
 * disconnects while the link is still down). */
static void judge_stream(part_t *p, int job, double t_fault, int quick)
{
    char line[1024];
    mh_stream_res_t res;
    mh_verdict_t v;
    const char *r;

    r = job_until(&p->prefill, job, t_fault + MH_DETECT_BOUND_MS);
    if (r == NULL) {
        r = mh_ok(&p->prefill, "progress %d", job);
        mh_fault(&p->f, "%d ms after the fault the prefill's writes have "
                 "not all ended (%s); it stops posting and %s",
                 MH_DETECT_BOUND_MS, mh_line(r, line, sizeof(line)),
                 quick ? "disconnects" : "waits for them");
        mh_ok(&p->prefill, "stop %d", job);
        if (quick) {
            r = mh_ok(&p->prefill, "disconnect %s 1000", p->decode.name);
            p->disconnected = 1;
            mh_note(&p->f, "the prefill's hixl_disconnect during the "
                    "partition: %s", mh_line(r, line, sizeof(line)));
        }
        r = mh_job(&p->prefill, job, XFER_TIMEOUT_MS + 10000);
        ck_assert_msg(r != NULL, "the prefill's writes did not end within "
                      "their own deadline (%d ms) + 10 s", XFER_TIMEOUT_MS);
    }
    mh_stream_parse(r, &res);
    mh_stream_judge(&res, t_fault, MH_DETECT_BOUND_MS, &v);
    mh_stream_summary(&res, t_fault, line, sizeof(line));
    mh_note(&p->f, "prefill's stream: %s", line);
    if (v.bad > 0) {
        mh_fault(&p->f, "%zu of the %zu writes that ended after the fault "
                 "broke the rules (FAILED with a reason within %d ms); the "
                 "first: %s", v.bad, v.after, MH_DETECT_BOUND_MS,
                 v.first_bad);
    } else if (v.failed == 0) {
        mh_fault(&p->f, "no write in flight at the fault ended FAILED "
                 "(%s)", line);
    } else {
        mh_note(&p->f, "the prefill detected the fault: last write FAILED "
                "%.0f ms after it", v.last_ms);
    }
    mh_stream_free(&res);
}

/* Step 2: later calls are refused with NOT_CONNECTED, at once. */
static void judge_later_calls(part_t *p, int notify_job, double t_fault)
{
    char line[1024];
    const char *r;

    r = mh_ok(&p->prefill, "write %s 0 0 %llu %llu 5000", p->decode.name,
              (unsigned long long)p->daddr, (unsigned long long)PIECE);
    if (mh_status(r) != HIXL_NOT_CONNECTED) {
        mh_fault(&p->f, "a write after the prefill detected the fault "
                 "returned %s, not HIXL_NOT_CONNECTED",
                 mh_line(r, line, sizeof(line)));
    }
    if (notify_job < 0) {
        return;
    }
    r = job_until(&p->prefill, notify_job, t_fault + MH_DETECT_BOUND_MS);
    if (r == NULL) {
        mh_fault(&p->f, "a notify sent right after the fault was still "
                 "waiting %d ms after it", MH_DETECT_BOUND_MS);
        r = mh_job(&p->prefill, notify_job, 70000);
        if (r != NULL) {
            mh_note(&p->f, "that notify ended: %s",
                    mh_line(r, line, sizeof(line)));
        }
        return;
    }
    if ((mh_status(r) != HIXL_FAILED) && (mh_status(r) != HIXL_NOT_CONNECTED)) {
        mh_fault(&p->f, "a notify sent right after the fault returned %s, "
                 "not FAILED or NOT_CONNECTED", mh_line(r, line, sizeof(line)));
    }
}

/* The decode's wait on the old incarnation must end FAILED by `until`. */
static void judge_decode_wait(part_t *p, int job, double until,
                              double t_ref, const char *ref)
{
    char line[1024];
    const char *r;

    r = job_until(&p->decode, job, until);
    if (r == NULL) {
        mh_fault(&p->f, "the decode's hixl_wait_layer on the prefill's "
                 "old connection was still waiting %.0f ms after %s", until -
                 t_ref, ref);
        return;
    }
    if (mh_status(r) != HIXL_FAILED) {
        mh_fault(&p->f, "the decode's hixl_wait_layer on the prefill's old "
                 "connection ended %s, not FAILED",
                 mh_line(r, line, sizeof(line)));
        return;
    }
    mh_note(&p->f, "the decode's wait on the old connection ended FAILED "
            "%+.0f ms from %s", mh_num(r, "t") - t_ref, ref);
}

/* Step 3: the connection that ended is owed one disconnect: SUCCESS. */
static void disconnect_owed(part_t *p)
{
    char line[1024];
    const char *r;

    if (p->disconnected) {
        return;
    }
    r = mh_ok(&p->prefill, "disconnect %s 5000", p->decode.name);
    p->disconnected = 1;
    if (mh_status(r) != HIXL_SUCCESS) {
        mh_fault(&p->f, "hixl_disconnect of the connection that ended "
                 "returned %s, not SUCCESS (it is owed one disconnect)",
                 mh_line(r, line, sizeof(line)));
    }
}

/* Step 4, after the heal: connect SUCCESS at once (retried each second
 * up to GRACE_MS when not, to go on). */
static double reconnect(part_t *p, double t_heal)
{
    char line[1024];
    const char *r;
    int tries;

    for (tries = 0; tries < GRACE_MS / 1000; ++tries) {
        r = mh_ok(&p->prefill, "connect %s 5000", p->decode.name);
        if (mh_status(r) == HIXL_SUCCESS) {
            break;
        }
        if (tries == 0) {
            mh_fault(&p->f, "hixl_connect after the heal returned %s; "
                     "retrying every second", mh_line(r, line, sizeof(line)));
        }
        mh_sleep_ms(1000);
    }
    ck_assert_msg(mh_status(r) == HIXL_SUCCESS, "hixl_connect still fails "
                  "%d s after the heal: %s", GRACE_MS / 1000,
                  mh_line(r, line, sizeof(line)));
    p->disconnected = 0;
    if (tries > 0) {
        mh_note(&p->f, "hixl_connect succeeded %.0f ms after the heal",
                mh_now() - t_heal);
    }
    return mh_now();
}

/* Step 5: the new incarnation rewrites everything and signals a layer. */
static void rewrite(part_t *p, const round_cfg_t *c)
{
    char line[1024];
    const char *r;
    int job;

    job = mh_bg(&p->decode, "wait_layer %s %u 1 0 30000", p->prefill.name,
                c->stream + 1000);
    r = mh_cmd(&p->prefill, 120000, "stream %s 1 %llu %llu %llu %llu %d %d",
               p->decode.name, (unsigned long long)p->daddr,
               (unsigned long long)REGION, (unsigned long long)PIECE,
               (unsigned long long)(REGION / PIECE), INFLIGHT,
               XFER_TIMEOUT_MS);
    ck_assert_msg(mh_u64(r, "completed") == REGION / PIECE, "the new "
                  "incarnation's rewrite: %s", mh_line(r, line, sizeof(line)));
    r = mh_ok(&p->prefill, "flush %s %u 1 0", p->decode.name,
              c->stream + 1000);
    if (mh_status(r) != HIXL_SUCCESS) {
        mh_fault(&p->f, "the new incarnation's hixl_flush_layer: %s",
                 mh_line(r, line, sizeof(line)));
    }
    r = mh_job(&p->decode, job, 30000);
    if ((r == NULL) || (mh_status(r) != HIXL_SUCCESS)) {
        mh_fault(&p->f, "the decode's wait for the new incarnation's layer "
                 "signal: %s", r ? mh_line(r, line, sizeof(line)) :
                 "still waiting after 30 s");
    }
}

/* Step 6: whole region = pattern B, now and (stale_wait) much later. */
static void look_for_stale(part_t *p, const round_cfg_t *c,
                           const mh_conns_t old[2], double t_heal)
{
    char what[512];
    double next;
    int seen = 0;

    if (!region_ok(p, c->seed_b, c->seed_a, what, sizeof(what))) {
        mh_fault(&p->f, "right after the new incarnation rewrote it, the "
                 "decode region is not the new pattern (nold: bytes of the "
                 "old incarnation's pattern): %s", what);
        seen = 1;
    }
    old_conns_gone(p, old, t_heal);
    if (!c->stale_wait) {
        return;
    }
    for (next = mh_now() + STALE_PROBE_MS; next < t_heal + STALE_WAIT_MS;
         next += STALE_PROBE_MS) {
        mh_sleep_ms((int)(next - mh_now()));
        if (!seen && !region_ok(p, c->seed_b, c->seed_a, what,
                                sizeof(what))) {
            mh_note(&p->f, "stale bytes in the decode region %.0f ms after "
                    "the heal: %s", mh_now() - t_heal, what);
            seen = 1;
        }
    }
    if (mh_now() < t_heal + STALE_WAIT_MS) {
        mh_sleep_ms((int)(t_heal + STALE_WAIT_MS - mh_now()));
    }
    if (!region_ok(p, c->seed_b, c->seed_a, what, sizeof(what))) {
        mh_fault(&p->f, "%d ms after the heal the decode region holds "
                 "bytes that are not the new incarnation's (nold: bytes of "
                 "the old incarnation's pattern; silent corruption): %s",
                 STALE_WAIT_MS, what);
    }
}

static void partition_round(part_t *p, const round_cfg_t *c)
{
    char line[1024], desc[4096];
    int wait_job, stream_job, notify_job = -1, tries;
    double t_fault, t_heal, t_conn;
    mh_conns_t old[2];
    const char *r;

    mh_note(&p->f, "round: %s %d ms into the stream%s%s", fault_name(c->fault),
            c->pace_ms, c->notify ? ", a notify right after it" : "",
            c->quick ? ", reconnect as soon as the prefill detected it" : "");
    mh_ok(&p->prefill, "fill 0 0 0 %llu", (unsigned long long)c->seed_a);
    mh_ok(&p->prefill, "fill 1 0 0 %llu", (unsigned long long)c->seed_b);
    wait_job   = mh_bg(&p->decode, "wait_layer %s %u 1 0 120000",
                       p->prefill.name, c->stream);
    stream_job = mh_bg(&p->prefill, "stream %s 0 %llu %llu %llu 1000000 %d "
                       "%d", p->decode.name, (unsigned long long)p->daddr,
                       (unsigned long long)REGION, (unsigned long long)PIECE,
                       INFLIGHT, XFER_TIMEOUT_MS);
    mh_sleep_ms(c->pace_ms);
    /* between a completion and the next post the stream may have nothing
     * in flight for an instant: look again, briefly */
    for (tries = 0; tries < 50; ++tries) {
        r = mh_ok(&p->prefill, "progress %d", stream_job);
        if ((mh_u64(r, "inflight") > 0) || (mh_u64(r, "finished") != 0) ||
            (mh_u64(r, "failed") != 0)) {
            break;
        }
        mh_sleep_ms(2);
    }
    ck_assert_msg((mh_u64(r, "finished") == 0) && (mh_u64(r, "inflight") > 0)
                  && (mh_u64(r, "failed") == 0), "the stream is not "
                  "running normally at the fault: %s",
                  mh_line(r, line, sizeof(line)));
    mh_conns_take(p->net, MH_HOST_PREFILL, p->d_ip, &old[MH_HOST_PREFILL]);
    mh_conns_take(p->net, MH_HOST_DECODE, p->p_ip, &old[MH_HOST_DECODE]);
    mh_conns_str(&old[MH_HOST_PREFILL], desc, sizeof(desc));
    mh_note(&p->f, "at the fault (%s), the prefill's connections:\n%s",
            mh_line(r, line, sizeof(line)), desc);

    part_fault(p, c->fault, 0);
    t_fault = mh_now();
    if (c->notify) {
        notify_job = mh_bg(&p->prefill, "notify %s hx.after-fault 60000",
                           p->decode.name);
    }
    judge_stream(p, stream_job, t_fault, c->quick);
    judge_later_calls(p, notify_job, t_fault);
    if (!c->quick) {
        judge_decode_wait(p, wait_job, t_fault + MH_DETECT_BOUND_MS, t_fault,
                          "the fault");
    } else {
        /* done with the old connection before the link is back, so that
         * the reconnect follows the heal at once */
        disconnect_owed(p);
    }

    part_fault(p, c->fault, 1);
    t_heal = mh_now();
    mh_note(&p->f, "healed %.0f ms after the fault", t_heal - t_fault);
    disconnect_owed(p);
    t_conn = reconnect(p, t_heal);
    if (c->quick) {
        /* the new incarnation replaced the old one: its waits are over */
        judge_decode_wait(p, wait_job, t_conn + MH_DETECT_BOUND_MS, t_conn,
                          "the reconnect");
    }
    rewrite(p, c);
    look_for_stale(p, c, old, t_heal);
}

static int pace(int lo, int hi)
{
    static uint64_t state;

    if (state == 0) {
        state = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    }
    return lo + (int)(hx_rand(&state) % (uint64_t)(hi - lo + 1));
}

START_TEST(test_link_cut)
{
    round_cfg_t c = {CUT_LINK, 0, 0, 0, 1, 0xA1, 0xB1, 1};
    part_t p;

    part_start(&p, "link cut", MH_PEER_TIMEOUT_ENV);
    c.pace_ms = pace(3000, 5000);
    partition_round(&p, &c);
    part_stop(&p);
    mh_faults_check(&p.f);
}
END_TEST

START_TEST(test_blackhole)
{
    round_cfg_t c = {BLACKHOLE, 0, 1, 0, 1, 0xA2, 0xB2, 2};
    part_t p;

    part_start(&p, "blackhole", MH_PEER_TIMEOUT_ENV);
    c.pace_ms = pace(3000, 5000);
    partition_round(&p, &c);
    part_stop(&p);
    mh_faults_check(&p.f);
}
END_TEST

/*
 * The prefill is done with the old connection as soon as it detected the
 * cut (or, if it did not within the bound, gives up on it with its own
 * hixl_disconnect, whose goodbye the cut link loses), and reconnects the
 * moment the link is back: before the decode (peer timeout 30 s) could
 * have noticed on its own.  The listener must take the new incarnation
 * (not refuse it as already connected), end the old one (its pending wait
 * ends FAILED; the new incarnation flushes another stream, so nothing of
 * it may satisfy that wait), and no byte of the old one may land
 * afterwards.
 */
START_TEST(test_quick_reconnect)
{
    round_cfg_t c = {CUT_LINK, 0, 0, 1, 1, 0xA3, 0xB3, 3};
    part_t p;

    part_start(&p, "quick reconnect", SLOW_DECODE_TIMEOUT_ENV);
    c.pace_ms = pace(3000, 5000);
    partition_round(&p, &c);
    part_stop(&p);
    mh_faults_check(&p.f);
}
END_TEST

static int fds_of(mh_proc_t *peer)
{
    return (int)mh_u64(mh_ok(peer, "fds"), "fds");
}

/* Both sides end the connection (the prefill's disconnect, and the
 * decode's own, which it is owed), then the counts of open descriptors of
 * each, once they settle (the same twice, 250 ms apart; UCX closes what
 * an ended connection held from its progress), at most 5 s. */
static void disconnect_and_count(part_t *p, const char *when, int *fd_p,
                                 int *fd_d)
{
    int i, last_p = -1, last_d = -1;
    char line[1024];
    const char *r;

    r = mh_ok(&p->prefill, "disconnect %s 5000", p->decode.name);
    if (mh_status(r) != HIXL_SUCCESS) {
        mh_fault(&p->f, "%s: the prefill's disconnect: %s", when,
                 mh_line(r, line, sizeof(line)));
    }
    r = mh_ok(&p->decode, "disconnect %s 5000", p->prefill.name);
    if ((mh_status(r) != HIXL_SUCCESS) &&
        (mh_status(r) != HIXL_NOT_CONNECTED)) {
        mh_fault(&p->f, "%s: the decode's disconnect: %s", when,
                 mh_line(r, line, sizeof(line)));
    }
    for (i = 0; i < 20; ++i) {
        *fd_p = fds_of(&p->prefill);
        *fd_d = fds_of(&p->decode);
        if ((*fd_p == last_p) && (*fd_d == last_d)) {
            return;
        }
        last_p = *fd_p;
        last_d = *fd_d;
        mh_sleep_ms(250);
    }
}

/* Three partitions in a row, each healed and reconnected: disconnected
 * afterwards, neither side may hold more descriptors than it did
 * disconnected before them.  (Counted between connections: while one is
 * up, UCX's tcp transport may hold one socket for it or two, when both
 * sides happened to connect at once.) */
START_TEST(test_three_partitions)
{
    round_cfg_t c = {CUT_LINK, 0, 0, 0, 0, 0, 0, 10};
    int fd_p0, fd_d0, fd_p, fd_d, i;
    char line[1024];
    const char *r;
    part_t p;

    part_start(&p, "three partitions", MH_PEER_TIMEOUT_ENV);
    /* connected and used once, then disconnected: what the engines keep
     * between connections */
    mh_ok(&p.prefill, "fill 0 0 0 7");
    r = mh_ok(&p.prefill, "write %s 0 0 %llu %llu 30000", p.decode.name,
              (unsigned long long)p.daddr, (unsigned long long)PIECE);
    ck_assert_msg(mh_status(r) == HIXL_SUCCESS, "first write: %s",
                  mh_line(r, line, sizeof(line)));
    disconnect_and_count(&p, "before the partitions", &fd_p0, &fd_d0);
    mh_note(&p.f, "disconnected before the partitions: prefill %d "
            "descriptors, decode %d", fd_p0, fd_d0);
    r = mh_ok(&p.prefill, "connect %s 10000", p.decode.name);
    ck_assert_msg(mh_status(r) == HIXL_SUCCESS, "connect again: %s",
                  mh_line(r, line, sizeof(line)));
    for (i = 0; i < 3; ++i) {
        c.fault   = (i == 1) ? BLACKHOLE : CUT_LINK;
        c.pace_ms = pace(1000, 2000);
        c.seed_a  = 0xC0 + (uint64_t)i;
        c.seed_b  = 0xD0 + (uint64_t)i;
        c.stream  = 10 + (uint32_t)i;
        partition_round(&p, &c);
        mh_note(&p.f, "after partition %d: prefill %d descriptors, decode "
                "%d", i + 1, fds_of(&p.prefill), fds_of(&p.decode));
    }
    disconnect_and_count(&p, "after the partitions", &fd_p, &fd_d);
    if ((fd_p != fd_p0) || (fd_d != fd_d0)) {
        mh_fault(&p.f, "open descriptors, disconnected before and after "
                 "three partitions: prefill %d -> %d, decode %d -> %d",
                 fd_p0, fd_p, fd_d0, fd_d);
    }
    part_stop(&p);
    mh_faults_check(&p.f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("mh_partition");
    TCase *tc;

    /* a passing run takes ~30 s per case; a library that misses its
     * bounds is given GRACE_MS and the writes' own deadlines on top */
    tc = mh_tcase("link_cut", 300);
    tcase_add_test(tc, test_link_cut);
    suite_add_tcase(s, tc);
    tc = mh_tcase("blackhole", 300);
    tcase_add_test(tc, test_blackhole);
    suite_add_tcase(s, tc);
    tc = mh_tcase("quick_reconnect", 300);
    tcase_add_test(tc, test_quick_reconnect);
    suite_add_tcase(s, tc);
    tc = mh_tcase("three_partitions", 600);
    tcase_add_test(tc, test_three_partitions);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return mh_main(argc, argv, make_suite);
}
