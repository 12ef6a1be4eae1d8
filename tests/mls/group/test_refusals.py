"""What the group state machine refuses (RFC 9420 §12.1, §12.2, §12.4, §6), on the committer's side and the receivers'.

Each proposal-list rule is checked twice: :func:`commit` refuses to make the
commit, and a receiver refuses the same list forged by a committer that
skips its checks (:mod:`._forge`).  Then the refusals of whole messages:
tags, replays, epochs, other groups, Welcomes and GroupInfos.  States are
values, so after every refusal the state that refused keeps working: the
next valid commit or message still processes.

The group is Alice (leaf 0), Bob (leaf 1) and Dave (leaf 3); Carol was
removed, so leaf 2 is blank.  Alice commits, Dave receives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import (
    CannotDecryptOwnMessage,
    ConfirmationMismatch,
    InvalidMessage,
    InvalidSignature,
    KeyAlreadyUsed,
    WrongEpoch,
)
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import commit
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.group_info import ratchet_tree_extension, sign_group_info
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.key_packages import create_key_package
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.proposals import ProposalOutcome, propose_remove, propose_update, with_external_psk
from protocols.libraries.mls.group.refusals import (
    GroupReinitialized,
    InvalidCommit,
    InvalidKeyPackage,
    InvalidProposal,
    InvalidProposalList,
    UnknownProposalRef,
    UnsupportedExtension,
    WelcomeNotForUs,
)
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage, ProposalMessage
from protocols.libraries.mls.group.state import GroupConfig, GroupState
from protocols.libraries.mls.group.welcome import seal_welcome
from protocols.libraries.mls.protection import UnknownSender, WrongGroup, membership_tag
from protocols.libraries.mls.tree.errors import DuplicateKey, InvalidLeafSignature, TreeHashMismatch
from protocols.libraries.mls.tree.leaf_node import sign_leaf_node
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from tests.mls.tree._members import seeded_rng

from ._clients import NOW, client
from ._forge import forged_commit, forged_external_commit, forged_proposal
from ._groups import EXTENSION, build_group, capabilities, member_client, signed_group_info

CS = suite(1)
UNSUPPORTED = EXTENSION + 1
CONFIGS = {"public": GroupConfig(private_handshakes=False), "private": GroupConfig()}


@attrs.frozen
class Trio:
    """Alice (leaf 0), Bob (leaf 1) and Dave (leaf 3) in one epoch; leaf 2 is blank."""

    alice: GroupState
    bob: GroupState
    dave: GroupState

    def proposed(self, proposer: str, make: Callable[[GroupState], ProposalOutcome]) -> tuple[Trio, bytes]:
        """The trio once ``proposer`` sent the proposal ``make`` builds and the others received it; and its ref."""
        outcome = make(getattr(self, proposer))
        states = {}
        for name in ("alice", "bob", "dave"):
            if name == proposer:
                states[name] = outcome.new_state
            else:
                received = process(getattr(self, name), outcome.message)
                assert isinstance(received, ProposalMessage)
                states[name] = received.new_state
        return Trio(**states), outcome.ref

    def holding_psk(self, psk_id: bytes, secret: bytes) -> Trio:
        return Trio(*(with_external_psk(state, psk_id, secret) for state in (self.alice, self.bob, self.dave)))


def make_trio(config: GroupConfig) -> Trio:
    rng = seeded_rng(b"refusals")
    alice, bob, _, dave = build_group(CS, [b"alice", b"bob", b"carol", b"dave"], config=config, rng=rng)
    outcome = commit(alice, [m.Remove(2)], rng=rng)
    after = [process(state, outcome.message).new_state for state in (bob, dave)]
    return Trio(outcome.new_state, *after)


TRIOS = {name: make_trio(config) for name, config in CONFIGS.items()}


def flipped(data: bytes) -> bytes:
    """``data`` with its first bit flipped."""
    return bytes([data[0] ^ 1]) + data[1:]


def assert_still_works(alice: GroupState, receiver: GroupState) -> None:
    """Alice's next valid commit (of none of the pending proposals) still takes ``receiver`` to her new epoch."""
    valid = commit(alice, by_reference=(), force_path=True)
    result = process(receiver, valid.message)
    assert isinstance(result, CommitMessage)
    assert result.new_state.epoch == receiver.epoch + 1
    assert result.new_state.epoch_authenticator == valid.new_state.epoch_authenticator


# --- proposal lists (RFC 9420 §12.2, with §12.1's checks of each proposal) -----------------------

#: A case's setup: the trio once any proposals were sent, Alice's proposals by value, and the refs she commits.
Setup = Callable[[Trio], tuple[Trio, Sequence[m.Proposal], Sequence[bytes]]]


def bob_again() -> m.KeyPackage:
    """A fresh KeyPackage of Bob's: same credential and signature key, new HPKE keys."""
    bob = member_client(CS, b"bob")
    key_package, _ = create_key_package(
        CS, m.BasicCredential(b"bob"), bob.signature, capabilities=capabilities(CS), rng=seeded_rng(b"bob again")
    )
    return key_package


def erin_twice() -> tuple[m.KeyPackage, m.KeyPackage]:
    erin = member_client(CS, b"erin")
    again, _ = create_key_package(
        CS, m.BasicCredential(b"erin"), erin.signature, capabilities=capabilities(CS), rng=seeded_rng(b"erin again")
    )
    return erin.key_package, again


def own_update(t: Trio) -> tuple[Trio, Sequence[m.Proposal], Sequence[bytes]]:
    t, ref = t.proposed("alice", propose_update)
    return t, (), (ref,)


def bob_updates_twice(t: Trio) -> tuple[Trio, Sequence[m.Proposal], Sequence[bytes]]:
    t, first = t.proposed("bob", propose_update)
    t, second = t.proposed("bob", propose_update)
    return t, (), (first, second)


def bob_updated_and_removed(t: Trio) -> tuple[Trio, Sequence[m.Proposal], Sequence[bytes]]:
    t, ref = t.proposed("bob", propose_update)
    return t, (m.Remove(1),), (ref,)


def psk_twice(t: Trio) -> tuple[Trio, Sequence[m.Proposal], Sequence[bytes]]:
    psk = m.PreSharedKey(m.ExternalPSK(b"psk", b"n" * CS.nh))
    return t.holding_psk(b"psk", b"secret"), (psk, psk), ()


def by_value(*proposals: m.Proposal) -> Setup:
    return lambda t: (t, proposals, ())


def by_value_from(make: Callable[[Trio], Sequence[m.Proposal]]) -> Setup:
    return lambda t: (t, make(t), ())


REINIT = m.ReInit(b"next group", m.ProtocolVersion.MLS10, CS.id, ())

LIST_CASES: list[tuple[str, Setup, type[Exception], str]] = [
    ("committer's own update", own_update, InvalidProposalList, "may not commit its own Update"),
    ("committer removed", by_value(m.Remove(0)), InvalidProposalList, "may not remove itself"),
    (
        "leaf removed twice",
        by_value(m.Remove(1), m.Remove(1)),
        InvalidProposalList,
        "leaf 1 is updated or removed twice",
    ),
    ("leaf updated twice", bob_updates_twice, InvalidProposalList, "leaf 1 is updated or removed twice"),
    ("leaf updated and removed", bob_updated_and_removed, InvalidProposalList, "leaf 1 is updated or removed twice"),
    ("add of a member", by_value_from(lambda t: (m.Add(bob_again()),)), InvalidProposalList, "already a member"),
    (
        "two adds of one client",
        by_value_from(lambda t: tuple(map(m.Add, erin_twice()))),
        InvalidProposalList,
        "same client",
    ),
    ("one psk twice", psk_twice, InvalidProposalList, "names one pre-shared key twice"),
    (
        "two context extension changes",
        by_value(m.GroupContextExtensions(()), m.GroupContextExtensions(())),
        InvalidProposalList,
        "one GroupContextExtensions proposal at most",
    ),
    ("reinit with others", by_value(REINIT, m.Remove(1)), InvalidProposalList, "ReInit must be the only proposal"),
    (
        "external init from a member",
        by_value(m.ExternalInit(b"\x00" * 32)),
        InvalidProposalList,
        "only a new member's external commit",
    ),
    ("remove of a blank leaf", by_value(m.Remove(2)), InvalidProposal, "leaf 2, which holds no member"),
    ("remove outside the tree", by_value(m.Remove(9)), InvalidProposal, "leaf 9, which holds no member"),
    (
        "add for another suite",
        by_value_from(lambda t: (m.Add(client(suite(2), b"erin").key_package),)),
        InvalidKeyPackage,
        "cipher suite 2, not 1",
    ),
    (
        "extension a member does not support",
        by_value(m.GroupContextExtensions((m.Extension(UNSUPPORTED, b""),))),
        UnsupportedExtension,
        f"does not support group extensions \\[{UNSUPPORTED}\\]",
    ),
    ("unknown proposal ref", lambda t: (t, (), (b"\x07" * CS.nh,)), UnknownProposalRef, "0707070707"),
]
LIST_IDS = [case[0] for case in LIST_CASES]


def forged_case(setup: Setup, trio: Trio) -> tuple[Trio, bytes]:
    """The trio once the case is set up, and Alice's commit of its list forged past her checks."""
    t, proposals, refs = setup(trio)
    return t, forged_commit(t.alice, [*map(m.ProposalByReference, refs), *map(m.ProposalByValue, proposals)])


@pytest.mark.parametrize(("name", "setup", "error", "match"), LIST_CASES, ids=LIST_IDS)
def test_the_committer_refuses_to_commit_a_bad_list(name: str, setup: Setup, error: type, match: str) -> None:
    t, proposals, refs = setup(TRIOS["private"])
    with pytest.raises(error, match=match):
        commit(t.alice, proposals, by_reference=refs)
    assert_still_works(t.alice, t.dave)


@pytest.mark.parametrize("handshakes", CONFIGS)
@pytest.mark.parametrize(("name", "setup", "error", "match"), LIST_CASES, ids=LIST_IDS)
def test_a_receiver_refuses_a_commit_of_a_bad_list(
    name: str, setup: Setup, error: type, match: str, handshakes: str
) -> None:
    t, forged = forged_case(setup, TRIOS[handshakes])
    with pytest.raises(error, match=match):
        process(t.dave, forged)
    assert_still_works(t.alice, t.dave)


@pytest.mark.parametrize("handshakes", CONFIGS)
def test_a_forged_commit_of_an_empty_list_is_valid_so_the_forger_itself_is_faithful(handshakes: str) -> None:
    t = TRIOS[handshakes]
    result = process(t.dave, forged_commit(t.alice, []))
    assert isinstance(result, CommitMessage) and result.summary.updated == (0,)
    assert result.new_state.epoch == t.dave.epoch + 1


@pytest.mark.parametrize("handshakes", CONFIGS)
@pytest.mark.parametrize("entries", [[], [m.ProposalByValue(m.Remove(1))]], ids=["empty", "remove"])
def test_a_commit_without_the_path_its_list_requires_is_refused(handshakes: str, entries: list[Any]) -> None:
    t = TRIOS[handshakes]
    with pytest.raises(InvalidCommit, match="require a path and it has none"):
        process(t.dave, forged_commit(t.alice, entries, path=False))
    assert_still_works(t.alice, t.dave)


def test_an_add_whose_key_package_has_expired_is_refused_at_the_time_given() -> None:
    """The test clients' KeyPackages live an hour around NOW; a day later the committer refuses them."""
    t = TRIOS["private"]
    erin = client(CS, b"erin")
    commit(t.alice, [m.Add(erin.key_package)], now=NOW)
    with pytest.raises(InvalidKeyPackage, match="lifetime does not cover the current time"):
        commit(t.alice, [m.Add(erin.key_package)], now=NOW + 24 * 3600)
    assert_still_works(t.alice, t.dave)


def test_a_reinit_commit_carries_no_path_on_the_committers_side() -> None:
    t = TRIOS["private"]
    with pytest.raises(InvalidCommit, match="a ReInit commit carries no path"):
        commit(t.alice, [REINIT], force_path=True)
    assert_still_works(t.alice, t.dave)


@pytest.mark.parametrize("handshakes", CONFIGS)
def test_a_tampered_confirmation_tag_is_refused(handshakes: str) -> None:
    t = TRIOS[handshakes]
    with pytest.raises(ConfirmationMismatch):
        process(t.dave, forged_commit(t.alice, [], tag=b"\x00" * CS.nh))
    assert_still_works(t.alice, t.dave)


def test_a_real_public_commit_with_its_tag_changed_and_its_membership_tag_redone_is_refused() -> None:
    """An insider who knows the membership key re-MACs a changed tag: the confirmation tag still gives it away."""
    t = TRIOS["public"]
    public = decode(m.MLSMessage, commit(t.alice, force_path=True).message).message
    assert isinstance(public, m.PublicMessage) and public.auth.confirmation_tag is not None
    tag = flipped(public.auth.confirmation_tag)
    authenticated = m.AuthenticatedContent(
        m.WireFormat.MLS_PUBLIC_MESSAGE, public.content, attrs.evolve(public.auth, confirmation_tag=tag)
    )
    retagged = attrs.evolve(
        public,
        auth=authenticated.auth,
        membership_tag=membership_tag(CS, t.alice.view.membership_key, authenticated, t.alice.context),
    )
    with pytest.raises(ConfirmationMismatch):
        process(t.dave, encode(m.MLSMessage(m.ProtocolVersion.MLS10, retagged)))
    assert_still_works(t.alice, t.dave)


@pytest.mark.parametrize("handshakes", CONFIGS)
def test_a_commit_from_a_blank_leaf_is_refused(handshakes: str) -> None:
    """Bob, an insider, forges a commit that claims to come from Carol's old leaf, signed with her old key."""
    t = TRIOS[handshakes]
    carol_signature = member_client(CS, b"carol").signature.private
    as_carol = attrs.evolve(t.bob, view=attrs.evolve(t.bob.view, own_leaf=2), signature_private=carol_signature)
    with pytest.raises(UnknownSender, match="sender leaf 2 is blank in this epoch"):
        process(t.dave, forged_commit(as_carol, [], path=False))
    assert_still_works(t.alice, t.dave)


# --- single proposals (RFC 9420 §12.1) ---------------------------------------------------------------------


@pytest.mark.parametrize("handshakes", CONFIGS)
def test_an_update_that_keeps_the_old_encryption_key_is_refused(handshakes: str) -> None:
    t = TRIOS[handshakes]
    old = t.bob.own_leaf_node
    payload = m.LeafNodePayload(
        old.encryption_key, old.signature_key, old.credential, old.capabilities, m.UpdateOrigin(), old.extensions
    )
    leaf = sign_leaf_node(CS, t.bob.signature_private, payload, t.bob.group_id, 1)
    with pytest.raises(InvalidProposal, match="keeps its old encryption key"):
        process(t.dave, forged_proposal(t.bob, m.Update(leaf)))
    assert_still_works(t.alice, t.dave)


@pytest.mark.parametrize("handshakes", CONFIGS)
def test_a_proposal_to_remove_a_blank_leaf_is_refused_by_sender_and_receivers(handshakes: str) -> None:
    t = TRIOS[handshakes]
    with pytest.raises(InvalidProposal, match="leaf 2, which holds no member"):
        propose_remove(t.bob, 2)
    with pytest.raises(InvalidProposal, match="leaf 2, which holds no member"):
        process(t.dave, forged_proposal(t.bob, m.Remove(2)))
    assert_still_works(t.alice, t.dave)


# --- external commits (RFC 9420 §12.2, external) -------------------------------------------------------


@attrs.frozen
class ExternalAttempt:
    """Erin's valid external commit into the trio's group, and what a forger needs to change it."""

    message: bytes
    signature_private: bytes
    external_init: m.ProposalOrRef
    joined: GroupState


def erin_joins(t: Trio) -> ExternalAttempt:
    erin = member_client(CS, b"erin")
    joined = join_by_external_commit(
        signed_group_info(t.alice), m.BasicCredential(b"erin"), erin.signature, capabilities=capabilities(CS)
    )
    public = decode(m.MLSMessage, joined.message).message
    assert isinstance(public, m.PublicMessage) and isinstance(public.content.content, m.Commit)
    [external_init] = public.content.content.proposals
    return ExternalAttempt(joined.message, erin.signature.private, external_init, joined.new_state)


def pending_ref(t: Trio) -> tuple[Trio, bytes]:
    return t.proposed("bob", propose_update)


EXTERNAL_CASES: list[tuple[str, Callable[[ExternalAttempt, bytes], list[Any]], type[Exception], str]] = [
    ("no external init", lambda a, ref: [], InvalidProposalList, "exactly one ExternalInit"),
    ("two external inits", lambda a, ref: [a.external_init] * 2, InvalidProposalList, "exactly one ExternalInit"),
    (
        "an add",
        lambda a, ref: [a.external_init, m.ProposalByValue(m.Add(member_client(CS, b"frank").key_package))],
        InvalidProposalList,
        "only ExternalInit, Remove and PreSharedKey",
    ),
    (
        "a proposal by reference",
        lambda a, ref: [a.external_init, m.ProposalByReference(ref)],
        InvalidCommit,
        "holds its proposals by value",
    ),
    (
        "a remove of another client",
        lambda a, ref: [a.external_init, m.ProposalByValue(m.Remove(1))],
        InvalidCommit,
        "only the joiner's old leaf; leaf 1 is another client",
    ),
    (
        "two removes",
        lambda a, ref: [a.external_init, m.ProposalByValue(m.Remove(0)), m.ProposalByValue(m.Remove(1))],
        InvalidProposalList,
        "removes at most one leaf",
    ),
]


@pytest.mark.parametrize(("name", "entries", "error", "match"), EXTERNAL_CASES, ids=[c[0] for c in EXTERNAL_CASES])
def test_a_receiver_refuses_an_external_commit_of_a_bad_list(
    name: str, entries: Callable[[ExternalAttempt, bytes], list[Any]], error: type, match: str
) -> None:
    t, ref = pending_ref(TRIOS["private"])
    attempt = erin_joins(t)
    forged = forged_external_commit(attempt.message, attempt.signature_private, t.dave.context, entries(attempt, ref))
    with pytest.raises(error, match=match):
        process(t.dave, forged)
    result = process(t.dave, attempt.message)
    assert isinstance(result, CommitMessage)
    assert result.new_state.epoch_authenticator == attempt.joined.epoch_authenticator


@pytest.mark.parametrize(
    ("remove_leaf", "error", "match"),
    [(1, InvalidCommit, "leaf 1 is another client"), (2, InvalidProposal, "leaf 2, which holds no member")],
    ids=["another client", "a blank leaf"],
)
def test_an_external_joiner_refuses_to_remove_a_leaf_that_is_not_its_own(
    remove_leaf: int, error: type, match: str
) -> None:
    t = TRIOS["private"]
    erin = member_client(CS, b"erin")
    with pytest.raises(error, match=match):
        join_by_external_commit(
            signed_group_info(t.alice), m.BasicCredential(b"erin"), erin.signature, remove_leaf=remove_leaf
        )


def test_a_group_info_with_a_bad_signature_is_refused() -> None:
    t = TRIOS["private"]
    info = signed_group_info(t.alice)
    erin = member_client(CS, b"erin")
    broken = attrs.evolve(info, signature=flipped(info.signature))
    claimed_by_bob = attrs.evolve(info, signer=1)
    for forged in (broken, claimed_by_bob):
        with pytest.raises(InvalidSignature):
            join_by_external_commit(forged, m.BasicCredential(b"erin"), erin.signature)
    joined = join_by_external_commit(info, m.BasicCredential(b"erin"), erin.signature)
    assert isinstance(process(t.dave, joined.message), CommitMessage)


# --- messages -----------------------------------------------------------------------------------------------


def test_a_replayed_application_message_is_refused() -> None:
    t = TRIOS["private"]
    message, bob = encrypt_application(t.bob, b"once")
    first = process(t.dave, message)
    assert isinstance(first, ApplicationMessage) and first.data == b"once"
    with pytest.raises(KeyAlreadyUsed):
        process(first.new_state, message)
    following, _ = encrypt_application(bob, b"twice")
    second = process(first.new_state, following)
    assert isinstance(second, ApplicationMessage) and second.data == b"twice"


def test_our_own_application_message_is_refused() -> None:
    t = TRIOS["private"]
    message, sent = encrypt_application(t.dave, b"mine")
    for state in (t.dave, sent):
        with pytest.raises(CannotDecryptOwnMessage):
            process(state, message)
    assert isinstance(process(t.bob, message), ApplicationMessage)


def in_another_group(t: Trio, config: GroupConfig) -> GroupState:
    return build_group(CS, [b"alice", b"bob"], group_id=b"other group", config=config)[0]


def in_the_next_epoch(t: Trio, config: GroupConfig) -> GroupState:
    return commit(t.alice, force_path=True).new_state


@pytest.mark.parametrize("handshakes", CONFIGS)
@pytest.mark.parametrize(
    ("sender", "error", "match"),
    [
        (in_another_group, WrongGroup, "belongs to another group"),
        # The trio is at epoch 2: created, Add, Remove.
        (in_the_next_epoch, WrongEpoch, "message is for epoch 3, group state is at epoch 2"),
    ],
    ids=["another group", "a future epoch"],
)
def test_messages_of_another_group_or_a_future_epoch_are_refused(
    sender: Callable[[Trio, GroupConfig], GroupState], error: type, match: str, handshakes: str
) -> None:
    t = TRIOS[handshakes]
    state = sender(t, CONFIGS[handshakes])
    for message in (encrypt_application(state, b"hi")[0], commit(state, force_path=True).message):
        with pytest.raises(error, match=match):
            process(t.dave, message)
    assert_still_works(t.alice, t.dave)


@pytest.mark.parametrize("handshakes", CONFIGS)
def test_a_handshake_of_a_past_epoch_is_refused(handshakes: str) -> None:
    t = TRIOS[handshakes]
    late = commit(t.alice, force_path=True).message
    moved = commit(t.alice, force_path=True)
    dave = process(t.dave, moved.message).new_state
    with pytest.raises(WrongEpoch, match="proposals and commits are for the current epoch only"):
        process(dave, late)
    assert_still_works(moved.new_state, dave)


# --- Welcomes -----------------------------------------------------------------------------------------------


def test_a_welcome_for_someone_else_is_refused() -> None:
    t = TRIOS["private"]
    erin, frank = member_client(CS, b"erin"), member_client(CS, b"frank")
    outcome = commit(t.alice, [m.Add(erin.key_package)])
    assert outcome.welcome is not None
    with pytest.raises(WelcomeNotForUs):
        join_from_welcome(outcome.welcome, frank.key_package, frank.secrets)
    assert join_from_welcome(outcome.welcome, erin.key_package, erin.secrets).epoch == t.alice.epoch + 1


def test_a_welcome_with_a_ratchet_tree_of_another_epoch_is_refused() -> None:
    t = TRIOS["private"]
    alice = attrs.evolve(t.alice, config=GroupConfig(ratchet_tree_in_welcome=False))
    erin = member_client(CS, b"erin")
    outcome = commit(alice, [m.Add(erin.key_package)])
    assert outcome.welcome is not None
    with pytest.raises(TreeHashMismatch):
        join_from_welcome(outcome.welcome, erin.key_package, erin.secrets, ratchet_tree=alice.tree.to_message())
    joined = join_from_welcome(
        outcome.welcome, erin.key_package, erin.secrets, ratchet_tree=outcome.new_state.tree.to_message()
    )
    assert joined.epoch == alice.epoch + 1


def test_a_welcome_whose_signed_ratchet_tree_holds_a_forged_leaf_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A committer signs a GroupInfo over a tree whose hash matches but where Bob's leaf signature is broken."""
    t = TRIOS["private"]
    erin = member_client(CS, b"erin")
    sealed: dict[str, Any] = {}

    def keep_inputs(*args: Any) -> m.Welcome:
        sealed["args"] = args
        return seal_welcome(*args)

    monkeypatch.setattr("protocols.libraries.mls.group.commit.seal_welcome", keep_inputs)
    commit(t.alice, [m.Add(erin.key_package)])
    cs, info, joiner_secret, psk_secret, psks, members, rng = sealed["args"]
    honest = ratchet_tree_extension(info)
    assert honest is not None
    bob = honest.nodes[2]
    assert isinstance(bob, m.LeafNode)
    nodes = list(honest.nodes)
    nodes[2] = attrs.evolve(bob, signature=flipped(bob.signature))
    forged = m.RatchetTree(tuple(nodes))
    extensions = tuple(
        m.Extension(m.ExtensionType.RATCHET_TREE, encode(forged))
        if extension.extension_type == m.ExtensionType.RATCHET_TREE
        else extension
        for extension in info.extensions
    )
    context = attrs.evolve(info.group_context, tree_hash=RatchetTree.from_message(cs, forged).tree_hash())
    resigned = sign_group_info(cs, context, extensions, info.confirmation_tag, info.signer, t.alice.signature_private)
    welcome = seal_welcome(cs, resigned, joiner_secret, psk_secret, psks, members, rng)
    with pytest.raises(InvalidLeafSignature, match="leaf 1"):
        join_from_welcome(welcome, erin.key_package, erin.secrets)
    honest_welcome = seal_welcome(cs, info, joiner_secret, psk_secret, psks, members, rng)
    assert join_from_welcome(honest_welcome, erin.key_package, erin.secrets).epoch == t.alice.epoch + 1


# --- RFC 9420 rules the first version of the engine missed (found by these tests) ---------------------------


def group_using_the_extension() -> tuple[GroupState, GroupState]:
    """Alice and Bob, both supporting :data:`EXTENSION`, in a group whose context carries it."""
    alice, bob = build_group(CS, [b"alice", b"bob"])
    outcome = commit(alice, [m.GroupContextExtensions((m.Extension(EXTENSION, b"on"),))])
    return outcome.new_state, process(bob, outcome.message).new_state


def test_a_committed_reinit_closes_the_group() -> None:
    t = TRIOS["private"]
    outcome = commit(t.alice, [REINIT])
    result = process(t.dave, outcome.message)
    assert isinstance(result, CommitMessage) and result.summary.reinit == REINIT
    for state in (result.new_state, outcome.new_state):
        for send in (lambda s: encrypt_application(s, b"after the reinit"), lambda s: commit(s, force_path=True)):
            try:
                send(state)
            except GroupReinitialized:
                continue
            raise AssertionError("the group was reinitialized, yet the state still sends")


def test_an_add_is_checked_against_the_extensions_its_commit_sets() -> None:
    alice, bob = group_using_the_extension()
    plain = client(CS, b"plain")  # lists no non-default extension
    outcome = commit(alice, [m.GroupContextExtensions(()), m.Add(plain.key_package)])
    assert isinstance(process(bob, outcome.message), CommitMessage)


def test_a_member_the_commit_removes_need_not_support_its_new_extensions() -> None:
    alice, bob = build_group(CS, [b"alice", b"bob"])
    plain = client(CS, b"plain")
    added = commit(alice, [m.Add(plain.key_package)])
    alice, bob = added.new_state, process(bob, added.message).new_state
    outcome = commit(alice, [m.Remove(2), m.GroupContextExtensions((m.Extension(EXTENSION, b"on"),))])
    result = process(bob, outcome.message)
    assert isinstance(result, CommitMessage) and result.new_state.context.extensions[0].extension_type == EXTENSION


def test_an_external_joiner_that_does_not_support_the_group_extensions_is_refused() -> None:
    alice, bob = group_using_the_extension()
    plain = client(CS, b"plain")
    with pytest.raises(InvalidMessage, match=str(EXTENSION)):
        joined = join_by_external_commit(signed_group_info(alice), m.BasicCredential(b"plain"), plain.signature)
        process(bob, joined.message)


def test_an_external_joiner_refuses_to_reuse_a_members_signature_key() -> None:
    t = TRIOS["private"]
    bob_signature = member_client(CS, b"bob").signature
    with pytest.raises(DuplicateKey, match="signature key of leaf 1"):
        join_by_external_commit(signed_group_info(t.alice), m.BasicCredential(b"erin"), bob_signature)
