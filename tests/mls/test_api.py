"""The engine API plugins use (protocols.libraries.mls): credential strings, bytes in and out, the old engine's values refused."""

from __future__ import annotations

import random

import nacl.signing
import pytest

from protocols.libraries import mls
from protocols.libraries.mls.messages import Extension
from tests.helpers import FIXTURES


def seeded(seed: int) -> mls.Rng:
    return random.Random(seed).randbytes


def flat_tree_value(name: str) -> bytes:
    return bytes.fromhex((FIXTURES / "flat_tree" / f"{name}.hex").read_text())


def test_the_shipped_engine_is_a_group_engine() -> None:
    assert isinstance(mls.ENGINE, mls.GroupEngine)
    assert mls.ENGINE.name == "rfc9420"  # type: ignore[attr-defined]


def test_identity_and_key_package_private_round_trip() -> None:
    rng = seeded(1)
    identity = mls.new_identity("AB" * 32, rng=rng)
    assert identity.credential == "ab" * 32
    assert mls.identity_from_bytes(mls.identity_to_bytes(identity)) == identity
    key_package, private = mls.create_key_package(identity, rng=rng)
    assert mls.key_package_private_from_bytes(mls.key_package_private_to_bytes(private)) == private
    assert mls.key_package_from_bytes(mls.key_package_to_bytes(key_package)) == key_package
    assert identity.signature.private.hex() not in repr(identity) + repr(private)


@pytest.mark.parametrize(
    ("read", "fixture"),
    [
        (mls.identity_from_bytes, "identity.bin"),
        (mls.key_package_private_from_bytes, "key_package_private.bin"),
        (mls.restore, "group_state.snapshot"),
    ],
)
def test_values_the_flat_tree_engine_stored_are_refused_with_a_clear_error(read, fixture) -> None:
    with pytest.raises(mls.InvalidSnapshot, match="flat-tree"):
        read(flat_tree_value(fixture))


def test_a_flat_tree_key_package_is_not_an_mls_message() -> None:
    with pytest.raises(mls.InvalidMessage):
        mls.key_package_from_bytes(flat_tree_value("key_package.bin"))


def test_a_group_through_the_api_speaks_credential_strings() -> None:
    rng = seeded(2)
    alice, bob, carol = (mls.new_identity(f"{n:02x}" * 32, rng=rng) for n in (1, 2, 3))
    state_a = mls.create_group(alice, b"g" * 16, rng=rng)
    kp_b, priv_b = mls.create_key_package(bob, rng=rng)
    result = mls.commit(state_a, add=[mls.key_package_to_bytes(kp_b)], rng=rng)
    state_a = result.new_state
    state_b = mls.join_from_welcome(bob, priv_b, result.welcomes[bob.credential])
    assert mls.member_credentials(state_b) == {0: alice.credential, 1: bob.credential}
    assert mls.own_credential(state_b) == bob.credential

    message, state_b = mls.encrypt_application(state_b, b"hello", rng=rng)
    header = mls.peek(message)
    assert (header.group_id, header.epoch, header.content_type) == (b"g" * 16, 1, "application")
    received = mls.process_message(state_a, message)
    assert isinstance(received, mls.ApplicationReceived)
    assert (received.sender_credential, received.plaintext) == (bob.credential, b"hello")
    state_a = received.new_state

    kp_c, _ = mls.create_key_package(carol, rng=rng)
    proposal, state_b = mls.propose(state_b, add=kp_c, rng=rng)
    seen = mls.process_message(state_a, proposal)
    assert isinstance(seen, mls.ProposalReceived)
    assert (seen.kind, seen.proposer_credential, seen.subject_credential) == ("add", bob.credential, carol.credential)
    leave, state_b = mls.propose(state_b, self_remove=True, rng=rng)
    left = mls.process_message(seen.new_state, leave)
    assert isinstance(left, mls.ProposalReceived) and left.kind == "self_remove"

    committed = mls.commit(left.new_state, rng=rng)  # both pending proposals, by reference
    applied = mls.process_message(state_b, committed.message)
    assert isinstance(applied, mls.CommitApplied)
    assert (applied.added, applied.removed, applied.we_were_removed) == ((carol.credential,), (bob.credential,), True)
    assert set(committed.welcomes) == {carol.credential}
    exported = mls.exporter_secret(committed.new_state, "marmot", b"group-event", 32, epoch=1)
    assert exported == mls.exporter_secret(state_a, "marmot", b"group-event", 32)


def test_wrong_arguments_are_refused_with_a_typed_error() -> None:
    rng = seeded(3)
    alice = mls.new_identity("01" * 32, rng=rng)
    state = mls.create_group(alice, b"g", rng=rng)
    with pytest.raises(mls.InvalidArgument, match="single string"):
        mls.commit(state, remove="01" * 32)
    with pytest.raises(mls.InvalidArgument, match="not a member"):
        mls.commit(state, remove=["02" * 32])
    with pytest.raises(mls.InvalidArgument, match="exactly one"):
        mls.propose(state)
    with pytest.raises(mls.InvalidArgument, match="hex"):
        mls.new_identity("not hex")


def test_an_identity_can_use_a_signature_key_the_caller_already_holds() -> None:
    seed = bytes(range(32))
    identity = mls.identity_with_key("CD" * 32, seed)
    assert identity.credential == "cd" * 32
    assert identity.signature.private == seed
    assert identity.signature.public == nacl.signing.SigningKey(seed).verify_key.encode()
    key_package, _ = mls.create_key_package(identity, rng=seeded(4))
    assert key_package.leaf_node.signature_key == identity.signature.public


def test_each_invitee_gets_a_welcome_holding_only_its_own_secrets() -> None:
    rng = seeded(5)
    alice, bob, carol = (mls.new_identity(c * 64, rng=rng) for c in "abc")
    bob_kp, bob_private = mls.create_key_package(bob, rng=rng)
    carol_kp, carol_private = mls.create_key_package(carol, rng=rng)
    result = mls.commit(mls.create_group(alice, b"g" * 16, rng=rng), add=[bob_kp, carol_kp], rng=rng)
    shared = result.welcomes["b" * 64]
    assert set(mls.welcome_refs(shared)) == {mls.key_package_reference(bob_kp), mls.key_package_reference(carol_kp)}
    for identity, kp, private in ((bob, bob_kp, bob_private), (carol, carol_kp, carol_private)):
        own = mls.welcome_for(shared, kp)
        assert mls.welcome_refs(own) == (mls.key_package_reference(kp),)
        joined = mls.join_from_welcome(identity, private, own)
        assert joined.epoch_authenticator == result.new_state.epoch_authenticator
    stranger_kp, _ = mls.create_key_package(mls.new_identity("d" * 64, rng=rng), rng=rng)
    with pytest.raises(mls.InvalidArgument, match="no group secrets"):
        mls.welcome_for(shared, stranger_kp)
    with pytest.raises(mls.InvalidMessage, match="expected a Welcome"):
        mls.welcome_refs(result.message)


def test_leaf_extensions_are_read_per_member_and_survive_a_self_update() -> None:
    rng = seeded(6)
    tag = 0xF0A1
    alice, bob = mls.new_identity("a" * 64, rng=rng), mls.new_identity("b" * 64, rng=rng)
    mark = Extension(tag, b"alice's mark")
    group = mls.create_group(alice, b"h" * 16, leaf_extensions=[mark], rng=rng)
    bob_kp, bob_private = mls.create_key_package(bob, supported_extensions=[tag], rng=rng)
    added = mls.commit(group, add=[bob_kp], rng=rng)
    bob_state = mls.join_from_welcome(bob, bob_private, added.welcomes["b" * 64])
    updated = mls.commit(added.new_state, self_update=True, rng=rng)
    for state in (added.new_state, bob_state, updated.new_state):
        assert mls.member_leaf_extension(state, tag) == {"a" * 64: b"alice's mark", "b" * 64: None}


def test_skipped_generations_name_the_messages_read_past_until_they_come() -> None:
    rng = seeded(7)
    alice, bob = (mls.new_identity(f"{n:02x}" * 32, rng=rng) for n in (1, 2))
    state_a = mls.create_group(alice, b"s" * 16, rng=rng)
    kp_b, priv_b = mls.create_key_package(bob, rng=rng)
    added = mls.commit(state_a, add=[mls.key_package_to_bytes(kp_b)], rng=rng)
    state_a, state_b = added.new_state, mls.join_from_welcome(bob, priv_b, added.welcomes[bob.credential])
    sent = []
    for text in (b"one", b"two", b"three"):
        message, state_b = mls.encrypt_application(state_b, text, rng=rng)
        sent.append(message)
    assert mls.skipped_generations(state_a) == frozenset()

    def read(state: mls.GroupState, message: bytes) -> mls.GroupState:
        received = mls.process_message(state, message)
        assert isinstance(received, mls.ApplicationReceived)
        return received.new_state

    state_a = read(read(state_a, sent[0]), sent[2])  # "two" left out: its key waits
    assert mls.skipped_generations(state_a) == frozenset({(1, 1, 1)})  # epoch 1, Bob's leaf 1, generation 1
    moved = mls.commit(state_a, rng=rng).new_state  # it stays named once its epoch is a past one
    assert mls.skipped_generations(moved) == frozenset({(1, 1, 1)})
    assert mls.skipped_generations(read(state_a, sent[1])) == frozenset()


def test_clients_sharing_one_credential_are_told_apart_by_signature_key() -> None:
    """An XMTP inbox's installations share a credential; each is its own leaf, named and removed by its key."""
    rng = seeded(7)
    alice = mls.new_identity("01" * 32, rng=rng)
    phone, laptop = (mls.new_identity("02" * 32, rng=rng) for _ in range(2))
    state = mls.create_group(alice, b"g" * 16, rng=rng)
    packages = [mls.create_key_package(client, rng=rng) for client in (phone, laptop)]
    added = mls.commit(state, add=[package for package, _ in packages], rng=rng)
    assert list(added.welcomes) == [phone.credential]  # by credential, the two clients are one entry
    assert set(added.welcomes_by_signature_key) == {phone.signature.public, laptop.signature.public}
    for client, (_, private) in zip((phone, laptop), packages, strict=True):
        joined = mls.join_from_welcome(client, private, added.welcomes_by_signature_key[client.signature.public])
        assert joined.epoch == added.new_state.epoch
    state = added.new_state
    keys = mls.member_signature_keys(state)
    assert sorted(keys.values()) == sorted([alice.signature.public, phone.signature.public, laptop.signature.public])
    laptop_leaf = mls.leaf_of_signature_key(state, laptop.signature.public)
    assert mls.member_credentials(state)[laptop_leaf] == laptop.credential == phone.credential

    removed = mls.commit(state, remove_leaves=[laptop_leaf], rng=rng)
    remaining = mls.member_signature_keys(removed.new_state)
    assert laptop.signature.public not in remaining.values() and phone.signature.public in remaining.values()
    with pytest.raises(mls.InvalidArgument, match="no member has signature key"):
        mls.leaf_of_signature_key(removed.new_state, laptop.signature.public)
    with pytest.raises(mls.InvalidArgument, match="holds no member"):
        mls.commit(removed.new_state, remove_leaves=[laptop_leaf], rng=rng)


def test_results_name_the_signature_keys_of_senders_and_of_clients_added_and_removed() -> None:
    rng = seeded(8)
    alice, bob = mls.new_identity("01" * 32, rng=rng), mls.new_identity("02" * 32, rng=rng)
    state_a = mls.create_group(alice, b"g" * 16, rng=rng)
    package, private = mls.create_key_package(bob, rng=rng)
    added = mls.commit(state_a, add=[package], rng=rng)
    state_b = mls.join_from_welcome(bob, private, added.welcomes[bob.credential])
    message, state_b = mls.encrypt_application(state_b, b"hi", rng=rng)
    received = mls.process_message(added.new_state, message)
    assert isinstance(received, mls.ApplicationReceived)
    assert received.sender_signature_key == bob.signature.public

    removal = mls.commit(state_b, remove=[alice.credential], rng=rng)
    applied = mls.process_message(received.new_state, removal.message)
    assert isinstance(applied, mls.CommitApplied)
    assert applied.removed_signature_keys == (alice.signature.public,) and applied.added_signature_keys == ()


def test_a_received_commit_names_who_proposed_what_and_the_extensions_it_sets() -> None:
    rng = seeded(9)
    alice, bob, carol = (mls.new_identity(f"{n:02x}" * 32, rng=rng) for n in (1, 2, 3))
    state_a = mls.create_group(alice, b"g" * 16, supported_extensions=[0xFF00], rng=rng)
    packages = [mls.create_key_package(client, supported_extensions=[0xFF00], rng=rng) for client in (bob, carol)]
    added = mls.commit(state_a, add=[package for package, _ in packages], rng=rng)
    state_b = mls.join_from_welcome(bob, packages[0][1], added.welcomes_by_signature_key[bob.signature.public])
    proposal, state_b = mls.propose(state_b, remove=carol.credential, rng=rng)
    state_a = mls.process_message(added.new_state, proposal).new_state
    by_reference = mls.commit(state_a, rng=rng)  # alice commits bob's proposal
    applied = mls.process_message(state_b, by_reference.message)
    assert isinstance(applied, mls.CommitApplied)
    assert applied.committer_signature_key == alice.signature.public
    assert applied.proposal_sender_keys == (bob.signature.public,)
    assert (applied.psk_proposals, applied.group_context_extensions) == (0, None)

    extensions = [Extension(0xFF00, b"named")]
    setting = mls.commit(by_reference.new_state, extensions=extensions, rng=rng)
    applied = mls.process_message(applied.new_state, setting.message)
    assert isinstance(applied, mls.CommitApplied)
    assert applied.proposal_sender_keys == (alice.signature.public,) and applied.committed_with_path
    assert applied.group_context_extensions == tuple(extensions)
