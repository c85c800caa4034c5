# SPDX-License-Identifier: BSD-3-Clause
"""Transfers by block table (hixl_blocks_prepare, hixl_transfer_blocks_async).

A paged KV cache moves as block ids: each side's block layout is prepared
once (``Hixl.prepare_blocks``), and a request is two arrays of ids, one
call however many blocks.  Id arrays are numpy arrays (any integer dtype),
torch CPU tensors, ``array.array`` or anything with the buffer protocol,
or plain sequences of ints: no Python object is made per block when the
array already holds 32-bit unsigned ids.
"""

import ctypes
from typing import Any, Optional, Tuple

from . import _args

_U32P = ctypes.POINTER(ctypes.c_uint32)
_U64P = ctypes.POINTER(ctypes.c_uint64)


class CBlockLayout(ctypes.Structure):
    """hixl_block_layout_t"""

    _fields_ = [("base", ctypes.c_uint64),
                ("block_size", ctypes.c_uint64),
                ("num_blocks", ctypes.c_uint64),
                ("stride", ctypes.c_uint64),
                ("offsets", _U64P)]


class Blocks:
    """A prepared block layout of one engine (``Hixl.prepare_blocks``).

    ``remote_engine`` is None for the engine's own memory.  Release it with
    ``release()`` (or use it as a context manager); finalize releases what
    is left."""

    def __init__(self, owner: Any, handle: int, num_blocks: int,
                 block_size: int, remote_engine: Optional[str]) -> None:
        self._owner = owner
        self.handle = handle
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.remote_engine = remote_engine

    def __repr__(self) -> str:
        return "Blocks(%d x %d bytes, %s)" % (
            self.num_blocks, self.block_size,
            self.remote_engine or "local")

    def release(self) -> int:
        """hixl_blocks_release; the layout cannot be used afterwards."""
        return self._owner._release_blocks(self)

    def __enter__(self) -> "Blocks":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.handle:
            self.release()


def _numpy() -> Any:
    try:
        import numpy   # noqa: F401 (optional)
        return numpy
    except ImportError:
        return None


def id_array(ids: Any, arg: str, ctype: Any = ctypes.c_uint32,
             bits: int = 32) -> Tuple[Any, int, Any]:
    """(pointer, count, what keeps the memory alive) for an array of
    unsigned integers of `bits` bits, converted only when it is not one
    already."""
    np = _numpy()
    if isinstance(ids, (str, bytes, bytearray)) or ids is None:
        raise TypeError("%s must be an array of ints, got %s" %
                        (arg, type(ids).__name__))
    if np is not None and not isinstance(ids, (list, tuple, range)):
        try:
            a = np.asarray(ids)
        except Exception:
            a = None
        if a is not None and a.dtype != object:
            if a.ndim != 1:
                a = a.reshape(-1)
            if a.dtype.kind not in "iu":
                raise TypeError("%s must hold integers, got dtype %s" %
                                (arg, a.dtype))
            want = np.uint32 if bits == 32 else np.uint64
            if a.dtype != want:
                if a.size and (a.min() < 0 or int(a.max()) >= 2 ** bits):
                    raise ValueError("%s: ids must be in [0, 2**%d)" %
                                     (arg, bits))
                a = a.astype(want)
            a = np.ascontiguousarray(a)
            return (a.ctypes.data_as(ctypes.POINTER(ctype)), int(a.size), a)
    seq = list(ids)
    for i, v in enumerate(seq):
        _args.integer(v, "%s[%d]" % (arg, i), 0, 2 ** bits - 1)
    arr = (ctype * len(seq))(*seq)
    return (ctypes.cast(arr, ctypes.POINTER(ctype)), len(seq), arr)
