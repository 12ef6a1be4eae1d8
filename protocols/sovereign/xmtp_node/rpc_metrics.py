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


async def _answer_failure(context: grpc.aio.ServicerContext, method: str, error: Exception) -> None:
    """Abort the call for ``error``: a refusal with its status and reason, anything else as INTERNAL."""
    refused = status_of(error)
    if refused is None:
        log.error("XMTP %s failed", method, exc_info=error)
        refused = grpc.StatusCode.INTERNAL, "the node failed to answer; its log says why"
    await context.abort(*refused)
    raise AssertionError("not reached: abort raises")


def _code_of(context: grpc.aio.ServicerContext) -> str:
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else "OK"


def _count(
    metrics: XmtpMetrics, method: str, context: grpc.aio.ServicerContext, cancelled: bool, started: float
) -> None:
    """One finished RPC: its status code (CANCELLED when the caller went away) and how long it took."""
    code = "CANCELLED" if cancelled else _code_of(context)
    metrics.requests.labels(method=method, code=code).inc()
    metrics.latency.labels(method=method).observe(time.perf_counter() - started)


def unary(method: str) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """A unary RPC, counted and timed; a refusal it raises becomes its status."""

    def wrap(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(handler)
        async def answer(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            cancelled = False
            try:
                return await handler(self, request, context)
            except asyncio.CancelledError:
                cancelled = True
                raise
            except grpc.aio.AbortError:
                raise
            except Exception as error:
                await _answer_failure(context, method, error)
            finally:
                _count(self.metrics, method, context, cancelled, started)

        return answer

    return wrap


def stream(method: str) -> Callable[[Callable[..., AsyncIterator[Any]]], Callable[..., AsyncIterator[Any]]]:
    """A server-streaming RPC, counted, timed and held in the open-streams gauge."""

    def wrap(handler: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
        @functools.wraps(handler)
        async def answer(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            started = time.perf_counter()
            self.metrics.open_streams.inc()
            cancelled = False
            try:
                async for message in handler(self, request, context):
                    yield message
            except asyncio.CancelledError:  # the client went away (or the server's grace ran out)
                cancelled = True
                raise
            except grpc.aio.AbortError:
                raise
            except Exception as error:
                await _answer_failure(context, method, error)
            finally:
                self.metrics.open_streams.dec()
                _count(self.metrics, method, context, cancelled, started)

        return answer

    return wrap
