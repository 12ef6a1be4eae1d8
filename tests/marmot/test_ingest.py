"""Ingest invariants (replay, retry budget, watermark), backfill, observers and subscriptions."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable
from typing import Unpack

import attrs
import pytest

from core.app import App
from jobs.tick import TickDaemon
from protocols.marmot import facts as F
from protocols.marmot import observe, simulate
from protocols.marmot.cursor import Cursor, compare
from protocols.marmot.read.history import GroupHistoryStore
from tests.helpers import raw_connection
from tests.marmot._net import T0, Net, event_id
from tests.marmot._orders import StreamSize, assert_ground_truth
from tests.marmot._read import event_count, facts, history_ids
from tests.marmot.conftest import deliver, settle

STREAM = simulate.Config(members=4, messages=80, commits=6, races=2, garbage=8, duplicates=8, deletions=4, seed=11)


@functools.cache
def stream(**overrides: Unpack[StreamSize]) -> simulate.Simulation:
    return simulate.simulate(attrs.evolve(STREAM, **overrides))


def joined(marmot_app: Callable[[], App], sim: simulate.Simulation) -> App:
    app = marmot_app()
    app.runtime.run_command("marmot.join", sim.join_params)
    return app


def assert_matches(app, sim: simulate.Simulation) -> None:
    assert_ground_truth(app, sim)
    assert history_ids(app, sim.expected["group"]) == sim.expected["rumor_ids"]


# --- seed 000's matrix ---------------------------------------------------------------------------


def test_a_simulated_stream_lands_as_the_ground_truth_says(marmot_app):
    sim = stream()
    app = joined(marmot_app, sim)
    deliver(app, *sim.lines)
    settle(app)
    assert_matches(app, sim)
    assert app.db.value("SELECT count(*) FROM blocked") == sim.expected["waiting"]
    assert all(r[0].startswith(("DecodeError", "MalformedInput")) for r in app.db.all("SELECT reason FROM parked"))


def test_replaying_the_same_batch_changes_nothing(marmot_app):
    sim = stream()
    app = joined(marmot_app, sim)
    deliver(app, *sim.lines)
    settle(app)
    gid = sim.expected["group"]
    before = (
        event_count(app),
        history_ids(app, gid),
        GroupHistoryStore(app.db, gid).get_resume_cursor(),
        app.db.all("SELECT * FROM marmot_processed ORDER BY outer_id"),
    )
    report = deliver(app, *sim.lines)
    settle(app)
    after = (
        event_count(app),
        history_ids(app, gid),
        GroupHistoryStore(app.db, gid).get_resume_cursor(),
        app.db.all("SELECT * FROM marmot_processed ORDER BY outer_id"),
    )
    assert after == before
    assert set(report.outcomes) <= {"duplicate", "parked", "blocked"}


def test_never_readable_events_wait_without_holding_up_readable_ones(marmot_app):
    sim = stream(garbage=40, races=0, duplicates=0, seed=12)
    app = joined(marmot_app, sim)
    deliver(app, *sim.lines)
    report = settle(app)  # terminates: waiting items are only looked at when an epoch arrives
    assert report is not None
    assert history_ids(app, sim.expected["group"]) == sim.expected["rumor_ids"]
    assert app.db.value("SELECT count(*) FROM blocked") == sim.expected["waiting"] > 0
    assert app.db.all("SELECT DISTINCT reason_type, attempts FROM blocked") == [("marmot.epoch", 0)]
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 0
    assert not app.db.all("SELECT 1 FROM marmot_processed WHERE state = 'Failed'")
    assert not app.db.all(
        "SELECT 1 FROM parked WHERE reason NOT LIKE 'DecodeError%' AND reason NOT LIKE 'MalformedInput%'"
    )


def test_waiting_for_an_epoch_never_spends_attempts(marmot_app, settings):
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    commits = [net.commit(i % 3, T0 + i) for i in range(settings.max_attempts + 3)]
    far, rumor = net.send(1, "from many epochs ahead", T0 + 50)
    deliver(app, far)
    for commit in commits:  # each epoch wakes it, it waits for the next one, nothing is counted
        assert app.db.all("SELECT attempts FROM blocked") == [(0,)]
        deliver(app, commit)
        settle(app)
    assert history_ids(app, net.gid) == [rumor["id"]]
    assert app.db.value("SELECT count(*) FROM blocked") == 0
    assert app.db.value("SELECT count(*) FROM parked") == 0


def test_it_waits_on_the_next_epoch_and_is_released_the_moment_that_epoch_is_applied(marmot_app):
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    epoch = net.epoch
    commit = net.commit(0, T0 + 1)
    early, rumor = net.send(1, "for the next epoch", T0 + 2)
    deliver(app, early)
    assert app.db.one("SELECT reason_type, reason_key FROM blocked") == ("marmot.epoch", f"{net.gid}:{epoch + 1}")
    report = deliver(app, commit)  # no clock advance: the commit's own transaction wakes it
    assert report.rechecked == 1
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_a_wait_past_the_horizon_is_parked_and_parked_retry_brings_it_back(marmot_app, monkeypatch):
    from core import drain, queues

    monkeypatch.setenv("TESSERA_MARMOT_WAIT_HORIZON_MS", "60000")
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    commit = net.commit(0, T0 + 1)
    late, rumor = net.send(1, "its epoch comes too late", T0 + 2)
    deliver(app, late)
    app.clock.advance(59_999)
    assert drain.sweep_expired_blocked(app.runtime) == 0
    app.clock.advance(1)
    assert drain.sweep_expired_blocked(app.runtime) == 1
    (reason,) = app.db.one("SELECT reason FROM parked")
    assert reason.startswith("epoch_never_arrived: ")
    deliver(app, commit)
    with app.db.write():
        assert queues.retry_parked(app.db, None, app.clock.now_ms()) == 1
    deliver(app)
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_watermark_advances_through_commit_and_proposal_only_events(marmot_app):
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    history = GroupHistoryStore(app.db, net.gid)
    lines = [net.commit(0, T0 + 1), net.propose(1, T0 + 2, self_remove=True), net.commit(2, T0 + 3)]
    seen: list[Cursor] = []
    for line in lines:
        deliver(app, line)
        cursor = history.get_resume_cursor()
        assert cursor is not None
        seen.append(cursor)
    assert [c.id for c in seen] == [event_id(line) for line in lines]
    assert all(compare(a, b) < 0 for a, b in itertools.pairwise(seen))
    assert not history_ids(app, net.gid)


def test_events_for_a_group_we_have_not_joined_wait_for_the_join(marmot_app, settings):
    net = Net(3)
    app = marmot_app()
    line, rumor = net.send(1, "before we joined", T0 + 1)
    report = deliver(app, line)
    assert report.outcomes == {"blocked": 1}
    assert app.db.one("SELECT reason_type, reason_key FROM blocked") == ("marmot.group", net.ngid)
    for _ in range(settings.max_attempts + 1):  # other joins wake nothing of ours; rechecks cost nothing
        settle(app)
    app.runtime.run_command("marmot.join", net.join_params)
    deliver(app)
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_events_of_a_group_never_joined_are_parked_after_the_horizon(marmot_app, monkeypatch):
    from core import drain

    monkeypatch.setenv("TESSERA_MARMOT_WAIT_HORIZON_MS", "5000")
    net = Net(3)
    app = marmot_app()
    deliver(app, net.send(1, "nobody here joined", T0 + 1)[0])
    app.clock.advance(5000)
    assert drain.sweep_expired_blocked(app.runtime) == 1
    assert app.db.value("SELECT reason FROM parked").startswith("unknown_group: ")


def test_decode_refuses_what_is_not_a_signed_group_event(marmot_app):
    net = Net(2)
    app = marmot_app()
    good, _ = net.send(1, "x", T0)
    event = json.loads(good)
    bad_sig = json.dumps({**event, "sig": "00" * 64}).encode()
    wrong_kind = json.dumps({**event, "kind": 1}).encode()
    deliver(app, b"not json", bad_sig, wrong_kind)
    reasons = [r[0] for r in app.db.all("SELECT reason FROM parked ORDER BY id")]
    assert len(reasons) == 3 and reasons[0].startswith("MalformedInput: malformed input")
    assert reasons[1].startswith("DecodeError") and ("bad_signature" in reasons[1] or "id_mismatch" in reasons[1])
    assert reasons[2].startswith("DecodeError")


# --- backfill --------------------------------------------------------------------------------------


def test_backfill_of_a_shuffled_batch_matches_the_ground_truth(marmot_app):
    sim = stream()
    app = joined(marmot_app, sim)
    lines = list(reversed(sim.lines))  # a relay answering newest first
    outcome = app.runtime.run_command("marmot.backfill", {"group": sim.expected["group"], "events": lines})
    settle(app)
    assert_matches(app, sim)
    # Commits sorted by (epoch, created_at, id): every race's winner comes first, so nothing rolls back.
    assert not facts(app, F.EPOCH_ROLLED_BACK)
    report = outcome.result
    assert report.invalid == sum(1 for line in sim.lines if not _is_group_event(line))
    assert report.rounds >= 2


def _is_group_event(line: bytes) -> bool:
    from protocols.marmot.processing import handlers

    try:
        handlers.decode(line)
        return True
    except Exception:
        return False


def test_backfill_skips_what_the_group_decided_before_and_nothing_else(marmot_app):
    sim = stream(garbage=0, races=0, seed=13)
    app = joined(marmot_app, sim)
    gid = sim.expected["group"]
    # A relay answers by timestamp: first everything up to some second, later everything from earlier on.
    cut = sorted(json.loads(line)["created_at"] for line in sim.lines)[len(sim.lines) // 2]
    first = [line for line in sim.lines if json.loads(line)["created_at"] <= cut]
    app.runtime.run_command("marmot.backfill", {"group": gid, "events": first})
    decided = {
        outer_id.hex()
        for (outer_id,) in app.db.all(
            "SELECT outer_id FROM marmot_processed WHERE gid = ? AND state IN ('Processed', 'ProcessedCommit', "
            "'EpochInvalidated', 'Failed')",
            (bytes.fromhex(gid),),
        )
    }
    before = event_count(app)
    again = app.runtime.run_command("marmot.backfill", {"group": gid, "events": sim.lines}).result
    assert again.skipped_known == sum(1 for line in sim.lines if event_id(line) in decided) > 0
    settle(app)
    assert event_count(app) > before
    assert history_ids(app, gid) == sim.expected["rumor_ids"]


def test_backfill_takes_an_others_event_older_than_our_own_last_one(marmot_app):
    """Our own message's echo is processed at T0 + 5; a relay file then brings another member's of T0 + 4."""
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    app.clock.now = (T0 + 5) * 1000
    app.runtime.run_command("marmot.send", {"group": net.gid, "text": "ours"})
    TickDaemon(app, mode="until_idle").run()  # a group without relays loops our event back
    line, rumor = net.send(1, "theirs, a second older", T0 + 4)
    app.runtime.run_command("marmot.backfill", {"group": net.gid, "events": [line]})
    assert rumor["id"] in history_ids(app, net.gid)


def test_backfill_of_an_unknown_group_is_a_clear_error(marmot_app):
    from protocols.marmot.errors import GroupNotFound

    app = marmot_app()
    with pytest.raises(GroupNotFound, match="tessera marmot groups"):
        app.runtime.run_command("marmot.backfill", {"group": "ab" * 32, "events": []})


# --- observers and subscriptions -------------------------------------------------------------


class Counting(observe.Observer):
    def __init__(self, db_path: str):
        self.db_path = db_path
        self.outcomes: dict[str, int] = {}
        self.epochs: list[int] = []
        self.rumors: list[tuple[str, str]] = []
        self.visible_when_called: list[bool] = []

    def on_outer_event_processed(self, id, created_at, outcome, *, group):
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def on_commit_applied(self, epoch, *, group):
        self.epochs.append(epoch)

    def on_rumor_persisted(self, rumor_id, outer_event_id, *, group):
        self.rumors.append((rumor_id, outer_event_id))
        other = raw_connection(self.db_path)  # another connection sees it: it is committed
        try:
            found = other.execute(
                "SELECT 1 FROM marmot_messages WHERE rumor_id = ?", (bytes.fromhex(rumor_id),)
            ).fetchall()
        finally:
            other.close()
        self.visible_when_called.append(bool(found))


def test_observers_hear_each_outcome_after_commit(marmot_app):
    sim = stream(races=0, seed=14)
    app = joined(marmot_app, sim)
    counting = Counting(app.db.path)
    detach = observe.attach(app.runtime, counting)
    deliver(app, *sim.lines)
    settle(app)
    gid = sim.expected["group"]
    processed = app.db.value("SELECT count(*) FROM marmot_processed WHERE state IN ('Processed', 'ProcessedCommit')")
    assert counting.outcomes["processed"] == processed
    assert "failed" not in counting.outcomes and "invalidated" not in counting.outcomes
    assert counting.outcomes["duplicate"] >= 1 and counting.outcomes["waiting"] >= sim.expected["waiting"]
    assert counting.epochs == list(range(2, sim.expected["final_epoch"] + 1))
    assert sorted(r for r, _ in counting.rumors) == sorted(history_ids(app, gid))
    assert all(counting.visible_when_called)
    detach()
    before = dict(counting.outcomes)
    deliver(app, *sim.lines[:3])
    assert counting.outcomes == before


def test_history_subscription_fires_after_commit_for_its_group_only(marmot_app):
    net, other = Net(3, seed=1), Net(3, seed=2)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    app.runtime.run_command("marmot.join", other.join_params)
    got = []
    stop = GroupHistoryStore(app.db, net.gid).subscribe(app.runtime, lambda rumor: got.append(rumor["id"]))
    mine, rumor = net.send(1, "for us", T0 + 1)
    theirs, _ = other.send(1, "for the other group", T0 + 1)
    deliver(app, mine, theirs)
    sent = app.runtime.run_command("marmot.send", {"group": net.gid, "text": "ours"}).events[0].data["rumor"]
    assert got == [rumor["id"], sent["id"]]
    stop()
    deliver(app, net.send(2, "after unsubscribing", T0 + 2)[0])
    assert len(got) == 2


def test_rolled_back_items_tell_observers_nothing(marmot_app, monkeypatch):
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    counting = Counting(app.db.path)
    observe.attach(app.runtime, counting)
    from protocols.marmot.processing import messages

    def broken(item, received):
        raise RuntimeError("handler bug after decrypting")

    monkeypatch.setattr(messages, "application", broken)
    deliver(app, net.send(1, "x", T0 + 1)[0])
    assert counting.outcomes == {} and counting.rumors == []
    assert app.db.value("SELECT count(*) FROM deferred") == 1  # retried later by the core


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("created_at", 2**64),
        ("created_at", "1700000000"),
        ("kind", 2**70),
        ("tags", [["h"] * 2] * 1 + [[[[[[["deep"]]]]]]]),
    ],
)
def test_undecodable_events_are_parked_at_once_naming_the_field(marmot_app, caplog, field, value):
    net = Net(2)
    app = marmot_app()
    good, _ = net.send(1, "x", T0)
    event = json.loads(good)
    hostile = json.dumps({**event, field: value}).encode()
    report = deliver(app, hostile)
    assert report.outcomes == {"parked": 1}
    reason, attempts = app.db.one("SELECT reason, attempts FROM parked")
    assert reason.startswith(f"MalformedInput: malformed field {field}") and attempts == 1
    assert app.db.value("SELECT count(*) FROM deferred") == 0
    assert not any(record.exc_info for record in caplog.records)


def test_a_lone_surrogate_is_malformed_input(marmot_app):
    app = marmot_app()
    deliver(app, b'{"id": "\\ud800", "kind": 445}')
    reason, attempts = app.db.one("SELECT reason, attempts FROM parked")
    assert reason.startswith("MalformedInput: malformed") and attempts == 1
