"""The plugin's own tunables, read from ``TESSERA_MARMOT_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from core.errors import InvalidInput

WEEK_MS = 7 * 24 * 3_600_000

_ENV = {
    "wait_horizon_ms": "TESSERA_MARMOT_WAIT_HORIZON_MS",
    "snapshots": "TESSERA_MARMOT_SNAPSHOTS",
    "past_epochs": "TESSERA_MARMOT_PAST_EPOCHS",
    "max_event_age_s": "TESSERA_MARMOT_MAX_EVENT_AGE_S",
    "max_future_skew_s": "TESSERA_MARMOT_MAX_FUTURE_SKEW_S",
    "backfill_workers": "TESSERA_MARMOT_BACKFILL_WORKERS",
    "fetch_lookback_s": "TESSERA_MARMOT_FETCH_LOOKBACK_S",
    "fetch_timeout_s": "TESSERA_MARMOT_FETCH_TIMEOUT_S",
    "relay_backlog_events": "TESSERA_MARMOT_RELAY_BACKLOG_EVENTS",
    "relay_backlog_bytes": "TESSERA_MARMOT_RELAY_BACKLOG_BYTES",
}
# (smallest, largest) accepted value of each setting.
_RANGES = {
    "wait_horizon_ms": (1_000, 365 * 24 * 3_600_000),
    "snapshots": (1, 255),
    "past_epochs": (1, 255),
    "max_event_age_s": (0, 100 * 365 * 86_400),
    "max_future_skew_s": (0, 365 * 86_400),
    "backfill_workers": (0, 256),
    # Less than a minute of lookback loses the events of members whose clocks are a little behind ours.
    "fetch_lookback_s": (60, 30 * 86_400),
    "fetch_timeout_s": (1, 3_600),
    # Below these a relay's ordinary burst (a page of a catch-up) would be held back.
    "relay_backlog_events": (100, 10_000_000),
    "relay_backlog_bytes": (1_048_576, 10**12),
}


@attrs.frozen
class MarmotSettings:
    """Resolved plugin settings.

    Attributes:
        wait_horizon_ms: how long an outer event may wait for the epoch that
            opens it (or for the welcome of its group) before it is parked
            with reason ``epoch_never_arrived`` (``unknown_group``).  Waiting
            never spends retry attempts.
        snapshots: the rollback window: for how many recent epochs the
            pre-commit state, the competing commits and the events decided in
            them are kept, i.e. how many epochs back a better commit can still
            win its race.
        past_epochs: how many past epochs' keys a newly joined group keeps for
            late messages (forward secrecy bounds it; the engine's window).
        max_event_age_s: events a relay hands us that are older than this
            (by their ``created_at``, against our clock when they arrive) are
            dropped before they are queued; 0 keeps every age.  MDK's default.
        max_future_skew_s: likewise for events dated further in the future
            than this; 0 turns the check off.  MDK's default.
        backfill_workers: worker processes that verify and open a backfill's
            events before the writer applies them (transport/prepared.py);
            0 does it all in the writer.  One per core by default.
        fetch_lookback_s: how far before the older of a group's fetch
            cursor and its last complete fetch a ``sync`` asks relays from
            (``since``), for events that reach a relay late or are dated by
            a clock behind ours; what comes again is recognised as a duplicate.
        fetch_timeout_s: how long ``sync`` waits for a relay to connect and
            to end each page of its answer with EOSE before it counts that
            relay's answer as cut short.
        relay_backlog_events: how many events one relay may have handed to
            ``listen`` that the tick has not processed yet; while it has, that
            relay is not read (it keeps the rest), so a relay's flood bounds
            neither memory nor the queue, and other relays go on.
        relay_backlog_bytes: likewise, in bytes (content plus an estimate of
            the rest of each event).
    """

    wait_horizon_ms: int = WEEK_MS
    snapshots: int = 5
    past_epochs: int = 5
    max_event_age_s: int = 45 * 86_400
    max_future_skew_s: int = 300
    backfill_workers: int = attrs.field(factory=lambda: os.cpu_count() or 1)
    fetch_lookback_s: int = 300
    fetch_timeout_s: int = 10
    relay_backlog_events: int = 2_000
    relay_backlog_bytes: int = 8 * 1_048_576

    def admits(self, created_at: int, now_s: int) -> str | None:
        """None when an event of ``created_at`` may be queued now, else why not (``too_old`` / ``too_far_ahead``)."""
        if self.max_event_age_s and created_at < now_s - self.max_event_age_s:
            return "too_old"
        if self.max_future_skew_s and created_at > now_s + self.max_future_skew_s:
            return "too_far_ahead"
        return None

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None) -> MarmotSettings:
        env = os.environ if env is None else env
        return cls(**{name: _in_range(name, env[key]) for name, key in _ENV.items() if key in env})


def _in_range(name: str, raw: str) -> int:
    low, high = _RANGES[name]
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise InvalidInput(f"{_ENV[name]} must be an integer from {low} to {high}, got {raw!r}")
    return value


_CACHE: dict[tuple, MarmotSettings] = {}


def current() -> MarmotSettings:
    """Settings for the current environment (cached per distinct set of values)."""
    key = tuple(os.environ.get(k) for k in _ENV.values())
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = MarmotSettings.load()
    return found
