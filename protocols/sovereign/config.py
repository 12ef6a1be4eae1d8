"""The store's limits, its retention policy and the server's settings, from one TOML file (``tomllib``).

Defaults are the seed's: 256 KiB payloads, 10,000 application messages per
group per day (MLS control messages are not counted), 1 GiB of payloads,
500 groups per installation, 90 days of history, cleanup every 6 hours;
and 100 installations per account address in the identity directory.
An unknown key, a wrong type or a value out of range is refused with
:class:`~protocols.sovereign.errors.InvalidConfig` naming it, and so is a
send queue too small for a healthy client (see :func:`minimum_send_queue_bytes`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import attrs

from protocols.libraries.delivery.records import message_wire_bytes
from protocols.sovereign.errors import InvalidConfig

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


@attrs.frozen
class ServerConfig:
    """``tessera serve``'s settings."""

    host: str = attrs.field(default="127.0.0.1", validator=lambda _, __, v: _host(v))
    port: int = attrs.field(default=8765, validator=_port)
    max_frame_bytes: int = attrs.field(default=384 * 1024, validator=_positive)
    send_queue_bytes: int = attrs.field(default=32 * MIB, validator=_positive)
    auth_timeout_s: int = attrs.field(default=10, validator=_positive)
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


_SERVER_KEYS = {"host", "port", "max_frame_bytes", "send_queue_bytes", "auth_timeout_s"}
#: Keys that were replaced, and what by (refused with that said, not as merely unknown).
_RETIRED_KEYS = {
    "send_queue_frames": "send_queue_bytes (a byte budget per connection; see docs/server-protocol.md)",
}
_LIMIT_KEYS = {f.name for f in attrs.fields(Limits)}
_STORAGE_KEYS = {
    "retention_days",
    "max_storage_mb",
    "cleanup_interval_hours",
    "batch_size",
    "vacuum_interval_hours",
    "vacuum_pages",
}


def load(path: Path | None) -> ServerConfig:
    """The configuration in the TOML file at ``path`` (defaults for whatever it leaves out; all defaults without one)."""
    if path is None:
        return ServerConfig()
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidConfig(f"cannot read the configuration {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidConfig(f"{path} is not valid TOML: {exc}") from None
    return from_mapping(raw, str(path))


def from_mapping(raw: dict[str, Any], source: str = "configuration") -> ServerConfig:
    """The configuration a parsed TOML document describes (sections ``server``, ``limits``, ``storage``)."""
    unknown = set(raw) - {"server", "limits", "storage"}
    if unknown:
        raise InvalidConfig(f"{source}: unknown section(s) {sorted(unknown)}; known: server, limits, storage")
    server = _section(raw, "server", _SERVER_KEYS, source)
    limits = _section(raw, "limits", _LIMIT_KEYS, source)
    storage = _section(raw, "storage", _STORAGE_KEYS, source)
    try:
        made_limits = Limits(**limits)
        retention = Retention(
            retention_days=storage.get("retention_days", 90),
            max_storage_mb=storage.get("max_storage_mb", made_limits.max_storage_mb),
            cleanup_interval_s=_hours(storage, "cleanup_interval_hours", 6),
            batch_size=storage.get("batch_size", 500),
            vacuum_interval_s=_hours(storage, "vacuum_interval_hours", 24),
            vacuum_pages=storage.get("vacuum_pages", 2000),
        )
        return ServerConfig(**server, limits=made_limits, retention=retention)
    except InvalidConfig as exc:
        raise InvalidConfig(f"{source}: {exc}") from None
    except TypeError as exc:
        raise InvalidConfig(f"{source}: {exc}") from None


def _section(raw: dict[str, Any], name: str, known: set[str], source: str) -> dict[str, Any]:
    section = raw.get(name, {})
    if not isinstance(section, dict):
        raise InvalidConfig(f"{source}: [{name}] must be a table")
    for key in sorted(set(section) & set(_RETIRED_KEYS)):
        raise InvalidConfig(f"{source}: [{name}] {key} is no longer read; use {_RETIRED_KEYS[key]}")
    unknown = set(section) - known
    if unknown:
        raise InvalidConfig(f"{source}: unknown key(s) {sorted(unknown)} in [{name}]; known: {sorted(known)}")
    return dict(section)


def _hours(storage: dict[str, Any], key: str, default: int) -> int:
    value = storage.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidConfig(f"{key} must be a non-negative number of hours, got {value!r}")
    return int(value * 3600)
