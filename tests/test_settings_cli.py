"""``tessera settings`` and the config file through the real command line: values in force, their sources,
refusals in one line, the serve settings as a section, and plugins' commands loaded only when used."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import TESSERA, clean_environment, invoke, one_line_error
from tests.relay_servers import free_port


def settings_json(*args: str, env: dict[str, str] | None = None) -> dict[str, dict]:
    result = invoke(*args, "settings", "--json", env=env)
    assert result.exit_code == 0, result.output
    return {row["key"]: row for row in json.loads(result.stdout)}


def test_settings_lists_core_and_plugin_settings_with_value_source_and_range(tmp_path: Path) -> None:
    rows = settings_json("--db", str(tmp_path / "x.db"), env={"TESSERA_BATCH_MS": "99"})
    assert {"core.batch_ms", "marmot.snapshots", "xmtp.decrypt_ahead", "sovereign.server.port"} <= set(rows)
    batch = rows["core.batch_ms"]
    assert (batch["value"], batch["source"], batch["default"], batch["env"]) == (
        99,
        "TESSERA_BATCH_MS",
        50,
        "TESSERA_BATCH_MS",
    )
    assert (batch["minimum"], batch["maximum"], batch["allowed"]) == (1, 60000, "1-60000") and batch["help"]
    assert rows["core.db"] == {**rows["core.db"], "value": str(tmp_path / "x.db"), "source": "--db"}
    assert rows["marmot.snapshots"]["source"] == "default" and rows["xmtp.decrypt_ahead"]["value"] is True


def test_the_sources_shown_follow_the_precedence(tmp_path: Path) -> None:
    (tmp_path / "tessera.toml").write_text(
        "[core]\nbatch_ms = 30\nidle_max_ms = 300\n[marmot]\nsnapshots = 9\npast_epochs = 8\n"
    )
    env = {"TESSERA_IDLE_MAX_MS": "200", "TESSERA_MARMOT_PAST_EPOCHS": "3"}
    rows = settings_json("--db", str(tmp_path / "x.db"), env=env)
    beside = str(tmp_path / "tessera.toml")
    shown = {
        key: (rows[key]["value"], rows[key]["source"])
        for key in ("core.batch_ms", "core.idle_max_ms", "core.cache_mib")
    }
    assert shown == {
        "core.batch_ms": (30, f"{beside} [core] batch_ms"),
        "core.idle_max_ms": (200, "TESSERA_IDLE_MAX_MS"),
        "core.cache_mib": (64, "default"),
    }
    assert (rows["marmot.snapshots"]["value"], rows["marmot.past_epochs"]["value"]) == (9, 3)
    text = invoke("--db", str(tmp_path / "x.db"), "settings", env=env).output
    assert f"core.batch_ms = 30  ({beside} [core] batch_ms)" in text.splitlines()


def test_a_named_config_file_wins_over_the_one_beside_the_database(tmp_path: Path) -> None:
    (tmp_path / "tessera.toml").write_text("[core]\nbatch_ms = 30\n")
    named = tmp_path / "elsewhere.toml"
    named.write_text("[core]\nbatch_ms = 40\ndb = 'from-the-file.db'\n")
    db = ["--db", str(tmp_path / "x.db")]
    assert settings_json(*db, "--config", str(named))["core.batch_ms"]["value"] == 40
    assert settings_json(*db, env={"TESSERA_CONFIG": str(named)})["core.batch_ms"]["value"] == 40
    assert settings_json("--config", str(named))["core.db"]["value"] == "from-the-file.db"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[core\nbatch_ms = 1\n", "is not valid TOML"),
        ("[core]\nbach_ms = 5\n", "unknown key(s) ['bach_ms'] in [core]; known: ["),
        (
            "[marmott]\nsnapshots = 5\n",
            "unknown section(s) ['marmott']; known: ['core', 'marmot', 'sovereign', 'xmtp']",
        ),
        ("[core]\nbatch_ms = 0\n", "[core] batch_ms=0 is out of range; allowed: 1 to 60000"),
        ("[marmot]\nsnapshots = 300\n", "[marmot] snapshots=300 is out of range; allowed: 1 to 255"),
    ],
)
def test_a_bad_config_file_is_one_line_before_any_command_runs(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "tessera.toml").write_text(text)
    db = tmp_path / "x.db"
    for command in (["status"], ["init"], ["settings"]):
        assert says in one_line_error(invoke("--db", str(db), *command))
    assert not db.exists()


def test_a_bad_plugin_setting_in_the_environment_is_one_line(tmp_path: Path) -> None:
    line = one_line_error(invoke("--db", str(tmp_path / "x.db"), "settings", env={"TESSERA_MARMOT_SNAPSHOTS": "0"}))
    assert line == "Error: TESSERA_MARMOT_SNAPSHOTS=0 is out of range; allowed: 1 to 255"


def serve_check(db: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [*TESSERA, "--db", str(db), *args]
    return subprocess.run(command, env=clean_environment(**(env or {})), capture_output=True, text=True, timeout=60)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "store.db"
    assert (
        subprocess.run(
            [*TESSERA, "--db", str(db), "init", "--protocol", "sovereign"], env=clean_environment()
        ).returncode
        == 0
    )
    return db


def test_serve_reads_its_keys_from_an_old_serve_file_the_config_file_the_environment_and_its_flags(
    tmp_path: Path, store: Path
) -> None:
    ports = [free_port() for _ in range(4)]
    old = tmp_path / "serve.toml"
    old.write_text(f"[server]\nport = {ports[0]}\n[limits]\nmax_payload_bytes = 1000\n")
    done = serve_check(store, "serve", "--config", str(old), "--check")
    assert f"would listen on ws://127.0.0.1:{ports[0]}" in done.stdout, done.stderr
    (tmp_path / "tessera.toml").write_text(f"[sovereign.server]\nport = {ports[1]}\n")
    assert f":{ports[1]}" in serve_check(store, "serve", "--check").stdout
    env = {"TESSERA_SOVEREIGN_SERVER_PORT": str(ports[2])}
    assert f":{ports[2]}" in serve_check(store, "serve", "--check", env=env).stdout
    assert f":{ports[3]}" in serve_check(store, "serve", "--check", "--port", str(ports[3]), env=env).stdout
    listed = json.loads(serve_check(store, "settings", "--json", env=env).stdout)
    port = next(row for row in listed if row["key"] == "sovereign.server.port")
    assert (port["value"], port["source"]) == (ports[2], "TESSERA_SOVEREIGN_SERVER_PORT")


def test_a_retired_serve_key_still_says_what_replaced_it(tmp_path: Path, store: Path) -> None:
    old = tmp_path / "serve.toml"
    old.write_text("[server]\nsend_queue_frames = 100\n")
    line = one_line_error(serve_check(store, "serve", "--config", str(old), "--check"))
    assert "[server] send_queue_frames is no longer read; use send_queue_bytes" in line


@pytest.mark.parametrize("args", [["--help"], ["status"], ["settings"]])
def test_the_core_commands_import_no_plugin_command_line_and_no_mls(tmp_path: Path, args: list[str]) -> None:
    command = [*TESSERA[:1], "-X", "importtime", *TESSERA[1:], "--db", str(tmp_path / "x.db"), *args]
    if args == ["status"]:
        subprocess.run([*TESSERA, "--db", str(tmp_path / "x.db"), "init"], env=clean_environment(), check=True)
    done = subprocess.run(command, env=clean_environment(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "jobs.cli" in imported
    heavy = sorted(
        m
        for m in imported
        if m.startswith(
            ("protocols.libraries.mls", "protocols.marmot.cli", "protocols.xmtp.cli", "protocols.marmot.processing")
        )
    )
    assert heavy == []


def test_a_plugin_group_is_imported_when_used_and_its_help_is_its_own() -> None:
    result = invoke("marmot", "--help")
    assert result.exit_code == 0 and "Marmot group messaging" in result.output and "history" in result.output
