"""Loose performance guards (generous bounds; they catch algorithmic regressions,
such as re-deriving the secret tree per message, not machine jitter)."""

from __future__ import annotations

import time

import protocols.mls as mls

from ._group import cred, make_group


def test_application_decrypt_is_incremental():
    g = make_group(10)
    msgs = [g.send(3, b"x" * 200) for _ in range(300)]
    state = g.state(7)
    start = time.perf_counter()
    for m in msgs:
        state = mls.process_message(state, m).new_state
    per_message = (time.perf_counter() - start) / len(msgs)
    assert per_message < 0.003  # measured ~0.15 ms; bound 3 ms
    assert len(mls.snapshot(state)) < 4000


def test_commit_cost_for_ten_members():
    g = make_group(10)
    start = time.perf_counter()
    res = mls.commit(g.state(1), self_update=True, rng=g.rng)
    mls.process_message(g.state(5), res.message)
    assert time.perf_counter() - start < 0.1  # measured ~3 ms
    assert cred(1) in res.new_state.member_credentials()
