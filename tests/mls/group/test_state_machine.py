"""The RFC 9420 group state machine driven by Hypothesis: random members changing one group, every member agreeing.

Each member keeps its own :class:`GroupState` and sees only the bytes the
others send.  Rules add members (by Welcome, with or without a path), remove
them, self-update, commit Update, Remove and external PSK proposals sent by
someone else, change the group context extensions, let outsiders join by
external commit and members resync that way, and send application messages,
some of them delivered epochs later.  Members differ in their local
configuration: PublicMessage or PrivateMessage handshakes, and how many past
epochs they keep for late messages.  After every step all active members
agree on the epoch, its authenticator, an exporter output, the tree and the
membership; each one's private keys fit the tree; and no removed member can
process the next commit.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.crypto import KeyPair, suite
from protocols.libraries.mls.errors import CannotDecryptOwnMessage, WrongEpoch
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import CommitOutcome, commit
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.proposals import (
    ProposalOutcome,
    propose_external_psk,
    propose_remove,
    propose_update,
    with_external_psk,
)
from protocols.libraries.mls.group.refusals import GroupInactive
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage, ProposalMessage
from protocols.libraries.mls.group.state import GroupConfig, GroupState
from tests.mls.tree._members import seeded_rng

from ._groups import EXTENSION, build_group, capabilities, member_client, signed_group_info

CS = suite(1)
MAX_MEMBERS = 6
#: Removed members whose states are kept to check they stay out; older ones are dropped.
KEPT_REMOVED = 3

pick = st.integers(min_value=0, max_value=1_000)
configs = st.builds(GroupConfig, max_past_epochs=st.integers(1, 4), private_handshakes=st.booleans())


@attrs.frozen
class Held:
    """An application message sent and not yet delivered.

    It is delivered once the group reaches epoch ``due``.  Members are
    named with their incarnation (a resync starts a new one): ``sender``
    sent it from ``leaf``, ``readers`` were the other members when it was
    sent.
    """

    epoch: int
    due: int
    sender: tuple[bytes, int]
    leaf: int
    message: bytes
    data: bytes
    readers: frozenset[tuple[bytes, int]]


class GroupMachine(RuleBasedStateMachine):
    """One group, its members' states by name, and what the model expects of them."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = seeded_rng(b"state machine")
        self.states: dict[bytes, GroupState] = {}
        self.signatures: dict[bytes, KeyPair] = {}
        self.incarnation: dict[bytes, int] = {}
        self.removed: list[GroupState] = []
        self.held: list[Held] = []
        self.psks: dict[bytes, bytes] = {}
        self.counter = 0

    # --- helpers ------------------------------------------------------------------------

    def fresh_name(self) -> bytes:
        self.counter += 1
        return b"member %d" % self.counter

    def name_at(self, index: int, *, besides: Sequence[bytes] = ()) -> bytes:
        names = sorted(set(self.states) - set(besides))
        return names[index % len(names)]

    def enter(self, name: bytes, state: GroupState, signature: KeyPair) -> None:
        self.states[name] = state
        self.signatures[name] = signature
        self.incarnation[name] = self.incarnation.get(name, -1) + 1

    def send_proposal(self, proposer: bytes, outcome: ProposalOutcome) -> None:
        self.states[proposer] = outcome.new_state
        for name, state in self.states.items():
            if name != proposer:
                result = process(state, outcome.message)
                assert isinstance(result, ProposalMessage) and result.ref == outcome.ref
                self.states[name] = result.new_state

    def finish_commit(
        self,
        committer: bytes,
        outcome: CommitOutcome,
        through_pending: bool,
        joiner: tuple[bytes, GroupState, KeyPair] | None = None,
    ) -> None:
        """Everyone else processes the commit; the committer adopts its new state directly or by processing it.

        ``joiner`` (name, state, signature key) is a member the commit added, who joined from the Welcome.
        """
        handshakes = self.states[committer].config.private_handshakes
        wire_format = decode(m.MLSMessage, outcome.message).wire_format
        assert wire_format == (m.WireFormat.MLS_PRIVATE_MESSAGE if handshakes else m.WireFormat.MLS_PUBLIC_MESSAGE)
        self.deliver_commit(outcome.message, besides=committer)
        if through_pending:
            own = process(outcome.pending_state, outcome.message)
            assert isinstance(own, CommitMessage) and own.own and not own.we_were_removed
            assert own.new_state.epoch_authenticator == outcome.new_state.epoch_authenticator
            self.states[committer] = own.new_state
        else:
            self.states[committer] = outcome.new_state
        if joiner is not None:
            self.enter(*joiner)
        self.deliver_due()

    def deliver_commit(self, message: bytes, *, besides: bytes | None = None) -> None:
        for state in self.removed:
            with pytest.raises(WrongEpoch):
                process(state, message)
        for name, state in list(self.states.items()):
            if name == besides:
                continue
            result = process(state, message)
            assert isinstance(result, CommitMessage) and not result.own
            if result.we_were_removed:
                self.retire(name, result.new_state)
            else:
                self.states[name] = result.new_state

    def retire(self, name: bytes, state: GroupState) -> None:
        assert not state.active
        with pytest.raises(GroupInactive):
            encrypt_application(state, b"still here?")
        with pytest.raises(GroupInactive):
            commit(state)
        del self.states[name]
        self.removed = [state, *self.removed][:KEPT_REMOVED]

    def deliver_due(self) -> None:
        """Held messages whose time has come reach everyone: readers within their window read them, others refuse."""
        epoch = next(iter(self.states.values())).epoch
        due = [held for held in self.held if held.due <= epoch]
        self.held = [held for held in self.held if held.due > epoch]
        for held in due:
            for name, state in self.states.items():
                member = (name, self.incarnation[name])
                kept = state.epoch - held.epoch <= state.config.max_past_epochs
                if member in held.readers and kept:
                    result = process(state, held.message)
                    assert isinstance(result, ApplicationMessage)
                    assert (result.data, result.sender, result.epoch) == (held.data, held.leaf, held.epoch)
                    self.states[name] = result.new_state
                elif member == held.sender and kept:
                    with pytest.raises(CannotDecryptOwnMessage):
                        process(state, held.message)
                else:
                    with pytest.raises(WrongEpoch):
                        process(state, held.message)

    # --- rules ---------------------------------------------------------------------------

    @initialize(size=st.integers(1, 3), config=configs)
    def create(self, size: int, config: GroupConfig) -> None:
        names = [self.fresh_name() for _ in range(size)]
        for name, state in zip(names, build_group(CS, names, config=config, rng=self.rng), strict=True):
            self.enter(name, state, member_client(CS, name).signature)

    @precondition(lambda self: len(self.states) < MAX_MEMBERS)
    @rule(committer=pick, with_path=st.booleans(), through_pending=st.booleans(), config=configs)
    def add_member(self, committer: int, with_path: bool, through_pending: bool, config: GroupConfig) -> None:
        name = self.name_at(committer)
        joiner_name = self.fresh_name()
        joiner = member_client(CS, joiner_name)
        outcome = commit(self.states[name], [m.Add(joiner.key_package)], force_path=with_path, rng=self.rng)
        assert outcome.welcome is not None and len(outcome.added) == 1
        state = join_from_welcome(outcome.welcome, joiner.key_package, joiner.secrets, config=config)
        assert state.own_leaf == outcome.added[0]
        self.finish_commit(name, outcome, through_pending, (joiner_name, state, joiner.signature))

    @precondition(lambda self: len(self.states) > 1)
    @rule(committer=pick, leaving=pick, through_pending=st.booleans())
    def remove_member(self, committer: int, leaving: int, through_pending: bool) -> None:
        name = self.name_at(committer)
        removed = self.name_at(leaving, besides=[name])
        outcome = commit(self.states[name], [m.Remove(self.states[removed].own_leaf)], rng=self.rng)
        self.finish_commit(name, outcome, through_pending)
        assert removed not in self.states

    @rule(committer=pick, through_pending=st.booleans())
    def self_update(self, committer: int, through_pending: bool) -> None:
        name = self.name_at(committer)
        before = self.states[name].own_leaf_node.encryption_key
        outcome = commit(self.states[name], force_path=True, rng=self.rng)
        self.finish_commit(name, outcome, through_pending)
        assert self.states[name].own_leaf_node.encryption_key != before

    @precondition(lambda self: len(self.states) > 1)
    @rule(proposer=pick, committer=pick, through_pending=st.booleans())
    def update_committed_by_another(self, proposer: int, committer: int, through_pending: bool) -> None:
        name = self.name_at(proposer)
        committer_name = self.name_at(committer, besides=[name])
        proposal = propose_update(self.states[name], rng=self.rng)
        self.send_proposal(name, proposal)
        outcome = commit(self.states[committer_name], rng=self.rng)
        self.finish_commit(committer_name, outcome, through_pending)
        update = proposal.new_state.proposals[-1].proposal
        assert isinstance(update, m.Update)
        assert self.states[name].own_leaf_node == update.leaf_node

    @precondition(lambda self: len(self.states) > 1)
    @rule(proposer=pick, leaving=pick, committer=pick, through_pending=st.booleans())
    def remove_by_reference(self, proposer: int, leaving: int, committer: int, through_pending: bool) -> None:
        proposer_name = self.name_at(proposer)
        removed = self.name_at(leaving)
        committer_name = self.name_at(committer, besides=[removed])
        self.send_proposal(proposer_name, propose_remove(self.states[proposer_name], self.states[removed].own_leaf))
        outcome = commit(self.states[committer_name], rng=self.rng)
        self.finish_commit(committer_name, outcome, through_pending)
        assert removed not in self.states

    @rule(proposer=pick, committer=pick, secret=st.binary(min_size=1, max_size=32), through_pending=st.booleans())
    def external_psk(self, proposer: int, committer: int, secret: bytes, through_pending: bool) -> None:
        psk_id = b"psk %d" % len(self.psks)
        self.psks[psk_id] = secret
        for name, state in self.states.items():
            self.states[name] = with_external_psk(state, psk_id, secret)
        proposer_name, committer_name = self.name_at(proposer), self.name_at(committer)
        self.send_proposal(proposer_name, propose_external_psk(self.states[proposer_name], psk_id, rng=self.rng))
        outcome = commit(self.states[committer_name], rng=self.rng)
        self.finish_commit(committer_name, outcome, through_pending)

    @rule(committer=pick, data=st.binary(max_size=8), through_pending=st.booleans())
    def change_extensions(self, committer: int, data: bytes, through_pending: bool) -> None:
        name = self.name_at(committer)
        extensions = (m.Extension(EXTENSION, data),)
        outcome = commit(self.states[name], [m.GroupContextExtensions(extensions)], rng=self.rng)
        self.finish_commit(name, outcome, through_pending)
        assert all(state.context.extensions == extensions for state in self.states.values())

    @precondition(lambda self: len(self.states) < MAX_MEMBERS)
    @rule(publisher=pick, config=configs)
    def external_join(self, publisher: int, config: GroupConfig) -> None:
        info = signed_group_info(self.states[self.name_at(publisher)])
        name = self.fresh_name()
        signature = member_client(CS, name).signature
        joined = join_by_external_commit(
            info, m.BasicCredential(name), signature, capabilities=capabilities(CS), config=config, rng=self.rng
        )
        self.deliver_commit(joined.message)
        self.enter(name, joined.new_state, signature)
        self.deliver_due()

    @precondition(lambda self: len(self.states) > 1)
    @rule(member=pick, publisher=pick, config=configs)
    def resync(self, member: int, publisher: int, config: GroupConfig) -> None:
        """A member that lost its state rejoins by external commit, removing its old leaf."""
        name = self.name_at(member)
        info = signed_group_info(self.states[self.name_at(publisher, besides=[name])])
        lost = self.states[name]
        joined = join_by_external_commit(
            info,
            m.BasicCredential(name),
            self.signatures[name],
            remove_leaf=lost.own_leaf,
            capabilities=capabilities(CS),
            config=config,
            rng=self.rng,
        )
        # The lost state, were it found again, sees the commit that replaced it and is out.
        self.deliver_commit(joined.message)
        assert name not in self.states
        self.enter(name, joined.new_state, self.signatures[name])
        self.deliver_due()

    @precondition(lambda self: len(self.states) > 1)
    @rule(messages=st.lists(st.tuples(pick, st.binary(max_size=40), st.integers(0, 5)), min_size=1, max_size=4))
    def application_messages(self, messages: list[tuple[int, bytes, int]]) -> None:
        """Random members send; each message reaches the others at once, or ``delay`` epochs later."""
        for sender, data, delay in messages:
            name = self.name_at(sender)
            message, self.states[name] = encrypt_application(self.states[name], data, rng=self.rng)
            state = self.states[name]
            if delay:
                readers = frozenset((other, self.incarnation[other]) for other in self.states if other != name)
                sent_by = (name, self.incarnation[name])
                self.held.append(
                    Held(state.epoch, state.epoch + delay, sent_by, state.own_leaf, message, data, readers)
                )
                continue
            for other, receiver in self.states.items():
                if other != name:
                    result = process(receiver, message)
                    assert isinstance(result, ApplicationMessage)
                    assert (result.data, result.sender) == (data, state.own_leaf)
                    self.states[other] = result.new_state

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def members_agree(self) -> None:
        states = list(self.states.values())
        first = states[0]
        for state in states:
            assert state.active
            assert state.epoch == first.epoch
            assert state.epoch_authenticator == first.epoch_authenticator
            assert state.exporter(b"state machine", b"", 32) == first.exporter(b"state machine", b"", 32)
            assert state.tree.tree_hash() == state.context.tree_hash == first.context.tree_hash
            assert state.members() == first.members()
            state.private.check(state.tree)
        assert {leaf.credential for leaf in first.members().values()} == {
            m.BasicCredential(name) for name in self.states
        }
        for name, state in self.states.items():
            assert state.own_leaf_node.credential == m.BasicCredential(name)


GroupMachine.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestGroupMachine = GroupMachine.TestCase
