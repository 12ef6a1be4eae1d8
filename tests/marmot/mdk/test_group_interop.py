"""Tessera and MDK 0.8.0 members sharing Marmot groups, at the engine and wire level.

Tessera members are :class:`~tests.marmot.mdk.tessera_member.TesseraMember`
(the engine, ``outer`` and ``group_data`` driven directly); MDK members are
the real library in process.  No relay: every event is handed to each
receiver as the JSON a relay would deliver, the sender included (its echo).

"Converged" means, for everyone still in the group: the same epoch, the same
member set, byte-identical ratchet trees (MDK's ``get_ratchet_tree_info``
serializes it exactly as we do), equal exporters among Tessera members, and
a message from each side read by every other member (MDK exposes no
exporter, so reading each other's messages is how its keys are compared).

MDK behaviours these tests pin (each test's docstring says which):

* MDK applies its own commit safely only by processing the commit's echo:
  that path snapshots the epoch, so a better competing commit (earlier
  ``created_at``, then smaller event id) rolls it back.  ``merge_pending_commit``
  takes no snapshot: a better commit arriving later is UNPROCESSABLE and
  the MDK member stays on a fork.
* A losing commit, or a commit for an epoch already left, is UNPROCESSABLE.
* A non-admin's commit that is not a pure self-update raises
  ``not processing commit from non-admin``; MDK refuses to *create* one
  (``only admins can perform this operation``).
* A rumor whose pubkey is not the MLS sender is UNPROCESSABLE (no error),
  and never stored.
* A commit after which no admin is a member, or one that changes a leaf's
  identity, is UNPROCESSABLE; we refuse both too (NoAdminLeft,
  IdentityChanged).
* ``leave_group`` sends a Remove proposal naming the sender when the group
  does not require SelfRemove (the groups we create require only 0xF2EE).
  An MDK *admin* receiving it "auto-commits" with a filter that keeps only
  SelfRemove proposals, so the commit is an empty self-update: the leaver
  stays, the proposal is gone.  A non-admin MDK member stores it
  (PENDING_PROPOSAL) for an admin.  The groups MDK creates require
  SelfRemove (our KeyPackages list it too); leaving those is
  test_self_remove_interop.py's subject.
* Kind-5 deletions are stored as messages; MDK deletes nothing.
* The legacy NIP-44 envelope is refused since MDK's migration deadline
  (2026-05-15 00:00 UTC, read from the wall clock).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.group import commit as commit_module
from protocols.libraries.mls.messages import BasicCredential
from protocols.libraries.mls.tree.treekem import create_update_path
from protocols.marmot.wire import group_data, nip44, nostr, outer, rumors
from protocols.marmot.wire.gift_wrap import unwrap, wrap
from tests.marmot.mdk.mdk_peer import DEFAULT_RELAYS, MdkMember
from tests.marmot.mdk.tessera_member import ForgedRumor, Outgoing, Received, TesseraMember, UnreadableEvent, rank

pytestmark = pytest.mark.peer

MakeMdk = Callable[[str], MdkMember]
Member = TesseraMember | MdkMember
REACTION_KIND = 7
MDK_LEGACY_DEADLINE = 1_778_803_200  # 2026-05-15 00:00 UTC: MDK 0.8.0 opens NIP-44 envelopes until then
NOT_ADMIN = "only admins can perform this operation"
NON_ADMIN_COMMIT = "not processing commit from non-admin"


# --- building groups -----------------------------------------------------------------------------


def tessera(name: str) -> TesseraMember:
    """A new Tessera member naming the same relays as the MDK members."""
    return TesseraMember(name, relays=DEFAULT_RELAYS)


def mdk_group(creator: MdkMember, invitees: list[Member], admins: tuple[str, ...] | None = None) -> str:
    """MDK ``creator`` makes a group inviting each member's fresh KeyPackage; all join. Returns the MLS group id."""
    invitations = [(member, member.key_package_event()) for member in invitees]
    group, welcomes = creator.create_group([event for _, event in invitations], admins=admins)
    by_key_package = {event["id"]: member for member, event in invitations}
    for rumor in welcomes:
        (e_tag,) = [tag for tag in rumor["tags"] if tag[0] == "e"]
        by_key_package[e_tag[1]].join(rumor)
    return group.mls_group_id


def tessera_group(
    creator: TesseraMember,
    invitees: list[Member],
    admins: tuple[str, ...] | None = None,
    *,
    require_self_remove: bool = True,
) -> str:
    """``creator`` makes a group and adds everyone in one commit; each joins from its gift-wrapped welcome."""
    creator.create_group(name="ours", admins=admins, require_self_remove=require_self_remove)
    added = creator.commit(add=tuple(member.key_package_event() for member in invitees))
    assert creator.merge().outcome == "commit"
    for member in invitees:
        gift = wrap(added.welcome_rumors[member.pubkey], creator.secret_key, member.pubkey, now=int(time.time()))
        opened = unwrap(gift, member.secret_key)
        if isinstance(member, MdkMember):
            member.join(opened.rumor, wrapper_event_id=opened.wrapper_id)
        else:
            member.join(opened.rumor)
    return creator.group.group_id.hex()


# --- moving events -------------------------------------------------------------------------------


def published(member: MdkMember, result: Any) -> dict:
    """The kind-445 event of an MDK commit, applied by MDK the safe way: by processing its echo."""
    event = json.loads(result.evolution_event_json)
    assert member.receive(event).is_COMMIT()
    return event


def mdk_says(member: MdkMember, gid: str, content: str, *, kind: int = 9, tags: list | None = None) -> dict:
    """A rumor of any kind, with inner tags, as the kind-445 event MDK makes of it."""
    return json.loads(member.mdk.create_message(gid, member.pubkey, content, kind, tags, None))


def deliver(event: dict, *receivers: Member) -> list[Any]:
    """Each receiver processes ``event``: a :class:`Received` from Tessera members, MDK's result from MDK's."""
    return [receiver.receive(event) for receiver in receivers]


def applied(received: Received) -> mls.CommitApplied:
    """The commit a Tessera member applied on receiving an event."""
    assert received.commit is not None, received
    return received.commit


def mdk_message(result: Any) -> dict:
    """The rumor in MDK's result for an application message."""
    assert result.is_APPLICATION_MESSAGE(), result
    return json.loads(result.message.event_json)


def ratchet_tree(member: TesseraMember) -> str:
    """Our ratchet tree, TLS-encoded as hex: the form of MDK's ``get_ratchet_tree_info(..).serialized_tree``."""
    return encode(member.group.tree.to_message()).hex()


def assert_converged(gid: str, ours: list[TesseraMember], theirs: list[MdkMember]) -> None:
    """Everyone at the same epoch with the same members and tree, and able to read each other (see module doc)."""
    reference = ours[0]
    for member in ours:
        assert (member.epoch, member.members) == (reference.epoch, reference.members)
        assert (ratchet_tree(member), member.exporter()) == (ratchet_tree(reference), reference.exporter())
    for peer in theirs:
        assert peer.mdk.get_group(gid).epoch == reference.epoch
        assert set(peer.mdk.get_members(gid)) == reference.members
        assert peer.mdk.get_ratchet_tree_info(gid).serialized_tree == ratchet_tree(reference)
    if theirs:
        probe = theirs[0].send(gid, f"probe from {theirs[0].name} at epoch {reference.epoch}")
        assert all(r.outcome == "message" for r in deliver(probe, *ours))
        assert all(r.is_APPLICATION_MESSAGE() for r in deliver(probe, *theirs[1:]))
    probe = reference.send(f"probe from {reference.name} at epoch {reference.epoch}")
    assert all(r.outcome == "message" for r in deliver(probe, *ours[1:]))
    assert all(r.is_APPLICATION_MESSAGE() for r in deliver(probe, *theirs))


def admins_update(mdk: ModuleType, admins: Iterable[str]) -> Any:
    """MDK's ``GroupDataUpdate`` that replaces the admin set and leaves everything else as it is."""
    return mdk.GroupDataUpdate(
        name=None,
        description=None,
        image_hash=None,
        image_key=None,
        image_nonce=None,
        relays=None,
        admins=list(admins),
    )


# --- 1. MDK's group, a Tessera member ------------------------------------------------------------


def test_mdk_group_with_a_tessera_member_chats_reacts_and_deletes_both_ways(mdk_member: MakeMdk) -> None:
    """Kinds 9, 7 (e/p/k tags, as White Noise sends) and 5 (e tag) pass both ways, tags intact.

    MDK stores a deletion as one more message and keeps its target: deleting is left to the client.
    """
    alice, bob, tess = mdk_member("alice"), mdk_member("bob"), tessera("tess")
    gid = mdk_group(alice, [tess, bob])
    assert_converged(gid, [tess], [alice, bob])

    hello = alice.send(gid, "hello from MDK")
    (received,) = deliver(hello, tess)
    assert received.rumor["content"] == "hello from MDK" and received.rumor["pubkey"] == alice.pubkey
    ours = tess.send("hello from Tessera")
    for result in deliver(ours, alice, bob):
        assert mdk_message(result)["content"] == "hello from Tessera"
        assert result.message.sender_pubkey == tess.pubkey and result.message.kind == rumors.CHAT_KIND
    our_id, their_id = tess.history[-1].rumor_id, received.rumor["id"]

    reaction_tags = [["e", our_id], ["p", tess.pubkey], ["k", "9"]]
    (their_reaction,) = deliver(mdk_says(alice, gid, "+", kind=REACTION_KIND, tags=reaction_tags), tess)
    assert their_reaction.rumor["kind"] == REACTION_KIND and their_reaction.rumor["tags"] == reaction_tags
    our_reaction_tags = [["e", their_id], ["p", alice.pubkey], ["k", "9"]]
    our_reaction = tess.send("🤙", kind=REACTION_KIND, tags=our_reaction_tags)
    for result in deliver(our_reaction, alice, bob):
        assert mdk_message(result)["tags"] == our_reaction_tags and result.message.kind == REACTION_KIND

    (their_deletion,) = deliver(mdk_says(alice, gid, "", kind=rumors.DELETION_KIND, tags=[["e", their_id]]), tess)
    assert rumors.deletion_targets(their_deletion.rumor) == [their_id]
    our_deletion = tess.send("", kind=rumors.DELETION_KIND, tags=[["e", our_id], ["k", "9"]])
    for result in deliver(our_deletion, alice, bob):
        assert rumors.deletion_targets(mdk_message(result)) == [our_id]
    assert bob.mdk.get_message(gid, our_id).state == "processed", "MDK keeps the deleted rumor"
    assert_converged(gid, [tess], [alice, bob])


# --- 2. Tessera's group, two MDK members ---------------------------------------------------------


def test_tessera_group_with_two_mdk_members_everyone_reads_everyone(mdk_member: MakeMdk) -> None:
    """MDK joins from our gift-wrapped welcome rumors and sees our group data; messages pass all ways."""
    alice, bob, tess = mdk_member("alice"), mdk_member("bob"), tessera("tess")
    gid = tessera_group(tess, [alice, bob])
    for member in (alice, bob):
        group = member.mdk.get_group(gid)
        assert group.name == "ours" and group.admin_pubkeys == [tess.pubkey]
        assert group.nostr_group_id == tess.nostr_group_id
    assert_converged(gid, [tess], [alice, bob])

    for sender, receivers in ((alice, (bob,)), (bob, (alice,))):
        event = sender.send(gid, f"from {sender.name}")
        (ours,) = deliver(event, tess)
        assert ours.rumor["content"] == f"from {sender.name}" and ours.rumor["pubkey"] == sender.pubkey
        assert mdk_message(*deliver(event, *receivers))["content"] == f"from {sender.name}"
    for result in deliver(tess.send("from tess"), alice, bob):
        assert mdk_message(result)["pubkey"] == tess.pubkey


# --- 3. commits from both sides ------------------------------------------------------------------


def test_a_tessera_admin_adds_removes_and_self_updates_with_mdk_members(mdk_member: MakeMdk) -> None:
    """MDK applies each of our commits: an added MDK member joins, a removed one's group turns inactive."""
    alice, bob, carol, tess = mdk_member("alice"), mdk_member("bob"), mdk_member("carol"), tessera("tess")
    gid = tessera_group(tess, [alice, bob])

    added = tess.commit(add=(carol.key_package_event(),))
    assert all(result.is_COMMIT() for result in deliver(added.event, alice, bob))
    tess.merge()
    carol.join(added.welcome_rumors[carol.pubkey])
    assert_converged(gid, [tess], [alice, bob, carol])

    removal = tess.commit(remove=(carol.pubkey,))
    assert all(result.is_COMMIT() for result in deliver(removal.event, alice, bob, carol))
    assert applied(tess.merge()).removed == (carol.pubkey,)
    assert carol.mdk.get_group(gid).state == "inactive"
    assert_converged(gid, [tess], [alice, bob])

    update = tess.commit(self_update=True)
    assert all(result.is_COMMIT() for result in deliver(update.event, alice, bob))
    assert applied(tess.merge()).updated == (tess.pubkey,)
    assert_converged(gid, [tess], [alice, bob])


def test_an_mdk_admin_adds_self_updates_and_removes_a_tessera_member(mdk_member: MakeMdk) -> None:
    """We apply MDK's add (and join from its welcome), self-update and remove; the removed Tessera member knows."""
    alice, bob, tess, newcomer = mdk_member("alice"), mdk_member("bob"), tessera("tess"), tessera("newcomer")
    gid = mdk_group(alice, [tess, bob])

    added = alice.mdk.add_members(gid, [json.dumps(newcomer.key_package_event())])
    event = published(alice, added)
    (ours,) = deliver(event, tess)
    assert (applied(ours).added, applied(ours).committer_credential) == ((newcomer.pubkey,), alice.pubkey)
    assert deliver(event, bob)[0].is_COMMIT()
    (welcome,) = added.welcome_rumors_json
    newcomer.join(json.loads(welcome))
    assert_converged(gid, [tess, newcomer], [alice, bob])

    event = published(alice, alice.mdk.self_update(gid))
    assert [applied(r).updated for r in deliver(event, tess, newcomer)] == [(alice.pubkey,)] * 2
    assert deliver(event, bob)[0].is_COMMIT()
    assert_converged(gid, [tess, newcomer], [alice, bob])

    event = published(alice, alice.mdk.remove_members(gid, [newcomer.pubkey]))
    removed, kept = deliver(event, newcomer, tess)
    assert applied(removed).we_were_removed and applied(kept).removed == (newcomer.pubkey,)
    assert deliver(event, bob)[0].is_COMMIT()
    assert_converged(gid, [tess], [alice, bob])


def test_non_admin_self_updates_are_accepted_across_sides(mdk_member: MakeMdk) -> None:
    """A non-admin may commit a pure self-update: MDK's from us, and ours from MDK."""
    alice, bob, tess = mdk_member("alice"), mdk_member("bob"), tessera("tess")
    gid = mdk_group(alice, [tess, bob])
    assert alice.mdk.get_group(gid).admin_pubkeys == [alice.pubkey]

    event = published(bob, bob.mdk.self_update(gid))
    (ours,) = deliver(event, tess)
    assert (applied(ours).committer_credential, applied(ours).updated) == (bob.pubkey, (bob.pubkey,))
    assert deliver(event, alice)[0].is_COMMIT()
    assert_converged(gid, [tess], [alice, bob])

    update = tess.commit(self_update=True)
    assert all(result.is_COMMIT() for result in deliver(update.event, alice, bob))
    tess.merge()
    assert_converged(gid, [tess], [alice, bob])


# --- 4. forbidden commits ------------------------------------------------------------------------

FORBIDDEN: dict[str, Callable[[TesseraMember, dict[str, Member]], Outgoing]] = {
    "remove a member": lambda rebel, others: rebel.commit(remove=(others["bob"].pubkey,)),
    "add a member": lambda rebel, others: rebel.commit(add=(others["carol"].key_package_event(),)),
    "promote itself": lambda rebel, others: rebel.commit(admins=(others["tess"].pubkey, rebel.pubkey)),
}


@pytest.mark.parametrize("change", sorted(FORBIDDEN))
def test_a_tessera_non_admins_commit_beyond_a_self_update_is_refused_by_both(
    mdk: ModuleType, mdk_member: MakeMdk, change: str
) -> None:
    """Our ``UnauthorizedCommit`` and MDK's ``not processing commit from non-admin``; nothing changes."""
    alice, bob, carol, tess, rebel = (
        mdk_member("alice"),
        mdk_member("bob"),
        mdk_member("carol"),
        tessera("tess"),
        tessera("rebel"),
    )
    gid = tessera_group(tess, [rebel, alice, bob], admins=(tess.pubkey, alice.pubkey))
    forbidden = FORBIDDEN[change](rebel, {"bob": bob, "carol": carol, "tess": tess})

    with pytest.raises(mls.UnauthorizedCommit):
        tess.receive(forbidden.event)
    for member in (alice, bob):
        with pytest.raises(mdk.MdkUniffiError, match=NON_ADMIN_COMMIT):
            member.receive(forbidden.event)
    assert_converged(gid, [tess], [alice, bob])


def test_mdk_refuses_to_create_a_non_admins_commit(mdk: ModuleType, mdk_member: MakeMdk) -> None:
    """So an MDK non-admin's forbidden commit cannot be made with MDK at all; only its self-update can."""
    alice, bob, carol, tess = mdk_member("alice"), mdk_member("bob"), mdk_member("carol"), tessera("tess")
    gid = mdk_group(alice, [tess, bob])
    attempts = (
        lambda: bob.mdk.remove_members(gid, [tess.pubkey]),
        lambda: bob.mdk.add_members(gid, [json.dumps(carol.key_package_event())]),
        lambda: bob.mdk.update_group_data(gid, admins_update(mdk, [alice.pubkey, bob.pubkey])),
    )
    for attempt in attempts:
        with pytest.raises(mdk.MdkUniffiError, match=NOT_ADMIN):
            attempt()
    assert_converged(gid, [tess], [alice, bob])


def test_a_rumor_naming_another_author_is_refused_by_both(mdk_member: MakeMdk) -> None:
    """We raise ``ForgedRumor``; MDK answers UNPROCESSABLE and stores nothing."""
    alice, tess, forger = mdk_member("alice"), tessera("tess"), tessera("forger")
    gid = mdk_group(alice, [tess, forger])
    rumor = rumors.make(alice.pubkey, int(time.time()), "words put in alice's mouth")
    message, forger.state = mls.encrypt_application(forger.group, rumors.encode(rumor))
    event = outer.seal(forger.group, message, forger.nostr_group_id, int(time.time()))

    with pytest.raises(ForgedRumor):
        tess.receive(event)
    assert alice.receive(event).is_UNPROCESSABLE()
    assert alice.mdk.get_messages(gid, None, None, None) == []


# --- what MDK refuses and we still accept: bugs of ours, pinned until fixed ------------------------


def stranger() -> str:
    """The public key of someone in no group."""
    return nostr.public_key_xonly(nostr.generate_secret_key()).hex()


NO_ADMIN_LEFT: dict[str, Callable[[TesseraMember, MdkMember], Outgoing]] = {
    "admins set to a non-member": lambda tess, alice: tess.commit(admins=(stranger(),)),
    "admins emptied": lambda tess, alice: tess.commit(admins=()),
    "the other admin removed and made sole admin": lambda tess, alice: tess.commit(
        remove=(alice.pubkey,), admins=(alice.pubkey,)
    ),
}


@pytest.mark.parametrize("case", sorted(NO_ADMIN_LEFT))
def test_a_commit_leaving_no_admin_among_the_members_is_refused_by_both(mdk_member: MakeMdk, case: str) -> None:
    """MDK 0.8.0 checks every commit's resulting group data: some admin must be a member after it.

    Otherwise UNPROCESSABLE ("Would leave group with no admins"); ours refuse it
    too (``rules.NoAdminLeft``), so the group cannot fork over it.
    """
    alice, tess, tom = mdk_member("alice"), tessera("tess"), tessera("tom")
    tessera_group(tess, [tom, alice], admins=(tess.pubkey, alice.pubkey))
    commit = NO_ADMIN_LEFT[case](tess, alice)

    assert alice.receive(commit.event).is_UNPROCESSABLE()
    with pytest.raises(mls.MlsError):
        tom.receive(commit.event)


def impersonating(credential: str) -> Callable[..., Any]:
    """The engine's ``create_update_path`` for a forger: its new leaf carries ``credential`` instead of its own."""
    honest = create_update_path

    def forged(tree: Any, private: Any, signature_private: bytes, group_context: Any, **options: Any) -> Any:
        own = tree.member(private.leaf)
        template = attrs.evolve(own, credential=BasicCredential(bytes.fromhex(credential)))
        return honest(tree, private, signature_private, group_context, leaf_template=template, **options)

    return forged


def test_a_commit_changing_the_committers_identity_is_refused_by_both(
    mdk_member: MakeMdk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin's self-update whose new leaf names another member's Nostr key (the forger's engine is patched).

    MDK 0.8.0 refuses any change of a leaf's identity (UNPROCESSABLE), and so
    do ours (``rules.IdentityChanged``): otherwise the forger's rumors in
    bob's name would pass the rumor-pubkey = MLS-credential check.
    """
    alice, bob, tess, tom = mdk_member("alice"), mdk_member("bob"), tessera("tess"), tessera("tom")
    tessera_group(tess, [tom, alice, bob])
    monkeypatch.setattr(commit_module, "create_update_path", impersonating(bob.pubkey))
    forgery = tess.commit(self_update=True)
    monkeypatch.undo()

    assert [member.receive(forgery.event).is_UNPROCESSABLE() for member in (alice, bob)] == [True, True]
    with pytest.raises(mls.MlsError):
        tom.receive(forgery.event)


# --- 5. racing commits ---------------------------------------------------------------------------


def race_group(mdk_member: MakeMdk) -> tuple[MdkMember, MdkMember, TesseraMember, TesseraMember, str]:
    """MDK admin alice, Tessera admin tess, and one plain member of each side: bob (MDK) and tom (Tessera)."""
    alice, bob, tess, tom = mdk_member("alice"), mdk_member("bob"), tessera("tess"), tessera("tom")
    gid = mdk_group(alice, [tess, bob, tom], admins=(alice.pubkey, tess.pubkey))
    return alice, bob, tess, tom, gid


@pytest.mark.parametrize("offset", [-1, 0, 1], ids=["ours earlier", "same second", "ours later"])
def test_racing_commits_end_on_the_same_winner_on_both_sides(mdk_member: MakeMdk, offset: int) -> None:
    """MDK admin alice self-updates while Tessera admin tess makes bob an admin, both for the same epoch.

    The winner is the earlier ``created_at``, then the smaller event id
    (MIP-03, seed 001), whatever order each member sees them in.  MDK 0.8.0:
    alice applied hers by processing its echo, which snapshots the epoch, so
    a better commit rolls her back (COMMIT) and a worse one is UNPROCESSABLE;
    bob, after applying alice's, does the same.  We: tess receives alice's
    while hers is pending, then her own echo (rolled back / lost race); tom
    receives them in the other order.
    """
    alice, bob, tess, tom, gid = race_group(mdk_member)
    theirs = published(alice, alice.mdk.self_update(gid))
    promoted = (alice.pubkey, tess.pubkey, bob.pubkey)
    ours = tess.commit(admins=promoted, created_at=theirs["created_at"] + offset).event
    ours_wins = rank(ours) < rank(theirs)

    assert alice.receive(ours).is_COMMIT() is ours_wins
    assert bob.receive(theirs).is_COMMIT()
    late = bob.receive(ours)
    assert late.is_COMMIT() if ours_wins else late.is_UNPROCESSABLE()
    assert tom.receive(ours).outcome == "commit"
    assert tom.receive(theirs).outcome == ("lost_race" if ours_wins else "rolled_back")
    assert tess.receive(theirs).outcome == "commit"
    assert tess.merge().outcome == ("rolled_back" if ours_wins else "lost_race")

    admins = set(promoted) if ours_wins else {alice.pubkey, tess.pubkey}
    assert [set(m.mdk.get_group(gid).admin_pubkeys) for m in (alice, bob)] == [admins, admins]
    assert [group_data.admins(t.group) for t in (tess, tom)] == [admins, admins]
    assert_converged(gid, [tess, tom], [alice, bob])


def test_an_mdk_commit_merged_with_merge_pending_commit_cannot_be_rolled_back(
    mdk: ModuleType, mdk_member: MakeMdk
) -> None:
    """MDK 0.8.0 snapshots an epoch only when it processes a commit event, its own echo included.

    An MDK client that applies its own commit with ``merge_pending_commit``
    (as MDK's own docs suggest, after publishing) has no snapshot to return
    to: the better commit is UNPROCESSABLE and that client stays on a fork
    nobody else is on, reading and read by no one.
    """
    alice, bob, tess, tom, gid = race_group(mdk_member)
    theirs = json.loads(alice.mdk.self_update(gid).evolution_event_json)
    alice.mdk.merge_pending_commit(gid)
    ours = tess.commit(self_update=True, created_at=theirs["created_at"] - 1).event

    assert alice.receive(ours).is_UNPROCESSABLE()
    assert bob.receive(theirs).is_COMMIT() and bob.receive(ours).is_COMMIT()
    assert [r.outcome for r in deliver(theirs, tess, tom)] == ["commit", "commit"]
    assert [r.outcome for r in deliver(ours, tess, tom)] == ["rolled_back", "rolled_back"]
    assert_converged(gid, [tess, tom], [bob])

    forked = alice.send(gid, "anyone there?")
    with pytest.raises(UnreadableEvent):
        tess.receive(forked)
    with pytest.raises(mdk.MdkUniffiError, match="Failed to decrypt"):
        bob.receive(forked)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_the_winner_of_a_race_does_not_depend_on_arrival_order(data: st.DataObject) -> None:
    """Three admins commit for one epoch; a member receiving them in any order ends where the winner leads."""
    committers = [tessera(f"admin{i}") for i in range(3)]
    receiver, witness = tessera("receiver"), tessera("witness")
    founder = committers[0]
    tessera_group(founder, [*committers[1:], receiver, witness], admins=tuple(c.pubkey for c in committers))
    ages = data.draw(st.lists(st.integers(0, 2), min_size=3, max_size=3), label="seconds before now")
    now = int(time.time())
    events = [c.commit(self_update=True, created_at=now - age).event for c, age in zip(committers, ages, strict=True)]
    order = data.draw(st.permutations(events))

    outcomes = [receiver.receive(event).outcome for event in order]
    winner = min(events, key=rank)
    assert outcomes[0] == "commit" and set(outcomes[1:]) <= {"rolled_back", "lost_race"}
    assert witness.receive(winner).outcome == "commit"
    assert (receiver.epoch, receiver.exporter()) == (witness.epoch, witness.exporter())


# --- 6. leaving ----------------------------------------------------------------------------------


def test_an_mdk_member_leaves_and_a_tessera_admin_commits_its_proposal(mdk_member: MakeMdk) -> None:
    """MDK's ``leave_group`` in a group not requiring SelfRemove: a Remove proposal naming its sender.

    A non-admin MDK member stores it (PENDING_PROPOSAL, listed in
    ``pending_member_changes``); our admin commits it by reference, and MDK
    applies that commit: the leaver's group turns inactive, the rest shrink.
    """
    bob, carol, tess = mdk_member("bob"), mdk_member("carol"), tessera("tess")
    gid = tessera_group(tess, [bob, carol], require_self_remove=False)
    leave = json.loads(bob.mdk.leave_group(gid).evolution_event_json)

    (received,) = deliver(leave, tess)
    assert received.proposal is not None
    assert (received.proposal.kind, received.proposal.subject_credential) == ("self_remove", bob.pubkey)
    assert carol.receive(leave).is_PENDING_PROPOSAL()
    assert carol.mdk.pending_member_changes(gid).removals == [bob.pubkey]

    removal = tess.commit(proposals_by_ref=[received.proposal.proposal_ref])
    assert all(result.is_COMMIT() for result in deliver(removal.event, bob, carol))
    assert applied(tess.merge()).removed == (bob.pubkey,)
    assert bob.mdk.get_group(gid).state == "inactive"
    assert carol.mdk.pending_member_changes(gid).removals == []
    assert_converged(gid, [tess], [carol])


def test_an_mdk_admins_auto_commit_of_a_remove_based_leave_keeps_the_leaver(mdk_member: MakeMdk) -> None:
    """MDK 0.8.0 bug: an admin answers a Remove-based leave proposal (PROPOSAL) with a commit that leaves it out.

    In a group not requiring SelfRemove (as older clients made them), MDK's
    ``leave_group`` sends a Remove of its own leaf.  The admin's auto-commit
    keeps only SelfRemove proposals, so it becomes an empty commit with a
    path: a self-update of the admin.  The proposal is spent and the leaver
    is still a member; a Tessera admin has to commit such leaves.  (Ours
    leave with a SelfRemove there, every member supporting it.)
    """
    alice, bob, tess = mdk_member("alice"), mdk_member("bob"), tessera("tess")
    gid = tessera_group(tess, [alice, bob], admins=(tess.pubkey, alice.pubkey), require_self_remove=False)
    proposal = json.loads(bob.mdk.leave_group(gid).evolution_event_json)
    received = tess.receive(proposal).proposal
    assert received is not None and received.kind == "self_remove"

    answer = alice.receive(proposal)
    assert answer.is_PROPOSAL()
    auto_commit = published(alice, answer.result)
    (ours,) = deliver(auto_commit, tess)
    assert (applied(ours).removed, applied(ours).updated) == ((), (alice.pubkey,))
    assert deliver(auto_commit, bob)[0].is_COMMIT()
    assert bob.pubkey in set(alice.mdk.get_members(gid)) and alice.mdk.pending_member_changes(gid).removals == []
    assert_converged(gid, [tess], [alice, bob])


# --- 7. one history ------------------------------------------------------------------------------


def mdk_history(member: MdkMember, gid: str) -> list[tuple[int, str, int, str, str]]:
    """``(created_at, rumor id, kind, content, author)`` of every rumor MDK stored, its own included."""
    stored = member.mdk.get_messages(gid, None, None, None)
    return sorted((m.created_at, m.id, m.kind, json.loads(m.event_json)["content"], m.sender_pubkey) for m in stored)


def test_mdk_and_tessera_record_the_same_history(mdk_member: MakeMdk) -> None:
    """After a script of chat, reactions, deletions and commits from both sides, every member holds the same rumors.

    MDK's ``get_messages`` includes what it sent (state ``created`` until
    its echo is processed); ordered by ``(created_at, id)`` the lists match.
    """
    alice, bob, tess = mdk_member("alice"), mdk_member("bob"), tessera("tess")
    gid = mdk_group(alice, [tess, bob])
    everyone: tuple[Member, ...] = (alice, bob, tess)

    def say(event: dict) -> None:
        deliver(event, *everyone)

    say(alice.send(gid, "one"))
    say(tess.send("two"))
    two = tess.history[-1].rumor_id
    say(mdk_says(bob, gid, "+", kind=REACTION_KIND, tags=[["e", two], ["p", tess.pubkey], ["k", "9"]]))
    deliver(published(alice, alice.mdk.self_update(gid)), bob, tess)
    say(tess.send("three, one epoch on"))
    say(tess.send("", kind=rumors.DELETION_KIND, tags=[["e", two]]))
    update = tess.commit(self_update=True)
    deliver(update.event, *everyone)
    say(bob.send(gid, "four"))
    say(mdk_says(alice, gid, "", kind=rumors.DELETION_KIND, tags=[["e", tess.history[0].rumor_id]]))

    ours = sorted((e.created_at, e.rumor_id, e.kind, e.content, e.author) for e in tess.history)
    assert len(ours) == 7
    assert mdk_history(alice, gid) == ours
    assert mdk_history(bob, gid) == ours


# --- 8. the legacy envelope ----------------------------------------------------------------------


def test_a_legacy_nip44_envelope_opens_with_ours_and_no_longer_with_mdk(mdk: ModuleType, mdk_member: MakeMdk) -> None:
    """MIP-03's first envelope: NIP-44 v2 to itself under the secp256k1 key MLS-Exporter("nostr", "nostr", 32).

    We still open it.  MDK 0.8.0 tries it only for events without an
    ``encoding=base64`` tag and only until 2026-05-15 00:00 UTC by its clock;
    now it answers that no exporter secret decrypts the event.
    """
    alice, tess, writer = mdk_member("alice"), tessera("tess"), tessera("writer")
    mdk_group(alice, [tess, writer])
    now = int(time.time())
    rumor = rumors.make(writer.pubkey, now, "sealed the old way")
    message, writer.state = mls.encrypt_application(writer.group, rumors.encode(rumor))
    legacy_key = nip44.group_conversation_key(mls.exporter_secret(writer.group, "nostr", b"nostr", 32))
    event, _ = nostr.make_group_event(nip44.encrypt(message, legacy_key), writer.nostr_group_id, now)

    assert outer.open_content(tess.group, event["content"]) == (tess.epoch, message)
    assert tess.receive(event).rumor == rumor
    assert now > MDK_LEGACY_DEADLINE
    with pytest.raises(mdk.MdkUniffiError, match="Failed to decrypt message with any exporter secret"):
        alice.receive(event)
