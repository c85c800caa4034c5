"""hixl_ucx: hixl's Python API over libhixl-ucx (standard library only).

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
    hixl.send_notify(remote_engine, NotifyDesc(name, notify_msg),
                     timeout_in_millis=1000)             -> status
    hixl.get_notifies()                      -> (status, [NotifyDesc, ...])

and the module function ``get_capability(feature_type)``; not provided
(nothing in the C API to map them to): connect_async, disconnect_async,
get_async_connect_status, get_all_async_connect_status and
get_all_transfer_status.

Plus what libhixl-ucx adds: ``alloc_mem`` (memory peers write into),
``flush_layer`` / ``wait_layer`` / ``test_layer`` (layer-granular flush),
``engine_name``, ``last_error``.  Statuses are hixl's numbers (SUCCESS 0,
PARAM_INVALID 103900, ... FAILED 503900); ``last_error()`` says what failed.

Addresses are integers: ``ctypes.addressof(buf)`` for a ctypes buffer,
``buffer_address(obj)`` for any writable buffer (bytearray, mmap, ...).

The library is found through the environment variable HIXL_UCX_LIB (a path
to libhixl-ucx.so), then the directory it was installed to, then the
system's search (ctypes.util.find_library, libhixl-ucx.so.0).

ctypes releases the GIL during every call, so transfers in one thread do
not block others.
"""

import ctypes
import ctypes.util
import enum
import os
import threading

__all__ = [
    "SUCCESS", "PARAM_INVALID", "TIMEOUT", "NOT_CONNECTED",
    "ALREADY_CONNECTED", "NOTIFY_FAILED", "UNSUPPORTED", "FAILED",
    "RESOURCE_EXHAUSTED",
    "OPTION_ENABLE_USE_FABRIC_MEM", "OPTION_RDMA_TRAFFIC_CLASS",
    "OPTION_RDMA_SERVICE_LEVEL", "OPTION_BUFFER_POOL",
    "OPTION_GLOBAL_RESOURCE_CONFIG", "OPTION_AUTO_CONNECT",
    "OPTION_LOCAL_COMM_RES",
    "MemType", "MEM_DEVICE", "MEM_HOST", "TransferOp", "READ", "WRITE",
    "TransferStatus", "FeatureType", "AUTO_CONNECT", "CLIENT_SERVER_COMM",
    "FEATURE_SUPPORTED", "FEATURE_NOT_SUPPORTED", "get_capability",
    "MemDesc", "TransferOpDesc", "TransferArgs", "NotifyDesc", "Hixl",
    "buffer_address", "last_error", "strerror", "version", "library",
]

# ---- constants (hixl's numbers and names) ---------------------------------

SUCCESS = 0
PARAM_INVALID = 103900
TIMEOUT = 103901
NOT_CONNECTED = 103902
ALREADY_CONNECTED = 103903
NOTIFY_FAILED = 103904
UNSUPPORTED = 103905
RESOURCE_EXHAUSTED = 203900
FAILED = 503900

OPTION_ENABLE_USE_FABRIC_MEM = "EnableUseFabricMem"
OPTION_RDMA_TRAFFIC_CLASS = "RdmaTrafficClass"
OPTION_RDMA_SERVICE_LEVEL = "RdmaServiceLevel"
OPTION_BUFFER_POOL = "BufferPool"
OPTION_GLOBAL_RESOURCE_CONFIG = "GlobalResourceConfig"
OPTION_AUTO_CONNECT = "AutoConnect"
OPTION_LOCAL_COMM_RES = "LocalCommRes"

DEFAULT_TIMEOUT_MS = 1000


class MemType(enum.IntEnum):
    MEM_DEVICE = 0
    MEM_HOST = 1


MEM_DEVICE = MemType.MEM_DEVICE
MEM_HOST = MemType.MEM_HOST


class TransferOp(enum.IntEnum):
    READ = 0
    WRITE = 1


READ = TransferOp.READ
WRITE = TransferOp.WRITE


class TransferStatus(enum.IntEnum):
    WAITING = 0
    COMPLETED = 1
    TIMEOUT = 2
    FAILED = 3


class FeatureType(enum.IntEnum):
    AUTO_CONNECT = 0          # option AutoConnect: supported
    CLIENT_SERVER_COMM = 1    # CANN's HIXL_CS client/server API: not here


AUTO_CONNECT = FeatureType.AUTO_CONNECT
CLIENT_SERVER_COMM = FeatureType.CLIENT_SERVER_COMM
FEATURE_SUPPORTED = 1
FEATURE_NOT_SUPPORTED = 0


def get_capability(feature_type):
    """-> (status, FEATURE_SUPPORTED or FEATURE_NOT_SUPPORTED)."""
    if int(feature_type) < 0:
        return PARAM_INVALID, FEATURE_NOT_SUPPORTED
    if int(feature_type) == FeatureType.AUTO_CONNECT:
        return SUCCESS, FEATURE_SUPPORTED
    return SUCCESS, FEATURE_NOT_SUPPORTED


# ---- descriptors ---------------------------------------------------------


class MemDesc:
    """A region to register: addr (int) and len (bytes)."""

    __slots__ = ("addr", "len")

    def __init__(self, addr=0, len=0):  # noqa: A002 (hixl's field name)
        self.addr = int(addr)
        self.len = int(len)

    def __repr__(self):
        return "MemDesc(addr=%#x, len=%d)" % (self.addr, self.len)


class TransferOpDesc:
    """One piece of a transfer: local_addr, remote_addr, len."""

    __slots__ = ("local_addr", "remote_addr", "len")

    def __init__(self, local_addr=0, remote_addr=0, len=0):  # noqa: A002
        self.local_addr = int(local_addr)
        self.remote_addr = int(remote_addr)
        self.len = int(len)

    def __repr__(self):
        return "TransferOpDesc(local_addr=%#x, remote_addr=%#x, len=%d)" % (
            self.local_addr, self.remote_addr, self.len)


class TransferArgs:
    """Optional arguments of transfer_async.

    user_data is kept for hixl compatibility and not used.  libhixl-ucx
    adds timeout_in_millis (the request's deadline; None: the engine's
    hixl.TransferTimeoutMs) and notify (a NotifyDesc the remote receives
    only once every byte of the transfer is in its memory).
    """

    __slots__ = ("user_data", "timeout_in_millis", "notify")

    def __init__(self, user_data=0, timeout_in_millis=None, notify=None):
        self.user_data = user_data
        self.timeout_in_millis = timeout_in_millis
        self.notify = notify


def _to_bytes(value):
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return bytes(value)


class NotifyDesc:
    """A notify: name (str) and notify_msg (str or bytes).

    notify_msg may carry any bytes.  A received notify's notify_msg is a
    str (bytes that are not UTF-8 decode with surrogateescape, so nothing is
    lost); notify_msg_bytes gives the bytes, remote the sender's engine.
    """

    __slots__ = ("name", "notify_msg", "remote")

    def __init__(self, name="", notify_msg="", remote=None):
        self.name = name
        self.notify_msg = notify_msg
        self.remote = remote

    @property
    def notify_msg_bytes(self):
        return _to_bytes(self.notify_msg)

    def __repr__(self):
        return "NotifyDesc(name=%r, notify_msg=%r)" % (self.name,
                                                        self.notify_msg)


# ---- the library -----------------------------------------------------------


class _COption(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class _CMemDesc(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_size_t), ("len", ctypes.c_size_t)]


class _COpDesc(ctypes.Structure):
    _fields_ = [("local_addr", ctypes.c_size_t),
                ("remote_addr", ctypes.c_size_t),
                ("len", ctypes.c_size_t)]


class _CNotifyDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("msg", ctypes.c_void_p),
                ("msg_len", ctypes.c_size_t)]


class _CNotify(ctypes.Structure):
    _fields_ = [("remote", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("msg", ctypes.c_void_p), ("msg_len", ctypes.c_size_t)]


class _CTransferArgs(ctypes.Structure):
    _fields_ = [("field_mask", ctypes.c_uint64),
                ("timeout_ms", ctypes.c_int32),
                ("notify", _CNotifyDesc)]


_ARG_TIMEOUT = 1 << 0
_ARG_NOTIFY = 1 << 1

_VP = ctypes.c_void_p
_ST = ctypes.c_int          # hixl_status_t (an enum)
_I32 = ctypes.c_int32
_U32 = ctypes.c_uint32
_U64 = ctypes.c_uint64
_SZ = ctypes.c_size_t
_STR = ctypes.c_char_p

_PROTOTYPES = {
    "hixl_initialize": (_ST, [_STR, ctypes.POINTER(_COption), _SZ,
                              ctypes.POINTER(_VP)]),
    "hixl_finalize": (_ST, [_VP]),
    "hixl_engine_name": (_STR, [_VP]),
    "hixl_register_mem": (_ST, [_VP, ctypes.POINTER(_CMemDesc), ctypes.c_int,
                                ctypes.POINTER(_VP)]),
    "hixl_alloc_mem": (_ST, [_VP, _SZ, ctypes.c_int, ctypes.POINTER(_VP),
                             ctypes.POINTER(_VP)]),
    "hixl_deregister_mem": (_ST, [_VP, _VP]),
    "hixl_connect": (_ST, [_VP, _STR, _I32]),
    "hixl_disconnect": (_ST, [_VP, _STR, _I32]),
    "hixl_transfer_sync": (_ST, [_VP, _STR, ctypes.c_int,
                                 ctypes.POINTER(_COpDesc), _SZ, _I32]),
    "hixl_transfer_async": (_ST, [_VP, _STR, ctypes.c_int,
                                  ctypes.POINTER(_COpDesc), _SZ,
                                  ctypes.POINTER(_CTransferArgs),
                                  ctypes.POINTER(_VP)]),
    "hixl_get_transfer_status": (_ST, [_VP, _VP, ctypes.POINTER(ctypes.c_int)]),
    "hixl_flush_layer": (_ST, [_VP, _STR, _U32, _U64, _U32]),
    "hixl_wait_layer": (_ST, [_VP, _STR, _U32, _U64, _U32, _I32]),
    "hixl_test_layer": (_ST, [_VP, _STR, _U32, _U64, _U32,
                              ctypes.POINTER(ctypes.c_int)]),
    "hixl_send_notify": (_ST, [_VP, _STR, ctypes.POINTER(_CNotifyDesc), _I32]),
    "hixl_get_notifies": (_ST, [_VP, ctypes.POINTER(ctypes.POINTER(_CNotify)),
                                ctypes.POINTER(_SZ)]),
    "hixl_release_notifies": (None, [ctypes.POINTER(_CNotify), _SZ]),
    "hixl_engine_progress": (ctypes.c_uint, [_VP]),
    "hixl_strerror": (_STR, [_ST]),
    "hixl_last_error": (_STR, []),
    "hixl_version": (_STR, []),
}


def _candidates():
    env = os.environ.get("HIXL_UCX_LIB")
    if env:
        yield env
    try:
        from . import _libdir  # written by `make install`
        yield os.path.join(_libdir.LIBDIR, "libhixl-ucx.so.0")
    except ImportError:
        pass
    found = ctypes.util.find_library("hixl-ucx")
    if found:
        yield found
    yield "libhixl-ucx.so.0"


def _load():
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            errors.append("%s: %s" % (path, exc))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib, path
    raise ImportError("hixl_ucx: cannot load libhixl-ucx (set HIXL_UCX_LIB "
                      "to its path): " + "; ".join(errors))


_lib, library = _load()


def _b(text):
    if isinstance(text, bytes):
        return text
    return str(text).encode("utf-8")


def _s(raw):
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""


def last_error():
    """What the last failed call of this thread said."""
    return _s(_lib.hixl_last_error())


def strerror(status):
    """The name of a status ("HIXL_TIMEOUT")."""
    return _s(_lib.hixl_strerror(int(status)))


def version():
    return _s(_lib.hixl_version())


def buffer_address(obj):
    """Address of a writable buffer: ctypes object, bytearray, mmap, ...

    The memory must stay alive (and, for mmap, open) while registered.
    """
    if isinstance(obj, ctypes._SimpleCData) or isinstance(
            obj, (ctypes.Array, ctypes.Structure, ctypes.Union)):
        return ctypes.addressof(obj)
    view = memoryview(obj)
    if view.readonly:
        raise ValueError("buffer_address: the buffer is read-only")
    if view.nbytes == 0:
        raise ValueError("buffer_address: the buffer is empty")
    return ctypes.addressof(ctypes.c_char.from_buffer(obj))


def _op_array(op_descs):
    descs = list(op_descs)
    arr = (_COpDesc * max(len(descs), 1))()
    for i, d in enumerate(descs):
        if isinstance(d, TransferOpDesc):
            arr[i].local_addr, arr[i].remote_addr, arr[i].len = (
                d.local_addr, d.remote_addr, d.len)
        else:
            arr[i].local_addr, arr[i].remote_addr, arr[i].len = d
    return arr, len(descs)


class _Gate:
    """Keeps finalize from freeing the engine under a call in flight."""

    def __init__(self):
        self._cond = threading.Condition()
        self._busy = 0

    def enter(self):
        with self._cond:
            self._busy += 1

    def leave(self):
        with self._cond:
            self._busy -= 1
            if self._busy == 0:
                self._cond.notify_all()

    def drain(self):
        with self._cond:
            while self._busy:
                self._cond.wait()


class Hixl:
    """One hixl engine (hixl::Hixl)."""

    def __init__(self):
        self._engine = None
        self._lock = threading.Lock()
        self._gate = _Gate()

    def __del__(self):
        try:
            self.finalize()
        except Exception:  # interpreter shutdown: nothing left to do
            pass

    # Every call takes the engine through the gate; before initialize (or
    # after finalize) the C call gets NULL and answers PARAM_INVALID with
    # "engine is NULL", which is reported as hixl does: FAILED.
    def _call(self, fn, *args):
        self._gate.enter()
        try:
            status = fn(self._engine, *args)
            if self._engine is None and status == PARAM_INVALID:
                status = FAILED
            return status
        finally:
            self._gate.leave()

    # ---- hixl's methods --------------------------------------------------

    def initialize(self, local_engine, options=None):
        """Create the engine: "ip:port" listens, "ip" is client-only.

        options: {key: value} of hixl options (OPTION_*, "hixl.*").  A
        repeated initialize is ignored, as in hixl.
        """
        with self._lock:
            if self._engine is not None:
                return SUCCESS
            items = list((options or {}).items())
            keep = [(_b(k), _b(v)) for k, v in items]
            arr = (_COption * max(len(keep), 1))()
            for i, (k, v) in enumerate(keep):
                arr[i].key, arr[i].value = k, v
            engine = _VP()
            status = _lib.hixl_initialize(_b(local_engine), arr, len(keep),
                                          ctypes.byref(engine))
            if status == SUCCESS:
                self._engine = engine.value
            return status

    def finalize(self):
        """Destroy the engine (waits for calls in flight on other threads)."""
        with self._lock:
            engine, self._engine = self._engine, None
            if engine is None:
                return
            self._gate.drain()
            _lib.hixl_finalize(engine)

    def register_mem(self, mem_desc, mem_type=MEM_HOST):
        """Register MemDesc(addr, len) -> (status, handle)."""
        desc = _CMemDesc(mem_desc.addr, mem_desc.len)
        handle = _VP()
        status = self._call(_lib.hixl_register_mem, ctypes.byref(desc),
                            int(mem_type), ctypes.byref(handle))
        return status, (handle.value or 0)

    def deregister_mem(self, mem_handle):
        return self._call(_lib.hixl_deregister_mem, _VP(mem_handle or None))

    def connect(self, remote_engine, timeout_in_millis=DEFAULT_TIMEOUT_MS):
        return self._call(_lib.hixl_connect, _b(remote_engine),
                          int(timeout_in_millis))

    def disconnect(self, remote_engine, timeout_in_millis=DEFAULT_TIMEOUT_MS):
        return self._call(_lib.hixl_disconnect, _b(remote_engine),
                          int(timeout_in_millis))

    def transfer_sync(self, remote_engine, op, op_descs,
                      timeout_in_millis=DEFAULT_TIMEOUT_MS):
        """Move op_descs (TransferOpDesc or (local, remote, len)); wait."""
        arr, n = _op_array(op_descs)
        return self._call(_lib.hixl_transfer_sync, _b(remote_engine),
                          int(op), arr, n, int(timeout_in_millis))

    def transfer_async(self, remote_engine, op, op_descs, args=None):
        """Post a transfer -> (status, req); poll get_transfer_status."""
        arr, n = _op_array(op_descs)
        cargs = None
        keep = None
        if args is not None and (args.timeout_in_millis is not None or
                                 args.notify is not None):
            cargs = _CTransferArgs()
            if args.timeout_in_millis is not None:
                cargs.field_mask |= _ARG_TIMEOUT
                cargs.timeout_ms = int(args.timeout_in_millis)
            if args.notify is not None:
                keep = (_b(args.notify.name), args.notify.notify_msg_bytes)
                cargs.field_mask |= _ARG_NOTIFY
                cargs.notify.name = keep[0]
                cargs.notify.msg = ctypes.cast(ctypes.c_char_p(keep[1]), _VP)
                cargs.notify.msg_len = len(keep[1])
            cargs = ctypes.byref(cargs)
        req = _VP()
        status = self._call(_lib.hixl_transfer_async, _b(remote_engine),
                            int(op), arr, n, cargs, ctypes.byref(req))
        return status, (req.value or 0)

    def get_transfer_status(self, req):
        """-> (status, TransferStatus); a finished request is released."""
        st = ctypes.c_int(int(TransferStatus.FAILED))
        status = self._call(_lib.hixl_get_transfer_status, _VP(req or None),
                            ctypes.byref(st))
        return status, TransferStatus(st.value)

    def send_notify(self, remote_engine, notify,
                    timeout_in_millis=DEFAULT_TIMEOUT_MS):
        msg = notify.notify_msg_bytes
        nd = _CNotifyDesc(_b(notify.name),
                          ctypes.cast(ctypes.c_char_p(msg), _VP), len(msg))
        return self._call(_lib.hixl_send_notify, _b(remote_engine),
                          ctypes.byref(nd), int(timeout_in_millis))

    def get_notifies(self):
        """Take every notify received so far -> (status, [NotifyDesc])."""
        ptr = ctypes.POINTER(_CNotify)()
        count = _SZ(0)
        status = self._call(_lib.hixl_get_notifies, ctypes.byref(ptr),
                            ctypes.byref(count))
        out = []
        if status != SUCCESS:
            return status, out
        try:
            for i in range(count.value):
                n = ptr[i]
                raw = ctypes.string_at(n.msg, n.msg_len) if n.msg_len else b""
                out.append(NotifyDesc(_s(n.name), _s(raw), _s(n.remote)))
        finally:
            if count.value:
                _lib.hixl_release_notifies(ptr, count)
        return status, out

    # ---- libhixl-ucx extensions ----------------------------------------

    def alloc_mem(self, length, mem_type=MEM_HOST):
        """Allocate and register -> (status, addr, handle).

        Allocate memory peers write into here: on one host UCX reaches it
        through shared memory.  deregister_mem(handle) frees it.
        """
        addr = _VP()
        handle = _VP()
        status = self._call(_lib.hixl_alloc_mem, int(length), int(mem_type),
                            ctypes.byref(addr), ctypes.byref(handle))
        return status, (addr.value or 0), (handle.value or 0)

    def flush_layer(self, remote_engine, stream, generation, layer):
        """Declare layer `layer` of (stream, generation) posted to remote."""
        return self._call(_lib.hixl_flush_layer, _b(remote_engine),
                          int(stream), int(generation), int(layer))

    def wait_layer(self, source_engine, stream, generation, layer,
                   timeout_in_millis=DEFAULT_TIMEOUT_MS):
        """Wait until source_engine flushed (stream, generation, layer)."""
        return self._call(_lib.hixl_wait_layer, _b(source_engine),
                          int(stream), int(generation), int(layer),
                          int(timeout_in_millis))

    def test_layer(self, source_engine, stream, generation, layer):
        """-> (status, ready): non-blocking wait_layer."""
        ready = ctypes.c_int(0)
        status = self._call(_lib.hixl_test_layer, _b(source_engine),
                            int(stream), int(generation), int(layer),
                            ctypes.byref(ready))
        return status, bool(ready.value)

    def engine_name(self):
        """The name peers use ("ip:port" with the real port), or ""."""
        self._gate.enter()
        try:
            if self._engine is None:
                return ""
            return _s(_lib.hixl_engine_name(self._engine))
        finally:
            self._gate.leave()

    def progress(self):
        """Drive the engine once (only with hixl.ProgressThread=0)."""
        if self._engine is None:
            return 0
        return self._call(_lib.hixl_engine_progress)

    @staticmethod
    def last_error():
        return last_error()
