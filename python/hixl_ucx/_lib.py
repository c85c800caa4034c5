# SPDX-License-Identifier: BSD-3-Clause
"""Finding and loading libhixl-ucx.

The package is pure Python; the C library is installed separately
(``make install``, or a distribution package).  It is looked for, in order:

1. an explicit path: ``hixl_ucx.load_library(path)`` before the first call,
   else the environment variable ``HIXL_UCX_LIB``.  A path given either way
   must load: if it does not, that is the error (no quiet fallback to
   another copy);
2. the directory ``make install`` put it in (``_libdir.py``, written by the
   installation of this module from the libhixl-ucx tree);
3. ``pkg-config --variable=libdir hixl-ucx`` (so ``PKG_CONFIG_PATH`` set for
   a custom prefix works here too);
4. the system's search: ``ctypes.util.find_library("hixl-ucx")``, then
   ``libhixl-ucx.so.0`` through the dynamic loader (``LD_LIBRARY_PATH``,
   ``ldconfig``'s cache).

The library is loaded on first use, not at import, so ``import hixl_ucx``
works (for documentation, type checking) where it is not installed; the
first call then raises :class:`LibraryNotFoundError` listing every place it
looked.
"""

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import threading
from typing import List, Optional, Tuple

from ._ctypes import (CAsyncEntry, CMemDesc, CNotify, CNotifyDesc, COpDesc,
                      COption, CTransferArgs, CTransferResult)
from ._logging import LOG_FN, install as _install_logging

SONAME = "libhixl-ucx.so.0"


class LibraryNotFoundError(OSError):
    """libhixl-ucx could not be loaded; the message says where it looked."""


_VP = ctypes.c_void_p
_ST = ctypes.c_int          # hixl_status_t (an enum)
_I32 = ctypes.c_int32
_U32 = ctypes.c_uint32
_U64 = ctypes.c_uint64
_SZ = ctypes.c_size_t
_STR = ctypes.c_char_p
_P = ctypes.POINTER

PROTOTYPES = {
    "hixl_initialize": (_ST, [_STR, _P(COption), _SZ, _P(_VP)]),
    "hixl_finalize": (_ST, [_VP]),
    "hixl_engine_name": (_STR, [_VP]),
    "hixl_register_mem": (_ST, [_VP, _P(CMemDesc), ctypes.c_int, _P(_VP)]),
    "hixl_alloc_mem": (_ST, [_VP, _SZ, ctypes.c_int, _P(_VP), _P(_VP)]),
    "hixl_deregister_mem": (_ST, [_VP, _VP]),
    "hixl_connect": (_ST, [_VP, _STR, _I32]),
    "hixl_disconnect": (_ST, [_VP, _STR, _I32]),
    "hixl_transfer_sync": (_ST, [_VP, _STR, ctypes.c_int, _P(COpDesc), _SZ,
                                 _I32]),
    "hixl_transfer_async": (_ST, [_VP, _STR, ctypes.c_int, _P(COpDesc), _SZ,
                                  _P(CTransferArgs), _P(_VP)]),
    "hixl_get_transfer_status": (_ST, [_VP, _VP, _P(ctypes.c_int)]),
    "hixl_blocks_prepare": (_ST, [_VP, _STR, _VP, _P(_VP)]),
    "hixl_blocks_release": (_ST, [_VP, _VP]),
    "hixl_transfer_blocks_async": (_ST, [_VP, _STR, ctypes.c_int, _VP,
                                         _P(_U32), _VP, _P(_U32), _SZ,
                                         _P(CTransferArgs), _P(_VP)]),
    "hixl_get_all_transfer_status": (_ST, [_VP, _U32, ctypes.c_int,
                                           _P(_P(CTransferResult)),
                                           _P(_SZ)]),
    "hixl_release_transfer_results": (None, [_P(CTransferResult), _SZ]),
    "hixl_connect_async": (_ST, [_VP, _STR, _I32]),
    "hixl_disconnect_async": (_ST, [_VP, _STR, _I32]),
    "hixl_get_async_connect_status": (_ST, [_VP, _STR, _P(ctypes.c_int)]),
    "hixl_get_all_async_connect_status": (_ST, [_VP, _P(_P(CAsyncEntry)),
                                                _P(_SZ)]),
    "hixl_release_async_connect_status": (None, [_P(CAsyncEntry), _SZ]),
    "hixl_get_capability": (_ST, [_I32, _P(_I32)]),
    "hixl_get_stats": (_ST, [_VP, _VP]),
    "hixl_metrics_text": (_SZ, [_VP, _STR, _SZ]),
    "hixl_metrics_address": (_STR, [_VP]),
    "hixl_mem_warm_wait": (_ST, [_VP, _I32]),
    "hixl_flush_layer": (_ST, [_VP, _STR, _U32, _U64, _U32]),
    "hixl_wait_layer": (_ST, [_VP, _STR, _U32, _U64, _U32, _I32]),
    "hixl_test_layer": (_ST, [_VP, _STR, _U32, _U64, _U32, _P(ctypes.c_int)]),
    "hixl_send_notify": (_ST, [_VP, _STR, _P(CNotifyDesc), _I32]),
    "hixl_get_notifies": (_ST, [_VP, _P(_P(CNotify)), _P(_SZ)]),
    "hixl_release_notifies": (None, [_P(CNotify), _SZ]),
    "hixl_wait_transfers": (_ST, [_VP, _P(_VP), _SZ, ctypes.c_int, _I32,
                                  _P(ctypes.c_int), _P(_SZ)]),
    "hixl_wait_notifies": (_ST, [_VP, _I32, _P(_P(CNotify)), _P(_SZ)]),
    "hixl_get_event_fd": (_ST, [_VP, _P(ctypes.c_int)]),
    "hixl_arm": (_ST, [_VP, _P(ctypes.c_int)]),
    "hixl_engine_progress": (ctypes.c_uint, [_VP]),
    "hixl_export_mem": (_ST, [_VP, _P(_VP), _SZ, _VP, _P(_SZ)]),
    "hixl_import_mem": (_ST, [_VP, _VP, _SZ, _P(_VP)]),
    "hixl_remote_mem_free": (None, [_VP]),
    "hixl_remote_mem_count": (_SZ, [_VP]),
    "hixl_remote_mem_engine": (_STR, [_VP]),
    "hixl_remote_mem_region": (_ST, [_VP, _SZ, _P(_U64), _P(ctypes.c_int)]),
    "hixl_remote_mem_addr": (_ST, [_VP, _SZ, _U64, _U64, _P(_U64)]),
    "hixl_strerror": (_STR, [_ST]),
    "hixl_last_error": (_STR, []),
    "hixl_version": (_STR, []),
    "hixl_set_log_handler": (_ST, [LOG_FN, _VP]),
}

_lock = threading.Lock()
_loaded: Optional[Tuple[ctypes.CDLL, str]] = None


def _pkg_config_libdir() -> Optional[str]:
    exe = shutil.which("pkg-config")
    if exe is None:
        return None
    try:
        res = subprocess.run([exe, "--variable=libdir", "hixl-ucx"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = res.stdout.decode(errors="replace").strip()
    return libdir if res.returncode == 0 and libdir else None


def _open(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)   # AttributeError: not libhixl-ucx
        fn.restype = restype
        fn.argtypes = argtypes
    _install_logging(lib)
    return lib


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _file_of(lib: ctypes.CDLL, name: str) -> str:
    """The file the dynamic loader took for a library opened by name (the
    copy ldconfig's cache or LD_LIBRARY_PATH gave), so that
    ``hixl_ucx.library`` always says which copy is in use; name itself
    where the C library cannot tell (no dladdr)."""
    if os.path.isabs(name):
        return name
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except AttributeError:
        return name
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    dladdr.restype = ctypes.c_int
    info = _DlInfo()
    addr = ctypes.cast(lib.hixl_strerror, ctypes.c_void_p)
    if dladdr(addr, ctypes.byref(info)) == 0 or not info.dli_fname:
        return name
    return os.fsdecode(info.dli_fname)


def _open_explicit(path: str, how: str) -> Tuple[ctypes.CDLL, str]:
    if not os.path.exists(path):
        raise LibraryNotFoundError(
            "hixl_ucx: %s names %s, which does not exist (it is not "
            "replaced by another copy: fix or unset it)" % (how, path))
    try:
        return _open(path), path
    except (OSError, AttributeError) as exc:
        raise LibraryNotFoundError("hixl_ucx: %s names %s, which does not "
                                   "load as libhixl-ucx: %s" % (how, path,
                                                                exc))


def _search() -> Tuple[ctypes.CDLL, str]:
    tried: List[str] = []
    candidates: List[Tuple[str, str]] = []
    try:
        from . import _libdir  # written by `make install`
        candidates.append((os.path.join(_libdir.LIBDIR, SONAME),
                           "make install's libdir"))
    except ImportError:
        tried.append("no make-install libdir (installed with pip)")
    libdir = _pkg_config_libdir()
    if libdir:
        candidates.append((os.path.join(libdir, SONAME), "pkg-config"))
    else:
        tried.append("pkg-config hixl-ucx: not found")
    found = ctypes.util.find_library("hixl-ucx")
    if found:
        candidates.append((found, "ctypes.util.find_library"))
    candidates.append((SONAME, "the dynamic loader's search"))
    for path, how in candidates:
        if os.path.isabs(path) and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (path, how))
            continue
        try:
            lib = _open(path)
        except (OSError, AttributeError) as exc:
            tried.append("%s (%s): %s" % (path, how, exc))
            continue
        return lib, _file_of(lib, path)
    raise LibraryNotFoundError(
        "hixl_ucx: cannot find libhixl-ucx; install it (make install) or "
        "point HIXL_UCX_LIB at libhixl-ucx.so.0.  Tried: " + "; ".join(tried))


def load_library(path: Optional[str] = None) -> str:
    """Load libhixl-ucx now and return the path it came from.

    With ``path``, load exactly that file (an error if it does not load);
    this must come before anything else loads the library.  Without it,
    search as the module documentation says.
    """
    global _loaded
    with _lock:
        if _loaded is not None:
            if path is not None and os.path.realpath(path) != \
                    os.path.realpath(_loaded[1]):
                raise LibraryNotFoundError(
                    "hixl_ucx: libhixl-ucx is already loaded from %s; "
                    "load_library(%r) must come first" % (_loaded[1], path))
            return _loaded[1]
        if path is not None:
            _loaded = _open_explicit(path, "load_library()")
        elif os.environ.get("HIXL_UCX_LIB"):
            _loaded = _open_explicit(os.environ["HIXL_UCX_LIB"],
                                     "HIXL_UCX_LIB")
        else:
            _loaded = _search()
        return _loaded[1]


def lib() -> ctypes.CDLL:
    """The loaded library (loading it on first use)."""
    if _loaded is None:
        load_library()
    assert _loaded is not None
    return _loaded[0]
