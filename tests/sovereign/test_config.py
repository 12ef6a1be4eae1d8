"""The server's TOML configuration: defaults, every table, and refusals that name the key."""

from __future__ import annotations

import pytest

from protocols.sovereign.config import MIB, Limits, Retention, ServerConfig, from_mapping, load
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
    ],
)
def test_a_bad_value_is_refused_with_its_key(raw, named) -> None:
    with pytest.raises(InvalidConfig, match=named):
        from_mapping(raw)


def test_a_file_that_is_not_toml_or_not_there_is_one_clear_error(tmp_path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[server\nport = 1\n")
    with pytest.raises(InvalidConfig, match="not valid TOML"):
        load(broken)
    with pytest.raises(InvalidConfig, match="cannot read"):
        load(tmp_path / "missing.toml")
