"""Server order: ULIDs that only grow, and microsecond timestamps that never go back.

Within one millisecond (or when the wall clock steps back) the next id is the
last one plus one, so id order is arrival order and a ULID names its
message's place in the group's history.  The server timestamp is the later of
the clock and the last one given, so ordering by ``(server_timestamp, id)``
equals ordering by id; many messages may share one timestamp.
"""

from __future__ import annotations

import attrs
from ulid import ULID

_MAX_ULID = (1 << 128) - 1


@attrs.frozen
class ServerOrder:
    """The last id and timestamp given out (protocol state ``order/last``)."""

    last_id: str | None = None
    last_timestamp_us: int = 0

    def next(self, now_ms: int, entropy: bytes) -> tuple[str, int]:
        """The next ``(id, server_timestamp_us)`` after this point, at clock reading ``now_ms``.

        A new millisecond's id takes its 80 random bits from ``entropy`` (the
        message's digest), so storing the same messages at the same times
        gives the same ids: projections stay deterministic.
        """
        timestamp_us = max(now_ms * 1000, self.last_timestamp_us)
        if self.last_id is None:
            return _fresh(now_ms, entropy), timestamp_us
        last = ULID.from_str(self.last_id)
        if now_ms > last.milliseconds:
            return _fresh(now_ms, entropy), timestamp_us
        if int(last) >= _MAX_ULID:
            raise OverflowError("the ULID space is exhausted")
        return str(ULID.from_int(int(last) + 1)), timestamp_us


def first_id_at(ms: int) -> str:
    """The smallest id of millisecond ``ms``: every message stored before that millisecond has a smaller id
    (an id's first 48 bits are the millisecond it was given in, or an earlier id's when the clock stepped
    back), so ``id < first_id_at(ms)`` is a range on the primary key, in arrival order."""
    return str(ULID.from_int(ms << 80))


def _fresh(now_ms: int, entropy: bytes) -> str:
    """A ULID of millisecond ``now_ms`` whose 80 low bits come from ``entropy`` (at least 10 bytes)."""
    return str(ULID.from_int(int.from_bytes(now_ms.to_bytes(6, "big") + entropy[:10], "big")))
