"""What ``tessera serve`` tells monitoring: ``GET /healthz`` (JSON) and ``GET /metrics`` (Prometheus text).

Each server has its own :class:`~prometheus_client.CollectorRegistry`, so
two servers in one process (as in tests) never mix their figures.  The
store-wide figures (pending deliveries, database size) cost a query, so they
are refreshed from :meth:`Store.stats` at most every
:data:`STATS_REFRESH_S` seconds, when ``/metrics`` is asked for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from protocols.libraries.delivery import frames
from protocols.libraries.delivery.records import StoreStats
from protocols.sovereign.xmtp_node.rpc_metrics import XmtpMetrics

STATS_REFRESH_S = 5.0
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class ServerMetrics:
    """The server's counters, gauges and histogram, in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.connections = Gauge(
            "tessera_serve_connections", "Open WebSocket connections (authenticated or not).", registry=self.registry
        )
        self.requests = Counter(
            "tessera_serve_requests", "Requests received, by request type.", ["type"], registry=self.registry
        )
        self.errors = Counter(
            "tessera_serve_errors",
            "Error frames sent, by request type and error code.",
            ["type", "code"],
            registry=self.registry,
        )
        self.pushed = Counter(
            "tessera_serve_pushed_messages", "Messages pushed to connected recipients.", registry=self.registry
        )
        self.slow_disconnects = Counter(
            "tessera_serve_slow_client_disconnects",
            "Connections closed because the client did not drain its send queue.",
            registry=self.registry,
        )
        self.queued_bytes = Gauge(
            "tessera_serve_send_queue_bytes",
            "Bytes of frames waiting to be sent, over all connections (each at most send_queue_bytes).",
            registry=self.registry,
        )
        self.largest_queue_bytes = Gauge(
            "tessera_serve_send_queue_largest_bytes",
            "Bytes of frames waiting to be sent on the connection with the most.",
            registry=self.registry,
        )
        self.store_latency = Histogram(
            "tessera_serve_store_latency_seconds",
            "Time the store took per operation (on its worker thread).",
            ["operation"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.pending_deliveries = Gauge(
            "tessera_serve_pending_deliveries", "Deliveries not yet acknowledged.", registry=self.registry
        )
        self.database_bytes = Gauge(
            "tessera_serve_database_bytes", "Size of the database file.", registry=self.registry
        )
        self.stored_messages = Gauge("tessera_serve_stored_messages", "Messages held.", registry=self.registry)
        self.xmtp = XmtpMetrics(self.registry)
        self._stats_at = float("-inf")

    def count_request(self, request_type: str) -> None:
        self.requests.labels(type=_type_label(request_type)).inc()

    def count_error(self, request_type: str, code: str) -> None:
        self.errors.labels(type=_type_label(request_type), code=code).inc()

    def observe_queues(self, queued: Iterable[int]) -> None:
        """Set the send-queue gauges from each connection's queued bytes (when ``/metrics`` is asked for)."""
        sizes = list(queued)
        self.queued_bytes.set(sum(sizes))
        self.largest_queue_bytes.set(max(sizes, default=0))

    def observe_store(self, operation: str, seconds: float, failed: bool) -> None:
        """A store operation's latency (called from worker threads; prometheus_client locks for us)."""
        self.store_latency.labels(operation=operation).observe(seconds)

    async def refresh_stats(self, fetch: Callable[[], Awaitable[StoreStats]]) -> None:
        """Refresh the store-wide gauges when the last refresh is older than :data:`STATS_REFRESH_S`."""
        now = time.monotonic()
        if now - self._stats_at < STATS_REFRESH_S:
            return
        self._stats_at = now
        stats = await fetch()
        self.pending_deliveries.set(stats.pending_deliveries)
        self.database_bytes.set(stats.database_bytes)
        self.stored_messages.set(stats.messages)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _type_label(request_type: str) -> str:
    """Request types as labels: a client's made-up types all count as ``unknown`` (labels must stay few)."""
    return request_type if request_type in frames.REQUEST_TYPES else "unknown"


def http_response(connection: ServerConnection, status: int, body: bytes | str, content_type: str) -> Response:
    """A plain HTTP response for ``process_request`` (websockets' own, with our body and content type)."""
    response = connection.respond(status, "")
    response.body = body.encode() if isinstance(body, str) else body
    del response.headers["Content-Length"]
    del response.headers["Content-Type"]
    response.headers["Content-Length"] = str(len(response.body))
    response.headers["Content-Type"] = content_type
    return response


def health_body(*, status: str, database: str, uptime_s: float, connections: int) -> str:
    return json.dumps(
        {"status": status, "database": database, "uptime_s": round(uptime_s, 3), "connections": connections},
        sort_keys=True,
    )


def is_plain_http(request: Request) -> bool:
    """A request for one of the HTTP endpoints (anything else goes on to the WebSocket handshake)."""
    return request.path.split("?", 1)[0] in (HEALTH_PATH, METRICS_PATH)


METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST
JSON_CONTENT_TYPE = "application/json"
