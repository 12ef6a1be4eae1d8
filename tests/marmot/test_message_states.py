"""Message and processing states (own messages, others', failures, dedupe, deletions, proposals)."""

from __future__ import annotations

import json

import pytest

from core import publish
from core.records import OutcomeKind
from jobs.tick import TickDaemon
from protocols.libraries import mls
from protocols.marmot import facts as F
from protocols.marmot import observe
from protocols.marmot.wire import key_package_events, outer, rumors
from tests.marmot._net import T0, Net, event_id
from tests.marmot._read import (
    event_count,
    facts,
    group_row,
    history,
    history_ids,
    message_state,
    outer_record,
    outer_state,
)
from tests.marmot.conftest import deliver, settle


class Recorder(observe.Observer):
    def __init__(self):
        self.outcomes: list[tuple[str, str]] = []
        self.rollbacks: list[tuple[list, list]] = []
        self.epochs: list[int] = []
        self.rumors: list[str] = []

    def on_outer_event_processed(self, id, created_at, outcome, *, group):
        self.outcomes.append((id, outcome))

    def on_epoch_rolled_back(self, invalidated, retryable, *, group):
        self.rollbacks.append((invalidated, retryable))

    def on_commit_applied(self, epoch, *, group):
        self.epochs.append(epoch)

    def on_rumor_persisted(self, rumor_id, outer_event_id, *, group):
        self.rumors.append(rumor_id)


# --- own messages -----------------------------------------------------------------------------


def test_own_message_is_created_then_processed_when_the_relay_echoes_it(app, net):
    outcome = app.runtime.run_command("marmot.send", {"group": net.gid, "text": "hello from us"})
    rumor = outcome.events[0].data["rumor"]
    outer_id = outcome.events[0].data["outer_id"]
    row = app.db.one("SELECT state, rumor_id FROM marmot_processed WHERE outer_id = ?", (bytes.fromhex(outer_id),))
    assert row == ("Created", bytes.fromhex(rumor["id"]))
    assert message_state(app, net.gid, rumor["id"]) == "Created"
    assert app.db.one("SELECT transport, status FROM outgoing") == ("loopback", "pending")
    # The tick publishes through loopback; the echo comes back through incoming.
    report = TickDaemon(app, mode="until_idle").run()
    assert report.outcomes.get(OutcomeKind.HANDLED) == 1
    assert message_state(app, net.gid, rumor["id"]) == "Processed"
    assert (
        app.db.value("SELECT state FROM marmot_processed WHERE outer_id = ?", (bytes.fromhex(outer_id),)) == "Processed"
    )
    # Other members can read what we sent; the rumor's author is our credential.
    sent = app.db.value("SELECT payload FROM outgoing")
    received = mls.process_message(net.states[1], _mls_bytes(net, sent))
    assert isinstance(received, mls.ApplicationReceived)
    assert json.loads(received.plaintext) == rumor and received.sender_credential == net.observer.credential


def _mls_bytes(net: Net, line: bytes) -> bytes:
    content = json.loads(line)["content"]
    opened = outer.open_content(net.states[1], content)
    assert opened is not None, "no retained epoch key opens the content"
    return opened[1]


def test_own_message_never_fails_even_when_its_echo_comes_back_late_and_twice(app, net):
    outcome = app.runtime.run_command("marmot.send", {"group": net.gid, "text": "late echo"})
    echo = app.db.value("SELECT payload FROM outgoing")
    for at in range(6):  # the group moves on, far beyond the epoch we sent in
        deliver(app, net.commit(0, T0 + 10 + at))
    deliver(app, echo, echo)
    settle(app)
    rumor_id = outcome.events[0].data["rumor"]["id"]
    assert message_state(app, net.gid, rumor_id) == "Processed"
    assert outer_state(app, net.gid, echo) == "Processed"
    assert not app.db.all("SELECT 1 FROM marmot_processed WHERE state IN ('Failed', 'Retryable')")


def test_sending_the_same_text_in_the_same_second_is_one_message(app, net):
    params = {"group": net.gid, "text": "same", "created_at": T0 + 5}
    first = app.runtime.run_command("marmot.send", params)
    again = app.runtime.run_command("marmot.send", params)
    assert first.events and not again.events
    assert app.db.value("SELECT count(*) FROM outgoing") == 1


# --- others' messages and failures ------------------------------------------------------------


def test_message_of_another_member_is_processed_with_its_metadata(app, net):
    line, rumor = net.send(1, "hi all", T0 + 1)
    deliver(app, line)
    [row] = history(app, net.gid)
    assert row["id"] == rumor["id"] and row["pubkey"] == net.cred(1) and row["content"] == "hi all"
    assert row["outer_id"] == event_id(line) and row["outer_created_at"] == T0 + 1 and row["state"] == "Processed"
    assert outer_record(app, net.gid, line).content_type == "application"


def test_rumor_author_must_be_the_mls_sender(app, net):
    line, _rumor = net.send(1, "I am member 2", T0 + 1, pubkey=net.cred(2))
    deliver(app, line)
    record = outer_record(app, net.gid, line)
    assert (record.state, record.reason, record.epoch) == ("Failed", "sender_mismatch", net.epoch)
    assert history(app, net.gid) == []


@pytest.mark.parametrize(
    "payload",
    [
        b"not json at all",
        b'{"id": "00"}',
        json.dumps(
            {"id": "0" * 64, "pubkey": "1" * 64, "created_at": 1, "kind": 9, "tags": [], "content": "x"}
        ).encode(),
    ],
)
def test_invalid_rumors_fail_with_a_sanitized_reason(app, net, payload):
    line, _ = net.send(1, "", T0 + 1, payload=payload)
    deliver(app, line)
    record = outer_record(app, net.gid, line)
    assert (record.state, record.reason) == ("Failed", "invalid_rumor")
    detail = app.db.value("SELECT detail FROM marmot_processed")
    assert len(detail) < 120 and "Traceback" not in detail and payload.decode(errors="replace") not in detail


def test_failure_reasons_hold_no_secrets_or_exception_dumps(app, net):
    line, _ = net.send(1, "replayed", T0 + 1)
    deliver(app, line)
    # The same MLS message rewrapped in another outer event: its key is gone.
    rewrap = net.wrap(net.states[1], _mls_bytes(net, line), T0 + 2)
    deliver(app, rewrap)
    record = outer_record(app, net.gid, rewrap)
    assert (record.state, record.reason) == ("Failed", "replayed")
    for reason, detail in app.db.all("SELECT reason, detail FROM marmot_processed WHERE reason IS NOT NULL"):
        assert reason in F.REASONS and len(detail) < 200 and "Error" not in detail


# --- the dedupe table ---------------------------------------------------------------------------


@pytest.fixture
def decrypts(monkeypatch):
    """Counts outer decryption attempts (the real function still runs)."""
    calls = []
    real = outer.open_content

    def counting(state, content, ahead=None):
        calls.append(content)
        return real(state, content, ahead)

    monkeypatch.setattr(outer, "open_content", counting)
    return calls


def test_processed_and_processed_commit_are_duplicates(app, net, decrypts):
    message, _ = net.send(1, "once", T0 + 1)
    commit = net.commit(0, T0 + 2)
    deliver(app, message, commit)
    before, calls = event_count(app), len(decrypts)
    recorder = Recorder()
    observe.attach(app.runtime, recorder)
    report = deliver(app, message, commit)
    assert report.outcomes == {"duplicate": 2} and event_count(app) == before and len(decrypts) == calls
    assert [o for _, o in recorder.outcomes] == ["duplicate", "duplicate"]
    assert group_row(app, net.gid)["epoch"] == net.epoch and len(history(app, net.gid)) == 1


def test_failed_events_are_previously_failed_without_decrypting_again(app, net, decrypts):
    line, _ = net.send(1, "forged", T0 + 1, pubkey=net.cred(2))
    deliver(app, line)
    assert outer_record(app, net.gid, line).reason == "sender_mismatch"
    calls, before = len(decrypts), event_count(app)
    recorder = Recorder()
    observe.attach(app.runtime, recorder)
    assert deliver(app, line, line).outcomes == {"duplicate": 2}
    assert len(decrypts) == calls and event_count(app) == before
    assert recorder.outcomes == [(event_id(line), "previously_failed")] * 2


def test_epoch_invalidated_events_are_blocked_without_decrypting_again(app, net, decrypts):
    loser_line, loser = net.prepare(1, T0 + 20)
    winner_line, _winner = net.prepare(2, T0 + 10)
    branch_line, _, _ = net.send_on(loser.new_state, "on the losing branch", T0 + 21)
    deliver(app, loser_line, branch_line, winner_line)
    assert outer_state(app, net.gid, branch_line) == "EpochInvalidated"
    calls = len(decrypts)
    assert deliver(app, branch_line).outcomes == {"duplicate": 1} and len(decrypts) == calls


# --- rollback -------------------------------------------------------------------------------------


def test_better_commit_arriving_second_rolls_back_once(app, net):
    recorder = Recorder()
    observe.attach(app.runtime, recorder)
    epoch = net.epoch
    before, _ = net.send(0, "before the fork", T0 + 5)
    loser_line, loser = net.prepare(1, T0 + 20)
    winner_line, winner = net.prepare(2, T0 + 10)
    lost_a, rumor_a, branch = net.send_on(loser.new_state, "loser branch a", T0 + 21)
    lost_b, rumor_b, _ = net.send_on(branch, "loser branch b", T0 + 22)
    net.adopt(2, winner)
    early, _ = net.send(0, "winner branch, long before the winner came", T0 + 11)
    waiting, _ = net.send(1, "winner branch, just before the winner", T0 + 12)
    deliver(app, before, loser_line, lost_a, lost_b, early)
    settle(app)  # the early winner-branch message waits, however long, spending nothing
    assert outer_state(app, net.gid, early) is None
    assert app.db.all("SELECT reason_type, attempts FROM blocked") == [("marmot.epoch", 0)]
    assert [message_state(app, net.gid, r["id"]) for r in (rumor_a, rumor_b)] == ["Processed", "Processed"]
    deliver(app, waiting, winner_line)
    settle(app)
    [rollback] = facts(app, F.EPOCH_ROLLED_BACK)
    assert rollback.data["epoch"] == epoch
    assert rollback.data["invalidated_rumors"] == [rumor_a["id"], rumor_b["id"]]
    assert rollback.data["invalidated"] == [event_id(lost_a), event_id(lost_b)]
    assert rollback.data["lost_commits"] == [event_id(loser_line)]
    assert rollback.data["retryable"] == []
    assert recorder.rollbacks == [([rumor_a["id"], rumor_b["id"]], [])]
    assert [message_state(app, net.gid, r["id"]) for r in (rumor_a, rumor_b)] == ["EpochInvalidated"] * 2
    # Both winner-branch messages decrypt with the winner's keys once it is applied.
    assert outer_state(app, net.gid, early) == outer_state(app, net.gid, waiting) == "Processed"
    assert [m["content"] for m in history(app, net.gid)][1:] == [
        "winner branch, long before the winner came",
        "winner branch, just before the winner",
    ]
    record = outer_record(app, net.gid, loser_line)
    assert (record.state, record.reason) == ("Failed", "commit_lost_race")
    assert group_row(app, net.gid)["epoch"] == epoch + 1 and group_row(app, net.gid)["rollbacks"] == 1
    assert recorder.epochs == [epoch + 1, epoch + 1]
    assert app.db.value("SELECT count(*) FROM blocked") == 0


def test_better_commit_arriving_first_rejects_the_late_worse_one(app, net):
    epoch = net.epoch
    loser_line, loser = net.prepare(1, T0 + 20)
    winner_line, winner = net.prepare(2, T0 + 10)
    lost, lost_rumor, _ = net.send_on(loser.new_state, "only the losing branch reads this", T0 + 21)
    net.adopt(2, winner)
    won, won_rumor = net.send(0, "winner branch", T0 + 22)
    deliver(app, winner_line, won, loser_line, lost)
    settle(app)
    assert not facts(app, F.EPOCH_ROLLED_BACK)
    record = outer_record(app, net.gid, loser_line)
    assert (record.state, record.reason, record.epoch) == ("Failed", "commit_lost_race", epoch)
    assert (
        app.db.value("SELECT detail FROM marmot_processed WHERE reason = 'commit_lost_race'")
        == f"commit lost the race for epoch {epoch}"
    )
    # Decrypted on the losing branch and recorded as a rollback would have left it.
    assert outer_state(app, net.gid, lost) == "EpochInvalidated"
    assert message_state(app, net.gid, lost_rumor["id"]) == "EpochInvalidated"
    assert history_ids(app, net.gid) == [won_rumor["id"]]
    assert group_row(app, net.gid)["epoch"] == epoch + 1
    assert app.db.value("SELECT count(*) FROM blocked") == 0


@pytest.mark.parametrize("smaller_first", [True, False])
def test_equal_timestamps_the_smaller_id_wins(app, net, smaller_first):
    first_line, first = net.prepare(1, T0 + 10)
    second_line, second = net.prepare(2, T0 + 10)
    (small_line, small), (large_line, _large) = sorted(
        [(first_line, first), (second_line, second)], key=lambda pair: event_id(pair[0])
    )
    committer = 1 if small is first else 2
    net.adopt(committer, small)
    probe, probe_rumor = net.send(0, "on the smaller id's branch", T0 + 11)
    order = [small_line, large_line] if smaller_first else [large_line, small_line]
    # One delivery each: delivered together, they would be read in (created_at, id) order, the smaller first.
    deliver(app, order[0])
    deliver(app, order[1], probe)
    settle(app)
    assert outer_state(app, net.gid, small_line) == "ProcessedCommit"
    assert len(facts(app, F.EPOCH_ROLLED_BACK)) == (0 if smaller_first else 1)
    assert outer_record(app, net.gid, large_line).reason == "commit_lost_race"
    assert history_ids(app, net.gid) == [probe_rumor["id"]]


def test_a_rewrapped_commit_never_rolls_back(app, net):
    base = net.states[0]
    line, result = net.prepare(1, T0 + 20)
    net.adopt(1, result)
    deliver(app, line)
    rewrap = net.wrap(base, result.message, T0 + 5)  # same MLS bytes, an earlier (better) outer event
    deliver(app, rewrap)
    assert not facts(app, F.EPOCH_ROLLED_BACK)
    assert outer_state(app, net.gid, rewrap) == "ProcessedCommit"
    [fact] = facts(app, F.COMMIT_REWRAPPED)
    assert fact.data["original_outer_id"] == event_id(line)
    probe, rumor = net.send(2, "still on the same branch", T0 + 21)
    deliver(app, probe)
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_commit_for_an_epoch_outside_the_rollback_window_is_too_old(app, net, monkeypatch):
    monkeypatch.setenv("TESSERA_MARMOT_SNAPSHOTS", "1")
    base_line, base = net.prepare(1, T0 + 30)
    competitor = net.states[2]
    net.adopt(1, base)
    deliver(app, base_line, net.commit(0, T0 + 31))
    # A "better" commit for the first epoch, wrapped with a key we still retain.
    result = mls.commit(competitor, self_update=True, rng=net.draw)
    late = net.wrap(competitor, result.message, T0 + 1)
    deliver(app, late)
    assert outer_record(app, net.gid, late).reason == "commit_too_old"
    assert not facts(app, F.EPOCH_ROLLED_BACK)


@pytest.mark.parametrize("better", [False, True], ids=["loses", "wins"])
def test_a_commit_of_an_epoch_whose_keys_the_engine_let_go_still_competes(marmot_app, net, monkeypatch, better):
    """The rollback window may reach further back than the past epochs whose keys the engine keeps: a competitor
    for such an epoch opens with the snapshot kept for it and is weighed by MIP-03's rule (it waited for an epoch
    that never comes before)."""
    monkeypatch.setenv("TESSERA_MARMOT_PAST_EPOCHS", "1")
    monkeypatch.setenv("TESSERA_MARMOT_SNAPSHOTS", "8")
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    competitor, first_epoch = net.states[2], net.epoch
    applied_line, applied = net.prepare(1, T0 + 30)
    net.adopt(1, applied)
    later = [net.commit(0, T0 + 31 + n) for n in range(3)]
    deliver(app, applied_line, *later)
    assert group_row(app, net.gid)["epoch"] == first_epoch + 4  # the first epoch's keys are gone (1 past epoch kept)
    result = mls.commit(competitor, self_update=True, rng=net.draw)
    late = net.wrap(competitor, result.message, T0 + (1 if better else 40))
    probe, rumor, _ = net.send_on(result.new_state, "on the competitor's branch", T0 + 41)
    deliver(app, late, probe)
    if better:
        assert outer_state(app, net.gid, late) == "ProcessedCommit"
        assert len(facts(app, F.EPOCH_ROLLED_BACK)) == 1
        assert [outer_record(app, net.gid, line).reason for line in later] == ["invalidated_branch"] * 3
        assert group_row(app, net.gid)["epoch"] == first_epoch + 1
        assert message_state(app, net.gid, rumor["id"]) == "Processed"
    else:
        assert outer_record(app, net.gid, late).reason == "commit_lost_race"
        assert not facts(app, F.EPOCH_ROLLED_BACK)
        assert group_row(app, net.gid)["epoch"] == first_epoch + 4
        assert message_state(app, net.gid, rumor["id"]) == "EpochInvalidated"


# --- deletions ------------------------------------------------------------------------------------


def test_deletion_by_the_original_sender_marks_the_message_deleted(app, net):
    line, rumor = net.send(1, "regrettable", T0 + 1)
    deletion, _deletion_rumor = net.delete(1, rumor["id"], T0 + 2)
    deliver(app, line, deletion)
    [row] = history(app, net.gid)  # the deletion rumor itself is not shown
    assert (row["id"], row["state"], row["content"]) == (rumor["id"], "Deleted", "")
    assert outer_state(app, net.gid, deletion) == "Processed"
    assert facts(app, F.DELETION_RECEIVED)[0].data["targets"] == [{"id": rumor["id"], "effect": "deleted"}]


def test_deletion_by_someone_else_is_recorded_without_effect(app, net):
    line, rumor = net.send(1, "mine", T0 + 1)
    deletion, _ = net.delete(2, rumor["id"], T0 + 2)
    deliver(app, line, deletion)
    assert message_state(app, net.gid, rumor["id"]) == "Processed"
    assert history(app, net.gid)[0]["content"] == "mine"
    assert outer_state(app, net.gid, deletion) == "Processed"
    assert facts(app, F.DELETION_RECEIVED)[0].data["targets"] == [{"id": rumor["id"], "effect": "ignored"}]


def test_deletion_that_arrives_before_its_target_applies_when_the_target_arrives(app, net):
    line, rumor = net.send(1, "soon gone", T0 + 1)
    deletion, _ = net.delete(1, rumor["id"], T0 + 2)
    forged, _ = net.delete(2, rumor["id"], T0 + 3)
    deliver(app, forged, deletion, line)
    assert message_state(app, net.gid, rumor["id"]) == "Deleted"
    other_line, other = net.send(1, "not deleted by the other member", T0 + 4)
    other_deletion, _ = net.delete(2, other["id"], T0 + 5)
    deliver(app, other_deletion, other_line)
    assert message_state(app, net.gid, other["id"]) == "Processed"


# --- proposals ------------------------------------------------------------------------------------


def test_add_and_remove_proposals_wait_for_an_admin(app, net):
    joiner = mls.new_identity(net.draw(32).hex(), rng=net.draw)
    package, _ = key_package_events.create_key_package(joiner, rng=net.draw)
    add = net.propose(1, T0 + 1, add=package)
    remove = net.propose(2, T0 + 2, remove=net.cred(1))
    deliver(app, add, remove)
    assert outer_state(app, net.gid, add) == outer_state(app, net.gid, remove) == "Processed"
    rows = app.db.all("SELECT kind, proposer, subject FROM marmot_proposals ORDER BY kind")
    assert rows == [("add", net.cred(1), joiner.credential), ("remove", net.cred(2), net.cred(1))]
    # An admin's commit ends the epoch: the pending proposals go with it.
    deliver(app, net.commit(0, T0 + 3))
    assert app.db.all("SELECT * FROM marmot_proposals") == []


def test_self_remove_is_committed_at_once_when_we_are_an_admin(marmot_app):
    net = Net(3, observer_admin=True)
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    epoch = net.epoch
    leave = net.propose(2, T0 + 1, self_remove=True)
    deliver(app, leave)
    [proposal] = facts(app, F.PROPOSAL_RECEIVED)
    assert proposal.data["action"] == "auto_committed" and outer_state(app, net.gid, leave) == "Processed"
    [commit_line] = [row[0] for row in app.db.all("SELECT payload FROM outgoing")]
    # The commit is published through loopback and adopted when it comes back.
    publish.publish_due(app.runtime)
    deliver(app)
    assert outer_state(app, net.gid, commit_line) == "ProcessedCommit"
    row = group_row(app, net.gid)
    assert (row["epoch"], row["members"]) == (epoch + 1, 3)
    applied = mls.process_message(net.states[0], _mls_bytes(net, commit_line))
    assert isinstance(applied, mls.CommitApplied)
    assert applied.removed == (net.cred(2),)


def test_self_remove_waits_for_an_admin_when_we_are_not_one(app, net):
    leave = net.propose(2, T0 + 1, self_remove=True)
    deliver(app, leave)
    assert facts(app, F.PROPOSAL_RECEIVED)[0].data["action"] == "pending"
    assert app.db.value("SELECT kind FROM marmot_proposals") == "self_remove"
    assert app.db.value("SELECT count(*) FROM outgoing") == 0


def test_unknown_rumor_kinds_are_stored_as_they_are(app, net):
    line, rumor = net.send(1, "reaction", T0 + 1, kind=7, tags=[["e", "ab" * 32]])
    deliver(app, line)
    [row] = history(app, net.gid)
    assert (row["kind"], row["tags"]) == (7, [["e", "ab" * 32]]) and rumors.decode(rumors.encode(rumor)) == rumor
