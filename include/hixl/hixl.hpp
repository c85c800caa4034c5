/*
 * libhixl-ucx: CANN hixl's C++ class hixl::Hixl, header-only, over the C
 * API of <hixl/hixl.h>.
 *
 * Code written against CANN hixl (which includes hixl/hixl.h and
 * hixl/hixl_types.h) compiles unchanged: this header is what hixl/hixl.h
 * gives C++ (unless HIXL_NO_CXX_API is defined), hixl/hixl_types.h holds
 * the types, and the methods have hixl's names, argument types and
 * defaults (timeouts 1000 ms) and return hixl's status numbers.  Link with
 * -lhixl-ucx (pkg-config hixl-ucx) instead of CANN's libraries.
 *
 *   hixl::Hixl                  libhixl-ucx
 *   Initialize(name, options)   hixl_initialize (options passed through)
 *   Finalize()                  hixl_finalize
 *   RegisterMem / DeregisterMem hixl_register_mem / hixl_deregister_mem
 *   Connect / Disconnect        hixl_connect / hixl_disconnect
 *   TransferSync                hixl_transfer_sync
 *   TransferAsync               hixl_transfer_async (TransferArgs unused)
 *   GetTransferStatus(req, st)  hixl_get_transfer_status
 *   SendNotify / GetNotifies    hixl_send_notify / hixl_get_notifies
 *   GetCapability (static)      AUTO_CONNECT supported (option AutoConnect),
 *                               CLIENT_SERVER_COMM not
 *
 * Not provided (the C API has nothing to map them to): ConnectAsync,
 * DisconnectAsync, GetAsyncConnectStatus, and GetTransferStatus(args,
 * results) over all requests.
 *
 * Semantics are libhixl-ucx's (see hixl/hixl.h): memory may be registered
 * after Connect; a COMPLETED transfer is visible at the destination; a
 * request reported COMPLETED, FAILED or TIMEOUT is released.  Ascend-only
 * option keys (EnableUseFabricMem, GlobalResourceConfig, LocalCommRes) are
 * passed to hixl_initialize like any other and refused there as unknown.
 *
 * Extensions (not in CANN hixl), for what this library adds:
 *   AllocMem                    hixl_alloc_mem: memory peers write into
 *   FlushLayer / WaitLayer /    hixl_flush_layer / hixl_wait_layer /
 *   TestLayer                   hixl_test_layer
 *   GetEngineName()             hixl_engine_name (the real port of "ip:0")
 *   GetLastErrorMessage()       hixl_last_error
 *   GetEngine()                 the hixl_engine_t, for any other C call
 *
 * As in CANN hixl: a repeated Initialize is ignored (SUCCESS); a call
 * before Initialize returns FAILED; any method may be called from any
 * thread, except Initialize and Finalize, which must not run concurrently
 * with other calls.  The destructor finalizes an engine still initialized.
 */
#ifndef HIXL_HIXL_HPP_
#define HIXL_HIXL_HPP_

#include <hixl/hixl.h>
#include <hixl/hixl_types.h>

#include <cstddef>
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

  Status Initialize(const AscendString &local_engine,
                    const std::map<AscendString, AscendString> &options) {
    std::vector<hixl_option_t> opts;

    if (engine_ != nullptr) {
      return SUCCESS;  // as CANN hixl: a repeated Initialize is ignored
    }
    opts.reserve(options.size());
    for (const auto &kv : options) {
      opts.push_back(hixl_option_t{kv.first.GetString(), kv.second.GetString()});
    }
    return hixl_initialize(local_engine.GetString(), opts.data(), opts.size(), &engine_);
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

  Status DeregisterMem(MemHandle mem_handle) {
    return Checked(hixl_deregister_mem(engine_, static_cast<hixl_mem_handle_t>(mem_handle)));
  }

  Status Connect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000) {
    return Checked(hixl_connect(engine_, remote_engine.GetString(), timeout_in_millis));
  }

  Status Disconnect(const AscendString &remote_engine, int32_t timeout_in_millis = 1000) {
    return Checked(hixl_disconnect(engine_, remote_engine.GetString(), timeout_in_millis));
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
    hixl_req_t handle = nullptr;
    Status ret;

    (void)optional_args;
    ret = Checked(hixl_transfer_async(engine_, remote_engine.GetString(),
                                      static_cast<hixl_transfer_op_t>(operation),
                                      Descs(op_descs), op_descs.size(), nullptr, &handle));
    if (ret == SUCCESS) {
      req = static_cast<TransferReq>(handle);
    }
    return ret;
  }

  Status GetTransferStatus(const TransferReq &req, TransferStatus &status) {
    hixl_transfer_status_t st = HIXL_TRANSFER_FAILED;
    Status ret = Checked(hixl_get_transfer_status(engine_, static_cast<hixl_req_t>(req), &st));

    if (ret == SUCCESS) {
      status = static_cast<TransferStatus>(st);
    }
    return ret;
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
    if (static_cast<int32_t>(feature_type) < 0) {
      return PARAM_INVALID;
    }
    value = (feature_type == AUTO_CONNECT) ? FEATURE_SUPPORTED : FEATURE_NOT_SUPPORTED;
    return SUCCESS;
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
