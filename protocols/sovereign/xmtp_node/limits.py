"""The bound on open streams: per connection and over the whole node (settings ``server.xmtp_max_streams``
and ``server.xmtp_max_streams_per_connection``).  A stream past either is refused ``RESOURCE_EXHAUSTED``
before it reads anything, so a flood of subscriptions holds neither memory nor store threads."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

import grpc

from protocols.sovereign.xmtp_node.checks import NodeRefused


class StreamLimits:
    def __init__(self, *, total: int, per_connection: int):
        self.total = total
        self.per_connection = per_connection
        self._open: Counter[str] = Counter()

    @property
    def open(self) -> int:
        return sum(self._open.values())

    @contextlib.contextmanager
    def held(self, peer: str) -> Iterator[None]:
        """One stream of ``peer`` (the connection gRPC names) open for the block; refused past a bound."""
        if self.open >= self.total:
            raise NodeRefused(
                f"the node has {self.open} streams open, its limit (server.xmtp_max_streams); try again later",
                reason="too_many_streams",
                status=grpc.StatusCode.RESOURCE_EXHAUSTED,
            )
        if self._open[peer] >= self.per_connection:
            raise NodeRefused(
                f"this connection has {self._open[peer]} streams open, the limit per connection "
                "(server.xmtp_max_streams_per_connection); close one first",
                reason="too_many_streams_per_connection",
                status=grpc.StatusCode.RESOURCE_EXHAUSTED,
            )
        self._open[peer] += 1
        try:
            yield
        finally:
            self._open[peer] -= 1
            if not self._open[peer]:
                del self._open[peer]
