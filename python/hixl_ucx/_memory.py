# SPDX-License-Identifier: BSD-3-Clause
"""Memory the library may use, given as objects or as raw addresses.

Accepted wherever memory is named (register_mem, MemDesc, the local side of
TransferOpDesc):

* an int: a raw address (then the length must be given);
* anything with the buffer protocol: bytearray, memoryview, mmap, array,
  ctypes arrays, numpy arrays... It must be writable (peers and READs write
  into registered memory) and contiguous; read-only or strided buffers are
  refused with a TypeError that says so;
* an object with ``data_ptr()`` and a size: torch tensors and alike.  The
  size is ``nbytes``, else ``numel() * element_size()``; a tensor whose
  ``is_contiguous()`` is False is refused.

What is resolved from an object keeps a reference to it ("pin"): a
bytearray cannot be resized and nothing is freed while the library may
touch its memory (for as long as it is registered, or a transfer is in
flight).
"""

import ctypes
from typing import Any, Optional, Tuple

from . import _args
from ._constants import MEM_DEVICE, MEM_HOST, MemType

_MEMORY_KINDS = ("an address (int), a writable contiguous buffer "
                 "(bytearray, memoryview, mmap, numpy array, ...) or an "
                 "object with data_ptr() and nbytes (a torch tensor)")


class _Span:
    """An address, its length, and what keeps the memory alive."""

    __slots__ = ("addr", "nbytes", "pin", "device")

    def __init__(self, addr: int, nbytes: int, pin: Any,
                 device: bool = False) -> None:
        self.addr = addr
        self.nbytes = nbytes
        self.pin = pin
        self.device = device


def _data_ptr_span(obj: Any, arg: str) -> _Span:
    contiguous = getattr(obj, "is_contiguous", None)
    if callable(contiguous) and not contiguous():
        raise TypeError("%s: the %s is not contiguous; pass a contiguous "
                        "one (.contiguous())" % (arg, type(obj).__name__))
    nbytes = getattr(obj, "nbytes", None)
    if callable(nbytes):
        nbytes = nbytes()
    if not isinstance(nbytes, int):
        numel = getattr(obj, "numel", None)
        esize = getattr(obj, "element_size", None)
        if callable(numel) and callable(esize):
            nbytes = int(numel()) * int(esize())
        else:
            raise TypeError("%s: %s has data_ptr() but no size (nbytes, or "
                            "numel() and element_size())" % (
                                arg, type(obj).__name__))
    addr = _args.integer(obj.data_ptr(), "%s.data_ptr()" % arg, 0,
                         _args.SIZE_MAX)
    device = getattr(obj, "device", None)
    on_device = getattr(device, "type", "cpu") not in ("cpu", None)
    return _Span(addr, int(nbytes), obj, on_device)


def _buffer_span(obj: Any, arg: str) -> _Span:
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError("%s must be %s, got %s" % (
            arg, _MEMORY_KINDS, type(obj).__name__)) from None
    what = type(obj).__name__
    if view.readonly:
        raise TypeError("%s: the %s is read-only; registered memory must be "
                        "writable (use a bytearray, not bytes)" % (arg, what))
    if not view.contiguous:
        raise TypeError("%s: the %s is not contiguous (strided); pass a "
                        "contiguous copy (numpy.ascontiguousarray)" % (arg,
                                                                        what))
    if view.nbytes == 0:
        raise ValueError("%s: the %s is empty" % (arg, what))
    if view.c_contiguous:
        cells = ctypes.c_char * view.nbytes
        try:
            # a 'B' view exports any C-contiguous format as plain bytes
            cell = cells.from_buffer(view.cast("B"))
        except TypeError:
            # formats memoryview cannot cast (ctypes', numpy records): ask
            # the object itself for a simple writable buffer
            try:
                cell = cells.from_buffer(obj)
            except (TypeError, ValueError) as exc:
                raise TypeError("%s: cannot take the address of the %s: %s"
                                % (arg, what, exc)) from None
        return _Span(ctypes.addressof(cell), view.nbytes, (view, cell))
    # Fortran order: one block, but memoryview cannot flatten it; numpy
    # says where it starts
    iface = getattr(obj, "__array_interface__", None)
    if isinstance(iface, dict) and isinstance(iface.get("data"), tuple):
        return _Span(int(iface["data"][0]), view.nbytes, (view, obj))
    raise TypeError("%s: the %s is not C-contiguous; pass a C-contiguous "
                    "copy" % (arg, what))


def span(obj: Any, arg: str) -> _Span:
    """Resolve an object (not an int) to its memory."""
    if isinstance(obj, (bool, float, str, bytes)) or obj is None:
        if isinstance(obj, bytes):
            raise TypeError("%s: bytes are read-only; registered memory must "
                            "be writable (use a bytearray)" % arg)
        raise TypeError("%s must be %s, got %s" % (arg, _MEMORY_KINDS,
                                                   type(obj).__name__))
    if callable(getattr(obj, "data_ptr", None)):
        return _data_ptr_span(obj, arg)
    return _buffer_span(obj, arg)


def address_and_length(obj: Any, length: Optional[int], arg: str,
                       len_arg: str) -> Tuple[int, int, Any, bool]:
    """(address, length, pin, on_device) of obj: an int address with a
    length, or an object whose size is the default length (a given length
    must fit in it)."""
    nbytes = getattr(obj, "_nbytes", None)   # alloc_mem's Allocation
    if isinstance(obj, int) and isinstance(nbytes, int) and length is None:
        length = obj.nbytes   # ValueError once deregistered
    if isinstance(obj, int) and not isinstance(obj, bool):
        addr = _args.integer(obj, arg, 0, _args.SIZE_MAX)
        if length is None:
            raise TypeError("%s is required when %s is an int address" % (
                len_arg, arg))
        return addr, _args.integer(length, len_arg, 0, _args.SIZE_MAX), \
            None, False
    s = span(obj, arg)
    if length is None:
        return s.addr, s.nbytes, s.pin, s.device
    n = _args.integer(length, len_arg, 0, _args.SIZE_MAX)
    if n > s.nbytes:
        raise ValueError("%s is %d bytes but %s holds %d" % (
            len_arg, n, arg, s.nbytes))
    return s.addr, n, s.pin, s.device


def _sized(obj: Any) -> bool:
    """An int that knows its length (alloc_mem's Allocation)."""
    return isinstance(getattr(obj, "_nbytes", None), int)


def buffer_address(obj: Any) -> int:
    """Address of a writable buffer or data_ptr() object (see the module
    documentation).  Keep the object alive while the library uses it."""
    if isinstance(obj, ctypes._SimpleCData) or isinstance(
            obj, (ctypes.Array, ctypes.Structure, ctypes.Union)):
        return ctypes.addressof(obj)
    return span(obj, "buffer_address(obj)").addr


# ---- descriptors -------------------------------------------------------------


class MemDesc:
    """A region to register (hixl::MemDesc): ``addr`` and ``len``.

    ``MemDesc(buf)`` takes a buffer or data_ptr() object and its size;
    ``MemDesc(buf, n)`` its first n bytes; ``MemDesc(addr, n)`` a raw
    address.  An object given here stays referenced by the MemDesc.
    """

    __slots__ = ("addr", "len", "_pin", "_device")

    def __init__(self, addr: Any = 0, len: Optional[int] = None) -> None:  # noqa: A002 (hixl's name)
        if isinstance(addr, int) and len is None and not _sized(addr):
            len = 0   # hixl's default MemDesc(): an empty descriptor
        self.addr, self.len, self._pin, self._device = address_and_length(
            addr, len, "MemDesc addr", "MemDesc len")

    def default_mem_type(self) -> MemType:
        """MEM_DEVICE for a tensor on an accelerator, else MEM_HOST."""
        return MEM_DEVICE if self._device else MEM_HOST

    def __repr__(self) -> str:
        return "MemDesc(addr=%#x, len=%d)" % (self.addr, self.len)


class TransferOpDesc:
    """One piece of a transfer (hixl::TransferOpDesc).

    ``local_addr`` is an int address or an object (its memory, which must
    lie in a region registered here); ``remote_addr`` an int address in the
    remote engine's registered memory; ``len`` defaults to the size of a
    local object.
    """

    __slots__ = ("local_addr", "remote_addr", "len", "_pin")

    def __init__(self, local_addr: Any = 0, remote_addr: int = 0,
                 len: Optional[int] = None) -> None:  # noqa: A002
        if isinstance(local_addr, int) and len is None and not _sized(
                local_addr):
            len = 0
        self.local_addr, self.len, self._pin, _ = address_and_length(
            local_addr, len, "TransferOpDesc local_addr", "TransferOpDesc len")
        if not isinstance(remote_addr, int) or isinstance(remote_addr, bool):
            raise TypeError("TransferOpDesc remote_addr must be an int "
                            "address in the remote engine's memory, got %s" %
                            type(remote_addr).__name__)
        self.remote_addr = _args.integer(remote_addr,
                                         "TransferOpDesc remote_addr", 0,
                                         _args.SIZE_MAX)

    def __repr__(self) -> str:
        return "TransferOpDesc(local_addr=%#x, remote_addr=%#x, len=%d)" % (
            self.local_addr, self.remote_addr, self.len)


def _to_bytes(value: Any, arg: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("%s must be str or bytes, got %s" % (
        arg, type(value).__name__))


class NotifyDesc:
    """A notify: ``name`` (str) and ``notify_msg`` (str or bytes).

    notify_msg may carry any bytes.  A received notify's notify_msg is a
    str (bytes that are not UTF-8 decode with surrogateescape, so nothing is
    lost); ``notify_msg_bytes`` gives the bytes, ``remote`` the sender's
    engine name.
    """

    __slots__ = ("name", "notify_msg", "remote")

    def __init__(self, name: str = "", notify_msg: Any = "",
                 remote: Optional[str] = None) -> None:
        self.name = name
        self.notify_msg = notify_msg
        self.remote = remote

    @property
    def notify_msg_bytes(self) -> bytes:
        return _to_bytes(self.notify_msg, "NotifyDesc notify_msg")

    def __repr__(self) -> str:
        return "NotifyDesc(name=%r, notify_msg=%r)" % (self.name,
                                                        self.notify_msg)


class TransferArgs:
    """Optional arguments of transfer_async.

    ``user_data`` (an int, as in hixl's binding; default 0) comes back with
    the request's status from get_all_transfer_status.  libhixl-ucx adds
    timeout_in_millis (the request's deadline; None: the engine's
    hixl.TransferTimeoutMs) and notify (a NotifyDesc the remote receives
    only once every byte of the transfer is in its memory).
    """

    __slots__ = ("_user_data", "timeout_in_millis", "notify")

    def __init__(self, user_data: int = 0,
                 timeout_in_millis: Optional[int] = None,
                 notify: Optional[NotifyDesc] = None) -> None:
        self.user_data = user_data
        self.timeout_in_millis = timeout_in_millis
        self.notify = notify

    @property
    def user_data(self) -> int:
        return self._user_data

    @user_data.setter
    def user_data(self, value: int) -> None:
        self._user_data = _args.integer(value, "TransferArgs user_data", 0,
                                        _args.SIZE_MAX)
