"""Where a group's next fetch from relays starts: its fetch cursor, its last complete fetch, and a lookback.

Two values per group, in protocol state (write-side: a rebuild never drops
them), written only by the code that reads relays (``sync`` and ``listen``,
in the transaction that queues what they read):

- the **fetch cursor**: the newest ``created_at`` among the group's events
  that a relay handed us.  Our own events count when a relay hands them to a
  ``sync`` or ``listen``, never through the copy the tick queues after a
  relay's ``OK`` (the echo: nobody fetched it, and others' events of earlier
  seconds may still be unread).  Events from ``backfill`` files and
  ``tessera ingest`` do not count either: a file says nothing about what the
  group's relays hold.
- the **last fetch**: the second at which the last fetch of the group began
  that at least one relay answered completely.  A fetch cut short moves
  nothing here: what it missed is asked for again.

A fetch asks from the older of the two, less a lookback
(``TESSERA_MARMOT_FETCH_LOOKBACK_S``), or from the beginning before the first
complete fetch.  The older of the two, because each covers what the other
misses: events dated before the newest one fetched that reached a relay
after the fetch (slow publishers, clocks behind ours), and an event dated
ahead of our clock, which must not carry the cursor past the present.  What
the lookback brings again is recognised as a duplicate by the handler.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from core.state import ProtocolState
from protocols.marmot.state.store import routes_of
from protocols.marmot.wire import nostr

NEWEST_FETCHED = "sync/newest_fetched/"
LAST_FETCH = "sync/last_fetch/"


@attrs.frozen
class FetchWindow:
    """A group's fetch cursor and last complete fetch (seconds; None: not yet).

    Attributes:
        newest_fetched: the newest ``created_at`` of the group's events fetched from relays.
        last_fetch: when the last fetch that a relay answered completely began.
    """

    newest_fetched: int | None
    last_fetch: int | None

    def since(self, lookback_s: int) -> int | None:
        """The ``since`` of the next fetch: None (everything) until a fetch was complete."""
        if self.last_fetch is None:
            return None
        start = self.last_fetch if self.newest_fetched is None else min(self.newest_fetched, self.last_fetch)
        return max(0, start - lookback_s)

    def to_json(self, lookback_s: int) -> dict[str, int | None]:
        return {"newest_fetched": self.newest_fetched, "last_fetch": self.last_fetch, "since": self.since(lookback_s)}


def read(state: ProtocolState, gid: str) -> FetchWindow:
    """The fetch window of group ``gid``."""
    return FetchWindow(_second(state, NEWEST_FETCHED + gid), _second(state, LAST_FETCH + gid))


def group_filter(state: ProtocolState, gid: str, lookback_s: int) -> dict[str, Any]:
    """The relay filter for group ``gid``'s events from where its next fetch starts."""
    found: dict[str, Any] = {"kinds": [nostr.GROUP_EVENT_KIND], "#h": routes_of(state, gid)}
    since = read(state, gid).since(lookback_s)
    if since is not None:
        found["since"] = since
    return found


def note_fetched(state: ProtocolState, gid: str, events: Iterable[dict[str, Any]], now_ms: int) -> None:
    """Move ``gid``'s fetch cursor to the newest of ``events`` (relay events of that group); never backwards."""
    newest = max((event["created_at"] for event in events), default=None)
    if newest is not None:
        _forward(state, NEWEST_FETCHED + gid, newest, now_ms)


def note_complete_fetch(state: ProtocolState, gid: str, started_s: int, now_ms: int) -> None:
    """Record that a fetch of ``gid`` begun at ``started_s`` was answered completely; never backwards."""
    _forward(state, LAST_FETCH + gid, started_s, now_ms)


def _second(state: ProtocolState, key: str) -> int | None:
    value = state.get(key)
    return None if value is None else int(value)


def _forward(state: ProtocolState, key: str, second: int, now_ms: int) -> None:
    before = _second(state, key)
    if before is None or before < second:
        state.put(key, str(second).encode(), now_ms)
