"""``GET /metrics`` for a database's daemon: queue depths and the status counters, as Prometheus text.

``tessera tick --metrics-port`` and long-running plugin commands (``tessera
marmot listen --metrics-port``) serve it on 127.0.0.1.  Every scrape reads one
:func:`core.status.snapshot` on a read-only connection of its own, so it never
waits for the write lock and shows what ``tessera status`` would show then:

- ``tessera_queue_items{queue}``: rows in ``incoming``, ``deferred``,
  ``blocked``, ``parked``, pending ``outgoing``, and recheck markers;
- ``tessera_items_total{outcome}``: items by outcome (``handled``, ``blocked``,
  ``parked``, ``dropped``, ...), exact across crashes;
- ``tessera_dropped_total{protocol, reason}``: items refused for good and not
  kept (e.g. Marmot's ``undecryptable``, a wait budget's ``wait_budget``);
- ``tessera_counter_total{name}``: every other counter of ``status``;
- ``tessera_head_seq``: the event log's head.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from core.db import Database
from core.errors import InvalidInput
from core.settings import Settings
from core.status import snapshot

_QUEUES = ("incoming", "deferred", "blocked", "parked", "outgoing", "recheck_markers")
_ITEMS = "items_"
_DROPPED = "dropped."


class StatusCollector(Collector):
    """Turns one status snapshot of the database into metric families, at each scrape."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def collect(self) -> Iterator[Any]:
        db = Database(self.settings.db, self.settings, readonly=True)
        try:
            report = snapshot(db)
        finally:
            db.close()
        queues = GaugeMetricFamily("tessera_queue_items", "Rows waiting in each queue.", labels=["queue"])
        for name in _QUEUES:
            queues.add_metric([name], report[name])
        yield queues
        yield GaugeMetricFamily("tessera_head_seq", "The event log's last seq.", value=report["head_seq"])
        yield from counter_families(report["counters"])


def counter_families(counters: dict[str, int]) -> Iterator[CounterMetricFamily]:
    """The status counters as three families: item outcomes, drops by protocol and reason, and the rest."""
    items = CounterMetricFamily("tessera_items", "Items by how they ended.", labels=["outcome"])
    dropped = CounterMetricFamily(
        "tessera_dropped", "Items refused for good and not kept, by protocol and reason.", labels=["protocol", "reason"]
    )
    other = CounterMetricFamily("tessera_counter", "The other counters of `tessera status`.", labels=["name"])
    for name, value in sorted(counters.items()):
        if name.startswith(_ITEMS):
            items.add_metric([name[len(_ITEMS) :]], value)
        elif name.startswith(_DROPPED) and name.count(".") >= 2:
            protocol, reason = name[len(_DROPPED) :].split(".", 1)
            dropped.add_metric([protocol, reason], value)
        else:
            other.add_metric([name], value)
    yield from (items, dropped, other)


def serve_metrics(settings: Settings, port: int, host: str = "127.0.0.1") -> tuple[WSGIServer, threading.Thread]:
    """Serve ``/metrics`` for ``settings.db`` on ``host:port`` from a daemon thread; returns the server and
    its thread (``server.shutdown()`` stops it).  Port 0 picks a free one (``server.server_port``)."""
    registry = CollectorRegistry()
    registry.register(StatusCollector(settings))
    try:
        return start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise InvalidInput(
            f"cannot serve /metrics on {host}:{port}: {exc.strerror or exc}; choose another --metrics-port"
        ) from None


class MetricsServer:
    """``with MetricsServer(settings, port):`` serves ``/metrics`` for the block's duration (no port: nothing)."""

    def __init__(self, settings: Settings, port: int | None) -> None:
        self.settings, self.port = settings, port
        self._server: WSGIServer | None = None

    def __enter__(self) -> MetricsServer:
        if self.port is not None:
            self._server, _ = serve_metrics(self.settings, self.port)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
