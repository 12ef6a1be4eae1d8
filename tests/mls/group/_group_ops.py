"""A group run twice with the same randomness: once as is, once restoring every state from its snapshot at every step.

Both runs must send the same bytes, process every message alike and end
every step with states whose snapshots are equal; the restoring run also
round-trips each pending state before its own commit comes back.
"""

from __future__ import annotations

import attrs

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import CipherSuite, Rng
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import commit
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.proposals import propose_update
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage
from protocols.libraries.mls.group.snapshot import snapshot
from protocols.libraries.mls.group.state import GroupState
from tests.mls.tree._members import seeded_rng

from ._clients import NOW, Client, client
from ._snapshots import own_commit_back, round_trip

MAX_MEMBERS = 4

#: The operations that commit; the others send, hold back, deliver or propose.
COMMITS = ("add", "remove", "update")

#: What one run reports of a step, compared between the runs.
Outputs = list[object]


@attrs.define
class Run:
    """One run's states by member name; ``restoring`` runs round-trip every state they keep."""

    restoring: bool
    states: dict[bytes, GroupState]

    def kept(self, state: GroupState) -> GroupState:
        return round_trip(state) if self.restoring else state

    def deliver(self, names: list[bytes], message: bytes) -> Outputs:
        """Process ``message`` at each of ``names``; what each one got, or the error it raised."""
        outputs: Outputs = []
        for name in names:
            try:
                result = process(self.states[name], message)
            except MlsError as error:
                outputs.append(type(error).__name__)
                continue
            self.states[name] = result.new_state
            outputs.append(type(result).__name__)
            if isinstance(result, ApplicationMessage):
                outputs.append(result.data)
            if isinstance(result, CommitMessage):
                outputs.append(result.we_were_removed)
        return outputs


@attrs.frozen
class CommitPlan:
    """Who commits what, and whether the committer goes through its pending state."""

    committer: bytes
    proposals: tuple[m.Proposal, ...]
    force_path: bool
    via_pending: bool
    joiner: Client | None = None
    removed: bytes | None = None


class GroupRun:
    """Alice's group, run twice; :meth:`apply` performs one operation in both runs and compares them."""

    def __init__(self, cs: CipherSuite) -> None:
        self.cs = cs
        alice = client(cs, b"alice")
        state = create_group(cs, b"run", m.BasicCredential(b"alice"), alice.signature, rng=seeded_rng(b"run"))
        self.runs = [Run(False, {b"alice": state}), Run(True, {b"alice": round_trip(state)})]
        self.active = [b"alice"]
        self.inactive: list[bytes] = []
        self.held: list[tuple[bytes, bytes]] = []
        self.clients = 0

    def apply(self, step: int, operation: str, choice: int) -> None:
        """Perform ``operation`` (send, hold, deliver, propose, add, remove, update) in both runs and compare."""
        plan = self._plan(operation, choice) if operation in COMMITS else None
        outputs = [self._perform(run, step, operation, choice, plan) for run in self.runs]
        assert outputs[0] == outputs[1], operation
        self._after(operation, choice, outputs[0])
        for name in self.runs[0].states:
            plain, restoring = self.runs[0].states[name], self.runs[1].states[name]
            assert snapshot(plain) == snapshot(restoring), name
            self.runs[1].states[name] = round_trip(restoring)
        authenticators = {self.runs[0].states[name].epoch_authenticator for name in self.active}
        assert len(authenticators) == 1

    # --- the operations, as each run performs them -------------------------------------------------

    def _perform(self, run: Run, step: int, operation: str, choice: int, plan: CommitPlan | None) -> Outputs:
        rng = seeded_rng(b"step %d" % step)
        if operation in ("send", "hold"):
            sender = self._pick(choice)
            message, run.states[sender] = encrypt_application(run.states[sender], b"step %d" % step, rng=rng)
            others = [name for name in self.active if name != sender]
            return [message, *([] if operation == "hold" else run.deliver(others, message))]
        if operation == "deliver":
            if not self.held:
                return []
            message, sender = self.held[choice % len(self.held)]
            return run.deliver([n for n in (*self.active, *self.inactive) if n != sender], message)
        if operation == "propose":
            proposer = self._pick(choice)
            outcome = propose_update(run.states[proposer], rng=rng)
            run.states[proposer] = outcome.new_state
            return [outcome.message, *run.deliver([n for n in self.active if n != proposer], outcome.message)]
        assert plan is not None
        return self._commit(run, plan, rng)

    def _plan(self, operation: str, choice: int) -> CommitPlan:
        committer, via_pending = self._pick(choice), bool(choice & 4)
        if operation == "add" and len(self.active) < MAX_MEMBERS:
            self.clients += 1
            joiner = client(self.cs, b"client %d" % self.clients)
            return CommitPlan(committer, (m.Add(joiner.key_package),), False, via_pending, joiner=joiner)
        others = [name for name in self.active if name != committer]
        if operation == "remove" and others:
            target = others[choice % len(others)]
            leaf = self.runs[0].states[target].own_leaf
            return CommitPlan(committer, (m.Remove(leaf),), False, via_pending, removed=target)
        return CommitPlan(committer, (), True, via_pending)

    def _commit(self, run: Run, plan: CommitPlan, rng: Rng) -> Outputs:
        state = run.states[plan.committer]
        # A committer may not commit its own Updates (it updates through its path): leave them pending.
        others = [p.ref for p in state.proposals if p.sender != m.SenderMember(state.own_leaf)]
        try:
            out = commit(state, plan.proposals, by_reference=others, force_path=plan.force_path, now=NOW, rng=rng)
        except MlsError as error:
            return [type(error).__name__]
        if plan.via_pending:
            run.states[plan.committer] = own_commit_back(run.kept(out.pending_state), out.message)
        else:
            run.states[plan.committer] = out.new_state
        receivers = [name for name in (*self.active, *self.inactive) if name != plan.committer]
        outputs: Outputs = [out.message, out.welcome, *run.deliver(receivers, out.message)]
        if plan.joiner is not None:
            assert out.welcome is not None
            joined = join_from_welcome(out.welcome, plan.joiner.key_package, plan.joiner.secrets)
            run.states[plan.joiner.name] = joined
        return outputs

    # --- membership, once per step --------------------------------------------------------------

    def _pick(self, choice: int) -> bytes:
        return self.active[choice % len(self.active)]

    def _after(self, operation: str, choice: int, outputs: Outputs) -> None:
        committed = bool(outputs) and isinstance(outputs[0], bytes)
        if operation == "hold":
            message = outputs[0]
            assert isinstance(message, bytes)
            self.held.append((message, self._pick(choice)))
        names = set(self.runs[0].states)
        for name in sorted(names - {*self.active, *self.inactive}):
            self.active.append(name)
        if operation == "remove" and committed:
            for name in list(self.active):
                if not self.runs[0].states[name].active:
                    self.active.remove(name)
                    self.inactive.append(name)
