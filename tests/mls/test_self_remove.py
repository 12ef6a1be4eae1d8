"""The SelfRemove proposal of the MLS extensions draft (type 0x000a): a member asks to leave, another commits it.

The rules, from draft-ietf-mls-extensions ("SelfRemove Proposal") and from
what openmls (and MDK on top of it) send and accept:

* the proposal is an empty struct; the leaf it removes is its sender's;
* only a member sends one, as a PublicMessage (receivers, like openmls,
  also take one in a PrivateMessage), and only in a group whose every
  member lists 0x000a among its capabilities;
* a commit holds it by reference, never by value, never the committer's
  own, and carries a path, as for a Remove;
* beside it, an Update or a Remove of the same leaf is invalid;
* like every proposal, it lasts one epoch: a commit that does not hold it
  drops it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.libraries import mls
from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import DecodeError, decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.group import commit as group_commit
from protocols.libraries.mls.group.key_packages import create_key_package, default_capabilities
from protocols.libraries.mls.group.proposal_list import check_proposal
from protocols.libraries.mls.group.proposals import propose, propose_remove, propose_self_remove, propose_update
from protocols.libraries.mls.group.refusals import InvalidProposal, InvalidProposalList, UnknownProposalRef
from protocols.libraries.mls.group.snapshot import format_version
from protocols.libraries.mls.group.snapshot_format import FORMAT_VERSION
from tests.mls.group._forge import forged_commit, forged_proposal

FORMAT_1 = Path(__file__).parent / "fixtures" / "snapshot_format_1.json"
SELF_REMOVE = m.SELF_REMOVE_PROPOSAL_TYPE


def seeded(seed: int) -> mls.Rng:
    return random.Random(seed).randbytes


def name(index: int) -> str:
    """The credential of member ``index``."""
    return f"{index + 1:02x}" * 32


class Group:
    """The members of one group, driven through the engine API; each message reaches every other member.

    Attributes:
        states: each member's state, by credential (a removed member leaves it).
        rng: the seeded randomness of every operation.
    """

    def __init__(self, size: int, *, seed: int = 0, lacking: Iterable[int] = ()):
        """Member 0 creates the group and adds the others; the members ``lacking`` do not list SelfRemove."""
        self.rng = seeded(seed)
        identities = [mls.new_identity(name(i), rng=self.rng) for i in range(size)]
        state = mls.create_group(identities[0], b"self-remove group", rng=self.rng)
        without = set(lacking)
        packages = [self._key_package(identity, i in without) for i, identity in enumerate(identities) if i]
        added = mls.commit(state, add=[kp for kp, _ in packages], rng=self.rng)
        self.states = {identities[0].credential: added.new_state}
        for identity, (_, private) in zip(identities[1:], packages, strict=True):
            welcome = added.welcomes[identity.credential]
            self.states[identity.credential] = mls.join_from_welcome(identity, private, welcome)

    def _key_package(self, identity: mls.Identity, lacking: bool) -> tuple[m.KeyPackage, mls.KeyPackagePrivate]:
        if not lacking:
            return mls.create_key_package(identity, rng=self.rng)
        cs = suite(identity.suite_id)
        capabilities = attrs.evolve(default_capabilities(cs, identity.basic_credential), proposals=())
        key_package, secrets = create_key_package(
            cs, identity.basic_credential, identity.signature, capabilities=capabilities, rng=self.rng
        )
        return key_package, mls.KeyPackagePrivate(key_package, secrets)

    def deliver(self, sender: str, message: bytes) -> dict[str, mls.ProposalReceived]:
        """The proposal ``message`` received by every member but ``sender``; their states hold it."""
        received = {}
        for who, state in self.states.items():
            if who != sender:
                result = mls.process_message(state, message)
                assert isinstance(result, mls.ProposalReceived)
                received[who] = result
                self.states[who] = result.new_state
        return received

    def leave(self, leaver: str) -> dict[str, mls.ProposalReceived]:
        """``leaver`` asks to leave with ``propose(self_remove=True)``; what every other member received."""
        message, self.states[leaver] = mls.propose(self.states[leaver], self_remove=True, rng=self.rng)
        return self.deliver(leaver, message)

    def commit(
        self, committer: str, *, remove: Iterable[str] = (), proposals_by_ref: list[bytes] | None = None
    ) -> dict[str, mls.CommitApplied]:
        """``committer`` commits; everyone applies it (the committer its echo); removed members leave."""
        state = self.states[committer]
        result = mls.commit(state, remove=remove, proposals_by_ref=proposals_by_ref, rng=self.rng)
        self.states[committer] = result.pending_state
        applied = {who: mls.process_message(state, result.message) for who, state in self.states.items()}
        out = {}
        for who, outcome in applied.items():
            assert isinstance(outcome, mls.CommitApplied)
            out[who] = outcome
            if outcome.we_were_removed:
                del self.states[who]
            else:
                self.states[who] = outcome.new_state
        return out

    def assert_agreed(self, members: set[str]) -> None:
        """The members left are exactly ``members``, all at one epoch, with one roster and one exporter."""
        views = {
            (s.epoch, frozenset(mls.member_credentials(s).values()), mls.exporter_secret(s))
            for s in self.states.values()
        }
        assert len(views) == 1
        ((_, roster, _),) = views
        assert set(self.states) == members == set(roster)


def ref_of(received: dict[str, mls.ProposalReceived]) -> bytes:
    """The one ProposalRef every receiver computed."""
    refs = {r.proposal_ref for r in received.values()}
    assert len(refs) == 1
    return refs.pop()


# --- the wire form and the capability -------------------------------------------------------------


def test_a_self_remove_is_proposal_type_0x000a_with_an_empty_body() -> None:
    assert encode(m.SelfRemove(), m.Proposal) == b"\x00\x0a"
    assert decode(m.Proposal, b"\x00\x0a") == m.SelfRemove()
    assert m.SelfRemove().proposal_type == SELF_REMOVE == 0x000A
    with pytest.raises(DecodeError):
        decode(m.Proposal, b"\x00\x0a\x00")  # no body follows, so a byte more is trailing


@given(st.lists(st.sampled_from([m.SelfRemove(), m.Remove(3), m.UnknownProposal(0x0B0B, b"x")]), max_size=6))
def test_proposal_lists_with_self_removes_round_trip(proposals: list[m.Proposal]) -> None:
    commit = m.Commit(tuple(m.ProposalByValue(p) for p in proposals), None)
    assert decode(m.Commit, encode(commit)) == commit


def test_our_key_packages_and_groups_list_self_remove() -> None:
    identity = mls.new_identity(name(0), rng=seeded(1))
    key_package, _ = mls.create_key_package(identity, rng=seeded(2))
    assert key_package.leaf_node.capabilities.proposals == (SELF_REMOVE,)
    state = mls.create_group(identity, b"g", rng=seeded(3))
    assert state.own_leaf_node.capabilities.proposals == (SELF_REMOVE,)
    assert mls.self_remove_capable(state)


# --- asking to leave --------------------------------------------------------------------------------


def test_leaving_sends_a_public_self_remove_that_every_member_holds_as_a_self_remove() -> None:
    group = Group(3)
    alice, bob, carol = (name(i) for i in range(3))
    assert mls.self_remove_capable(group.states[bob]) and group.states[bob].config.private_handshakes
    message, left = mls.propose(group.states[bob], self_remove=True, rng=group.rng)

    assert decode(m.MLSMessage, message).wire_format == m.WireFormat.MLS_PUBLIC_MESSAGE
    assert [p.proposal for p in left.proposals] == [m.SelfRemove()]
    received = group.deliver(bob, message)
    for result in received.values():
        assert (result.kind, result.proposer_credential, result.subject_credential) == ("self_remove", bob, bob)
    assert received[alice].proposal_ref == received[carol].proposal_ref == left.proposals[0].ref


def test_leaving_a_group_where_a_member_lacks_self_remove_sends_a_remove_of_our_own_leaf() -> None:
    group = Group(3, lacking=[2])
    bob = name(1)
    assert not mls.self_remove_capable(group.states[bob])
    received = group.leave(bob)

    assert {(r.kind, r.subject_credential) for r in received.values()} == {("self_remove", bob)}
    (pending,) = group.states[name(0)].proposals
    assert pending.proposal == m.Remove(group.states[bob].own_leaf)
    applied = group.commit(name(0))
    assert (applied[name(2)].removed, applied[name(2)].self_removed) == ((bob,), ())
    group.assert_agreed({name(0), name(2)})


def test_a_self_remove_where_a_member_lacks_it_is_refused_by_sender_and_receivers() -> None:
    group = Group(3, lacking=[2])
    bob = group.states[name(1)]
    with pytest.raises(InvalidProposal, match="member 2 does not support proposal type 10"):
        propose_self_remove(bob)
    forged = forged_proposal(bob, m.SelfRemove())
    for receiver in (name(0), name(2)):
        with pytest.raises(InvalidProposal, match="does not support proposal type 10"):
            mls.process_message(group.states[receiver], forged)


def test_one_self_remove_per_member_and_epoch() -> None:
    group = Group(2)
    _, bob = mls.propose(group.states[name(1)], self_remove=True, rng=group.rng)
    with pytest.raises(mls.InvalidArgument, match="already sent a SelfRemove in epoch 1"):
        mls.propose(bob, self_remove=True)


def test_only_a_member_proposes_a_self_remove() -> None:
    group = Group(2)
    state = group.states[name(0)]
    outsider = m.ExternalSender(b"\x01" * 32, m.BasicCredential(b"server"))
    senders = m.Extension(m.ExtensionType.EXTERNAL_SENDERS, encode(m.ExternalSenders((outsider,))))
    context = attrs.evolve(state.context, extensions=(*state.context.extensions, senders))
    refusals = {
        m.SenderExternal(0): "an external sender may not send a proposal of type 10",
        m.SenderNewMemberProposal(): "a new member may only propose to add itself",
        m.SenderNewMemberCommit(): "only a member sends a SelfRemove",
        m.SenderMember(5): "a SelfRemove from leaf 5, which holds no member",
    }
    for sender, reason in refusals.items():
        with pytest.raises(InvalidProposal, match=reason):
            check_proposal(state.tree, context, sender, m.SelfRemove())


def test_a_self_remove_in_a_private_message_is_accepted_as_openmls_does() -> None:
    group = Group(3)
    bob = name(1)
    outcome = propose(group.states[bob], m.SelfRemove(), wire_format=m.WireFormat.MLS_PRIVATE_MESSAGE)
    assert decode(m.MLSMessage, outcome.message).wire_format == m.WireFormat.MLS_PRIVATE_MESSAGE
    group.states[bob] = outcome.new_state
    received = group.deliver(bob, outcome.message)
    applied = group.commit(name(2), proposals_by_ref=[ref_of(received)])
    assert applied[name(0)].self_removed == (bob,)
    group.assert_agreed({name(0), name(2)})


# --- committing ---------------------------------------------------------------------------------------


def test_another_member_commits_a_self_remove_and_everyone_applies_it() -> None:
    group = Group(4)
    alice, bob, carol, dave = (name(i) for i in range(4))
    ref = ref_of(group.leave(bob))
    applied = group.commit(carol, proposals_by_ref=[ref])

    for who, outcome in applied.items():
        assert (outcome.committer_credential, outcome.removed, outcome.self_removed) == (carol, (bob,), (bob,)), who
        assert carol in outcome.updated  # a SelfRemove needs a path, as a Remove does
    assert applied[bob].we_were_removed and not applied[alice].we_were_removed
    group.assert_agreed({alice, carol, dave})


def test_self_removes_and_removes_in_one_commit_are_told_apart() -> None:
    group = Group(4)
    alice, bob, carol, dave = (name(i) for i in range(4))
    ref = ref_of(group.leave(bob))
    applied = group.commit(alice, remove=[dave], proposals_by_ref=[ref])
    assert (applied[carol].removed, applied[carol].self_removed) == ((bob, dave), (bob,))
    group.assert_agreed({alice, carol})


def test_a_pending_commit_keeps_its_self_removes_through_a_snapshot() -> None:
    group = Group(3)
    ref = ref_of(group.leave(name(1)))
    result = mls.commit(group.states[name(0)], proposals_by_ref=[ref], rng=group.rng)
    stored = mls.snapshot(result.pending_state)
    assert format_version(stored) == FORMAT_VERSION == 2
    echo = mls.process_message(mls.restore(stored), result.message)
    assert isinstance(echo, mls.CommitApplied) and echo.self_removed == (name(1),)


def test_a_format_1_snapshot_with_a_pending_commit_is_migrated() -> None:
    """A state the engine stored before SelfRemove (tests/mls/fixtures/snapshot_format_1.json) still works."""
    kept = json.loads(FORMAT_1.read_text())
    old = bytes.fromhex(kept["snapshot"])
    assert format_version(old) == 1
    state = mls.restore(old)
    assert format_version(mls.snapshot(state)) == 2
    echo = mls.process_message(state, bytes.fromhex(kept["commit"]))
    assert isinstance(echo, mls.CommitApplied)
    assert (echo.removed, echo.self_removed, echo.new_epoch) == ((kept["bob"],), (), state.epoch + 1)


def test_committing_every_pending_proposal_drops_what_a_self_remove_supersedes() -> None:
    """A Remove or Update of a leaf whose member asked to leave is invalid beside its SelfRemove (the draft)."""
    group = Group(4)
    alice, bob, carol, dave = (name(i) for i in range(4))
    removal = propose_remove(group.states[carol], group.states[bob].own_leaf)
    group.states[carol] = removal.new_state
    group.deliver(carol, removal.message)
    update = propose_update(group.states[bob])
    group.states[bob] = update.new_state
    group.deliver(bob, update.message)
    group.leave(bob)
    assert len(group.states[alice].proposals) == 3

    applied = group.commit(alice)
    assert (applied[dave].removed, applied[dave].self_removed) == ((bob,), (bob,))
    group.assert_agreed({alice, carol, dave})


def test_a_pending_self_remove_dies_with_its_epoch_when_another_commit_removes_the_member() -> None:
    group = Group(3)
    alice, bob, carol = (name(i) for i in range(3))
    ref = ref_of(group.leave(bob))
    applied = group.commit(alice, remove=[bob], proposals_by_ref=[])
    assert (applied[carol].removed, applied[carol].self_removed) == ((bob,), ())
    assert group.states[carol].proposals == ()
    with pytest.raises(UnknownProposalRef, match="not pending in epoch 2"):
        mls.commit(group.states[carol], proposals_by_ref=[ref])


# --- what a commit may not do, refused by its committer and by every receiver --------------------------


def test_a_self_remove_by_value_is_refused() -> None:
    group = Group(3)
    alice = group.states[name(0)]
    with pytest.raises(InvalidProposalList, match="by reference only"):
        group_commit.commit(alice, [m.SelfRemove()])
    forged = forged_commit(alice, [m.ProposalByValue(m.SelfRemove())], rng=group.rng)
    with pytest.raises(InvalidProposalList, match="by reference only"):
        mls.process_message(group.states[name(1)], forged)


def test_the_committer_may_not_commit_its_own_self_remove() -> None:
    group = Group(3)
    ref = ref_of(group.leave(name(1)))
    with pytest.raises(InvalidProposalList, match="may not commit its own SelfRemove"):
        mls.commit(group.states[name(1)], proposals_by_ref=[ref])
    forged = forged_commit(group.states[name(1)], [m.ProposalByReference(ref)], rng=group.rng)
    with pytest.raises(InvalidProposalList, match="may not commit its own SelfRemove"):
        mls.process_message(group.states[name(0)], forged)


def test_a_self_remove_and_a_remove_of_the_same_leaf_are_refused_together() -> None:
    group = Group(3)
    alice, bob = name(0), name(1)
    self_remove = ref_of(group.leave(bob))
    removal = propose_remove(group.states[alice], group.states[bob].own_leaf)
    group.states[alice] = removal.new_state
    group.deliver(alice, removal.message)
    both = [self_remove, removal.ref]
    with pytest.raises(InvalidProposalList, match="removed twice"):
        mls.commit(group.states[name(2)], proposals_by_ref=both)
    forged = forged_commit(group.states[name(2)], [m.ProposalByReference(r) for r in both], rng=group.rng)
    with pytest.raises(InvalidProposalList, match="removed twice"):
        mls.process_message(group.states[alice], forged)


def test_a_commit_of_a_self_remove_without_a_path_is_refused() -> None:
    group = Group(3)
    ref = ref_of(group.leave(name(1)))
    forged = forged_commit(group.states[name(0)], [m.ProposalByReference(ref)], path=False, rng=group.rng)
    with pytest.raises(mls.InvalidMessage, match="require a path"):
        mls.process_message(group.states[name(2)], forged)


# --- the invariant -----------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_whoever_asks_to_leave_is_removed_and_the_rest_agree(data: st.DataObject) -> None:
    """Any members but one ask to leave; a staying member commits it all; exactly the leavers are gone."""
    size = data.draw(st.integers(2, 5), label="size")
    group = Group(size, seed=data.draw(st.integers(0, 2**16), label="seed"))
    everyone = [name(i) for i in range(size)]
    committer = data.draw(st.sampled_from(everyone), label="committer")
    leavers = data.draw(st.lists(st.sampled_from([n for n in everyone if n != committer]), unique=True))
    for leaver in leavers:
        group.leave(leaver)

    applied = group.commit(committer)
    for who, outcome in applied.items():
        assert sorted(outcome.removed) == sorted(outcome.self_removed) == sorted(leavers)
        assert outcome.we_were_removed == (who in leavers)
    group.assert_agreed(set(everyone) - set(leavers))
