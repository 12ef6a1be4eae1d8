"""kill -9 the tick daemon at random moments while it drains a simulated stream delivered in any order;
the end equals an uninterrupted run of the same stream delivered oldest first."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import Unpack

import attrs
import pytest

from protocols.marmot import simulate
from tests.helpers import finish_worker, push, query_file
from tests.marmot._orders import StreamSize
from tests.marmot.worker import open_marmot, spawn

pytestmark = pytest.mark.usefixtures("wide_windows")

STREAM = simulate.Config(
    members=4, messages=1000, commits=30, races=5, garbage=20, duplicates=40, deletions=30, seed=41
)


def stream(**overrides: Unpack[StreamSize]) -> simulate.Simulation:
    return simulate.simulate(attrs.evolve(STREAM, **overrides))


def prepare(path: str, sim: simulate.Simulation, lines: list[bytes]) -> None:
    app = open_marmot(path)
    try:
        app.runtime.run_command("marmot.join", sim.join_params)
        push(app, *lines, protocol="marmot")
    finally:
        app.close()


def end_state(db: str) -> dict:
    """What must not depend on the order or on the kills (rollback counts and fact ids may)."""
    return {
        "groups": query_file(
            db, "SELECT hex(gid), epoch, members, resume_created_at, hex(resume_id) FROM marmot_groups"
        ),
        "processed": sorted(
            query_file(db, "SELECT hex(outer_id), state, reason, epoch, hex(rumor_id) FROM marmot_processed")
        ),
        "messages": sorted(
            query_file(
                db, "SELECT hex(rumor_id), created_at, content, state, epoch, deleted_epoch FROM marmot_messages"
            )
        ),
        "parked": sorted(query_file(db, "SELECT hex(blob), substr(reason, 1, 60) FROM parked")),
        "left": query_file(
            db,
            "SELECT (SELECT count(*) FROM incoming), (SELECT count(*) FROM deferred), (SELECT count(*) FROM blocked)",
        ),
        "integrity": query_file(db, "PRAGMA integrity_check"),
    }


def no_doubles(db: str) -> None:
    assert query_file(db, "SELECT count(*) = count(DISTINCT event_id) FROM events") == [(1,)]


def run_clean(tmp_path: Path, sim: simulate.Simulation) -> dict:
    db = str(tmp_path / "clean.db")
    prepare(db, sim, simulate.arrange(sim.lines, "time", random.Random(0)))
    finish_worker(spawn(db, "--mode", "until_idle"), timeout=300)
    no_doubles(db)
    return end_state(db)


def run_with_kills(tmp_path: Path, sim: simulate.Simulation, order: str, kills: int, seed: int) -> dict:
    db = str(tmp_path / "killed.db")
    rng = random.Random(seed)
    prepare(db, sim, simulate.arrange(sim.lines, order, rng, page=200))
    for _ in range(kills):
        daemon = spawn(db, "--ttl", "150")
        time.sleep(rng.uniform(0.0, 0.2))
        daemon.send_signal(signal.SIGKILL)
        daemon.wait()
        assert query_file(db, "PRAGMA quick_check") == [("ok",)]
    time.sleep(0.2)  # let the last lease lapse
    finish_worker(spawn(db, "--mode", "until_idle"), timeout=300)
    no_doubles(db)
    return end_state(db)


def check(tmp_path: Path, sim: simulate.Simulation, order: str, kills: int, seed: int) -> None:
    clean = run_clean(tmp_path, sim)
    killed = run_with_kills(tmp_path, sim, order, kills, seed)
    assert clean["left"] == [(0, 0, sim.expected["waiting"])]
    assert clean["groups"][0][1] == sim.expected["final_epoch"]
    shown = [m for m in clean["messages"] if m[3] in ("Processed", "Deleted")]
    assert sorted(m[0].lower() for m in shown) == sorted(sim.expected["rumor_ids"])
    assert killed == clean


# ~40 s: out of the default run.  By default, test_any_order crashes the drain of every delivery order
# in process and test_tick_processes kills real daemons with SIGKILL.
@pytest.mark.slow
def test_crash_loop_over_a_newest_first_catch_up_equals_an_uninterrupted_run(tmp_path):
    check(tmp_path, stream(), "reversed", kills=20, seed=4)


@pytest.mark.slow
@pytest.mark.parametrize("order", ["relay", "paged", "shuffled"])
def test_crash_loop_100_kills_over_a_bigger_stream(tmp_path, order):
    check(
        tmp_path,
        stream(messages=3000, commits=60, races=10, garbage=60, duplicates=100, deletions=100, seed=42),
        order,
        kills=100,
        seed=5,
    )
