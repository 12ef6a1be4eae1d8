"""Hints a user copies (issue 38 §3), captured from real runs on a database that is not the default one,
then pasted: each names the database and key file it came from, and works.

The runs use a key file given as ``--key-file`` (none in the environment) and a working directory with no
``tessera.db`` in it, so a hint that left out either option would fail when pasted.  Ids are given by short
prefixes, the way ``history`` prints them.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from jobs import times
from jobs.cli import cli
from tests.helpers import TEST_KEY_FILE, cli_options, marmot_join_args

HINT = re.compile(r"`(tessera [^`]*)`")
# What the runs must not inherit: a pasted hint has only its own options to find the database and its key.
UNSET = {"TESSERA_DB": None, "TESSERA_KEY_FILE": None, "TESSERA_CONFIG": None}


def tessera(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=UNSET, catch_exceptions=False)


def hints_in(result: Result) -> list[str]:
    return HINT.findall(result.stdout + result.stderr)


def paste(hint: str) -> Result:
    """Run a hint as printed (``tessera`` and all), through the same command line."""
    words = shlex.split(hint)
    assert words[0] == "tessera"
    return tessera(*words[1:])


@pytest.fixture
def observer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], dict]:
    """A database outside the working directory that joined a simulated group and read its stream."""
    out, db = tmp_path / "sim", tmp_path / "data" / "chat.db"
    db.parent.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    options = cli_options(members=3, messages=23, commits=2, races=0, garbage=0, duplicates=2, seed=5)
    assert tessera("marmot", "simulate", *options, "--out", str(out)).exit_code == 0
    root = ["--db", str(db), "--key-file", TEST_KEY_FILE]
    for step in (["init"], marmot_join_args(out), ["ingest", "--protocol", "marmot", str(out / "relay.jsonl")]):
        assert tessera(*root, *step).exit_code == 0
    assert tessera(*root, "tick", "--until-idle").exit_code == 0
    return root, json.loads((out / "expected.json").read_text())


def test_history_pages_walk_back_by_pasting_their_older_hint_until_nothing_is_older(observer) -> None:
    root, expected = observer
    gid = expected["group"]
    page = tessera(*root, "marmot", "history", "--group", gid[:6], "--limit", "5")
    seen: list[str] = []
    while True:
        assert page.exit_code == 0, page.output
        title, *rows = [line for line in page.stdout.splitlines() if not line.startswith("older: ")]
        assert title.startswith(f"group {gid}")
        seen = [line.split()[3] for line in rows] + seen
        older = hints_in(page)
        if not older:
            break
        [hint] = older
        assert hint.startswith(shlex.join(["tessera", *root, "marmot", "history", "--group", gid, "--before"]))
        page = paste(hint)
    # Every message once, in order, and the last page printed no hint (nothing older exists).
    assert seen == [rumor_id[:12] for rumor_id in expected["rumor_ids"]]
    assert "older:" not in tessera(*root, "marmot", "history", "--group", gid, "--limit", "100").stdout


def test_the_group_view_shows_its_name_members_npubs_and_utc_times(observer) -> None:
    root, expected = observer
    [group] = json.loads(tessera(*root, "marmot", "groups", "--json").stdout)
    npubs = group["member_npubs"]
    assert len(npubs) == group["members"] and all(npub.startswith("npub1") for npub in npubs)
    shown = tessera(*root, "marmot", "groups").stdout
    assert f"members: {', '.join(npubs)}" in shown and f"{group['members']} members" in shown
    gid = expected["group"]
    page = tessera(*root, "marmot", "history", "--group", gid[:8], "--limit", "1")
    title, first, *_ = page.stdout.splitlines()
    assert title == f"group {gid}, {len(npubs)} members: {', '.join(npubs)}"  # the simulation names the group not
    [newest] = json.loads(tessera(*root, "marmot", "history", "--group", gid, "--limit", "1", "--json").stdout)[
        "messages"
    ]
    created_at = newest["created_at"]
    assert first.startswith(times.utc(created_at * 1000) + "  " + expected["rumor_ids"][-1][:12])


def test_errors_name_a_listing_command_that_works_when_pasted(observer) -> None:
    root, expected = observer
    gid = expected["group"]
    cases = [
        (["marmot", "react", "--group", gid[:8], "--to", "0000", "--timeout", "0", "+"], "marmot history --group"),
        (["marmot", "accept", "0000"], "marmot welcomes"),
        (["marmot", "history", "--group", "0000"], "marmot groups"),
        (["parked", "retry", "999"], "parked list"),
    ]
    for args, listing in cases:
        refused = tessera(*root, *args)
        assert refused.exit_code == 1, refused.output
        [hint] = hints_in(refused)
        assert hint.startswith(shlex.join(["tessera", *root])) and listing in hint
        assert paste(hint).exit_code == 0, (hint, paste(hint).output)


def test_a_message_prefix_names_the_message_and_the_queued_hint_names_the_database(observer) -> None:
    root, expected = observer
    target = expected["rumor_ids"][-1]
    sent = tessera(*root, "marmot", "react", "--group", expected["group"][:5], "--to", target[:8], "--timeout", "0")
    assert sent.exit_code == 2  # no EMOJI: click's usage error, before anything is written
    sent = tessera(
        *root, "marmot", "react", "--group", expected["group"][:5], "--to", target[:8], "--timeout", "0", "--json", "+"
    )
    assert sent.exit_code == 5, sent.output  # queued: --timeout 0 publishes nothing now
    [hint] = hints_in(sent)
    assert hint == shlex.join(["tessera", *root, "tick"])
    created = json.loads(sent.stdout)["rumor"]
    shown = json.loads(tessera(*root, "marmot", "history", "--group", expected["group"], "--json").stdout)["messages"]
    [reaction] = [row for row in shown if row["id"] == created]
    assert reaction["content"] == "+" and ["e", target] in reaction["tags"]
