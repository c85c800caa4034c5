# SPDX-License-Identifier: BSD-3-Clause
"""hixl: CANN hixl's Python module name, over libhixl-ucx.

Programs written for CANN hixl's binding do ``import hixl`` and use its
names; this package gives exactly those names (``__all__`` below is CANN's
list), taken from :mod:`hixl_ucx`, which holds the implementation and
stays importable with everything it adds (alloc_mem, layer flush,
memory descriptions (export_mem / import_mem), buffers as objects,
raise_on_error).  ``hixl.hixl`` exists too, as CANN's
native submodule does.

CANN's conventions hold: calls return statuses (tuples where CANN returns
them), finalize() returns None, get_transfer_status(0) is (FAILED,
TransferStatus.FAILED), the *_async / get_all_* calls answer FAILED with an
empty result after finalize, get_capability(CLIENT_SERVER_COMM) is (0, 1).
What is wider here: MemDesc / TransferOpDesc also take buffer objects and
defaults, and the enums are IntEnums (CANN's TransferStatus and
AsyncConnectStatus do not compare equal to ints; these do).

The ctypes library is found as hixl_ucx finds it (HIXL_UCX_LIB, the
installation, pkg-config, the system's search).
"""

from hixl_ucx import (ALREADY_CONNECTED, AUTO_CONNECT, CLIENT_SERVER_COMM,
                      CONNECT_FAILED, CONNECT_PENDING, CONNECTED, CONNECTING,
                      DISCONNECT_PENDING, DISCONNECTING, FAILED,
                      FEATURE_NOT_SUPPORTED, FEATURE_SUPPORTED, MEM_DEVICE,
                      MEM_HOST, NOT_CONNECT, NOT_CONNECTED, NOTIFY_FAILED,
                      OPTION_AUTO_CONNECT, OPTION_BUFFER_POOL,
                      OPTION_ENABLE_USE_FABRIC_MEM,
                      OPTION_GLOBAL_RESOURCE_CONFIG, OPTION_LOCAL_COMM_RES,
                      OPTION_RDMA_SERVICE_LEVEL, OPTION_RDMA_TRAFFIC_CLASS,
                      PARAM_INVALID, READ, RESOURCE_EXHAUSTED, SUCCESS,
                      TIMEOUT, UNSUPPORTED, WRITE, AsyncConnectStatus,
                      FeatureType, GetTransferStatusArgs, Hixl, MemDesc,
                      MemType, NotifyDesc, TransferArgs, TransferOp,
                      TransferOpDesc, TransferResult, TransferStatus,
                      get_capability)

__all__ = [
    "SUCCESS", "PARAM_INVALID", "TIMEOUT", "NOT_CONNECTED",
    "ALREADY_CONNECTED", "NOTIFY_FAILED", "UNSUPPORTED", "FAILED",
    "RESOURCE_EXHAUSTED",
    "OPTION_ENABLE_USE_FABRIC_MEM", "OPTION_RDMA_TRAFFIC_CLASS",
    "OPTION_RDMA_SERVICE_LEVEL", "OPTION_BUFFER_POOL",
    "OPTION_GLOBAL_RESOURCE_CONFIG", "OPTION_AUTO_CONNECT",
    "OPTION_LOCAL_COMM_RES", "FEATURE_SUPPORTED", "FEATURE_NOT_SUPPORTED",
    "MemType", "MEM_DEVICE", "MEM_HOST", "TransferOp", "READ", "WRITE",
    "TransferStatus", "AsyncConnectStatus", "NOT_CONNECT", "CONNECT_PENDING",
    "CONNECTING", "CONNECTED", "CONNECT_FAILED", "DISCONNECT_PENDING",
    "DISCONNECTING", "FeatureType", "AUTO_CONNECT", "CLIENT_SERVER_COMM",
    "MemDesc", "TransferOpDesc", "TransferArgs", "GetTransferStatusArgs",
    "TransferResult", "NotifyDesc", "Hixl", "get_capability",
]
