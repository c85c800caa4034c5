/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhixl-ucx: CANN hixl's C interface (HixlCS*, "client/server"), under
 * the name CANN installs it, so a program written for it compiles
 * unchanged.  It works over the same engines as <hixl/hixl.h>:
 *
 *   a server   is a listening engine ("server_ip:server_port") whose
 *              registered regions carry a tag (mem_tag); it answers the
 *              clients' questions for its region list by itself;
 *   a client   is an engine of its own (its name: its address toward the
 *              server and a port the kernel picks, so that names stay
 *              unique) that connects to the server, fetches the list of
 *              (CommMem, tag) and moves data with one-sided puts and gets
 *              (hixl_transfer_* WRITE / READ; remote_buf is the server's
 *              address, local_buf the client's).
 *
 * Statuses.  CANN declares HIXL_SUCCESS, HIXL_PARAM_INVALID, HIXL_TIMEOUT
 * and HIXL_FAILED here as `static const uint32_t`.  This header takes them
 * from <hixl/hixl.h> instead, where they are the enumerators of
 * hixl_status_t with the same numbers (the status codes of both surfaces
 * are one set): a program that uses them as CANN's (comparisons, switch,
 * assignment to HixlStatus) compiles unchanged, and a translation unit may
 * include this header and <hixl/hixl.h> (C or C++, either order) without a
 * redefinition.  HIXL_RESOURCE_EXHAUSTED, which CANN's documentation
 * promises for a full request table, is there too.  What differs: the
 * type of the names (an enumerator, not a uint32_t object, so &HIXL_SUCCESS
 * does not compile).
 *
 * This header is also C (CANN's is C++ only): in C the structures are
 * typedef'ed and have no default member initializers; zero them.
 *
 * Semantics are CANN's (docs/zh/api/cpp/HIXL_CS-interface.md there):
 * every NULL argument is HIXL_PARAM_INVALID; Create sets *handle to NULL
 * first; server_port 0..65535 (0: no listening), a client's 1..65535;
 * list_num 0 is PARAM_INVALID; GetRemoteMem's arrays belong to the client
 * and are freed by the next call (and by Destroy); a complete handle is
 * released once QueryCompleteStatus reports COMPLETED or FAILED; at most
 * 4096 unqueried async batches (HIXL_RESOURCE_EXHAUSTED beyond); after a
 * batch ended FAILED or TIMEOUT the client refuses further batches with
 * HIXL_FAILED (create a new one).  global_resource_config (NULL or "" for
 * none) is checked as CANN checks it: comm_resource_config.listen_port and
 * .max_active_channels for a server, .qos and .max_active_channels for a
 * client; they configure Ascend NICs and have no effect over UCX, nor have
 * the endpoint descriptions, tc and sl.
 *
 * Where it differs from CANN: the server's engine listens from
 * HixlCSServerCreate on (HixlCSServerListen checks and records the
 * backlog); memory a server registers after a client connected is seen by
 * that client at its next HixlCSClientGetRemoteMem; HixlCSClientConnect
 * prefetches the list within its timeout.
 */
#ifndef HIXL_CS_HIXL_CS_H_
#define HIXL_CS_HIXL_CS_H_

#include <stdint.h>

#include <hcomm/hcomm_res_defs.h>

/* The status codes; the C API only, so that this header stays light (a
 * later #include <hixl/hixl.h> still gives C++ the hixl::Hixl class). */
#ifndef HIXL_NO_CXX_API
#define HIXL_NO_CXX_API
#include <hixl/hixl.h>
#undef HIXL_NO_CXX_API
#else
#include <hixl/hixl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void *HixlServerHandle;
typedef void *HixlClientHandle;
typedef void *CompleteHandle;
typedef uint32_t HixlStatus;
typedef void *MemHandle;

#ifdef __cplusplus
#define HIXL_CS_INIT(...) = __VA_ARGS__
#else
#define HIXL_CS_INIT(...)
#endif

struct HixlServerConfig {
    const char *global_resource_config HIXL_CS_INIT(nullptr);  /* JSON */
    uint8_t reserved[120] HIXL_CS_INIT({});
};

struct HixlClientConfig {
    const char *global_resource_config HIXL_CS_INIT(nullptr);  /* JSON */
    uint8_t reserved[120] HIXL_CS_INIT({});
};

struct HixlClientDesc {
    const EndpointDesc *local_endpoint;
    const EndpointDesc *remote_endpoint;
    const char *server_ip;
    uint32_t server_port;
    uint8_t tc;   /* RDMA traffic class */
    uint8_t sl;   /* RDMA service level */
    uint8_t reserved[98] HIXL_CS_INIT({});
};

struct HixlServerDesc {
    const EndpointDesc *endpoint_list;
    const char *server_ip;
    uint32_t server_port;
    uint32_t endpoint_list_num;
    uint8_t reserved[104] HIXL_CS_INIT({});
};

/* One piece of a batch: Put moves local_buf -> remote_buf, Get
 * remote_buf -> local_buf, len bytes. */
struct HixlOneSideOpDesc {
    void *remote_buf;
    void *local_buf;
    uint64_t len;
};

enum HixlCompleteStatus {
    HIXL_COMPLETE_STATUS_WAITING,
    HIXL_COMPLETE_STATUS_COMPLETED,
    HIXL_COMPLETE_STATUS_TIMEOUT,
    HIXL_COMPLETE_STATUS_FAILED
};

#undef HIXL_CS_INIT

#ifndef __cplusplus
typedef struct HixlServerConfig HixlServerConfig;
typedef struct HixlClientConfig HixlClientConfig;
typedef struct HixlClientDesc HixlClientDesc;
typedef struct HixlServerDesc HixlServerDesc;
typedef struct HixlOneSideOpDesc HixlOneSideOpDesc;
typedef enum HixlCompleteStatus HixlCompleteStatus;
#endif

#ifndef HIXL_API
#define HIXL_API
#endif

/* ---- server ---------------------------------------------------------- */

HIXL_API HixlStatus HixlCSServerCreate(const HixlServerDesc *server_desc,
                                       const HixlServerConfig *config,
                                       HixlServerHandle *server_handle);

/* Register a region clients may reach; mem_tag (may be NULL) names it in
 * their HixlCSClientGetRemoteMem. */
HIXL_API HixlStatus HixlCSServerRegMem(HixlServerHandle server_handle,
                                       const char *mem_tag, const CommMem *mem,
                                       MemHandle *mem_handle);

HIXL_API HixlStatus HixlCSServerListen(HixlServerHandle server_handle,
                                       uint32_t backlog);

HIXL_API HixlStatus HixlCSServerUnregMem(HixlServerHandle server_handle,
                                         MemHandle mem_handle);

HIXL_API HixlStatus HixlCSServerDestroy(HixlServerHandle server_handle);

/* ---- client ---------------------------------------------------------- */

HIXL_API HixlStatus HixlCSClientCreate(const HixlClientDesc *client_desc,
                                       const HixlClientConfig *config,
                                       HixlClientHandle *client_handle);

HIXL_API HixlStatus HixlCSClientConnect(HixlClientHandle client_handle,
                                        uint32_t timeout_ms);

/* The server's regions and their tags (tags "" for regions registered
 * without one); the arrays stay valid until the next call or Destroy. */
HIXL_API HixlStatus HixlCSClientGetRemoteMem(HixlClientHandle client_handle,
                                             CommMem **remote_mem_list,
                                             char ***mem_tag_list,
                                             uint32_t *list_num,
                                             uint32_t timeout_ms);

HIXL_API HixlStatus HixlCSClientRegMem(HixlClientHandle client_handle,
                                       const char *mem_tag, const CommMem *mem,
                                       MemHandle *mem_handle);

HIXL_API HixlStatus HixlCSClientUnregMem(HixlClientHandle client_handle,
                                         MemHandle mem_handle);

HIXL_API HixlStatus HixlCSClientBatchPutAsync(HixlClientHandle client_handle,
                                              uint32_t list_num,
                                              const HixlOneSideOpDesc *desc_list,
                                              CompleteHandle *complete_handle);

HIXL_API HixlStatus HixlCSClientBatchGetAsync(HixlClientHandle client_handle,
                                              uint32_t list_num,
                                              const HixlOneSideOpDesc *desc_list,
                                              CompleteHandle *complete_handle);

HIXL_API HixlStatus HixlCSClientBatchPutSync(HixlClientHandle client_handle,
                                             uint32_t list_num,
                                             const HixlOneSideOpDesc *desc_list,
                                             uint32_t timeout_ms);

HIXL_API HixlStatus HixlCSClientBatchGetSync(HixlClientHandle client_handle,
                                             uint32_t list_num,
                                             const HixlOneSideOpDesc *desc_list,
                                             uint32_t timeout_ms);

HIXL_API HixlStatus HixlCSClientQueryCompleteStatus(
        HixlClientHandle client_handle, CompleteHandle complete_handle,
        HixlCompleteStatus *complete_status);

HIXL_API HixlStatus HixlCSClientDestroy(HixlClientHandle client_handle);

#ifdef __cplusplus
}
#endif

#endif /* HIXL_CS_HIXL_CS_H_ */
