# SPDX-License-Identifier: BSD-3-Clause
"""The C structures of <hixl/hixl.h> as ctypes structures.

Field names are the C names, so that test/py/py_layout.py can print the C
compiler's sizeof/offsetof of every field listed here and compare them with
ctypes': the layouts cannot drift from the header unnoticed.
"""

import ctypes
from typing import Dict, Tuple


class COption(ctypes.Structure):
    """hixl_option_t"""

    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class CMemDesc(ctypes.Structure):
    """hixl_mem_desc_t"""

    _fields_ = [("addr", ctypes.c_size_t), ("len", ctypes.c_size_t)]


class COpDesc(ctypes.Structure):
    """hixl_transfer_op_desc_t"""

    _fields_ = [("local_addr", ctypes.c_size_t),
                ("remote_addr", ctypes.c_size_t),
                ("len", ctypes.c_size_t)]


class CNotifyDesc(ctypes.Structure):
    """hixl_notify_desc_t"""

    _fields_ = [("name", ctypes.c_char_p), ("msg", ctypes.c_void_p),
                ("msg_len", ctypes.c_size_t)]


class CNotify(ctypes.Structure):
    """hixl_notify_t"""

    _fields_ = [("remote", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("msg", ctypes.c_void_p), ("msg_len", ctypes.c_size_t)]


class CTransferArgs(ctypes.Structure):
    """hixl_transfer_args_t"""

    _fields_ = [("field_mask", ctypes.c_uint64),
                ("timeout_ms", ctypes.c_int32),
                ("notify", CNotifyDesc),
                ("user_data", ctypes.c_void_p)]


class CTransferResult(ctypes.Structure):
    """hixl_transfer_result_t"""

    _fields_ = [("req", ctypes.c_void_p), ("user_data", ctypes.c_void_p),
                ("status", ctypes.c_int)]


class CAsyncEntry(ctypes.Structure):
    """hixl_async_connect_entry_t"""

    _fields_ = [("remote", ctypes.c_char_p), ("status", ctypes.c_int)]


#: hixl_transfer_args_t field_mask bits (HIXL_TRANSFER_ARG_*)
ARG_TIMEOUT = 1 << 0
ARG_NOTIFY = 1 << 1
ARG_USER_DATA = 1 << 2

#: C type name -> ctypes structure, for the layout test
STRUCTS = {
    "hixl_option_t": COption,
    "hixl_mem_desc_t": CMemDesc,
    "hixl_transfer_op_desc_t": COpDesc,
    "hixl_notify_desc_t": CNotifyDesc,
    "hixl_notify_t": CNotify,
    "hixl_transfer_args_t": CTransferArgs,
    "hixl_transfer_result_t": CTransferResult,
    "hixl_async_connect_entry_t": CAsyncEntry,
}

#: C enum types passed by value; ctypes passes them as c_int
ENUMS = ("hixl_status_t", "hixl_mem_type_t", "hixl_transfer_op_t",
         "hixl_transfer_status_t", "hixl_async_connect_status_t",
         "hixl_feature_t", "hixl_wait_mode_t")
ENUM_CTYPE = ctypes.c_int


def struct_layouts() -> Dict[str, Tuple[int, Dict[str, Tuple[int, int]]]]:
    """{C type: (sizeof, {field: (offsetof, sizeof)})} as ctypes lays them
    out."""
    out = {}
    for cname, cls in STRUCTS.items():
        fields = {}
        for name, ftype in cls._fields_:
            fields[name] = (getattr(cls, name).offset, ctypes.sizeof(ftype))
        out[cname] = (ctypes.sizeof(cls), fields)
    return out
