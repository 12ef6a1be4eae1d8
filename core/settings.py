"""Settings: one table of (name, default, help), read from the environment.

Each setting ``name`` is read from ``TESSERA_<NAME>`` (upper case).  A
component may pass a prefix, so ``TESSERA_TICK_LEASE_TTL_MS`` overrides
``TESSERA_LEASE_TTL_MS`` for the tick only.  Explicit keyword overrides win
over the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from core.errors import InvalidInput


@attrs.frozen
class Setting:
    """One tunable.

    Attributes:
        name: attribute name on :class:`Settings`; env key is ``TESSERA_`` + upper.
        default: value when nothing overrides it; its type is the setting's type.
        help: one sentence for the docs and ``tessera settings``.
    """

    name: str
    default: Any
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("db", "tessera.db", "Path of the SQLite database file."),
    Setting("cache_mib", 64, "SQLite page cache per connection, in MiB."),
    Setting("busy_timeout_ms", 30_000, "How long SQLite waits for the write lock before one retry round."),
    Setting("busy_retries", 5, "Extra BEGIN IMMEDIATE attempts (with backoff) before DatabaseBusy."),
    Setting("slow_statement_ms", 50, "Statements slower than this are logged with their SQL."),
    Setting("max_item_bytes", 1_048_576, "Largest wire blob ingest accepts; bigger ones are refused."),
    Setting("max_attempts", 5, "Tries of a failing or still-blocked item before it is parked."),
    Setting("retry_base_ms", 1_000, "First retry delay; each further retry doubles it."),
    Setting("retry_max_ms", 300_000, "Upper bound of the retry delay."),
    Setting("blocked_max_age_ms", 7 * 24 * 3_600_000, "Blocked items older than this with no recheck are parked."),
    Setting("lease_ttl_ms", 15_000, "Lifetime of the tick lease; the holder renews it at a third of this."),
    Setting("idle_max_ms", 1_000, "Longest sleep of an idle tick loop (it backs off up to this)."),
    Setting("blob_slice_max_bytes", 4_194_304, "Largest file slice accepted."),
    Setting("counter_flush_ms", 1_000, "How often the daemon writes its counters to kv for status."),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def _convert(setting: Setting, raw: str) -> Any:
    kind = type(setting.default)
    try:
        return kind(raw)
    except ValueError as exc:
        raise InvalidInput(
            f"setting {setting.name} must be {kind.__name__}, got {raw!r}; fix TESSERA_{setting.name.upper()}"
        ) from exc


def _from_env(env: Mapping[str, str], prefix: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        keys = [f"TESSERA_{setting.name.upper()}"]
        if prefix:
            keys.insert(0, f"TESSERA_{prefix.upper()}_{setting.name.upper()}")
        for key in keys:
            if key in env:
                values[setting.name] = _convert(setting, env[key])
                break
    return values


@attrs.frozen(kw_only=True)
class Settings:
    """Resolved settings (see :data:`SETTINGS` for what each one means)."""

    db: str = _BY_NAME["db"].default
    cache_mib: int = _BY_NAME["cache_mib"].default
    busy_timeout_ms: int = _BY_NAME["busy_timeout_ms"].default
    busy_retries: int = _BY_NAME["busy_retries"].default
    slow_statement_ms: int = _BY_NAME["slow_statement_ms"].default
    max_item_bytes: int = _BY_NAME["max_item_bytes"].default
    max_attempts: int = _BY_NAME["max_attempts"].default
    retry_base_ms: int = _BY_NAME["retry_base_ms"].default
    retry_max_ms: int = _BY_NAME["retry_max_ms"].default
    blocked_max_age_ms: int = _BY_NAME["blocked_max_age_ms"].default
    lease_ttl_ms: int = _BY_NAME["lease_ttl_ms"].default
    idle_max_ms: int = _BY_NAME["idle_max_ms"].default
    blob_slice_max_bytes: int = _BY_NAME["blob_slice_max_bytes"].default
    counter_flush_ms: int = _BY_NAME["counter_flush_ms"].default

    @classmethod
    def load(cls, *, prefix: str = "", env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then the environment, then ``overrides`` (None values ignored)."""
        unknown = set(overrides) - set(_BY_NAME)
        if unknown:
            raise InvalidInput(f"unknown setting(s) {sorted(unknown)}; known: {sorted(_BY_NAME)}")
        values = _from_env(os.environ if env is None else env, prefix)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def retry_delay_ms(self, attempts: int) -> int:
        """Backoff before retry number ``attempts`` (1-based): doubling, capped."""
        return min(self.retry_base_ms * (2 ** max(attempts - 1, 0)), self.retry_max_ms)
