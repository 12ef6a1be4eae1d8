"""Any arrival order gives the same result: the live path (ingest + tick) against the simulator's ground truth.

Relays answer a catch-up ``REQ`` newest first, page back with ``until`` one
page at a time, deliver in several batches, twice, and mixed with other
groups' traffic; a daemon may be killed anywhere in between.  Whatever the
order, the final epoch, the history (ids, order, states), every outer
event's state, the group row and what still waits must equal in-order
delivery — and both must equal what the simulation knows is true.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from protocols.marmot import simulate
from tests.marmot._orders import (
    assert_ground_truth,
    interleave,
    outcome,
    parked_blobs,
    run,
    split,
)

pytestmark = pytest.mark.usefixtures("wide_windows")


def _sim(**config) -> simulate.Simulation:
    return simulate.simulate(simulate.Config(**config))


# --- the orders relays really produce ------------------------------------------------------------


@pytest.fixture(scope="module")
def five_members() -> simulate.Simulation:
    """The group the report saw fall apart: 5 members, ~600 events, 9 epochs, races and deletions."""
    return _sim(members=5, messages=560, commits=9, races=2, garbage=6, duplicates=20, deletions=12, seed=5)


@pytest.mark.parametrize("order", ["reversed", "paged"])
def test_a_catch_up_newest_first_ends_where_in_order_delivery_ends(tmp_path, settings, five_members, order):
    sim = five_members
    lines = simulate.arrange(sim.lines, order, random.Random(0), page=100)
    app = run(str(tmp_path / f"{order}.db"), settings, [sim], [lines])
    try:
        assert_ground_truth(app, sim)
        assert (
            app.db.value(
                "SELECT count(*) FROM parked WHERE reason NOT LIKE 'DecodeError%' AND reason NOT LIKE 'MalformedInput%'"
            )
            == 0
        )
    finally:
        app.close()


def test_in_order_delivery_matches_the_ground_truth(tmp_path, settings, five_members):
    sim = five_members
    app = run(str(tmp_path / "time.db"), settings, [sim], [simulate.arrange(sim.lines, "time", random.Random(0))])
    try:
        assert_ground_truth(app, sim)
    finally:
        app.close()


# --- any permutation, batches, duplicates, other groups, crashes ------------------------------------

CONFIGS = st.fixed_dictionaries(
    {
        "members": st.integers(3, 4),
        "messages": st.integers(8, 24),
        "commits": st.integers(2, 5),
        "races": st.integers(0, 2),
        "garbage": st.integers(0, 3),
        "duplicates": st.integers(0, 3),
        "deletions": st.integers(0, 3),
        "seed": st.integers(0, 2**32 - 1),
    }
).filter(lambda c: c["races"] <= c["commits"])

DELIVERIES = st.fixed_dictionaries(
    {
        "order": st.sampled_from(simulate.ORDERS),
        "page": st.integers(2, 12),
        "batches": st.integers(1, 4),
        "crashes": st.lists(st.integers(1, 40), max_size=3),
        "other_group": st.booleans(),
        "rng": st.integers(0, 2**32 - 1),
    }
)


def check_any_order(tmp_path, core_settings, config: dict, delivery: dict) -> None:
    sim = _sim(**config)
    other = _sim(**{**config, "seed": config["seed"] ^ 0x5A5A, "races": 0}) if delivery["other_group"] else None
    rng = random.Random(delivery["rng"])
    base = str(tmp_path / f"{config['seed']}-{delivery['rng']}")

    reference = run(base + "-time.db", core_settings, [sim], [simulate.arrange(sim.lines, "time", rng)])
    try:
        assert_ground_truth(reference, sim)
        expected, expected_parked = outcome(reference, sim.expected["group"]), parked_blobs(reference)
    finally:
        reference.close()

    lines = simulate.arrange(sim.lines, delivery["order"], rng, page=delivery["page"])
    sims = [sim]
    if other is not None:
        lines = interleave(lines, simulate.arrange(other.lines, delivery["order"], rng, page=delivery["page"]), rng)
        sims.append(other)
    app = run(base + "-any.db", core_settings, sims, split(lines, delivery["batches"]), delivery["crashes"])
    try:
        assert outcome(app, sim.expected["group"]) == expected
        assert_ground_truth(app, sim)
        if other is not None:
            assert_ground_truth(app, other)
        else:
            assert parked_blobs(app) == expected_parked
    finally:
        app.close()


@examples(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(config=CONFIGS, delivery=DELIVERIES)
def test_any_delivery_ends_where_in_order_delivery_ends(tmp_path_factory, settings, config, delivery):
    check_any_order(tmp_path_factory.mktemp("order"), settings, config, delivery)


@pytest.mark.slow
@examples(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(config=CONFIGS, delivery=DELIVERIES)
def test_any_delivery_ends_where_in_order_delivery_ends_many_examples(tmp_path_factory, settings, config, delivery):
    check_any_order(tmp_path_factory.mktemp("order"), settings, config, delivery)
