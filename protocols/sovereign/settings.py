"""``tessera serve``'s settings, declared to the core: the ``[sovereign.server]``, ``[sovereign.limits]`` and
``[sovereign.storage]`` tables of the config file (or ``[server]``, ``[limits]``, ``[storage]`` of the file
``serve --config`` names), ``TESSERA_SOVEREIGN_<TABLE>_<KEY>`` in the environment.

A module of its own, cheap to import: the core asks for it whenever settings
are read.  :mod:`.config` turns the values in force into a ``ServerConfig``.
"""

from __future__ import annotations

from core.setting import Setting

SECTION = "sovereign"
#: The largest integer SQLite stores: the ceiling of limits that have no other.
INT64_MAX = 2**63 - 1


def _serve(name: str, default: int | float | str, help: str, minimum: int = 0, maximum: int = INT64_MAX) -> Setting:
    return Setting(name, default, help, minimum, maximum, section=SECTION)


SETTINGS: tuple[Setting, ...] = (
    _serve("server.host", "127.0.0.1", "Address `tessera serve` listens on.", 1, 255),
    _serve("server.port", 8765, "Port `tessera serve` listens on; 0: any free port.", 0, 65_535),
    _serve("server.max_frame_bytes", 384 * 1024, "Largest request frame read (payload limit + base64 + JSON)."),
    _serve(
        "server.send_queue_bytes",
        32 * 1_048_576,
        "Bytes of frames waiting for one connection's socket, at most (no smaller than a full read-ahead's replies).",
    ),
    _serve("server.auth_timeout_s", 10, "Time from the challenge to a valid hello."),
    _serve(
        "server.xmtp_port",
        -1,
        "Port the XMTP node (gRPC, XMTP v3 API) listens on, on the same host; 0: any free port; -1: no XMTP node.",
        -1,
        65_535,
    ),
    _serve("server.xmtp_max_streams", 1000, "XMTP streams open at once over the whole node.", 1, 1_000_000),
    _serve("server.xmtp_max_streams_per_connection", 100, "XMTP streams one connection may hold open.", 1, 100_000),
    _serve("limits.max_payload_bytes", 256 * 1024, "Largest MLS payload stored."),
    _serve(
        "limits.max_app_messages_per_group_per_day",
        10_000,
        "Application messages one group may store per day (control messages not counted); 0: no limit.",
    ),
    _serve("limits.max_storage_mb", 1024, "Payload bytes the store may hold, in MiB; 0: no limit."),
    _serve("limits.max_groups_per_user", 500, "Groups one installation may be a member of; 0: no limit."),
    _serve("limits.max_installations_per_address", 100, "Installations one account address may bind; 0: no limit."),
    _serve("storage.retention_days", 90, "Messages older than this are removed for good; 0 keeps them forever."),
    _serve(
        "storage.max_storage_mb",
        1024,
        "Trim the oldest messages beyond this many MiB; 0: no trimming by size (unset: limits.max_storage_mb).",
    ),
    _serve("storage.cleanup_interval_hours", 6.0, "How often retention runs."),
    _serve("storage.batch_size", 500, "Messages removed per retention transaction."),
    _serve("storage.vacuum_interval_hours", 24.0, "How often the store reclaims free pages."),
    _serve("storage.vacuum_pages", 2000, "Free pages reclaimed per incremental vacuum."),
)
BY_NAME = {setting.name: setting for setting in SETTINGS}
