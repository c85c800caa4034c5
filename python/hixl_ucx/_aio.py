# SPDX-License-Identifier: BSD-3-Clause
"""asyncio: awaitables for a transfer, a layer and notifies, driven by the
engine's event fd through ``loop.add_reader`` -- no thread, no busy loop.

One reactor per engine and event loop.  When the fd is readable (or a
waiter was added) it looks at every pending waiter with the non-blocking
calls (get_transfer_status, test_layer, get_notifies), resolves those that
ended, then arms the fd; when arm() says events came meanwhile it looks
again on the loop's next turn instead of sleeping.  A request passing its
own deadline is no event: while transfers are awaited the reactor also
looks once a second.  The reader is removed when nothing is awaited.
"""

import asyncio
from typing import Any, Callable, List, Optional, Tuple

from ._constants import SUCCESS, TIMEOUT, FAILED, TransferStatus
from ._errors import HixlError, HixlTimeoutError, last_error
from ._memory import NotifyDesc

#: a waiter's look: (ended, result), or raises
Check = Callable[[], Tuple[bool, Any]]

_TICK_S = 1.0


class _Reactor:

    def __init__(self, engine: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.engine = engine
        self.loop = loop
        self.fd = engine.event_fd()
        self.waiters: List[Tuple[Check, asyncio.Future, bool]] = []
        self.reading = False
        self.scheduled = False
        self.timer: Optional[asyncio.TimerHandle] = None

    def add(self, check: Check, timed: bool) -> asyncio.Future:
        fut = self.loop.create_future()
        self.waiters.append((check, fut, timed))
        self._schedule()
        return fut

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._service)

    def _tick(self) -> None:
        self.timer = None
        self._service()

    def _look(self) -> None:
        still = []
        for check, fut, timed in self.waiters:
            if fut.done():   # cancelled (asyncio.wait_for)
                continue
            try:
                ended, value = check()
            except BaseException as e:   # the waiter's, not the loop's
                fut.set_exception(e)
                continue
            if ended:
                fut.set_result(value)
            else:
                still.append((check, fut, timed))
        self.waiters = still

    def _service(self) -> None:
        self.scheduled = False
        try:
            self._look()
            if not self.waiters:
                self._idle()
                return
            if not self.reading:
                self.loop.add_reader(self.fd, self._service)
                self.reading = True
            if not self.engine.arm():
                self._schedule()   # events since the last arm: look again
                return
        except HixlError as e:   # the engine went away under us
            self.close(e)
            return
        if self.timer is None and any(t for _, _, t in self.waiters):
            self.timer = self.loop.call_later(_TICK_S, self._tick)

    def _idle(self) -> None:
        if self.reading:
            self.loop.remove_reader(self.fd)
            self.reading = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self, exc: BaseException) -> None:
        """Fail every waiter and let go of the fd (in the loop's thread)."""
        self._idle()
        for _, fut, _ in self.waiters:
            if not fut.done():
                fut.set_exception(exc)
        self.waiters = []


def _raise(method: str, status: int, message: Optional[str] = None) -> None:
    cls = HixlTimeoutError if status == TIMEOUT else HixlError
    raise cls(method, status, last_error() if message is None else message)


def _named(method: str, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args), an error it raises (raise_on_error) named after method:
    the awaitable the caller awaited, not the call inside it."""
    try:
        return fn(*args)
    except HixlError as e:
        _raise(method, e.status, e.message)


class AioMixin:
    """Hixl's awaitables (mixed into Hixl)."""

    def _reactor(self) -> _Reactor:
        loop = asyncio.get_running_loop()
        r = getattr(self, "_aio", None)
        if r is None or r.loop is not loop:
            if r is not None:
                r.close(RuntimeError("the engine is awaited from another "
                                     "event loop now"))
            r = _Reactor(self, loop)
            self._aio = r
        return r

    def _aio_close(self) -> None:
        """finalize(): fail what is awaited, drop the reader."""
        r = getattr(self, "_aio", None)
        self._aio = None
        if r is None:
            return
        exc = HixlError("finalize", FAILED, "the engine was finalized")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is r.loop or r.loop.is_closed():
            r.close(exc)
        else:
            r.loop.call_soon_threadsafe(r.close, exc)

    async def _await(self, check: Check, timed: bool,
                     timeout: Optional[float]) -> Any:
        fut = self._reactor().add(check, timed)
        if timeout is None:
            return await fut
        return await asyncio.wait_for(fut, timeout)

    async def wait_transfer_async(self, req: int,
                                  timeout: Optional[float] = None
                                  ) -> TransferStatus:
        """Await an async request: COMPLETED; raises HixlError when it ended
        FAILED (HixlTimeoutError: its own deadline passed), TimeoutError
        after `timeout` seconds (the request then stays valid)."""
        def check() -> Tuple[bool, Any]:
            status, st = _named("wait_transfer_async",
                                self.get_transfer_status, req)
            if status != SUCCESS:
                _raise("wait_transfer_async", status)
            if st == TransferStatus.WAITING:
                return False, None
            if st != TransferStatus.COMPLETED:
                _raise("wait_transfer_async",
                       TIMEOUT if st == TransferStatus.TIMEOUT else FAILED)
            return True, st
        return await self._await(check, True, timeout)

    async def wait_layer_async(self, source_engine: str, stream: int,
                               generation: int, layer: int,
                               timeout: Optional[float] = None) -> None:
        """Await (stream, generation, layer) from source_engine; raises
        HixlError when superseded or the source disconnected, TimeoutError
        after `timeout` seconds."""
        def check() -> Tuple[bool, Any]:
            status, ready = _named("wait_layer_async", self.test_layer,
                                   source_engine, stream, generation, layer)
            if status != SUCCESS:
                _raise("wait_layer_async", status)
            return ready, None
        return await self._await(check, False, timeout)

    async def wait_notifies_async(self, timeout: Optional[float] = None
                                  ) -> List[NotifyDesc]:
        """Await at least one notify -> [NotifyDesc]; TimeoutError after
        `timeout` seconds."""
        def check() -> Tuple[bool, Any]:
            status, got = _named("wait_notifies_async", self.get_notifies)
            if status != SUCCESS:
                _raise("wait_notifies_async", status)
            return bool(got), got
        return await self._await(check, False, timeout)
