"""The store's limits, its retention policy and the server's settings, as the core's settings give them.

Defaults are the seed's: 256 KiB payloads, 10,000 application messages per
group per day (MLS control messages are not counted), 1 GiB of payloads,
500 groups per installation, 90 days of history, cleanup every 6 hours;
and 100 installations per account address in the identity directory.
The values come from the settings :mod:`.settings` declares (flag,
environment, config file, default), or from the TOML file ``serve --config``
names.  An unknown key, a wrong type or a value out of range is refused with
:class:`~protocols.sovereign.errors.InvalidConfig` naming it, and so is a
send queue too small for a healthy client (see :func:`minimum_send_queue_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from core.config_file import ConfigFile
from core.errors import InvalidSetting
from core.setting_sources import DEFAULT, Sources
from protocols.libraries.delivery.records import message_wire_bytes
from protocols.sovereign.errors import InvalidConfig
from protocols.sovereign.settings import BY_NAME, SECTION, SETTINGS

MIB = 1024 * 1024
#: Requests one connection may have in the store at once; beyond it the server stops reading its frames.
READ_AHEAD = 64
#: What a reply adds around the messages it carries (its type, id, cursor, ``has_more``), at most.
FRAME_ENVELOPE_BYTES = 256


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfig(f"{attribute.name} must be a non-negative integer, got {value!r}")


def _port(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    _positive(instance, attribute, value)
    if value > 65535:
        raise InvalidConfig(f"port must be 0 (any free port) to 65535, got {value}")


@attrs.frozen
class Limits:
    """What one request may not push past.  0 for a limit means no limit (except the payload size)."""

    max_payload_bytes: int = attrs.field(default=256 * 1024, validator=_positive)
    max_app_messages_per_group_per_day: int = attrs.field(default=10_000, validator=_positive)
    max_storage_mb: int = attrs.field(default=1024, validator=_positive)
    max_groups_per_user: int = attrs.field(default=500, validator=_positive)
    max_installations_per_address: int = attrs.field(default=100, validator=_positive)

    @property
    def max_storage_bytes(self) -> int:
        return self.max_storage_mb * MIB


@attrs.frozen
class Retention:
    """How old messages and a full store are trimmed (see :mod:`.retention`)."""

    retention_days: int = attrs.field(default=90, validator=_positive)  # 0 keeps messages forever
    max_storage_mb: int = attrs.field(default=1024, validator=_positive)  # 0: no trimming by size
    cleanup_interval_s: int = attrs.field(default=6 * 3600, validator=_positive)
    batch_size: int = attrs.field(default=500, validator=_positive)
    vacuum_interval_s: int = attrs.field(default=24 * 3600, validator=_positive)
    vacuum_pages: int = attrs.field(default=2000, validator=_positive)


def _host(value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidConfig(f"host must be a host name or address, got {value!r}")


def _xmtp_port(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= 65535:
        raise InvalidConfig(f"xmtp_port must be -1 (no XMTP node), 0 (any free port) or a port, got {value!r}")


@attrs.frozen
class ServerConfig:
    """``tessera serve``'s settings."""

    host: str = attrs.field(default="127.0.0.1", validator=lambda _, __, v: _host(v))
    port: int = attrs.field(default=8765, validator=_port)
    max_frame_bytes: int = attrs.field(default=384 * 1024, validator=_positive)
    send_queue_bytes: int = attrs.field(default=32 * MIB, validator=_positive)
    auth_timeout_s: int = attrs.field(default=10, validator=_positive)
    xmtp_port: int = attrs.field(default=-1, validator=lambda _, __, v: _xmtp_port(v))
    xmtp_max_streams: int = attrs.field(default=1000, validator=_positive)
    xmtp_max_streams_per_connection: int = attrs.field(default=100, validator=_positive)
    limits: Limits = attrs.field(factory=Limits)
    retention: Retention = attrs.field(factory=Retention)

    def __attrs_post_init__(self) -> None:
        smallest = minimum_send_queue_bytes(self.limits)
        if self.send_queue_bytes < smallest:
            raise InvalidConfig(
                f"send_queue_bytes = {self.send_queue_bytes} would cut off healthy clients: the replies to the "
                f"{READ_AHEAD} requests the server reads ahead and one push need {smallest} bytes (each frame up to "
                f"{self.largest_frame_bytes} with max_payload_bytes = {self.limits.max_payload_bytes}); "
                f"raise it to at least {smallest}"
            )

    @property
    def largest_frame_bytes(self) -> int:
        """The largest frame the server sends: a message with the largest payload, or a page of history."""
        return largest_frame_bytes(self.limits)


def largest_frame_bytes(limits: Limits) -> int:
    """The largest frame sent under ``limits``: a push of a largest message (history pages are cut to it)."""
    return message_wire_bytes(limits.max_payload_bytes) + FRAME_ENVELOPE_BYTES


def minimum_send_queue_bytes(limits: Limits) -> int:
    """The smallest send queue that never cuts off a client that reads: a full read-ahead's replies and a push.

    Replies share the queue with pushes, and a client that keeps many requests
    in flight may have the replies of all :data:`READ_AHEAD` of them waiting
    at once (the store answers them in batches); below this, such a client
    is disconnected although it reads everything.
    """
    return (READ_AHEAD + 1) * largest_frame_bytes(limits)


#: The tables of a file ``serve --config`` names (the ``[sovereign.*]`` tables of the config file).
_TABLES = ("server", "limits", "storage")
#: Keys that were replaced, and what by (refused with that said, not as merely unknown).
_RETIRED_KEYS = {
    "server.send_queue_frames": "send_queue_bytes (a byte budget per connection; see docs/server-protocol.md)",
}


def load(path: Path | None, sources: Sources | None = None) -> ServerConfig:
    """The configuration in force: ``sources`` (default: the environment), with the TOML file at ``path``
    (``serve --config``: tables ``server``, ``limits``, ``storage``) in place of the config file's
    ``[sovereign.*]`` tables."""
    sources = Sources() if sources is None else sources
    if path is not None:
        try:
            file = ConfigFile.read(path, section=SECTION)
        except InvalidSetting as exc:
            raise InvalidConfig(str(exc)) from None
        sources = sources.with_config(_checked(file, str(path)))
    return from_sources(sources)


def from_mapping(raw: dict[str, Any], source: str = "configuration") -> ServerConfig:
    """The configuration a parsed ``serve --config`` document describes (tables ``server``, ``limits``, ``storage``)."""
    document = ConfigFile(Path(source), {SECTION: dict(_flatten_tables(raw, source))})
    return from_sources(Sources(env={}, config=_checked(document, source)))


def _flatten_tables(raw: dict[str, Any], source: str) -> Iterator[tuple[str, Any]]:
    unknown = set(raw) - set(_TABLES)
    if unknown:
        raise InvalidConfig(f"{source}: unknown section(s) {sorted(unknown)}; known: {', '.join(_TABLES)}")
    for table, values in raw.items():
        if not isinstance(values, dict):
            raise InvalidConfig(f"{source}: [{table}] must be a table")
        for key, value in values.items():
            yield f"{table}.{key}", value


def _checked(file: ConfigFile, source: str) -> ConfigFile:
    """``file`` once its tables, retired keys and unknown keys are checked (all refused as InvalidConfig)."""
    values = file.values.get(SECTION, {})
    tables = {name.partition(".")[0] for name in values}
    if not tables <= set(_TABLES):
        raise InvalidConfig(
            f"{source}: unknown section(s) {sorted(tables - set(_TABLES))}; known: {', '.join(_TABLES)}"
        )
    for name in sorted(set(values) & set(_RETIRED_KEYS)):
        table, _, key = name.partition(".")
        raise InvalidConfig(f"{source}: [{table}] {key} is no longer read; use {_RETIRED_KEYS[name]}")
    try:
        file.check_known(SETTINGS)
    except InvalidSetting as exc:
        raise InvalidConfig(str(exc)) from None
    return file


def from_sources(sources: Sources) -> ServerConfig:
    """The configuration the ``sovereign`` settings in force describe (flags, environment, config file, defaults)."""
    try:
        given = sources.values(SETTINGS)
        # Unset, the store trims by size at the payload limit.
        trim_given = sources.resolve(BY_NAME["storage.max_storage_mb"]).source != DEFAULT
        made_limits = Limits(**_table(given, "limits"))
        storage = _table(given, "storage")
        retention = Retention(
            retention_days=storage["retention_days"],
            max_storage_mb=storage["max_storage_mb"] if trim_given else made_limits.max_storage_mb,
            cleanup_interval_s=int(storage["cleanup_interval_hours"] * 3600),
            batch_size=storage["batch_size"],
            vacuum_interval_s=int(storage["vacuum_interval_hours"] * 3600),
            vacuum_pages=storage["vacuum_pages"],
        )
        return ServerConfig(**_table(given, "server"), limits=made_limits, retention=retention)
    except InvalidConfig:
        raise
    except InvalidSetting as exc:
        raise InvalidConfig(str(exc)) from None


def _table(given: dict[str, Any], table: str) -> dict[str, Any]:
    return {name.partition(".")[2]: value for name, value in given.items() if name.startswith(f"{table}.")}
