"""Intents from TO_SEND to COMMITTED through the loopback service: messages, adds, removes, key updates, welcomes."""

from __future__ import annotations

from core.clock import ManualClock
from protocols.xmtp import facts, queries
from protocols.xmtp.kinds import IntentState, Membership
from protocols.xmtp.transport.loopback import LoopbackHub
from tests.xmtp.conftest import MakeMember, Member


def test_two_members_talk_after_a_welcome_is_accepted(make_member: MakeMember) -> None:
    alice, bob = make_member(), make_member()
    group = alice.create_group("lunch")
    alice.run("add_members", group=group.hex(), addresses=[bob.address])
    alice.settle()  # the commit is published and read back: COMMITTED, so its welcome becomes ready
    assert alice.intent_states() == [IntentState.COMMITTED]
    alice.publish()  # the welcome goes out only now
    bob.sync()
    [pending] = bob.events(facts.WELCOME_RECEIVED)
    assert pending["membership"] == Membership.PENDING
    bob.run("accept", group=group.hex())
    alice.run("send", group=group.hex(), text="hello bob")
    alice.settle()
    bob.sync()
    assert bob.texts(group) == ["hello bob"]
    bob.run("send", group=group.hex(), text="hi alice")
    bob.settle()
    alice.sync()
    assert alice.texts(group) == bob.texts(group) == ["hello bob", "hi alice"]
    assert alice.epoch(group) == bob.epoch(group) == 1
    assert alice.roster(group) == bob.roster(group) == sorted([alice.address, bob.address])


def _join(inviter: Member, invitee: Member, group: bytes) -> None:
    """``inviter`` adds ``invitee``; the welcome goes out once the commit is confirmed; ``invitee`` accepts."""
    inviter.run("add_members", group=group.hex(), addresses=[invitee.address])
    inviter.settle()
    inviter.publish()
    invitee.sync()
    invitee.run("accept", group=group.hex())
    invitee.sync()


def test_two_admins_adding_at_once_both_end_committed_on_one_epoch(make_member: MakeMember) -> None:
    alice, bob, carol, dave = (make_member() for _ in range(4))
    group = alice.create_group()
    _join(alice, bob, group)
    # Both build a commit for epoch 1 before either reads the other's: the server keeps the first.
    alice.run("add_members", group=group.hex(), addresses=[carol.address])
    bob.run("add_members", group=group.hex(), addresses=[dave.address])
    alice.run("send", group=group.hex(), text="from alice during the race")
    bob.run("send", group=group.hex(), text="from bob during the race")
    alice.publish()
    bob.publish()
    for _ in range(4):
        for member in (alice, bob):
            member.settle()
    assert {row.state for row in alice.intents() + bob.intents()} == {IntentState.COMMITTED}
    [lost] = [row for row in bob.intents() if row.rebuilds]
    assert lost.kind.name == "ADD_MEMBERS"
    for member in (carol, dave):
        member.sync()
        member.run("accept", group=group.hex())
        member.sync()
    everyone = (alice, bob, carol, dave)
    assert {m.epoch(group) for m in everyone} == {3}
    assert {tuple(m.roster(group)) for m in everyone} == {tuple(sorted(m.address for m in everyone))}
    race = ["from alice during the race", "from bob during the race"]
    assert sorted(alice.texts(group)) == sorted(bob.texts(group)) == race


def test_a_removed_member_stops_reading_and_the_rest_go_on(make_member: MakeMember) -> None:
    alice, bob, carol = make_member(), make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    _join(alice, carol, group)
    bob.sync()
    alice.run("remove_members", group=group.hex(), addresses=[carol.address])
    alice.settle()
    bob.sync()
    carol.sync()
    with carol.app.db.read():
        left = queries.group(carol.app.db, group)
    assert left is not None and left.active is False
    alice.run("send", group=group.hex(), text="after carol left")
    alice.settle()
    bob.sync()
    report = carol.sync()
    assert report.processed == 0  # an inactive group is no longer synced
    assert bob.texts(group) == ["after carol left"] and carol.texts(group) == []
    assert alice.roster(group) == bob.roster(group) == sorted([alice.address, bob.address])
    bob.run("update_key", group=group.hex())
    bob.settle()
    alice.sync()
    assert alice.epoch(group) == bob.epoch(group) == 4


def test_a_publish_that_keeps_failing_ends_in_error_with_its_reason(
    make_member: MakeMember, hub: LoopbackHub, clock: ManualClock
) -> None:
    alice = make_member()
    group = alice.create_group()
    alice.run("update_key", group=group.hex())
    for _ in range(5):
        hub.fail_next(10)
        alice.publish()
        clock.advance(60_000)
    [intent] = alice.intents()
    assert intent.state is IntentState.TO_SEND and intent.attempts == 5  # minutes of outage end nothing
    clock.advance(alice.app.db.settings.outgoing_retry_horizon_ms)  # the outage outlasts the retry horizon
    hub.fail_next(10)
    alice.publish()
    [intent] = alice.intents()
    assert intent.state is IntentState.ERROR and "simulated outage" in intent.error and intent.attempts == 6
    hub.fail_next(0)
    assert alice.publish() == 0  # an intent in ERROR is never tried again


def test_a_message_built_by_send_is_tried_through_an_outage_until_the_server_answers(
    make_member: MakeMember, hub: LoopbackHub, clock: ManualClock
) -> None:
    alice = make_member()
    group = alice.create_group()
    alice.run("send", group=group.hex(), text="through the storm")
    [intent] = alice.intents()
    assert intent.state is IntentState.TO_SEND and intent.prepared  # built in send's own transaction
    for _ in range(7):
        hub.fail_next(10)
        alice.publish()
        clock.advance(600_000)
    [intent] = alice.intents()
    assert intent.state is IntentState.TO_SEND and intent.attempts == 7 and "simulated outage" in intent.error
    hub.fail_next(0)
    alice.settle()
    assert alice.intents()[0].state is IntentState.COMMITTED and alice.texts(group) == ["through the storm"]


def test_a_transient_failure_is_retried_after_backoff(
    make_member: MakeMember, hub: LoopbackHub, clock: ManualClock
) -> None:
    alice, bob = make_member(), make_member()
    group = alice.create_group()
    _join(alice, bob, group)
    alice.run("send", group=group.hex(), text="second try")
    hub.fail_next(1)
    alice.publish()
    [_, intent] = alice.intents()
    assert intent.state is IntentState.TO_SEND and intent.attempts == 1
    alice.publish()  # not due yet: nothing is sent
    assert alice.intents()[1].state is IntentState.TO_SEND
    clock.advance(1_000)
    alice.settle()
    bob.sync()
    assert alice.intents()[1].state is IntentState.COMMITTED
    assert bob.texts(group) == ["second try"]
