"""Bugs found with the intents state machine (test_intents_stateful.py), each pinned by a plain example.

* a group's history holds the welcomes its members sent, and every member parked each one as malformed;
* an invitee's topic started at its welcome, so it missed what the others sent, commits included, in its
  first epoch before the welcome was stored (its epoch then fell behind for good);
* a removed member's open intents never ended (a message published after the removal stayed PUBLISHED),
  and the others showed that message;
* an outage after a send whose reply was lost ended the intent in ERROR though its message was delivered
  (and its sender parked it when read back); a commit overtaking a built message that was on the hub
  already had it built again, so it was delivered twice;
* a message that reached the hub too many epochs late was COMMITTED though no member could read it, and
  every member parked it.
"""

from __future__ import annotations

import attrs

from core.clock import ManualClock
from protocols.libraries.mls.group.state import DEFAULT_MAX_PAST_EPOCHS
from protocols.xmtp import intent_machine, queries
from protocols.xmtp.errors import ServiceUnavailable
from protocols.xmtp.kinds import IntentKind, IntentState
from protocols.xmtp.transport.interface import Receipt
from protocols.xmtp.transport.loopback import LoopbackHub, LoopbackService
from tests.xmtp.conftest import MakeMember, Member
from tests.xmtp.test_intents_flow import _join


def _pair(make_member: MakeMember) -> tuple[Member, Member, bytes]:
    """Alice's new group with Bob in it (invited, welcomed, accepted)."""
    alice, bob = make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    return alice, bob, group


def _parked(member: Member) -> list[str]:
    with member.app.db.read():
        return [str(row[0]) for row in member.app.db.all("SELECT reason FROM parked")]


def test_a_welcome_in_the_group_history_is_passed_by_not_parked(make_member: MakeMember) -> None:
    # The server stores a welcome under its group, and a group's history returns it to every member;
    # it is the invitee's (read on its welcome topic), so the members' syncs step over it.
    alice, bob, carol = make_member(), make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    _join(alice, carol, group)
    for member in (alice, bob, carol):
        member.sync()
    assert _parked(alice) == _parked(bob) == _parked(carol) == []
    alice.run("send", group=group.hex(), text="all here")
    alice.settle()
    bob.sync()
    carol.sync()
    assert bob.texts(group) == carol.texts(group) == ["all here"]


def test_what_members_send_before_the_welcome_is_stored_reaches_the_invitee(make_member: MakeMember) -> None:
    # The welcome leaves only once its commit is read back, so the others may already be in the new epoch,
    # sending messages and commits that the server stores before the welcome: the invitee must read them.
    alice, bob, carol = make_member(), make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    alice.run("send", group=group.hex(), text="before carol")  # of epoch 1: carol, joining at 2, passes it by
    alice.settle()
    bob.sync()
    alice.run("add_members", group=group.hex(), addresses=[carol.address])
    alice.settle()  # the commit is read back: carol's welcome is ready, not sent yet
    bob.sync()
    bob.run("send", group=group.hex(), text="welcome, carol")
    bob.run("update_key", group=group.hex())
    bob.publish()  # the message leaves at once; the key update waits for nothing either
    bob.settle()
    alice.publish()  # only now the welcome
    carol.sync()
    carol.run("accept", group=group.hex())
    carol.sync()
    alice.sync()
    assert carol.texts(group) == ["welcome, carol"]
    assert bob.texts(group) == ["before carol", "welcome, carol"]
    assert carol.epoch(group) == bob.epoch(group) == alice.epoch(group) == 3
    assert _parked(carol) == []  # what came before carol's epoch is passed by, not parked
    carol.run("send", group=group.hex(), text="thanks")
    carol.settle()
    alice.sync()
    bob.sync()
    assert alice.texts(group)[-1] == bob.texts(group)[-1] == "thanks"


def test_a_removed_member_s_open_intents_end_in_error_and_its_late_message_is_not_shown(
    make_member: MakeMember,
) -> None:
    alice, bob, group = _pair(make_member)
    bob.run("send", group=group.hex(), text="too late")
    bob.run("update_key", group=group.hex())
    alice.run("remove_members", group=group.hex(), addresses=[bob.address])
    alice.settle()  # the removal holds epoch 1
    bob.publish()  # bob's message reaches the server after his removal, built for the epoch before it
    bob.sync()
    with bob.app.db.read():
        left = queries.group(bob.app.db, group)
    assert left is not None and left.active is False
    intents = bob.intents()
    assert [row.kind for row in intents] == [IntentKind.SEND_MESSAGE, IntentKind.KEY_UPDATE]
    assert [row.state for row in intents] == [IntentState.ERROR, IntentState.ERROR]
    assert all("removed" in row.error for row in intents)
    alice.sync()
    assert "too late" not in alice.texts(group)  # stored after its sender's removal: never delivered
    assert _parked(alice) == _parked(bob) == []


@attrs.define
class Flaky(LoopbackService):
    """A connection whose next sends fail: ``lose`` of them after the hub stored the payload (the reply is
    lost on the way back), ``drop`` of them before it reaches the hub."""

    lose: int = 0
    drop: int = 0

    def send(self, group_id: bytes, payload: bytes, *, recipient: str | None = None) -> Receipt:
        if self.drop:
            self.drop -= 1
            raise ServiceUnavailable("simulated: the send never reached the hub")
        receipt = super().send(group_id, payload, recipient=recipient)
        if self.lose:
            self.lose -= 1
            raise ServiceUnavailable("simulated: the hub stored it, the reply was lost")
        return receipt


def _flaky(member: Member, **faults: int) -> Flaky:
    member.service = Flaky(member.service.hub, member.service.installation, **faults)
    return member.service


def test_a_built_message_whose_reply_was_lost_is_never_given_up_and_is_delivered_once(
    make_member: MakeMember, hub: LoopbackHub, clock: ManualClock
) -> None:
    alice, bob, group = _pair(make_member)
    _flaky(alice, lose=1)
    alice.run("send", group=group.hex(), text="once")
    alice.publish()  # on the hub; alice saw an outage
    for _ in range(intent_machine.MAX_ATTEMPTS + 1):  # the outage goes on through every retry
        hub.fail_next(100)
        clock.advance(600_000)
        alice.publish()
    hub.fail_next(0)
    intent = alice.intents()[-1]
    assert intent.state is IntentState.TO_SEND and intent.attempts == intent_machine.MAX_ATTEMPTS + 2
    bob.sync()
    assert bob.texts(group) == ["once"]  # delivered: the intent may not end in ERROR
    clock.advance(600_000)
    alice.settle()
    assert alice.intents()[-1].state is IntentState.COMMITTED and alice.texts(group) == ["once"]
    assert _parked(alice) == _parked(bob) == []


def test_an_intent_that_was_not_built_yet_ends_in_error_after_the_attempts_and_the_horizon(
    make_member: MakeMember, hub: LoopbackHub, clock: ManualClock
) -> None:
    # A commit is built by the publish job, after its join: an outage before it leaves it unbuilt.  (A
    # message whose turn it is is built by `send` itself, so it is tried until the server answers.)
    alice = make_member()
    horizon_ms = alice.app.db.settings.outgoing_retry_horizon_ms
    group = alice.create_group()
    alice.run("update_key", group=group.hex())
    for _ in range(intent_machine.MAX_ATTEMPTS * 2):  # an outage of minutes: tried on, not given up
        hub.fail_next(100)
        alice.publish()
        clock.advance(600_000)
    [intent] = alice.intents()
    assert intent.state is IntentState.TO_SEND and intent.attempts == intent_machine.MAX_ATTEMPTS * 2
    clock.advance(horizon_ms)  # the outage outlasted the core's outgoing_retry_horizon_ms
    hub.fail_next(100)
    alice.publish()
    [intent] = alice.intents()
    assert intent.state is IntentState.ERROR and not intent.prepared and "outage" in intent.error


def test_a_message_on_the_hub_is_not_built_again_when_a_commit_comes_before_it(
    make_member: MakeMember, clock: ManualClock
) -> None:
    alice, bob, group = _pair(make_member)
    bob.sync()
    alice.run("update_key", group=group.hex())
    alice.publish()  # the commit to epoch 2 is stored first
    _flaky(bob, lose=1)
    bob.run("send", group=group.hex(), text="once")
    bob.publish()  # built for epoch 1, stored after the commit; bob saw an outage
    bob.sync()  # the commit, then bob's own message
    clock.advance(600_000)
    for member in (alice, bob, alice, bob):
        member.settle()
    assert [row.state for row in bob.intents()] == [IntentState.COMMITTED]
    assert alice.texts(group) == bob.texts(group) == ["once"]  # once, not once per build
    assert _parked(alice) == _parked(bob) == []


def _key_updates(member: Member, group: bytes, count: int) -> None:
    for _ in range(count):
        member.run("update_key", group=group.hex())
        member.settle()


def test_a_message_that_reaches_the_hub_too_many_epochs_late_ends_in_error_and_nobody_parks_it(
    make_member: MakeMember,
) -> None:
    alice, bob, group = _pair(make_member)
    bob.sync()
    _key_updates(alice, group, DEFAULT_MAX_PAST_EPOCHS + 1)  # bob reads none of them
    bob.run("send", group=group.hex(), text="too late")
    bob.publish()  # built for epoch 1, stored where the group is at epoch 7
    bob.sync()
    alice.sync()
    [intent] = bob.intents()
    assert intent.state is IntentState.ERROR and "late" in intent.error
    assert alice.texts(group) == bob.texts(group) == []
    assert _parked(alice) == _parked(bob) == []


def test_a_built_message_too_old_for_anyone_to_read_is_built_again_for_the_new_epoch(
    make_member: MakeMember, clock: ManualClock
) -> None:
    alice, bob, group = _pair(make_member)
    bob.sync()
    _flaky(bob, drop=1)
    bob.run("send", group=group.hex(), text="kept")
    bob.publish()  # built for epoch 1; the send never reached the hub
    _key_updates(alice, group, DEFAULT_MAX_PAST_EPOCHS + 1)
    bob.sync()
    [intent] = bob.intents()
    assert intent.state is IntentState.TO_SEND and intent.rebuilds == 1 and not intent.prepared
    clock.advance(600_000)
    bob.settle()
    alice.sync()
    assert [row.state for row in bob.intents()] == [IntentState.COMMITTED]
    assert alice.texts(group) == bob.texts(group) == ["kept"]
