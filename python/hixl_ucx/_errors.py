# SPDX-License-Identifier: BSD-3-Clause
"""Errors: hixl's status convention, and the exception of the opt-in mode.

By default every call returns hixl's status (SUCCESS 0, PARAM_INVALID
103900, ...) as hixl's Python binding does, and :func:`last_error` says what
went wrong.  ``Hixl(raise_on_error=True)`` turns a status other than
SUCCESS into :class:`HixlError` instead, carrying both, for code written in
the NIXL style.  Arguments of the wrong type or out of range are refused
by Python before the library is called, in either mode: TypeError or
ValueError naming the argument.
"""

from . import _lib
from ._constants import STATUS_NAMES


def _s(raw) -> str:
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""


def last_error() -> str:
    """What the last failed call of this thread said ("" if none)."""
    return _s(_lib.lib().hixl_last_error())


def strerror(status: int) -> str:
    """The C name of a status ("HIXL_TIMEOUT")."""
    name = STATUS_NAMES.get(int(status))
    return name if name is not None else _s(_lib.lib().hixl_strerror(
        int(status)))


class HixlError(Exception):
    """A call ended with a status other than SUCCESS (raise_on_error mode).

    Attributes: ``status`` (hixl's number), ``name`` ("HIXL_TIMEOUT"),
    ``method`` (the call that failed) and ``message`` (its last_error()).
    """

    def __init__(self, method: str, status: int, message: str) -> None:
        self.method = method
        self.status = int(status)
        self.name = STATUS_NAMES.get(self.status, "HIXL_UNKNOWN_STATUS")
        self.message = message
        super().__init__("%s: %s (%d)%s" % (method, self.name, self.status,
                                            ": " + message if message
                                            else ""))


class HixlTimeoutError(HixlError, TimeoutError):
    """A wait helper (wait_transfers, wait_notifies, the asyncio awaitables)
    ran out of time.  For wait_transfers, ``statuses`` holds what it
    reported: requests not WAITING there were released."""

    def __init__(self, method: str, status: int, message: str,
                 statuses=None) -> None:
        super().__init__(method, status, message)
        self.statuses = statuses
