"""`tessera demo` end to end, as the README's first command runs it: a real process, real Spark."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from core.db import file_encryption
from tests.helpers import ROOT, TESSERA

# Wide enough that rich does not wrap the lines asserted on.
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", COLUMNS="250")


def demo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*TESSERA, "demo", *args],
        env=ENV,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


# ~30 s with Spark: out of the default run.  By default, test_cli_acceptance runs simulate, join, ingest,
# tick and history as processes, and tests/rebuild/test_rebuild_marmot rebuilds Marmot on both engines.
@pytest.mark.slow
def test_demo_runs_end_to_end_and_twice_in_the_same_directory(tmp_path):
    workdir = tmp_path / "demo"
    for engine in ("spark", "local"):
        proc = demo("--dir", str(workdir), "--messages", "120", "--engine", engine)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "matches" in proc.stdout and "the simulation's ground truth" in proc.stdout
        assert proc.stdout.count("rebuilt == live") == 1
        assert "swapped in: marmot." in proc.stdout
    assert file_encryption(str(workdir / "demo.db")) == "encrypted"  # under demo.key, beside it


def test_the_demo_shows_its_conversation_as_marmot_history_does(tmp_path):
    proc = demo("--dir", str(tmp_path / "demo"), "--messages", "40", "--engine", "local")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    conversation = proc.stdout.split("the conversation", 1)[1].split("history (", 1)[0]
    rows = [line.split() for line in conversation.splitlines() if line.startswith("  ")]
    assert len(rows) == 8, conversation
    for day, clock, zone, rumor_id, author, *text in rows:
        # A readable UTC time (raw seconds only in --json), the id prefix `react --to` takes, the author's npub.
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", day) and re.fullmatch(r"\d\d:\d\d:\d\d", clock) and zone == "UTC"
        assert re.fullmatch(r"[0-9a-f]{12}", rumor_id) and author.startswith("npub1") and text[0] == "message"


def test_demo_refuses_to_wipe_a_directory_it_did_not_make(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    proc = demo("--dir", str(precious), "--messages", "10", "--engine", "local")
    assert proc.returncode != 0
    assert "was not made by `tessera demo`" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert (precious / "notes.txt").read_text() == "keep me"


@pytest.mark.relay
def test_demo_runs_its_group_through_a_real_local_relay(tmp_path):
    from tests.relay_servers import running_local_relay

    with running_local_relay() as relay:
        proc = demo("--dir", str(tmp_path / "demo"), "--messages", "60", "--engine", "local", "--relay", relay.url)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"{relay.url} accepted" in proc.stdout and "refused" in proc.stdout
    assert "matches" in proc.stdout and "the simulation's ground truth" in proc.stdout
    assert "rebuilt == live" in proc.stdout
