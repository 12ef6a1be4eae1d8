"""The server's TOML configuration: defaults, every table, and refusals that name the key."""

from __future__ import annotations

import pytest

from protocols.libraries.delivery import frames
from protocols.libraries.delivery.records import StoredMessage
from protocols.sovereign.config import (
    FRAME_ENVELOPE_BYTES,
    MIB,
    READ_AHEAD,
    Limits,
    Retention,
    ServerConfig,
    from_mapping,
    load,
    minimum_send_queue_bytes,
)
from protocols.sovereign.errors import InvalidConfig


def test_no_file_means_the_seeds_defaults() -> None:
    config = load(None)
    assert config == ServerConfig()
    assert (config.limits.max_payload_bytes, config.limits.max_app_messages_per_group_per_day) == (262_144, 10_000)
    assert (config.limits.max_storage_bytes, config.limits.max_groups_per_user) == (1024 * MIB, 500)
    assert config.limits.max_installations_per_address == 100
    assert (config.retention.retention_days, config.retention.cleanup_interval_s) == (90, 6 * 3600)


def test_a_file_sets_every_table(tmp_path) -> None:
    path = tmp_path / "server.toml"
    path.write_text(
        '[server]\nhost = "0.0.0.0"\nport = 9000\n'
        "[limits]\nmax_payload_bytes = 1000\nmax_storage_mb = 5\nmax_installations_per_address = 3\n"
        "[storage]\nretention_days = 7\ncleanup_interval_hours = 0.5\nvacuum_pages = 10\n"
    )
    config = load(path)
    assert (config.host, config.port) == ("0.0.0.0", 9000)
    assert config.limits == Limits(max_payload_bytes=1000, max_storage_mb=5, max_installations_per_address=3)
    assert config.retention == Retention(retention_days=7, max_storage_mb=5, cleanup_interval_s=1800, vacuum_pages=10)


@pytest.mark.parametrize(
    "raw, named",
    [
        ({"serve": {}}, "unknown section"),
        ({"server": {"prot": 1}}, "prot"),
        ({"server": {"port": 70_000}}, "port"),
        ({"server": {"port": "80"}}, "port"),
        ({"server": {"host": 5}}, "host"),
        ({"limits": {"max_payload_bytes": -1}}, "max_payload_bytes"),
        ({"limits": {"max_installations_per_address": -1}}, "max_installations_per_address"),
        ({"limits": {"max_installations_per_address": "many"}}, "max_installations_per_address"),
        ({"storage": {"cleanup_interval_hours": "often"}}, "cleanup_interval_hours"),
        ({"limits": []}, r"\[limits\] must be a table"),
        ({"server": {"xmtp_port": -2}}, "xmtp_port"),
        ({"server": {"xmtp_port": 65_536}}, "xmtp_port"),
        ({"server": {"xmtp_max_streams": 0}}, "xmtp_max_streams"),
        ({"server": {"xmtp_max_streams_per_connection": 0}}, "xmtp_max_streams_per_connection"),
    ],
)
def test_a_bad_value_is_refused_with_its_key(raw, named) -> None:
    with pytest.raises(InvalidConfig, match=named):
        from_mapping(raw)


def test_the_xmtp_node_is_off_unless_given_a_port_and_its_stream_bounds_are_read() -> None:
    assert ServerConfig().xmtp_port == -1
    config = from_mapping({"server": {"xmtp_port": 0, "xmtp_max_streams": 50, "xmtp_max_streams_per_connection": 5}})
    assert (config.xmtp_port, config.xmtp_max_streams, config.xmtp_max_streams_per_connection) == (0, 50, 5)


def test_a_file_that_is_not_toml_or_not_there_is_one_clear_error(tmp_path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[server\nport = 1\n")
    with pytest.raises(InvalidConfig, match="not valid TOML"):
        load(broken)
    with pytest.raises(InvalidConfig, match="cannot read"):
        load(tmp_path / "missing.toml")


def test_the_send_queue_is_a_byte_budget_no_smaller_than_a_full_read_aheads_replies_and_a_push() -> None:
    limits = Limits(max_payload_bytes=16_384)
    smallest = minimum_send_queue_bytes(limits)
    largest = ServerConfig(limits=limits).largest_frame_bytes
    assert smallest == (READ_AHEAD + 1) * largest
    assert ServerConfig(send_queue_bytes=smallest, limits=limits).send_queue_bytes == smallest
    with pytest.raises(InvalidConfig, match=f"would cut off healthy clients.*at least {smallest}"):
        ServerConfig(send_queue_bytes=smallest - 1, limits=limits)
    # the default budget fits the default limits, and a larger payload limit asks for a larger budget
    assert ServerConfig().send_queue_bytes >= minimum_send_queue_bytes(Limits())
    with pytest.raises(InvalidConfig, match="send_queue_bytes"):
        from_mapping({"limits": {"max_payload_bytes": 1024 * 1024}})


def test_the_largest_frame_bounds_a_push_of_the_largest_payload_in_the_widest_group() -> None:
    limits = Limits(max_payload_bytes=10_000)
    message = StoredMessage("0" * 26, "ab" * 255, "0" * 64, 2**63 - 1, b"\xff" * 10_000, 3, 2**64 - 1, True)
    frame = frames.encode({"type": frames.MESSAGE, "message": message.to_json()})
    assert len(frame) <= message.wire_bytes + FRAME_ENVELOPE_BYTES <= ServerConfig(limits=limits).largest_frame_bytes


def test_the_retired_frame_count_is_refused_naming_the_byte_budget() -> None:
    with pytest.raises(InvalidConfig, match="send_queue_frames is no longer read; use send_queue_bytes"):
        from_mapping({"server": {"send_queue_frames": 1000}})
