"""The core's settings: one table of (name, default, help, range), and the resolved :class:`Settings`.

Each setting is read, in this order, from a flag (or a keyword override in
code), the environment (``TESSERA_<NAME>``), the config file (``[core]``;
see :mod:`core.config_file`) and its default (:mod:`core.setting_sources`),
and checked against its range wherever settings are made (every source,
``attrs.evolve``), so a bad value is refused when read, with the setting, where
it came from, the value and the allowed range, not when it misbehaves later.
A component may pass a prefix, so ``TESSERA_TICK_LEASE_TTL_MS`` overrides
``TESSERA_LEASE_TTL_MS`` for the tick only.  Plugins declare their own
settings the same way (the ``register_settings`` hook) and read them from the
:class:`Settings`' :attr:`~Settings.sources`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from core.config_file import ConfigFile
from core.errors import InvalidInput
from core.setting import Setting, check
from core.setting_sources import Sources

__all__ = ["SETTINGS", "Setting", "Settings"]

_HOUR_MS = 3_600_000
_DAY_MS = 24 * _HOUR_MS
# SQLite refuses strings and blobs longer than this (SQLITE_MAX_LENGTH's default).
_SQLITE_MAX_LENGTH = 1_000_000_000

SETTINGS: tuple[Setting, ...] = (
    Setting("db", "tessera.db", "Path of the SQLite database file.", 1, 4096),
    Setting(
        "key_file",
        "",
        "File holding the database's secret (64 hex characters; `tessera key new` makes one): the database "
        "file and the plugins' sealed state are encrypted with keys derived from it. Empty: no key.",
        0,
        4096,
    ),
    Setting("cache_mib", 64, "SQLite page cache per connection, in MiB.", 1, 65_536),
    Setting("busy_timeout_ms", 30_000, "How long SQLite waits for the write lock before one retry round.", 0, _HOUR_MS),
    Setting("busy_retries", 5, "Extra BEGIN IMMEDIATE attempts (with backoff) before DatabaseBusy.", 0, 100),
    Setting("slow_statement_ms", 50, "Statements slower than this are logged with their SQL.", 0, _HOUR_MS),
    Setting(
        "max_item_bytes", 1_048_576, "Largest wire blob ingest accepts; bigger ones are refused.", 1, _SQLITE_MAX_LENGTH
    ),
    Setting(
        "batch_items",
        256,
        "Micro-batch mode: items committed together, each in its own savepoint (a failing item rolls back "
        "alone); a crash loses at most the uncommitted batch, which is then redone. 1: a transaction per item.",
        1,
        100_000,
    ),
    Setting(
        "batch_ms",
        50,
        "A micro-batch commits after this long even if it has fewer items: the longest a batch holds the write "
        "lock, and the longest its items wait to be seen by readers.",
        1,
        60_000,
    ),
    Setting(
        "checkpoint_pages",
        # Not SQLite's 1,000: each time the WAL starts over, the first COMMIT syncs its new header with the write
        # lock held, and a page changed again before the copy is copied once.  8,000 measured 11% fewer bytes
        # written an event and a tenth faster 2M fills than 1,000 (docs/benchmarks.md, *Measured after the full run*).
        8_000,
        "WAL pages after which a thread beside the writer copies the WAL back into the database file (a passive "
        "checkpoint: it takes no write lock); 0: SQLite does it inside the COMMIT that passes 1,000 pages.",
        0,
        10_000_000,
    ),
    Setting("max_attempts", 5, "Tries of a failing or still-blocked item before it is parked.", 1, 1000),
    Setting("retry_base_ms", 1_000, "First retry delay; each further retry doubles it.", 1, _DAY_MS),
    Setting("retry_max_ms", 300_000, "Upper bound of the retry delay.", 1, 30 * _DAY_MS),
    # A relay or node that is down for a night must not dead-letter what we send: the horizon, not
    # max_attempts, decides when a transiently failing outgoing message is given up on.
    Setting(
        "outgoing_retry_horizon_ms",
        _DAY_MS,
        "How long an outgoing message whose transport fails transiently (relay or node down) is retried, with "
        "exponential backoff and jitter capped at retry_max_ms, counted from when it was queued, before it is "
        "parked.",
        1_000,
        365 * _DAY_MS,
    ),
    Setting(
        "blocked_max_age_ms",
        7 * _DAY_MS,
        "Blocked items older than this with no recheck are parked.",
        1_000,
        3650 * _DAY_MS,
    ),
    # A floor below which a healthy catch-up (events of later epochs waiting for their commit) would be cut off.
    Setting(
        "partition_wait_items",
        10_000,
        "Patient waits (blocked items with a horizon) one partition of one protocol may hold; a new one beyond it "
        "evicts the oldest, dropped and counted (counter dropped.<protocol>.wait_budget).",
        100,
        1_000_000_000,
    ),
    Setting(
        "partition_wait_bytes",
        16 * 1_048_576,
        "Bytes of wire blobs the patient waits of one partition of one protocol may hold; beyond it the oldest "
        "are evicted, as for partition_wait_items.",
        1_048_576,
        1_000_000_000_000,
    ),
    Setting(
        "lease_ttl_ms", 15_000, "Lifetime of the tick lease; the holder renews it at a third of this.", 100, _HOUR_MS
    ),
    # Below ~10 ms an idle daemon polls so often that it keeps a core busy.
    Setting("idle_max_ms", 1_000, "Longest sleep of an idle tick loop (it backs off up to this).", 10, 60_000),
    Setting("blob_slice_max_bytes", 4_194_304, "Largest file slice accepted.", 1, _SQLITE_MAX_LENGTH),
    Setting("counter_flush_ms", 1_000, "How often the daemon writes its counters to kv for status.", 10, _HOUR_MS),
    Setting(
        "pause_base_ms",
        1_000,
        "First pause of the daemon after a storage failure (disk full, I/O error, "
        "write lock taken); each further one doubles it.",
        10,
        _HOUR_MS,
    ),
    Setting(
        "pause_max_ms", 60_000, "Longest pause of the daemon between tries while storage keeps failing.", 10, _DAY_MS
    ),
    Setting(
        "give_up_after_ms",
        300_000,
        "How long `tick --until-idle` keeps trying while storage fails (disk full, I/O error, no memory) before "
        "it exits with status 75, changing nothing; a daemon without --until-idle keeps trying.",
        0,
        _DAY_MS,
    ),
    Setting(
        "optimize_interval_ms",
        _HOUR_MS,
        "How often the daemon runs PRAGMA optimize (refreshing the query planner's statistics).",
        1_000,
        30 * _DAY_MS,
    ),
    Setting(
        "secure_delete",
        1,
        "1: SQLite overwrites deleted content with zeros where it lies (stale copies a page rebalance left "
        "behind wait for the scrub); 0: faster deletes, but deleted bytes linger in free space until reused or "
        "scrubbed.",
        0,
        1,
    ),
    Setting(
        "scrub_interval_ms",
        _HOUR_MS,
        "After a purge, the daemon rewrites the file (VACUUM) so no purged byte survives anywhere in it, at most "
        "once per this interval; the write lock is held for the whole rewrite.",
        0,
        365 * _DAY_MS,
    ),
    Setting(
        "optimize_after_rows",
        100_000,
        "Rows the daemon writes that make it run PRAGMA optimize early (after a big load).",
        1,
        1_000_000_000_000,
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}


def _in_range(instance: Any, attribute: attrs.Attribute[int], value: Any) -> None:
    setting = _BY_NAME[attribute.name]
    check(setting, value, f"setting {setting.name} ({setting.env_key})")


def _field(name: str) -> Any:
    return attrs.field(default=_BY_NAME[name].default, validator=_in_range)


@attrs.frozen(kw_only=True)
class Settings:
    """Resolved settings (see :data:`SETTINGS` for what each one means)."""

    db: str = _field("db")
    key_file: str = _field("key_file")
    cache_mib: int = _field("cache_mib")
    busy_timeout_ms: int = _field("busy_timeout_ms")
    busy_retries: int = _field("busy_retries")
    slow_statement_ms: int = _field("slow_statement_ms")
    max_item_bytes: int = _field("max_item_bytes")
    max_attempts: int = _field("max_attempts")
    retry_base_ms: int = _field("retry_base_ms")
    retry_max_ms: int = _field("retry_max_ms")
    outgoing_retry_horizon_ms: int = _field("outgoing_retry_horizon_ms")
    blocked_max_age_ms: int = _field("blocked_max_age_ms")
    partition_wait_items: int = _field("partition_wait_items")
    partition_wait_bytes: int = _field("partition_wait_bytes")
    lease_ttl_ms: int = _field("lease_ttl_ms")
    idle_max_ms: int = _field("idle_max_ms")
    blob_slice_max_bytes: int = _field("blob_slice_max_bytes")
    counter_flush_ms: int = _field("counter_flush_ms")
    pause_base_ms: int = _field("pause_base_ms")
    pause_max_ms: int = _field("pause_max_ms")
    give_up_after_ms: int = _field("give_up_after_ms")
    optimize_interval_ms: int = _field("optimize_interval_ms")
    optimize_after_rows: int = _field("optimize_after_rows")
    secure_delete: int = _field("secure_delete")
    scrub_interval_ms: int = _field("scrub_interval_ms")
    batch_items: int = _field("batch_items")
    batch_ms: int = _field("batch_ms")
    checkpoint_pages: int = _field("checkpoint_pages")
    #: Where these came from; plugins read their own settings from the same places.
    sources: Sources = attrs.field(factory=Sources, eq=False, repr=False)

    @classmethod
    def load(
        cls,
        *,
        prefix: str = "",
        env: Mapping[str, str] | None = None,
        config: ConfigFile | None = None,
        **overrides: Any,
    ) -> Settings:
        """Each setting from ``overrides`` (None values ignored), else ``env`` (default: the process's), else
        ``config``, else its default."""
        unknown = set(overrides) - set(_BY_NAME)
        if unknown:
            raise InvalidInput(f"unknown setting(s) {sorted(unknown)}; known: {sorted(_BY_NAME)}")
        flags = {_BY_NAME[k].key: v for k, v in overrides.items() if v is not None}
        sources = Sources(flags=flags, env=env, config=config, prefix=prefix)
        return cls(**sources.values(SETTINGS), sources=sources)

    def given(self, **flags: Any) -> Settings:
        """These settings with ``flags`` given too (a command's own options), from the same sources otherwise."""
        sources = self.sources
        given = {key.partition(".")[2]: value for key, value in sources.flags.items()}
        return Settings.load(prefix=sources.prefix, env=sources.env, config=sources.config, **{**given, **flags})

    def retry_delay_ms(self, attempts: int) -> int:
        """Backoff before retry number ``attempts`` (1-based): doubling, capped."""
        return int(min(self.retry_base_ms * (2 ** min(max(attempts - 1, 0), 62)), self.retry_max_ms))
