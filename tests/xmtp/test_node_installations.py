"""Installations a member's inbox gains after it joined, followed as libxmtp follows them
(:mod:`protocols.xmtp.node_profile.installations`), with Tessera members alone on a real ``tessera serve
--xmtp-port`` node: the tick's check every 30 minutes commits the new installation in, which is welcomed and
reads on; a check not due asks nothing; a node that is down does not hold a send up."""

from __future__ import annotations

from typing import Any

from core.clock import ManualClock
from protocols import xmtp
from protocols.xmtp.kinds import Membership
from protocols.xmtp.node_profile import installations
from tests.xmtp.node_member import NodeMember
from tests.xmtp_node.node_process import NodeProcess


def test_the_ticks_check_commits_in_an_installation_the_inbox_gained_and_it_reads_on(
    node: NodeProcess, make_app: Any, clock: ManualClock
) -> None:
    alice = NodeMember.create(make_app([xmtp], ["xmtp"]), node.url)
    bob = NodeMember.create(make_app([xmtp], ["xmtp"]), node.url)
    group = alice.create_group("followed")
    alice.add_members(group, bob.address)
    alice.tick()
    alice.tick()  # the welcome leaves once the commit is read back; the group's installations checked now
    bob.tick()
    bob.accept(group)
    bob.tick()
    bobs_phone = bob.another_installation(make_app([xmtp], ["xmtp"]))

    alice.tick()  # the last check is not 30 minutes old: nothing asked, nothing recorded
    assert alice.intent_ids("UPDATE_INSTALLATIONS") == []
    clock.advance(installations.AFTER_SYNC_INTERVAL_NS // 1_000_000)
    alice.tick()  # checked: bob's inbox has an installation the group does not hold; the intent recorded
    alice.tick()  # built, sent, read back: COMMITTED; then its welcome
    alice.tick()
    assert [state for state, _ in alice.intents_of("UPDATE_INSTALLATIONS")] == ["COMMITTED"]
    assert alice.open_intents() == []

    bobs_phone.tick()
    assert bobs_phone.groups() == {group: Membership.PENDING}
    bobs_phone.accept(group)
    alice.send(group, "to both of bob's installations")
    alice.tick()
    for installation in (bob, bobs_phone):
        installation.tick()
        assert installation.texts(group)[-1] == (alice.inbox_id, "to both of bob's installations")
    assert alice.members(group) == bob.members(group) == bobs_phone.members(group)


def test_a_send_is_recorded_when_the_node_cannot_be_asked_about_installations(
    node: NodeProcess, make_app: Any, clock: ManualClock
) -> None:
    alice = NodeMember.create(make_app([xmtp], ["xmtp"]), node.url)
    group = alice.create_group("alone")
    clock.advance(installations.BEFORE_SEND_INTERVAL_NS // 1_000_000)
    node.stop()
    try:
        alice.send(group, "queued while the node is down")
    finally:
        node.start()
    assert alice.intent_ids("UPDATE_INSTALLATIONS") == [] and len(alice.intent_ids("SEND_MESSAGE")) == 1
