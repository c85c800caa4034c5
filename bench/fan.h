/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fan: many engines at once (fan-in, fan-out), the bare-UCX endpoint
 * baseline and cold memory.
 *
 * One coordinator process forks every engine as its own process (a decode
 * engine holds registered memory and makes no hixl call after set-up, a
 * prefill engine connects and writes into it) and talks to each over a
 * socketpair with text lines, so that no engine shares an address space,
 * a UCX context or a CPU accounting with another.  The coordinator itself
 * never initializes UCX; it reads /proc/<pid>/{stat,status,fd} of its
 * children, which is how CPU, RSS and fds are measured from outside.
 *
 * Modules:
 *   fan.c         command line, the sweep over tests x UCX_TLS x N x reps
 *   fan_proc.c    children: fork, death signal, lines, timeouts, /proc
 *   fan_engine.c  the decode and prefill processes (hixl calls)
 *   fan_xfer.c    a prefill's windowed transfer loop and its connects
 *   fan_point.c   one fan-in or fan-out measurement (coordinator side)
 *   fan_ucx.c     bare-UCX baseline: memory and fds per UCX endpoint
 *   fan_ucx_xfer.c bare-UCX baseline: the same fan-in and fan-out with UCX
 *                 puts or active messages (the engines' lines, so that
 *                 fan_point.c runs it)
 *   fan_cold.c    cold memory: first vs second transfer, memcpy reference
 *   fan_report.c  statistics, tables, CSV and the gnuplot plot
 */
#ifndef HIXL_BENCH_FAN_H_
#define HIXL_BENCH_FAN_H_

#include "common/clock.h"
#include "common/line.h"
#include "common/pattern.h"
#include "common/size.h"
#include "common/stats.h"

#include <hixl/hixl.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FAN_EXIT_OK       0
#define FAN_EXIT_ERROR    1   /* a run failed or timed out */
#define FAN_EXIT_USAGE    2
#define FAN_EXIT_CORRUPT  3   /* verification found bad bytes */

#define FAN_MAX_N         1024
#define FAN_LINE_MAX      (128 * 1024)

enum {
    FAN_T_IN   = 1u << 0,   /* N prefill -> 1 decode */
    FAN_T_OUT  = 1u << 1,   /* 1 prefill -> N decode */
    FAN_T_UCX  = 1u << 2,   /* bare UCX: N endpoints between two processes */
    FAN_T_COLD = 1u << 3    /* first vs second transfer into fresh memory */
};

enum { FAN_ALLOC_HIXL = 0, FAN_ALLOC_MMAP = 1 };

/* Engine options: -O for every engine, --decode-opt, --prefill-opt. */
enum { FAN_OPT_ALL, FAN_OPT_DECODE, FAN_OPT_PREFILL, FAN_OPT_KINDS };

typedef struct fan_optlist {
    hixl_option_t *v;
    unsigned       n;
} fan_optlist_t;

typedef struct fan_opts {
    unsigned       tests;          /* FAN_T_* */
    unsigned       ns[64];         /* -N: engine counts of the sweep */
    unsigned       num_ns;
    size_t         desc_size;      /* -s */
    size_t         total;          /* -T: bytes per pass, all peers */
    unsigned       per_xfer;       /* -b: descriptors per transfer */
    unsigned       window;         /* -W: transfers in flight per peer */
    unsigned       passes;         /* -n: timed passes */
    unsigned       warmup;         /* -w: untimed passes before */
    unsigned       reps;           /* -r */
    unsigned       poll_us;        /* --poll-us: pause between status polls */
    int            wait_block;     /* --wait block: hixl_wait_transfers */
    double         idle_s;         /* --idle */
    double         point_timeout;  /* --point-timeout: transfer budget */
    double         quiet_wait;     /* --quiet-wait: wait for idle CPUs */
    char          *tls[8];         /* --tls, NULL entries: environment */
    unsigned       num_tls;
    unsigned       cold_allocs;    /* bit per FAN_ALLOC_* */
    int            pin_decode;     /* --pin D,P; -1: not pinned */
    int            pin_prefill;
    int            baseline;       /* fan-in/out also run the UCX baseline */
    const char    *out_dir;        /* --out, NULL: no files */
    int            csv;            /* -v: CSV on stdout instead of tables */
    int            quiet;
    fan_optlist_t  hopts[FAN_OPT_KINDS];
} fan_opts_t;

/* ---- fan_proc.c: children ----------------------------------------------- */

typedef struct fan_child {
    pid_t    pid;
    int      fd;                   /* coordinator's end of the socketpair */
    char     name[32];             /* "decode[3]", for messages */
    bc_lines_t rx;                 /* what it sent, in lines */
    char    *line;                 /* last complete line (rx's) */
    int      exited;
    int      status;
} fan_child_t;

typedef int (*fan_child_fn_t)(int fd, void *arg);

/* Fork a child that runs fn(fd, arg) and exits with its return value.  It
 * dies with the coordinator (PR_SET_PDEATHSIG), is pinned to cpu >= 0, and
 * keeps no descriptor of the coordinator but stdio and its own socket. */
/* n children, none spawned yet (no pid, no fd); free() them after reaping */
fan_child_t *fan_children(unsigned n);
int  fan_spawn(fan_child_t *c, const char *name, int cpu, fan_child_fn_t fn,
               void *arg);
int  fan_send(fan_child_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Wait for one line from each of n children, until deadline (monotonic
 * ns).  A line starting with "ERR" or a child that exits is an error,
 * printed with the child's name.  0 when all answered. */
int  fan_recv_all(fan_child_t *c, unsigned n, uint64_t deadline,
                  const char *expect);
/* Ask each to quit ("QUIT"), wait until deadline, then SIGKILL the rest.
 * Returns the number that did not exit 0. */
unsigned fan_reap(fan_child_t *c, unsigned n, uint64_t deadline);
void fan_kill_all(void);            /* signal handler path: every live child */

/* Child side: the socket's line reader (blocking, no timeout: the
 * coordinator's death kills the child) and writer. */
int  fan_child_recv(int fd, char **line_p);
/* A child's command loop: cmd(arg, line) for every line until QUIT
 * (FAN_EXIT_OK), a closed socket or a cmd that returns non-zero
 * (FAN_EXIT_ERROR). */
int  fan_child_serve(int fd, int (*cmd)(void *arg, const char *line),
                     void *arg);
int  fan_child_send(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* /proc/<pid> sample */
typedef struct fan_sample {
    uint64_t t_ns;
    uint64_t cpu_ticks;            /* utime + stime, all threads */
    uint64_t cpu_ns;               /* the same at ns resolution (the
                                    * process's CPU-time clock), 0 if none */
    uint64_t minflt;
    uint64_t rss_kb, anon_kb, file_kb, shmem_kb;
    unsigned fds;
    unsigned threads;
} fan_sample_t;

int    fan_proc_sample(pid_t pid, fan_sample_t *s);
double fan_ticks_per_sec(void);
/* CPU of the interval as a fraction of one core */
double fan_cores(const fan_sample_t *a, const fan_sample_t *b);
/* CPU seconds between two samples */
double fan_cpu_s(const fan_sample_t *a, const fan_sample_t *b);
/* private (non-shmem) resident KiB: anonymous + file; shared-memory pages
 * are the KV regions and the peers' mappings of them, data not overhead */
static inline uint64_t fan_private_kb(const fan_sample_t *s)
{
    return s->anon_kb + s->file_kb;
}
/* Fraction of all CPUs busy over `ms` (from /proc/stat) */
double fan_host_busy(unsigned ms);

/* ---- fan_engine.c: the engine processes --------------------------------- */

typedef struct fan_engine_cfg {
    const fan_opts_t *opts;
    unsigned   index;
    size_t     region_len;         /* decode: target; prefill: source */
    int        alloc;              /* FAN_ALLOC_* of the decode region */
    int        touch;              /* decode: fault the region in first */
} fan_engine_cfg_t;

int  fan_decode_main(int fd, void *arg);
int  fan_prefill_main(int fd, void *arg);

/* The pattern seed of a slice: bench/common's pattern, keyed by the
 * measurement, the pass and the peer. */
uint64_t fan_seed(unsigned point, unsigned pass, unsigned peer);
/* A decode's answer to a coordinator line about its memory: VERIFY (ok=0
 * with `broken` when that is not NULL), QUIT.  0 go on, 1 QUIT, -1 a line
 * it does not know (answered with ERR). */
int fan_decode_line(int fd, const char *line, const uint8_t *mem,
                    size_t mem_len, const char *broken);

typedef struct fan_peer fan_peer_t;
/* One value per peer as a comma list into buf (the CONNECTED and DONE
 * lines' fields). */
enum { FAN_LIST_CONNECT_MS, FAN_LIST_END, FAN_LIST_DONE, FAN_LIST_LATE_MS };
void fan_peer_list(char *buf, size_t len, const fan_peer_t *peers,
                   unsigned n, int what);

/* ---- fan_xfer.c: a prefill's transfers ---------------------------------- */

struct fan_peer {
    char       name[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t   remote;             /* where this peer's slice starts */
    uint8_t   *local;              /* our source for it */
    size_t     len;                /* slice bytes */
    /* results */
    double     connect_ms;         /* hixl_connect, call to return */
    double     late_ms;            /* how late that call started after t0 */
    uint64_t   t_end;              /* last completion (monotonic ns) */
    uint64_t   done;               /* bytes completed */
    int        partial;
};

typedef struct fan_xfer_cfg {
    hixl_engine_t *engine;
    fan_peer_t    *peers;
    unsigned       num_peers;
    size_t         desc_size;
    unsigned       per_xfer;
    unsigned       window;
    unsigned       passes;
    unsigned       poll_us;        /* pause when a sweep completed nothing */
    int            wait_block;     /* or sleep in hixl_wait_transfers */
    uint64_t       deadline;       /* stop posting then (monotonic ns) */
    int32_t        timeout_ms;     /* hixl_connect */
} fan_xfer_cfg_t;

/* Connect to every peer, each from its own thread at t0. */
int fan_xfer_connect(fan_xfer_cfg_t *x, uint64_t t0, char *err,
                     size_t err_len);
/* Write every slice `passes` times; 0, or -1 with the reason in err. */
int fan_xfer_run(fan_xfer_cfg_t *x, char *err, size_t err_len);

/* ---- results ------------------------------------------------------------ */

typedef struct fan_result {
    unsigned   test;               /* FAN_T_IN or FAN_T_OUT */
    const char *tls;
    unsigned   n, rep;
    int        ok;                 /* ran and verified */
    int        partial;            /* the budget ended the pass early */
    int        corrupt;
    char       err[256];
    size_t     desc_size, share;
    uint64_t   bytes;              /* completed in the timed pass(es) */
    double     run_s;              /* t0 to the last completion */
    double     agg_gbs;            /* every byte / (last end - t0) */
    double     peer_min_gbs, peer_max_gbs;
    double     share_min, share_max;   /* peer rate / mean peer rate */
    double     jain;               /* Jain's fairness index of the rates */
    double     finish;             /* first peer's finish / last's (t0) */
    double     *connect_ms;        /* n of them */
    double     late_max_ms;        /* latest connect call after t0 */
    double     hub_conn_cpu_ms;    /* hub CPU per peer, connect phase */
    double     pre_conn_cpu_ms;    /* prefill CPU per connect */
    double     hub_kb_connect;     /* private RSS growth / N, connected */
    double     hub_kb_per_peer;    /* private RSS growth / N, after the
                                    * transfers (see fan_private_kb) */
    double     hub_kb_rss;         /* VmRSS growth / N, shared pages too */
    double     hub_fds_per_peer;
    double     hub_rss_mb;         /* after the transfers */
    unsigned   hub_threads;
    double     dec_busy_mean, dec_busy_max;   /* cores */
    double     pre_busy_mean, pre_busy_max;
    double     dec_idle_mean, dec_idle_max;
    double     pre_idle_mean, pre_idle_max;
    double     wall_s;
    double     host_busy;          /* CPUs busy just before the run */
    /* bare UCX, same N and UCX_TLS: the transfers (fan_ucx_xfer.c) */
    int        base_xfer_ok;
    const char *base_op;           /* "put" or "am" */
    double     base_gbs;
    double     base_dec_busy, base_pre_busy;   /* cores, means */
    /* ... and the endpoints' memory (fan_ucx.c) */
    int        base_ok;
    double     base_target_kb, base_creator_kb;   /* per endpoint */
    double     base_target_fds, base_creator_fds;
} fan_result_t;

typedef struct fan_cold_result {
    const char *tls;
    int        alloc;              /* FAN_ALLOC_*, or -1: memcpy reference */
    int        shared;             /* memcpy: MAP_SHARED */
    unsigned   rep;
    int        ok;
    char       err[256];
    double     first_gbs, second_gbs;
    double     dec_flt_first, dec_flt_second;   /* minor faults */
    double     pre_flt_first, pre_flt_second;
    double     host_busy;
} fan_cold_result_t;

/* ---- fan_point.c: the steps of a measurement (fan_cold.c reuses them) --- */

typedef struct fan_pt {
    const fan_opts_t *o;
    fan_result_t     *r;
    int               in;          /* fan-in: one decode, n prefills */
    unsigned          n, ndec, npre, point_id;
    size_t            share;       /* bytes per peer */
    fan_child_t      *dec, *pre;
    char            (*dec_name)[HIXL_ENGINE_NAME_MAX + 1];
    uint64_t         *dec_addr;
    uint64_t         *end, *done;  /* per peer, last timed run */
    char            **dec_ucx;     /* per decode: READY's ucx= (bare UCX) */
    fan_child_fn_t    dec_main, pre_main;
    uint64_t          t0, start;
} fan_pt_t;

int  fan_pt_init(fan_pt_t *p, const fan_opts_t *o, fan_result_t *r,
                 unsigned test, unsigned n, unsigned point_id);
int  fan_pt_spawn(fan_pt_t *p, fan_engine_cfg_t *dcfg,
                  fan_engine_cfg_t *pcfg);
int  fan_pt_connect(fan_pt_t *p);
int  fan_pt_fill(fan_pt_t *p, unsigned pass);
int  fan_pt_run(fan_pt_t *p, unsigned passes);
void fan_pt_results(fan_pt_t *p);
/* 0, -1 on an error, 1 when a slice holds bad bytes (r->err says where) */
int  fan_pt_verify(fan_pt_t *p, unsigned pass);
/* reap every process, free; returns rc, or -1 when a process failed */
int  fan_pt_fini(fan_pt_t *p, int rc);

int  fan_point_run(const fan_opts_t *o, unsigned test, const char *tls,
                   unsigned n, unsigned rep, unsigned point_id,
                   fan_result_t *r);
/* The same measurement with other processes speaking the engines' lines */
int  fan_point_run_with(const fan_opts_t *o, unsigned test, const char *tls,
                        unsigned n, unsigned rep, unsigned point_id,
                        fan_result_t *r, fan_child_fn_t dec_main,
                        fan_child_fn_t pre_main);
/* The bare-UCX transfers of the same point (fan_ucx_xfer.c) */
int  fan_ucx_point_run(const fan_opts_t *o, unsigned test, const char *tls,
                       unsigned n, unsigned rep, unsigned point_id,
                       fan_result_t *r);
int  fan_ucx_run(const fan_opts_t *o, unsigned n, fan_result_t *r);
int  fan_cold_run(const fan_opts_t *o, const char *tls, int alloc,
                  unsigned rep, unsigned point_id, fan_cold_result_t *r);
void fan_memcpy_run(const fan_opts_t *o, int shared, unsigned rep,
                    fan_cold_result_t *r);

/* ---- fan_report.c ------------------------------------------------------- */

typedef struct fan_report fan_report_t;

fan_report_t *fan_report_open(const fan_opts_t *o, int argc, char **argv);
void fan_report_point(fan_report_t *rep, const fan_result_t *r);
void fan_report_cold(fan_report_t *rep, const fan_cold_result_t *r);
/* Tables, summary CSV, plot; returns the number of failed runs. */
unsigned fan_report_close(fan_report_t *rep);

#endif
