# SPDX-License-Identifier: BSD-3-Clause
"""Blocking waits and the event fd: Hixl's methods over hixl_wait_transfers,
hixl_wait_notifies, hixl_get_event_fd and hixl_arm.

Unlike hixl's own methods these raise on failure (HixlError;
HixlTimeoutError, also a TimeoutError, when time runs out), whatever
``raise_on_error`` says: they are this package's, with no hixl convention
to keep.  The thread sleeps in the library (no polling) with the GIL
released.  A wait is cut into library calls of at most _SLICE_MS so that
finalize() from another thread, which waits for calls in flight, ends it
within one slice instead of freeing the engine under it.
"""

import ctypes
import time
from typing import Any, List, Optional, Sequence

from . import _args, _lib
from ._constants import FAILED, SUCCESS, TIMEOUT, TransferStatus, WaitMode
from ._ctypes import CNotify
from ._errors import HixlError, HixlTimeoutError, _s, last_error
from ._memory import NotifyDesc

_VP = ctypes.c_void_p
_SZ = ctypes.c_size_t
_SLICE_MS = 200


def _timeout_ms(value: Optional[int]) -> Optional[int]:
    if value is None:
        return None
    return _args.integer(value, "timeout_ms", 0, 2 ** 31 - 1)


def _left_ms(end: Optional[float]) -> int:
    """The next slice: at most _SLICE_MS, at most what is left."""
    if end is None:
        return _SLICE_MS
    left = int((end - time.monotonic()) * 1000.0 + 0.999)
    return max(0, min(_SLICE_MS, left))


def notify_list(ptr: Any, count: int) -> List[NotifyDesc]:
    """NotifyDesc of every entry of a hixl_notify_t array."""
    out = []
    for i in range(count):
        n = ptr[i]
        raw = ctypes.string_at(n.msg, n.msg_len) if n.msg_len else b""
        out.append(NotifyDesc(_s(n.name), _s(raw), _s(n.remote)))
    return out


class WaitMixin:
    """Hixl's blocking waits and event fd (mixed into Hixl)."""

    def _wait_call(self, method: str, fn: Any, *args: Any) -> int:
        self._gate.enter()
        try:
            if self._engine is None:
                raise HixlError(method, FAILED, "the engine is not "
                                "initialized, or was finalized")
            return int(fn(self._engine, *args))
        finally:
            self._gate.leave()

    def wait_transfers(self, reqs: Sequence[int],
                       mode: WaitMode = WaitMode.ALL,
                       timeout_ms: Optional[int] = None
                       ) -> List[TransferStatus]:
        """Block until every request (mode ALL) or one (ANY) has ended ->
        [TransferStatus] in the order of reqs: COMPLETED, FAILED or TIMEOUT
        for those reported (and released) by this call, WAITING for those
        still in flight (valid, wait again).  timeout_ms None: no deadline.
        Raises HixlTimeoutError (with .statuses) when time runs out first,
        HixlError on a bad request or a finalized engine."""
        handles = [_args.integer(r, "reqs[%d]" % i, 1, _args.SIZE_MAX)
                   for i, r in enumerate(reqs)]
        if not handles:
            raise ValueError("reqs is empty")
        if isinstance(mode, bool) or not isinstance(mode, int) or \
                int(mode) not in (0, 1):
            raise TypeError("mode must be hixl_ucx.WaitMode.ALL or .ANY, got "
                            "%r" % (mode,))
        tmo = _timeout_ms(timeout_ms)
        end = None if tmo is None else time.monotonic() + tmo / 1000.0
        statuses = [TransferStatus.WAITING] * len(handles)
        pending = list(range(len(handles)))
        lib = _lib.lib()
        while True:
            arr = (_VP * len(pending))(*[handles[i] for i in pending])
            st = (ctypes.c_int * len(pending))()
            status = self._wait_call("wait_transfers", lib.hixl_wait_transfers,
                                     arr, len(pending), int(mode),
                                     _left_ms(end), st, None)
            message = last_error() if status != SUCCESS else ""
            for k, i in enumerate(pending):
                if st[k] != TransferStatus.WAITING:
                    statuses[i] = TransferStatus(st[k])
                    with self._pins_lock:
                        self._req_pins.pop(handles[i], None)
            pending = [i for i in pending
                       if statuses[i] == TransferStatus.WAITING]
            if status == SUCCESS:
                return statuses
            if status != TIMEOUT:
                raise HixlError("wait_transfers", status, message)
            if end is not None and time.monotonic() >= end:
                raise HixlTimeoutError("wait_transfers", status, message,
                                       statuses)

    def wait_notifies(self, timeout_ms: Optional[int] = None
                      ) -> List[NotifyDesc]:
        """Block until at least one notify is queued -> [NotifyDesc], oldest
        first.  timeout_ms None: no deadline.  Raises HixlTimeoutError when
        none came in time."""
        tmo = _timeout_ms(timeout_ms)
        end = None if tmo is None else time.monotonic() + tmo / 1000.0
        lib = _lib.lib()
        while True:
            ptr = ctypes.POINTER(CNotify)()
            count = _SZ(0)
            status = self._wait_call("wait_notifies", lib.hixl_wait_notifies,
                                     _left_ms(end), ctypes.byref(ptr),
                                     ctypes.byref(count))
            if status == SUCCESS:
                try:
                    return notify_list(ptr, count.value)
                finally:
                    if count.value:
                        lib.hixl_release_notifies(ptr, count)
            message = last_error()
            if status != TIMEOUT:
                raise HixlError("wait_notifies", status, message)
            if end is not None and time.monotonic() >= end:
                raise HixlTimeoutError("wait_notifies", status, message)

    def event_fd(self) -> int:
        """The engine's event fd (for select/epoll/asyncio): readable after
        the next event once armed (see arm()).  Owned by the engine; closed
        by finalize()."""
        fd = ctypes.c_int(-1)
        status = self._wait_call("event_fd", _lib.lib().hixl_get_event_fd,
                                 ctypes.byref(fd))
        if status != SUCCESS:
            raise HixlError("event_fd", status, last_error())
        return fd.value

    def arm(self) -> bool:
        """Clear and arm the event fd -> True: sleep on it; False: events
        happened since the last arm, look at your requests, notifies and
        layers, then arm again (UCX's ucp_worker_arm model)."""
        armed = ctypes.c_int(0)
        status = self._wait_call("arm", _lib.lib().hixl_arm,
                                 ctypes.byref(armed))
        if status != SUCCESS:
            raise HixlError("arm", status, last_error())
        return bool(armed.value)
