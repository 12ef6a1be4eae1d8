"""Commit races in every order: the best wrapper anchors a commit, rollbacks retry by epoch, undo deletions,
and a rumor re-sent after an invalidation comes back."""

from __future__ import annotations

import itertools

import pytest

from protocols.marmot import facts as F
from tests.marmot._net import T0, Net, event_id
from tests.marmot._read import facts, group_row, history, history_ids, message_state, outer_record, outer_state
from tests.marmot.conftest import deliver, settle


def joined_app(marmot_app, net: Net):
    app = marmot_app()
    app.runtime.run_command("marmot.join", net.join_params)
    return app


def test_two_members_seeing_the_wrappers_in_opposite_orders_agree(marmot_app):
    """Commit A travels in two wrappers (t+20 and t+5), B in one (t+10): A's best wrapper wins, for everyone."""
    net = Net(3)
    before_fork = net.states[1]
    a_late, a = net.prepare(1, T0 + 20)
    a_early = net.wrap(before_fork, a.message, T0 + 5)
    b_line, b = net.prepare(2, T0 + 10)
    b_message, b_rumor, _ = net.send_on(b.new_state, "on B's branch", T0 + 11)
    net.adopt(1, a)
    a_message, a_rumor = net.send(0, "on A's branch", T0 + 21)
    lines = {"a_late": a_late, "a_early": a_early, "b": b_line}
    outcomes = []
    for order in itertools.permutations(lines):
        app = joined_app(marmot_app, net)
        deliver(app, *(lines[name] for name in order), b_message, a_message)
        settle(app)
        outcomes.append(
            (
                [outer_state(app, net.gid, lines[name]) for name in ("a_late", "a_early", "b")],
                outer_record(app, net.gid, b_line).reason,
                history_ids(app, net.gid),
                message_state(app, net.gid, b_rumor["id"]),
                group_row(app, net.gid)["epoch"],
            )
        )
    assert outcomes[0] == (
        ["ProcessedCommit", "ProcessedCommit", "Failed"],
        "commit_lost_race",
        [a_rumor["id"]],
        "EpochInvalidated",
        net.epoch,
    )
    assert all(o == outcomes[0] for o in outcomes), outcomes


def test_a_better_wrapper_of_the_losing_commit_rolls_back_to_it(marmot_app):
    net = Net(3)
    before_fork = net.states[1]
    a_late, a = net.prepare(1, T0 + 20)
    b_line, _b = net.prepare(2, T0 + 10)
    net.adopt(1, a)
    on_a, rumor = net.send(0, "A wins in the end", T0 + 22)
    app = joined_app(marmot_app, net)
    deliver(app, b_line, a_late, on_a)  # B applied, A lost; A's message is read on A's (losing) branch
    assert message_state(app, net.gid, rumor["id"]) == "EpochInvalidated"
    deliver(app, net.wrap(before_fork, a.message, T0 + 5))  # the same commit A, wrapped earlier
    settle(app)
    assert outer_state(app, net.gid, a_late) == "ProcessedCommit"
    assert outer_record(app, net.gid, b_line).reason == "commit_lost_race"
    assert message_state(app, net.gid, rumor["id"]) == "Processed"  # decided again on the new main
    assert history_ids(app, net.gid) == [rumor["id"]]


@pytest.mark.parametrize("message_first", [True, False])
def test_a_winner_branch_message_from_a_slow_clock_survives_the_rollback(marmot_app, message_first):
    net = Net(3)
    loser_line, _ = net.prepare(1, T0 + 20)
    winner_line, winner = net.prepare(2, T0 + 10)
    net.adopt(2, winner)
    slow, rumor = net.send(0, "my clock is behind", T0 + 3)  # older than the winning commit itself
    app = joined_app(marmot_app, net)
    if message_first:
        deliver(app, loser_line, slow)
        settle(app)  # however long it waits for the winner, it does not give up
        deliver(app, winner_line)
    else:
        deliver(app, loser_line)  # applied alone: the winner comes later and rolls it back
        deliver(app, winner_line, slow)
    settle(app)
    assert len(facts(app, F.EPOCH_ROLLED_BACK)) == 1
    assert outer_state(app, net.gid, slow) == "Processed"
    assert history_ids(app, net.gid) == [rumor["id"]]


def test_a_rumor_re_sent_after_its_epoch_was_invalidated_is_processed(marmot_app):
    net = Net(3)
    loser_line, loser = net.prepare(1, T0 + 20)
    winner_line, winner = net.prepare(2, T0 + 10)
    first, rumor, _ = net.send_on(loser.new_state, "said on the wrong branch", T0 + 21)
    app = joined_app(marmot_app, net)
    deliver(app, loser_line, first, winner_line)
    assert message_state(app, net.gid, rumor["id"]) == "EpochInvalidated"
    net.adopt(2, winner)
    again, same = net.send(1, "said on the wrong branch", T0 + 21)  # the author sends the same rumor again
    assert same["id"] == rumor["id"] and event_id(again) != event_id(first)
    deliver(app, again)
    assert message_state(app, net.gid, rumor["id"]) == "Processed"
    assert [m["content"] for m in history(app, net.gid)] == ["said on the wrong branch"]
    assert (outer_state(app, net.gid, first), outer_state(app, net.gid, again)) == ("EpochInvalidated", "Processed")


@pytest.mark.parametrize("loser_first", [True, False])
def test_a_deletion_from_the_losing_branch_is_undone(marmot_app, loser_first):
    net = Net(3)
    kept, target = net.send(1, "this stays", T0 + 1)
    loser_line, loser = net.prepare(1, T0 + 20)
    winner_line, _winner = net.prepare(2, T0 + 10)
    deletion, _, _ = net.send_on(loser.new_state, "", T0 + 21, kind=5, tags=[["e", target["id"]]])
    app = joined_app(marmot_app, net)
    deliver(app, kept)
    if loser_first:
        deliver(app, loser_line, deletion)
        assert message_state(app, net.gid, target["id"]) == "Deleted"
        assert history(app, net.gid)[0]["content"] == ""
        deliver(app, winner_line)
    else:
        deliver(app, winner_line, loser_line, deletion)
    settle(app)
    assert message_state(app, net.gid, target["id"]) == "Processed"
    assert history(app, net.gid)[0]["content"] == "this stays"
    assert outer_state(app, net.gid, deletion) == "EpochInvalidated"
    assert app.db.value("SELECT count(*) FROM marmot_deletions") == 0


def test_a_deletion_on_the_winning_branch_stays_after_the_rollback(marmot_app):
    net = Net(3)
    kept, target = net.send(1, "gone for good", T0 + 1)
    loser_line, _ = net.prepare(0, T0 + 20)
    winner_line, winner = net.prepare(2, T0 + 10)
    net.adopt(2, winner)
    deletion, _ = net.delete(1, target["id"], T0 + 11)
    app = joined_app(marmot_app, net)
    deliver(app, kept, loser_line, deletion, winner_line)
    settle(app)
    assert message_state(app, net.gid, target["id"]) == "Deleted"
    assert outer_state(app, net.gid, deletion) == "Processed"
