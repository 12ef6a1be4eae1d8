"""Tampering with any byte of any message is refused with an MlsError subclass."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols import mls

from ._group import cred, expect, make_group, read


def _messages():
    """One message of every kind, plus the states that should accept them."""
    g = make_group(3)
    app = g.send(2, b"application payload")
    proposal, _ = mls.propose(g.state(2), self_remove=True, rng=g.rng)
    ident = mls.new_identity(cred(9), rng=g.rng)
    kp, priv = mls.create_key_package(ident, rng=g.rng)
    res = mls.commit(g.state(1), add=[kp], remove=[cred(3)], rng=g.rng)
    return g, app, proposal, res, ident, priv


G, APP, PROPOSAL, COMMIT, IDENT9, PRIV9 = _messages()


def _variants(data: bytes):
    """Every single-byte flip (two ways), plus truncations and an extension."""
    for i in range(len(data)):
        for mask in (0x01, 0x80):
            yield data[:i] + bytes([data[i] ^ mask]) + data[i + 1 :]
    for cut in range(0, len(data), 7):
        yield data[:cut]
    yield data + b"\x00"


def _assert_all_refused(data: bytes, process) -> int:
    count = 0
    for variant in _variants(data):
        with pytest.raises(mls.MlsError):
            process(variant)
        count += 1
    return count


def test_tampered_application_messages():
    assert read(G.state(1), APP) == b"application payload"
    assert _assert_all_refused(APP, lambda m: mls.process_message(G.state(1), m)) > 2 * len(APP)


def test_tampered_proposals():
    assert expect(mls.process_message(G.state(1), PROPOSAL), mls.ProposalReceived).kind == "self_remove"
    _assert_all_refused(PROPOSAL, lambda m: mls.process_message(G.state(1), m))


def test_tampered_commits():
    assert expect(mls.process_message(G.state(2), COMMIT.message), mls.CommitApplied).new_epoch == 2
    _assert_all_refused(COMMIT.message, lambda m: mls.process_message(G.state(2), m))


def test_tampered_welcomes():
    welcome = COMMIT.welcomes[cred(9)]
    assert mls.join_from_welcome(IDENT9, PRIV9, welcome).epoch == 2
    _assert_all_refused(welcome, lambda w: mls.join_from_welcome(IDENT9, PRIV9, w))


def test_tampered_key_packages():
    kp, _ = mls.create_key_package(IDENT9, rng=G.rng)
    _assert_all_refused(mls.key_package_to_bytes(kp), mls.key_package_from_bytes)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_garbage_is_refused_everywhere(data):
    for fn in (
        lambda d: mls.process_message(G.state(1), d),
        mls.peek,
        lambda d: mls.join_from_welcome(IDENT9, PRIV9, d),
        mls.key_package_from_bytes,
        mls.identity_from_bytes,
        mls.restore,
    ):
        with pytest.raises(mls.MlsError):
            fn(data)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_snapshot_mutations_are_refused_or_canonical(data):
    snap = mls.snapshot(G.state(1))
    i = data.draw(st.integers(0, len(snap) - 1))
    value = data.draw(st.integers(0, 255))
    mutated = snap[:i] + bytes([value]) + snap[i + 1 :]
    try:
        state = mls.restore(mutated)
    except mls.InvalidSnapshot:
        return
    assert mls.snapshot(state) == mutated  # whatever decodes re-encodes to the same bytes


def test_snapshot_truncations_are_refused():
    snap = mls.snapshot(G.state(1))
    for cut in range(len(snap)):
        with pytest.raises(mls.InvalidSnapshot):
            mls.restore(snap[:cut])
