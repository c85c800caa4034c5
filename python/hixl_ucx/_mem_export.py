# SPDX-License-Identifier: BSD-3-Clause
"""Exported memory descriptions (hixl_export_mem / hixl_import_mem).

The owner of registered memory describes regions in opaque bytes
(``Hixl.export_mem(handles)``), sends them by any channel (a notify), and
the peer imports them (``Hixl.import_mem(data)`` -> :class:`RemoteMemory`)
to address transfers by (region, offset, length), checked against each
region's size by the C library.  These calls raise :class:`HixlError` on
errors whatever the engine's raise_on_error: a wrong offset must never be
a status that a loop forgets to look at.
"""

import ctypes
from typing import Any, Iterable, List, Optional, Sequence

from . import _args, _lib
from ._constants import SUCCESS, MemType
from ._errors import HixlError, _s, last_error
from ._memory import TransferOpDesc, address_and_length

_VP = ctypes.c_void_p


def _raise(method: str, status: int) -> None:
    if status != SUCCESS:
        raise HixlError(method, status, last_error())


def export_mem(engine: Optional[int], handles: Sequence[int]) -> bytes:
    """The description of the regions behind handles (in that order)."""
    if isinstance(handles, int):
        handles = [handles]
    hs = [_args.integer(h, "handles[%d]" % i, 1, _args.SIZE_MAX)
          for i, h in enumerate(handles)]
    arr = (_VP * max(len(hs), 1))(*hs)
    lib = _lib.lib()
    need = ctypes.c_size_t(0)
    _raise("export_mem", lib.hixl_export_mem(engine, arr, len(hs), None,
                                             ctypes.byref(need)))
    buf = ctypes.create_string_buffer(need.value)
    _raise("export_mem", lib.hixl_export_mem(engine, arr, len(hs), buf,
                                             ctypes.byref(need)))
    return buf.raw[:need.value]


class RemoteMemory:
    """A peer's memory description: ``engine`` (the owner, the remote of
    transfers into it), ``len(rm)`` regions, ``region_len(i)``,
    ``region_type(i)``, and ``addr(region, offset, length)``, the checked
    remote address."""

    def __init__(self, engine: Optional[int], data: Any) -> None:
        raw = bytes(data)
        self._ptr: Optional[int] = None
        out = _VP()
        _raise("import_mem", _lib.lib().hixl_import_mem(
            engine, raw, len(raw), ctypes.byref(out)))
        self._ptr = out.value
        self.engine = _s(_lib.lib().hixl_remote_mem_engine(self._ptr))

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.lib().hixl_remote_mem_free(ptr)

    def __len__(self) -> int:
        return int(_lib.lib().hixl_remote_mem_count(self._ptr))

    def _region(self, region: int):
        n = ctypes.c_uint64(0)
        t = ctypes.c_int(0)
        _raise("region", _lib.lib().hixl_remote_mem_region(
            self._ptr, _args.integer(region, "region", 0, _args.SIZE_MAX),
            ctypes.byref(n), ctypes.byref(t)))
        return n.value, MemType(t.value)

    def region_len(self, region: int) -> int:
        return self._region(region)[0]

    def region_type(self, region: int) -> MemType:
        return self._region(region)[1]

    def addr(self, region: int, offset: int, length: int) -> int:
        """The remote address of [offset, +length) of region; HixlError
        (PARAM_INVALID, naming all three and the region's size) when it
        does not lie inside the region."""
        out = ctypes.c_uint64(0)
        _raise("addr", _lib.lib().hixl_remote_mem_addr(
            self._ptr, _args.integer(region, "region", 0, _args.SIZE_MAX),
            _args.integer(offset, "offset", 0, _args.UINT64_MAX),
            _args.integer(length, "length", 0, _args.UINT64_MAX),
            ctypes.byref(out)))
        return out.value

    def op_desc(self, local: Any, region: int, offset: int,
                length: Optional[int] = None) -> TransferOpDesc:
        """A TransferOpDesc from local memory (an object, or an int address
        with length) to (region, offset); length defaults to the local
        object's size."""
        _, n, _, _ = address_and_length(local, length, "local", "length")
        return TransferOpDesc(local, self.addr(region, offset, n), n)

    def op_descs(self, pieces: Iterable[Sequence[Any]]) -> List[TransferOpDesc]:
        """op_desc for each (local, region, offset[, length])."""
        return [self.op_desc(*p) for p in pieces]

    def __repr__(self) -> str:
        return "RemoteMemory(engine=%r, regions=%d)" % (self.engine,
                                                        len(self))
