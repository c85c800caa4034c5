# SPDX-License-Identifier: BSD-3-Clause
"""An engine's figures (docs/metrics.md): ``Hixl.stats()`` as a dict,
``Hixl.metrics_text()`` as Prometheus text, and :class:`HixlCollector`,
which gives them to prometheus_client (Debian's python3-prometheus-client):

    engine.register_collector()            # prometheus_client's REGISTRY
    engine.register_collector(my_registry) # or a registry of your own

The collector reads the engine at every scrape; it holds the engine, not
a copy, and yields nothing once the engine is finalized.
"""

import ctypes
from typing import Any, Dict, Iterator, List, Optional

from . import _lib
from ._constants import FAILED
from ._errors import HixlError, last_error

OPS = ("read", "write")   # by hixl_transfer_op_t
PATHS = ("rma", "am", "cma", "map", "ipc", "staging")
OUTCOMES = ("completed", "failed", "timeout")
REFUSED = ("authentication", "version", "duplicate_name", "admission",
           "invalid")
EVICTED = ("handshake_full", "handshake_timeout")
CLOSED = ("disconnect", "peer_timeout", "peer_death", "error")
DROPPED = ("queue_full", "too_large")
_BUCKETS = 23

_U64 = ctypes.c_uint64


class CStatsHistogram(ctypes.Structure):
    """hixl_stats_histogram_t"""
    _fields_ = [("count", _U64), ("sum_ns", _U64),
                ("bucket", _U64 * _BUCKETS), ("le_ns", _U64 * _BUCKETS)]


class CStats(ctypes.Structure):
    """hixl_stats_t, version 1 (the library fills what this declares)"""
    _fields_ = [
        ("size", ctypes.c_size_t), ("version", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32), ("uptime_ns", _U64),
        ("transfers", ((_U64 * len(OUTCOMES)) * len(PATHS)) * len(OPS)),
        ("bytes", ((_U64 * len(OUTCOMES)) * len(PATHS)) * len(OPS)),
        ("latency", CStatsHistogram * len(OPS)),
        ("layer_signal", CStatsHistogram),
        ("layer_signals_sent", _U64), ("layer_signals_received", _U64),
        ("conn_open", _U64), ("conn_connected", _U64),
        ("conn_connect_failed", _U64), ("conn_accepted", _U64),
        ("conn_refused", _U64 * len(REFUSED)),
        ("conn_evicted", _U64 * len(EVICTED)),
        ("conn_closed", _U64 * len(CLOSED)),
        ("notifies_sent", _U64), ("notifies_received", _U64),
        ("notifies_dropped", _U64 * len(DROPPED)),
        ("regions", _U64), ("region_bytes", _U64),
        ("requests_in_flight", _U64), ("progress_wakeups", _U64),
    ]


def _hist(h: CStatsHistogram) -> Dict[str, Any]:
    cum, buckets = 0, []
    for i in range(_BUCKETS):
        cum += h.bucket[i]
        le = h.le_ns[i]
        buckets.append((float("inf") if le == 2 ** 64 - 1 else le / 1e9, cum))
    return {"count": h.count, "sum_seconds": h.sum_ns / 1e9,
            "buckets": buckets}


def _by(names: Any, values: Any) -> Dict[str, int]:
    return {n: int(values[i]) for i, n in enumerate(names)}


def stats_dict(engine: Optional[int]) -> Dict[str, Any]:
    """hixl_get_stats of an engine handle, as nested dicts."""
    s = CStats()
    s.size = ctypes.sizeof(CStats)
    status = _lib.lib().hixl_get_stats(engine, ctypes.byref(s))
    if status != 0:
        raise HixlError("stats", status, last_error())

    def cube(v: Any) -> Dict[str, Dict[str, Dict[str, int]]]:
        return {op: {p: _by(OUTCOMES, v[o][i]) for i, p in enumerate(PATHS)}
                for o, op in enumerate(OPS)}

    return {
        "version": s.version,
        "uptime_seconds": s.uptime_ns / 1e9,
        "transfers": cube(s.transfers),
        "bytes": cube(s.bytes),
        "latency": {op: _hist(s.latency[o]) for o, op in enumerate(OPS)},
        "layer_signal_latency": _hist(s.layer_signal),
        "layer_signals_sent": s.layer_signals_sent,
        "layer_signals_received": s.layer_signals_received,
        "connections": {
            "open": s.conn_open, "connected": s.conn_connected,
            "connect_failed": s.conn_connect_failed,
            "accepted": s.conn_accepted,
            "refused": _by(REFUSED, s.conn_refused),
            "evicted": _by(EVICTED, s.conn_evicted),
            "closed": _by(CLOSED, s.conn_closed),
        },
        "notifies": {"sent": s.notifies_sent,
                     "received": s.notifies_received,
                     "dropped": _by(DROPPED, s.notifies_dropped)},
        "regions": s.regions,
        "region_bytes": s.region_bytes,
        "requests_in_flight": s.requests_in_flight,
        "progress_wakeups": s.progress_wakeups,
    }


def metrics_text(engine: Optional[int]) -> str:
    """hixl_metrics_text of an engine handle."""
    fn = _lib.lib().hixl_metrics_text
    need = fn(engine, None, 0)
    if engine is None or need == 0:
        raise HixlError("metrics_text", FAILED, last_error())
    while True:
        buf = ctypes.create_string_buffer(need + 4096)
        got = fn(engine, buf, len(buf))
        if got < len(buf):
            return buf.value.decode("utf-8", "replace")
        need = got


class HixlCollector:
    """A prometheus_client collector of one engine's figures."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def collect(self) -> Iterator[Any]:
        from prometheus_client.parser import text_string_to_metric_families
        try:
            text = self._engine.metrics_text()
        except HixlError:
            return   # finalized: nothing to say
        yield from text_string_to_metric_families(text)

    def describe(self) -> List[Any]:
        # no description up front: the registry asks collect() instead,
        # after the engine exists
        return []


class MetricsMixin:
    """Hixl's metrics methods."""

    _engine: Optional[int]

    def stats(self) -> Dict[str, Any]:
        """The engine's counters and gauges (hixl_get_stats) as a dict:
        transfers and bytes by [op][path][outcome], latency histograms,
        connections, notifies, memory, requests in flight, wake-ups."""
        if self._engine is None:
            raise HixlError("stats", FAILED, "engine is not initialized")
        return stats_dict(self._engine)

    def metrics_text(self) -> str:
        """The same in Prometheus's text exposition format."""
        if self._engine is None:
            raise HixlError("metrics_text", FAILED,
                            "engine is not initialized")
        return metrics_text(self._engine)

    def metrics_address(self) -> str:
        """"host:port" of the engine's HTTP endpoint (hixl.MetricsListen),
        or "" when it serves none."""
        if self._engine is None:
            return ""
        return _lib.lib().hixl_metrics_address(self._engine).decode()

    def register_collector(self, registry: Any = None) -> HixlCollector:
        """Register a :class:`HixlCollector` of this engine in registry
        (prometheus_client's default REGISTRY when None); returns it, for
        registry.unregister."""
        if registry is None:
            from prometheus_client import REGISTRY
            registry = REGISTRY
        collector = HixlCollector(self)
        registry.register(collector)
        return collector
