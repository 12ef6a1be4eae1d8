"""Any plausible delivery order (bounded reordering, duplicates) converges to the ground truth."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.clock import ManualClock
from core.settings import Settings
from protocols import marmot
from protocols.marmot import simulate
from tests.helpers import open_test_app
from tests.marmot._read import group_row, history_ids
from tests.marmot.conftest import deliver, settle

WINDOW = 2  # positions an event may move: within the retry budget and the retained epochs
_counter = itertools.count()


@functools.cache
def ground_truth(seed: int) -> simulate.Simulation:
    config = simulate.Config(members=3, messages=18, commits=5, races=2, garbage=0, duplicates=0, seed=seed, swaps=0)
    return simulate.simulate(config)


@st.composite
def deliveries(draw):
    sim = ground_truth(draw(st.sampled_from([31, 32, 33])))
    count = len(sim.lines)
    offsets = draw(st.lists(st.integers(0, WINDOW), min_size=count, max_size=count))
    order = sorted(range(count), key=lambda i: (i + offsets[i], i))  # each event moves at most WINDOW places
    lines = [sim.lines[i] for i in order]
    for source, later in draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, 10)), max_size=6)):
        lines.insert(min(source + 1 + later, len(lines)), lines[source])
    return sim, lines


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=deliveries())
def test_bounded_reordering_with_duplicates_converges(tmp_path, settings, case):
    converges(tmp_path, settings, *case)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=deliveries())
def test_bounded_reordering_with_duplicates_converges_many_orders(tmp_path, settings, case):
    converges(tmp_path, settings, *case)


def converges(tmp_path: Path, settings: Settings, sim: simulate.Simulation, lines: list[bytes]) -> None:
    app = open_test_app(str(tmp_path / f"c{next(_counter)}.db"), settings, [marmot], ["marmot"], clock=ManualClock())
    try:
        app.runtime.run_command("marmot.join", sim.join_params)
        for line in lines:  # one relay event at a time, as a live subscription delivers them
            deliver(app, line)
        settle(app)
        gid = sim.expected["group"]
        assert history_ids(app, gid) == sim.expected["rumor_ids"]
        assert group_row(app, gid)["epoch"] == sim.expected["final_epoch"]
        invalidated = {
            r[0].hex()
            for r in app.db.all("SELECT rumor_id FROM marmot_messages WHERE state = ?", ("EpochInvalidated",))
        }
        assert invalidated <= set(sim.expected["invalidated_ids"])
        assert app.db.value("SELECT count(*) FROM blocked") == 0
    finally:
        app.close()


def test_ground_truth_streams_have_races_of_both_shapes():
    shapes = {race["scenario"] for seed in (31, 32, 33) for race in ground_truth(seed).expected["races"]}
    assert shapes == {"loser_first", "winner_first"}
