# SPDX-License-Identifier: BSD-3-Clause
"""The engine: class Hixl, hixl::Hixl's methods over libhixl-ucx."""

import ctypes
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from . import _args, _lib
from ._constants import (DEFAULT_TIMEOUT_MS, FAILED, MEM_HOST, PARAM_INVALID,
                         SUCCESS, AsyncConnectStatus, MemType, TransferOp,
                         TransferStatus)
from ._ctypes import (ARG_NOTIFY, ARG_TIMEOUT, ARG_USER_DATA, CAsyncEntry,
                      CMemDesc, CNotify, CNotifyDesc, COpDesc, COption,
                      CTransferArgs, CTransferResult)
from ._allocation import Allocation, close_all
from ._blocks import Blocks, CBlockLayout, id_array
from ._errors import HixlError, _s, last_error
from ._mem_export import RemoteMemory, export_mem
from ._memory import MemDesc, NotifyDesc, TransferArgs, TransferOpDesc
from ._status import GetTransferStatusArgs, TransferResult
from ._aio import AioMixin
from ._metrics import MetricsMixin
from ._wait import WaitMixin

_VP = ctypes.c_void_p
_SZ = ctypes.c_size_t

#: what a descriptor list may hold
OpDescLike = Any   # TransferOpDesc, (local, remote, len) or (local, remote)


def _transfer_args(args: Optional[TransferArgs]) -> Tuple[Any, Any]:
    """(hixl_transfer_args_t pointer or None, what must outlive the call)."""
    if args is not None and not isinstance(args, TransferArgs):
        raise TypeError("args must be a TransferArgs, got %s" %
                        type(args).__name__)
    if args is None or (args.timeout_in_millis is None and
                        args.notify is None and not args.user_data):
        return None, None
    c = CTransferArgs()
    keep: Any = c
    if args.user_data:
        c.field_mask |= ARG_USER_DATA
        c.user_data = args.user_data
    if args.timeout_in_millis is not None:
        c.field_mask |= ARG_TIMEOUT
        c.timeout_ms = _args.timeout(args.timeout_in_millis,
                                     "args.timeout_in_millis")
    if args.notify is not None:
        keep = (c, _args.name(args.notify.name, "args.notify.name"),
                args.notify.notify_msg_bytes)
        c.field_mask |= ARG_NOTIFY
        c.notify.name = keep[1]
        c.notify.msg = ctypes.cast(ctypes.c_char_p(keep[2]), _VP)
        c.notify.msg_len = len(keep[2])
    return ctypes.byref(c), keep


def _op_array(op_descs: Iterable[OpDescLike]) -> Tuple[Any, int, List[Any]]:
    """ctypes array of descriptors, their count, and what keeps the local
    memory of object descriptors alive."""
    if isinstance(op_descs, (str, bytes)) or not hasattr(op_descs,
                                                         "__iter__"):
        raise TypeError("op_descs must be a list of TransferOpDesc (or "
                        "(local, remote, len) tuples), got %s" %
                        type(op_descs).__name__)
    descs = []
    for i, d in enumerate(op_descs):
        if isinstance(d, TransferOpDesc):
            descs.append(d)
        elif isinstance(d, tuple) and len(d) in (2, 3):
            descs.append(TransferOpDesc(*d))
        else:
            raise TypeError("op_descs[%d] must be a TransferOpDesc or a "
                            "(local, remote, len) tuple, got %s" % (
                                i, type(d).__name__))
    arr = (COpDesc * max(len(descs), 1))()
    for i, d in enumerate(descs):
        arr[i].local_addr = d.local_addr
        arr[i].remote_addr = d.remote_addr
        arr[i].len = d.len
    return arr, len(descs), [d._pin for d in descs if d._pin is not None]


class _Gate:
    """Keeps finalize from freeing the engine under a call in flight."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = 0

    def enter(self) -> None:
        with self._cond:
            self._busy += 1

    def leave(self) -> None:
        with self._cond:
            self._busy -= 1
            if self._busy == 0:
                self._cond.notify_all()

    def drain(self) -> None:
        with self._cond:
            while self._busy:
                self._cond.wait()


class Hixl(WaitMixin, AioMixin, MetricsMixin):
    """One hixl engine (hixl::Hixl).

    Methods return hixl's statuses, as hixl's Python binding does
    (``last_error()`` says what failed).  With ``raise_on_error=True`` a
    status other than SUCCESS raises :class:`HixlError` instead (carrying
    the status and the message); return values keep their shape.  Wrong
    argument types raise TypeError, values out of range ValueError, in
    either mode.  The waits (wait_transfers, wait_notifies, event_fd,
    arm and the asyncio awaitables) are this package's and raise on
    failure.
    """

    def __init__(self, raise_on_error: bool = False) -> None:
        self._engine: Optional[int] = None
        self._lock = threading.Lock()
        self._gate = _Gate()
        self._raise = bool(raise_on_error)
        self._pins_lock = threading.Lock()
        self._mem_pins: Dict[int, Any] = {}   # handle -> registered object
        self._req_pins: Dict[int, Any] = {}   # request -> local objects
        self._allocs: Dict[int, Allocation] = {}   # handle -> alloc_mem's
        self._blocks: Dict[int, Blocks] = {}   # handle -> prepared layout

    def __del__(self) -> None:
        try:
            self.finalize()
        except Exception:  # interpreter shutdown: nothing left to do
            pass

    def __enter__(self) -> "Hixl":
        """``with Hixl() as h:`` finalizes the engine when the block ends
        (finalize's BufferError if a view of alloc_mem memory is alive)."""
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finalize()

    # Every call takes the engine through the gate; before initialize (or
    # after finalize) the C call gets NULL and answers PARAM_INVALID with
    # "engine is NULL", which is reported as hixl does: FAILED.
    def _call(self, method: str, fn: Any, *args: Any) -> int:
        self._gate.enter()
        try:
            status = fn(self._engine, *args)
            if self._engine is None and status == PARAM_INVALID:
                status = FAILED
        finally:
            self._gate.leave()
        return self._check(method, status)

    def _check(self, method: str, status: int) -> int:
        if status != SUCCESS and self._raise:
            raise HixlError(method, status, last_error())
        return status

    # ---- hixl's methods --------------------------------------------------

    def initialize(self, local_engine: str,
                   options: Optional[Mapping[str, Any]] = None) -> int:
        """Create the engine: "ip:port" listens, "ip" is client-only.

        options: {key: value} of hixl options (OPTION_*, "hixl.*"); values
        are strings (ints and bools are converted).  A repeated initialize
        is ignored, as in hixl.
        """
        name = _args.name(local_engine, "local_engine")
        keep = _args.options(options)
        with self._lock:
            if self._engine is not None:
                return SUCCESS
            arr = (COption * max(len(keep), 1))()
            for i, (k, v) in enumerate(keep):
                arr[i].key, arr[i].value = k, v
            engine = _VP()
            status = _lib.lib().hixl_initialize(name, arr, len(keep),
                                                ctypes.byref(engine))
            if status == SUCCESS:
                self._engine = engine.value
        return self._check("initialize", status)

    def finalize(self) -> None:
        """Destroy the engine (waits for calls in flight on other threads).
        Registered objects and in-flight buffers are released with it."""
        with self._lock:
            engine, self._engine = self._engine, None
            if engine is None:
                return
            self._aio_close()
            self._close_allocs(engine)
            self._gate.drain()
            _lib.lib().hixl_finalize(engine)
            with self._pins_lock:
                self._mem_pins.clear()
                self._req_pins.clear()
                for b in self._blocks.values():
                    b.handle = 0   # finalize released them
                self._blocks.clear()

    def register_mem(self, mem_desc: Any,
                     mem_type: Optional[MemType] = None) -> Tuple[int, int]:
        """Register memory -> (status, handle).

        mem_desc: a MemDesc, or directly a writable contiguous buffer
        (bytearray, mmap, numpy array, ...) or an object with data_ptr()
        and nbytes (a torch tensor).  The object stays referenced until
        deregister_mem.  mem_type: MEM_HOST or MEM_DEVICE; by default
        MEM_DEVICE for a tensor whose device is not "cpu", else MEM_HOST.
        """
        if not isinstance(mem_desc, MemDesc):
            mem_desc = MemDesc(mem_desc)
        mtype = (mem_desc.default_mem_type() if mem_type is None
                 else _args.mem_type(mem_type))
        desc = CMemDesc(mem_desc.addr, mem_desc.len)
        handle = _VP()
        status = self._call("register_mem", _lib.lib().hixl_register_mem,
                            ctypes.byref(desc), int(mtype),
                            ctypes.byref(handle))
        if status == SUCCESS and handle.value and mem_desc._pin is not None:
            with self._pins_lock:
                self._mem_pins[handle.value] = mem_desc._pin
        return status, (handle.value or 0)

    def deregister_mem(self, mem_handle: int) -> int:
        """Deregister; the object registered (if any) is let go.  As in
        hixl, 0 is PARAM_INVALID and a handle this engine does not hold
        (deregistered already, or another's) is SUCCESS, doing nothing."""
        h = _args.integer(mem_handle, "mem_handle", 0, _args.SIZE_MAX)
        alloc = self._allocs.get(h)
        if alloc is not None:
            alloc._close_views()   # BufferError while a view is exported
        self._gate.enter()
        try:
            engine = self._engine
            status = _lib.lib().hixl_deregister_mem(engine, _VP(h or None))
        finally:
            self._gate.leave()
        if engine is None and status == PARAM_INVALID:
            status = FAILED
        elif status == PARAM_INVALID and h != 0:
            status = SUCCESS   # not a handle of this engine: a no-op
        status = self._check("deregister_mem", status)
        if status == SUCCESS:
            with self._pins_lock:
                self._mem_pins.pop(h, None)
            if self._allocs.pop(h, None) is not None:
                alloc._mark_released()
        return status

    def connect(self, remote_engine: str,
                timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        return self._call("connect", _lib.lib().hixl_connect,
                          _args.name(remote_engine, "remote_engine"),
                          _args.timeout(timeout_in_millis))

    def disconnect(self, remote_engine: str,
                   timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        return self._call("disconnect", _lib.lib().hixl_disconnect,
                          _args.name(remote_engine, "remote_engine"),
                          _args.timeout(timeout_in_millis))

    def transfer_sync(self, remote_engine: str, op: TransferOp,
                      op_descs: Iterable[OpDescLike],
                      timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        """Move op_descs (TransferOpDesc or (local, remote, len)); wait
        until every byte is at the destination."""
        name = _args.name(remote_engine, "remote_engine")
        top = _args.op(op)
        ms = _args.timeout(timeout_in_millis)
        arr, n, pins = _op_array(op_descs)
        status = self._call("transfer_sync", _lib.lib().hixl_transfer_sync,
                            name, int(top), arr, n, ms)
        del pins   # the local objects had to live until the call returned
        return status

    def transfer_async(self, remote_engine: str, op: TransferOp,
                       op_descs: Iterable[OpDescLike],
                       args: Optional[TransferArgs] = None) -> Tuple[int, int]:
        """Post a transfer -> (status, req); poll get_transfer_status.  The
        local objects of op_descs stay referenced until it finishes."""
        name = _args.name(remote_engine, "remote_engine")
        top = _args.op(op)
        arr, n, pins = _op_array(op_descs)
        cargs, keep = _transfer_args(args)
        req = _VP()
        status = self._call("transfer_async", _lib.lib().hixl_transfer_async,
                            name, int(top), arr, n, cargs, ctypes.byref(req))
        del keep   # the notify's bytes had to live until the call returned
        if status == SUCCESS and req.value and pins:
            with self._pins_lock:
                self._req_pins[req.value] = pins
        return status, (req.value or 0)

    # ---- transfers by block table (this package's) -------------------------

    def prepare_blocks(self, base: int, block_size: int, num_blocks: int,
                       stride: int = 0, offsets: Any = None,
                       remote_engine: Optional[str] = None
                       ) -> Tuple[int, Optional[Blocks]]:
        """Prepare a block layout -> (status, Blocks or None).

        Block i is block_size bytes at base + offsets[i], or at
        base + i * stride (stride 0: block_size) without offsets; every
        block must lie inside a registered region of this engine
        (remote_engine None) or of remote_engine (connected, after it
        registered).  Checked now, once."""
        b = _args.integer(base, "base", 1, _args.UINT64_MAX)
        size = _args.integer(block_size, "block_size", 1, _args.UINT64_MAX)
        count = _args.integer(num_blocks, "num_blocks", 1, _args.UINT32_MAX)
        step = _args.integer(stride, "stride", 0, _args.UINT64_MAX)
        name = (None if remote_engine is None else
                _args.name(remote_engine, "remote_engine"))
        layout = CBlockLayout(b, size, count, step, None)
        keep = None
        if offsets is not None:
            ptr, n, keep = id_array(offsets, "offsets", ctypes.c_uint64, 64)
            if n != count:
                raise ValueError("offsets has %d entries for %d blocks" %
                                 (n, count))
            layout.offsets = ptr
        handle = _VP()
        status = self._call("prepare_blocks", _lib.lib().hixl_blocks_prepare,
                            name, ctypes.byref(layout), ctypes.byref(handle))
        del keep   # the library copied the offsets
        if status != SUCCESS or not handle.value:
            return status, None
        blocks = Blocks(self, handle.value, count, size,
                        remote_engine if name is not None else None)
        with self._pins_lock:
            self._blocks[handle.value] = blocks
        return status, blocks

    def _release_blocks(self, blocks: Blocks) -> int:
        with self._pins_lock:
            known = self._blocks.pop(blocks.handle, None) is blocks
        if not known:
            return self._check("release_blocks", PARAM_INVALID)
        handle, blocks.handle = blocks.handle, 0
        return self._call("release_blocks", _lib.lib().hixl_blocks_release,
                          _VP(handle))

    def transfer_blocks_async(self, remote_engine: str, op: TransferOp,
                              local: Blocks, local_ids: Any, remote: Blocks,
                              remote_ids: Any,
                              args: Optional[TransferArgs] = None
                              ) -> Tuple[int, int]:
        """Post a transfer of blocks by id -> (status, req): local block
        local_ids[k] and remote block remote_ids[k] for each k (arrays of
        equal length: numpy, torch, array.array or lists of ints).  Poll
        or wait on req as for transfer_async."""
        name = _args.name(remote_engine, "remote_engine")
        top = _args.op(op)
        for what, b in (("local", local), ("remote", remote)):
            if not isinstance(b, Blocks):
                raise TypeError("%s must be a Blocks (prepare_blocks), got "
                                "%s" % (what, type(b).__name__))
        lp, ln, lkeep = id_array(local_ids, "local_ids")
        rp, rn, rkeep = id_array(remote_ids, "remote_ids")
        if ln != rn:
            raise ValueError("local_ids has %d ids, remote_ids %d" % (ln, rn))
        cargs, keep = _transfer_args(args)
        req = _VP()
        status = self._call("transfer_blocks_async",
                            _lib.lib().hixl_transfer_blocks_async, name,
                            int(top), _VP(local.handle or None), lp,
                            _VP(remote.handle or None), rp, ln, cargs,
                            ctypes.byref(req))
        del lkeep, rkeep, keep   # copied by the call
        return status, (req.value or 0)

    def get_transfer_status(self, req: int) -> Tuple[int, TransferStatus]:
        """-> (status, TransferStatus); a finished request is released (and
        so are its local objects).  Any error reports TransferStatus.FAILED,
        as hixl's binding does; req 0 is FAILED."""
        r = _args.integer(req, "req", 0, _args.SIZE_MAX)
        st = ctypes.c_int(int(TransferStatus.FAILED))
        if r == 0:
            return self._check("get_transfer_status",
                               FAILED), TransferStatus.FAILED
        status = self._call("get_transfer_status",
                            _lib.lib().hixl_get_transfer_status,
                            _VP(r or None), ctypes.byref(st))
        state = TransferStatus(st.value) if status == SUCCESS else \
            TransferStatus.FAILED
        if status == SUCCESS and state != TransferStatus.WAITING:
            with self._pins_lock:
                self._req_pins.pop(r, None)
        return status, state

    def get_all_transfer_status(
            self, args: Optional[GetTransferStatusArgs] = None
    ) -> Tuple[int, List[TransferResult]]:
        """-> (status, [TransferResult]): this engine's async requests,
        oldest first, each with the user_data its TransferArgs gave; those
        reported finished are released.  args: GetTransferStatusArgs
        (default: no limit, WAITING ones included)."""
        if args is None:
            args = GetTransferStatusArgs()
        if not isinstance(args, GetTransferStatusArgs):
            raise TypeError("args must be a GetTransferStatusArgs, got %s" %
                            type(args).__name__)
        ptr = ctypes.POINTER(CTransferResult)()
        count = _SZ(0)
        lib = _lib.lib()
        status = self._call("get_all_transfer_status",
                            lib.hixl_get_all_transfer_status,
                            args.max_query_count,
                            1 if args.skip_waiting else 0,
                            ctypes.byref(ptr), ctypes.byref(count))
        out: List[TransferResult] = []
        if status != SUCCESS:
            return status, out
        try:
            for i in range(count.value):
                r = ptr[i]
                state = TransferStatus(r.status)
                out.append(TransferResult._of(r.req or 0, r.user_data or 0,
                                              state))
                if state != TransferStatus.WAITING:
                    with self._pins_lock:
                        self._req_pins.pop(r.req or 0, None)
        finally:
            if count.value:
                lib.hixl_release_transfer_results(ptr, count)
        return status, out

    def connect_async(self, remote_engine: str,
                      timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        """Connect in the background; follow it with
        get_async_connect_status."""
        return self._call("connect_async", _lib.lib().hixl_connect_async,
                          _args.name(remote_engine, "remote_engine"),
                          _args.timeout(timeout_in_millis))

    def disconnect_async(self, remote_engine: str,
                         timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        """Disconnect in the background; the remote's async status becomes
        NOT_CONNECT when it is done."""
        return self._call("disconnect_async",
                          _lib.lib().hixl_disconnect_async,
                          _args.name(remote_engine, "remote_engine"),
                          _args.timeout(timeout_in_millis))

    def get_async_connect_status(
            self, remote_engine: str) -> Tuple[int, AsyncConnectStatus]:
        """-> (status, AsyncConnectStatus); NOT_CONNECT for a remote
        without async operations."""
        st = ctypes.c_int(int(AsyncConnectStatus.NOT_CONNECT))
        status = self._call("get_async_connect_status",
                            _lib.lib().hixl_get_async_connect_status,
                            _args.name(remote_engine, "remote_engine"),
                            ctypes.byref(st))
        if status != SUCCESS:
            return status, AsyncConnectStatus.NOT_CONNECT
        return status, AsyncConnectStatus(st.value)

    def get_all_async_connect_status(
            self) -> Tuple[int, Dict[str, AsyncConnectStatus]]:
        """-> (status, {remote: AsyncConnectStatus}) of every remote whose
        async status is not NOT_CONNECT."""
        ptr = ctypes.POINTER(CAsyncEntry)()
        count = _SZ(0)
        lib = _lib.lib()
        status = self._call("get_all_async_connect_status",
                            lib.hixl_get_all_async_connect_status,
                            ctypes.byref(ptr), ctypes.byref(count))
        out: Dict[str, AsyncConnectStatus] = {}
        if status != SUCCESS:
            return status, out
        try:
            for i in range(count.value):
                out[_s(ptr[i].remote)] = AsyncConnectStatus(ptr[i].status)
        finally:
            if count.value:
                lib.hixl_release_async_connect_status(ptr, count)
        return status, out

    def send_notify(self, remote_engine: str, notify: NotifyDesc,
                    timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        """Send NotifyDesc(name, notify_msg) to a connected peer."""
        if not isinstance(notify, NotifyDesc):
            raise TypeError("notify must be a NotifyDesc, got %s" %
                            type(notify).__name__)
        name = _args.name(remote_engine, "remote_engine")
        msg = notify.notify_msg_bytes
        nd = CNotifyDesc(_args.name(notify.name, "notify.name"),
                         ctypes.cast(ctypes.c_char_p(msg), _VP), len(msg))
        return self._call("send_notify", _lib.lib().hixl_send_notify, name,
                          ctypes.byref(nd), _args.timeout(timeout_in_millis))

    def get_notifies(self) -> Tuple[int, List[NotifyDesc]]:
        """Take every notify received so far -> (status, [NotifyDesc])."""
        ptr = ctypes.POINTER(CNotify)()
        count = _SZ(0)
        lib = _lib.lib()
        status = self._call("get_notifies", lib.hixl_get_notifies,
                            ctypes.byref(ptr), ctypes.byref(count))
        out: List[NotifyDesc] = []
        if status != SUCCESS:
            return status, out
        try:
            for i in range(count.value):
                n = ptr[i]
                raw = ctypes.string_at(n.msg, n.msg_len) if n.msg_len else b""
                out.append(NotifyDesc(_s(n.name), _s(raw), _s(n.remote)))
        finally:
            if count.value:
                lib.hixl_release_notifies(ptr, count)
        return status, out

    # ---- libhixl-ucx extensions ----------------------------------------

    def alloc_mem(self, length: int,
                  mem_type: MemType = MEM_HOST) -> Tuple[int, int, int]:
        """Allocate and register -> (status, addr, handle).

        Allocate memory peers write into here: on one host UCX reaches it
        through shared memory.  deregister_mem(handle) frees it.  addr is
        an :class:`Allocation`: the address as an int, and views of the
        memory (memoryview, .numpy(), .torch()) that refuse use after
        deregistration or finalize (0 when the call failed).
        """
        n = _args.integer(length, "length", 1, _args.SIZE_MAX)
        mtype = _args.mem_type(mem_type)
        addr = _VP()
        handle = _VP()
        status = self._call("alloc_mem", _lib.lib().hixl_alloc_mem, n,
                            int(mtype), ctypes.byref(addr),
                            ctypes.byref(handle))
        if status != SUCCESS or not addr.value:
            return status, 0, (handle.value or 0)
        alloc = Allocation(addr.value, n, handle.value)
        self._allocs[handle.value] = alloc
        return status, alloc, handle.value

    def mem_warm_wait(self, timeout_in_millis: int = -1) -> int:
        """Wait until the memory is warm that the first transfers touch.

        The engine writes every page of alloc_mem's memory once in the
        background, and fills the page tables of the peers' memory mapped
        into this process (shared memory on one host) as they announce it:
        until then a first transfer pays a page fault per page (a 512 MiB
        request right after connect ran several times slower than the
        next).  Call it after connect where the first request should run
        at full speed.  SUCCESS when nothing is being warmed, TIMEOUT when
        something still is after timeout_in_millis (-1: no limit).
        """
        return self._call("mem_warm_wait", _lib.lib().hixl_mem_warm_wait,
                          _args.integer(timeout_in_millis,
                                        "timeout_in_millis", -1,
                                        _args.INT32_MAX))

    def flush_layer(self, remote_engine: str, stream: int, generation: int,
                    layer: int) -> int:
        """Declare layer `layer` of (stream, generation) posted to remote."""
        return self._call("flush_layer", _lib.lib().hixl_flush_layer,
                          _args.name(remote_engine, "remote_engine"),
                          _args.integer(stream, "stream", 0,
                                        _args.UINT32_MAX),
                          _args.integer(generation, "generation", 0,
                                        _args.UINT64_MAX),
                          _args.integer(layer, "layer", 0, _args.UINT32_MAX))

    def wait_layer(self, source_engine: str, stream: int, generation: int,
                   layer: int,
                   timeout_in_millis: int = DEFAULT_TIMEOUT_MS) -> int:
        """Wait until source_engine flushed (stream, generation, layer)."""
        return self._call("wait_layer", _lib.lib().hixl_wait_layer,
                          _args.name(source_engine, "source_engine"),
                          _args.integer(stream, "stream", 0,
                                        _args.UINT32_MAX),
                          _args.integer(generation, "generation", 0,
                                        _args.UINT64_MAX),
                          _args.integer(layer, "layer", 0, _args.UINT32_MAX),
                          _args.timeout(timeout_in_millis))

    def test_layer(self, source_engine: str, stream: int, generation: int,
                   layer: int) -> Tuple[int, bool]:
        """-> (status, ready): non-blocking wait_layer."""
        ready = ctypes.c_int(0)
        status = self._call("test_layer", _lib.lib().hixl_test_layer,
                            _args.name(source_engine, "source_engine"),
                            _args.integer(stream, "stream", 0,
                                          _args.UINT32_MAX),
                            _args.integer(generation, "generation", 0,
                                          _args.UINT64_MAX),
                            _args.integer(layer, "layer", 0,
                                          _args.UINT32_MAX),
                            ctypes.byref(ready))
        return status, bool(ready.value)

    def _close_allocs(self, engine: int) -> None:
        """Before finalize frees alloc_mem's memory: no view may outlive
        it (BufferError and the engine kept while one is exported)."""
        try:
            close_all(self._allocs.values())
        except BufferError:
            self._engine = engine
            raise
        for alloc in self._allocs.values():
            alloc._mark_released()
        self._allocs.clear()

    def export_mem(self, handles: Any) -> bytes:
        """The description of registered regions (a handle or a list of
        them; region i of the importer is handles[i]) as bytes to send to
        a peer.  Raises HixlError on errors."""
        self._gate.enter()
        try:
            return export_mem(self._engine, handles)
        finally:
            self._gate.leave()

    def import_mem(self, data: Any) -> RemoteMemory:
        """A peer's export_mem bytes -> RemoteMemory, whose addr(region,
        offset, length) and op_desc(local, region, offset) give checked
        remote addresses.  Raises HixlError on malformed bytes."""
        self._gate.enter()
        try:
            return RemoteMemory(self._engine, data)
        finally:
            self._gate.leave()

    def engine_name(self) -> str:
        """The name peers use ("ip:port" with the real port), or ""."""
        self._gate.enter()
        try:
            if self._engine is None:
                return ""
            return _s(_lib.lib().hixl_engine_name(self._engine))
        finally:
            self._gate.leave()

    def progress(self) -> int:
        """Drive the engine once (only with hixl.ProgressThread=0)."""
        self._gate.enter()
        try:
            if self._engine is None:
                return 0
            return int(_lib.lib().hixl_engine_progress(self._engine))
        finally:
            self._gate.leave()

    @staticmethod
    def last_error() -> str:
        return last_error()
