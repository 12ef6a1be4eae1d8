"""Helpers that build small groups with a seeded rng for the engine tests."""

from __future__ import annotations

import random
from collections.abc import Collection
from typing import Any, TypeVar

import attrs

from protocols import mls
from protocols.mls.suite import Rng

Received = TypeVar("Received", mls.ApplicationReceived, mls.CommitApplied, mls.ProposalReceived)


def seeded(seed: int = 1) -> Rng:
    """A reproducible ``rng(n) -> bytes``."""
    return random.Random(seed).randbytes


def cred(i: int) -> str:
    return f"{i:064x}"


def expect(result: mls.ProcessResult, kind: type[Received]) -> Received:
    """``result`` as the ``kind`` of result the test expects; a result of another kind fails the test."""
    assert isinstance(result, kind), f"expected {kind.__name__}, got {type(result).__name__}"
    return result


def read(state: mls.GroupState, message: bytes) -> bytes:
    """The plaintext ``state`` reads from the application ``message``."""
    return expect(mls.process_message(state, message), mls.ApplicationReceived).plaintext


@attrs.define
class Group:
    """Identities and current states of a simulated group; member 0 is the admin/creator."""

    rng: Rng
    identities: list[mls.Identity]
    states: dict[str, mls.GroupState]  # credential -> current state of each member
    gone: dict[str, mls.GroupState] = attrs.field(factory=dict)  # credential -> final state of removed members

    def state(self, i: int) -> mls.GroupState:
        return self.states[cred(i)]

    def set(self, i: int, state: mls.GroupState) -> None:
        self.states[cred(i)] = state

    def send(self, i: int, text: bytes) -> bytes:
        msg, new = mls.encrypt_application(self.state(i), text, rng=self.rng)
        self.set(i, new)
        return msg

    def deliver(self, message: bytes, *, skip: Collection[str] = ()) -> dict[str, mls.ProcessResult]:
        """Process ``message`` at every member except those in ``skip``; adopt new states."""
        results = {}
        for c, st in list(self.states.items()):
            if c in skip:
                continue
            res = mls.process_message(st, message)
            self.states[c] = res.new_state
            results[c] = res
        return results

    def receive(self, message: bytes, kind: type[Received], *, skip: Collection[str] = ()) -> dict[str, Received]:
        """``deliver`` a message that every member must read as a result of ``kind``."""
        return {c: expect(r, kind) for c, r in self.deliver(message, skip=skip).items()}

    def commit(self, i: int, **changes: Any) -> mls.CommitResult:
        """Member ``i`` commits ``changes`` (keywords of ``mls.commit``); everyone else processes it;
        joiners join from their welcome."""
        res = mls.commit(self.state(i), rng=self.rng, **changes)
        results = self.deliver(res.message, skip={cred(i)} | set(res.welcomes))
        self.set(i, res.new_state)
        for c, r in results.items():
            if expect(r, mls.CommitApplied).we_were_removed:
                self.gone[c] = self.states.pop(c)
        return res


def make_group(n: int = 4, seed: int = 1) -> Group:
    """Create a group of ``n`` members (credentials cred(1)..cred(n)) at epoch 1."""
    rng = seeded(seed)
    ids = [mls.new_identity(cred(i), rng=rng) for i in range(1, n + 1)]
    g = Group(rng, ids, {ids[0].credential: mls.create_group(ids[0], b"test-group", rng=rng)})
    if n > 1:
        kps = [mls.create_key_package(ident, rng=rng) for ident in ids[1:]]
        res = g.commit(1, add=[kp for kp, _ in kps])
        for ident, (_, priv) in zip(ids[1:], kps, strict=False):
            g.states[ident.credential] = mls.join_from_welcome(ident, priv, res.welcomes[ident.credential])
    return g


def add_member(g: Group, committer: int, new: int) -> mls.CommitResult:
    """Admin ``committer`` adds a fresh member cred(new)."""
    ident = mls.new_identity(cred(new), rng=g.rng)
    kp, priv = mls.create_key_package(ident, rng=g.rng)
    res = g.commit(committer, add=[kp])
    g.identities.append(ident)
    g.states[ident.credential] = mls.join_from_welcome(ident, priv, res.welcomes[ident.credential])
    return res
