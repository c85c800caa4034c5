/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: an engine process.  Its main thread is the receiver
 * (receiver.c), a thread of its own the sender (sender.c); it talks to
 * the parent over two pipes: commands in, reports out.
 */
#include "child.h"

/* ---- engine process ---------------------------------------------------------- */

void child_err(child_t *c, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->err_lock);
    if (c->nerr == 0) {
        snprintf(c->first_err, sizeof(c->first_err), "%s", text);
    }
    if (c->nerr < 10) {
        fprintf(stderr, "soak[e%u]: %s\n", c->me, text);
    } else if (c->nerr == 10) {
        fprintf(stderr, "soak[e%u]: (further problems not shown)\n", c->me);
    }
    c->nerr++;
    pthread_mutex_unlock(&c->err_lock);
}

void child_send(child_t *c, uint32_t type, const char *text)
{
    c2p_t m;
    unsigned f;

    memset(&m, 0, sizeof(m));
    m.type = type;
    m.idx  = c->me;
    if (c->e != NULL) {
        snprintf(m.name, sizeof(m.name), "%s", hixl_engine_name(c->e));
    }
    m.base = (uintptr_t)c->region;
    m.len  = c->region_len;
    /* sum both threads' counters (not the rss fields: rs holds them) */
    for (f = 0; f < offsetof(stats_t, rss_start) / sizeof(uint64_t); ++f) {
        ((uint64_t*)&m.st)[f] =
            __atomic_load_n(&((uint64_t*)&c->ss)[f], __ATOMIC_RELAXED) +
            __atomic_load_n(&((uint64_t*)&c->rs)[f], __ATOMIC_RELAXED);
    }
    m.st.rss_start       = c->rs.rss_start;
    m.st.rss_warm        = c->rs.rss_warm;
    m.st.rss_end         = c->rs.rss_end;
    m.st.rss_max         = c->rs.rss_max;
    m.st.finalize_status = c->rs.finalize_status;
    if (text != NULL) {
        snprintf(m.text, sizeof(m.text), "%s", text);
    }
    if (hx_write_all(c->rep_fd, &m, sizeof(m)) != 0) {
        _exit(5);   /* the parent is gone */
    }
}

void child_fatal(child_t *c, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    fprintf(stderr, "soak[e%u]: fatal: %s\n", c->me, text);
    child_send(c, C_ERROR, text);
    _exit(2);
}

void child_expect(child_t *c, p2c_t *m, uint32_t type, int timeout_s)
{
    int rc = read_timed(c->cmd_fd, m, sizeof(*m), timeout_s * 1000);

    if (rc != 0) {
        child_fatal(c, "no command %u from the parent (%s)", type,
                    (rc == -2) ? "timeout" : "pipe closed");
    }
    if (m->type != type) {
        child_fatal(c, "command %u from the parent, expected %u", m->type,
                    type);
    }
}


static void child_heartbeat(child_t *c)
{
    uint64_t rss = rss_bytes();

    if (rss > c->rs.rss_max) {
        c->rs.rss_max = rss;
    }
    child_send(c, C_HEARTBEAT, NULL);
}

int child_main(unsigned me, int cmd_fd, int rep_fd)
{
    hixl_option_t opts[6];
    char streams[16];
    child_t *c;
    p2c_t cmd;
    receiver_t *r;
    pthread_t th;
    hixl_mem_desc_t md;
    hixl_status_t st;
    uint64_t next_beat, next_pipe, warm_at, t;
    unsigned p, j;
    int drained = 0, finish = 0, wait_s, rc;
    uint64_t wait_q = 0;
    struct pollfd pfd;

    c = calloc(1, sizeof(*c));
    r = calloc(1, sizeof(*r));
    if ((c == NULL) || (r == NULL)) {
        _exit(6);
    }
    pthread_mutex_init(&c->err_lock, NULL);
    c->me     = me;
    c->n      = g_cfg.engines;
    c->k      = g_cfg.slots;
    c->cmd_fd = cmd_fd;
    c->rep_fd = rep_fd;
    r->c      = c;
    for (p = 0; p < MAX_ENGINES; ++p) {
        for (j = 0; j < MAX_SLOTS; ++j) {
            r->expect[p][j] = j;   /* sequence q goes to slot q % K */
        }
    }

    snprintf(streams, sizeof(streams), "%u", c->n);
    opts[0].key = "hixl.ListenEphemeral"; opts[0].value = "1";
    opts[1].key = "hixl.MaxStreams";      opts[1].value = streams;
    opts[2].key = "hixl.MaxLayers";       opts[2].value = "1";
    opts[3].key = "hixl.ProgressThread";  opts[3].value = "1";
    st = hixl_initialize("127.0.0.1:0", opts, 4, &c->e);
    if (st != HIXL_SUCCESS) {
        c->e = NULL;
        child_fatal(c, "hixl_initialize: %s: %s", hixl_strerror(st),
                    hixl_last_error());
    }

    /* receive region: a ring per sender, then the static area */
    c->region_len = (size_t)c->n * c->k * SLOT_SIZE + STATIC_SIZE +
                    CHURN_AREA(SOAK_CHURN_LEN, SOAK_CHURN_PARALLEL);
    st = hixl_alloc_mem(c->e, c->region_len, HIXL_MEM_HOST,
                        (void**)&c->region, &c->region_h);
    if (st != HIXL_SUCCESS) {
        child_fatal(c, "hixl_alloc_mem(%zu): %s: %s", c->region_len,
                    hixl_strerror(st), hixl_last_error());
    }
    memset(c->region, GUARD, (size_t)c->n * c->k * SLOT_SIZE);
    pat_fill(c->region + (size_t)c->n * c->k * SLOT_SIZE, STATIC_SIZE,
             static_seed(me), 0);

    /* send slots per peer, then a read buffer: plain memory, registered */
    c->local_len = ((size_t)c->n * c->k + 1) * SLOT_SIZE;
    c->local = mmap(NULL, c->local_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->local == MAP_FAILED) {
        child_fatal(c, "mmap(%zu): %s", c->local_len, strerror(errno));
    }
    memset(c->local, 0, c->local_len);
    md.addr = (uintptr_t)c->local;
    md.len  = c->local_len;
    st = hixl_register_mem(c->e, &md, HIXL_MEM_HOST, &c->local_h);
    if (st != HIXL_SUCCESS) {
        child_fatal(c, "hixl_register_mem(%zu): %s: %s", c->local_len,
                    hixl_strerror(st), hixl_last_error());
    }

    child_send(c, C_READY, NULL);
    child_expect(c, &cmd, P_PEERS, SETUP_TIMEOUT_S);
    if (cmd.n != c->n) {
        child_fatal(c, "the parent sent %u engines, expected %u", cmd.n, c->n);
    }
    for (p = 0; p < c->n; ++p) {
        memcpy(c->names[p], cmd.names[p], sizeof(c->names[p]));
        c->names[p][HIXL_ENGINE_NAME_MAX] = '\0';
        c->base[p] = cmd.base[p];
    }
    for (p = 0; p < c->n; ++p) {
        if (p == me) {
            continue;
        }
        st = hixl_connect(c->e, c->names[p], OP_TIMEOUT_MS);
        if (st != HIXL_SUCCESS) {
            child_fatal(c, "hixl_connect(e%u %s): %s: %s", p, c->names[p],
                        hixl_strerror(st), hixl_last_error());
        }
    }
    child_send(c, C_CONNECTED, NULL);
    child_expect(c, &cmd, P_GO, SETUP_TIMEOUT_S);

    c->start_ms       = now_ms();
    c->end_ms         = c->start_ms + (uint64_t)g_cfg.seconds * 1000;
    c->rs.rss_start   = rss_bytes();
    c->rs.rss_max     = c->rs.rss_start;
    warm_at           = c->start_ms + (uint64_t)g_cfg.warmup * 1000;
    next_beat         = c->start_ms + 1000;
    next_pipe         = c->start_ms;
    if (pthread_create(&th, NULL, sender_main, c) != 0) {
        child_fatal(c, "pthread_create failed");
    }

    /* until the parent says every engine has its slots back */
    while (!finish) {
        recv_notifies(r);
        if (recv_scan(r, &wait_s, &wait_q) == 0) {
            if (wait_s >= 0) {
                /* nothing ready: wait a little for the oldest flush */
                CNT(&c->rs, waits, 1);
                st = hixl_wait_layer(c->e, c->names[wait_s], (uint32_t)wait_s,
                                     wait_q, 0, 1);
                if ((st != HIXL_SUCCESS) && (st != HIXL_TIMEOUT) &&
                    !((st == HIXL_FAILED) &&
                      strstr(hixl_last_error(), "superseded"))) {
                    CNT(&c->rs, failures, 1);
                    child_err(c, "hixl_wait_layer(e%d, gen %" PRIu64 "): "
                              "%s: %s", wait_s, wait_q, hixl_strerror(st),
                              hixl_last_error());
                    r->broken[wait_s] = 1;
                }
            } else {
                usleep(200);
            }
        }
        t = now_ms();
        if ((c->rs.rss_warm == 0) && (t >= warm_at)) {
            c->rs.rss_warm = rss_bytes();
        }
        if (!drained && atomic_load(&c->sender_over)) {
            drained = 1;
            child_send(c, C_DRAINED, NULL);
        }
        if (t >= next_beat) {
            next_beat = t + 1000;
            child_heartbeat(c);
        }
        if (t >= next_pipe) {
            next_pipe = t + 10;
            pfd.fd      = cmd_fd;
            pfd.events  = POLLIN;
            pfd.revents = 0;
            if (poll(&pfd, 1, 0) > 0) {
                rc = read_timed(cmd_fd, &cmd, sizeof(cmd), 10000);
                if (rc != 0) {
                    /* the parent is gone: nobody to report to */
                    _exit(4);
                }
                if (cmd.type == P_FINISH) {
                    finish = 1;
                }
            }
        }
    }
    atomic_store(&c->stop, 1);
    pthread_join(th, NULL);
    /* anything still due was never sent (the senders are drained) */
    recv_notifies(r);
    for (p = 0; p < c->n; ++p) {
        for (j = 0; j < c->k; ++j) {
            if (r->arrived[p][j] != 0) {
                CNT(&c->rs, failures, 1);
                child_err(c, "notify of seq %" PRIu64 " from e%u arrived "
                          "but was not checked", r->arrived[p][j] - 1, p);
            }
        }
    }
    if (c->rs.rss_warm == 0) {
        c->rs.rss_warm = rss_bytes();
    }
    c->rs.rss_end = rss_bytes();
    if (c->rs.rss_end > c->rs.rss_max) {
        c->rs.rss_max = c->rs.rss_end;
    }
    /* no engine finalizes while another still looks for its signals */
    child_send(c, C_STOPPED, NULL);
    child_expect(c, &cmd, P_FINALIZE, REPORT_TIMEOUT_S);

    st = hixl_finalize(c->e);
    c->rs.finalize_status = (int32_t)st;
    if (st != HIXL_SUCCESS) {
        CNT(&c->rs, failures, 1);
        child_err(c, "hixl_finalize: %s: %s", hixl_strerror(st),
                  hixl_last_error());
    }
    c->e = NULL;
    child_send(c, C_REPORT, c->nerr ? c->first_err : NULL);
    munmap(c->local, c->local_len);
    return 0;
}
