"""Group states at many points of a group's life, and the checks that a restored state is the state snapshotted."""

from __future__ import annotations

import functools

import attrs

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import commit, group_info_extensions
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.group_info import sign_group_info
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.proposals import propose_external_psk, propose_update, with_external_psk
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage
from protocols.libraries.mls.group.snapshot import restore, snapshot
from protocols.libraries.mls.group.snapshot_tree import RECENT_TREES
from protocols.libraries.mls.group.snapshot_write import without_past_ratchets
from protocols.libraries.mls.group.state import GroupConfig, GroupState
from protocols.libraries.mls.protection import EpochView
from protocols.libraries.mls.schedule import RatchetWindow
from tests.mls.tree._members import seeded_rng

from ._clients import NOW, client

# --- comparing states ----------------------------------------------------------------------------

_COMPARED = (
    "suite",
    "context",
    "tree",
    "private",
    "signature_private",
    "keys",
    "interim_transcript_hash",
    "proposals",
    "resumption_psks",
    "external_psks",
    "update_keys",
    "active",
    "config",
)


def assert_same_view(got: EpochView, want: EpochView) -> None:
    """Two views protect and unprotect alike: same secrets, same secret tree, same signature key of every leaf."""
    for name in ("suite", "group_context", "own_leaf", "membership_key", "sender_data_secret", "secret_tree"):
        assert getattr(got, name) == getattr(want, name), name
    leaves = range(-1, want.secret_tree.n_leaves + 1)
    assert [got.signature_keys(leaf) for leaf in leaves] == [want.signature_keys(leaf) for leaf in leaves]


def assert_same_state(got: GroupState, want: GroupState) -> None:
    """``got`` holds everything ``want`` holds (views compared by what they answer, not by identity)."""
    for name in _COMPARED:
        assert getattr(got, name) == getattr(want, name), name
    assert_same_view(got.view, want.view)
    assert len(got.past) == len(want.past)
    for got_past, want_past in zip(got.past, want.past, strict=True):
        assert (got_past.exporter_secret, got_past.members) == (want_past.exporter_secret, want_past.members)
        assert_same_view(got_past.view, want_past.view)
    if want.pending_commit is None:
        assert got.pending_commit is None
    else:
        assert got.pending_commit is not None
        assert got.pending_commit.message_hash == want.pending_commit.message_hash
        assert got.pending_commit.summary == want.pending_commit.summary
        # The epochs before the commit are stored without their ratchets: merging it takes ours then.
        assert_same_state(got.pending_commit.new_state, without_past_ratchets(want.pending_commit.new_state))


def round_trip(state: GroupState) -> GroupState:
    """``state`` snapshotted and restored, with the tree memory warm and cold; both must equal ``state``."""
    data = snapshot(state)
    warm = restore(data)
    RECENT_TREES.clear()
    cold = restore(data)
    for restored in (warm, cold):
        assert snapshot(restored) == data
        assert_same_state(restored, state)
    return cold


def assert_continues_identically(restored: GroupState, original: GroupState) -> None:
    """With the same randomness, both states send the same bytes and reach the same next epoch."""
    assert restored.exporter(b"probe", b"", 32) == original.exporter(b"probe", b"", 32)
    if not original.active:
        return
    sent = [encrypt_application(s, b"probe", rng=seeded_rng(b"probe"))[0] for s in (restored, original)]
    assert sent[0] == sent[1]
    outcomes = [
        commit(s, by_reference=(), force_path=True, rng=seeded_rng(b"probe commit")) for s in (restored, original)
    ]
    assert outcomes[0].message == outcomes[1].message
    assert outcomes[0].new_state.epoch_authenticator == outcomes[1].new_state.epoch_authenticator


# --- a group's life ------------------------------------------------------------------------------


@attrs.frozen
class Late:
    """A state and messages it has not processed yet, some of them of an earlier epoch."""

    state: GroupState
    messages: tuple[bytes, ...]


def processed(state: GroupState, message: bytes) -> GroupState:
    """``state`` after processing ``message``."""
    return process(state, message).new_state


def own_commit_back(pending: GroupState, message: bytes) -> GroupState:
    """Our pending state after our own commit came back."""
    result = process(pending, message)
    assert isinstance(result, CommitMessage) and result.own
    return result.new_state


@functools.cache
def life(suite_id: int) -> dict[str, GroupState]:
    """States of alice, bob, carol and dave at every kind of moment of a group's life, by what the moment is."""
    cs = suite(suite_id)
    at: dict[str, GroupState] = {}
    alice_client, bob, carol = client(cs, b"alice"), client(cs, b"bob"), client(cs, b"carol")
    alice = create_group(cs, b"life", m.BasicCredential(b"alice"), alice_client.signature, rng=seeded_rng(b"create"))
    at["alice after create"] = alice
    out = commit(alice, [m.Add(bob.key_package)], now=NOW, rng=seeded_rng(b"add bob"))
    at["alice with a pending commit (add, no path)"] = out.pending_state
    alice = own_commit_back(out.pending_state, out.message)
    at["alice after her commit without path"] = alice
    assert out.welcome is not None
    bob_state = join_from_welcome(out.welcome, bob.key_package, bob.secrets)
    at["bob after join"] = bob_state

    sent = []
    for text in (b"one", b"two", b"three"):
        message, alice = encrypt_application(alice, text, rng=seeded_rng(text))
        sent.append(message)
    at["alice after sending"] = alice
    bob_state = processed(bob_state, sent[2])
    at["bob holding keys of skipped messages"] = bob_state
    bob_state = processed(bob_state, sent[0])
    at["bob after a message out of order"] = bob_state

    out = commit(bob_state, [m.Add(carol.key_package)], force_path=True, now=NOW, rng=seeded_rng(b"add carol"))
    bob_state = out.new_state
    at["bob after his commit with path"] = bob_state
    alice = processed(alice, out.message)
    at["alice after a commit with path"] = alice
    assert out.welcome is not None
    carol_state = join_from_welcome(out.welcome, carol.key_package, carol.secrets)
    at["carol after join"] = carol_state
    bob_state = processed(bob_state, sent[1])
    at["bob after a late message of an earlier epoch"] = bob_state

    update = propose_update(carol_state, rng=seeded_rng(b"carol update"))
    carol_state = update.new_state
    at["carol with a pending update"] = carol_state
    alice, bob_state = processed(alice, update.message), processed(bob_state, update.message)
    at["alice with a pending proposal"] = alice
    psk_id, psk = b"shared psk", b"s" * cs.nh
    alice, bob_state, carol_state = (with_external_psk(s, psk_id, psk) for s in (alice, bob_state, carol_state))
    proposal = propose_external_psk(alice, psk_id, rng=seeded_rng(b"psk"))
    alice = proposal.new_state
    at["alice holding an external PSK and two pending proposals"] = alice
    bob_state, carol_state = processed(bob_state, proposal.message), processed(carol_state, proposal.message)

    out = commit(alice, rng=seeded_rng(b"commit pending"))
    at["alice with a pending commit (update and PSK, path)"] = out.pending_state
    alice = own_commit_back(out.pending_state, out.message)
    bob_state, carol_state = processed(bob_state, out.message), processed(carol_state, out.message)
    at["carol after her update was committed"] = carol_state

    out = commit(alice, [m.Remove(bob_state.own_leaf)], rng=seeded_rng(b"remove bob"))
    alice = out.new_state
    removed = process(bob_state, out.message)
    assert isinstance(removed, CommitMessage) and removed.we_were_removed
    at["bob removed (inactive)"] = removed.new_state
    carol_state = processed(carol_state, out.message)
    at["carol after bob's removal"] = carol_state

    info = sign_group_info(
        cs,
        alice.context,
        group_info_extensions(alice),
        alice.keys.confirmation_tag,
        alice.own_leaf,
        alice.signature_private,
    )
    dave = client(cs, b"dave")
    joined = join_by_external_commit(info, m.BasicCredential(b"dave"), dave.signature, rng=seeded_rng(b"dave"))
    at["dave after an external join"] = joined.new_state
    at["alice after an external commit"] = processed(alice, joined.message)
    at["carol after an external commit"] = processed(carol_state, joined.message)
    return at


def late_messages(cs: CipherSuite) -> Late:
    """Bob before he processed three messages of alice's, two of them from the epoch before his state's."""
    alice_client, bob = client(cs, b"alice"), client(cs, b"bob")
    alice = create_group(cs, b"late", m.BasicCredential(b"alice"), alice_client.signature, rng=seeded_rng(b"late"))
    out = commit(alice, [m.Add(bob.key_package)], now=NOW, rng=seeded_rng(b"late add"))
    alice = out.new_state
    assert out.welcome is not None
    bob_state = join_from_welcome(out.welcome, bob.key_package, bob.secrets)
    first, alice = encrypt_application(alice, b"first", rng=seeded_rng(b"first"))
    second, alice = encrypt_application(alice, b"second", rng=seeded_rng(b"second"))
    bob_state = processed(bob_state, encrypt_application(alice, b"third", rng=seeded_rng(b"third"))[0])
    out = commit(alice, force_path=True, rng=seeded_rng(b"late commit"))
    bob_state = processed(bob_state, out.message)
    fourth, _ = encrypt_application(out.new_state, b"fourth", rng=seeded_rng(b"fourth"))
    return Late(bob_state, (second, fourth, first))


def configured_group(cs: CipherSuite) -> tuple[GroupState, GroupState]:
    """Alice and bob of a group whose members chose every local option away from its default."""
    config = GroupConfig(
        max_past_epochs=2,
        window=RatchetWindow(out_of_order_tolerance=3, maximum_forward_distance=10),
        private_handshakes=False,
        padding=32,
        ratchet_tree_in_welcome=False,
        external_pub_in_group_info=False,
    )
    alice_client, bob = client(cs, b"alice"), client(cs, b"bob")
    alice = create_group(
        cs, b"configured", m.BasicCredential(b"alice"), alice_client.signature, config=config, rng=seeded_rng(b"cfg")
    )
    out = commit(alice, [m.Add(bob.key_package)], now=NOW, rng=seeded_rng(b"cfg add"))
    assert out.welcome is not None
    bob_state = join_from_welcome(
        out.welcome, bob.key_package, bob.secrets, ratchet_tree=out.new_state.tree.to_message(), config=config
    )
    alice = out.new_state
    for epoch in range(3):
        out = commit(alice, force_path=True, rng=seeded_rng(b"cfg %d" % epoch))
        alice, bob_state = out.new_state, processed(bob_state, out.message)
    return alice, bob_state


def outcome_of(state: GroupState, message: bytes) -> tuple[str, object]:
    """What processing ``message`` gives (kind and content, or the error's type), and comparable bytes of the state."""
    try:
        result = process(state, message)
    except MlsError as error:
        return type(error).__name__, None
    data = result.data if isinstance(result, ApplicationMessage) else None
    return type(result).__name__, (data, snapshot(result.new_state))
