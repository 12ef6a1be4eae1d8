"""Which root options a pasted hint needs (jobs/hints.py), from the settings a run was given."""

from __future__ import annotations

import shlex
from pathlib import Path

from core.plugins import make_plugin_manager
from jobs.hints import command, pasteable, root_options
from jobs.settings_command import load_settings

PM = make_plugin_manager()


def settings(**given: str | None):
    return load_settings(PM, db=given.get("db"), config=given.get("config"), key_file=given.get("key_file"), env={})


def test_the_default_database_needs_no_option_and_hints_stay_as_written(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    plain = settings()
    assert root_options(plain) == []
    assert command("parked", "retry", 3, settings=plain) == "tessera parked retry 3"
    assert pasteable("see `tessera parked list`", plain) == "see `tessera parked list`"


def test_a_database_a_named_config_and_a_key_file_flag_are_carried_and_quoted(tmp_path: Path) -> None:
    folder = tmp_path / "my data"
    folder.mkdir()
    config = tmp_path / "elsewhere.toml"
    config.write_text("")
    given = settings(db=str(folder / "chat.db"), config=str(config), key_file=str(tmp_path / "k"))
    expected = ["--db", str(folder / "chat.db"), "--config", str(config), "--key-file", str(tmp_path / "k")]
    assert root_options(given) == expected
    hint = command("marmot", "send", "--group", "ab12", "it's here", settings=given)
    assert shlex.split(hint) == ["tessera", *expected, "marmot", "send", "--group", "ab12", "it's here"]
    said = pasteable(f"no parked item 9; `tessera parked list` shows the ids; `{hint}`", given)
    assert said == f"no parked item 9; `{shlex.join(['tessera', *expected, 'parked', 'list'])}` shows the ids; `{hint}`"


def test_the_config_file_beside_the_database_is_found_again_so_it_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "tessera.toml").write_text("")
    given = settings(db=str(tmp_path / "chat.db"), config=str(tmp_path / "tessera.toml"))
    assert root_options(given) == ["--db", str(tmp_path / "chat.db")]
