"""Ingest invariants (replay, retry budget, watermark), backfill, observers and subscriptions."""

from __future__ import annotations

import functools
import json

import apsw
import pytest

from protocols.marmot import facts as F
from protocols.marmot import ingest, observe, simulate
from protocols.marmot.cursor import Cursor, compare
from protocols.marmot.history import GroupHistoryStore
from tests.marmot._net import T0, Net, event_id
from tests.marmot._read import event_count, facts, group_row, history_ids
from tests.marmot.conftest import deliver, settle


@functools.cache
def stream(**kwargs) -> simulate.Simulation:
    config = {"members": 4, "messages": 80, "commits": 6, "races": 2, "garbage": 8, "duplicates": 8, "seed": 11}
    return simulate.simulate(simulate.Config(**{**config, **kwargs}))


def joined(marmot_app, sim: simulate.Simulation):
    app = marmot_app()
    params = {**{k: sim.identity[k] for k in ("identity", "key_package_private")}, "welcome": sim.welcome["welcome"]}
    app.runtime.run_command("marmot.join", params)
    return app


def assert_matches(app, sim: simulate.Simulation) -> None:
    gid = sim.expected["group"]
    assert history_ids(app, gid) == sim.expected["rumor_ids"]
    invalidated = [r for r in GroupHistoryStore(app.db, gid).query_rumors(limit=10**6, include_invalidated=True)
                   if r["state"] == "EpochInvalidated"]
    assert sorted(r["id"] for r in invalidated) == sorted(sim.expected["invalidated_ids"])
    row = group_row(app, gid)
    assert row["epoch"] == sim.expected["final_epoch"]
    assert row["outer_events"].get("Failed", 0) == sim.expected["failed"]


# --- seed 000's matrix ---------------------------------------------------------------------------


def test_a_simulated_stream_lands_as_the_ground_truth_says(marmot_app):
    sim = stream()
    app = joined(marmot_app, sim)
    deliver(app, *sim.lines)
    settle(app)
    assert_matches(app, sim)
    assert app.db.value("SELECT count(*) FROM blocked") == 0
    assert all("DecodeError" in r[0] for r in app.db.all("SELECT reason FROM parked"))


def test_replaying_the_same_batch_changes_nothing(marmot_app):
    sim = stream()
    app = joined(marmot_app, sim)
    deliver(app, *sim.lines)
    settle(app)
    gid = sim.expected["group"]
    before = (event_count(app), history_ids(app, gid), GroupHistoryStore(app.db, gid).get_resume_cursor(),
              app.db.all("SELECT * FROM marmot_processed ORDER BY outer_id"))
    report = deliver(app, *sim.lines)
    settle(app)
    after = (event_count(app), history_ids(app, gid), GroupHistoryStore(app.db, gid).get_resume_cursor(),
             app.db.all("SELECT * FROM marmot_processed ORDER BY outer_id"))
    assert after == before
    assert set(report.outcomes) <= {"duplicate", "parked"}


def test_permanently_unreadable_events_end_failed_and_do_not_block_readable_ones(marmot_app):
    sim = stream(garbage=40, races=0, duplicates=0, seed=12)
    app = joined(marmot_app, sim)
    deliver(app, *sim.lines)
    report = settle(app)  # terminates: every recheck budget runs out
    assert report is not None and app.db.value("SELECT count(*) FROM blocked") == 0
    assert app.db.value("SELECT count(*) FROM recheck_queue") == 0
    assert history_ids(app, sim.expected["group"]) == sim.expected["rumor_ids"]
    reasons = dict(app.db.all("SELECT reason, count(*) FROM marmot_processed WHERE state = 'Failed' GROUP BY reason"))
    assert reasons == {"retry_exhausted": sim.expected["failed"]}
    assert not app.db.all("SELECT 1 FROM parked WHERE reason NOT LIKE 'DecodeError%'")


def test_the_plugin_gives_up_before_the_core_would_park(marmot_app, monkeypatch):
    monkeypatch.setenv("TESSERA_MARMOT_MAX_RETRIES", "50")  # far above the core's max_attempts (3 here)
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    _, result = net.prepare(0, T0)
    net.adopt(0, result)
    unreadable, _ = net.send(1, "from an epoch we never reach", T0 + 1)
    deliver(app, unreadable)
    settle(app)
    record = GroupHistoryStore(app.db, net.gid).outer_record(event_id(unreadable))
    assert (record.state, record.reason) == ("Failed", "retry_exhausted")
    assert app.db.value("SELECT count(*) FROM parked") == 0


def test_watermark_advances_through_commit_and_proposal_only_events(marmot_app):
    net = Net(3)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    history = GroupHistoryStore(app.db, net.gid)
    lines = [net.commit(0, T0 + 1), net.propose(1, T0 + 2, self_remove=True), net.commit(2, T0 + 3)]
    seen = []
    for line in lines:
        deliver(app, line)
        seen.append(history.get_resume_cursor())
    assert [c.id for c in seen] == [event_id(line) for line in lines]
    assert all(compare(a, b) < 0 for a, b in zip(seen, seen[1:]))
    assert not history_ids(app, net.gid)


def test_events_for_a_group_we_have_not_joined_wait_for_the_join(marmot_app):
    net = Net(3)
    app = marmot_app()
    line, rumor = net.send(1, "before we joined", T0 + 1)
    report = deliver(app, line)
    assert report.outcomes == {"blocked": 1}
    assert app.db.one("SELECT reason_type, reason_key FROM blocked") == ("marmot.group", net.gid)
    app.runtime.run_command("marmot.join", net.join_params)
    deliver(app)
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_decode_refuses_what_is_not_a_signed_group_event(marmot_app):
    net = Net(2)
    app = marmot_app()
    good, _ = net.send(1, "x", T0)
    event = json.loads(good)
    bad_sig = json.dumps({**event, "sig": "00" * 64}).encode()
    wrong_kind = json.dumps({**event, "kind": 1}).encode()
    deliver(app, b"not json", bad_sig, wrong_kind)
    reasons = [r[0] for r in app.db.all("SELECT reason FROM parked ORDER BY id")]
    assert len(reasons) == 3 and all(r.startswith("DecodeError") for r in reasons)
    assert "shape" in reasons[0] and ("bad_signature" in reasons[1] or "id_mismatch" in reasons[1])


# --- backfill --------------------------------------------------------------------------------------


def test_backfill_of_a_shuffled_batch_matches_the_ground_truth(marmot_app):
    sim = stream()
    app = joined(marmot_app, sim)
    lines = list(reversed(sim.lines))  # a relay answering newest first
    outcome = app.runtime.run_command("marmot.backfill", {"group": sim.expected["group"], "events": lines})
    settle(app)
    gid = sim.expected["group"]
    assert history_ids(app, gid) == sim.expected["rumor_ids"]
    assert group_row(app, gid)["epoch"] == sim.expected["final_epoch"]
    # Commits sorted by (epoch, created_at, id): every race's winner comes first, so nothing rolls back;
    # the losing branches' messages and the losers of loser-first races end Failed instead.
    assert not facts(app, F.EPOCH_ROLLED_BACK)
    loser_first = sum(1 for race in sim.expected["races"] if race["scenario"] == "loser_first")
    failed = sim.expected["failed"] + len(sim.expected["invalidated_ids"]) + loser_first
    assert group_row(app, gid)["outer_events"]["Failed"] == failed
    report = outcome.result
    assert report.invalid == sum(1 for line in sim.lines if not _is_group_event(line))
    assert report.rounds >= 2


def _is_group_event(line: bytes) -> bool:
    from protocols.marmot import handlers

    try:
        handlers.decode(line)
        return True
    except Exception:  # noqa: BLE001 - garbage of any kind
        return False


def test_backfill_skips_what_the_resume_cursor_covers(marmot_app):
    sim = stream(garbage=0, races=0, seed=13)
    app = joined(marmot_app, sim)
    gid = sim.expected["group"]
    # A relay answers by timestamp: first everything up to some second, later everything since the cursor.
    cut = sorted(json.loads(line)["created_at"] for line in sim.lines)[len(sim.lines) // 2]
    first = [line for line in sim.lines if json.loads(line)["created_at"] <= cut]
    app.runtime.run_command("marmot.backfill", {"group": gid, "events": first})
    cursor = GroupHistoryStore(app.db, gid).get_resume_cursor()
    assert ingest.relay_filter(gid, cursor) == {"kinds": [445], "#h": [gid], "since": cursor.created_at}
    assert ingest.relay_filter(gid, None) == {"kinds": [445], "#h": [gid]}
    before = event_count(app)
    again = app.runtime.run_command("marmot.backfill", {"group": gid, "events": sim.lines}).result
    older = sum(1 for line in sim.lines if compare(Cursor(json.loads(line)["created_at"], event_id(line)),
                                                    cursor) <= 0)
    assert again.skipped_old == older > 0
    settle(app)
    assert event_count(app) > before
    assert history_ids(app, gid) == sim.expected["rumor_ids"]


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
        other = apsw.Connection(self.db_path)  # another connection sees it: it is committed
        try:
            found = other.execute("SELECT 1 FROM marmot_messages WHERE rumor_id = ?",
                                  (bytes.fromhex(rumor_id),)).fetchall()
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
    assert counting.outcomes["retry_exhausted"] == sim.expected["failed"]
    assert counting.outcomes["duplicate"] >= 1 and counting.outcomes["unreadable"] >= sim.expected["failed"]
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
    from protocols.marmot import messages

    def broken(item, received):
        raise RuntimeError("handler bug after decrypting")

    monkeypatch.setattr(messages, "application", broken)
    deliver(app, net.send(1, "x", T0 + 1)[0])
    assert counting.outcomes == {} and counting.rumors == []
    assert app.db.value("SELECT count(*) FROM deferred") == 1  # retried later by the core
