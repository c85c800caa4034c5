/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The notify messages of bench/pd_pipeline (bench/pd_msg.c): every type
 * round-trips; every truncation, every single-byte corruption of the
 * header and a bounded run of random mutations are refused or decoded
 * into something that passes the same checks, never read out of bounds
 * (the sanitized CI build runs this); inconsistent layouts are refused
 * with a reason.  Plain C, no Check: exit 0 passes, 1 fails.
 */
#include "bench/pd_msg.c"   /* the codec itself, one translation unit */

#include <stdio.h>

static int failures;

#define EXPECT(cond, ...)                                            \
    do {                                                             \
        if (!(cond)) {                                               \
            fprintf(stderr, "FAIL line %d: ", __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                            \
            fprintf(stderr, "\n");                                   \
            failures++;                                              \
        }                                                            \
    } while (0)

static const pd_shape_t test_shape = {4, 8, 128, 256, 2, 16};

static void make_layout(pd_layout_t *l, uint64_t *addr, uint32_t *slot)
{
    uint64_t lb;
    unsigned i;

    memset(l, 0, sizeof(*l));
    l->shape       = test_shape;
    l->block_bytes = pd_block_bytes(&test_shape);
    l->blocks      = (uint32_t)pd_blocks_per_layer(&test_shape);
    l->staged_port = 4242;
    lb             = pd_layer_bytes(&test_shape);
    for (i = 0; i < test_shape.layers; ++i) {
        addr[i] = 0x7f0000000000ull + (test_shape.layers - 1 - i) * lb;
    }
    for (i = 0; i < l->blocks; ++i) {
        slot[i] = (uint32_t)pd_slot(i, l->blocks);
    }
    l->layer_addr = addr;
    l->slot       = slot;
}

static void test_roundtrip(void)
{
    uint8_t buf[PD_MSG_MAX];
    uint64_t addr[4];
    uint32_t slot[64];
    pd_layout_t l;
    pd_msg_t m;
    char err[256];
    size_t n;
    unsigned i;

    n = pd_msg_hello(buf, sizeof(buf), 5, 1500);
    EXPECT(pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0, "HELLO: %s", err);
    EXPECT((m.type == PD_MSG_HELLO) && (m.u.hello.modes == 5) &&
           (m.u.hello.prefill_compute_us == 1500), "HELLO fields");

    make_layout(&l, addr, slot);
    n = pd_msg_layout(buf, sizeof(buf), &l);
    EXPECT(n > 0, "LAYOUT encodes");
    EXPECT(pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0, "LAYOUT: %s", err);
    EXPECT(m.type == PD_MSG_LAYOUT, "LAYOUT type");
    EXPECT(!memcmp(&m.u.layout.shape, &test_shape, sizeof(test_shape)),
           "LAYOUT shape");
    EXPECT(m.u.layout.staged_port == 4242, "LAYOUT port");
    for (i = 0; i < test_shape.layers; ++i) {
        EXPECT(m.u.layout.layer_addr[i] == addr[i], "layer %u address", i);
    }
    for (i = 0; i < l.blocks; ++i) {
        EXPECT(m.u.layout.slot[i] == slot[i], "slot %u", i);
    }
    pd_msg_clear(&m);

    n = pd_msg_start(buf, sizeof(buf), PD_MSG_GO, 2, 77);
    EXPECT(pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0, "GO: %s", err);
    EXPECT((m.type == PD_MSG_GO) && (m.u.start.mode == 2) &&
           (m.u.start.run == 77), "GO fields");
    EXPECT(pd_msg_start(buf, sizeof(buf), PD_MSG_QUIT, 0, 0) == 0,
           "pd_msg_start refuses other types");

    n = pd_msg_result(buf, sizeof(buf), 1, 0, 9, 3, 12345, 678, "fine");
    EXPECT(pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0, "RESULT: %s",
           err);
    EXPECT((m.u.result.bad_bytes == 3) && (m.u.result.total_ns == 12345) &&
           (m.u.result.layer0_ns == 678) && !strcmp(m.u.result.text, "fine"),
           "RESULT fields");

    n = pd_msg_quit(buf, sizeof(buf));
    EXPECT((pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0) &&
           (m.type == PD_MSG_QUIT), "QUIT");
    n = pd_msg_refuse(buf, sizeof(buf), "busy");
    EXPECT((pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0) &&
           !strcmp(m.u.refuse.text, "busy"), "REFUSE");
    EXPECT(pd_msg_hello(buf, 10, 1, 1) == 0, "an encoder that does not fit "
           "returns 0");
}

/* Every prefix of a LAYOUT is refused, and so is one byte too many. */
static void test_truncation(void)
{
    uint8_t buf[PD_MSG_MAX + 1];
    uint64_t addr[4];
    uint32_t slot[64];
    pd_layout_t l;
    pd_msg_t m;
    char err[256];
    size_t n, len;

    make_layout(&l, addr, slot);
    n = pd_msg_layout(buf, sizeof(buf), &l);
    for (len = 0; len < n; ++len) {
        EXPECT(pd_msg_decode(buf, len, &m, err, sizeof(err)) != 0,
               "LAYOUT cut to %zu of %zu bytes was accepted", len, n);
    }
    buf[n] = 0;
    EXPECT(pd_msg_decode(buf, n + 1, &m, err, sizeof(err)) != 0,
           "LAYOUT with a trailing byte was accepted");
    EXPECT(pd_msg_decode(NULL, 0, &m, err, sizeof(err)) != 0, "NULL");
}

static void test_header(void)
{
    uint8_t buf[64];
    pd_msg_t m;
    char err[256], want[32];
    size_t n = pd_msg_hello(buf, sizeof(buf), 1, 0), i;

    for (i = 0; i < PD_MSG_HDR; ++i) {
        buf[i] ^= 0x40;
        EXPECT(pd_msg_decode(buf, n, &m, err, sizeof(err)) != 0,
               "header byte %zu flipped was accepted", i);
        buf[i] ^= 0x40;
    }
    buf[4] = PD_MSG_VERSION + 1;   /* a later version */
    snprintf(want, sizeof(want), "version %u", PD_MSG_VERSION + 1);
    EXPECT((pd_msg_decode(buf, n, &m, err, sizeof(err)) != 0) &&
           strstr(err, want), "another version is named: %s", err);
}

/* Layouts that are well-formed bytes but describe nonsense. */
static void test_bad_layouts(void)
{
    uint8_t buf[PD_MSG_MAX];
    uint64_t addr[4];
    uint32_t slot[64];
    pd_layout_t l;
    char err[256];

    make_layout(&l, addr, slot);
    EXPECT(pd_layout_check(&l, err, sizeof(err)) == 0, "good layout: %s",
           err);
    addr[1] = addr[0] + 4096;
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0 &&
           strstr(err, "overlap"), "overlapping layers: %s", err);
    make_layout(&l, addr, slot);
    slot[3] = slot[4];
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0 &&
           strstr(err, "block table"), "slot taken twice: %s", err);
    make_layout(&l, addr, slot);
    slot[0] = l.blocks;
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0, "slot out of range");
    make_layout(&l, addr, slot);
    addr[2] = UINT64_MAX - 10;
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0, "address overflow");
    make_layout(&l, addr, slot);
    addr[0] = 0;
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0, "NULL layer");
    make_layout(&l, addr, slot);
    l.block_bytes++;
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0, "block bytes");
    make_layout(&l, addr, slot);
    l.shape.kv_heads = PD_MAX_DIM;
    l.shape.head_dim = PD_MAX_DIM;
    l.block_bytes    = (uint64_t)PD_MAX_DIM * PD_MAX_DIM * 16 * 2;
    EXPECT(pd_layout_check(&l, err, sizeof(err)) != 0, "huge cache");
    make_layout(&l, addr, slot);
    l.shape.layers = PD_MAX_LAYERS + 1;
    EXPECT(pd_msg_layout(buf, sizeof(buf), &l) == 0, "the encoder refuses "
           "what the decoder would");
}

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Random byte mutations of valid messages: decoded or refused, never a
 * crash; what decodes again passes the layout check. */
static void test_mutations(void)
{
    uint8_t buf[PD_MSG_MAX];
    uint64_t addr[4];
    uint32_t slot[64];
    size_t lens[3], n;
    pd_layout_t l;
    pd_msg_t m;
    char err[256];
    unsigned round, k, which;
    uint8_t *msgs[3];

    make_layout(&l, addr, slot);
    msgs[0] = malloc(PD_MSG_MAX);
    msgs[1] = malloc(PD_MSG_MAX);
    msgs[2] = malloc(PD_MSG_MAX);
    lens[0] = pd_msg_layout(msgs[0], PD_MSG_MAX, &l);
    lens[1] = pd_msg_result(msgs[1], PD_MSG_MAX, 0, 1, 2, 3, 4, 5, "text");
    lens[2] = pd_msg_refuse(msgs[2], PD_MSG_MAX, "why");
    for (round = 0; round < 20000; ++round) {
        which = round % 3;
        n     = lens[which];
        memcpy(buf, msgs[which], n);
        for (k = 0; k < 1 + rng() % 4; ++k) {
            buf[rng() % n] = (uint8_t)rng();
        }
        if ((rng() % 8) == 0) {
            n = rng() % (n + 1);
        }
        if (pd_msg_decode(buf, n, &m, err, sizeof(err)) == 0) {
            if (m.type == PD_MSG_LAYOUT) {
                EXPECT(pd_layout_check(&m.u.layout, err, sizeof(err)) == 0,
                       "a decoded layout fails its own check");
            }
            pd_msg_clear(&m);
        }
    }
    free(msgs[0]);
    free(msgs[1]);
    free(msgs[2]);
}

int main(void)
{
    test_roundtrip();
    test_truncation();
    test_header();
    test_bad_layouts();
    test_mutations();
    if (failures) {
        fprintf(stderr, "unit_pd_msg: %d failure(s)\n", failures);
        return 1;
    }
    printf("unit_pd_msg: pd_pipeline's notify messages: round trips, "
           "truncations, header corruption, bad layouts, 20000 mutations\n");
    return 0;
}
