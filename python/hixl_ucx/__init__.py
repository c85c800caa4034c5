# SPDX-License-Identifier: BSD-3-Clause
"""hixl_ucx: hixl's Python API over libhixl-ucx (ctypes, standard library
only; the C library is installed separately).

The class ``Hixl`` has the methods of CANN hixl's Python binding, with its
names, arguments and defaults, and like it returns statuses instead of
raising::

    hixl.initialize(local_engine, options={})           -> status
    hixl.finalize()                                      -> None
    hixl.register_mem(MemDesc(addr, len), MEM_HOST)      -> (status, handle)
    hixl.deregister_mem(handle)                          -> status
    hixl.connect(remote_engine, timeout_in_millis=1000)  -> status
    hixl.disconnect(remote_engine, timeout_in_millis=1000)
    hixl.transfer_sync(remote_engine, op, op_descs, timeout_in_millis=1000)
    hixl.transfer_async(remote_engine, op, op_descs, args=TransferArgs())
                                                         -> (status, req)
    hixl.get_transfer_status(req)                -> (status, TransferStatus)
    hixl.get_all_transfer_status(args=GetTransferStatusArgs())
                                      -> (status, [TransferResult, ...])
    hixl.connect_async(remote_engine, timeout_in_millis=1000)  -> status
    hixl.disconnect_async(remote_engine, timeout_in_millis=1000)
    hixl.get_async_connect_status(remote_engine)
                                      -> (status, AsyncConnectStatus)
    hixl.get_all_async_connect_status()
                                      -> (status, {remote: AsyncConnectStatus})
    hixl.send_notify(remote_engine, NotifyDesc(name, notify_msg),
                     timeout_in_millis=1000)             -> status
    hixl.get_notifies()                      -> (status, [NotifyDesc, ...])

and the module function ``get_capability(feature_type)``.  The package
``hixl`` (installed beside this one) gives the same under CANN hixl's
module name, for ``import hixl``.

Plus what libhixl-ucx adds: ``alloc_mem`` (memory peers write into, as
an :class:`Allocation`: an int address with memoryview / numpy / torch
views), ``export_mem`` / ``import_mem`` (memory descriptions addressed by
(region, offset, length), :class:`RemoteMemory`; these raise on errors),
``flush_layer`` / ``wait_layer`` / ``test_layer`` (layer-granular flush),
``mem_warm_wait`` (until the memory first transfers touch is warm),
``engine_name``, ``last_error``.  Statuses are hixl's numbers (SUCCESS 0,
PARAM_INVALID 103900, ... FAILED 503900); ``last_error()`` says what failed.
``Hixl(raise_on_error=True)`` raises :class:`HixlError` (status and
message) instead of returning a status other than SUCCESS.

Memory is given as objects or addresses: ``register_mem(bytearray_or_
ndarray)``, ``MemDesc(buf)``, ``TransferOpDesc(buf, remote_addr)`` take
anything with the buffer protocol (writable and contiguous) or with
``data_ptr()`` and ``nbytes`` (torch tensors); ints are raw addresses.
Wrong types raise TypeError, bad values ValueError, naming the argument.

The library is found on first use: ``load_library(path)`` or the
environment variable HIXL_UCX_LIB (a path that must exist), then where
``make install`` put it, then ``pkg-config hixl-ucx``, then the system's
search; see :mod:`hixl_ucx._lib`.

ctypes releases the GIL during every call, so transfers in one thread do
not block others.

The public names live in submodules (``_constants``, ``_memory``,
``_engine``, ...) and are gathered here, so another front module (an
upstream-compatible ``hixl`` package) can import them without loading
anything twice.
"""

from typing import Tuple

from ._constants import (ALREADY_CONNECTED, AUTO_CONNECT, CLIENT_SERVER_COMM,
                         CONNECT_FAILED, CONNECT_PENDING, CONNECTED,
                         CONNECTING, DEFAULT_TIMEOUT_MS, DISCONNECT_PENDING,
                         DISCONNECTING, FAILED, FEATURE_NOT_SUPPORTED,
                         FEATURE_SUPPORTED, MEM_DEVICE, MEM_HOST,
                         NOT_CONNECT, NOT_CONNECTED, NOTIFY_FAILED,
                         OPTION_AUTO_CONNECT, OPTION_BUFFER_POOL,
                         OPTION_ENABLE_USE_FABRIC_MEM,
                         OPTION_GLOBAL_RESOURCE_CONFIG, OPTION_LOCAL_COMM_RES,
                         OPTION_RDMA_SERVICE_LEVEL, OPTION_RDMA_TRAFFIC_CLASS,
                         PARAM_INVALID, READ, RESOURCE_EXHAUSTED, SUCCESS,
                         TIMEOUT, UNSUPPORTED, WRITE, AsyncConnectStatus,
                         FeatureType, MemType, TransferOp, TransferStatus,
                         WAIT_ALL, WAIT_ANY, WaitMode)
from ._allocation import Allocation
from ._blocks import Blocks
from ._engine import Hixl
from ._mem_export import RemoteMemory
from ._errors import HixlError, HixlTimeoutError, last_error, strerror
from ._lib import LibraryNotFoundError, load_library
from ._metrics import HixlCollector
from ._memory import (MemDesc, NotifyDesc, TransferArgs, TransferOpDesc,
                      buffer_address)
from ._status import GetTransferStatusArgs, TransferResult
from ._version import __version__

__all__ = [
    "SUCCESS", "PARAM_INVALID", "TIMEOUT", "NOT_CONNECTED",
    "ALREADY_CONNECTED", "NOTIFY_FAILED", "UNSUPPORTED", "FAILED",
    "RESOURCE_EXHAUSTED", "DEFAULT_TIMEOUT_MS",
    "OPTION_ENABLE_USE_FABRIC_MEM", "OPTION_RDMA_TRAFFIC_CLASS",
    "OPTION_RDMA_SERVICE_LEVEL", "OPTION_BUFFER_POOL",
    "OPTION_GLOBAL_RESOURCE_CONFIG", "OPTION_AUTO_CONNECT",
    "OPTION_LOCAL_COMM_RES",
    "MemType", "MEM_DEVICE", "MEM_HOST", "TransferOp", "READ", "WRITE",
    "TransferStatus", "AsyncConnectStatus", "NOT_CONNECT",
    "CONNECT_PENDING", "CONNECTING", "CONNECTED", "CONNECT_FAILED",
    "DISCONNECT_PENDING", "DISCONNECTING", "FeatureType", "AUTO_CONNECT",
    "CLIENT_SERVER_COMM", "FEATURE_SUPPORTED", "FEATURE_NOT_SUPPORTED",
    "get_capability", "MemDesc", "TransferOpDesc", "TransferArgs",
    "GetTransferStatusArgs", "TransferResult", "NotifyDesc", "Hixl",
    "HixlError", "HixlTimeoutError", "WaitMode", "WAIT_ALL", "WAIT_ANY",
    "LibraryNotFoundError", "load_library", "buffer_address",
    "last_error", "strerror", "version", "library", "__version__",
    "Allocation", "RemoteMemory", "Blocks", "HixlCollector",
]


def get_capability(feature_type: FeatureType) -> Tuple[int, int]:
    """-> (status, FEATURE_SUPPORTED or FEATURE_NOT_SUPPORTED), as
    hixl_get_capability answers (no engine needed)."""
    import ctypes
    from ._lib import lib
    if isinstance(feature_type, (str, bytes, bool)) or not isinstance(
            feature_type, int):
        raise TypeError("feature_type must be a FeatureType, got %s" %
                        type(feature_type).__name__)
    from . import _args
    feature = _args.integer(feature_type, "feature_type", -2 ** 31,
                            2 ** 31 - 1)
    value = ctypes.c_int32(FEATURE_NOT_SUPPORTED)
    status = lib().hixl_get_capability(feature, ctypes.byref(value))
    return int(status), (value.value if status == SUCCESS else
                         FEATURE_NOT_SUPPORTED)


def version() -> str:
    """The C library's version string (loads the library)."""
    from ._lib import lib
    return lib().hixl_version().decode()


def __getattr__(name: str) -> str:
    # `hixl_ucx.library`: the path the library was loaded from (loading it)
    if name == "library":
        return load_library()
    raise AttributeError("module 'hixl_ucx' has no attribute %r" % name)
