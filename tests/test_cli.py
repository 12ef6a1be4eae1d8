"""The tessera command line, run as a real process where it matters."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from core.status import STATUS_KEYS
from jobs.cli import cli
from protocols.example import simulate
from tests.conftest import ROOT

TESSERA = [sys.executable, "-m", "jobs"]


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
    assert json.loads(tessera(db, "status", "--json").stdout)["schema"]["example"] == 0


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
    rows = json.loads(tessera(db, "example", "page", "lobby", "--json").stdout)
    assert [r["text"] for r in rows] == ["hello there"]


@pytest.mark.parametrize("args, message", [
    (["status"], "not a Tessera database yet"),
    (["ingest", "--protocol", "nope", "-"], "no installed plugin provides protocol 'nope'"),
    (["parked", "retry", "99"], "no parked item 99"),
    (["blob", "export", "ab" * 32, "out.bin"], "no blob"),
    (["ingest", "--protocol", "example", "missing.jsonl"], "no such file"),
])
def test_user_errors_are_one_line_and_nonzero(tmp_path, args, message):
    db = tmp_path / "err.db"
    if args[0] != "status":
        tessera(db, "init", "--protocol", "example")
    proc = tessera(db, *args, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], lines


def test_oversized_line_refuses_the_whole_file(tmp_path):
    db = tmp_path / "big.db"
    stream = tmp_path / "big.jsonl"
    stream.write_bytes(b'{"a":1}\n' + b"x" * 2_000_000 + b"\n")
    tessera(db, "init", "--protocol", "example")
    proc = tessera(db, "ingest", "--protocol", "example", str(stream), check=False)
    assert proc.returncode == 1 and b"nothing was queued" in proc.stderr
    assert json.loads(tessera(db, "status", "--json").stdout)["incoming"] == 0


def _all_commands(group: click.Group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _all_commands(command, (*prefix, name))


@pytest.mark.parametrize("path, command", list(_all_commands(cli)), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
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
    assert sorted(r["outcome"] for r in items if r["level"] == "DEBUG") == ["handled", "handled", "handled",
                                                                              "parked"]
    parked = [r for r in items if r["level"] == "WARNING"]
    assert len(parked) == 1 and parked[0]["item_id"] == 4 and "not a JSON object" in parked[0]["message"]
