"""A group state stored as its epoch part and its ratchets: the two restore to the state, the epoch part holds
no ratchet secret, and a message changes the ratchets alone."""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries import mls
from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import InvalidSnapshot
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import commit
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.results import ApplicationMessage
from protocols.libraries.mls.group.snapshot import snapshot
from protocols.libraries.mls.group.snapshot_split import RATCHETS_MAGIC
from protocols.libraries.mls.group.state import GroupState
from protocols.libraries.mls.schedule import GenerationReused, SecretTree
from tests.mls.tree._members import seeded_rng

from ._clients import NOW, client
from ._snapshots import assert_continues_identically, late_messages, life

CS = suite(1)
LIFE = life(CS.id)


def stored_apart(state: GroupState) -> tuple[bytes, bytes]:
    return mls.epoch_part(state), mls.ratchets_bytes(mls.ratchets_of(state))


def ratchet_secrets(state: GroupState) -> list[bytes]:
    """Every secret a message could still consume, in every secret tree of ``state``."""
    trees: list[SecretTree] = [state.view.secret_tree, *(epoch.view.secret_tree for epoch in state.past)]
    found = [secret for tree in trees for secret in tree.frontier.values()]
    for tree in trees:
        for ratchet in tree.ratchets.values():
            found += [ratchet.secret, *(key.key for key in ratchet.kept.values())]
    return [secret for secret in found if secret]


@pytest.mark.parametrize("moment", list(LIFE))
def test_the_two_parts_restore_the_state_at_every_moment(moment: str) -> None:
    state = LIFE[moment]
    restored = mls.restore_parts(*stored_apart(state))
    assert snapshot(restored) == snapshot(state)
    assert_continues_identically(restored, state)


@pytest.mark.parametrize("moment", list(LIFE))
def test_the_epoch_part_holds_no_ratchet_secret(moment: str) -> None:
    state = LIFE[moment]
    epoch_part = mls.epoch_part(state)
    secrets = ratchet_secrets(state)
    assert secrets, "every moment of the life has ratchets left"
    assert not any(secret in epoch_part for secret in secrets)
    assert mls.holds_no_ratchets(mls.restore(epoch_part)) and not mls.holds_no_ratchets(state)


def test_a_message_moves_the_ratchets_alone_and_a_commit_moves_the_epoch() -> None:
    late = late_messages(CS)
    base = mls.without_ratchets(late.state)
    loaded = mls.with_ratchets(base, mls.ratchets_of(late.state))  # what a store hands the engine
    read = process(loaded, late.messages[0])
    assert isinstance(read, ApplicationMessage)
    assert mls.only_ratchets_differ(base, read.new_state)
    # The epoch part stored before the message, with the ratchets after it, is the state after it.
    after = mls.restore_parts(mls.epoch_part(late.state), mls.ratchets_bytes(mls.ratchets_of(read.new_state)))
    assert snapshot(after) == snapshot(read.new_state)
    # Our own commit, made from the state the message left: merged, it starts a new epoch.
    sent = commit(read.new_state, (), force_path=True, now=NOW, rng=seeded_rng(b"next epoch"))
    assert not mls.only_ratchets_differ(base, sent.pending_state)  # the pending commit is part of the epoch
    merged = process(sent.pending_state, sent.message).new_state
    assert merged.epoch == late.state.epoch + 1 and not mls.only_ratchets_differ(base, merged)


def test_a_changed_part_of_the_epoch_is_seen() -> None:
    state = LIFE[next(iter(LIFE))]
    base = mls.without_ratchets(state)
    assert mls.only_ratchets_differ(base, state)
    for change in (
        {"interim_transcript_hash": b"\x00" * len(state.interim_transcript_hash)},
        {"active": not state.active},
        {"view": attrs.evolve(state.view, membership_key=b"\x01" * len(state.view.membership_key))},
        {"past": ()} if state.past else {"proposals": ((),)},
    ):
        assert not mls.only_ratchets_differ(base, attrs.evolve(state, **change)), change


def test_parts_of_different_states_do_not_fit() -> None:
    states = [s for s in LIFE.values() if s.past]
    few = min(states, key=lambda s: len(s.past))
    many = max(states, key=lambda s: len(s.past))
    assert len(few.past) != len(many.past)
    with pytest.raises(InvalidSnapshot, match="not stored together"):
        mls.restore_parts(mls.epoch_part(few), mls.ratchets_bytes(mls.ratchets_of(many)))
    wider = next(s for s in LIFE.values() if s.view.secret_tree.n_leaves != few.view.secret_tree.n_leaves)
    shaped = mls.Ratchets(wider.view.secret_tree, tuple(e.view.secret_tree for e in few.past))
    with pytest.raises(InvalidSnapshot, match="not stored together"):
        mls.restore_parts(mls.epoch_part(few), mls.ratchets_bytes(shaped))


@pytest.mark.parametrize(
    ("data", "refusal"),
    [
        (b"TSMLS\x00\x02", "do not start with"),
        (RATCHETS_MAGIC + b"\x00\x01\x00", "malformed group ratchets"),
        (b"", "do not start with"),
    ],
)
def test_what_is_not_ratchets_is_refused(data: bytes, refusal: str) -> None:
    state = LIFE[next(iter(LIFE))]
    with pytest.raises(InvalidSnapshot, match=refusal):
        mls.read_ratchets(data, state)


def test_a_newer_ratchets_format_is_refused() -> None:
    state = LIFE[next(iter(LIFE))]
    stored = mls.ratchets_bytes(mls.ratchets_of(state))
    newer = stored[:5] + (2).to_bytes(2, "big") + stored[7:]
    with pytest.raises(InvalidSnapshot, match="format 2"):
        mls.read_ratchets(newer, state)


def test_messages_read_while_our_commit_is_pending_stay_read_once_it_is_merged() -> None:
    """Our pending commit carries our state in the epoch it begins, which keeps the current epoch for late
    messages; the keys we consume while it is in flight must not come back when it is merged (a replay, and
    secrets left on disk in the stored commit)."""
    cs = suite(1)
    alice_client, bob = client(cs, b"alice"), client(cs, b"bob")
    alice = create_group(cs, b"pending", m.BasicCredential(b"alice"), alice_client.signature, rng=seeded_rng(b"g"))
    out = commit(alice, [m.Add(bob.key_package)], now=NOW, rng=seeded_rng(b"add"))
    alice = process(out.pending_state, out.message).new_state
    assert out.welcome is not None
    bob_state = join_from_welcome(out.welcome, bob.key_package, bob.secrets)
    message, bob_state = encrypt_application(bob_state, b"while in flight", rng=seeded_rng(b"m"))

    pending = commit(alice, (), force_path=True, now=NOW, rng=seeded_rng(b"update"))
    read = process(pending.pending_state, message)
    assert isinstance(read, ApplicationMessage) and read.data == b"while in flight"
    consumed = set(ratchet_secrets(pending.pending_state)) - set(ratchet_secrets(read.new_state))
    assert consumed
    for stored in (snapshot(read.new_state), *stored_apart(read.new_state)):
        assert not any(secret in stored for secret in consumed)
    merged = process(read.new_state, pending.message).new_state

    with pytest.raises(GenerationReused):
        process(merged, message)
    with pytest.raises(GenerationReused):
        process(mls.restore_parts(*stored_apart(merged)), message)
