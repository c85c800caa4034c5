# SPDX-License-Identifier: BSD-3-Clause
"""Argument checks: a wrong type is a TypeError and a value out of range a
ValueError, each naming the argument, before the library is called (ctypes
would otherwise say "invalid literal for int()" or truncate silently)."""

import operator
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._constants import MemType, TransferOp

INT32_MAX = 2 ** 31 - 1
UINT32_MAX = 2 ** 32 - 1
UINT64_MAX = 2 ** 64 - 1
SIZE_MAX = 2 ** 64 - 1


def _typename(value: Any) -> str:
    return type(value).__name__


def integer(value: Any, arg: str, lo: int, hi: int) -> int:
    """An int (or anything with __index__, but not bool) in [lo, hi]."""
    if isinstance(value, bool):
        raise TypeError("%s must be an int, got bool" % arg)
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an int, got %s %r" % (
            arg, _typename(value), value)) from None
    if v < lo or v > hi:
        raise ValueError("%s must be in %d..%d, got %d" % (arg, lo, hi, v))
    return v


def timeout(value: Any, arg: str = "timeout_in_millis") -> int:
    return integer(value, arg, 0, INT32_MAX)


def name(value: Any, arg: str) -> bytes:
    """An engine or notify name: str (or bytes), encoded UTF-8."""
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise TypeError("%s must be a str such as '10.0.0.2:16000', got %s "
                        "%r" % (arg, _typename(value), value))
    return value.encode("utf-8")


def op(value: Any) -> TransferOp:
    """hixl_ucx.READ / WRITE (a TransferOp, or its int value)."""
    if isinstance(value, TransferOp):
        return value
    if isinstance(value, (str, bytes)) or isinstance(value, bool):
        raise TypeError("op must be hixl_ucx.READ or hixl_ucx.WRITE "
                        "(TransferOp), got %s %r" % (_typename(value), value))
    try:
        return TransferOp(integer(value, "op", 0, 1))
    except ValueError:
        raise ValueError("op must be hixl_ucx.READ (0) or hixl_ucx.WRITE (1), "
                         "got %r" % (value,)) from None


def mem_type(value: Any) -> MemType:
    """hixl_ucx.MEM_DEVICE / MEM_HOST (a MemType, or its int value)."""
    if isinstance(value, MemType):
        return value
    if isinstance(value, (str, bytes)) or isinstance(value, bool):
        raise TypeError("mem_type must be hixl_ucx.MEM_HOST or "
                        "hixl_ucx.MEM_DEVICE (MemType), got %s %r" % (
                            _typename(value), value))
    try:
        return MemType(integer(value, "mem_type", 0, 1))
    except ValueError:
        raise ValueError("mem_type must be hixl_ucx.MEM_DEVICE (0) or "
                         "hixl_ucx.MEM_HOST (1), got %r" % (value,)) from None


def options(value: Optional[Mapping[Any, Any]]) -> List[Tuple[bytes, bytes]]:
    """{key: value} of engine options; values may be str, int or bool."""
    if value is None:
        return []
    if not hasattr(value, "items"):
        raise TypeError("options must be a dict of {key: value} strings, got "
                        "%s" % _typename(value))
    out = []
    items: Dict[Any, Any] = dict(value.items())
    for k, v in items.items():
        if not isinstance(k, (str, bytes)):
            raise TypeError("options: key %r must be a str" % (k,))
        if isinstance(v, bool):
            v = "1" if v else "0"
        elif isinstance(v, int):
            v = str(v)
        if not isinstance(v, (str, bytes)):
            raise TypeError("options[%r] must be a str (or int), got %s" % (
                k, _typename(v)))
        out.append((name(k, "options key"), name(v, "options[%r]" % (k,))))
    return out
