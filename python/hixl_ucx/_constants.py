# SPDX-License-Identifier: BSD-3-Clause
"""hixl's constants, with CANN hixl's names and numbers.

Statuses are plain ints (hixl's Python binding returns them so); the
enums are IntEnums in the C header's order.  test/py/py_layout.py compares
every number here with <hixl/hixl.h>.
"""

import enum

SUCCESS = 0
PARAM_INVALID = 103900
TIMEOUT = 103901
NOT_CONNECTED = 103902
ALREADY_CONNECTED = 103903
NOTIFY_FAILED = 103904
UNSUPPORTED = 103905
RESOURCE_EXHAUSTED = 203900
FAILED = 503900

#: status number -> the C name (for messages; hixl_strerror needs the library)
STATUS_NAMES = {
    SUCCESS: "HIXL_SUCCESS",
    PARAM_INVALID: "HIXL_PARAM_INVALID",
    TIMEOUT: "HIXL_TIMEOUT",
    NOT_CONNECTED: "HIXL_NOT_CONNECTED",
    ALREADY_CONNECTED: "HIXL_ALREADY_CONNECTED",
    NOTIFY_FAILED: "HIXL_NOTIFY_FAILED",
    UNSUPPORTED: "HIXL_UNSUPPORTED",
    RESOURCE_EXHAUSTED: "HIXL_RESOURCE_EXHAUSTED",
    FAILED: "HIXL_FAILED",
}

OPTION_ENABLE_USE_FABRIC_MEM = "EnableUseFabricMem"
OPTION_RDMA_TRAFFIC_CLASS = "RdmaTrafficClass"
OPTION_RDMA_SERVICE_LEVEL = "RdmaServiceLevel"
OPTION_BUFFER_POOL = "BufferPool"
OPTION_GLOBAL_RESOURCE_CONFIG = "GlobalResourceConfig"
OPTION_AUTO_CONNECT = "AutoConnect"
OPTION_LOCAL_COMM_RES = "LocalCommRes"

#: hixl's default timeout of connect, disconnect, transfer_sync, send_notify
DEFAULT_TIMEOUT_MS = 1000

#: GetTransferStatusArgs' default max_query_count (UINT32_MAX: no limit)
MAX_QUERY_COUNT = 4294967295

#: longest notify name and engine name in bytes (the C header's bounds)
NOTIFY_NAME_MAX = 1024
ENGINE_NAME_MAX = 127


class MemType(enum.IntEnum):
    """Where registered memory lives (hixl's order)."""

    MEM_DEVICE = 0
    MEM_HOST = 1


MEM_DEVICE = MemType.MEM_DEVICE
MEM_HOST = MemType.MEM_HOST


class TransferOp(enum.IntEnum):
    """READ moves remote -> local, WRITE local -> remote (hixl's order)."""

    READ = 0
    WRITE = 1


READ = TransferOp.READ
WRITE = TransferOp.WRITE


class TransferStatus(enum.IntEnum):
    """State of an asynchronous transfer (hixl's order)."""

    WAITING = 0
    COMPLETED = 1
    TIMEOUT = 2
    FAILED = 3


class WaitMode(enum.IntEnum):
    """What wait_transfers waits for (hixl_wait_mode_t)."""

    ALL = 0
    ANY = 1


WAIT_ALL = WaitMode.ALL
WAIT_ANY = WaitMode.ANY


class AsyncConnectStatus(enum.IntEnum):
    """State of a connection made with connect_async / disconnect_async
    (hixl's order)."""

    NOT_CONNECT = 0
    CONNECT_PENDING = 1
    CONNECTING = 2
    CONNECTED = 3
    CONNECT_FAILED = 4
    DISCONNECT_PENDING = 5
    DISCONNECTING = 6


NOT_CONNECT = AsyncConnectStatus.NOT_CONNECT
CONNECT_PENDING = AsyncConnectStatus.CONNECT_PENDING
CONNECTING = AsyncConnectStatus.CONNECTING
CONNECTED = AsyncConnectStatus.CONNECTED
CONNECT_FAILED = AsyncConnectStatus.CONNECT_FAILED
DISCONNECT_PENDING = AsyncConnectStatus.DISCONNECT_PENDING
DISCONNECTING = AsyncConnectStatus.DISCONNECTING


class FeatureType(enum.IntEnum):
    """Features get_capability() reports (CANN hixl's values)."""

    AUTO_CONNECT = 0          # option AutoConnect: supported
    CLIENT_SERVER_COMM = 1    # an engine listens, others connect: supported


AUTO_CONNECT = FeatureType.AUTO_CONNECT
CLIENT_SERVER_COMM = FeatureType.CLIENT_SERVER_COMM
FEATURE_SUPPORTED = 1
FEATURE_NOT_SUPPORTED = 0
