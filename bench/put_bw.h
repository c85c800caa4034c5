/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * put_bw: ucx_perftest-style benchmark of libhixl-ucx.
 *
 * Shared declarations of the benchmark's modules:
 *   put_bw.c         command line, server/client set-up, the run sequence
 *   put_bw_oob.c     the out-of-band TCP socket (parameters, addresses, sync)
 *   put_bw_loop.c    the timed loops, the responder loops, data verification
 *   put_bw_report.c  statistics and the ucx_perftest-compatible output
 */
#ifndef HIXL_BENCH_PUT_BW_H_
#define HIXL_BENCH_PUT_BW_H_

#include "common/line.h"

#include <hixl/hixl.h>

#include <stddef.h>
#include <stdint.h>

/* Exit codes (also in the usage text). */
#define BENCH_EXIT_OK        0
#define BENCH_EXIT_ERROR     1   /* set-up, connection, transfer, timeout */
#define BENCH_EXIT_USAGE     2   /* bad command line */
#define BENCH_EXIT_CORRUPT   3   /* the verification pass found bad data */

typedef enum bench_test_id {
    BENCH_PUT_BW,
    BENCH_PUT_LAT,
    BENCH_GET_BW,
    BENCH_GET_LAT
} bench_test_id_t;

typedef struct bench_test_info {
    const char       *name;       /* -t value */
    const char       *alias;      /* ucx_perftest's name, also accepted */
    const char       *desc;       /* "Test:" line of the description box */
    const char       *lat_title;  /* "latency" or "overhead" column title */
    hixl_transfer_op_t op;
    int               pingpong;   /* half round trip, factor 2 */
    unsigned          window;     /* default -O */
} bench_test_info_t;

extern const bench_test_info_t bench_tests[];

/* Command line, as given (client) or as received from the client (server). */
typedef struct bench_opts {
    const char        *server;        /* NULL: be the server */
    unsigned           port;
    int                ipv6;
    bench_test_id_t    test;
    int                test_set;
    size_t            *sizes;         /* -s list: one transfer's descriptors */
    unsigned           num_sizes;
    unsigned           count;         /* -b: the -s list repeated per transfer */
    size_t             sweep_min;     /* -S MIN:MAX, 0 when not sweeping */
    size_t             sweep_max;
    uint64_t           iters;         /* -n */
    uint64_t           warmup;        /* -w */
    unsigned           window;        /* -O, 0: the test's default */
    double             percentile;    /* -R */
    double             max_time;      /* --max-time, 0: none */
    double             report_interval;
    int                final_only;    /* -f */
    int                csv;           /* -v */
    int                quiet;         /* -q */
    int                timeout_s;     /* --timeout */
    int                alloc_mmap;    /* --alloc mmap: not hixl_alloc_mem */
    int                layout;        /* bench_layout_t: --reuse, --scatter */
    int                memcpy_baseline;   /* --memcpy-baseline */
    hixl_option_t     *hixl_opts;     /* --hixl-opt KEY=VALUE */
    unsigned           num_hixl_opts;
} bench_opts_t;

/* One measurement: a transfer made of these descriptors. */
typedef struct bench_run {
    const size_t      *sizes;
    unsigned           num_sizes;
    unsigned           count;
    size_t             num_descs;     /* num_sizes * count */
    size_t             msg_size;      /* bytes per transfer */
    const char        *name;          /* row label in a sweep, or "" */
} bench_run_t;

/* Both sides: an engine, one registered region of 2 * len bytes: the target
 * half [0, len) is what the peer reads and writes, the local half
 * [len, 2 len) is the source (put) or destination (get) of our own
 * transfers. */
typedef struct bench_side {
    hixl_engine_t     *engine;
    char               peer_name[HIXL_ENGINE_NAME_MAX + 1];
    uint8_t           *mem;
    size_t             len;
    hixl_mem_handle_t  memh;
    uint64_t           peer_target;   /* remote address of the peer's target */
    hixl_transfer_op_desc_t *descs;   /* num_descs of the current run */
    size_t             num_descs;
    int                oob_fd;
    int                timeout_s;
    int                is_server;
    int                alloc_mmap;    /* --alloc mmap */
    int                mem_hixl;      /* mem came from hixl_alloc_mem */
} bench_side_t;

static inline uint8_t *bench_target(const bench_side_t *s)
{
    return s->mem;
}

static inline uint8_t *bench_local(const bench_side_t *s)
{
    return s->mem + s->len;
}

/* ---- put_bw_oob.c ---- */
int  bench_oob_listen(const bench_opts_t *opts, int *listen_fd_p);
int  bench_oob_accept(int listen_fd, int timeout_s, int quiet, int *fd_p);
int  bench_oob_connect(const bench_opts_t *opts, int *fd_p);
/* Numeric local address of a connected socket ("127.0.0.1", "[::1]"). */
int  bench_oob_local_host(int fd, char *buf, size_t len);
int  bench_oob_send(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Receive one line (without '\n') into a static buffer.  timeout_s <= 0
 * waits forever; progress, when given, runs between socket polls. */
int  bench_oob_recv(int fd, int timeout_s, bc_progress_fn_t progress,
                    void *arg, char **line_p);
/* Non-blocking: 1 when a whole line is waiting (then recv returns it at
 * once), 0 when not, -1 when the peer closed or the socket failed. */
int  bench_oob_ready(int fd);

/* ---- put_bw_loop.c ---- */
/* bench/common's pattern, through the runtime for device memory (-m). */
void bench_pattern_fill(uint8_t *buf, size_t len, uint64_t seed);
/* 0 when buf holds the pattern; otherwise -1 with a description in msg. */
int  bench_pattern_check(const uint8_t *buf, size_t len, uint64_t seed,
                         char *msg, size_t msg_len);
/* Where the -b repetitions of the -s list lie (local and target alike). */
typedef enum bench_layout {
    BENCH_LAYOUT_PACKED,    /* back to back, in order */
    BENCH_LAYOUT_REUSE,     /* --reuse: all over the bytes of the first */
    BENCH_LAYOUT_SCATTER    /* --scatter: in a shuffled order, so that no
                               descriptor's neighbour in the list is its
                               neighbour in memory */
} bench_layout_t;

/* The descriptors of run, laid out as layout says. */
int  bench_build_descs(bench_side_t *side, const bench_run_t *run,
                       bench_layout_t layout);
/* Drive the engine's progress (no request of ours in flight). */
void bench_progress(void *arg);

struct bench_stats;
/* Client: warm-up, timed loop, drain.  0, or 1 on an error (printed). */
int  bench_client_loop(bench_side_t *side, const bench_opts_t *opts,
                       const bench_run_t *run, struct bench_stats *stats);
/* Server: respond until the client's END line arrives (returned). */
int  bench_server_loop(bench_side_t *side, const bench_opts_t *opts,
                       const bench_run_t *run, char **end_line_p);
/* One transfer of the run's descriptors, waited for. */
int  bench_transfer_wait(bench_side_t *side, hixl_transfer_op_t op);

/* ---- put_bw_mem.c: -m memory types (host, ascend) ---- */
/* Parse a -m list; -1 when a type is unknown. */
int   bench_mem_parse(const char *arg);
/* The -m list as given ("host" by default), for HELLO. */
const char *bench_mem_arg(void);
/* This side's type: the send type (client) or the recv type (server);
 * opts name the runtime (hixl.PluginRuntime) and must outlive the run. */
void  bench_mem_role(const bench_opts_t *opts, int server);
/* len bytes of this side's type (zeroed); *type_p for registration. */
void *bench_mem_alloc(size_t len, hixl_mem_type_t *type_p);
void  bench_mem_free(void *p, size_t len);
void  bench_mem_zero(void *p, size_t len);
int   bench_mem_is_device(const void *p);
int   bench_mem_dev_fill(uint8_t *buf, size_t len, uint64_t seed);
int   bench_mem_dev_check(const uint8_t *buf, size_t len, uint64_t seed,
                          char *msg, size_t msg_len);

/* ---- put_bw_memcpy.c ---- */
struct bench_stats;
/* One core's memcpy of the run's descriptors (side->descs) between two
 * buffers of this process, timed into stats (labelled "memcpy").  0, or
 * -1 when it cannot be measured (printed). */
int  bench_memcpy_baseline(const bench_side_t *side, const bench_opts_t *opts,
                           const bench_run_t *run,
                           struct bench_stats *stats);

/* ---- put_bw_report.c ---- */
#define BENCH_TIMING_QUEUE 2048

typedef struct bench_snap {
    uint64_t iters;
    uint64_t bytes;
    uint64_t msgs;
    double   time;                    /* seconds, accurate clock */
} bench_snap_t;

typedef struct bench_stats {
    const bench_opts_t *opts;
    const bench_run_t  *run;
    double              factor;       /* 2 for ping-pong */
    bench_snap_t        cur, prev;
    double              start;
    uint64_t            prev_tick;
    uint64_t            report_tick;
    uint64_t            interval_ticks;
    uint64_t            queue[BENCH_TIMING_QUEUE];
    unsigned            head;
    const char         *label;        /* the row's, NULL: the transfers' */
} bench_stats_t;

void     bench_clock_init(void);
uint64_t bench_ticks(void);
double   bench_ticks_per_sec(void);

void bench_stats_start(bench_stats_t *st, const bench_opts_t *opts,
                       const bench_run_t *run);
void bench_stats_report(bench_stats_t *st, int final);

static inline void bench_stats_update(bench_stats_t *st, uint64_t bytes)
{
    uint64_t now = bench_ticks();

    st->cur.iters++;
    st->cur.bytes += bytes;
    st->cur.msgs++;
    st->queue[st->head] = now - st->prev_tick;
    st->head            = (st->head + 1) % BENCH_TIMING_QUEUE;
    st->prev_tick       = now;
    if (now - st->report_tick >= st->interval_ticks) {
        bench_stats_report(st, 0);
    }
}

/* Bytes a second over the whole measurement. */
double bench_stats_bw(const bench_stats_t *st);
/* The line after a memcpy baseline's row: the transfers' bandwidth over
 * the baseline's (table output only). */
void bench_print_ratio(const bench_stats_t *xfer, const bench_stats_t *base);

void bench_print_header(const bench_opts_t *opts);
void bench_print_run_name(const bench_opts_t *opts, const bench_run_t *run);
void bench_print_test_box(const bench_opts_t *opts, const bench_run_t *first,
                          const bench_run_t *last);

#endif
