# SPDX-License-Identifier: BSD-3-Clause
"""What the batch status call takes and gives (hixl::GetTransferStatusArgs,
hixl::TransferResult), with hixl's fields and defaults."""

from typing import Any

from . import _args
from ._constants import MAX_QUERY_COUNT, TransferStatus


class GetTransferStatusArgs:
    """Arguments of get_all_transfer_status: at most ``max_query_count``
    results (the oldest requests; default no limit), and with
    ``skip_waiting`` the requests still WAITING are left out."""

    __slots__ = ("_max_query_count", "_skip_waiting")

    def __init__(self, max_query_count: int = MAX_QUERY_COUNT,
                 skip_waiting: bool = False) -> None:
        self.max_query_count = max_query_count
        self.skip_waiting = skip_waiting

    @property
    def max_query_count(self) -> int:
        return self._max_query_count

    @max_query_count.setter
    def max_query_count(self, value: int) -> None:
        self._max_query_count = _args.integer(value, "max_query_count", 0,
                                              _args.UINT32_MAX)

    @property
    def skip_waiting(self) -> bool:
        return self._skip_waiting

    @skip_waiting.setter
    def skip_waiting(self, value: Any) -> None:
        if not isinstance(value, bool):
            raise TypeError("skip_waiting must be a bool, got %s" %
                            type(value).__name__)
        self._skip_waiting = value

    def __repr__(self) -> str:
        return "GetTransferStatusArgs(max_query_count=%d, skip_waiting=%r)" % (
            self._max_query_count, self._skip_waiting)


class TransferResult:
    """One request's status: ``req`` and ``user_data`` (ints, as
    transfer_async and TransferArgs gave them) and ``status``, a
    TransferStatus (read-only, as in hixl's binding)."""

    __slots__ = ("req", "user_data", "_status")

    def __init__(self) -> None:
        self.req = 0
        self.user_data = 0
        self._status = TransferStatus.WAITING

    @property
    def status(self) -> TransferStatus:
        return self._status

    @classmethod
    def _of(cls, req: int, user_data: int,
            status: TransferStatus) -> "TransferResult":
        r = cls()
        r.req, r.user_data, r._status = req, user_data, status
        return r

    def __repr__(self) -> str:
        return "TransferResult(req=%#x, user_data=%#x, status=%s)" % (
            self.req, self.user_data, self._status.name)
