/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Network-namespace hosts for multi-host tests.  See netns.h.
 */
#define _GNU_SOURCE
#include "netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HX_NETNS_DIR "/var/run/netns"
#define HX_NS_PREFIX "hxt"

static void hx_net_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void hx_net_msg(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if ((err == NULL) || (errlen == 0)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int64_t hx_net_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- removal (system calls only: also used from signal handlers) -------- */

/* What `ip netns del` does: detach the bind mount that keeps the namespace
 * alive, then remove the file.  The veth ends inside go with the namespace
 * once no process runs in it any more. */
static void hx_ns_remove(const char *name)
{
    char path[128];
    size_t n = sizeof(HX_NETNS_DIR) - 1, l = strlen(name);

    if (n + 1 + l + 1 > sizeof(path)) {
        return;
    }
    memcpy(path, HX_NETNS_DIR, n);
    path[n] = '/';
    memcpy(path + n + 1, name, l + 1);
    umount2(path, MNT_DETACH);
    unlink(path);
}

/* Names created by this process, for its atexit handler. */
#define HX_NET_REG_MAX 16
static char  hx_net_reg[HX_NET_REG_MAX][32];
static pid_t hx_net_reg_pid;
static int   hx_net_atexit_done;

static void hx_net_atexit(void)
{
    int i;

    /* children forked from here inherit the handler: only the creator
     * removes what it made */
    if (getpid() != hx_net_reg_pid) {
        return;
    }
    for (i = 0; i < HX_NET_REG_MAX; ++i) {
        if (hx_net_reg[i][0] != '\0') {
            hx_ns_remove(hx_net_reg[i]);
            hx_net_reg[i][0] = '\0';
        }
    }
}

static void hx_net_reg_add(const char *name)
{
    int i;

    if (!hx_net_atexit_done) {
        atexit(hx_net_atexit);
        hx_net_atexit_done = 1;
    }
    if (hx_net_reg_pid != getpid()) {
        /* inherited from a parent: not ours */
        memset(hx_net_reg, 0, sizeof(hx_net_reg));
        hx_net_reg_pid = getpid();
    }
    for (i = 0; i < HX_NET_REG_MAX; ++i) {
        if (hx_net_reg[i][0] == '\0') {
            snprintf(hx_net_reg[i], sizeof(hx_net_reg[i]), "%s", name);
            return;
        }
    }
}

static void hx_net_reg_del(const char *name)
{
    int i;

    for (i = 0; i < HX_NET_REG_MAX; ++i) {
        if (!strcmp(hx_net_reg[i], name)) {
            hx_net_reg[i][0] = '\0';
        }
    }
}

/* "hxt<pid>h<digit>" -> pid, else 0 */
static pid_t hx_ns_owner(const char *name)
{
    const char *p = name + sizeof(HX_NS_PREFIX) - 1;
    long pid = 0;

    if (strncmp(name, HX_NS_PREFIX, sizeof(HX_NS_PREFIX) - 1) != 0) {
        return 0;
    }
    if ((*p < '0') || (*p > '9')) {
        return 0;
    }
    while ((*p >= '0') && (*p <= '9') && (pid < 100000000)) {
        pid = pid * 10 + (*p++ - '0');
    }
    if ((p[0] != 'h') || (p[1] < '0') || (p[1] > '9') || (p[2] != '\0')) {
        return 0;
    }
    return (pid_t)pid;
}

/* Parent pid of pid from /proc/pid/stat, or -1. */
static pid_t hx_ppid_of(pid_t pid)
{
    char path[64], buf[512], *p;
    ssize_t n;
    int fd;
    long ppid = 0;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold spaces, so start after the
     * last ')' */
    p = strrchr(buf, ')');
    if ((p == NULL) || (p[1] == '\0') || (p[2] == '\0')) {
        return -1;
    }
    p += 3;   /* ") S" */
    while (*p == ' ') {
        ++p;
    }
    while ((*p >= '0') && (*p <= '9')) {
        ppid = ppid * 10 + (*p++ - '0');
    }
    return (pid_t)ppid;
}

struct hx_dirent64 {
    uint64_t       d_ino;
    int64_t        d_off;
    unsigned short d_reclen;
    unsigned char  d_type;
    char           d_name[];
};

int hx_net_sweep(int kill_children)
{
    char buf[4096];
    struct hx_dirent64 *d;
    long n, off;
    pid_t owner, self = getpid();
    int fd, removed = 0, rounds;

    fd = open(HX_NETNS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    /* bounded: a directory of our size is read in a few calls */
    for (rounds = 0; rounds < 1024; ++rounds) {
        n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        for (off = 0; off < n; off += d->d_reclen) {
            d     = (struct hx_dirent64*)(buf + off);
            owner = hx_ns_owner(d->d_name);
            if (owner <= 0) {
                continue;
            }
            if ((kill(owner, 0) == 0) || (errno == EPERM)) {
                if (!kill_children || (hx_ppid_of(owner) != self)) {
                    continue;   /* a live test owns it */
                }
                /* our own test process, while we are being stopped: it
                 * and whatever it started (Check gives each test its own
                 * process group) go first */
                kill(-owner, SIGKILL);
                kill(owner, SIGKILL);
            }
            hx_ns_remove(d->d_name);
            ++removed;
        }
    }
    close(fd);
    return removed;
}

static void hx_net_on_signal(int sig)
{
    hx_net_sweep(1);
    hx_net_atexit();
    signal(sig, SIG_DFL);
    raise(sig);
}

void hx_net_sweep_on_signals(void)
{
    signal(SIGINT, hx_net_on_signal);
    signal(SIGTERM, hx_net_on_signal);
    signal(SIGHUP, hx_net_on_signal);
}

/* ---- running commands ------------------------------------------------------- */

int hx_net_enter(const hx_net_t *net, int h)
{
    char path[128];
    int fd, rc;

    if ((h < 0) || (h >= net->nhosts)) {
        errno = EINVAL;
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", HX_NETNS_DIR, net->ns[h]);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    rc = setns(fd, CLONE_NEWNET);
    close(fd);
    if (rc != 0) {
        return -1;
    }
    /* What `ip netns exec` does next, and for the same reason: /sys still
     * shows the namespace we came from, and UCX finds its network devices
     * in /sys/class/net.  A mount namespace of our own (slave, so nothing
     * leaks back) gets a sysfs of the new network namespace. */
    if ((unshare(CLONE_NEWNS) != 0) ||
        (mount("", "/", "none", MS_SLAVE | MS_REC, NULL) != 0)) {
        return -1;
    }
    umount2("/sys", MNT_DETACH);
    return mount(net->ns[h], "/sys", "sysfs", 0, NULL);
}

/* Wait for pid until deadline; SIGKILL it after.  Returns the wait status
 * or -1 when it had to be killed. */
static int hx_wait_bounded(pid_t pid, int64_t deadline)
{
    int wstatus = 0, killed = 0;
    pid_t r;

    for (;;) {
        r = waitpid(pid, &wstatus, WNOHANG);
        if ((r == pid) || ((r < 0) && (errno != EINTR))) {
            break;
        }
        if (!killed && (hx_net_now_ms() >= deadline)) {
            kill(pid, SIGKILL);
            killed = 1;
            /* a killed child is reaped by the next rounds */
            deadline += 5000;
            continue;
        }
        if (killed && (hx_net_now_ms() >= deadline)) {
            return -1;   /* unkillable: give up waiting, never hang */
        }
        usleep(2000);
    }
    return killed ? -1 : wstatus;
}

int hx_net_run(const hx_net_t *net, int h, char *const argv[],
               int timeout_ms, char *out, size_t outlen, char *err,
               size_t errlen)
{
    int64_t deadline = hx_net_now_ms() + timeout_ms;
    struct pollfd pfd;
    size_t used = 0;
    char sink[1024];
    int p[2], wstatus, devnull;
    ssize_t n;
    pid_t pid;

    if (out != NULL && outlen > 0) {
        out[0] = '\0';
    }
    if (pipe2(p, O_CLOEXEC) != 0) {
        hx_net_msg(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        hx_net_msg(err, errlen, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        if ((h >= 0) && (hx_net_enter(net, h) != 0)) {
            dprintf(p[1], "cannot enter %s: %s\n", net->ns[h],
                    strerror(errno));
            _exit(126);
        }
        devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) {
            dup2(devnull, STDIN_FILENO);
        }
        dup2(p[1], STDOUT_FILENO);
        dup2(p[1], STDERR_FILENO);
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    pfd.fd     = p[0];
    pfd.events = POLLIN;
    for (;;) {
        int64_t left = deadline - hx_net_now_ms();

        if (left <= 0) {
            break;
        }
        pfd.revents = 0;
        if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (pfd.revents == 0) {
            continue;
        }
        if ((out != NULL) && (used + 1 < outlen)) {
            n = read(p[0], out + used, outlen - used - 1);
        } else {
            n = read(p[0], sink, sizeof(sink));   /* keep it from blocking */
        }
        if (n <= 0) {
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            break;
        }
        if ((out != NULL) && (used + 1 < outlen) && (n > 0)) {
            used += (size_t)n;
            out[used] = '\0';
        }
    }
    close(p[0]);
    wstatus = hx_wait_bounded(pid, deadline);
    if (wstatus < 0) {
        hx_net_msg(err, errlen, "%s did not finish within %d ms (killed)",
                   argv[0], timeout_ms);
        return -1;
    }
    if (!WIFEXITED(wstatus)) {
        hx_net_msg(err, errlen, "%s ended by signal %d", argv[0],
                   WTERMSIG(wstatus));
        return -1;
    }
    return WEXITSTATUS(wstatus);
}

/* Run a command that must succeed; its output goes into err otherwise. */
static int hx_net_must(const hx_net_t *net, int h, char *err, size_t errlen,
                       char *const argv[])
{
    char out[1024], why[256], cmd[256];
    size_t used = 0;
    int rc, i;

    rc = hx_net_run(net, h, argv, HX_NET_CMD_TIMEOUT_MS, out, sizeof(out),
                    why, sizeof(why));
    if (rc == 0) {
        return 0;
    }
    cmd[0] = '\0';
    for (i = 0; (argv[i] != NULL) && (used + 2 < sizeof(cmd)); ++i) {
        used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, "%s%s",
                                 i ? " " : "", argv[i]);
    }
    if (rc < 0) {
        hx_net_msg(err, errlen, "`%s`%s%s: %s", cmd, (h >= 0) ? " in " : "",
                   (h >= 0) ? net->ns[h] : "", why);
    } else {
        hx_net_msg(err, errlen, "`%s`%s%s exited %d: %s", cmd,
                   (h >= 0) ? " in " : "", (h >= 0) ? net->ns[h] : "", rc,
                   out);
    }
    return -1;
}

#define HX_ARGV(...) ((char *const[]){__VA_ARGS__, NULL})

void hx_net_ss(const hx_net_t *net, int h, char *out, size_t outlen)
{
    char why[256];
    int rc;

    rc = hx_net_run(net, h, HX_ARGV("ss", "-tano"), HX_NET_CMD_TIMEOUT_MS,
                    out, outlen, why, sizeof(why));
    if ((rc < 0) && (out != NULL)) {
        snprintf(out, outlen, "(ss: %s)", why);
    }
}

/* ---- availability ------------------------------------------------------------ */

/* A command's output as a one-line reason. */
static const char *hx_net_trim(char *s)
{
    size_t l = strlen(s);

    while ((l > 0) && ((s[l - 1] == '\n') || (s[l - 1] == ' '))) {
        s[--l] = '\0';
    }
    for (l = 0; s[l] != '\0'; ++l) {
        if (s[l] == '\n') {
            s[l] = ' ';
        }
    }
    return s;
}

int hx_net_available(char *why, size_t whylen)
{
    char out[512], err[256], name[32];
    int rc;

    if (geteuid() != 0) {
        hx_net_msg(why, whylen, "network namespaces need root (euid %d)",
                   (int)geteuid());
        return -1;
    }
    rc = hx_net_run(NULL, -1, HX_ARGV("ip", "netns", "list"),
                    HX_NET_CMD_TIMEOUT_MS, out, sizeof(out), err,
                    sizeof(err));
    if (rc != 0) {
        hx_net_msg(why, whylen, "`ip netns` is unavailable: %s",
                   hx_net_trim((rc < 0) ? err : out));
        return -1;
    }
    rc = hx_net_run(NULL, -1, HX_ARGV("tc", "-V"), HX_NET_CMD_TIMEOUT_MS,
                    out, sizeof(out), err, sizeof(err));
    if (rc != 0) {
        hx_net_msg(why, whylen, "`tc` is unavailable: %s",
                   hx_net_trim((rc < 0) ? err : out));
        return -1;
    }
    /* the only real proof: make one and remove it */
    snprintf(name, sizeof(name), HX_NS_PREFIX "%dh9", (int)getpid());
    rc = hx_net_run(NULL, -1, HX_ARGV("ip", "netns", "add", name),
                    HX_NET_CMD_TIMEOUT_MS, out, sizeof(out), err,
                    sizeof(err));
    hx_ns_remove(name);
    if (rc != 0) {
        hx_net_msg(why, whylen, "`ip netns add` fails: %s",
                   hx_net_trim((rc < 0) ? err : out));
        return -1;
    }
    return 0;
}

/* ---- nets ---------------------------------------------------------------------- */

/* 10.0.0.0/8 holds 2^19 blocks of 8 /30 links: block pid % 2^19, link k.
 * Two live tests share a block only when their pids are equal modulo 2^19,
 * and even then nothing clashes: every address lives in the tests' own
 * namespaces. */
static void hx_link_addr(pid_t pid, int k, int end, char *buf, size_t len)
{
    uint32_t base = (((uint32_t)pid % (1u << 19)) * 8u + (uint32_t)k) * 4u;
    uint32_t a    = base + 1u + (uint32_t)end;

    snprintf(buf, len, "10.%u.%u.%u", (a >> 16) & 0xff, (a >> 8) & 0xff,
             a & 0xff);
}

const hx_net_link_t *hx_net_link(const hx_net_t *net, int a, int b)
{
    int k;

    for (k = 0; k < net->nlinks; ++k) {
        const hx_net_link_t *l = &net->link[k];

        if (((l->host[0] == a) && (l->host[1] == b)) ||
            ((l->host[0] == b) && (l->host[1] == a))) {
            return l;
        }
    }
    return NULL;
}

const char *hx_net_addr(const hx_net_t *net, int h, int peer)
{
    const hx_net_link_t *l = hx_net_link(net, h, peer);

    if (l == NULL) {
        return NULL;
    }
    return l->addr[(l->host[0] == h) ? 0 : 1];
}

/* Poll `ip -o link show` until dev reports carrier (LOWER_UP) and its
 * operational state is UP.  The second comes later (the kernel's link
 * watch applies it up to a second after the carrier) and is what UCX
 * looks at (IFF_RUNNING): a tcp interface that is not yet running makes
 * endpoint creation fail with "Destination is unreachable". */
static int hx_net_wait_running(const hx_net_t *net, int h, const char *dev,
                               char *err, size_t errlen)
{
    int64_t deadline = hx_net_now_ms() + HX_NET_CARRIER_TIMEOUT_MS;
    char out[1024], why[256];

    do {
        if ((hx_net_run(net, h, HX_ARGV("ip", "-o", "link", "show", "dev",
                                        (char*)dev),
                        HX_NET_CMD_TIMEOUT_MS, out, sizeof(out), why,
                        sizeof(why)) == 0) &&
            (strstr(out, "LOWER_UP") != NULL) &&
            (strstr(out, "NO-CARRIER") == NULL) &&
            (strstr(out, " state UP ") != NULL)) {
            return 0;
        }
        usleep(10000);
    } while (hx_net_now_ms() < deadline);
    hx_net_msg(err, errlen, "%s in %s is not running after %d ms: %s", dev,
               net->ns[h], HX_NET_CARRIER_TIMEOUT_MS, out);
    return -1;
}

static int hx_net_add_link(hx_net_t *net, int a, int b, char *err,
                           size_t errlen)
{
    hx_net_link_t *l = &net->link[net->nlinks];
    int k = net->nlinks, e;
    char cidr[32];

    l->host[0] = a;
    l->host[1] = b;
    for (e = 0; e < 2; ++e) {
        snprintf(l->dev[e], sizeof(l->dev[e]), "hx%dl%d%c",
                 (int)net->creator, k, e ? 'b' : 'a');
        hx_link_addr(net->creator, k, e, l->addr[e], sizeof(l->addr[e]));
    }
    /* both ends are born inside their namespaces: nothing of ours ever
     * exists in the namespace the tests run in */
    if (hx_net_must(net, -1, err, errlen,
                    HX_ARGV("ip", "link", "add", l->dev[0], "netns",
                            net->ns[a], "type", "veth", "peer", "name",
                            l->dev[1], "netns", net->ns[b])) != 0) {
        return -1;
    }
    net->nlinks++;
    for (e = 0; e < 2; ++e) {
        snprintf(cidr, sizeof(cidr), "%s/30", l->addr[e]);
        if ((hx_net_must(net, l->host[e], err, errlen,
                         HX_ARGV("ip", "addr", "add", cidr, "dev",
                                 l->dev[e])) != 0) ||
            (hx_net_must(net, l->host[e], err, errlen,
                         HX_ARGV("ip", "link", "set", l->dev[e], "up"))
             != 0)) {
            return -1;
        }
    }
    for (e = 0; e < 2; ++e) {
        if (hx_net_wait_running(net, l->host[e], l->dev[e], err, errlen)
            != 0) {
            return -1;
        }
    }
    return 0;
}

int hx_net_create(hx_net_t *net, int nhosts, char *err, size_t errlen)
{
    int h, a, b;

    memset(net, 0, sizeof(*net));
    if ((nhosts < 2) || (nhosts > HX_NET_MAX_HOSTS)) {
        hx_net_msg(err, errlen, "hx_net_create: %d hosts (2..%d)", nhosts,
                   HX_NET_MAX_HOSTS);
        return -1;
    }
    net->creator = getpid();
    /* leftovers of tests that died are removed before we add ours */
    hx_net_sweep(0);
    for (h = 0; h < nhosts; ++h) {
        snprintf(net->ns[h], sizeof(net->ns[h]), HX_NS_PREFIX "%dh%d",
                 (int)net->creator, h);
        /* registered first: a failure below still removes it */
        hx_net_reg_add(net->ns[h]);
        net->nhosts = h + 1;
        if ((hx_net_must(net, -1, err, errlen,
                         HX_ARGV("ip", "netns", "add", net->ns[h])) != 0) ||
            (hx_net_must(net, h, err, errlen,
                         HX_ARGV("ip", "link", "set", "lo", "up")) != 0)) {
            goto err_destroy;
        }
    }
    for (a = 0; a < nhosts; ++a) {
        for (b = a + 1; b < nhosts; ++b) {
            if (hx_net_add_link(net, a, b, err, errlen) != 0) {
                goto err_destroy;
            }
        }
    }
    return 0;

err_destroy:
    hx_net_destroy(net);
    return -1;
}

void hx_net_destroy(hx_net_t *net)
{
    int h;

    if ((net == NULL) || (net->creator != getpid())) {
        return;
    }
    for (h = 0; h < net->nhosts; ++h) {
        if (net->ns[h][0] != '\0') {
            hx_ns_remove(net->ns[h]);
            hx_net_reg_del(net->ns[h]);
            net->ns[h][0] = '\0';
        }
    }
    net->nhosts = 0;
    net->nlinks = 0;
}

/* ---- faults ------------------------------------------------------------------- */

static const hx_net_link_t *hx_net_link_or_err(const hx_net_t *net, int a,
                                               int b, char *err,
                                               size_t errlen)
{
    const hx_net_link_t *l = hx_net_link(net, a, b);

    if (l == NULL) {
        hx_net_msg(err, errlen, "no link between hosts %d and %d", a, b);
    }
    return l;
}

int hx_net_link_down(hx_net_t *net, int a, int b, int ends, char *err,
                     size_t errlen)
{
    const hx_net_link_t *l = hx_net_link_or_err(net, a, b, err, errlen);
    int e;

    if (l == NULL) {
        return -1;
    }
    for (e = 0; e < 2; ++e) {
        if (!(ends & (1 << e))) {
            continue;
        }
        if (hx_net_must(net, l->host[e], err, errlen,
                        HX_ARGV("ip", "link", "set", (char*)l->dev[e],
                                "down")) != 0) {
            return -1;
        }
    }
    return 0;
}

int hx_net_link_up(hx_net_t *net, int a, int b, char *err, size_t errlen)
{
    const hx_net_link_t *l = hx_net_link_or_err(net, a, b, err, errlen);
    int e;

    if (l == NULL) {
        return -1;
    }
    for (e = 0; e < 2; ++e) {
        if (hx_net_must(net, l->host[e], err, errlen,
                        HX_ARGV("ip", "link", "set", (char*)l->dev[e],
                                "up")) != 0) {
            return -1;
        }
    }
    for (e = 0; e < 2; ++e) {
        if (hx_net_wait_running(net, l->host[e], l->dev[e], err, errlen)
            != 0) {
            return -1;
        }
    }
    return 0;
}

int hx_net_blackhole(hx_net_t *net, int a, int b, char *err, size_t errlen)
{
    const hx_net_link_t *l = hx_net_link_or_err(net, a, b, err, errlen);
    int e;

    if (l == NULL) {
        return -1;
    }
    for (e = 0; e < 2; ++e) {
        if (hx_net_must(net, l->host[e], err, errlen,
                        HX_ARGV("tc", "qdisc", "add", "dev",
                                (char*)l->dev[e], "root", "blackhole"))
            != 0) {
            return -1;
        }
    }
    return 0;
}

int hx_net_unblackhole(hx_net_t *net, int a, int b, char *err,
                       size_t errlen)
{
    const hx_net_link_t *l = hx_net_link_or_err(net, a, b, err, errlen);
    int e;

    if (l == NULL) {
        return -1;
    }
    for (e = 0; e < 2; ++e) {
        if (hx_net_must(net, l->host[e], err, errlen,
                        HX_ARGV("tc", "qdisc", "del", "dev",
                                (char*)l->dev[e], "root")) != 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- TCP sockets ------------------------------------------------------------- */

const char *hx_tcp_state_name(int state)
{
    static const char *const names[] = {
        "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
        "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK",
        "LISTEN", "CLOSING", "NEW_SYN_RECV"
    };

    if ((state < 0) || (state >= (int)(sizeof(names) / sizeof(names[0])))) {
        return "?";
    }
    return names[state];
}

void hx_tcp_sock_str(const hx_tcp_sock_t *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%u -> %s:%u %s send-q %u recv-q %u%s", s->laddr,
             s->lport, s->raddr, s->rport, hx_tcp_state_name(s->state),
             s->txq, s->rxq, s->inode ? "" : " (held by no process)");
}

/* "0100007F:1F90" (v4) or 32 hex digits + port (v6) -> text and port */
static int hx_parse_endpoint(const char *tok, int v6, char *addr,
                             size_t addrlen, uint16_t *port)
{
    unsigned int w[4], p;
    int i;

    if (!v6) {
        struct in_addr a;

        if (sscanf(tok, "%8X:%X", &w[0], &p) != 2) {
            return -1;
        }
        /* the kernel prints the address word as it sits in memory */
        a.s_addr = w[0];
        inet_ntop(AF_INET, &a, addr, (socklen_t)addrlen);
    } else {
        struct in6_addr a;

        if (sscanf(tok, "%8X%8X%8X%8X:%X", &w[0], &w[1], &w[2], &w[3], &p)
            != 5) {
            return -1;
        }
        for (i = 0; i < 4; ++i) {
            memcpy(&a.s6_addr[4 * i], &w[i], 4);
        }
        inet_ntop(AF_INET6, &a, addr, (socklen_t)addrlen);
    }
    *port = (uint16_t)p;
    return 0;
}

int hx_tcp_parse(char *text, int v6, hx_tcp_sock_t *socks, int n, int max)
{
    char *line, *save = NULL, loc[80], rem[80];
    unsigned int st, txq, rxq;
    unsigned long long inode;
    hx_tcp_sock_t *s;

    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*u: %79s %79s %X %X:%X %*X:%*X %*X %*u %*u %llu",
                   loc, rem, &st, &txq, &rxq, &inode) != 6) {
            continue;   /* the header */
        }
        if (n >= max) {
            break;
        }
        s = &socks[n];
        memset(s, 0, sizeof(*s));
        if ((hx_parse_endpoint(loc, v6, s->laddr, sizeof(s->laddr),
                               &s->lport) != 0) ||
            (hx_parse_endpoint(rem, v6, s->raddr, sizeof(s->raddr),
                               &s->rport) != 0)) {
            continue;
        }
        s->state = (int)st;
        s->txq   = txq;
        s->rxq   = rxq;
        s->inode = inode;
        ++n;
    }
    return n;
}

int hx_net_tcp_socks(const hx_net_t *net, int h, hx_tcp_sock_t *socks,
                     int max, char *err, size_t errlen)
{
    /* the tables are read by a child that entered the namespace: what
     * /proc/self/net shows follows the reader's namespace */
    static char *const v4[] = {"cat", "/proc/self/net/tcp", NULL};
    static char *const v6[] = {"cat", "/proc/self/net/tcp6", NULL};
    size_t textlen = 1 << 20;
    char *text = malloc(textlen), why[256];
    int n = 0, rc;

    if (text == NULL) {
        hx_net_msg(err, errlen, "out of memory");
        return -1;
    }
    rc = hx_net_run(net, h, v4, HX_NET_CMD_TIMEOUT_MS, text, textlen, why,
                    sizeof(why));
    if (rc != 0) {
        hx_net_msg(err, errlen, "reading /proc/net/tcp in %s: %s",
                   net->ns[h], (rc < 0) ? why : text);
        free(text);
        return -1;
    }
    n  = hx_tcp_parse(text, 0, socks, 0, max);
    /* tcp6 is absent when IPv6 is disabled: not an error */
    rc = hx_net_run(net, h, v6, HX_NET_CMD_TIMEOUT_MS, text, textlen, why,
                    sizeof(why));
    if (rc == 0) {
        n = hx_tcp_parse(text, 1, socks, n, max);
    }
    free(text);
    return n;
}
