"""One id for a parked item everywhere (tick's warnings, ``parked list``, ``status``, the hints), and paged views
whose ``older:`` hint appears only when something older exists, pasted as printed (issue 38 §3).

Real runs of the command line on a database that is not the default one, from a working directory without one.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from jobs.cli import cli
from protocols.example import simulate
from tests.helpers import TEST_KEY_FILE

HINT = re.compile(r"`(tessera [^`]*)`")
PARKED_WARNING = re.compile(r"parked example item (\d+): .*; `(tessera [^`]*)` shows it")
UNSET = {"TESSERA_DB": None, "TESSERA_KEY_FILE": None, "TESSERA_CONFIG": None}


def tessera(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=UNSET, catch_exceptions=False)


def paste(hint: str) -> Result:
    words = shlex.split(hint)
    assert words[0] == "tessera"
    return tessera(*words[1:])


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Root options of a fresh example database in a folder of its own, run from another folder."""
    (tmp_path / "data").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    options = ["--db", str(tmp_path / "data" / "ex.db"), "--key-file", TEST_KEY_FILE]
    assert tessera(*options, "init", "--protocol", "example").exit_code == 0
    return options


def _tick(root: list[str]) -> dict[int, str]:
    """Run the tick until idle; the parked id -> pasteable hint of each warning it logged."""
    ran = tessera(*root, "--log-level", "WARNING", "tick", "--until-idle")
    assert ran.exit_code == 0, ran.output
    return {int(found[0]): found[1] for found in PARKED_WARNING.findall(ran.stderr)}


def test_tick_warnings_status_and_parked_commands_name_an_item_by_one_id(root: list[str], tmp_path: Path) -> None:
    stream = tmp_path / "bad.jsonl"
    stream.write_bytes(b"not json\n{}\n[1, 2]\n")
    assert "queued 3 blobs" in tessera(*root, "ingest", "--protocol", "example", str(stream)).stdout
    warned = _tick(root)
    listed = json.loads(tessera(*root, "parked", "list", "--json").stdout)
    assert sorted(warned) == [row["id"] for row in listed] and len(listed) == 3
    status = json.loads(tessera(*root, "status", "--json").stdout)
    assert {error["id"] for error in status["last_errors"]} <= set(warned)
    for parked_id, hint in warned.items():
        assert hint == shlex.join(["tessera", *root, "parked", "list", "--show", str(parked_id)])
        shown = paste(hint)
        assert shown.exit_code == 0 and shown.stdout.startswith(f"parked item {parked_id}: example/incoming, 1 attempt")
    first = min(warned)
    assert tessera(*root, "parked", "retry", str(first)).stdout == "re-queued 1 parked item\n"
    [again] = _tick(root)  # parked again, under a new id that every view uses
    assert again not in warned
    assert [row["id"] for row in json.loads(tessera(*root, "parked", "list", "--json").stdout)] == sorted(
        {*warned, again} - {first}
    )


def test_example_pages_print_the_older_hint_only_while_something_older_exists(root: list[str], tmp_path: Path) -> None:
    stream = tmp_path / "chat.jsonl"
    blobs = simulate.generate(23, rooms=1, seed=4)
    stream.write_bytes(b"\n".join(blobs) + b"\n")
    assert tessera(*root, "ingest", "--protocol", "example", str(stream)).exit_code == 0
    assert _tick(root) == {}
    [room] = {json.loads(blob)["room"] for blob in blobs}
    every = json.loads(tessera(*root, "example", "page", room, "--limit", "1000", "--json").stdout)["messages"]
    page = tessera(*root, "example", "page", room, "--limit", "5")
    seen: list[str] = []
    while True:  # the newest page first, each oldest first (docs/cli.md, *Paging*): older pages go in front
        assert page.exit_code == 0, page.output
        seen = [line.split()[3] for line in page.stdout.splitlines() if not line.startswith("older: ")] + seen
        hints = HINT.findall(page.stdout)
        if not hints:
            break
        page = paste(hints[0])
    assert seen == [row["id"][:16] for row in every]
    assert len(every) == 23 and "older:" not in tessera(*root, "example", "page", room, "--limit", "23").stdout
