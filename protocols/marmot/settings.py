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
}
# (smallest, largest) accepted value of each setting.
_RANGES = {
    "wait_horizon_ms": (1_000, 365 * 24 * 3_600_000),
    "snapshots": (1, 255),
    "past_epochs": (1, 255),
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
    """

    wait_horizon_ms: int = WEEK_MS
    snapshots: int = 5
    past_epochs: int = 5

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
