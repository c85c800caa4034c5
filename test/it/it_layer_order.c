/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Proof of the layer-flush ordering contract (DESIGN.md section 5): when the
 * decode engine observes (stream, generation, layer), every byte the prefill
 * engine posted before hixl_flush_layer() is already in decode memory.
 *
 * A decode process and a prefill process (this one) run real engines over
 * loopback with a given UCX_TLS.  Prefill writes, for several interleaved
 * streams reused across generations, layers of random size split into random
 * unaligned descriptors, with a byte pattern derived from (stream,
 * generation, layer); it posts the writes asynchronously and flushes each
 * layer without waiting for them.  Decode waits for each signal and checks
 * every byte of that layer at once.  The last layer of every use instead
 * carries a per-transfer notify, checked the same way.  Decode returns each
 * stream with a "done" notify before prefill reuses it, as a real decode
 * engine would free a request slot.
 */
#include "harness.h"
#include "layer_order_plan.h"

#include <hixl/hixl.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS 30000

typedef struct transport {
    const char *tls;            /* NULL: UCX_TLS unset (UCX's default) */
    int         ipv6;
    const char *decode_progress_thread;
} transport_t;

static const transport_t transports[] = {
    {"tcp", 0, "1"},
    {"sm", 0, "1"},
    {"posix,cma", 1, "1"},
    {NULL, 0, "1"},
    {"tcp", 1, "0"},   /* decode without a progress thread: waits drive it */
};

static void set_tls(const transport_t *t)
{
    if (hx_env_pinned("UCX_TLS")) {
        return;
    }
    if (t->tls != NULL) {
        setenv("UCX_TLS", t->tls, 1);
    } else {
        unsetenv("UCX_TLS");
    }
}

/* ---- decode process -------------------------------------------------------- */

static int decode_verify_layer(const plan_t *plan, uint8_t *base,
                               unsigned use, unsigned layer)
{
    unsigned stream = plan_stream(plan, use);
    uint64_t gen    = plan_gen(plan, use);
    layer_shape_t shape;
    size_t bad;

    plan_layer_shape(plan, stream, gen, layer, &shape);
    bad = pattern_check(base + plan_layer_offset(plan, stream, layer) +
                        shape.skew, shape.size, stream, gen, layer);
    if (bad != 0) {
        fprintf(stderr, "decode: stream %u gen %llu layer %u: %zu of %zu "
                "bytes wrong when its signal was seen\n", stream,
                (unsigned long long)gen, layer, bad, shape.size);
        return 1;
    }
    return 0;
}

/* Collect the per-transfer notifies that close a wave of uses, checking the
 * closing layer of each use the instant its notify is seen. */
static int decode_wait_xfer_notifies(hixl_engine_t *e, const plan_t *plan,
                                     uint8_t *base, unsigned first)
{
    unsigned seen = 0, k, stream;
    unsigned long long gen;
    hixl_notify_t *n;
    size_t count, i;
    int bad = 0, spins, matched;

    for (spins = 0; (seen < plan->streams_in_flight) && (spins < WAIT_MS * 10);
         ++spins) {
        if (hixl_get_notifies(e, &n, &count) != HIXL_SUCCESS) {
            fprintf(stderr, "decode: get_notifies: %s\n", hixl_last_error());
            return 1;
        }
        for (i = 0; i < count; ++i) {
            matched = 0;
            if (!strcmp(n[i].name, "xfer") &&
                (sscanf(n[i].msg, "%u:%llu", &stream, &gen) == 2)) {
                for (k = 0; k < plan->streams_in_flight; ++k) {
                    if ((plan_stream(plan, first + k) == stream) &&
                        (plan_gen(plan, first + k) == gen)) {
                        bad    |= decode_verify_layer(plan, base, first + k,
                                                      plan->layers - 1);
                        matched = 1;
                    }
                }
            }
            if (!matched) {
                fprintf(stderr, "decode: unexpected notify %s/%s\n",
                        n[i].name, (const char*)n[i].msg);
                bad = 1;
            }
            ++seen;
        }
        hixl_release_notifies(n, count);
        if (seen < plan->streams_in_flight) {
            usleep(100);
        }
    }
    if (seen < plan->streams_in_flight) {
        fprintf(stderr, "decode: %u of %u transfer notifies\n", seen,
                plan->streams_in_flight);
        return 1;
    }
    return bad;
}

/* Read a line from the pipe, driving the engine meanwhile: without a
 * progress thread nobody else would answer the prefill's connect. */
static int decode_read_line(hixl_engine_t *e, int fd, char *buf, size_t size)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    ssize_t n;

    while (poll(&pfd, 1, 1) == 0) {
        hixl_engine_progress(e);
    }
    n = read(fd, buf, size - 1);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

static int decode_main(const transport_t *t, int out_fd, int in_fd)
{
    hixl_option_t opts[] = {{"hixl.ListenEphemeral", "1"},
                            {"hixl.ProgressThread", t->decode_progress_thread},
                            {"hixl.MaxStreams", "16"},
                            {"hixl.MaxLayers", "64"}};
    plan_t plan;
    hixl_engine_t *e;
    hixl_mem_handle_t h;
    hixl_mem_desc_t md;
    hixl_notify_desc_t done;
    char msg[256], prefill[128], text[64];
    unsigned use, first, layer, k;
    uint8_t *base;
    int errors = 0;

    plan_init(&plan);
    if (hixl_initialize(t->ipv6 ? "[::1]:0" : "127.0.0.1:0", opts, 4, &e) !=
        HIXL_SUCCESS) {
        fprintf(stderr, "decode: initialize: %s\n", hixl_last_error());
        return 2;
    }
    base    = calloc(1, plan_region_size(&plan));
    md.addr = (uintptr_t)base;
    md.len  = plan_region_size(&plan);
    if (hixl_register_mem(e, &md, HIXL_MEM_HOST, &h) != HIXL_SUCCESS) {
        fprintf(stderr, "decode: register: %s\n", hixl_last_error());
        return 2;
    }
    snprintf(msg, sizeof(msg), "%s %llx\n", hixl_engine_name(e),
             (unsigned long long)md.addr);
    if (write(out_fd, msg, strlen(msg)) < 0) {
        return 2;
    }
    if (decode_read_line(e, in_fd, prefill, sizeof(prefill)) != 0) {
        return 2;
    }
    prefill[strcspn(prefill, "\n")] = '\0';

    /* Uses run in waves of plan.streams_in_flight, interleaved by layer. */
    for (first = 0; first < plan.uses; first += plan.streams_in_flight) {
        for (layer = 0; layer + 1 < plan.layers; ++layer) {
            for (k = 0; k < plan.streams_in_flight; ++k) {
                use = first + k;
                if (hixl_wait_layer(e, prefill, plan_stream(&plan, use),
                                    plan_gen(&plan, use), layer, WAIT_MS) !=
                    HIXL_SUCCESS) {
                    fprintf(stderr, "decode: wait use %u layer %u: %s\n",
                            use, layer, hixl_last_error());
                    return 1;
                }
                errors += decode_verify_layer(&plan, base, use, layer);
            }
        }
        errors += decode_wait_xfer_notifies(e, &plan, base, first);
        for (k = 0; k < plan.streams_in_flight; ++k) {
            use = first + k;
            /* hand the stream back to prefill */
            snprintf(text, sizeof(text), "%u:%llu", plan_stream(&plan, use),
                     (unsigned long long)plan_gen(&plan, use));
            done.name    = "done";
            done.msg     = text;
            done.msg_len = strlen(text) + 1;
            if (hixl_send_notify(e, prefill, &done, WAIT_MS) != HIXL_SUCCESS) {
                fprintf(stderr, "decode: send done: %s\n", hixl_last_error());
                return 1;
            }
        }
    }
    snprintf(msg, sizeof(msg), "%d\n", errors);
    if (write(out_fd, msg, strlen(msg)) < 0) {
        return 2;
    }
    /* stay up until prefill has read the verdict and disconnected */
    if (decode_read_line(e, in_fd, msg, sizeof(msg)) != 0) {
        return 2;
    }
    hixl_deregister_mem(e, h);
    hixl_finalize(e);
    free(base);
    return errors ? 1 : 0;
}

/* ---- prefill process ----------------------------------------------------- */

typedef struct prefill {
    hixl_engine_t *e;
    const char    *decode;
    plan_t         plan;
    uint8_t       *src;
    uint64_t       dst;
    hixl_req_t    *reqs;
    size_t         nreqs;
    size_t         maxreqs;
} prefill_t;

/* Post one layer of one use as async writes; the last layer of a use
 * carries the per-transfer notify instead of a layer flush. */
static void prefill_post_layer(prefill_t *p, unsigned use, unsigned layer)
{
    unsigned stream = plan_stream(&p->plan, use);
    uint64_t gen    = plan_gen(&p->plan, use);
    hixl_transfer_op_desc_t descs[PLAN_MAX_PIECES];
    hixl_transfer_args_t args;
    layer_shape_t shape;
    uint64_t off;
    size_t at = 0;
    unsigned i;
    char text[64];

    plan_layer_shape(&p->plan, stream, gen, layer, &shape);
    off = plan_layer_offset(&p->plan, stream, layer) + shape.skew;
    pattern_fill(p->src + off, shape.size, stream, gen, layer);
    for (i = 0; i < shape.pieces; ++i) {
        descs[i].local_addr  = (uintptr_t)p->src + off + at;
        descs[i].remote_addr = p->dst + off + at;
        descs[i].len         = shape.piece[i];
        at += shape.piece[i];
    }
    memset(&args, 0, sizeof(args));
    if (layer + 1 == p->plan.layers) {
        snprintf(text, sizeof(text), "%u:%llu", stream,
                 (unsigned long long)gen);
        args.field_mask     = HIXL_TRANSFER_ARG_NOTIFY;
        args.notify.name    = "xfer";
        args.notify.msg     = text;
        args.notify.msg_len = strlen(text) + 1;
    }
    ck_assert_msg(p->nreqs < p->maxreqs, "request list overflow");
    ck_assert_msg(hixl_transfer_async(p->e, p->decode, HIXL_WRITE, descs,
                                      shape.pieces, &args,
                                      &p->reqs[p->nreqs]) == HIXL_SUCCESS,
                  "transfer_async: %s", hixl_last_error());
    p->nreqs++;
    if (layer + 1 < p->plan.layers) {
        ck_assert_msg(hixl_flush_layer(p->e, p->decode, stream, gen, layer) ==
                      HIXL_SUCCESS, "flush_layer: %s", hixl_last_error());
    }
}

/* Every posted request must end COMPLETED. */
static void prefill_reap(prefill_t *p)
{
    hixl_transfer_status_t st;
    size_t i;

    for (i = 0; i < p->nreqs; ++i) {
        do {
            ck_assert_msg(hixl_get_transfer_status(p->e, p->reqs[i], &st) ==
                          HIXL_SUCCESS, "status: %s", hixl_last_error());
        } while (st == HIXL_TRANSFER_WAITING);
        ck_assert_msg(st == HIXL_TRANSFER_COMPLETED, "request %zu ended %d: "
                      "%s", i, (int)st, hixl_last_error());
    }
    p->nreqs = 0;
}

/* Wait until decode has handed back `count` streams. */
static void prefill_wait_done(prefill_t *p, unsigned count)
{
    hixl_notify_t *n;
    size_t got, i;
    unsigned seen = 0;
    int spins;

    for (spins = 0; (seen < count) && (spins < WAIT_MS * 10); ++spins) {
        ck_assert(hixl_get_notifies(p->e, &n, &got) == HIXL_SUCCESS);
        for (i = 0; i < got; ++i) {
            ck_assert_str_eq(n[i].name, "done");
            ++seen;
        }
        hixl_release_notifies(n, got);
        if (seen < count) {
            usleep(100);
        }
    }
    ck_assert_msg(seen == count, "decode handed back %u of %u streams", seen,
                  count);
}

static void run_layer_order(const transport_t *t)
{
    int to_child[2], from_child[2], status;
    char line[256], decode[128];
    unsigned long long dst;
    unsigned first, layer, k;
    hixl_mem_handle_t h;
    hixl_mem_desc_t md;
    prefill_t p;
    FILE *in;
    pid_t pid;

    ck_assert(pipe(to_child) == 0 && pipe(from_child) == 0);
    set_tls(t);
    pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        alarm(240);
        _exit(decode_main(t, from_child[1], to_child[0]));
    }
    close(to_child[0]);
    close(from_child[1]);
    in = fdopen(from_child[0], "r");

    memset(&p, 0, sizeof(p));
    plan_init(&p.plan);
    ck_assert(fgets(line, sizeof(line), in) != NULL);
    ck_assert(sscanf(line, "%127s %llx", decode, &dst) == 2);
    p.decode = decode;
    p.dst    = dst;

    ck_assert_msg(hixl_initialize(t->ipv6 ? "::1" : "127.0.0.1", NULL, 0,
                                  &p.e) == HIXL_SUCCESS, "init: %s",
                  hixl_last_error());
    p.src   = calloc(1, plan_region_size(&p.plan));
    md.addr = (uintptr_t)p.src;
    md.len  = plan_region_size(&p.plan);
    ck_assert(hixl_register_mem(p.e, &md, HIXL_MEM_HOST, &h) == HIXL_SUCCESS);
    ck_assert_msg(hixl_connect(p.e, p.decode, 5000) == HIXL_SUCCESS,
                  "connect %s: %s", p.decode, hixl_last_error());
    snprintf(line, sizeof(line), "%s\n", hixl_engine_name(p.e));
    ck_assert(write(to_child[1], line, strlen(line)) > 0);

    p.maxreqs = (size_t)p.plan.streams_in_flight * p.plan.layers;
    p.reqs    = calloc(p.maxreqs, sizeof(*p.reqs));
    for (first = 0; first < p.plan.uses; first += p.plan.streams_in_flight) {
        for (layer = 0; layer < p.plan.layers; ++layer) {
            for (k = 0; k < p.plan.streams_in_flight; ++k) {
                prefill_post_layer(&p, first + k, layer);
            }
        }
        prefill_reap(&p);
        prefill_wait_done(&p, p.plan.streams_in_flight);
    }

    ck_assert(fgets(line, sizeof(line), in) != NULL);
    ck_assert_msg(atoi(line) == 0, "decode saw %s layer(s) with wrong bytes",
                  strtok(line, "\n"));
    ck_assert_msg(hixl_disconnect(p.e, p.decode, 5000) == HIXL_SUCCESS,
                  "disconnect: %s", hixl_last_error());
    ck_assert(write(to_child[1], "q\n", 2) == 2);
    ck_assert(waitpid(pid, &status, 0) == pid);
    ck_assert_msg(WIFEXITED(status) && (WEXITSTATUS(status) == 0),
                  "decode exited with status 0x%x", status);
    hixl_deregister_mem(p.e, h);
    hixl_finalize(p.e);
    fclose(in);
    free(p.reqs);
    free(p.src);
}

/* With UCX_TLS pinned (test/rma_path.sh), an entry that differs from an
 * earlier one only in its transport would repeat that one's run. */
static int repeats_earlier(int i)
{
    int j;

    for (j = 0; j < i; ++j) {
        if ((transports[j].ipv6 == transports[i].ipv6) &&
            !strcmp(transports[j].decode_progress_thread,
                    transports[i].decode_progress_thread)) {
            return 1;
        }
    }
    return 0;
}

START_TEST(test_layer_order)
{
    if (hx_env_pinned("UCX_TLS") && repeats_earlier(_i)) {
        printf("transport %d: skipped, UCX_TLS is pinned: an earlier entry "
               "runs the same\n", _i);
        return;
    }
    run_layer_order(&transports[_i]);
}
END_TEST

int main(void)
{
    Suite *s   = suite_create("layer_order");
    TCase *tc  = tcase_create("ordering");
    SRunner *r;
    int failed;

    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_layer_order, 0,
                        sizeof(transports) / sizeof(transports[0]));
    suite_add_tcase(s, tc);
    r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
