/* SPDX-License-Identifier: BSD-3-Clause */
/* What the UCX reproducers share (repro.h). */
#include "repro.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void rp_verdict(const char *name, int verdict, const char *fmt, ...)
{
    static const char *const words[] = {"ABSENT", "PRESENT", "SKIP",
                                        "ERROR"};
    const char *word;
    va_list ap;

    word = (verdict == RP_ABSENT)  ? words[0] :
           (verdict == RP_PRESENT) ? words[1] :
           (verdict == RP_SKIP)    ? words[2] : words[3];
    printf("%s: %s (UCX %s): ", name, word, ucp_get_version_string());
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    exit(verdict);
}

double rp_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void rp_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ((rp_ucx_t*)arg)->ep_error = status;
}

ucs_status_t rp_ucx_init(rp_ucx_t *u, uint64_t features, const char *tls,
                         const char *const *extra)
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_config_t *config;
    ucs_status_t status;
    char key[64];
    const char *eq;

    memset(u, 0, sizeof(*u));
    u->ep_error = UCS_OK;
    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    if (tls != NULL) {
        ucp_config_modify(config, "TLS", tls);
    }
    for (; (extra != NULL) && (*extra != NULL); extra++) {
        eq = strchr(*extra, '=');
        if ((eq == NULL) || ((size_t)(eq - *extra) >= sizeof(key))) {
            continue;
        }
        memcpy(key, *extra, eq - *extra);
        key[eq - *extra] = '\0';
        status = ucp_config_modify(config, key, eq + 1);
        if (status != UCS_OK) {
            ucp_config_release(config);
            return status;
        }
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = features;
    status = ucp_init(&params, config, &u->ctx);
    ucp_config_release(config);
    if (status != UCS_OK) {
        return status;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(u->ctx, &wparams, &u->worker);
    if (status != UCS_OK) {
        ucp_cleanup(u->ctx);
    }
    return status;
}

void rp_ucx_fini(rp_ucx_t *u)
{
    if (u->worker != NULL) {
        ucp_worker_destroy(u->worker);
    }
    if (u->ctx != NULL) {
        ucp_cleanup(u->ctx);
    }
}

ucs_status_t rp_connect(rp_ucx_t *u, int fd, ucp_err_handling_mode_t err_mode)
{
    ucp_worker_attr_t attr;
    ucp_ep_params_t params;
    ucs_status_t status;
    void *peer;
    size_t len;

    attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
    status = ucp_worker_query(u->worker, &attr);
    if (status != UCS_OK) {
        return status;
    }
    if (rp_send(fd, attr.address, attr.address_length) != 0) {
        ucp_worker_release_address(u->worker, attr.address);
        return UCS_ERR_IO_ERROR;
    }
    ucp_worker_release_address(u->worker, attr.address);
    peer = rp_recv(fd, &len);
    if (peer == NULL) {
        return UCS_ERR_IO_ERROR;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                             UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                             UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address         = peer;
    params.err_mode        = err_mode;
    params.err_handler.cb  = rp_ep_error;
    params.err_handler.arg = u;
    status = ucp_ep_create(u->worker, &params, &u->ep);
    free(peer);
    return status;
}

/* All of len bytes written to (writing) or read from fd. */
static int rp_io_all(int fd, void *buf, size_t len, int writing)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = writing ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p   += n;
        len -= (size_t)n;
    }
    return 0;
}

static int rp_write_all(int fd, const void *buf, size_t len)
{
    return rp_io_all(fd, (void*)buf, len, 1);
}

static int rp_read_all(int fd, void *buf, size_t len)
{
    return rp_io_all(fd, buf, len, 0);
}

int rp_send(int fd, const void *buf, size_t len)
{
    uint64_t n = len;

    return (rp_write_all(fd, &n, sizeof(n)) == 0) ?
           rp_write_all(fd, buf, len) : -1;
}

void *rp_recv(int fd, size_t *len_p)
{
    uint64_t n;
    void *buf;

    if ((rp_read_all(fd, &n, sizeof(n)) != 0) || (n > (1u << 20))) {
        return NULL;
    }
    buf = malloc(n ? n : 1);
    if ((buf == NULL) || (rp_read_all(fd, buf, n) != 0)) {
        free(buf);
        return NULL;
    }
    *len_p = n;
    return buf;
}

int rp_signal(int fd, char c)
{
    return rp_write_all(fd, &c, 1);
}

int rp_wait_byte(int fd, double timeout_s)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    unsigned char c;

    if ((poll(&pfd, 1, (int)(timeout_s * 1000)) != 1) ||
        (read(fd, &c, 1) != 1)) {
        return -1;
    }
    return c;
}

int rp_fd_closed(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char c;

    if (poll(&pfd, 1, 0) != 1) {
        return 0;
    }
    return recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

ucs_status_t rp_wait(ucp_worker_h worker, void *req, double timeout_s)
{
    double end = rp_now() + timeout_s;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (rp_now() > end) {
            return UCS_ERR_TIMED_OUT;
        }
        ucp_worker_progress(worker);
    }
    return status;
}

void rp_progress_for(ucp_worker_h worker, double seconds)
{
    double end = rp_now() + seconds;

    while (rp_now() < end) {
        ucp_worker_progress(worker);
    }
}

static pid_t rp_fork_role(rp_role_t role, int fd, int other, void *arg)
{
    pid_t pid = fork();

    if (pid == 0) {
        close(other);
        _exit(role(fd, arg));
    }
    return pid;
}

static int rp_reap(pid_t pid, double end, int *st)
{
    int status;
    pid_t r;

    while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
        if (rp_now() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            *st = -1;
            return 0;
        }
        usleep(10000);
    }
    *st = (r == pid) ? status : -1;
    return 0;
}

int rp_run_pair(rp_role_t a, rp_role_t b, void *arg, double timeout_s,
                int *st_a, int *st_b)
{
    double end = rp_now() + timeout_s;
    pid_t pa, pb;
    int sv[2];

    fflush(stdout);
    fflush(stderr);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        return -1;
    }
    pa = rp_fork_role(a, sv[0], sv[1], arg);
    pb = rp_fork_role(b, sv[1], sv[0], arg);
    close(sv[0]);
    close(sv[1]);
    if ((pa < 0) || (pb < 0)) {
        return -1;
    }
    rp_reap(pa, end, st_a);
    rp_reap(pb, end, st_b);
    return 0;
}

const char *rp_status_str(int st, char *buf, size_t len)
{
    if (st == -1) {
        snprintf(buf, len, "timed out");
    } else if (WIFEXITED(st)) {
        snprintf(buf, len, "exit %d", WEXITSTATUS(st));
    } else if (WIFSIGNALED(st)) {
        snprintf(buf, len, "signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    } else {
        snprintf(buf, len, "status 0x%x", st);
    }
    return buf;
}

int rp_am_receiver(rp_ucx_t *u, int fd, unsigned id, ucp_am_recv_callback_t cb,
                   void *arg)
{
    ucp_am_handler_param_t hp;

    if (rp_ucx_init(u, UCP_FEATURE_AM, "tcp", NULL) != UCS_OK) {
        return RP_SKIP;
    }
    memset(&hp, 0, sizeof(hp));
    hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                    UCP_AM_HANDLER_PARAM_FIELD_CB |
                    UCP_AM_HANDLER_PARAM_FIELD_ARG;
    hp.id         = id;
    hp.cb         = cb;
    hp.arg        = arg;
    if ((ucp_worker_set_am_recv_handler(u->worker, &hp) != UCS_OK) ||
        (rp_connect(u, fd, UCP_ERR_HANDLING_MODE_PEER) != UCS_OK) ||
        (rp_signal(fd, 'G') != 0)) {
        return RP_ERROR;
    }
    return RP_ABSENT;
}

int rp_receiver_killed(const char *name, rp_role_t receiver, rp_role_t sender,
                       char *ss, size_t sslen)
{
    char sr[64];
    int st_r, st_s;

    if (rp_run_pair(receiver, sender, NULL, 60.0, &st_r, &st_s) != 0) {
        rp_verdict(name, RP_ERROR, "cannot fork");
    }
    rp_status_str(st_r, sr, sizeof(sr));
    rp_status_str(st_s, ss, sslen);
    if (WIFEXITED(st_s) && (WEXITSTATUS(st_s) == RP_SKIP)) {
        rp_verdict(name, RP_SKIP, "tcp is not usable here");
    }
    if (!WIFSIGNALED(st_r) || (WTERMSIG(st_r) != SIGKILL)) {
        rp_verdict(name, RP_ERROR, "the receiver did not die as planned "
                   "(%s; sender %s)", sr, ss);
    }
    return st_s;
}

int rp_rndv_sender(rp_ucx_t *u, int fd, unsigned id, size_t len, void **req_p)
{
    ucp_request_param_t param;
    void *buf;

    if (rp_ucx_init(u, UCP_FEATURE_AM, "tcp", NULL) != UCS_OK) {
        return RP_SKIP;
    }
    if ((rp_connect(u, fd, UCP_ERR_HANDLING_MODE_PEER) != UCS_OK) ||
        (rp_wait_byte(fd, 10.0) != 'G')) {
        return RP_ERROR;
    }
    buf = calloc(1, len);   /* the role ends with its process */
    if (buf == NULL) {
        return RP_ERROR;
    }
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_AM_SEND_FLAG_RNDV;
    *req_p = ucp_am_send_nbx(u->ep, id, NULL, 0, buf, len, &param);
    return RP_ABSENT;
}
