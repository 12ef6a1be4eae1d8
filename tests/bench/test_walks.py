"""``bench/walks.py``: every journey is traced to its end, through the files it must pass, with the
transactions it must take.  Figures that a refactoring may move (files, returns) are not asserted here;
docs/benchmarks.md records them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: For each journey: the file its walk starts in, files it must pass, and the one it ends in.
ROUTES = {
    "marmot-message": (
        "protocols/marmot/transport/sync.py",
        ["core/queues.py", "core/drain.py", "core/pipeline.py", "protocols/marmot/processing/handlers.py"],
        "protocols/marmot/read/projectors.py",
    ),
    "marmot-commit": (
        "protocols/marmot/transport/sync.py",
        ["core/pipeline.py", "protocols/marmot/processing/commits.py", "protocols/libraries/mls/api.py"],
        "protocols/marmot/read/projectors.py",
    ),
    "xmtp-send": (
        "protocols/xmtp/cli.py",
        ["core/runtime.py", "protocols/xmtp/jobs.py", "protocols/xmtp/publishing.py", "core/door.py"],
        "protocols/xmtp/intent_machine.py",
    ),
    "server-send": (
        "protocols/sovereign/server/session.py",
        ["protocols/sovereign/server/pool.py", "protocols/sovereign/service.py", "core/eventlog.py"],
        "protocols/sovereign/server/session.py",
    ),
}


@pytest.fixture(scope="module")
def walks() -> dict[str, Any]:
    found = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "walks.py"), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)


@pytest.mark.parametrize("journey", sorted(ROUTES))
def test_each_journey_is_traced_from_its_start_to_its_end(walks: dict[str, Any], journey: str) -> None:
    figures = walks[journey]
    start, through, end = ROUTES[journey]
    walk = figures["walk"]
    assert figures["complete"], figures["end"]
    assert walk[0] == start
    assert set(through) <= set(walk)
    assert end in walk
    plugin_files = {path for path in walk if path.startswith("protocols/") and "/libraries/" not in path}
    assert figures["plugin"]["files"] == len(plugin_files) > 0
    assert sum(figures["files_by_kind"].values()) == figures["files"] == len(set(walk))
    assert figures["plugin"]["walk"] == _collapsed(p for p in walk if p in plugin_files)


def test_an_xmtp_intent_is_published_in_at_most_two_transactions(walks: dict[str, Any]) -> None:
    xmtp = walks["xmtp-send"]
    published = xmtp["milestones"]["PUBLISHED"]
    assert published["seen"] == "PUBLISHED"
    assert 1 <= published["transactions"] <= 2
    assert xmtp["transactions"] > published["transactions"]  # reading it back, to COMMITTED, writes too


def test_a_server_send_is_one_transaction_and_a_marmot_message_two(walks: dict[str, Any]) -> None:
    assert walks["server-send"]["transactions"] == 1  # the store's write: the fan-out happens after its commit
    assert walks["marmot-message"]["transactions"] == 2  # queued from the relay, then processed in one batch


def _collapsed(paths: Any) -> list[str]:
    walk: list[str] = []
    for path in paths:
        if not walk or walk[-1] != path:
            walk.append(path)
    return walk
