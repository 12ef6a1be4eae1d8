"""The plugin's projectors: the projector test kit, and invariant 7 (history failures never block state)."""

from __future__ import annotations

import functools

from core import hookimpl
from core.state import ProtocolState
from projectors.testkit import Blob, Item, ProjectorContract, Run
from protocols import marmot
from protocols.marmot import simulate
from protocols.marmot.state import store
from tests.marmot._net import T0, Net
from tests.marmot._read import group_row, history_ids
from tests.marmot.conftest import deliver, settle


@functools.cache
def _stream(seed: int) -> simulate.Simulation:
    config = simulate.Config(members=3, messages=14, commits=4, races=2, garbage=4, duplicates=3, seed=seed)
    return simulate.simulate(config)


class TestMarmotProjectorContract(ProjectorContract):
    """Two groups (two partitions), races with rollbacks, duplicates, garbage, and our own sends."""

    plugins = (marmot,)
    protocols = ("marmot",)

    def items(self) -> list[Item]:
        first, second = _stream(21), _stream(22)
        items: list[Item] = [Run("marmot.join", first.join_params), Run("marmot.join", second.join_params)]
        for a, b in zip(first.lines, second.lines, strict=False):
            items += [Blob("marmot", a), Blob("marmot", b)]
        items += [Blob("marmot", line) for line in first.lines[len(second.lines) :] + second.lines[len(first.lines) :]]
        items.append(Run("marmot.send", {"group": first.expected["group"], "text": "ours", "created_at": T0 + 999}))
        return items


# --- invariant 7 ------------------------------------------------------------------------------------


class FailureHook:
    def __init__(self):
        self.calls = []

    @hookimpl
    def on_projection_failed(self, projection, seq, error):
        self.calls.append((projection, seq, error))


def test_a_failing_history_projector_still_advances_group_state(make_app):
    hook = FailureHook()
    app = make_app([marmot, hook], ["marmot"])
    net = Net(3)
    app.runtime.run_command("marmot.join", net.join_params)
    with app.db.write():
        app.db.execute(
            "CREATE TRIGGER refuse_history BEFORE INSERT ON marmot_messages "
            "BEGIN SELECT RAISE(ABORT, 'history disk is full'); END"
        )
    epoch = net.epoch
    line, _ = net.send(1, "cannot be stored", T0 + 1)
    deliver(app, line, net.commit(0, T0 + 2))
    after, rumor = net.send(2, "after the commit", T0 + 3)
    deliver(app, after)
    # Authoritative state moved on: the engine state and the processing record.
    loaded = store.load(ProtocolState(app.db, "marmot"), net.gid)
    assert loaded is not None
    assert loaded.state.epoch == epoch + 1 == group_row(app, net.gid)["epoch"]
    assert app.db.value("SELECT count(*) FROM marmot_processed WHERE state IN ('Processed', 'ProcessedCommit')") == 3
    # The history failures are recorded and announced; nothing was parked or retried.
    failures = app.db.all("SELECT projection, error FROM projection_failures")
    assert len(failures) == 2 and all(p == "marmot.history" and "history disk is full" in e for p, e in failures)
    assert [c[0] for c in hook.calls] == ["marmot.history", "marmot.history"]
    assert app.db.value("SELECT count(*) FROM parked") + app.db.value("SELECT count(*) FROM deferred") == 0
    # Once the cause is gone, a rebuild repairs the history from the log.
    with app.db.write():
        app.db.execute("DROP TRIGGER refuse_history")
    from projectors.testkit import ProjectorKit

    kit = ProjectorKit([marmot], ["marmot"])
    rebuilt = kit.replay(app)
    rows = rebuilt.execute("SELECT rumor_id FROM marmot_messages ORDER BY created_at").fetchall()
    newest_id = rows[-1][0]
    assert isinstance(newest_id, bytes) and newest_id.hex() == rumor["id"] and len(rows) == 2
    settle(app)
    assert history_ids(app, net.gid) == []  # the live table stays empty until `tessera rebuild`
