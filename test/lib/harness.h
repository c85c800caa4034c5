/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test harness shared by the Check suites of libhixl-ucx.
 *
 * Three things live here so that no suite repeats them:
 *
 *  - running a suite (hx_main): one Check runner per program, so that
 *    `make -j2 check` runs programs in parallel;
 *  - byte patterns (hx_pat_*): every byte a test moves is a function of a
 *    seed and an index, so either side of a transfer can compute what it must
 *    see without asking the library under test;
 *  - targets (hx_target_*): a forked child process that owns a listening
 *    engine and its registered memory and obeys commands from the test over
 *    a pipe (FILL, VERIFY, REGISTER, DEREGISTER, NOTIFIES, SEND_NOTIFY,
 *    WATCH, STALL, QUIT).  The child fills and verifies its memory itself, so a
 *    WRITE is checked where it landed.
 *
 * Process rules, so that no test can leave a process behind or hang CI:
 *  - targets are forked before this process initializes UCX or hixl (a child
 *    must not inherit a live UCX context), so start every target a test needs
 *    before its own hixl_initialize();
 *  - a target dies with its parent (PR_SET_PDEATHSIG), exits when its command
 *    pipe closes, and has its own alarm() as a last resort;
 *  - every wait on a target is bounded (HX_REPLY_TIMEOUT_MS) and a target
 *    that does not answer is killed and the test fails;
 *  - hx_target_kill_all() (the checked teardown every suite installs) kills
 *    whatever a failed test left running.
 */
#ifndef HIXL_TEST_HARNESS_H_
#define HIXL_TEST_HARNESS_H_

#include <hixl/hixl.h>

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Per-test Check timeout: generous, so that only a hang trips it. */
#define HX_TEST_TIMEOUT_S   120
/* Longest wait for one target reply. */
#define HX_REPLY_TIMEOUT_MS 90000
/* Timeout given to hixl calls that should succeed quickly. */
#define HX_OP_TIMEOUT_MS    30000

#define HX_MAX_REGIONS 64
#define HX_MAX_OPTS    12

#define HX_MIB (1024ull * 1024ull)

/* ---- suites ------------------------------------------------------------- */

/* Run a suite with CK_ENV verbosity; the exit status for main(). */
int hx_main(Suite *suite);

/* A test case with the harness' timeout and teardown (kills targets). */
TCase *hx_tcase(const char *name);

/* Remove every HIXL_* variable (and HCCL_RDMA_TC / _SL, which options
 * read) from the environment, so the developer's shell cannot change what
 * a test sees, and keep the installed plugin directory out of the search
 * (HIXL_PLUGIN_INSTALL_DIR=""): the tests see their build tree only,
 * before or after make install.  hx_main() calls it. */
void hx_clear_hixl_env(void);

/* 1 when the environment variable `name` is listed in HX_PIN_ENV (names
 * separated by spaces): whoever runs the suite fixed its value for every
 * test (test/rma_path.sh), so hx_clear_hixl_env and hx_use_tls leave it
 * as it is. */
int hx_env_pinned(const char *name);

/* ---- transports --------------------------------------------------------- */

/* The UCX_TLS settings integration tests loop over (tcase_add_loop_test
 * with 0 .. hx_tls_count): "tcp", "sm" and unset (UCX's default choice).
 * hx_tls_count_all adds "posix,cma", used by the core transfer test only. */
typedef struct hx_tls {
    const char *label;
    const char *tls;    /* NULL: UCX_TLS unset */
} hx_tls_t;

extern const hx_tls_t hx_tls_table[];
extern const int      hx_tls_count;
extern const int      hx_tls_count_all;

/* Set (or unset) UCX_TLS for this process and the targets it forks from now
 * on; must come before any hixl_initialize of the test.  When UCX_TLS is
 * pinned (hx_env_pinned) it is left alone, and a test asking for another
 * transport than the first ends at once as passed (fork mode): it would
 * repeat the first one's run. */
void hx_use_tls(int index);

/* Label of the current transport, for failure messages. */
const char *hx_tls_label(void);

/* ---- patterns ------------------------------------------------------------ */

/* Byte idx of the pattern stream `seed`.  Index, not address: the same
 * bytes can be produced at any place in either process. */
uint8_t hx_pat(uint64_t seed, uint64_t idx);

/* buf[k] = hx_pat(seed, idx + k) for k < len. */
void hx_pat_fill(void *buf, size_t len, uint64_t seed, uint64_t idx);

/* Offset of the first k with buf[k] != hx_pat(seed, idx + k), or -1. */
int64_t hx_pat_find_bad(const void *buf, size_t len, uint64_t seed,
                        uint64_t idx);

/* 0 when buf holds the pattern, else -1 with a description in msg. */
int hx_pat_check(const void *buf, size_t len, uint64_t seed, uint64_t idx,
                 const char *what, char *msg, size_t msglen);

/* Fail the test if buf does not hold the pattern, naming what and where. */
#define hx_pat_assert(_buf, _len, _seed, _idx, _what) \
    do { \
        char _m[512]; \
        ck_assert_msg(hx_pat_check((_buf), (_len), (_seed), (_idx), (_what), \
                                   _m, sizeof(_m)) == 0, "%s", _m); \
    } while (0)

/* Deterministic pseudo-random numbers for layouts (not for patterns). */
uint64_t hx_rand(uint64_t *state);

/* A loopback port for a listener that a test restarts under the same name:
 * free now and outside the kernel's ephemeral range, so that no outgoing
 * connection or port-0 bind on the machine can be handed it in between. */
uint16_t hx_stable_port(void);

/* Page-aligned anonymous memory (munmap with hx_free_pages). */
void *hx_alloc_pages(size_t len);
void hx_free_pages(void *p, size_t len);

/* ---- expected failures ----------------------------------------------------- */

/* Put a known message in hixl_last_error(), so that a check after a failed
 * call proves the call wrote its own message. */
void hx_mark_last_error(void);

/* Assert a call failed with `expected`, set a message of its own (non-empty,
 * not the mark) and, when `substr` is not NULL, that it contains substr. */
#define hx_expect(_call, _expected, _substr) \
    do { \
        hixl_status_t _st; \
        char _m[1024]; \
        hx_mark_last_error(); \
        _st = (_call); \
        ck_assert_msg(hx_expect_eval(#_call, _st, (_expected), (_substr), \
                                     _m, sizeof(_m)) == 0, "%s", _m); \
    } while (0)
int hx_expect_eval(const char *call, hixl_status_t got,
                   hixl_status_t expected, const char *substr, char *msg,
                   size_t msglen);

/* Assert a call succeeded; on failure the message has hixl_last_error(). */
#define hx_ok(_call) \
    do { \
        hixl_status_t _st = (_call); \
        ck_assert_msg(_st == HIXL_SUCCESS, "%s [%s]: %s (%d): %s", #_call, \
                      hx_tls_label(), hixl_strerror(_st), (int)_st, \
                      hixl_last_error()); \
    } while (0)

/* ---- raw sockets ------------------------------------------------------------- */

/* A plain TCP connection to an IPv4 engine name "a.b.c.d:port" (asserts):
 * for tests that speak control messages themselves. */
int hx_raw_connect(const char *name);

/* ---- engines in this process ------------------------------------------------ */

/* hixl_initialize with options given as "key", "value", ..., NULL, asserting
 * success. */
hixl_engine_t *hx_engine(const char *name, ...)
    __attribute__((sentinel));

/* hixl_connect within HX_OP_TIMEOUT_MS, asserting success. */
void hx_connect(hixl_engine_t *engine, const char *remote);

/* Register [p, +len) as HOST memory, asserting success. */
hixl_mem_handle_t hx_register(hixl_engine_t *engine, void *p, size_t len);

/* Poll a request until it leaves WAITING (bounded); returns the final
 * transfer status, with the call status in *status_p if not NULL. */
hixl_transfer_status_t hx_wait_req(hixl_engine_t *engine, hixl_req_t req,
                                   hixl_status_t *status_p);

/* Move descs and assert it completed: hixl_transfer_sync, or (async)
 * hixl_transfer_async then hixl_get_transfer_status polling. */
void hx_transfer(hixl_engine_t *engine, const char *remote,
                 hixl_transfer_op_t op, const hixl_transfer_op_desc_t *descs,
                 size_t num_descs, int async);

/* ---- targets ------------------------------------------------------------- */

typedef struct hx_target_cfg {
    const char   *name;       /* "127.0.0.1:0" (default) or "[::1]:0" */
    hixl_option_t opts[HX_MAX_OPTS];   /* hixl.ListenEphemeral=1 is added */
    size_t        nopts;
    size_t        region_len[8];       /* regions registered at start */
    size_t        nregions;
    size_t        misalign;   /* regions start this many bytes past a page */
    unsigned      alloc;      /* bit i: region i from hixl_alloc_mem, which
                                 UCX allocates and a peer of this host maps
                                 (misalign does not apply) */
    uint64_t      init_seed;  /* regions start filled with this pattern
                                 (0: zero-filled) */
    int           no_drain;   /* take notifies only when asked: lets the
                                 engine's notify queue fill up */
    int           progress;   /* without hixl.ProgressThread, the child
                                 drives progress with hixl_get_notifies */
} hx_target_cfg_t;

/* A default configuration: "127.0.0.1:0", one region of region_len. */
void hx_target_cfg_init(hx_target_cfg_t *cfg, size_t region_len);

/* Append an option to cfg. */
void hx_target_cfg_opt(hx_target_cfg_t *cfg, const char *key,
                       const char *value);

typedef struct hx_target {
    pid_t    pid;
    int      cmd_fd;
    int      rep_fd;
    char     name[HIXL_ENGINE_NAME_MAX + 1];  /* from hixl_engine_name() */
    uint64_t addr[HX_MAX_REGIONS];            /* region start in the child */
    uint64_t len[HX_MAX_REGIONS];             /* 0: deregistered */
} hx_target_t;

/* While waiting for a target's reply, call idle(arg) every millisecond:
 * an initiator without a progress thread keeps its engine going with it
 * (a target deregistering memory waits for its peers to confirm). */
void hx_target_set_idle(void (*idle)(void *arg), void *arg);

/* An idle function for hx_target_set_idle: hixl_get_notifies() on the
 * engine `arg` (what it returns is dropped), which drives its progress. */
void hx_idle_progress(void *engine);

/* Fork a target and wait until its engine listens (asserts). */
void hx_target_start(hx_target_t *t, const hx_target_cfg_t *cfg);

/* Register one more region of len bytes in the child; returns its index.
 * The child answers only after hixl_register_mem() returned. */
int hx_target_register(hx_target_t *t, size_t len, size_t misalign);

/* hixl_deregister_mem in the child (asserts success). */
void hx_target_deregister(hx_target_t *t, int region);

/* region[off, +len) = pattern (seed, idx) in the child. */
void hx_target_fill(hx_target_t *t, int region, uint64_t off, uint64_t len,
                    uint64_t seed, uint64_t idx);

/* The child checks region[off, +len) against pattern (seed, idx); returns 0
 * when it matches, else -1 with the child's description in msg. */
int hx_target_check(hx_target_t *t, int region, uint64_t off, uint64_t len,
                    uint64_t seed, uint64_t idx, char *msg, size_t msglen);

/* hx_target_check that fails the test on a mismatch. */
#define hx_target_verify(_t, _r, _off, _len, _seed, _idx) \
    do { \
        char _m[1024]; \
        ck_assert_msg(hx_target_check((_t), (_r), (_off), (_len), (_seed), \
                                      (_idx), _m, sizeof(_m)) == 0, \
                      "verify in target failed [%s]: %s", hx_tls_label(), \
                      _m); \
    } while (0)

/* A notify as the child received it. */
typedef struct hx_notify {
    char    *remote;
    char    *name;
    uint8_t *msg;
    size_t   msg_len;
    int      verified;   /* 0: not a verify notify; 1: its data was all
                            there on arrival; -1: it was not (see note) */
    char    *note;
} hx_notify_t;

/* Name of notifies whose message is a hx_verify_spec_t: the child checks the
 * described bytes the moment it takes the notify from hixl_get_notifies(). */
#define HX_VERIFY_NOTIFY "hx.verify"

typedef struct hx_verify_spec {
    uint32_t region;
    uint32_t pad;
    uint64_t off, len, seed, idx;
} hx_verify_spec_t;

/* Every notify the child received since the last call, oldest first (the
 * child calls hixl_get_notifies() once more before answering). */
hx_notify_t *hx_target_notifies(hx_target_t *t, size_t *count_p);
void hx_notifies_free(hx_notify_t *n, size_t count);

/* Make the child spin on hixl_get_notifies() until it holds `count`
 * notifies (or timeout_ms passed), checking verify notifies on arrival.
 * Returns immediately; hx_target_watch_end() collects the answer (the
 * number of notifies held).  No other command may be sent in between. */
void hx_target_watch_begin(hx_target_t *t, size_t count, int timeout_ms);
size_t hx_target_watch_end(hx_target_t *t);

/* The child sends a notify to `remote` (one of its accepted peers);
 * returns the status hixl_send_notify gave, its message in msg. */
hixl_status_t hx_target_send_notify(hx_target_t *t, const char *remote,
                                    const char *name, const void *data,
                                    size_t len, char *msg, size_t msglen);

/* The child answers, then sleeps ms without calling into its engine: with
 * hixl.ProgressThread=0 the target makes no progress meanwhile, so on
 * transports that need target-side progress (tcp) transfers to it stall. */
void hx_target_stall(hx_target_t *t, int ms);

/* Stop a child process (SIGSTOP) and return once every thread of it has
 * stopped: kill() returns before the stop has reached them, and on a
 * loaded machine a thread may still run, and answer, for milliseconds. */
void hx_stop_child(pid_t pid);

/* 1 while the child runs; else 0 with how it ended in why. */
int hx_target_alive(hx_target_t *t, char *why, size_t whylen);

/* QUIT: the child finalizes its engine and exits; asserts a clean exit. */
void hx_target_stop(hx_target_t *t);

/* Kill every target still running (checked teardown). */
void hx_target_kill_all(void);

#endif
