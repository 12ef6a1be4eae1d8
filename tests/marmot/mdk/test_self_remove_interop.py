"""SelfRemove (proposal type 0x000a) between Tessera and MDK 0.8.0 members, at the engine and wire level.

MDK makes a group require SelfRemove when every invitee's KeyPackage lists
it, and then refuses to add a KeyPackage that does not.  Ours list it, so
an MDK-only group can now add a Tessera member.  In such a group both sides
leave with a SelfRemove sent as a PublicMessage (MDK switches its
ciphertext-only outgoing policy to plaintext for it), and any remaining
member commits it by reference.

MDK 0.8.0 behaviours these tests pin:

* ``leave_group`` sends a SelfRemove only when the group's
  ``required_capabilities`` name it (else a Remove of its own leaf); we
  send one whenever every member supports it (draft-ietf-mls-extensions'
  "self-remove-capable group"), a superset of MDK's condition.
* Every MDK member, admin or not, answers a non-admin's SelfRemove with a
  SelfRemove-only commit (PROPOSAL) and accepts a non-admin's
  SelfRemove-only commit; a SelfRemove from an admin is ignored
  (IGNORED_PROPOSAL: admins must self-demote first, MIP-03).
* An MDK member that auto-committed a SelfRemove still applies another
  member's commit of it (its own commit is dropped).

Marmot's admin rule (``rules.check_commit``) lets a non-admin commit
others' SelfRemoves, as MDK and the spec do (the last test).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.messages import SELF_REMOVE_PROPOSAL_TYPE, MLSMessage, RequiredCapabilities, WireFormat
from protocols.libraries.mls.messages.registries import ExtensionType
from protocols.marmot.wire import outer
from tests.marmot.mdk.mdk_peer import MdkMember
from tests.marmot.mdk.tessera_member import TesseraMember
from tests.marmot.mdk.test_group_interop import (
    MakeMdk,
    admins_update,
    applied,
    assert_converged,
    deliver,
    mdk_group,
    published,
    tessera,
)

pytestmark = pytest.mark.peer


def required_proposals(member: TesseraMember) -> tuple[int, ...]:
    """The proposal types the group's ``required_capabilities`` name, as our member's state holds them."""
    for extension in member.group.context.extensions:
        if extension.extension_type == ExtensionType.REQUIRED_CAPABILITIES:
            return tuple(decode(RequiredCapabilities, extension.extension_data).proposal_types)
    return ()


def wire_format(member: TesseraMember, event: dict) -> WireFormat:
    """How the MLS message inside a kind-445 event of ``member``'s group is framed."""
    opened = outer.open_content(member.group, event["content"])
    assert opened is not None
    return decode(MLSMessage, opened[1]).wire_format


def mdk_group_joined_by(creator: MdkMember, mdk_invitees: list[MdkMember], ours: list[TesseraMember]) -> str:
    """``creator`` makes a group of MDK members only (so it requires SelfRemove), then adds ``ours`` in one commit."""
    gid = mdk_group(creator, list(mdk_invitees))
    invitations = [(member, member.key_package_event()) for member in ours]
    added = creator.mdk.add_members(gid, [json.dumps(event) for _, event in invitations])
    event = published(creator, added)
    assert all(result.is_COMMIT() for result in deliver(event, *mdk_invitees))
    by_key_package = {event["id"]: member for member, event in invitations}
    for rumor in (json.loads(text) for text in added.welcome_rumors_json):
        (key_package_event_id,) = [tag[1] for tag in rumor["tags"] if tag[0] == "e"]
        by_key_package[key_package_event_id].join(rumor)
    return gid


# --- 1. an MDK-only group adds a Tessera member -------------------------------------------------------


def test_an_mdk_group_requiring_self_remove_adds_tessera_members(mdk: ModuleType, mdk_member: MakeMdk) -> None:
    """Our KeyPackages list SelfRemove, so a group MDK made with MDK members only takes them; we read and write."""
    alice, bob, tess, tom = mdk_member("alice"), mdk_member("bob"), tessera("tess"), tessera("tom")
    gid = mdk_group_joined_by(alice, [bob], [tess, tom])

    assert alice.mdk.group_required_proposals(gid) == [mdk.MdkProposalType.SELF_REMOVE]
    assert required_proposals(tess) == (SELF_REMOVE_PROPOSAL_TYPE,)
    assert mls.self_remove_capable(tess.group)
    assert_converged(gid, [tess, tom], [alice, bob])
    said = alice.send(gid, "welcome, both of you")
    assert [r.rumor["content"] for r in deliver(said, tess, tom)] == ["welcome, both of you"] * 2


def test_mdk_requires_self_remove_of_a_group_it_makes_with_a_tessera_invitee(
    mdk: ModuleType, mdk_member: MakeMdk
) -> None:
    """MDK requires what every invitee supports; with ours now listing SelfRemove, mixed groups require it too."""
    carol = mdk_member("carol")
    gid = mdk_group(carol, [tessera("tom"), mdk_member("dave")])
    assert carol.mdk.group_required_proposals(gid) == [mdk.MdkProposalType.SELF_REMOVE]


# --- 2. a Tessera member leaves, MDK commits ----------------------------------------------------------


def test_a_tessera_member_leaves_by_self_remove_and_mdk_commits_it(mdk_member: MakeMdk) -> None:
    """Our SelfRemove goes out as a PublicMessage; MDK's admin auto-commits it; every roster shrinks.

    bob, an MDK non-admin, auto-commits it too; alice's commit wins (it is
    published first) and bob applies it, dropping his own.
    """
    alice, bob, tess, tom = mdk_member("alice"), mdk_member("bob"), tessera("tess"), tessera("tom")
    gid = mdk_group_joined_by(alice, [bob], [tess, tom])
    leave = tess.leave()

    assert wire_format(tess, leave) == WireFormat.MLS_PUBLIC_MESSAGE
    proposal = tom.receive(leave).proposal
    assert proposal is not None and (proposal.kind, proposal.subject_credential) == ("self_remove", tess.pubkey)
    answers = deliver(leave, alice, bob)
    assert [answer.is_PROPOSAL() for answer in answers] == [True, True]
    auto_commit = published(alice, answers[0].result)

    left, stayed = (applied(received) for received in deliver(auto_commit, tess, tom))
    assert left.we_were_removed and not tess.group.active
    assert stayed.committer_credential == alice.pubkey
    assert stayed.removed == stayed.self_removed == (tess.pubkey,)
    assert bob.receive(auto_commit).is_COMMIT()
    assert tess.pubkey not in set(alice.mdk.get_members(gid)) | set(bob.mdk.get_members(gid))
    assert_converged(gid, [tom], [alice, bob])


def test_mdk_ignores_a_self_remove_from_an_admin(mdk: ModuleType, mdk_member: MakeMdk) -> None:
    """MIP-03: an admin self-demotes before leaving; MDK ignores an admin's SelfRemove (IGNORED_PROPOSAL)."""
    alice, bob, tess = mdk_member("alice"), mdk_member("bob"), tessera("tess")
    gid = mdk_group_joined_by(alice, [bob], [tess])
    promoted = published(alice, alice.mdk.update_group_data(gid, admins_update(mdk, [alice.pubkey, tess.pubkey])))
    deliver(promoted, bob, tess)

    leave = tess.leave()
    assert [answer.is_IGNORED_PROPOSAL() for answer in deliver(leave, alice, bob)] == [True, True]
    assert tess.pubkey in set(alice.mdk.get_members(gid))


# --- 3. an MDK member leaves, a Tessera member commits ------------------------------------------------


@pytest.mark.parametrize("tess_is_admin", [True, False], ids=["admin", "non-admin"])
def test_an_mdk_member_leaves_by_self_remove_and_a_tessera_member_commits_it(
    mdk: ModuleType, mdk_member: MakeMdk, tess_is_admin: bool
) -> None:
    """MDK's ``leave_group`` sends a SelfRemove; our member commits it by reference; MDK applies our commit.

    alice and carol (MDK) auto-commit the SelfRemove when they receive it;
    ours arrives first, and each applies it instead of her own.
    """
    alice, bob, carol, tess = mdk_member("alice"), mdk_member("bob"), mdk_member("carol"), tessera("tess")
    gid = mdk_group_joined_by(alice, [bob, carol], [tess])
    if tess_is_admin:
        promoted = published(alice, alice.mdk.update_group_data(gid, admins_update(mdk, [alice.pubkey, tess.pubkey])))
        deliver(promoted, bob, carol, tess)
    leave = json.loads(bob.mdk.leave_group(gid).evolution_event_json)

    assert wire_format(tess, leave) == WireFormat.MLS_PUBLIC_MESSAGE
    proposal = tess.receive(leave).proposal
    assert proposal is not None and (proposal.kind, proposal.subject_credential) == ("self_remove", bob.pubkey)
    assert [answer.is_PROPOSAL() for answer in deliver(leave, alice, carol)] == [True, True]
    removal = tess.commit(proposals_by_ref=[proposal.proposal_ref])

    assert all(result.is_COMMIT() for result in deliver(removal.event, alice, carol, bob))
    ours = applied(tess.merge())  # Marmot's admin rule lets a non-admin commit others' SelfRemoves
    assert (ours.removed, ours.self_removed) == ((bob.pubkey,), (bob.pubkey,))
    assert bob.mdk.get_group(gid).state == "inactive"
    assert_converged(gid, [tess], [alice, carol])


# --- Marmot's admin rule lets any member commit others' SelfRemoves ----------------------------------


def test_a_non_admin_mdk_members_self_remove_commit_is_accepted_by_our_members(mdk_member: MakeMdk) -> None:
    """bob (MDK, not an admin) commits tom's SelfRemove; tess applies it through Marmot's admin rule."""
    alice, bob, tess, tom = mdk_member("alice"), mdk_member("bob"), tessera("tess"), tessera("tom")
    mdk_group_joined_by(alice, [bob], [tess, tom])
    leave = tom.leave()
    tess.receive(leave)
    answer = bob.receive(leave)
    assert answer.is_PROPOSAL()
    event: dict[str, Any] = published(bob, answer.result)

    assert applied(tess.receive(event)).self_removed == (tom.pubkey,)
