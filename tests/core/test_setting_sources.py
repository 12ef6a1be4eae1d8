"""Where a setting's value comes from: a flag, else the environment, else the config file, else the default."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.config_file import ConfigFile, InvalidConfigFile, find
from core.errors import InvalidSetting
from core.plugins import declared_settings, make_plugin_manager
from core.setting import Setting
from core.setting_sources import DEFAULT, Sources
from core.settings import Settings
from protocols.marmot.settings import MarmotSettings
from protocols.xmtp.settings import DECRYPT_AHEAD


def config(tmp_path: Path, text: str, name: str = "tessera.toml") -> ConfigFile:
    path = tmp_path / name
    path.write_text(text)
    return ConfigFile.read(path)


def test_each_level_overrides_the_next(tmp_path: Path) -> None:
    file = config(tmp_path, "[core]\nbatch_ms = 30\nidle_max_ms = 300\nlease_ttl_ms = 3000\n")
    env = {"TESSERA_IDLE_MAX_MS": "200", "TESSERA_LEASE_TTL_MS": "2000"}
    settings = Settings.load(env=env, config=file, lease_ttl_ms=1000)
    assert (settings.cache_mib, settings.batch_ms, settings.idle_max_ms, settings.lease_ttl_ms) == (64, 30, 200, 1000)
    sources = [
        settings.sources.resolve(s).source for s in _core("cache_mib", "batch_ms", "idle_max_ms", "lease_ttl_ms")
    ]
    assert sources == [DEFAULT, f"{file.path} [core] batch_ms", "TESSERA_IDLE_MAX_MS", "--lease-ttl-ms"]


def _core(*names: str) -> list[Setting]:
    from core.settings import SETTINGS

    return [next(s for s in SETTINGS if s.name == name) for name in names]


@given(
    flag=st.none() | st.integers(1, 60_000),
    env=st.none() | st.integers(1, 60_000),
    file=st.none() | st.integers(1, 60_000),
)
def test_the_first_level_that_gives_a_value_wins(flag: int | None, env: int | None, file: int | None) -> None:
    document = ConfigFile(Path("t.toml"), {"core": {} if file is None else {"batch_ms": file}})
    settings = Settings.load(env={} if env is None else {"TESSERA_BATCH_MS": str(env)}, config=document, batch_ms=flag)
    expected = next((value for value in (flag, env, file) if value is not None), 50)
    assert settings.batch_ms == expected


def test_a_plugin_reads_its_own_settings_from_the_same_places(tmp_path: Path) -> None:
    file = config(tmp_path, "[marmot]\nsnapshots = 9\npast_epochs = 7\n[xmtp]\ndecrypt_ahead = false\n")
    settings = Settings.load(env={"TESSERA_MARMOT_PAST_EPOCHS": "3"}, config=file)
    marmot = MarmotSettings.of(settings)
    assert (marmot.snapshots, marmot.past_epochs, marmot.fetch_timeout_s) == (9, 3, 10)
    assert settings.sources.resolve(DECRYPT_AHEAD).value is False


def test_two_apps_in_one_process_read_their_own_values() -> None:
    """No module state: each opened app's settings carry their own sources."""
    one = Settings.load(env={"TESSERA_MARMOT_SNAPSHOTS": "2"})
    two = Settings.load(env={"TESSERA_MARMOT_SNAPSHOTS": "40"})
    assert [MarmotSettings.of(s).snapshots for s in (one, two, one)] == [2, 40, 2]


@pytest.mark.parametrize(
    ("raw", "value"), [("1", True), ("true", True), ("On", True), ("no", False), ("0", False), ("off", False)]
)
def test_a_boolean_from_the_environment(raw: str, value: bool) -> None:
    assert Sources(env={"TESSERA_XMTP_DECRYPT_AHEAD": raw}).resolve(DECRYPT_AHEAD).value is value


def test_a_boolean_that_is_no_boolean_is_refused() -> None:
    with pytest.raises(InvalidSetting, match=r"TESSERA_XMTP_DECRYPT_AHEAD must be a boolean, got 'maybe'"):
        Sources(env={"TESSERA_XMTP_DECRYPT_AHEAD": "maybe"}).resolve(DECRYPT_AHEAD)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[core]\nbatch_ms = 0\n", r"tessera.toml \[core\] batch_ms=0 is out of range; allowed: 1 to 60000"),
        ('[core]\nbatch_ms = "fast"\n', r"tessera.toml \[core\] batch_ms must be an integer, got 'fast'"),
        ("[core]\nbatch_ms = true\n", r"batch_ms must be an integer, got True"),
        ("[marmot]\nfetch_lookback_s = 59\n", r"\[marmot\] fetch_lookback_s=59 is out of range; allowed: 60 to"),
        ("[xmtp]\ndecrypt_ahead = 1\n", r"\[xmtp\] decrypt_ahead must be a boolean, got 1"),
    ],
)
def test_a_bad_value_in_the_file_names_file_setting_value_and_range(tmp_path: Path, text: str, message: str) -> None:
    sources = Sources(env={}, config=config(tmp_path, text))
    with pytest.raises(InvalidSetting, match=message):
        for setting in declared_settings(make_plugin_manager()):
            sources.resolve(setting)


def test_a_file_that_is_not_toml_or_not_there(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigFile, match=r"tessera.toml is not valid TOML"):
        config(tmp_path, "[core\nbatch_ms = 1\n")
    with pytest.raises(InvalidConfigFile, match=r"cannot read the config file .*absent.toml"):
        ConfigFile.read(tmp_path / "absent.toml")


def test_unknown_sections_and_keys_are_refused_with_the_known_ones_named(tmp_path: Path) -> None:
    from core.settings import SETTINGS

    with pytest.raises(InvalidConfigFile, match=r"unknown key\(s\) \['bach_ms'\] in \[core\]; known: \[.*'batch_ms'"):
        config(tmp_path, "[core]\nbach_ms = 5\n").check_known(SETTINGS)
    with pytest.raises(InvalidConfigFile, match=r"unknown section\(s\) \['marmott'\]; known: \['core'\]"):
        config(tmp_path, "[marmott]\nsnapshots = 5\n").check_known(SETTINGS)
    with pytest.raises(InvalidConfigFile, match=r"core must be a table"):
        config(tmp_path, "core = 5\n")


def test_the_file_is_the_one_named_else_the_one_the_environment_names_else_the_one_beside_the_database(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "chat.db")
    assert find(None, {}, db) is None
    (tmp_path / "tessera.toml").write_text("")
    assert find(None, {}, db) == tmp_path / "tessera.toml"
    assert find(None, {"TESSERA_CONFIG": "/etc/t.toml"}, db) == Path("/etc/t.toml")
    assert find("mine.toml", {"TESSERA_CONFIG": "/etc/t.toml"}, db) == Path("mine.toml")


def test_nested_tables_are_dotted_names(tmp_path: Path) -> None:
    file = config(tmp_path, "[sovereign.server]\nport = 9000\n[sovereign.limits]\nmax_storage_mb = 5\n")
    assert file.values == {"sovereign": {"server.port": 9000, "limits.max_storage_mb": 5}}
