"""Leaving a group, both ways, between a Tessera XMTP member (node profile) and real libxmtp v1.10.0 clients.

libxmtp's leave is a request (``xmtp.org/leave_request:1.0``) that a super admin answers by removing the member:
libxmtp's pending-remove worker every 2 s, Tessera's tick (``leaving.remove_all``).  The tests
(tests/xmtp/test_node_with_libxmtp.py) and the matrix script (``python -m tests.xmtp.interop``) run these.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from protocols.xmtp.errors import LeaveRefused
from tests.xmtp.interop_scenarios import Peers, invited
from tests.xmtp.node_member import NodeMember
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

#: How often libxmtp v1.10.0 removes members that asked to leave (``worker/pending_self_remove.rs``).
PENDING_REMOVE_INTERVAL_S = 2.0


def _refused(ours: NodeMember, group: str, because: str) -> None:
    """``leave`` refused with one line saying ``because``, and nothing recorded."""
    before = ours.intent_ids("SEND_MESSAGE")
    try:
        ours.leave(group)
    except LeaveRefused as refused:
        assert because in str(refused) and "\n" not in str(refused), refused
    else:
        raise AssertionError(f"a leave libxmtp refuses was recorded ({because})")
    assert ours.intent_ids("SEND_MESSAGE") == before and ours.events("leave_requested") == []
    row = ours.group_row(group)
    assert row is not None and row.active and not row.leave_requested


def libxmtp_member_leaves_tessera_group(peers: Peers) -> None:
    """A group Tessera made (its super admin) with alice and bob: Tessera's own leave is refused, as is leaving a
    DM; bob (libxmtp) asks to leave: Tessera's tick records one removal, commits it, and bob reads nothing after;
    alice's view equals Tessera's."""
    ours = peers.tessera("tessera")
    alice = peers.libxmtp("alice").create(peers.url)
    bob = peers.libxmtp("bob").create(peers.url)
    group = ours.create_group("leavers", "", "all-members")
    ours.add_members(group, alice.address, bob.address)
    ours.tick()
    ours.tick()  # the welcomes go out once the add is read back
    _refused(ours, group, "a super admin cannot leave")
    dm = ours.dm(alice.address)
    ours.tick()
    _refused(ours, dm, "a DM cannot be left")
    for member in (alice, bob):
        member.call("sync_welcomes")
        member.call("sync_group", group_id=group)
    bob.call("leave_group", group_id=group)
    ours.tick()  # reads bob's request; the tick's worker records the removal
    assert ours.intents_of("REMOVE_MEMBERS") == [("TO_SEND", "")], ours.intents_of("REMOVE_MEMBERS")
    ours.tick()  # published, read back
    ours.tick()  # nothing left to remove: no second intent
    assert ours.intents_of("REMOVE_MEMBERS") == [("COMMITTED", "")], ours.intents_of("REMOVE_MEMBERS")
    assert ours.members(group) == sorted([ours.inbox_id, alice.inbox_id])
    ours.send(group, "bob has left")
    ours.tick()
    for member in (alice, bob):
        member.call("sync_group", group_id=group)
    assert alice.call("members", group_id=group) == ours.members(group)
    assert not bob.call("is_active", group_id=group)
    assert (ours.inbox_id, "bob has left") in alice.texts(group)
    assert (ours.inbox_id, "bob has left") not in bob.texts(group)


def _removed_by_worker(admin: LibxmtpClient, group: str, inbox_ids: set[str]) -> None:
    """Wait for ``admin``'s pending-remove worker to remove ``inbox_ids``."""
    deadline = time.monotonic() + 10 * PENDING_REMOVE_INTERVAL_S
    while True:
        admin.call("sync_group", group_id=group)
        if not inbox_ids & set(admin.call("members", group_id=group)):
            return
        assert time.monotonic() < deadline, f"{admin} did not remove {inbox_ids}"
        time.sleep(PENDING_REMOVE_INTERVAL_S / 4)


def tessera_leaves_libxmtp_group(peers: Peers) -> None:
    """alice (libxmtp, super admin) made the group; member0 (libxmtp) and Tessera ask to leave.  Tessera, no
    admin, records no removal of member0; its leave request is COMMITTED and the group shows that it asked;
    alice's worker removes both; Tessera's group turns inactive, saying it was removed after its request,
    and reads nothing after."""
    alice, (member0,), ours, group = invited(peers)
    member0.call("leave_group", group_id=group)
    ours.leave(group)
    ours.tick()  # our request published and read back; member0's read
    assert ours.intents_of("SEND_MESSAGE") == [("COMMITTED", "")], ours.intents_of("SEND_MESSAGE")
    assert ours.intents_of("REMOVE_MEMBERS") == []  # not a super admin: alice's worker removes member0
    row = ours.group_row(group)
    assert row is not None and row.active and row.leave_requested
    shown = [(m.content_type, m.text) for m in ours.messages(group)]
    assert shown == [("xmtp.org/leave_request:1.0", "[asks to leave the group]")] * 2, shown
    _removed_by_worker(alice, group, {ours.inbox_id, member0.inbox_id})
    alice.send_text(group, "after you left")
    ours.tick()
    row = ours.group_row(group)
    assert row is not None and not row.active
    assert row.removed_reason == f"removed by {alice.inbox_id} after our leave request", row.removed_reason
    assert ours.open_intents() == []
    assert all(text != "after you left" for _, text in ours.texts(group))


SCENARIOS: dict[str, Callable[[Peers], None]] = {
    "a libxmtp member leaves Tessera's group": libxmtp_member_leaves_tessera_group,
    "Tessera leaves a libxmtp group": tessera_leaves_libxmtp_group,
}
