/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/pd_pipeline: the messages the prefill and the decode side exchange
 * as hixl notifies (name PD_MSG_NAME), so that the two roles need nothing
 * but the decode engine's name to find each other: no shared file, no
 * second socket.  Pure encode/decode, no hixl calls (test/unit_pd_msg
 * feeds the decoder truncated, mutated and inconsistent messages).
 *
 * Every message is a 16-byte header and a body, little-endian:
 *
 *   u32 magic "PDPL"  u16 version  u16 type  u32 body_len  u32 zero
 *
 *   HELLO   prefill -> decode   u32 modes, u32 prefill compute (us)
 *   LAYOUT  decode -> prefill   the KV cache: shape (6 x u32), u64 block
 *                               bytes, u32 blocks per layer, u16 staged-mode
 *                               TCP port, u16 zero, then u64 address of
 *                               every layer, then u32 block-table slot of
 *                               every block of a layer
 *   START   prefill -> decode   u32 mode, u32 zero, u64 run
 *   GO      decode -> prefill   the same body: decode is ready, clock starts
 *   RESULT  decode -> prefill   u32 mode, u32 failed, u64 run, u64 bytes
 *                               wrong, u64 ns to the last layer, u64 ns to
 *                               layer 0, u32 text length, text
 *   QUIT    prefill -> decode   empty
 *   REFUSE  either way          u32 text length, text (why not)
 *
 * The decoder checks the header, the exact body length of every type, and
 * the LAYOUT's consistency (shape bounds, sizes without overflow, layers
 * that do not overlap, a block table that is a permutation) before any of
 * it is used.  A peer speaking another version gets REFUSE.
 */
#ifndef HIXL_BENCH_PD_MSG_H_
#define HIXL_BENCH_PD_MSG_H_

#include "pd_kv.h"

#include <stddef.h>
#include <stdint.h>

#define PD_MSG_NAME     "pd_pipeline"
#define PD_MSG_MAGIC    0x4c504450u       /* "PDPL" read little-endian */
/* 2: blocks carry bench/common's pattern; a peer filling them the older
 * way is refused at HELLO instead of failing every byte check */
#define PD_MSG_VERSION  2u
#define PD_MSG_HDR      16u
#define PD_MSG_TEXT_MAX 256u
/* Bounds of a layout: the decode engine's hixl.MaxLayers default, a block
 * table that keeps a LAYOUT well inside hixl.MaxNotifySize (64 KiB), and
 * the CLI's bound on every shape number. */
#define PD_MAX_LAYERS   256u
#define PD_MAX_BLOCKS   8192u
#define PD_MAX_DIM      (1u << 24)
#define PD_MSG_MAX      (PD_MSG_HDR + 48u + PD_MAX_LAYERS * 8u + \
                         PD_MAX_BLOCKS * 4u)

typedef enum pd_msg_type {
    PD_MSG_HELLO = 1,
    PD_MSG_LAYOUT,
    PD_MSG_START,
    PD_MSG_GO,
    PD_MSG_RESULT,
    PD_MSG_QUIT,
    PD_MSG_REFUSE
} pd_msg_type_t;

/* What decode tells prefill about its KV cache. */
typedef struct pd_layout {
    pd_shape_t shape;
    uint64_t   block_bytes;
    uint32_t   blocks;        /* per layer */
    uint16_t   staged_port;
    uint64_t  *layer_addr;    /* shape.layers entries */
    uint32_t  *slot;          /* blocks entries: decode slot of block b */
} pd_layout_t;

typedef struct pd_msg {
    pd_msg_type_t type;
    union {
        struct {
            uint32_t modes;
            uint32_t prefill_compute_us;
        } hello;
        pd_layout_t layout;        /* arrays owned: pd_msg_clear() */
        struct {
            uint32_t mode;
            uint64_t run;
        } start;                   /* START and GO */
        struct {
            uint32_t mode;
            uint32_t failed;
            uint64_t run;
            uint64_t bad_bytes;
            uint64_t total_ns;
            uint64_t layer0_ns;
            char     text[PD_MSG_TEXT_MAX + 1];
        } result;
        struct {
            char text[PD_MSG_TEXT_MAX + 1];
        } refuse;
    } u;
} pd_msg_t;

const char *pd_msg_type_name(unsigned type);

/* Encoders: write into buf (PD_MSG_MAX bytes is always enough) and return
 * the message length, or 0 when it does not fit or the input is invalid. */
size_t pd_msg_hello(uint8_t *buf, size_t cap, uint32_t modes,
                    uint32_t prefill_compute_us);
size_t pd_msg_layout(uint8_t *buf, size_t cap, const pd_layout_t *layout);
size_t pd_msg_start(uint8_t *buf, size_t cap, pd_msg_type_t type,
                    uint32_t mode, uint64_t run);
size_t pd_msg_result(uint8_t *buf, size_t cap, uint32_t mode, uint32_t failed,
                     uint64_t run, uint64_t bad_bytes, uint64_t total_ns,
                     uint64_t layer0_ns, const char *text);
size_t pd_msg_quit(uint8_t *buf, size_t cap);
size_t pd_msg_refuse(uint8_t *buf, size_t cap, const char *text);

/* Decode len bytes into *msg.  0 on success; -1 with a reason in err.
 * A decoded LAYOUT owns its arrays until pd_msg_clear(). */
int pd_msg_decode(const void *buf, size_t len, pd_msg_t *msg, char *err,
                  size_t errlen);
void pd_msg_clear(pd_msg_t *msg);

/* Check a layout as the decoder does (also used before sending one). */
int pd_layout_check(const pd_layout_t *layout, char *err, size_t errlen);

#endif
