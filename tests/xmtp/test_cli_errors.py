"""What a user can get wrong with ``tessera xmtp``: one line saying what and what to do, a non-zero exit,
nothing changed.  No server is needed: each mistake is caught before any network call."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.helpers import TESSERA, clean_environment


@pytest.fixture(scope="module")
def person(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A database with an identity registered with a server that is not running, and one group."""
    db = tmp_path_factory.mktemp("xmtp-cli") / "me.db"
    env = clean_environment()
    subprocess.run([*TESSERA, "--db", str(db), "init", "--protocol", "xmtp"], check=True, env=env, capture_output=True)
    made = run(db, env, "identity", "new", "--server", "ws://127.0.0.1:9")  # port 9: nobody listens
    assert made.returncode != 0 and "was created" in made.stderr
    return db, env


def run(db: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TESSERA, "--db", str(db), "xmtp", *args], capture_output=True, text=True, env=env)


def group_of(db: Path, env: dict[str, str]) -> str:
    return run(db, env, "create-group").stdout.strip()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("add-members", "--group", "{group}", "0x12"), "address"),
        (("add-members", "--group", "{group}", "0xd33a56cc3bfeb8f9a49d4487a6bdd05f34a38270".upper()), "0x"),
        (("send", "--group", "not-hex", "hi"), "--group takes a group id in hex"),
        (("send", "--group", "ab" * 16, "hi"), "ab" * 16),
        (("send", "--group", "{group}", "--remove", "hi"), "--remove takes a reaction back"),
        (("send", "--group", "{group}", "--react", "ab", "x", "hi"), "--react sends a reaction alone"),
        (("send", "--group", "{group}", "--reply-to", "ab", "one", "two"), "--reply-to MESSAGE_ID takes one TEXT"),
        (("send", "--group", "{group}", "--react", "ab", "x"), "node profile"),
        (("messages", "--group", "{group}", "--before", "yesterday"), "--before takes a cursor"),
        (("messages", "--group", "cd" * 16), "xmtp groups` lists them"),
        (("identity", "new", "--server", "http://127.0.0.1:8765"), "ws://"),
        (("identity", "new", "--server", "ws://127.0.0.1:9"), "already"),
    ],
)
def test_each_mistake_is_one_line_and_changes_nothing(person, args, says) -> None:
    db, env = person
    group = group_of(db, env)
    before = run(db, env, "intents", "--json").stdout
    done = run(db, env, *(a.format(group=group) for a in args))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr
    assert run(db, env, "intents", "--json").stdout == before


def test_a_database_without_an_identity_says_how_to_make_one(tmp_path: Path) -> None:
    env = clean_environment()
    db = tmp_path / "blank.db"
    subprocess.run([*TESSERA, "--db", str(db), "init", "--protocol", "xmtp"], check=True, env=env, capture_output=True)
    done = run(db, env, "whoami")
    # The hint names this database, so it works when pasted.
    assert done.returncode != 0 and f"`tessera --db {db} xmtp identity new --node http://HOST:PORT`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_group_ids_are_taken_by_unique_prefix_and_an_unknown_one_names_a_pasteable_listing(person) -> None:
    db, env = person
    group = group_of(db, env)
    shown = run(db, env, "messages", "--group", group[:6].upper(), "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["messages"] == []
    other = ("1" if group[0] != "1" else "2") + group[1:6]
    refused = run(db, env, "messages", "--group", other)
    hint = f"tessera --db {db} xmtp groups"
    assert refused.returncode == 1 and refused.stderr.strip().endswith(f"`{hint}` lists them")
    listed = subprocess.run([*TESSERA, *shlex.split(hint)[1:], "--json"], capture_output=True, text=True, env=env)
    assert group in {g["group"] for g in json.loads(listed.stdout)}
    short = run(db, env, "messages", "--group", group[:3])
    assert short.returncode == 1 and "give at least 4 hex characters" in short.stderr
