/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ways a descriptor's bytes move.  Each has one row in the path table
 * (ops/xfer_path.h), which chooses among them in one place and posts by
 * them; adding a way is adding a value here and a row there.
 */
#ifndef HIXL_CORE_PATH_H_
#define HIXL_CORE_PATH_H_

typedef enum hixl_path {
    HIXL_PATH_RMA,     /* UCX puts and gets (host, or NIC-mapped device
                          memory) */
    HIXL_PATH_AM,      /* the library's checked messages
                          (core/xfer/am_data.h) */
    HIXL_PATH_CMA,     /* same-host kernel copies (core/peer/cma.h) */
    HIXL_PATH_MAP,     /* memcpy into a peer's memory UCX maps here */
    HIXL_PATH_IPC,     /* a device copy into a peer's imported device
                          memory (device/device_path.h) */
    HIXL_PATH_STAGE,   /* through the host staging pool (device/staging.h) */
    HIXL_PATH_COUNT
} hixl_path_t;

#endif
