"""Engine scenarios: commits, authorization, proposals, forks and epoch windows."""

from __future__ import annotations

from typing import Any

import pytest

from protocols import mls
from protocols.mls.commit import create_commit

from ._group import Group, add_member, cred, expect, make_group, read, seeded


def _agree(g: Group) -> None:
    assert len({s.epoch_authenticator for s in g.states.values()}) == 1
    assert len({s.epoch for s in g.states.values()}) == 1


def test_remove_member():
    g = make_group(4)
    res = g.commit(1, remove=[cred(3)])
    assert cred(3) in g.gone and cred(3) not in g.states
    removed = g.gone[cred(3)]
    assert not removed.active and removed.epoch == 1
    _agree(g)
    assert all(s.epoch == 2 and cred(3) not in s.member_credentials() for s in g.states.values())
    msg = g.send(2, b"after removal")
    with pytest.raises(mls.NotAMember):
        mls.process_message(removed, msg)
    received = g.receive(msg, mls.ApplicationReceived, skip={cred(2)})
    assert all(r.plaintext == b"after removal" for r in received.values())
    with pytest.raises(mls.NotAMember):
        mls.encrypt_application(removed, b"x")
    assert mls.peek(res.message).epoch == 1


def test_removed_member_result_and_late_old_epoch_message():
    g = make_group(3)
    late = g.send(2, b"sent before the removal")
    res = mls.commit(g.state(1), remove=[cred(3)], rng=g.rng)
    applied = expect(mls.process_message(g.state(3), res.message), mls.CommitApplied)
    assert applied.we_were_removed and applied.removed == (cred(3),) and applied.new_epoch == 2
    # Its last epoch's keys are still there for messages of that epoch.
    assert read(applied.new_state, late) == b"sent before the removal"


def test_self_update_by_non_admin_is_accepted():
    g = make_group(3)
    old_leaf = g.state(2).roster[g.state(2).own_leaf]
    res = mls.commit(g.state(2), self_update=True, rng=g.rng)
    results = g.deliver(res.message, skip={cred(2)})
    g.set(2, res.new_state)
    for r in results.values():
        assert isinstance(r, mls.CommitApplied)
        assert (r.committer_credential, r.updated, r.added, r.removed) == (cred(2), (cred(2),), (), ())
    new_leaf = g.state(1).roster[g.state(2).own_leaf]
    assert old_leaf is not None and new_leaf is not None
    assert new_leaf.encryption_key != old_leaf.encryption_key
    assert new_leaf.signature_key != old_leaf.signature_key
    _agree(g)
    assert read(g.state(1), g.send(2, b"fresh keys")) == b"fresh keys"


@pytest.mark.parametrize("kwargs", [{"remove": [cred(1)]}, {"add": "kp"}, {"admins": [cred(2)]}, {}])
def test_non_admin_commit_refused_by_sender(kwargs):
    g = make_group(3)
    if kwargs.get("add") == "kp":
        kwargs = {"add": [mls.create_key_package(mls.new_identity(cred(9), rng=g.rng), rng=g.rng)[0]]}
    with pytest.raises(mls.UnauthorizedCommit):
        mls.commit(g.state(2), rng=g.rng, **kwargs)


@pytest.mark.parametrize("what", ["add", "remove", "admins", "empty", "add_with_update"])
def test_non_admin_commit_refused_by_receivers(what):
    g = make_group(3)
    kp = mls.create_key_package(mls.new_identity(cred(9), rng=g.rng), rng=g.rng)[0]
    kwargs_by_case: dict[str, dict[str, Any]] = {
        "add": {"add": [kp]},
        "remove": {"remove": [cred(3)]},
        "admins": {"admins": [cred(1), cred(2)]},
        "empty": {},
        "add_with_update": {"add": [kp], "self_update": True},
    }
    res = create_commit(g.state(2), rng=g.rng, enforce_authorization=False, **kwargs_by_case[what])
    for i in (1, 3):
        with pytest.raises(mls.UnauthorizedCommit):
            mls.process_message(g.state(i), res.message)


def test_admin_change_lets_new_admin_add():
    g = make_group(3)
    res = g.commit(1, admins=[cred(1), cred(2)])
    assert all(s.admins == {cred(1), cred(2)} for s in g.states.values())
    _agree(g)
    add_member(g, 2, 8)
    _agree(g)
    assert g.state(8).admins == {cred(1), cred(2)}
    assert res.welcomes == {}


def test_proposals_become_pending_and_admin_commits_them_by_ref():
    g = make_group(4)
    ident9 = mls.new_identity(cred(9), rng=g.rng)
    kp9, priv9 = mls.create_key_package(ident9, rng=g.rng)
    msg_add, st = mls.propose(g.state(3), add=kp9, rng=g.rng)
    g.set(3, st)
    results = g.receive(msg_add, mls.ProposalReceived, skip={cred(3)})
    ref_add = results[cred(1)].proposal_ref
    for r in results.values():
        assert isinstance(r, mls.ProposalReceived)
        assert (r.kind, r.proposer_credential, r.subject_credential) == ("add", cred(3), cred(9))
        assert r.proposal_ref == ref_add
    assert g.state(3).pending_proposals[0].ref == ref_add  # the proposer tracks it too

    msg_rm, st = mls.propose(g.state(2), remove=cred(4), rng=g.rng)
    g.set(2, st)
    ref_rm = g.receive(msg_rm, mls.ProposalReceived, skip={cred(2)})[cred(1)].proposal_ref
    msg_self, st = mls.propose(g.state(3), self_remove=True, rng=g.rng)
    g.set(3, st)
    r_self = g.receive(msg_self, mls.ProposalReceived, skip={cred(3)})[cred(1)]
    assert (r_self.kind, r_self.subject_credential) == ("self_remove", cred(3))
    assert [p.ref for p in g.state(1).pending_proposals] == [ref_add, ref_rm, r_self.proposal_ref]

    res = mls.commit(g.state(1), proposals_by_ref=[ref_add, ref_rm, r_self.proposal_ref], rng=g.rng)
    applied = g.receive(res.message, mls.CommitApplied, skip={cred(1)})
    g.set(1, res.new_state)
    assert applied[cred(2)].added == (cred(9),)
    assert set(applied[cred(2)].removed) == {cred(3), cred(4)}
    assert applied[cred(3)].we_were_removed and applied[cred(4)].we_were_removed
    joined = mls.join_from_welcome(ident9, priv9, res.welcomes[cred(9)])
    assert joined.epoch_authenticator == g.state(1).epoch_authenticator == g.state(2).epoch_authenticator
    assert not g.state(1).pending_proposals and not g.state(2).pending_proposals


def test_unknown_proposal_ref_and_bad_arguments():
    g = make_group(3)
    with pytest.raises(mls.InvalidArgument):
        mls.commit(g.state(1), proposals_by_ref=[b"\x00" * 32], rng=g.rng)
    with pytest.raises(mls.InvalidArgument):
        mls.commit(g.state(1), remove=[cred(42)], rng=g.rng)
    with pytest.raises(mls.InvalidArgument):
        mls.commit(g.state(1), remove=[cred(1)], rng=g.rng)  # a committer cannot remove itself
    with pytest.raises(mls.InvalidArgument):
        mls.commit(g.state(1), remove=cred(2), rng=g.rng)  # a bare string, not a list
    with pytest.raises(mls.InvalidArgument):
        mls.propose(g.state(1), rng=g.rng)
    existing = mls.create_key_package(g.identities[1], rng=g.rng)[0]
    with pytest.raises(mls.InvalidArgument):
        mls.commit(g.state(1), add=[existing], rng=g.rng)  # already a member


def test_competing_commits_fork_and_recovery_from_snapshot():
    g = make_group(3)
    base_snapshot = mls.snapshot(g.state(3))
    res_a = mls.commit(g.state(1), self_update=True, rng=g.rng)  # admin
    res_b = mls.commit(g.state(2), self_update=True, rng=g.rng)  # non-admin, same base epoch
    assert res_a.new_state.epoch == res_b.new_state.epoch == 2
    assert res_a.new_state.epoch_authenticator != res_b.new_state.epoch_authenticator
    assert mls.exporter_secret(res_a.new_state) != mls.exporter_secret(res_b.new_state)

    # Member 3 applies A's commit; B wrongly adopts its own and talks in its fork.
    on_a = mls.process_message(g.state(3), res_a.message).new_state
    loser_msg, _ = mls.encrypt_application(res_b.new_state, b"from the losing fork", rng=g.rng)
    with pytest.raises(mls.DecryptionFailed):
        mls.process_message(on_a, loser_msg)

    # Restoring the pre-commit snapshot lets member 3 apply the other commit instead.
    on_b = mls.process_message(mls.restore(base_snapshot), res_b.message).new_state
    assert on_b.epoch_authenticator == res_b.new_state.epoch_authenticator
    assert read(on_b, loser_msg) == b"from the losing fork"

    # B, holding its pending state, can still follow the winning commit A.
    b_on_a = mls.process_message(res_b.pending_state, res_a.message).new_state
    assert b_on_a.epoch_authenticator == on_a.epoch_authenticator


def test_own_commit_echo_returns_prepared_state():
    g = make_group(3)
    res = mls.commit(g.state(1), remove=[cred(3)], rng=g.rng)
    echo = mls.process_message(res.pending_state, res.message)
    assert isinstance(echo, mls.CommitApplied)
    assert echo.new_state == res.new_state
    assert (echo.committer_credential, echo.removed, echo.we_were_removed) == (cred(1), (cred(3),), False)
    # Without the pending commit (a plain state) our own commit is undecryptable for us.
    with pytest.raises(mls.CannotDecryptOwnMessage):
        mls.process_message(g.state(1), res.message)
    # And restore(snapshot()) keeps the pending commit.
    again = mls.restore(mls.snapshot(res.pending_state))
    assert mls.process_message(again, res.message).new_state == res.new_state


def test_late_message_of_previous_epoch_decrypts_after_commit():
    g = make_group(3)
    late = g.send(2, b"late")
    g.commit(1, self_update=True)
    res = expect(mls.process_message(g.state(3), late), mls.ApplicationReceived)
    assert (res.plaintext, res.epoch) == (b"late", 1)
    with pytest.raises(mls.KeyAlreadyUsed):
        mls.process_message(res.new_state, late)


def test_messages_older_than_retained_window_are_refused():
    g = make_group(2)
    late = g.send(2, b"old")
    for _ in range(6):  # default window keeps 5 past epochs
        g.commit(1, self_update=True)
    with pytest.raises(mls.WrongEpoch) as err:
        mls.process_message(g.state(1), late)
    assert (err.value.message_epoch, err.value.state_epoch) == (1, 7)
    assert len(g.state(1).past_epochs) == 5


def test_future_epoch_message_raises_wrong_epoch():
    g = make_group(3)
    behind = g.state(3)
    g.commit(1, self_update=True)
    msg = g.send(2, b"from the future")
    with pytest.raises(mls.WrongEpoch) as err:
        mls.process_message(behind, msg)
    assert (err.value.message_epoch, err.value.state_epoch) == (2, 1)


def test_handshake_from_past_epoch_is_wrong_epoch():
    g = make_group(3)
    proposal, _ = mls.propose(g.state(2), self_remove=True, rng=g.rng)
    g.commit(1, self_update=True)
    with pytest.raises(mls.WrongEpoch):
        mls.process_message(g.state(3), proposal)


def test_bad_key_package_signature_is_refused():
    g = make_group(2)
    kp, _ = mls.create_key_package(mls.new_identity(cred(9), rng=g.rng), rng=g.rng)
    data = bytearray(mls.key_package_to_bytes(kp))
    data[-1] ^= 1
    with pytest.raises(mls.InvalidSignature):
        mls.key_package_from_bytes(bytes(data))
    forged = mls.key_package_from_bytes(bytes(data), verify=False)
    with pytest.raises(mls.InvalidSignature):
        mls.commit(g.state(1), add=[forged], rng=g.rng)
    with pytest.raises(mls.InvalidSignature):
        mls.propose(g.state(1), add=forged, rng=g.rng)


def test_welcome_for_other_key_package_is_refused():
    g = make_group(1)
    ident = mls.new_identity(cred(5), rng=g.rng)
    kp, _ = mls.create_key_package(ident, rng=g.rng)
    _, other_priv = mls.create_key_package(ident, rng=g.rng)
    res = mls.commit(g.state(1), add=[kp], rng=g.rng)
    with pytest.raises(mls.InvalidMessage):
        mls.join_from_welcome(ident, other_priv, res.welcomes[cred(5)])


def test_serialization_round_trips():
    rng = seeded(11)
    ident = mls.new_identity(cred(5).upper(), rng=rng)
    assert ident.credential == cred(5)
    assert mls.identity_from_bytes(mls.identity_to_bytes(ident)) == ident
    kp, priv = mls.create_key_package(ident, rng=rng)
    assert mls.key_package_from_bytes(mls.key_package_to_bytes(kp)) == kp
    assert mls.key_package_private_from_bytes(mls.key_package_private_to_bytes(priv)) == priv
    with pytest.raises(mls.InvalidSnapshot):
        mls.identity_from_bytes(mls.key_package_to_bytes(kp))
    with pytest.raises(mls.InvalidArgument):
        mls.new_identity("not-a-key")


def test_admin_commit_with_update_remove_and_add_at_once():
    g = make_group(4)
    old_leaf = g.state(1).roster[0]
    assert old_leaf is not None
    old_sig = old_leaf.signature_key
    ident = mls.new_identity(cred(6), rng=g.rng)
    kp, priv = mls.create_key_package(ident, rng=g.rng)
    res = g.commit(1, add=[kp], remove=[cred(2), cred(4)], self_update=True)
    g.states[cred(6)] = mls.join_from_welcome(ident, priv, res.welcomes[cred(6)])
    assert set(g.gone) == {cred(2), cred(4)}
    _agree(g)
    assert g.state(6).own_leaf == 1 and len(g.state(1).roster) == 3
    new_leaf = g.state(6).roster[0]
    assert new_leaf is not None and new_leaf.signature_key != old_sig  # the welcome is signed with the new key
    results = g.receive(g.send(6, b"joined mid-update"), mls.ApplicationReceived, skip={cred(6)})
    assert [r.plaintext for r in results.values()] == [b"joined mid-update"] * 2


def test_ratchet_generation_space_is_bounded(monkeypatch):
    from protocols.mls import secret_tree

    monkeypatch.setattr(secret_tree, "MAX_GENERATION", 1)
    g = make_group(2)
    g.send(1, b"a")
    g.send(1, b"b")
    with pytest.raises(mls.RatchetExhausted):
        g.send(1, b"c")


def test_retention_window_can_be_disabled():
    rng = seeded(21)
    alice, bob = mls.new_identity(cred(1), rng=rng), mls.new_identity(cred(2), rng=rng)
    state = mls.create_group(alice, b"strict", max_past_epochs=0, rng=rng)
    kp, priv = mls.create_key_package(bob, rng=rng)
    res = mls.commit(state, add=[kp], rng=rng)
    a, b = res.new_state, mls.join_from_welcome(bob, priv, res.welcomes[cred(2)], max_past_epochs=0)
    late, a = mls.encrypt_application(a, b"late", rng=rng)
    b = mls.process_message(b, mls.commit(a, self_update=True, rng=rng).message).new_state
    assert b.past_epochs == ()
    with pytest.raises(mls.WrongEpoch):
        mls.process_message(b, late)
    with pytest.raises(mls.InvalidArgument):
        mls.create_group(alice, b"x", max_past_epochs=300)
