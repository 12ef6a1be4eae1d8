"""The one interface the Marmot plugin sees: :class:`RelayTransport`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from protocols.marmot.relays.filters import FilterLike
from protocols.marmot.relays.live import LiveOptions
from protocols.marmot.relays.reports import FetchReport, PublishReport


class RelayTransport(Protocol):
    """Publish to, fetch from and follow Nostr relays, synchronously.

    Implemented by :class:`~protocols.marmot.relays.client.NostrRelays` (real
    relays over WebSocket) and
    :class:`~protocols.marmot.relays.loopback.MemoryRelays` (in memory, same
    code above the socket).  Relay addresses are normalised, so a relay given
    twice is used once.
    """

    def publish(self, event: dict[str, Any], relays: Sequence[str], *, timeout_s: float = ...) -> PublishReport:
        """Send one signed event to every relay; each relay's answer is in the report."""
        ...

    def fetch(
        self,
        filters: FilterLike | Iterable[FilterLike],
        relays: Sequence[str],
        *,
        timeout_s: float = ...,
        page_size: int = ...,
    ) -> FetchReport:
        """Every stored event matching the filters, paged to the end, checked, each id once."""
        ...

    def subscribe(
        self,
        filters: FilterLike | Iterable[FilterLike],
        relays: Sequence[str],
        on_event: Callable[[dict[str, Any]], None],
        *,
        stop: threading.Event,
        timeout_s: float = ...,
        page_size: int = ...,
        options: LiveOptions | None = ...,
    ) -> None:
        """Deliver stored then live events once each until ``stop`` is set, reconnecting as needed."""
        ...
