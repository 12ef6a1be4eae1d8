"""Engine scenarios: creation, welcome/join, application messages, forward secrecy."""

from __future__ import annotations

import pytest

from protocols import mls
from protocols.mls import secret_tree

from ._group import add_member, cred, expect, make_group, read, seeded


def test_members_agree_after_welcome():
    g = make_group(4)
    states = list(g.states.values())
    assert {s.epoch for s in states} == {1}
    assert len({s.epoch_authenticator for s in states}) == 1
    assert len({mls.exporter_secret(s) for s in states}) == 1
    assert len({s.group_context for s in states}) == 1
    assert sorted(s.own_leaf for s in states) == [0, 1, 2, 3]
    assert all(s.admins == {cred(1)} for s in states)


def test_application_message_decrypts_for_every_other_member():
    g = make_group(5)
    for sender in range(1, 6):
        text = f"hello from {sender}".encode()
        results = g.deliver(g.send(sender, text), skip={cred(sender)})
        assert len(results) == 4
        for res in results.values():
            assert isinstance(res, mls.ApplicationReceived)
            assert (res.plaintext, res.sender_credential, res.epoch) == (text, cred(sender), 1)


def test_own_message_cannot_be_decrypted():
    g = make_group(3)
    msg = g.send(2, b"mine")
    with pytest.raises(mls.CannotDecryptOwnMessage):
        mls.process_message(g.state(2), msg)


def test_replay_raises_key_already_used_and_key_is_deleted():
    g = make_group(3)
    msg = g.send(2, b"once")
    before = g.state(1)
    res = mls.process_message(before, msg)
    leaf = g.state(2).own_leaf
    ratchet = res.new_state.tree.ratchets[leaf][secret_tree.APPLICATION]
    assert ratchet.generation == 1 and 0 not in ratchet.skipped  # the generation-0 key is gone
    with pytest.raises(mls.KeyAlreadyUsed):
        mls.process_message(res.new_state, msg)
    # The input state was not mutated: it can still decrypt the message once.
    assert read(before, msg) == b"once"


def test_out_of_order_generations_within_window():
    g = make_group(3)
    msgs = [g.send(2, f"m{i}".encode()) for i in range(6)]
    state = g.state(1)
    order = [5, 0, 3, 1, 4, 2]
    for i in order:
        res = expect(mls.process_message(state, msgs[i]), mls.ApplicationReceived)
        assert (res.plaintext, res.generation) == (f"m{i}".encode(), i)
        state = res.new_state
        with pytest.raises(mls.KeyAlreadyUsed):
            mls.process_message(state, msgs[i])
    ratchet = state.tree.ratchets[g.state(2).own_leaf][secret_tree.APPLICATION]
    assert ratchet.generation == 6 and dict(ratchet.skipped) == {}


def test_generation_too_far_ahead_is_refused(monkeypatch):
    monkeypatch.setattr(secret_tree, "MAX_FORWARD_GAP", 3)
    g = make_group(2)
    msgs = [g.send(2, b"x") for _ in range(5)]
    with pytest.raises(mls.DecryptionFailed):
        mls.process_message(g.state(1), msgs[4])
    assert expect(mls.process_message(g.state(1), msgs[3]), mls.ApplicationReceived).generation == 3


def test_skipped_keys_are_bounded(monkeypatch):
    monkeypatch.setattr(secret_tree, "MAX_SKIPPED_KEYS", 4)
    g = make_group(2)
    msgs = [g.send(2, b"x") for _ in range(10)]
    res = mls.process_message(g.state(1), msgs[9])
    ratchet = res.new_state.tree.ratchets[1][secret_tree.APPLICATION]
    assert sorted(ratchet.skipped) == [5, 6, 7, 8]
    with pytest.raises(mls.KeyAlreadyUsed):  # evicted: oldest skipped keys are dropped first
        mls.process_message(res.new_state, msgs[0])
    assert read(res.new_state, msgs[6]) == b"x"


def test_message_for_wrong_group_is_invalid():
    a = make_group(2, seed=1)
    msg = a.send(2, b"x")
    other = mls.create_group(mls.new_identity(cred(9), rng=seeded(3)), b"other-group", rng=seeded(3))
    with pytest.raises(mls.InvalidMessage):
        mls.process_message(other, msg)


def test_peek_reads_cleartext_header():
    g = make_group(2)
    header = mls.peek(g.send(1, b"x"))
    assert header == mls.MessageHeader(b"test-group", 1, "application")
    res = mls.commit(g.state(1), self_update=True, rng=g.rng)
    assert mls.peek(res.message) == mls.MessageHeader(b"test-group", 1, "commit")
    msg, _ = mls.propose(g.state(2), self_remove=True, rng=g.rng)
    assert mls.peek(msg).content_type == "proposal"
    with pytest.raises(mls.InvalidMessage):
        mls.peek(res.welcomes.get("x", b"\x00\x01\x02"))


def test_exporter_secret_current_and_retained_epochs():
    g = make_group(3)
    e1 = mls.exporter_secret(g.state(1))
    assert mls.exporter_secret(g.state(1), "marmot", b"group-event", 32) == e1
    assert mls.exporter_secret(g.state(1), "other") != e1
    assert len(mls.exporter_secret(g.state(1), length=64)) == 64
    g.commit(1, self_update=True)
    for st in g.states.values():
        assert mls.exporter_secret(st, epoch=1) == e1
        assert mls.exporter_secret(st) != e1
    with pytest.raises(mls.WrongEpoch):
        mls.exporter_secret(g.state(2), epoch=0)  # joiners started at epoch 1


def test_creator_retains_epoch_zero_exporter():
    g = make_group(2)
    # The creator moved 0 -> 1 by committing; joiners started at 1.
    assert g.state(1).past_epochs[0].epoch == 0
    mls.exporter_secret(g.state(1), epoch=0)
    with pytest.raises(mls.WrongEpoch):
        mls.exporter_secret(g.state(2), epoch=0)


def test_add_member_later_and_leftmost_blank_reuse():
    g = make_group(4)
    g.commit(1, remove=[cred(2)])
    assert g.state(1).roster[1] is None
    add_member(g, 1, 7)
    assert g.state(7).own_leaf == 1  # the blank left by member 2
    assert len({s.epoch_authenticator for s in g.states.values()}) == 1
    results = g.receive(g.send(7, b"new here"), mls.ApplicationReceived, skip={cred(7)})
    assert all(r.plaintext == b"new here" for r in results.values())


def test_engine_object_implements_interface():
    assert isinstance(mls.ENGINE, mls.GroupEngine)
    assert isinstance(mls.FlatTreeEngine(), mls.GroupEngine)
    rng = seeded(5)
    ident = mls.ENGINE.new_identity(cred(1), rng=rng)
    state = mls.ENGINE.create_group(ident, b"g", rng=rng)
    assert mls.ENGINE.restore(mls.ENGINE.snapshot(state)) == state
