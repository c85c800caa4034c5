/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: an engine's receiver (the process's main thread): notifies and
 * layer signals, every byte of each write checked the moment its signal
 * is seen, the slot given back.
 */
#include "child.h"

/* ---- receiver (the process's main thread) --------------------------------- */

static uint8_t *recv_slot(child_t *c, unsigned s, unsigned j)
{
    return c->region + ((size_t)s * c->k + j) * SLOT_SIZE;
}

static int peer_index(child_t *c, const char *name)
{
    unsigned p;

    for (p = 0; p < c->n; ++p) {
        if (!strcmp(c->names[p], name)) {
            return (int)p;
        }
    }
    return -1;
}

void recv_notifies(receiver_t *r)
{
    child_t *c = r->c;
    hixl_notify_t *n = NULL;
    size_t count = 0, i;
    xfer_msg_t m;
    hixl_status_t st;
    int from;

    st = hixl_get_notifies(c->e, &n, &count);
    if (st != HIXL_SUCCESS) {
        CNT(&c->rs, failures, 1);
        child_err(c, "hixl_get_notifies: %s: %s", hixl_strerror(st),
                  hixl_last_error());
        return;
    }
    for (i = 0; i < count; ++i) {
        from = peer_index(c, n[i].remote);
        if (n[i].msg_len == sizeof(m)) {
            memcpy(&m, n[i].msg, sizeof(m));
        } else {
            memset(&m, 0, sizeof(m));
        }
        if ((from < 0) || (m.magic != NOTIFY_MAGIC) ||
            (m.from != (uint32_t)from) || (m.slot >= c->k) ||
            (m.seq % c->k != m.slot)) {
            CNT(&c->rs, failures, 1);
            child_err(c, "unexpected notify \"%s\" (%zu bytes) from %s",
                      n[i].name, n[i].msg_len, n[i].remote);
            continue;
        }
        if (!strcmp(n[i].name, NOTIFY_DATA)) {
            CNT(&c->rs, xfer_notifies, 1);
            if ((m.seq != r->expect[from][m.slot]) ||
                (r->arrived[from][m.slot] != 0)) {
                CNT(&c->rs, failures, 1);
                child_err(c, "notify of seq %" PRIu64 " in slot %u from e%d, "
                          "while seq %" PRIu64 " is due there", m.seq,
                          m.slot, from, r->expect[from][m.slot]);
                continue;
            }
            r->arrived[from][m.slot] = m.seq + 1;
        } else if (!strcmp(n[i].name, NOTIFY_DONE)) {
            CNT(&c->rs, done_recv, 1);
            atomic_store_explicit(&c->done[from][m.slot], m.seq + 1,
                                  memory_order_release);
        } else {
            CNT(&c->rs, failures, 1);
            child_err(c, "notify of unknown name \"%s\" from %s", n[i].name,
                      n[i].remote);
        }
    }
    hixl_release_notifies(n, count);
}

/* Check slot j of sender s, which holds write q; restore its guard and
 * return it. */
static void recv_verify(receiver_t *r, unsigned s, unsigned j, uint64_t q,
                        const plan_t *pl)
{
    child_t *c = r->c;
    uint8_t *slot = recv_slot(c, s, j);
    hixl_notify_desc_t nd;
    hixl_status_t st;
    xfer_msg_t m;
    size_t bad, gbad, after, first, gfirst = 0, f;

    /* the write's range, then the guard before and after it */
    bad  = pat_check(slot + pl->off, pl->size, pl->seed, 0, &first);
    gbad = guard_check(slot, pl->off, &f);
    if (gbad) {
        gfirst = f;
    }
    after = guard_check(slot + pl->off + pl->size,
                        SLOT_SIZE - pl->off - pl->size, &f);
    if (after && !gbad) {
        gfirst = pl->off + pl->size + f;
    }
    gbad += after;
    if (bad || gbad) {
        CNT(&c->rs, corruptions, 1);
        CNT(&c->rs, bad_bytes, bad + gbad);
        if (bad) {
            child_err(c, "write seq %" PRIu64 " from e%u (slot %u, [%zu, "
                      "+%zu), %s): %zu bytes wrong when its signal was seen, "
                      "the first at %zu: 0x%02x, expected 0x%02x", q, s, j,
                      pl->off, pl->size, (pl->signal == SIG_FLUSH) ?
                      "layer flush" : "notify", bad, first,
                      slot[pl->off + first], pat_byte(pl->seed, first));
        }
        if (gbad) {
            child_err(c, "write seq %" PRIu64 " from e%u (slot %u, [%zu, "
                      "+%zu)): %zu bytes outside its range changed, the "
                      "first at slot offset %zu: 0x%02x", q, s, j, pl->off,
                      pl->size, gbad, gfirst, slot[gfirst]);
        }
    }
    CNT(&c->rs, verified, 1);
    CNT(&c->rs, verified_bytes, pl->size);
    memset(slot + pl->off, GUARD, pl->size);
    if (gbad) {
        memset(slot, GUARD, SLOT_SIZE);
    }

    memset(&m, 0, sizeof(m));
    m.magic    = NOTIFY_MAGIC;
    m.from     = c->me;
    m.slot     = j;
    m.seq      = q;
    nd.name    = NOTIFY_DONE;
    nd.msg     = &m;
    nd.msg_len = sizeof(m);
    st = hixl_send_notify(c->e, c->names[s], &nd, NOTIFY_TIMEOUT_MS);
    if (st != HIXL_SUCCESS) {
        CNT(&c->rs, failures, 1);
        child_err(c, "done notify for seq %" PRIu64 " to e%u: %s: %s", q, s,
                  hixl_strerror(st), hixl_last_error());
        r->broken[s] = 1;
        return;
    }
    CNT(&c->rs, done_sent, 1);
}

/* Look at every slot; returns how many were checked.  *wait_s / *wait_q
 * name a flushed write still awaited (for an idle hixl_wait_layer). */
unsigned recv_scan(receiver_t *r, int *wait_s, uint64_t *wait_q)
{
    child_t *c = r->c;
    unsigned s, j, n = 0;
    hixl_status_t st;
    uint64_t q;
    plan_t pl;
    int ready;

    *wait_s = -1;
    for (s = 0; s < c->n; ++s) {
        if ((s == c->me) || r->broken[s]) {
            continue;
        }
        for (j = 0; j < c->k; ++j) {
            q = r->expect[s][j];
            plan_write(s, c->me, q, &pl);
            ready = 0;
            if (pl.signal == SIG_NOTIFY) {
                ready = (r->arrived[s][j] == q + 1);
            } else {
                st = hixl_test_layer(c->e, c->names[s], s, q, 0, &ready);
                if (st == HIXL_SUCCESS) {
                    if (ready) {
                        CNT(&c->rs, layer_signals, 1);
                    } else if (*wait_s < 0) {
                        *wait_s = (int)s;
                        *wait_q = q;
                    }
                } else if ((st == HIXL_FAILED) &&
                           (strstr(hixl_last_error(), "superseded") != NULL)) {
                    /* a later flush of this sender came: it was posted
                     * after this write, so it covers it */
                    ready = 1;
                    CNT(&c->rs, layer_signals, 1);
                    CNT(&c->rs, superseded, 1);
                } else {
                    CNT(&c->rs, failures, 1);
                    child_err(c, "hixl_test_layer(e%u, stream %u, gen %"
                              PRIu64 "): %s: %s", s, s, q, hixl_strerror(st),
                              hixl_last_error());
                    r->broken[s] = 1;
                    break;
                }
            }
            if (!ready) {
                continue;
            }
            recv_verify(r, s, j, q, &pl);
            r->arrived[s][j] = 0;
            r->expect[s][j]  = q + c->k;
            ++n;
        }
    }
    return n;
}
