"""The tessera command line, run as a real process where it matters."""

from __future__ import annotations

import json
import os
import subprocess

import click
import pytest
from click.testing import CliRunner

from core.db import Database
from core.settings import Settings
from core.status import STATUS_KEYS
from jobs.cli import cli
from protocols.example import simulate
from tests.helpers import ROOT, TESSERA, TEST_KEY_FILE, raw_connection


def tessera(db, *args, input=None, check=True):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TESSERA_RETRY_BASE_MS="5", TESSERA_RETRY_MAX_MS="20")
    proc = subprocess.run([*TESSERA, "--db", str(db), *args], input=input, capture_output=True, env=env, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"tessera {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc


def test_init_then_status_json_on_a_new_file(tmp_path):
    db = tmp_path / "new.db"
    assert b"ready" in tessera(db, "init").stdout
    report = json.loads(tessera(db, "status", "--json").stdout)
    assert set(STATUS_KEYS) <= set(report)
    assert report["events"] == 0 and report["lease"]["owner"] is None
    assert {"core", "example"} <= set(report["schema"])
    assert set(report["projections"]) >= {"example.messages", "example.rooms"}


def test_init_twice_is_harmless(tmp_path):
    db = tmp_path / "twice.db"
    tessera(db, "init", "--protocol", "example")
    tessera(db, "init", "--protocol", "example")
    assert json.loads(tessera(db, "status", "--json").stdout)["schema"]["example"] == 1


def test_ingest_tick_and_parked_round_trip(tmp_path):
    db = tmp_path / "flow.db"
    stream = tmp_path / "stream.jsonl"
    blobs = simulate.generate(200, seed=9)
    stream.write_bytes(b"\n".join(blobs) + b"\n")
    tessera(db, "init", "--protocol", "example")
    assert f"queued {len(blobs)}".encode() in tessera(db, "ingest", "--protocol", "example", str(stream)).stdout
    assert b"queued 1" in tessera(db, "ingest", "--protocol", "example", "-", input=blobs[0] + b"\n").stdout
    out = tessera(db, "tick", "--until-idle").stdout.decode()
    assert "tick stopped (idle)" in out
    report = json.loads(tessera(db, "status", "--json").stdout)
    assert report["incoming"] == 0 and report["blocked"] == 0 and report["parked"] > 0
    assert report["counters"]["items_handled"] > 0
    parked = json.loads(tessera(db, "parked", "list", "--json").stdout)
    assert len(parked) == report["parked"] and all(p["reason"] for p in parked)
    first = str(parked[0]["id"])
    assert b"re-queued 1" in tessera(db, "parked", "retry", first).stdout
    tessera(db, "tick", "--until-idle")
    assert len(json.loads(tessera(db, "parked", "list", "--json").stdout)) == len(parked)  # parked again
    again = json.loads(tessera(db, "parked", "list", "--json").stdout)[0]["id"]
    refused = tessera(db, "parked", "drop", str(again), check=False)
    assert refused.returncode != 0 and b"--yes" in refused.stderr
    tessera(db, "parked", "drop", str(again), "--yes")
    assert len(json.loads(tessera(db, "parked", "list", "--json").stdout)) == len(parked) - 1


def test_example_page_command(tmp_path):
    db = tmp_path / "page.db"
    tessera(db, "init", "--protocol", "example")
    tessera(db, "example", "post", "lobby", "hello there", "--key", "05" * 32)
    page = json.loads(tessera(db, "example", "page", "lobby", "--json").stdout)
    assert [r["text"] for r in page["messages"]] == ["hello there"]
    assert page["next_cursor"] is None and page["has_more"] is False


@pytest.mark.parametrize(
    "args, message",
    [
        (["status"], "not a Tessera database yet"),
        (["ingest", "--protocol", "nope", "-"], "no installed plugin provides protocol 'nope'"),
        (["parked", "retry", "99"], "no parked item 99"),
        (["blob", "export", "ab" * 32, "out.bin"], "no blob"),
        (["ingest", "--protocol", "example", "missing.jsonl"], "no such file"),
    ],
)
def test_user_errors_are_one_line_and_nonzero(tmp_path, args, message):
    db = tmp_path / "err.db"
    if args[0] != "status":
        tessera(db, "init", "--protocol", "example")
    proc = tessera(db, *args, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], lines


def test_an_oversized_line_is_skipped_and_reported(tmp_path):
    db = tmp_path / "big.db"
    stream = tmp_path / "big.jsonl"
    stream.write_bytes(b'{"a":1}\n' + b"x" * 2_000_000 + b"\n")
    tessera(db, "init", "--protocol", "example")
    proc = tessera(db, "ingest", "--protocol", "example", str(stream))
    assert b"queued 1 blob for example" in proc.stdout and b"skipped 1 line over" in proc.stdout
    assert b"line 2 (2000000 bytes)" in proc.stdout
    assert json.loads(tessera(db, "status", "--json").stdout)["incoming"] == 1


def _all_commands(group: click.Group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _all_commands(command, (*prefix, name))


@pytest.mark.parametrize(
    "path, command", list(_all_commands(cli)), ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_every_command_has_help(path, command):
    assert command.help and len(command.help.strip()) > 10, f"tessera {' '.join(path)} needs help text"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_json_logs_carry_item_ids(tmp_path):
    db = tmp_path / "logs.db"
    tessera(db, "init", "--protocol", "example")
    blobs = simulate.generate(3, seed=1, garbage=0, duplicates=0, deletes=0)
    tessera(db, "ingest", "--protocol", "example", "-", input=b"\n".join(blobs) + b"\nnot json\n")
    proc = tessera(db, "--log-format", "json", "--log-level", "DEBUG", "tick", "--until-idle")
    records = [json.loads(line) for line in proc.stderr.decode().splitlines() if line.startswith("{")]
    items = [r for r in records if "item_id" in r]
    assert sorted(r["outcome"] for r in items if r["level"] == "DEBUG") == ["handled", "handled", "handled", "parked"]
    parked = [r for r in items if r["level"] == "WARNING"]
    assert len(parked) == 1 and parked[0]["item_id"] == 4 and "not a JSON object" in parked[0]["message"]


def test_rebuild_verify_names_an_undecodable_event_in_one_line(tmp_path):
    db = tmp_path / "damaged.db"
    tessera(db, "init", "--protocol", "example")
    tessera(db, "example", "post", "lobby", "hello", "--key", "05" * 32)
    with Database(str(db), Settings.load(env={}, key_file=TEST_KEY_FILE)) as raw, raw.write():
        raw.execute(
            "INSERT INTO events(seq, protocol, event_type, version, event_id, partition_key, created_at_ms, "
            "recorded_at_ms, payload) VALUES (2, 'example', 'message_deleted', 1, x'abcd', 'lobby', 1, 1, ?)",
            (b'{"target":"\xff"}',),
        )
    proc = tessera(db, "rebuild", "--verify", "--engine", "local", check=False)
    assert proc.returncode == 1
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: event seq 2 (example/message_deleted, id abcd"), lines


# --- tessera check -----------------------------------------------------------------------------------------------

PAGE = 4096


def _database_with_rows(tmp_path, name):
    """An initialised database whose incoming and deferred tables span many pages, checkpointed into the file."""
    db = tmp_path / name
    tessera(db, "init", "--protocol", "example")
    with Database(str(db), Settings.load(env={}, key_file=TEST_KEY_FILE)) as raw, raw.write():
        raw.executemany(
            "INSERT INTO incoming(protocol, blob, received_at_ms) VALUES ('example', ?, 1)",
            [(bytes([n % 256]) * 300,) for n in range(1500)],
        )
        raw.executemany(
            "INSERT INTO deferred(protocol, payload, partition_key, available_at_ms) VALUES ('example', x'00', ?, ?)",
            [(f"p{n % 7}", n) for n in range(300)],
        )
    assert not (tmp_path / f"{name}-wal").exists() or (tmp_path / f"{name}-wal").stat().st_size == 0
    return db


def _check(db, *args):
    proc = tessera(db, "check", *args, check=False)
    return proc.returncode, proc.stdout.decode().strip().splitlines(), proc.stderr.decode().strip().splitlines()


def test_check_passes_a_healthy_database(tmp_path):
    db = _database_with_rows(tmp_path, "healthy.db")
    assert _check(db) == (0, [f"{db}: ok (PRAGMA quick_check found no damage)"], [])
    assert _check(db, "--full") == (0, [f"{db}: ok (PRAGMA integrity_check found no damage)"], [])


def test_check_reports_a_damaged_page_in_one_line_and_writes_nothing(tmp_path):
    db = _database_with_rows(tmp_path, "damaged.db")
    pages = db.stat().st_size // PAGE
    with open(db, "r+b") as handle:  # a leaf page of incoming, written last: its b-tree header becomes garbage
        handle.seek((pages - 20) * PAGE)
        handle.write(b"\x0d\xff\xff\xff\xff\xff\xff\xff" * 8)
    damaged = db.read_bytes()
    for args in ((), ("--full",)):
        code, out, err = _check(db, *args)
        pragma = "integrity_check" if args else "quick_check"
        assert code == 1 and out == [] and len(err) == 1, (out, err)
        assert err[0].startswith(f"Error: {db} is damaged: PRAGMA {pragma} reported "), err
        assert "restore" in err[0]
    assert db.read_bytes() == damaged


def test_only_full_check_finds_an_index_that_disagrees_with_its_table(tmp_path):
    db = _database_with_rows(tmp_path, "index.db")
    conn = raw_connection(str(db))
    conn.execute("PRAGMA writable_schema = ON")
    with conn:  # the index keeps its entries but now claims to index other columns
        conn.execute(
            "UPDATE sqlite_schema SET sql = 'CREATE INDEX deferred_by_due ON deferred "
            "(partition_key, available_at_ms)' WHERE name = 'deferred_by_due'"
        )
    conn.close()
    assert _check(db)[0] == 0
    code, _out, err = _check(db, "--full")
    assert code == 1 and len(err) == 1 and "PRAGMA integrity_check reported" in err[0] and "deferred_by_due" in err[0]


@pytest.mark.parametrize("content", [None, b"", b"not a database at all" * 100], ids=["missing", "empty", "foreign"])
def test_check_refuses_what_is_not_a_tessera_database_in_one_line(tmp_path, content):
    db = tmp_path / "x.db"
    if content is not None:
        db.write_bytes(content)
    code, _out, err = _check(db)
    assert code == 1 and len(err) == 1 and err[0].startswith("Error: "), err
    assert db.exists() == (content is not None)


@pytest.mark.parametrize(
    "enabled, args",
    [
        ("example", ["marmot", "groups"]),
        ("example", ["marmot", "history", "--group", "ab" * 32]),
        ("marmot", ["example", "page", "lobby"]),
        ("marmot", ["example", "post", "lobby", "hi", "--key", "05" * 32]),
    ],
)
def test_a_plugin_command_on_a_database_without_the_plugin_says_how_to_enable_it(tmp_path, enabled, args):
    db = tmp_path / "partial.db"
    tessera(db, "init", "--protocol", enabled)
    proc = tessera(db, *args, check=False)
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, lines
    assert lines[0] == (
        f"Error: protocol {args[0]!r} is installed but not enabled in {db}; enable it with "
        f"`tessera --db {db} init --protocol {args[0]}`"
    ), lines


def test_scrub_rewrites_the_file_and_says_how_it_went(tmp_path):
    db = tmp_path / "scrub.db"
    tessera(db, "init", "--protocol", "example")
    tessera(db, "example", "post", "lobby", "kept words", "--key", "05" * 32)
    out = tessera(db, "scrub").stdout.decode()
    assert out.startswith("scrubbed in ") and "bytes" in out
    assert "kept words" in tessera(db, "example", "page", "lobby").stdout.decode()  # the rewrite kept the row
