"""The plugin's own tunables, read from ``TESSERA_MARMOT_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from core.errors import InvalidInput

_ENV = {
    "max_retries": "TESSERA_MARMOT_MAX_RETRIES",
    "retry_ms": "TESSERA_MARMOT_RETRY_MS",
    "snapshots": "TESSERA_MARMOT_SNAPSHOTS",
}
_MAX_BACKOFF_MS = 300_000


@attrs.frozen
class MarmotSettings:
    """Resolved plugin settings.

    Attributes:
        max_retries: rechecks of an unreadable outer event before it is recorded Failed.
        retry_ms: first recheck delay of an unreadable event; doubles per recheck.
        snapshots: pre-commit snapshots kept per group, i.e. how many epochs back
            a better commit can still roll the group back.
    """

    max_retries: int = 3
    retry_ms: int = 1000
    snapshots: int = 5

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None) -> MarmotSettings:
        env = os.environ if env is None else env
        values = {}
        for name, key in _ENV.items():
            if key in env:
                values[name] = _positive(key, env[key], allow_zero=name == "max_retries")
        return cls(**values)

    def budget(self, core_max_attempts: int) -> int:
        """Rechecks we allow before giving up; always below the core's parking limit.

        The core parks a blocked item once its attempts reach
        ``max_attempts``; the plugin must record its own Failed outcome first.
        """
        return max(0, min(self.max_retries, core_max_attempts - 1))

    def backoff_ms(self, attempts: int) -> int:
        return min(self.retry_ms * (2 ** max(attempts, 0)), _MAX_BACKOFF_MS)


def _positive(key: str, raw: str, *, allow_zero: bool) -> int:
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < (0 if allow_zero else 1):
        raise InvalidInput(f"{key} must be a {'non-negative' if allow_zero else 'positive'} integer, got {raw!r}")
    return value


_CACHE: dict[tuple, MarmotSettings] = {}


def current() -> MarmotSettings:
    """Settings for the current environment (cached per distinct set of values)."""
    key = tuple(os.environ.get(k) for k in _ENV.values())
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = MarmotSettings.load()
    return found
