/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Integration: the library's own messages (hixl.DataPath=am, over tcp and
 * over shared memory), which carry several descriptors' pieces each and
 * cut large descriptors across messages (src/core/xfer/am_data.c).
 *
 * A request of descriptors of every awkward size (a byte, just under, at
 * and over a message, larger than a message, runs of tiny pieces beyond
 * the pieces one message may carry) at shuffled places with gaps between
 * them goes as a WRITE and as a READ; every piece and every gap is
 * checked.  Then messages a misbehaving peer could send, posted on a live
 * connection with the library's own sending code: tables that do not hold
 * together, a piece outside every region, a valid piece beside an invalid
 * one.  The target must refuse each whole (not one byte lands) and keep
 * serving.
 */
#include "config.h"
#include "harness.h"
#include "core/am/am.h"
#include "core/engine.h"
#include "core/peer/channel.h"
#include "core/peer/peer.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define REGION     ((size_t)8 << 20)
#define TGT_SEED   0x7a17u
#define LOCAL_SEED 0x10cau
#define MAX_DESCS  4096

static const size_t it_sizes[] = {
    1, 7, 64, 100, 255, 256, 257, 4095, 4096, 4097, 16384,
    61439, 61440, 61441, 65536, 131072, 1000000, 3
};

typedef struct it_plan {
    hixl_transfer_op_desc_t descs[MAX_DESCS];
    uint64_t                off[MAX_DESCS];   /* each piece's offset */
    uint64_t                len[MAX_DESCS];
    size_t                  n;
} it_plan_t;

/* Pieces laid out in order with gaps of 1..64 bytes, then shuffled: each
 * size above a few times, and 1,000 pieces of 8 bytes (several messages'
 * worth of table). */
static void it_plan_make(it_plan_t *pl, uint64_t local, uint64_t remote)
{
    uint64_t rng = 42, off = 0;
    size_t i, j, k;
    hixl_transfer_op_desc_t tmp;

    pl->n = 0;
    for (k = 0; k < 3; ++k) {
        for (i = 0; i < sizeof(it_sizes) / sizeof(it_sizes[0]); ++i) {
            off += 1 + hx_rand(&rng) % 64;
            pl->off[pl->n] = off;
            pl->len[pl->n++] = it_sizes[i];
            off += it_sizes[i];
        }
    }
    for (i = 0; i < 1000; ++i) {
        off += 1 + hx_rand(&rng) % 8;
        pl->off[pl->n] = off;
        pl->len[pl->n++] = 8;
        off += 8;
    }
    ck_assert_uint_lt(off, REGION);
    for (i = 0; i < pl->n; ++i) {
        pl->descs[i].local_addr  = local + pl->off[i];
        pl->descs[i].remote_addr = remote + pl->off[i];
        pl->descs[i].len         = pl->len[i];
    }
    for (i = pl->n; i > 1; --i) {   /* the order the request names them */
        j = (size_t)(hx_rand(&rng) % i);
        tmp = pl->descs[i - 1]; pl->descs[i - 1] = pl->descs[j];
        pl->descs[j] = tmp;
    }
}

typedef struct it_pair {
    hx_target_t    t;
    hixl_engine_t *e;
    uint8_t       *local;
} it_pair_t;

static void it_setup(it_pair_t *p, int tls)
{
    hx_target_cfg_t cfg;

    memset(p, 0, sizeof(*p));
    hx_use_tls(tls);
    hx_target_cfg_init(&cfg, REGION);
    cfg.init_seed = TGT_SEED;
    hx_target_start(&p->t, &cfg);
    p->e = hx_engine("127.0.0.1", "hixl.DataPath", "am", NULL);
    hx_connect(p->e, p->t.name);
    p->local = hx_alloc_pages(REGION);
    hx_pat_fill(p->local, REGION, LOCAL_SEED, 0);
    hx_register(p->e, p->local, REGION);
}

static void it_teardown(it_pair_t *p)
{
    hx_ok(hixl_finalize(p->e));
    hx_target_stop(&p->t);
    hx_free_pages(p->local, REGION);
}

/* Every piece holds seed `in` and every gap seed `out`, each byte the
 * pattern of its offset, in the target (remote) or here. */
static void it_check(it_pair_t *p, const it_plan_t *pl, int remote,
                     uint64_t in, uint64_t out)
{
    uint64_t at = 0;
    size_t i;

    for (i = 0; i <= pl->n; ++i) {
        uint64_t end = (i < pl->n) ? pl->off[i] : REGION;

        if (remote) {
            hx_target_verify(&p->t, 0, at, end - at, out, at);
            if (i < pl->n) {
                hx_target_verify(&p->t, 0, pl->off[i], pl->len[i], in,
                                 pl->off[i]);
            }
        } else {
            hx_pat_assert(p->local + at, end - at, out, at, "a gap");
            if (i < pl->n) {
                hx_pat_assert(p->local + pl->off[i], pl->len[i], in,
                              pl->off[i], "a piece");
            }
        }
        at = (i < pl->n) ? pl->off[i] + pl->len[i] : REGION;
    }
}

START_TEST(test_write_pieces)
{
    static it_plan_t pl;
    it_pair_t p;

    it_setup(&p, _i);
    it_plan_make(&pl, (uintptr_t)p.local, p.t.addr[0]);
    hx_transfer(p.e, p.t.name, HIXL_WRITE, pl.descs, pl.n, 1);
    it_check(&p, &pl, 1, LOCAL_SEED, TGT_SEED);
    it_teardown(&p);
}
END_TEST

START_TEST(test_read_pieces)
{
    static it_plan_t pl;
    it_pair_t p;

    it_setup(&p, _i);
    it_plan_make(&pl, (uintptr_t)p.local, p.t.addr[0]);
    hx_transfer(p.e, p.t.name, HIXL_READ, pl.descs, pl.n, 0);
    it_check(&p, &pl, 0, TGT_SEED, LOCAL_SEED);
    it_teardown(&p);
}
END_TEST

/* ---- what a misbehaving peer could send ------------------------------------ */

static int it_guard_open(hixl_engine_t *engine, void *arg,
                         const hixl_am_hdr_t *hdr)
{
    return 1;
}

static void it_guard_close(void *arg)
{
}

/* Post a WRITE of this table and data on the live connection to the
 * target, counted in its channel as the library counts its own, so that
 * the next transfer's flush waits for its answer. */
static void it_send_raw(it_pair_t *p, const hixl_am_piece_t *pieces,
                        uint32_t table_count, uint32_t hdr_count,
                        uint64_t hdr_len, const void *data, size_t data_len)
{
    const hixl_am_guard_t guard = {it_guard_open, it_guard_close, NULL};
    struct iovec part = {(void*)data, data_len};
    hixl_am_payload_t pl = {pieces, table_count * sizeof(*pieces), &part,
                            (data_len > 0) ? 1 : 0, data_len};
    hixl_engine_t *e = p->e;
    hixl_peer_t *peer;
    hixl_am_hdr_t h;
    unsigned slot;

    pthread_mutex_lock(&e->lock);
    hx_ok(hixl_peer_lookup(e, p->t.name, 1, &peer));
    hixl_am_hdr_init(&h);
    slot    = hixl_chan_post(peer->chan, HIXL_ANSWER_ON_CONTROL);
    h.flags = (uint16_t)slot;
    h.conn  = peer->chan->conn;
    h.chan  = peer->chan->id;
    h.count = hdr_count;
    h.len   = hdr_len;
    h.addr  = pieces[0].remote;
    ck_assert_int_eq(hixl_am_sendv(e, peer->chan->ep, HIXL_AM_WRITE, &h, &pl,
                                   UCP_AM_SEND_FLAG_REPLY |
                                   UCP_AM_SEND_FLAG_EAGER, &guard, NULL,
                                   NULL), UCS_OK);
    pthread_mutex_unlock(&e->lock);
}

/* Post a READ of this table as a rendezvous, which the library never
 * sends: UCX hands a rendezvous's handler its own descriptor instead of
 * the payload, so the target must refuse it unread (no READ_DATA comes
 * back, and no slot is counted for one).  Waits until the send ended. */
static void it_done(void *arg, const hixl_am_hdr_t *hdr)
{
    (void)hdr;
    __atomic_store_n((int*)arg, 1, __ATOMIC_RELEASE);
}

static void it_send_rndv_read(it_pair_t *p, const hixl_am_piece_t *pieces,
                              uint32_t count, uint64_t len)
{
    hixl_am_payload_t pl = {pieces, count * sizeof(*pieces), NULL, 0, 0};
    hixl_engine_t *e = p->e;
    hixl_peer_t *peer;
    hixl_am_hdr_t h;
    int done = 0, i;

    pthread_mutex_lock(&e->lock);
    hx_ok(hixl_peer_lookup(e, p->t.name, 1, &peer));
    hixl_am_hdr_init(&h);
    h.conn  = peer->chan->conn;
    h.chan  = peer->chan->id;
    h.count = count;
    h.len   = len;
    h.addr  = pieces[0].remote;
    (void)hixl_am_sendv(e, peer->chan->ep, HIXL_AM_READ, &h, &pl,
                        UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_RNDV, NULL,
                        it_done, &done);
    pthread_mutex_unlock(&e->lock);
    for (i = 0; (i < 10000) && !__atomic_load_n(&done, __ATOMIC_ACQUIRE);
         ++i) {
        usleep(1000);   /* the progress thread ends the send */
    }
    ck_assert_msg(done, "the rendezvous READ's send never ended");
}

START_TEST(test_bad_tables)
{
    static uint8_t data[8192];
    hixl_transfer_op_desc_t d;
    hixl_am_piece_t pc[3];
    uint64_t base;
    it_pair_t p;

    it_setup(&p, _i);
    base = p.t.addr[0];
    memset(data, 0x5a, sizeof(data));
    /* a piece that runs past the region's end */
    pc[0] = (hixl_am_piece_t){base + REGION - 100, 0, 200};
    it_send_raw(&p, pc, 1, 1, 200, data, 200);
    /* a valid piece beside one before the region: neither lands */
    pc[0] = (hixl_am_piece_t){base + 4096, 0, 512};
    pc[1] = (hixl_am_piece_t){base - 4096, 0, 512};
    it_send_raw(&p, pc, 2, 2, 1024, data, 1024);
    /* lengths that do not add up to the data */
    pc[0] = (hixl_am_piece_t){base + 8192, 0, 100};
    pc[1] = (hixl_am_piece_t){base + 16384, 0, 100};
    it_send_raw(&p, pc, 2, 2, 300, data, 300);
    /* a count the payload does not hold */
    it_send_raw(&p, pc, 2, 3, 200, data, 200);
    /* an empty piece */
    pc[0] = (hixl_am_piece_t){base + 8192, 0, 0};
    pc[1] = (hixl_am_piece_t){base + 16384, 0, 100};
    it_send_raw(&p, pc, 2, 2, 100, data, 100);
    /* lengths whose sum wraps to the data's */
    pc[0] = (hixl_am_piece_t){base + 8192, 0, 200};
    pc[1] = (hixl_am_piece_t){base + 16384, 0, UINT64_MAX - 99};
    it_send_raw(&p, pc, 2, 2, 100, data, 100);
    /* no pieces at all */
    it_send_raw(&p, pc, 0, 0, 100, data, 100);
    /* a READ as a rendezvous: 256 pieces of the target's region into
     * this side's buffer, refused unread (the buffer stays as it was) */
    {
        static hixl_am_piece_t rp[HIXL_AM_MAX_PIECES];
        uint32_t k;

        memset(p.local, 0xee, 65536);
        for (k = 0; k < HIXL_AM_MAX_PIECES; ++k) {
            rp[k] = (hixl_am_piece_t){base + 256 * k, (uintptr_t)p.local +
                                      256 * k, 200};
        }
        it_send_rndv_read(&p, rp, HIXL_AM_MAX_PIECES,
                          200 * HIXL_AM_MAX_PIECES);
        for (k = 0; k < 65536; ++k) {
            ck_assert_uint_eq(((uint8_t*)p.local)[k], 0xee);
        }
    }

    /* a transfer after them: its flush waits for their answers, and the
     * target still serves */
    hx_pat_fill(p.local, 65536, LOCAL_SEED ^ 9, 0);
    d.local_addr  = (uintptr_t)p.local;
    d.remote_addr = base + REGION - 65536;
    d.len         = 65536;
    hx_transfer(p.e, p.t.name, HIXL_WRITE, &d, 1, 0);
    hx_target_verify(&p.t, 0, REGION - 65536, 65536, LOCAL_SEED ^ 9, 0);
    /* not one byte of the refused ones */
    hx_target_verify(&p.t, 0, 0, REGION - 65536, TGT_SEED, 0);
    it_teardown(&p);
}
END_TEST

static Suite *it_am_pieces_suite(void)
{
    Suite *s = suite_create("it_am_pieces");
    TCase *tc;

    tc = hx_tcase("write_pieces");
    tcase_add_loop_test(tc, test_write_pieces, 0, 2);   /* tcp, sm */
    suite_add_tcase(s, tc);
    tc = hx_tcase("read_pieces");
    tcase_add_loop_test(tc, test_read_pieces, 0, 2);
    suite_add_tcase(s, tc);
    tc = hx_tcase("bad_tables");
    tcase_add_loop_test(tc, test_bad_tables, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return hx_main(it_am_pieces_suite());
}
