"""What /metrics says of the XMTP node: RPCs by method and status code, their latency, the open streams;
and the wrappers that answer a refusal with its status (:func:`.checks.status_of`) while counting it."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from protocols.sovereign.xmtp_node.checks import status_of

log = logging.getLogger("tessera.sovereign.xmtp_node")

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class XmtpMetrics:
    def __init__(self, registry: CollectorRegistry):
        self.requests = Counter(
            "tessera_xmtp_requests",
            "XMTP RPCs answered, by method and gRPC status code.",
            ["method", "code"],
            registry=registry,
        )
        self.latency = Histogram(
            "tessera_xmtp_request_latency_seconds",
            "Time from an XMTP RPC's arrival to its answer (a stream: to its end), by method.",
            ["method"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.open_streams = Gauge("tessera_xmtp_open_streams", "XMTP streams open now.", registry=registry)


def _refusal(method: str, error: Exception) -> tuple[grpc.StatusCode, str]:
    """The status ``error`` is answered with: a refusal's own, anything else INTERNAL (and logged)."""
    refused = status_of(error)
    if refused is None:
        log.error("XMTP %s failed", method, exc_info=error)
        return grpc.StatusCode.INTERNAL, "the node failed to answer; its log says why"
    return refused


def _code_of(context: grpc.aio.ServicerContext) -> str:
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else "OK"


def _count(metrics: XmtpMetrics, method: str, code: str, started: float) -> None:
    """One finished RPC: its status code (CANCELLED when the caller went away) and how long it took."""
    metrics.requests.labels(method=method, code=code).inc()
    metrics.latency.labels(method=method).observe(time.perf_counter() - started)


def unary(method: str) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """A unary RPC, counted and timed; a refusal it raises becomes its status."""

    def wrap(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(handler)
        async def answer(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            code: str | None = None
            try:
                return await handler(self, request, context)
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except grpc.aio.AbortError:
                raise
            except Exception as error:
                status, details = _refusal(method, error)
                # Counted before the status goes out: a client that reads /metrics once answered sees it.
                code = status.name
                _count(self.metrics, method, code, started)
                await context.abort(status, details)
            finally:
                if code is None or code == "CANCELLED":
                    _count(self.metrics, method, code or _code_of(context), started)

        return answer

    return wrap


def stream(method: str) -> Callable[[Callable[..., AsyncIterator[Any]]], Callable[..., AsyncIterator[Any]]]:
    """A server-streaming RPC, counted, timed and held in the open-streams gauge."""

    def wrap(handler: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
        @functools.wraps(handler)
        async def answer(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            started = time.perf_counter()
            self.metrics.open_streams.inc()
            code: str | None = None
            held = True

            def closed() -> None:
                nonlocal held
                if held:
                    held = False
                    self.metrics.open_streams.dec()

            try:
                async for message in handler(self, request, context):
                    yield message
            except asyncio.CancelledError:  # the client went away (or the server's grace ran out)
                code = "CANCELLED"
                raise
            except grpc.aio.AbortError:
                raise
            except Exception as error:
                status, details = _refusal(method, error)
                # Closed and counted before the status goes out: a client that reads /metrics as soon as it has
                # its answer sees the refusal counted and the stream no longer open.
                closed()
                code = status.name
                _count(self.metrics, method, code, started)
                await context.abort(status, details)
            finally:
                closed()
                if code is None or code == "CANCELLED":
                    _count(self.metrics, method, code or _code_of(context), started)

        return answer

    return wrap
