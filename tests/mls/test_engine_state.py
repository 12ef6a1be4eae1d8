"""State properties: snapshot round trips, purity, reproducibility, admins in the context."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from protocols import mls
from tests.strategies import operations

from ._group import Group, add_member, cred, expect, make_group

# Each operation picks its member (or held message) by an index taken modulo the candidates.
OPS = operations(
    dict.fromkeys(("send", "hold", "release", "update", "add", "remove", "propose"), st.integers(0, 9)), max_size=8
)


def _roundtrip_all(g: Group) -> None:
    for c, s in list(g.states.items()):
        data = mls.snapshot(s)
        restored = mls.restore(data)
        assert restored == s and mls.snapshot(restored) == data
        g.states[c] = restored


def _pick(g: Group, k: int) -> int:
    members = sorted(g.states)
    return int(members[k % len(members)], 16)


def _run(ops: Sequence[tuple[str, int]], roundtrip: bool) -> list[object]:
    """Simulate ``ops``; returns everything observable (messages, results, final snapshots)."""
    g = make_group(3, seed=42)
    out: list[object] = []
    held: list[tuple[int, bytes]] = []
    next_id = 10
    for op, k in ops:
        who = _pick(g, k)
        if op in ("send", "hold"):
            msg = g.send(who, f"{op}{k}".encode())
            if op == "hold":
                held.append((who, msg))
            else:
                out += [
                    (r.plaintext, r.generation)
                    for r in g.receive(msg, mls.ApplicationReceived, skip={cred(who)}).values()
                ]
        elif op == "release" and held:
            sender, msg = held.pop(k % len(held))
            for c, s in list(g.states.items()):
                if c == cred(sender):
                    continue
                try:
                    res = expect(mls.process_message(s, msg), mls.ApplicationReceived)
                    g.states[c] = res.new_state
                    out.append(res.plaintext)
                except mls.MlsError as exc:  # e.g. a held message of a dropped epoch
                    out.append(type(exc).__name__)
        elif op == "update":
            out.append(g.commit(who, self_update=True).message)
        elif op == "add" and len(g.states) < 5:
            out.append(add_member(g, 1, next_id).message)
            next_id += 1
        elif op == "remove" and who != 1 and len(g.states) > 2:
            out.append(g.commit(1, remove=[cred(who)]).message)
        elif op == "propose":
            msg, st_ = mls.propose(g.state(who), self_remove=True, rng=g.rng)
            g.set(who, st_)
            out += [r.proposal_ref for r in g.receive(msg, mls.ProposalReceived, skip={cred(who)}).values()]
        if roundtrip:
            _roundtrip_all(g)
    out += [mls.snapshot(s) for _, s in sorted(g.states.items())]
    return out


@settings(max_examples=25, deadline=None)
@given(OPS)
def test_restored_states_behave_identically(ops):
    assert _run(ops, roundtrip=False) == _run(ops, roundtrip=True)


def test_same_seed_same_bytes_different_seed_different_bytes():
    def scenario(seed):
        g = make_group(3, seed=seed)
        msgs = [g.send(2, b"x"), g.commit(1, self_update=True).message, g.commit(2, self_update=True).message]
        return msgs + [mls.snapshot(s) for _, s in sorted(g.states.items())]

    assert scenario(7) == scenario(7)
    assert all(a != b for a, b in zip(scenario(7), scenario(8), strict=False))


def test_operations_never_mutate_their_inputs():
    g = make_group(3)
    states = dict(g.states)
    before = {c: mls.snapshot(s) for c, s in states.items()}
    msg = g.send(2, b"x")
    res = mls.commit(states[cred(1)], self_update=True, remove=[cred(3)], rng=g.rng)
    mls.process_message(states[cred(1)], msg)
    mls.process_message(states[cred(3)], res.message)
    mls.propose(states[cred(3)], self_remove=True, rng=g.rng)
    mls.encrypt_application(states[cred(1)], b"y", rng=g.rng)
    after = {c: mls.snapshot(s) for c, s in states.items()}
    assert before[cred(1)] == after[cred(1)] and before[cred(3)] == after[cred(3)]


def test_snapshot_is_small_and_versioned():
    g = make_group(10)
    for i in range(1, 11):
        g.deliver(g.send(i, b"hi"), skip={cred(i)})
    snap = mls.snapshot(g.state(5))
    assert snap[:3] == b"\x00\x01\x06"  # format version 1, kind snapshot
    assert len(snap) < 6000


def test_admins_are_bound_into_the_key_schedule():
    g1 = make_group(2, seed=3)
    g2 = make_group(2, seed=3)
    a = g1.commit(1, admins=[cred(1), cred(2)])
    b = g2.commit(1, self_update=False)
    assert a.new_state.admins != b.new_state.admins
    assert a.new_state.group_context != b.new_state.group_context
