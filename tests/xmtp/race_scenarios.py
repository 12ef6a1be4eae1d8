"""Commit races between Tessera XMTP members (node profile) and real libxmtp v1.10.0 clients on one node.

Each scenario takes a ``Peers`` (tests/xmtp/interop_scenarios.py) and raises
AssertionError when the members disagree.  A race is made the way it happens:
a Tessera member builds its commit for the epoch it holds and publishes it
while a libxmtp member's commit for the same epoch reaches the node first (or
second); the node orders them, the loser's commit is rebuilt for the new
epoch (ours by seed 002's conflict path, libxmtp's by its own retry), and
afterwards every member has the same epoch, members, name and description,
and every text sent during the race once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from protocols.libraries import mls
from protocols.xmtp.transport.node import NodeService
from tests.xmtp.interop_scenarios import Peers
from tests.xmtp.node_member import NodeMember
from tests.xmtp_node.libxmtp_peer import LibxmtpClient

#: Ticks a Tessera member gets to settle its intents after a round (a lost commit takes three: the winner
#: read, its rebuild published, the rebuild read back; the welcomes of an add go out one tick later).
SETTLE_TICKS = 6


def tessera_group(peers: Peers, *others: str) -> tuple[NodeMember, list[LibxmtpClient], str]:
    """A Tessera member creates an all-members group and adds a libxmtp member per name in ``others``, which
    join by its welcome."""
    ours = peers.tessera("tessera")
    clients = [peers.libxmtp(name).create(peers.url) for name in others]
    group = ours.create_group("races", "", "all-members")
    ours.add_members(group, *(client.address for client in clients))
    settle(ours)
    for client in clients:
        client.call("sync_welcomes")
        client.send_text(group, "joined")  # a welcomed libxmtp member commits a key update before its first send
    settle(ours)
    for client in clients:
        client.call("sync_group", group_id=group)
    return ours, clients, group


def settle(*members: NodeMember) -> None:
    """Tick each Tessera member until none has an intent open (its rebuilds published and read back)."""
    for _ in range(SETTLE_TICKS):
        for member in members:
            member.tick()
        if all(member.open_intents() == [] for member in members):
            break
    for member in members:
        member.tick()  # what the last tick of the others published, and welcomes whose commit is confirmed
    assert all(member.open_intents() == [] for member in members), [m.open_intents() for m in members]


def view_of_tessera(member: NodeMember, group: str) -> dict[str, object]:
    metadata = member.metadata(group)
    return {
        "epoch": member.epoch(group),
        "members": member.members(group),
        "name": metadata["name"] or "",
        "description": metadata["description"] or "",
    }


def view_of_libxmtp(client: LibxmtpClient, group: str) -> dict[str, object]:
    client.call("sync_group", group_id=group)
    state = client.call("group_state", group_id=group)
    return {
        "epoch": client.call("epoch", group_id=group),
        "members": client.call("members", group_id=group),
        "name": state["name"] or "",
        "description": state["description"] or "",
    }


def all_agree(
    tessera: Sequence[NodeMember], libxmtp: Sequence[LibxmtpClient], group: str, step: str
) -> dict[str, object]:
    """Every member's epoch, members, name and description, equal on all; the common view."""
    views = [view_of_tessera(m, group) for m in tessera] + [view_of_libxmtp(c, group) for c in libxmtp]
    assert all(view == views[0] for view in views), f"{step}: {views}"
    return views[0]


def same_history(tessera: Sequence[NodeMember], libxmtp: Sequence[LibxmtpClient], group: str, sent: list[str]) -> None:
    """Every member shows the same texts in the same order, each text of ``sent`` exactly once."""
    histories = [m.texts(group) for m in tessera] + [c.texts(group) for c in libxmtp]
    assert all(history == histories[0] for history in histories), histories
    shown = [text for _, text in histories[0]]
    assert sorted(text for text in shown if text in sent) == sorted(sent), (shown, sent)


def no_noise(url: str, group: str, *members: NodeMember, lost: bool = True) -> None:
    """No intent ended in ERROR, nothing was rejected, and nothing read as unreadable: a commit that lost its
    epoch at the node, ours or another member's, is passed by (a race is not damage).  ``lost``: the node
    does hold such a loser (checked, so the test cannot pass for want of a race)."""
    node = NodeService(url)
    try:
        stored = node.group_messages_after(bytes.fromhex(group), 0, 10_000).messages
    finally:
        node.close()
    headers = [mls.peek(message.data) for message in stored]
    commits = [header.epoch for header in headers if header.content_type == "commit"]
    assert not lost or len(commits) > len(set(commits)), f"no epoch had two commits on the node: {commits}"
    for member in members:
        assert member.events("message_unreadable") == [], member.events("message_unreadable")
        assert member.events("commit_rejected") == [], member.events("commit_rejected")
        assert member.events("intent_failed") == [], member.events("intent_failed")


def add_races_libxmtp_add(peers: Peers) -> None:
    """The Tessera member adds carol while alice (libxmtp) adds dave in the same epoch, alice's first on the
    node; texts are sent by both sides during the race.  Ours loses: it goes back to TO_SEND, is rebuilt for
    alice's epoch and COMMITTED; all end with both added, at the same epoch, each text once everywhere."""
    ours, (alice, bob), group = tessera_group(peers, "alice", "bob")
    carol, dave = (peers.libxmtp(name).create(peers.url) for name in ("carol", "dave"))
    epoch = ours.epoch(group)
    ours.add_members(group, carol.address)
    ours.send(group, "tessera during the add race")  # waits for the commit before it: sent in its epoch
    bob.send_text(group, "bob before the adds")
    alice.call("add_members", group_id=group, inbox_ids=[dave.inbox_id])  # on the node first
    ours.publish()  # built for ``epoch``, the one alice's commit took
    alice.send_text(group, "alice during the add race")
    settle(ours)
    [intent] = ours.intent_ids("ADD_MEMBERS")[1:]  # the first added alice and bob
    assert [e["intent"] for e in ours.events("intent_requeued")] == [intent]  # rebuilt once
    assert intent in [e["intent"] for e in ours.events("intent_committed")]
    for newcomer in (carol, dave):
        newcomer.call("sync_welcomes")
    view = all_agree([ours], [alice, bob, carol, dave], group, "after the add race")
    assert view["epoch"] == epoch + 2
    assert view["members"] == sorted(m.inbox_id for m in (ours, alice, bob, carol, dave))
    sent = ["tessera during the add race", "bob before the adds", "alice during the add race"]
    same_history([ours], [alice, bob], group, sent)
    after_the_race([ours], [alice, bob, carol, dave], group)
    for newcomer in (carol, dave):  # joined during the race: what each shows, it shows once
        shown = newcomer.texts(group)
        assert len(shown) == len(set(shown)), shown
    no_noise(peers.url, group, ours)


def remove_races_libxmtp_rename(peers: Peers) -> None:
    """The Tessera member (super admin) removes carol and publishes first; alice (libxmtp) renames the group
    in the same epoch, built before she read ours.  The node orders them: ours COMMITTED at once, alice's
    commit rebuilt by libxmtp; carol reads nothing after her removal; all agree on the epoch, members and
    name, and every text of the race once."""
    ours, (alice, bob, carol), group = tessera_group(peers, "alice", "bob", "carol")
    epoch = ours.epoch(group)
    ours.remove_members(group, carol.address)
    ours.publish()  # first in its epoch
    bob.send_text(group, "bob during the remove race")
    alice.call("set_group_name", group_id=group, name="renamed in the race")
    ours.send(group, "tessera during the remove race")
    settle(ours)
    assert ours.events("intent_requeued") == []  # ours won its epoch
    view = all_agree([ours], [alice, bob], group, "after the remove race")
    assert view["epoch"] == epoch + 2 and view["name"] == "renamed in the race"
    assert view["members"] == sorted(m.inbox_id for m in (ours, alice, bob))
    same_history([ours], [alice, bob], group, ["bob during the remove race", "tessera during the remove race"])
    carol.call("sync_group", group_id=group)
    assert not carol.call("is_active", group_id=group)
    after_the_race([ours], [alice, bob], group)
    assert "tessera after the race" not in [text for _, text in carol.texts(group)]
    no_noise(peers.url, group, ours, lost=False)


def after_the_race(tessera: Sequence[NodeMember], libxmtp: Sequence[LibxmtpClient], group: str) -> None:
    """A text from each side after the race is read by every member (they share the epoch's keys)."""
    tessera[0].send(group, "tessera after the race")
    settle(*tessera)
    libxmtp[0].call("sync_group", group_id=group)
    libxmtp[0].send_text(group, "libxmtp after the race")
    settle(*tessera)
    for member in tessera:
        assert [text for _, text in member.texts(group)][-2:] == ["tessera after the race", "libxmtp after the race"]
    for client in libxmtp:
        client.call("sync_group", group_id=group)
        assert [text for _, text in client.texts(group)][-2:] == ["tessera after the race", "libxmtp after the race"]


def four_commit_in_a_loop(peers: Peers, rounds: int = 5, on_round: Callable[[int], None] | None = None) -> None:
    """Two Tessera members and two libxmtp members in one group; every round each of the four commits (the
    Tessera creator adds or removes eve, a fifth libxmtp member, the other Tessera member updates its key,
    alice renames, bob sets the description), then all sync; after every round the four agree on epoch,
    members, name and description, each Tessera commit COMMITTED (rebuilt when it lost), none in ERROR."""
    first = peers.tessera("tessera")
    second = peers.tessera("tessera2")
    alice, bob, eve = (peers.libxmtp(name).create(peers.url) for name in ("alice", "bob", "eve"))
    group = first.create_group("loop", "", "all-members")
    first.add_members(group, second.address, alice.address, bob.address)
    settle(first)
    second.tick()
    second.accept(group)
    for client in (alice, bob):
        client.call("sync_welcomes")
    settle(first, second)
    tessera, libxmtp = [first, second], [alice, bob]
    all_agree(tessera, libxmtp, group, "before the loop")
    for number in range(rounds):
        if eve.inbox_id in first.members(group):
            first.remove_members(group, eve.address)
        else:
            first.add_members(group, eve.address)
        second.update_key(group)
        first.publish()  # both built for the epoch they hold: the second of them loses it
        second.publish()
        alice.call("set_group_name", group_id=group, name=f"round {number}")
        bob.call("update_metadata", group_id=group, field="description", value=f"described in round {number}")
        settle(first, second)
        view = all_agree(tessera, libxmtp, group, f"round {number}")
        assert (view["name"], view["description"]) == (f"round {number}", f"described in round {number}")
        assert (eve.inbox_id in view["members"]) == (number % 2 == 0), view  # type: ignore[operator]
        if on_round is not None:
            on_round(number)
    # The second's commit was built for the epoch the first's took, every round: a real race, rebuilt each time.
    assert len(second.events("intent_requeued")) >= rounds
    for member in tessera:
        made = len(member.events("intent_created"))
        assert len(member.events("intent_committed")) == made, member.events("intent_failed")
    no_noise(peers.url, group, *tessera)


#: The race scenarios as rows of the interop matrix (``python -m tests.xmtp.interop``).
SCENARIOS: dict[str, Callable[[Peers], None]] = {
    "an add of Tessera's loses to a libxmtp add": add_races_libxmtp_add,
    "a remove of Tessera's races a libxmtp rename": remove_races_libxmtp_rename,
    "two Tessera and two libxmtp members, 5 rounds": four_commit_in_a_loop,
}
