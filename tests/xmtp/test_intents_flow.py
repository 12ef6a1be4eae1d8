"""Intents from TO_SEND to COMMITTED through the loopback service: messages, adds, removes, key updates, welcomes."""

from __future__ import annotations

from protocols.xmtp import facts
from protocols.xmtp.kinds import IntentState, Membership
from tests.xmtp.conftest import MakeMember


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
