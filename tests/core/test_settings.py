"""Settings are range-checked wherever they are read: environment, overrides, copies, the CLI."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from core.errors import InvalidInput, InvalidSetting
from core.settings import SETTINGS, Settings
from tests.helpers import ROOT, invoke, one_line_error

NUMERIC = [s for s in SETTINGS if isinstance(s.default, int)]


def env_key(setting) -> str:
    return f"TESSERA_{setting.name.upper()}"


def test_every_setting_has_a_range_holding_its_default():
    for setting in SETTINGS:
        assert setting.minimum is not None and setting.maximum is not None, setting.name
        measured = len(setting.default) if isinstance(setting.default, str) else setting.default
        assert setting.minimum <= measured <= setting.maximum, setting.name


@pytest.mark.parametrize("setting", NUMERIC, ids=lambda s: s.name)
def test_a_value_below_or_above_the_range_names_setting_value_and_range(setting):
    for bad in (setting.minimum - 1, setting.maximum + 1, -3):
        if setting.minimum <= bad <= setting.maximum:
            continue
        with pytest.raises(InvalidSetting) as raised:
            Settings.load(env={env_key(setting): str(bad)})
        message = str(raised.value)
        assert env_key(setting) in message and str(bad) in message
        assert f"{setting.minimum} to {setting.maximum}" in message
        assert isinstance(raised.value, InvalidInput) and isinstance(raised.value, ValueError)
        assert (raised.value.setting, raised.value.value) == (setting.name, bad)


@pytest.mark.parametrize("setting", NUMERIC, ids=lambda s: s.name)
def test_the_edges_of_the_range_are_accepted(setting):
    for good in (setting.minimum, setting.maximum):
        assert getattr(Settings.load(env={env_key(setting): str(good)}), setting.name) == good


def test_idle_max_ms_zero_is_refused():
    """Regression: TESSERA_IDLE_MAX_MS=0 made an idle daemon spin a core at 100%."""
    with pytest.raises(InvalidSetting, match=r"TESSERA_IDLE_MAX_MS.*0.*allowed"):
        Settings.load(env={"TESSERA_IDLE_MAX_MS": "0"})


def test_a_prefixed_key_is_named_in_the_error():
    with pytest.raises(InvalidSetting, match="TESSERA_TICK_LEASE_TTL_MS"):
        Settings.load(prefix="tick", env={"TESSERA_TICK_LEASE_TTL_MS": "-1", "TESSERA_LEASE_TTL_MS": "5000"})


@pytest.mark.parametrize("raw", ["abc", "1.5", "", "1e3"])
def test_a_value_that_is_not_an_integer_is_a_typed_error(raw):
    with pytest.raises(InvalidSetting, match="TESSERA_MAX_ATTEMPTS must be an integer"):
        Settings.load(env={"TESSERA_MAX_ATTEMPTS": raw})


def test_a_huge_integer_is_out_of_range_not_an_overflow():
    with pytest.raises(InvalidSetting, match="out of range"):
        Settings.load(env={"TESSERA_CACHE_MIB": "9" * 40})


def test_overrides_and_copies_are_checked_too():
    with pytest.raises(InvalidSetting, match="lease_ttl_ms"):
        Settings.load(env={}, lease_ttl_ms=0)
    with pytest.raises(InvalidSetting, match="retry_base_ms"):
        attrs.evolve(Settings(), retry_base_ms=-5)
    with pytest.raises(InvalidSetting, match=r"max_attempts.* must be an integer"):
        Settings(max_attempts="5")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match=r"max_attempts.* must be an integer"):
        Settings(max_attempts=True)
    with pytest.raises(InvalidSetting, match="TESSERA_DB=.. is out of range"):
        Settings.load(env={"TESSERA_DB": ""})


def test_the_cli_refuses_an_out_of_range_setting_on_one_line(tmp_path: Path) -> None:
    result = invoke("--db", str(tmp_path / "x.db"), "tick", "--once", env={"TESSERA_IDLE_MAX_MS": "0"})
    assert "TESSERA_IDLE_MAX_MS" in one_line_error(result)
    assert not (tmp_path / "x.db").exists()


def test_the_cli_refuses_a_negative_lease_ttl_option(tmp_path):
    db = tmp_path / "t.db"
    assert invoke("--db", str(db), "init", "--protocol", "example").exit_code == 0
    result = invoke("--db", str(db), "tick", "--once", "--lease-ttl-ms", "-1")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "lease_ttl_ms" in result.output or "--lease-ttl-ms" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["parked", "list", "--limit", "-3"],
        ["parked", "list", "--limit", "0"],
        ["ingest", "--protocol", "example", "--batch", "0", "-"],
        ["tick", "--once", "--max-items", "-1"],
        ["example", "page", "lobby", "--limit", "-3"],
    ],
)
def test_numeric_options_are_range_checked(tmp_path, args):
    """Regression: ``parked list --limit -3`` returned every row (SQLite reads LIMIT -3 as no limit)."""
    db = tmp_path / "opts.db"
    assert invoke("--db", str(db), "init", "--protocol", "example").exit_code == 0
    result = invoke("--db", str(db), *args)
    assert result.exit_code == 2, result.output
    assert "is not in the range" in result.output and "Traceback" not in result.output


def test_the_documented_ranges_are_the_real_ones():
    operations = (ROOT / "docs" / "operations.md").read_text()
    for setting in SETTINGS:
        row = re.search(rf"^\| `{setting.name}` \| [^|]+ \| (\d+)–(\d+)[^|]* \|", operations, re.MULTILINE)
        assert row, f"docs/operations.md lacks a range for {setting.name}"
        assert (int(row[1]), int(row[2])) == (setting.minimum, setting.maximum), setting.name


def test_tessera_settings_lists_the_ranges():
    result = invoke("settings")
    assert result.exit_code == 0
    assert any(line.strip().startswith("TESSERA_IDLE_MAX_MS, allowed 10-60000") for line in result.output.splitlines())
