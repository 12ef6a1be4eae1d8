"""Marmot rebuilds: rebuilt == live over streams with races, rollbacks, deletions, duplicates.

Streams are built with a real group (tests.marmot._net.Net): sends, deletions
by the author and by someone else, commits, and commit races delivered with
the better commit second (a rollback) or first (the worse one is rejected).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from jobs.rebuild import RebuildRequest, rebuild
from protocols import marmot
from protocols.marmot import simulate
from tests.marmot._net import T0, Net
from tests.marmot.conftest import deliver, settle
from tests.rebuild.conftest import snapshot_tables

MARMOT_TABLES = ("marmot_groups", "marmot_processed", "marmot_proposals", "marmot_deletions", "marmot_messages")

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 2)),
        st.tuples(st.just("delete_own"), st.integers(0, 50)),
        st.tuples(st.just("delete_other"), st.integers(0, 50)),
        st.tuples(st.just("commit"), st.just(0)),
        st.tuples(st.just("race"), st.booleans()),
        st.tuples(st.just("duplicate"), st.integers(0, 50)),
    ),
    min_size=1,
    max_size=25,
)


def build_stream(net: Net, ops: list[tuple]) -> list[bytes]:
    """Relay lines for ``ops``, in delivery order."""
    lines: list[bytes] = []
    sent: list[tuple[int, dict]] = []  # (author, rumor)
    at = T0 + 10
    for op, arg in ops:
        at += 3
        if op == "send":
            line, rumor = net.send(arg, f"message at {at}", at)
            lines.append(line)
            sent.append((arg, rumor))
        elif op in ("delete_own", "delete_other") and sent:
            author, rumor = sent[arg % len(sent)]
            deleter = author if op == "delete_own" else (author + 1) % 3
            lines.append(net.delete(deleter, rumor["id"], at)[0])
        elif op == "commit":
            lines.append(net.commit(0, at))
        elif op == "race":
            lines += _race(net, at, loser_first=arg)
            at += 10
        elif op == "duplicate" and lines:
            lines.append(lines[arg % len(lines)])
    return lines


def _race(net: Net, at: int, *, loser_first: bool) -> list[bytes]:
    loser_line, loser = net.prepare(1, at + 2)
    winner_line, winner = net.prepare(2, at)
    branch_line, _, _ = net.send_on(loser.new_state, "on the losing branch", at + 3)
    net.adopt(2, winner)
    if loser_first:
        return [loser_line, branch_line, winner_line]  # decrypted, then invalidated by the rollback
    return [winner_line, loser_line, branch_line]  # the late loser is rejected; its branch never decrypts


def marmot_history(make_app, lines: list[bytes], net: Net):
    app = make_app([marmot], ["marmot"])
    app.runtime.run_command("marmot.join", net.join_params)
    deliver(app, *lines)
    settle(app)
    return app


@given(ops=OPS, seed=st.integers(0, 1000))
@hsettings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
def test_local_rebuild_equals_live_for_any_marmot_stream(make_app, ops, seed):
    net = Net(3, seed=seed)
    app = marmot_history(make_app, build_stream(net, ops), net)
    live = snapshot_tables(app, MARMOT_TABLES)
    assert rebuild(RebuildRequest(app, engine="local", verify=True)).equal
    assert rebuild(RebuildRequest(app, engine="local")).swapped
    assert snapshot_tables(app, MARMOT_TABLES) == live
    app.close()


FIXED = [
    [
        ("send", 0),
        ("send", 1),
        ("race", True),
        ("send", 2),
        ("delete_own", 1),
        ("delete_other", 0),
        ("commit", 0),
        ("send", 1),
        ("duplicate", 2),
        ("race", False),
        ("send", 0),
    ],
    [
        ("send", 2),
        ("commit", 0),
        ("send", 1),
        ("send", 0),
        ("race", True),
        ("race", True),
        ("delete_own", 3),
        ("duplicate", 0),
        ("send", 2),
    ],
]


@pytest.mark.spark
@pytest.mark.parametrize("ops", FIXED, ids=["race-rollback-deletions", "two-rollbacks"])
def test_spark_equals_local_equals_live_for_marmot(make_app, spark, ops, tmp_path):
    net = Net(3, seed=5)
    app = marmot_history(make_app, build_stream(net, ops), net)
    assert app.db.value("SELECT count(*) FROM marmot_messages WHERE state = 'EpochInvalidated'") > 0
    assert app.db.value("SELECT count(*) FROM marmot_messages WHERE state = 'Deleted'") > 0
    live = snapshot_tables(app, MARMOT_TABLES)
    assert rebuild(RebuildRequest(app, engine="spark", verify=True, workdir=tmp_path / "w", spark=spark)).equal
    rebuild(RebuildRequest(app, engine="spark", workdir=tmp_path / "w", spark=spark))
    assert snapshot_tables(app, MARMOT_TABLES) == live
    rebuild(RebuildRequest(app, engine="local", workdir=tmp_path / "w"))
    assert snapshot_tables(app, MARMOT_TABLES) == live


@pytest.mark.spark
def test_spark_rebuild_of_a_simulated_group(make_app, spark, tmp_path):
    sim = simulate.simulate(
        simulate.Config(members=4, messages=300, commits=8, races=2, garbage=10, duplicates=10, seed=3)
    )
    app = make_app([marmot], ["marmot"])
    app.runtime.run_command(
        "marmot.join",
        {
            "identity": sim.identity["identity"],
            "key_package_private": sim.identity["key_package_private"],
            "welcome": sim.welcome["welcome"],
        },
    )
    deliver(app, *sim.lines)
    settle(app)
    live = snapshot_tables(app, MARMOT_TABLES)
    report = rebuild(RebuildRequest(app, engine="spark", verify=True, workdir=tmp_path / "w", spark=spark))
    assert report.equal and report.events_replayed > 300
    rebuild(RebuildRequest(app, engine="spark", workdir=tmp_path / "w", spark=spark))
    assert snapshot_tables(app, MARMOT_TABLES) == live
