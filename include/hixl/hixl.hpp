/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhixl-ucx: CANN hixl's C++ class hixl::Hixl, header-only, over the C
 * API of <hixl/hixl.h>.
 *
 * Code written against CANN hixl (which includes hixl/hixl.h and
 * hixl/hixl_types.h) compiles unchanged, C++14 or later as with CANN's
 * header: this header is what hixl/hixl.h gives C++ (unless
 * HIXL_NO_CXX_API is defined), hixl/hixl_types.h holds the types, and the
 * methods have hixl's names, argument types and defaults (timeouts 1000
 * ms) and return hixl's status numbers.  Link with -lhixl-ucx (pkg-config
 * hixl-ucx) instead of CANN's libraries.
 *
 *   hixl::Hixl                  libhixl-ucx
 *   Initialize(name, options)   hixl_initialize (every CANN option key is
 *                               accepted; hixl_info says what each does)
 *   Finalize()                  hixl_finalize
 *   RegisterMem / DeregisterMem hixl_register_mem / hixl_deregister_mem
 *   Connect / Disconnect        hixl_connect / hixl_disconnect
 *   ConnectAsync /              hixl_connect_async / hixl_disconnect_async
 *   DisconnectAsync
 *   GetAsyncConnectStatus       hixl_get_async_connect_status /
 *                               hixl_get_all_async_connect_status
 *   TransferSync                hixl_transfer_sync
 *   TransferAsync               hixl_transfer_async (TransferArgs.user_data
 *                               kept with the request)
 *   GetTransferStatus(req, st)  hixl_get_transfer_status
 *   GetTransferStatus(args, r)  hixl_get_all_transfer_status
 *   SendNotify / GetNotifies    hixl_send_notify / hixl_get_notifies
 *   GetCapability (static)      hixl_get_capability: AUTO_CONNECT and
 *                               CLIENT_SERVER_COMM supported
 *
 * As CANN hixl's C++ class does:
 *   - Initialize on an initialized object builds a fresh engine, which
 *     replaces (and finalizes) the old one when it comes up; when it
 *     fails, the old one stays;
 *   - DeregisterMem of a handle already deregistered, or never returned by
 *     RegisterMem, is SUCCESS and does nothing (nullptr: PARAM_INVALID);
 *   - GetTransferStatus(req, status) with a request it does not know
 *     (already reported, or foreign) sets status to FAILED, so a polling
 *     loop that ignores the return value ends; with req == nullptr it
 *     returns FAILED and leaves status alone;
 *   - a call before Initialize (or after Finalize) returns FAILED.
 *
 * Semantics are otherwise libhixl-ucx's (see hixl/hixl.h): memory may be
 * registered after Connect; a COMPLETED transfer is visible at the
 * destination; a request reported COMPLETED, FAILED or TIMEOUT is
 * released.  GetNotifies replaces the vector's contents (CANN's CommEngine
 * appends).  Any method may be called from any thread, except Initialize
 * and Finalize, which must not run concurrently with other calls.  The
 * destructor finalizes an engine still initialized.
 *
 * Extensions (not in CANN hixl), for what this library adds:
 *   AllocMem                    hixl_alloc_mem: memory peers write into
 *   FlushLayer / WaitLayer /    hixl_flush_layer / hixl_wait_layer /
 *   TestLayer                   hixl_test_layer
 *   GetEngineName()             hixl_engine_name (the real port of "ip:0")
 *   GetLastErrorMessage()       hixl_last_error
 *   GetEngine()                 the hixl_engine_t, for any other C call
 */
#ifndef HIXL_HIXL_HPP_
#define HIXL_HIXL_HPP_

#include <hixl/hixl.h>
#include <hixl/hixl_types.h>

#include <cstddef>
/* CANN hixl's examples use std::cerr without including <iostream>: some
 * header of CANN's brings it, so this one does too. */
#include <iostream>
#include <map>
#include <type_traits>
#include <vector>

namespace hixl {

class Hixl {
 public:
  Hixl() = default;

  ~Hixl() {
    Finalize();
  }

  Hixl(const Hixl &) = delete;
  Hixl &operator=(const Hixl &) = delete;

  // A fresh engine each time, as in CANN hixl: on an initialized object
  // the new one replaces the old one if it comes up, else the old one
  // stays.  (So re-initializing under the same listening name fails: the
  // old engine still holds the port.)
  Status Initialize(const AscendString &local_engine,
                    const std::map<AscendString, AscendString> &options) {
    std::vector<hixl_option_t> opts;
    hixl_engine_t *fresh = nullptr;
    Status ret;

    opts.reserve(options.size());
    for (const auto &kv : options) {
      opts.push_back(hixl_option_t{kv.first.GetString(), kv.second.GetString()});
    }
    ret = hixl_initialize(local_engine.GetString(), opts.data(), opts.size(), &fresh);
    if (ret == SUCCESS) {
      Finalize();
      engine_ = fresh;
    }
    return ret;
  }

  void Finalize() {
    if (engine_ != nullptr) {
      (void)hixl_finalize(engine_);
      engine_ = nullptr;
    }
  }

  Status RegisterMem(const MemDesc &mem, MemType type, MemHandle &mem_handle) {
    hixl_mem_desc_t desc{mem.addr, mem.len};
    hixl_mem_handle_t handle = nullptr;
    Status ret = Checked(
        hixl_register_mem(engine_, &desc, static_cast<hixl_mem_type_t>(type), &handle));

    if (ret == SUCCESS) {
      mem_handle = static_cast<MemHandle>(handle);
    }
    return ret;
  }

  // nullptr is PARAM_INVALID; a handle this engine does not hold (already
  // deregistered, or never its own) is SUCCESS, as CANN hixl documents.
  Status DeregisterMem(MemHandle mem_handle) {
    Status ret;

    if (engine_ == nullptr) {
      return FAILED;
    }
    if (mem_handle == nullptr) {
      return PARAM_INVALID;
    }
    ret = hixl_deregister_mem(engine_, static_cast<hixl_mem_handle_t>(mem_handle));
    return (ret == PARAM_INVALID) ? SUCCESS : ret;
  }

  Status Connect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000) {
    return Checked(hixl_connect(engine_, remote_engine.GetString(), timeout_in_millis));
  }

  Status Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000) {
    return Checked(hixl_disconnect(engine_, remote_engine.GetString(), timeout_in_millis));
  }

  Status ConnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis = 1000) {
    return Checked(hixl_connect_async(engine_, remote_engine.GetString(), timeout_in_millis));
  }

  Status DisconnectAsync(const AscendString &remote_engine, int32_t timeout_in_millis = 1000) {
    return Checked(
        hixl_disconnect_async(engine_, remote_engine.GetString(), timeout_in_millis));
  }

  // NOT_CONNECT for a remote without async operations.
  Status GetAsyncConnectStatus(const AscendString &remote_engine, AsyncConnectStatus &status) {
    hixl_async_connect_status_t st = HIXL_ASYNC_NOT_CONNECT;
    Status ret = Checked(
        hixl_get_async_connect_status(engine_, remote_engine.GetString(), &st));

    if (ret == SUCCESS) {
      status = static_cast<AsyncConnectStatus>(st);
    }
    return ret;
  }

  // Every remote with an async status other than NOT_CONNECT; statuses is
  // cleared first.
  Status GetAsyncConnectStatus(std::map<AscendString, AsyncConnectStatus> &statuses) {
    hixl_async_connect_entry_t *entries = nullptr;
    size_t count = 0;
    Status ret = Checked(hixl_get_all_async_connect_status(engine_, &entries, &count));

    if (ret != SUCCESS) {
      return ret;
    }
    statuses.clear();
    for (size_t i = 0; i < count; ++i) {
      statuses[AscendString(entries[i].remote)] =
          static_cast<AsyncConnectStatus>(entries[i].status);
    }
    hixl_release_async_connect_status(entries, count);
    return SUCCESS;
  }

  Status TransferSync(const AscendString &remote_engine, TransferOp operation,
                      const std::vector<TransferOpDesc> &op_descs,
                      int32_t timeout_in_millis = 1000) {
    return Checked(hixl_transfer_sync(engine_, remote_engine.GetString(),
                                      static_cast<hixl_transfer_op_t>(operation),
                                      Descs(op_descs), op_descs.size(), timeout_in_millis));
  }

  Status TransferAsync(const AscendString &remote_engine, TransferOp operation,
                       const std::vector<TransferOpDesc> &op_descs,
                       const TransferArgs &optional_args, TransferReq &req) {
    hixl_transfer_args_t args{};
    hixl_req_t handle = nullptr;
    Status ret;

    args.field_mask = HIXL_TRANSFER_ARG_USER_DATA;
    args.user_data = optional_args.user_data;
    ret = Checked(hixl_transfer_async(engine_, remote_engine.GetString(),
                                      static_cast<hixl_transfer_op_t>(operation),
                                      Descs(op_descs), op_descs.size(), &args, &handle));
    if (ret == SUCCESS) {
      req = static_cast<TransferReq>(handle);
    }
    return ret;
  }

  Status GetTransferStatus(const TransferReq &req, TransferStatus &status) {
    hixl_transfer_status_t st = HIXL_TRANSFER_FAILED;
    Status ret;

    if ((engine_ == nullptr) || (req == nullptr)) {
      return FAILED;
    }
    ret = hixl_get_transfer_status(engine_, static_cast<hixl_req_t>(req), &st);
    status = static_cast<TransferStatus>(st);   // FAILED on any error
    return ret;
  }

  // The engine's async requests, oldest first, each with its user_data;
  // results is cleared first.  Those reported COMPLETED, FAILED or TIMEOUT
  // are released.
  Status GetTransferStatus(const GetTransferStatusArgs &args,
                           std::vector<TransferResult> &results) {
    hixl_transfer_result_t *got = nullptr;
    size_t count = 0;
    Status ret = Checked(hixl_get_all_transfer_status(
        engine_, args.max_query_count, args.skip_waiting ? 1 : 0, &got, &count));

    if (ret != SUCCESS) {
      return ret;
    }
    results.clear();
    results.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      TransferResult r;
      r.req = static_cast<TransferReq>(got[i].req);
      r.user_data = got[i].user_data;
      r.status = static_cast<TransferStatus>(got[i].status);
      results.push_back(r);
    }
    hixl_release_transfer_results(got, count);
    return SUCCESS;
  }

  Status SendNotify(const AscendString &remote_engine, const NotifyDesc &notify,
                    int32_t timeout_in_millis = 1000) {
    hixl_notify_desc_t nd;

    nd.name = notify.name.GetString();
    nd.msg = notify.notify_msg.GetString();
    nd.msg_len = notify.notify_msg.GetLength();
    return Checked(hixl_send_notify(engine_, remote_engine.GetString(), &nd, timeout_in_millis));
  }

  // Takes every notify received so far; notifies is replaced by them,
  // oldest first.
  Status GetNotifies(std::vector<NotifyDesc> &notifies) {
    hixl_notify_t *got = nullptr;
    size_t count = 0;
    Status ret = Checked(hixl_get_notifies(engine_, &got, &count));

    if (ret != SUCCESS) {
      return ret;
    }
    notifies.clear();
    notifies.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      NotifyDesc nd;
      nd.name = AscendString(got[i].name);
      nd.notify_msg = AscendString(static_cast<const char *>(got[i].msg), got[i].msg_len);
      notifies.push_back(nd);
    }
    hixl_release_notifies(got, count);
    return SUCCESS;
  }

  // Which features this library has; callable before Initialize.
  static Status GetCapability(FeatureType feature_type, int32_t &value) {
    int32_t v = FEATURE_NOT_SUPPORTED;
    Status ret = hixl_get_capability(static_cast<int32_t>(feature_type), &v);

    if (ret == SUCCESS) {
      value = v;
    }
    return ret;
  }

  // ---- libhixl-ucx extensions ----------------------------------------------

  // Allocate and register len bytes where UCX reaches them best (on one
  // host: shared memory).  DeregisterMem(mem_handle) frees them.
  Status AllocMem(size_t len, MemType type, void *&addr, MemHandle &mem_handle) {
    hixl_mem_handle_t handle = nullptr;
    void *p = nullptr;
    Status ret =
        Checked(hixl_alloc_mem(engine_, len, static_cast<hixl_mem_type_t>(type), &p, &handle));

    if (ret == SUCCESS) {
      addr = p;
      mem_handle = static_cast<MemHandle>(handle);
    }
    return ret;
  }

  Status FlushLayer(const AscendString &remote_engine, uint32_t stream, uint64_t generation,
                    uint32_t layer) {
    return Checked(
        hixl_flush_layer(engine_, remote_engine.GetString(), stream, generation, layer));
  }

  Status WaitLayer(const AscendString &source_engine, uint32_t stream, uint64_t generation,
                   uint32_t layer, int32_t timeout_in_millis = 1000) {
    return Checked(hixl_wait_layer(engine_, source_engine.GetString(), stream, generation,
                                   layer, timeout_in_millis));
  }

  Status TestLayer(const AscendString &source_engine, uint32_t stream, uint64_t generation,
                   uint32_t layer, bool &ready) {
    int r = 0;
    Status ret = Checked(
        hixl_test_layer(engine_, source_engine.GetString(), stream, generation, layer, &r));

    if (ret == SUCCESS) {
      ready = (r != 0);
    }
    return ret;
  }

  // The name peers connect to ("ip:port" with the real port); "" before
  // Initialize.
  AscendString GetEngineName() const {
    return AscendString(engine_ ? hixl_engine_name(engine_) : "");
  }

  // What the last failed call of this thread said.
  static const char *GetLastErrorMessage() {
    return hixl_last_error();
  }

  hixl_engine_t *GetEngine() const {
    return engine_;
  }

 private:
  // Before Initialize (or after Finalize) CANN hixl answers FAILED; the C
  // call, made with a NULL engine, has put "engine is NULL" in
  // hixl_last_error().
  Status Checked(hixl_status_t status) const {
    return ((engine_ == nullptr) && (status == HIXL_PARAM_INVALID)) ? FAILED
                                                                     : static_cast<Status>(status);
  }

  // TransferOpDesc and hixl_transfer_op_desc_t are the same three fields in
  // the same order: the vector is handed to the C API as is, no copy.
  static const hixl_transfer_op_desc_t *Descs(const std::vector<TransferOpDesc> &v) {
    static_assert(std::is_standard_layout<TransferOpDesc>::value &&
                      sizeof(TransferOpDesc) == sizeof(hixl_transfer_op_desc_t) &&
                      offsetof(TransferOpDesc, local_addr) ==
                          offsetof(hixl_transfer_op_desc_t, local_addr) &&
                      offsetof(TransferOpDesc, remote_addr) ==
                          offsetof(hixl_transfer_op_desc_t, remote_addr) &&
                      offsetof(TransferOpDesc, len) == offsetof(hixl_transfer_op_desc_t, len),
                  "TransferOpDesc and hixl_transfer_op_desc_t differ in layout");
    return reinterpret_cast<const hixl_transfer_op_desc_t *>(v.data());
  }

  hixl_engine_t *engine_ = nullptr;
};

}  // namespace hixl

#endif  // HIXL_HIXL_HPP_
