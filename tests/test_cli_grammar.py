"""The CLI convention of docs/cli.md, checked on the whole click tree (plugins' commands through the lazy loader).

For every group and command: ``-h`` and ``--help`` print its help and exit 0,
``--db FILE`` is accepted at that level, and nothing visible uses a spelling
the convention replaced.  Every command that runs takes ``--json``.  The old
spellings still parse, to the same values as the new ones.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from jobs.cli import cli
from jobs.cli_options import AliasedOption
from jobs.outcome import Outcome
from protocols.example import queries
from tests.helpers import ROOT, TESSERA, invoke


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.commands):  # looking a command up imports it (jobs.lazy_commands)
            sub = command.commands[name]
            if not sub.hidden:
                yield from _walk(sub, (*path, name))


TREE = dict(_walk(cli, ()))
COMMANDS = {path: command for path, command in TREE.items() if not isinstance(command, click.Group)}

#: Spellings the convention replaced (docs/cli.md, "Old spellings"), by what to use instead: none may show in
#: any --help; where one still exists it is a hidden alias.
FORBIDDEN_OPTIONS = {
    "--until": "--before",
    "--cursor": "--before",
    "--after-cursor": "--before",
    "--page-size": "--limit",
    "--per-page": "--limit",
    "--group-id": "--group",
    "--gid": "--group",
    "--no-send": "--no-publish",
    "--offline": "--no-publish",
    "--format": "--json",
    "--output": "--json",
}
FORBIDDEN_COMMANDS = {
    "invite": "add-members",
    "remove": "remove-members",
    "kick": "remove-members",
    "self-update": "update-key",
    "decline": "reject",
}

#: Old spellings that must still parse, and to what: (path, arguments, parameter, value).
OLD_SPELLINGS = [
    (("marmot", "history"), ["--group", "ab", "--until", "5:" + "0" * 64], "before", "5:" + "0" * 64),
    (("marmot", "send"), ["--group", "ab", "--timeout", "0", "hi"], "timeout_s", 0),
    (("marmot", "send"), ["--group", "ab", "--no-publish", "hi"], "timeout_s", 0),
    (("marmot", "invite"), ["--group", "ab", "npub1x"], "invitees", ("npub1x",)),
    (("marmot", "remove"), ["--group", "ab", "npub1x"], "members", ("npub1x",)),
    (("marmot", "self-update"), ["--group", "ab", "--timeout", "7"], "timeout_s", 7),
    (("marmot", "decline"), ["0" * 64], "welcome_id", "0" * 64),
    (("xmtp", "accept"), ["--group", "ab"], "group_opt", "ab"),
    (("xmtp", "reject"), ["--group", "ab"], "group_opt", "ab"),
    (("xmtp", "accept"), ["ab"], "group_arg", "ab"),
]


def _options(command: click.Command) -> list[click.Option]:
    return [param for param in command.params if isinstance(param, click.Option)]


def _visible_names(option: click.Option) -> list[str]:
    if option.hidden:
        return []
    hidden = option.hidden_aliases if isinstance(option, AliasedOption) else ()
    return [name for name in (*option.opts, *option.secondary_opts) if name not in hidden]


def _run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args))


def test_the_walk_sees_every_plugin() -> None:
    assert {("marmot", "history"), ("xmtp", "messages"), ("example", "page"), ("serve",), ("parked", "list")} <= set(
        COMMANDS
    )
    assert len(COMMANDS) > 60


@pytest.mark.parametrize("path", sorted(TREE), ids=lambda path: " ".join(path) or "tessera")
def test_help_and_db_at_every_level(path: tuple[str, ...], tmp_path) -> None:
    for flag in ("-h", "--help"):
        shown = _run(*path, flag)
        assert shown.exit_code == 0 and "Usage:" in shown.output, (flag, shown.output)
    assert "-h, --help" in shown.output
    db = str(tmp_path / "elsewhere.db")
    assert _run(*path, "--db", db, "-h").exit_code == 0, f"`tessera {' '.join(path)}` refuses --db"
    assert "--db" in shown.output


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_command_takes_json(path: tuple[str, ...]) -> None:
    [option] = [option for option in _options(COMMANDS[path]) if "--json" in option.opts]
    assert option.is_flag and option.name == "as_json"


@pytest.mark.parametrize("path", sorted(TREE), ids=lambda path: " ".join(path) or "tessera")
def test_no_replaced_spelling_shows(path: tuple[str, ...]) -> None:
    command = TREE[path]
    for option in _options(command):
        for name in _visible_names(option):
            assert name not in FORBIDDEN_OPTIONS, (
                f"`tessera {' '.join(path)}` shows {name}: use {FORBIDDEN_OPTIONS[name]}"
            )
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            if name in FORBIDDEN_COMMANDS:
                assert sub.hidden, f"`tessera {' '.join((*path, name))}` shows: use {FORBIDDEN_COMMANDS[name]}"


def test_paging_and_publishing_flags_are_one_idea_each() -> None:
    """A command with --limit pages with --before; one that can publish later takes --no-publish."""
    for path, command in COMMANDS.items():
        names = {name for option in _options(command) for name in _visible_names(option)}
        if "--limit" in names:
            assert "--before" in names, f"`tessera {' '.join(path)}` pages without --before"
        if "--timeout" in names and path[0] == "marmot":
            assert "--no-publish" in names, f"`tessera {' '.join(path)}` has --timeout but no --no-publish"


@pytest.mark.parametrize(("path", "args", "name", "value"), OLD_SPELLINGS, ids=str)
def test_old_spellings_still_parse(path: tuple[str, ...], args: list[str], name: str, value: object) -> None:
    command: click.Command = cli
    for word in path:
        assert isinstance(command, click.Group)
        command = command.commands[word]
    with command.make_context(path[-1], list(args)) as ctx:
        assert ctx.params[name] == value


def test_version() -> None:
    from core.distribution import installed_version

    shown = _run("--version")
    assert shown.exit_code == 0
    version = installed_version()
    assert shown.output.strip() == (
        f"tessera {version}" if version else "tessera (not installed: running from a checkout)"
    )


# --- real processes: --db after the subcommand, --json, the exit codes ----------------------------------------


def tessera(*args: str, cwd=None, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run([*TESSERA, *args], capture_output=True, text=True, env=environment, cwd=cwd or ROOT)


def json_of(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)


def test_real_commands_with_db_after_the_subcommand_and_json(tmp_path) -> None:
    db = str(tmp_path / "chat.db")
    made = json_of(tessera("init", "--protocol", "example", "--db", db, "--json"))
    assert made == {"database": db, "protocols": ["example"], "encrypted": True}
    for text in ("one", "two", "three"):
        posted = json_of(tessera("example", "post", "lobby", text, "--key", "05" * 32, "--db", db, "--json"))
        assert len(posted["id"]) == 64 and not posted["duplicate"]
    ticked = tessera("tick", "--until-idle", "--db", db, "--json")
    assert ticked.returncode == 0 and json_of(ticked)["outcome"] == Outcome.DONE.label
    newest = json_of(tessera("example", "page", "lobby", "--limit", "2", "--db", db, "--json"))
    assert [row["text"] for row in newest["messages"]] == ["two", "three"] and newest["has_more"]
    older = json_of(
        tessera("example", "page", "lobby", "--limit", "2", "--before", newest["next_cursor"], "--db", db, "--json")
    )
    assert [row["text"] for row in older["messages"]] == ["one"] and older == {
        **older,
        "has_more": False,
        "next_cursor": None,
    }
    assert json_of(tessera("status", "--db", db, "--json"))["events"] >= 3
    assert json_of(tessera("check", "--db", db, "--json"))["ok"] is True
    assert json_of(tessera("parked", "list", "--db", db, "--json")) == []
    # The same at the group's level, and the root's --db is overridden by the subcommand's.
    assert json_of(tessera("--db", "nowhere.db", "example", "--db", db, "page", "lobby", "--json"))["messages"]


def test_the_database_from_the_environment_and_the_config_file(tmp_path) -> None:
    db = str(tmp_path / "chat.db")
    tessera("init", "--protocol", "example", "--db", db)

    def db_setting(*args: str, **env: str) -> dict:
        rows = json_of(tessera("settings", "--json", *args, cwd=tmp_path, **env))
        return next(row for row in rows if row["key"] == "core.db")

    assert db_setting(TESSERA_DB=db) == {**db_setting(TESSERA_DB=db), "value": db, "source": "TESSERA_DB"}
    (tmp_path / "tessera.toml").write_text(f'[core]\ndb = "{db}"\n')
    from_file = db_setting()
    assert (from_file["value"], from_file["source"]) == (
        db,
        "tessera.toml [core] db",
    )  # the file found beside the default database
    assert json_of(tessera("status", "--json", cwd=tmp_path))["events"] == 0
    assert db_setting("--db", db)["source"] == "--db"


@pytest.mark.parametrize(
    ("args", "kind", "exit_code"),
    [
        (["status", "--db", "{missing}", "--json"], "DatabaseMissing", 1),
        (["status", "--json", "--no-such-flag"], "NoSuchOption", 2),
        (["example", "page", "--json", "--limit", "0", "lobby"], "BadParameter", 2),
    ],
)
def test_errors_with_json_are_one_object_and_keep_their_exit_codes(tmp_path, args, kind, exit_code) -> None:
    refused = tessera(*(arg.format(missing=tmp_path / "missing.db") for arg in args))
    assert refused.returncode == exit_code
    error = json_of(refused)["error"]
    assert (error["type"], error["exit_code"]) == (kind, exit_code) and error["message"]
    assert refused.stderr.startswith("Error: ") and len(refused.stderr.strip().splitlines()) == 1


# --- the docs teach the new spellings ------------------------------------------------------------------------


def old_spellings_in(rest: str) -> list[str]:
    """Hidden aliases (old spellings) that ``tessera <rest>`` uses."""
    from tests.test_docs import _END_OF_COMMAND, _words

    command: click.Command = cli
    found = []
    for word in (w.strip("[]") for w in _words(rest)):
        if word in _END_OF_COMMAND:
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            for option in _options(command):
                if name in option.opts and (option.hidden or name not in _visible_names(option)):
                    found.append(name)
        elif isinstance(command, click.Group) and word in command.commands:
            command = command.commands[word]
            if command.hidden:
                found.append(word)
    return found


def test_the_docs_use_no_old_spelling() -> None:
    from tests.test_docs import DOCS, invocations

    assert old_spellings_in("marmot history --group G --until X") == ["--until"]
    assert old_spellings_in("--db x marmot invite --group G NPUB") == ["invite"]
    # docs/cli.md names the old spellings on purpose; benchmarks.md keeps the names its runs were measured with.
    taught = [doc for doc in DOCS if doc.name not in {"cli.md", "benchmarks.md"}]
    used = [
        f"{doc.name}:{line}: {old} in `tessera {rest.strip()}`"
        for doc in taught
        for line, rest in invocations(doc)
        for old in old_spellings_in(rest)
    ]
    assert not used, "\n".join(used)


# --- paging: every page, in the one order, adds up to the whole history ----------------------------------------


def test_paging_back_with_before_visits_every_message_once_in_order(example_app) -> None:
    """``example page`` with any --limit: the newest page first, each oldest first, --before next_cursor
    until has_more is false, gives every message once; ties on the timestamp are broken by id."""
    for n in range(23):  # three messages per millisecond: the cursor must order by id within one
        post = {"room": "lobby", "text": f"note {n}", "secret_key": "07" * 32, "ts_ms": 1_700_000_000_000 + n // 3}
        example_app.runtime.run_command("example.post", post)
    whole = [row["id"] for row in reversed(queries.page(example_app.db, "lobby", limit=100))]  # oldest first
    db = example_app.db.path

    @hypothesis_settings(max_examples=15, deadline=None)
    @given(limit=st.integers(1, 25))
    def pages_add_up(limit: int) -> None:
        seen: list[list[str]] = []
        cursor: list[str] = []
        while True:
            page = json.loads(
                invoke("example", "page", "lobby", "--db", db, "--limit", str(limit), *cursor, "--json").stdout
            )
            ids = [row["id"] for row in page["messages"]]
            assert ids == sorted(ids, key=whole.index)  # oldest first within the page
            seen.insert(0, ids)
            if not page["has_more"]:
                assert page["next_cursor"] is None
                break
            assert len(ids) == limit
            cursor = ["--before", page["next_cursor"]]
        assert [message for page_ids in seen for message in page_ids] == whole

    pages_add_up()
