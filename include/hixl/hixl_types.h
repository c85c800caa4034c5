/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libhixl-ucx: the types of CANN hixl's C++ API (hixl/hixl_types.h there),
 * header-only, for code written against hixl::Hixl.
 *
 * Same names, values, layouts and defaults as CANN hixl: Status and its
 * constants, MemType, TransferOp, TransferStatus, AsyncConnectStatus,
 * MemDesc, TransferOpDesc, TransferArgs, GetTransferStatusArgs,
 * TransferResult, NotifyDesc, MemHandle, TransferReq, FeatureType and the
 * FEATURE_* values, the OPTION_* keys, the ASCEND_FUNC_VISIBILITY macro,
 * and AscendString (ge::AscendString, aliased as hixl::AscendString).
 *
 * C++14 or later, as CANN hixl's own header: MemDesc, TransferArgs and the
 * others have default member initializers, so in C++11 they are not
 * aggregates and RegisterMem({ptr, len}, ...) does not compile (with CANN's
 * header neither); code that builds them field by field compiles as C++11.
 *
 * AscendString.  When CANN's graph/ascend_string.h was included before this
 * header, its ge::AscendString is used as is.  Otherwise this header defines
 * ge::AscendString with the same constructors (default, const char *,
 * const char * and a length), GetString, GetLength, Find, Hash, the
 * comparisons with AscendString and with const char *, and std::hash.
 * Include CANN's header first if a translation unit needs both.
 *
 * The class itself is in <hixl/hixl.hpp>.
 */
#ifndef HIXL_HIXL_TYPES_HPP_
#define HIXL_HIXL_TYPES_HPP_

#ifndef __cplusplus
#error "hixl/hixl_types.h is the C++ API; C code includes hixl/hixl.h"
#endif

/* the C API only: hixl.h would include hixl.hpp, which needs these types */
#ifndef HIXL_NO_CXX_API
#define HIXL_NO_CXX_API
#include <hixl/hixl.h>
#undef HIXL_NO_CXX_API
#else
#include <hixl/hixl.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#ifndef INC_EXTERNAL_GRAPH_ASCEND_STRING_H_
namespace ge {

using char_t = char;

/* A shared, immutable string, as CANN's: copies share one buffer; a default
 * (or NULL-constructed) string is "null", which reads as "" but compares
 * below every other string, "" included. */
class AscendString {
 public:
  AscendString() = default;
  ~AscendString() = default;

  AscendString(const char_t *const name) {
    if (name != nullptr) {
      name_ = std::make_shared<const std::string>(name);
    }
  }

  AscendString(const char_t *const name, size_t length) {
    if (name != nullptr) {
      name_ = std::make_shared<const std::string>(name, length);
    }
  }

  const char_t *GetString() const {
    return name_ ? name_->c_str() : "";
  }

  size_t GetLength() const {
    return name_ ? name_->length() : 0U;
  }

  size_t Find(const AscendString &ascend_string) const {
    if (!name_ || !ascend_string.name_) {
      return std::string::npos;
    }
    return name_->find(*ascend_string.name_);
  }

  size_t Hash() const {
    return std::hash<std::string>()(name_ ? *name_ : std::string());
  }

  bool operator<(const AscendString &d) const {
    if (!name_) {
      return static_cast<bool>(d.name_);
    }
    return d.name_ && (*name_ < *d.name_);
  }

  bool operator>(const AscendString &d) const {
    return d < *this;
  }

  bool operator<=(const AscendString &d) const {
    return !(d < *this);
  }

  bool operator>=(const AscendString &d) const {
    return !(*this < d);
  }

  bool operator==(const AscendString &d) const {
    if (!name_ || !d.name_) {
      return !name_ && !d.name_;
    }
    return *name_ == *d.name_;
  }

  bool operator!=(const AscendString &d) const {
    return !(*this == d);
  }

  bool operator==(const char_t *const d) const {
    if (!name_ || (d == nullptr)) {
      return !name_ && (d == nullptr);
    }
    return std::strcmp(name_->c_str(), d) == 0;
  }

  bool operator!=(const char_t *const d) const {
    return !(*this == d);
  }

 private:
  std::shared_ptr<const std::string> name_;
};

}  // namespace ge

namespace std {
template <>
struct hash<ge::AscendString> {
  size_t operator()(const ge::AscendString &name) const {
    return name.Hash();
  }
};
}  // namespace std
#endif  // INC_EXTERNAL_GRAPH_ASCEND_STRING_H_

/* CANN's export macro, which code written for it may use too. */
#ifndef ASCEND_FUNC_VISIBILITY
#ifdef FUNC_VISIBILITY
#define ASCEND_FUNC_VISIBILITY __attribute__((visibility("default")))
#else
#define ASCEND_FUNC_VISIBILITY
#endif
#endif

namespace hixl {

using Status = uint32_t;
using AscendString = ge::AscendString;
using TransferReq = void *;
using MemHandle = void *;

// Features Hixl::GetCapability reports.  Values as in CANN hixl; new ones
// are appended there.
enum FeatureType : int32_t {
  AUTO_CONNECT = 0,        // option AutoConnect: supported
  CLIENT_SERVER_COMM = 1,  // an engine listens, others connect: supported
};

constexpr int32_t FEATURE_SUPPORTED = 1;
constexpr int32_t FEATURE_NOT_SUPPORTED = 0;

// Option keys hixl defines, all accepted (hixl_info says what each does
// here).  BufferPool, RdmaTrafficClass, RdmaServiceLevel, AutoConnect and
// GlobalResourceConfig's connect_pool.* are honoured; EnableUseFabricMem,
// LocalCommRes and the rest of GlobalResourceConfig configure Ascend
// hardware that UCX replaces: validated as CANN validates them, and
// otherwise without effect.
constexpr const char OPTION_ENABLE_USE_FABRIC_MEM[] = "EnableUseFabricMem";
constexpr const char OPTION_RDMA_TRAFFIC_CLASS[] = "RdmaTrafficClass";
constexpr const char OPTION_RDMA_SERVICE_LEVEL[] = "RdmaServiceLevel";
constexpr const char OPTION_BUFFER_POOL[] = "BufferPool";
constexpr const char OPTION_GLOBAL_RESOURCE_CONFIG[] = "GlobalResourceConfig";
constexpr const char OPTION_AUTO_CONNECT[] = "AutoConnect";
constexpr const char OPTION_LOCAL_COMM_RES[] = "LocalCommRes";

// Status codes (hixl's numbers, those of hixl_status_t).
constexpr Status SUCCESS = 0U;
constexpr Status PARAM_INVALID = 103900U;
constexpr Status TIMEOUT = 103901U;
constexpr Status NOT_CONNECTED = 103902U;
constexpr Status ALREADY_CONNECTED = 103903U;
constexpr Status NOTIFY_FAILED = 103904U;
constexpr Status UNSUPPORTED = 103905U;
constexpr Status FAILED = 503900U;
constexpr Status RESOURCE_EXHAUSTED = 203900U;

static_assert(SUCCESS == HIXL_SUCCESS && PARAM_INVALID == HIXL_PARAM_INVALID &&
                  TIMEOUT == HIXL_TIMEOUT && NOT_CONNECTED == HIXL_NOT_CONNECTED &&
                  ALREADY_CONNECTED == HIXL_ALREADY_CONNECTED &&
                  NOTIFY_FAILED == HIXL_NOTIFY_FAILED && UNSUPPORTED == HIXL_UNSUPPORTED &&
                  FAILED == HIXL_FAILED && RESOURCE_EXHAUSTED == HIXL_RESOURCE_EXHAUSTED,
              "hixl::Status constants and hixl_status_t disagree");

enum MemType { MEM_DEVICE, MEM_HOST };

enum TransferOp { READ, WRITE };

static_assert(static_cast<int>(MEM_DEVICE) == HIXL_MEM_DEVICE &&
                  static_cast<int>(MEM_HOST) == HIXL_MEM_HOST &&
                  static_cast<int>(READ) == HIXL_READ && static_cast<int>(WRITE) == HIXL_WRITE,
              "enum orders differ from hixl.h");

struct MemDesc {
  uintptr_t addr;
  size_t len;
  uint8_t reserved[128] = {};
};

struct TransferOpDesc {
  uintptr_t local_addr;
  uintptr_t remote_addr;
  size_t len;
};

// Scoped, so TIMEOUT and FAILED here do not clash with the Status constants;
// GCC's -Wshadow still reports them, hence the pragma.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
enum class TransferStatus { WAITING, COMPLETED, TIMEOUT, FAILED };
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static_assert(static_cast<int>(TransferStatus::WAITING) == HIXL_TRANSFER_WAITING &&
                  static_cast<int>(TransferStatus::COMPLETED) == HIXL_TRANSFER_COMPLETED &&
                  static_cast<int>(TransferStatus::TIMEOUT) == HIXL_TRANSFER_TIMEOUT &&
                  static_cast<int>(TransferStatus::FAILED) == HIXL_TRANSFER_FAILED,
              "TransferStatus order differs from hixl.h");

// State of a connection made with ConnectAsync / DisconnectAsync.
enum class AsyncConnectStatus {
  NOT_CONNECT,
  CONNECT_PENDING,
  CONNECTING,
  CONNECTED,
  CONNECT_FAILED,
  DISCONNECT_PENDING,
  DISCONNECTING,
};

static_assert(static_cast<int>(AsyncConnectStatus::NOT_CONNECT) == HIXL_ASYNC_NOT_CONNECT &&
                  static_cast<int>(AsyncConnectStatus::CONNECT_PENDING) ==
                      HIXL_ASYNC_CONNECT_PENDING &&
                  static_cast<int>(AsyncConnectStatus::CONNECTING) == HIXL_ASYNC_CONNECTING &&
                  static_cast<int>(AsyncConnectStatus::CONNECTED) == HIXL_ASYNC_CONNECTED &&
                  static_cast<int>(AsyncConnectStatus::CONNECT_FAILED) ==
                      HIXL_ASYNC_CONNECT_FAILED &&
                  static_cast<int>(AsyncConnectStatus::DISCONNECT_PENDING) ==
                      HIXL_ASYNC_DISCONNECT_PENDING &&
                  static_cast<int>(AsyncConnectStatus::DISCONNECTING) ==
                      HIXL_ASYNC_DISCONNECTING,
              "AsyncConnectStatus order differs from hixl.h");

// Optional arguments of TransferAsync.  user_data comes back with the
// request's status from GetTransferStatus(GetTransferStatusArgs, ...).
struct TransferArgs {
  const void *user_data = nullptr;
  uint8_t reserved[120] = {};
};

// Arguments of GetTransferStatus over all requests: at most
// max_query_count results; skip_waiting leaves out requests still WAITING.
struct GetTransferStatusArgs {
  uint32_t max_query_count = UINT32_MAX;
  bool skip_waiting = false;
  uint8_t reserved[123] = {};
};

// One request's status, with the user_data its TransferArgs gave.
struct TransferResult {
  TransferReq req = nullptr;
  const void *user_data = nullptr;
  TransferStatus status = TransferStatus::WAITING;
  uint8_t reserved[108] = {};
};

// A notify.  notify_msg may hold any bytes when built with
// AscendString(ptr, length); GetNotifies builds it that way.
struct NotifyDesc {
  AscendString name;
  AscendString notify_msg;
};

}  // namespace hixl

#endif  // HIXL_HIXL_TYPES_HPP_
