/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhixl-ucx: the part of CANN hcomm's resource definitions that CANN
 * hixl's C interface (<cs/hixl_cs.h>) uses: endpoint descriptions and
 * memory descriptions, with hcomm's names, values and layouts.  C and C++.
 *
 * Over UCX the endpoints mean nothing (engine names and UCX_TLS say where
 * data goes): HixlCS* accepts them and does not look inside.  CommMem is
 * the memory a server offers and a client fetches.
 *
 * The include guard is hcomm's own, on purpose: in a translation unit that
 * also sees CANN's full header, whichever comes first serves both.
 */
#ifndef HCOMM_RES_DEFS_H
#define HCOMM_RES_DEFS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t HcommResult;

/* Length of an EID address. */
static const uint32_t COMM_ADDR_EID_LEN = 16U;

typedef enum {
    COMM_PROTOCOL_RESERVED  = -1,
    COMM_PROTOCOL_HCCS      = 0,
    COMM_PROTOCOL_ROCE      = 1,
    COMM_PROTOCOL_PCIE      = 2,
    COMM_PROTOCOL_SIO       = 3,
    COMM_PROTOCOL_UBC_CTP   = 4,
    COMM_PROTOCOL_UBC_TP    = 5,
    COMM_PROTOCOL_UB_MEM    = 6,
    COMM_PROTOCOL_UBOE      = 7,
    COMM_PROTOCOL_HCCS_ONLY = 8,
    COMM_PROTOCOL_UBG       = 9
} CommProtocol;

typedef enum {
    COMM_ADDR_TYPE_RESERVED = -1,
    COMM_ADDR_TYPE_IP_V4    = 0,
    COMM_ADDR_TYPE_IP_V6    = 1,
    COMM_ADDR_TYPE_ID       = 2,
    COMM_ADDR_TYPE_EID      = 3
} CommAddrType;

/* An address of one of the types above, in 36 bytes. */
typedef struct {
    CommAddrType type;
    union {
        uint8_t         raws[36];
        struct in_addr  addr;
        struct in6_addr addr6;
        uint32_t        id;
        uint8_t         eid[16];   /* COMM_ADDR_EID_LEN */
    };
} CommAddr;

typedef enum {
    ENDPOINT_LOC_TYPE_RESERVED = -1,
    ENDPOINT_LOC_TYPE_DEVICE   = 0,
    ENDPOINT_LOC_TYPE_HOST     = 1
} EndpointLocType;

/* Where an endpoint is, in 60 bytes. */
typedef struct {
    EndpointLocType locType;
    union {
        uint8_t raws[60];
        struct {
            uint32_t devPhyId;
            uint32_t superDevId;
            uint32_t serverIdx;
            uint32_t superPodIdx;
        } device;
        struct {
            uint32_t id;
        } host;
    };
} EndpointLoc;

/* A communication endpoint: protocol, address, location. */
typedef struct {
    CommProtocol protocol;
    CommAddr     commAddr;
    EndpointLoc  loc;
    union {
        uint8_t raws[52];
    };
} EndpointDesc;

typedef enum {
    COMM_MEM_TYPE_INVALID = -1,
    COMM_MEM_TYPE_DEVICE  = 0,
    COMM_MEM_TYPE_HOST    = 1
} CommMemType;

/* A memory region: where it lives, its address and size. */
typedef struct {
    CommMemType type;
    void       *addr;
    uint64_t    size;
} CommMem;

/* Mark num endpoint descriptions unset (every byte 0xff, the enums
 * RESERVED); 2 (hcomm's "bad pointer") for NULL, else 0. */
static inline HcommResult EndpointDescInit(EndpointDesc *endpoint,
                                           uint32_t num)
{
    uint32_t i;

    if (endpoint == NULL) {
        return (HcommResult)2;
    }
    for (i = 0; i < num; ++i) {
        memset(&endpoint[i], 0xff, sizeof(endpoint[i]));
        endpoint[i].protocol       = COMM_PROTOCOL_RESERVED;
        endpoint[i].commAddr.type  = COMM_ADDR_TYPE_RESERVED;
        endpoint[i].loc.locType    = ENDPOINT_LOC_TYPE_RESERVED;
    }
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif /* HCOMM_RES_DEFS_H */
