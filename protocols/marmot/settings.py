"""The plugin's own tunables, declared to the core (``[marmot]`` in the config file, ``TESSERA_MARMOT_*``).

The core reads them with its own settings (flag, environment, config file,
default) and checks their ranges; :meth:`MarmotSettings.of` resolves them for
one opened app, so nothing here is kept per process or per database.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from core.setting import Setting
from core.setting_sources import Sources

if TYPE_CHECKING:
    from core.settings import Settings

WEEK_MS = 7 * 24 * 3_600_000
SECTION = "marmot"


def _marmot(name: str, default: int, help: str, minimum: int, maximum: int) -> Setting:
    return Setting(name, default, help, minimum, maximum, section=SECTION)


SETTINGS: tuple[Setting, ...] = (
    _marmot(
        "wait_horizon_ms",
        WEEK_MS,
        "How long an event may wait for its epoch or its group before it is parked.",
        1_000,
        365 * 24 * 3_600_000,
    ),
    _marmot("snapshots", 5, "The rollback window: epochs whose pre-commit state and decided events are kept.", 1, 255),
    _marmot("past_epochs", 5, "Past epochs whose keys a joined group keeps for late messages.", 1, 255),
    _marmot(
        "max_event_age_s",
        45 * 86_400,
        "Relay events dated further back are dropped; 0: no limit.",
        0,
        100 * 365 * 86_400,
    ),
    _marmot("max_future_skew_s", 300, "Relay events dated further ahead are dropped; 0: no limit.", 0, 365 * 86_400),
    _marmot(
        "backfill_workers",
        min(os.cpu_count() or 1, 256),
        "Worker processes that verify and open a backfill's events ahead of the writer; 0: the writer does it all.",
        0,
        256,
    ),
    # Less than a minute of lookback loses the events of members whose clocks are a little behind ours.
    _marmot(
        "fetch_lookback_s",
        300,
        "How far before a group's fetch cursor and last complete fetch `sync` asks relays from.",
        60,
        30 * 86_400,
    ),
    _marmot("fetch_timeout_s", 10, "How long `sync` waits for a relay's connection and each page's EOSE.", 1, 3_600),
    # The bound on a command's first try at a relay that is down (then it says "queued; will retry").
    _marmot(
        "publish_timeout_s",
        10,
        "How long one try to publish an event waits for a relay to connect and answer OK before it counts as "
        "failed (retried with backoff for the core's outgoing_retry_horizon_ms).",
        1,
        3_600,
    ),
    # Below these a relay's ordinary burst (a page of a catch-up) would be held back.
    _marmot(
        "relay_backlog_events",
        2_000,
        "Events one relay may have handed to `listen` that the tick has not processed; beyond it it is not read.",
        100,
        10_000_000,
    ),
    _marmot("relay_backlog_bytes", 8 * 1_048_576, "The same in bytes.", 1_048_576, 10**12),
)
_DEFAULTS = {s.name: s.default for s in SETTINGS}


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
        publish_timeout_s: how long one try to publish an event waits for
            a relay to connect and to answer OK; a relay that is down costs a
            command at most this before it says the event is queued.
        relay_backlog_events: how many events one relay may have handed to
            ``listen`` that the tick has not processed yet; while it has, that
            relay is not read (it keeps the rest), so a relay's flood bounds
            neither memory nor the queue, and other relays go on.
        relay_backlog_bytes: likewise, in bytes (content plus an estimate of
            the rest of each event).
    """

    wait_horizon_ms: int = _DEFAULTS["wait_horizon_ms"]
    snapshots: int = _DEFAULTS["snapshots"]
    past_epochs: int = _DEFAULTS["past_epochs"]
    max_event_age_s: int = _DEFAULTS["max_event_age_s"]
    max_future_skew_s: int = _DEFAULTS["max_future_skew_s"]
    backfill_workers: int = _DEFAULTS["backfill_workers"]
    fetch_lookback_s: int = _DEFAULTS["fetch_lookback_s"]
    fetch_timeout_s: int = _DEFAULTS["fetch_timeout_s"]
    publish_timeout_s: int = _DEFAULTS["publish_timeout_s"]
    relay_backlog_events: int = _DEFAULTS["relay_backlog_events"]
    relay_backlog_bytes: int = _DEFAULTS["relay_backlog_bytes"]

    def admits(self, created_at: int, now_s: int) -> str | None:
        """None when an event of ``created_at`` may be queued now, else why not (``too_old`` / ``too_far_ahead``)."""
        if self.max_event_age_s and created_at < now_s - self.max_event_age_s:
            return "too_old"
        if self.max_future_skew_s and created_at > now_s + self.max_future_skew_s:
            return "too_far_ahead"
        return None

    @classmethod
    def of(cls, settings: Settings | None = None) -> MarmotSettings:
        """The values in force for the app whose core ``settings`` these are (None: the process's environment)."""
        sources = Sources() if settings is None else settings.sources
        return cls(**sources.values(SETTINGS))

    @classmethod
    def load(cls, env: Mapping[str, str]) -> MarmotSettings:
        """The values ``env`` gives (defaults for the rest), checked."""
        return cls(**Sources(env=env).values(SETTINGS))
