"""One MLS group whose members run in two implementations: Tessera's engine and ts-mls.

:class:`MixedGroup` plays every member of a group.  Our members are
:class:`~protocols.libraries.mls.group.state.GroupState` values in this process;
ts-mls members are group handles in the peer (see ts_mls.py).  Each
operation is one member's act (create, add, remove, update, propose, commit
pending proposals, join by external commit), and every message it produces
is delivered to every other member, the way a delivery service would.
Nothing is taken on trust: each receiver must accept each message,
:meth:`MixedGroup.talk` has every member read every other member's
application message, and :meth:`MixedGroup.agree` checks that all members
report the same epoch, epoch authenticator, exporter secret and roster.

Two ts-mls 1.6.4 deviations from RFC 9420 need a workaround here or in the
driver (both pinned in test_ts_mls.py):

- compressed ECDSA signature keys: driver.mjs (``signatureKeyPair``)
  re-encodes them uncompressed for every ts-mls member, whether it creates
  a group, joins from a Welcome or joins by external commit;
- ``external_pub`` without its length prefix: for us to join a ts-mls group,
  the driver has ts-mls sign a GroupInfo with the RFC form
  (``group_info`` with ``rfc_external_pub``); for ts-mls to join ours, we
  sign a GroupInfo holding the bare key (:func:`group_info_for_ts_mls`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.group.application import encrypt_application
from protocols.libraries.mls.group.commit import CommitOutcome, commit, group_info_extensions
from protocols.libraries.mls.group.create import create_group
from protocols.libraries.mls.group.external import join_by_external_commit
from protocols.libraries.mls.group.group_info import sign_group_info
from protocols.libraries.mls.group.join import join_from_welcome
from protocols.libraries.mls.group.key_packages import KeyPackageSecrets, create_key_package
from protocols.libraries.mls.group.process import process
from protocols.libraries.mls.group.proposals import ProposalOutcome, propose_add, propose_remove, propose_update
from protocols.libraries.mls.group.results import ApplicationMessage, CommitMessage, ProposalMessage
from protocols.libraries.mls.group.state import GroupConfig, GroupState
from protocols.libraries.mls.messages import (
    Add,
    BasicCredential,
    Extension,
    ExtensionType,
    ExternalPub,
    KeyPackage,
    LeafNode,
    MLSMessage,
    Proposal,
    ProtocolVersion,
    RatchetTree,
    Remove,
    SenderMember,
    WireFormat,
)

from .ts_mls import Peer

GROUP_ID = b"two-way"
EXPORTER_LABEL = "tessera two-way"
EXPORTER_CONTEXT = b"mixed group"


class Impl(enum.Enum):
    """Which implementation runs a member."""

    OURS = "ours"
    TS_MLS = "ts-mls"


@attrs.frozen
class OurInvitation:
    """A KeyPackage of ours, waiting in a commit's Welcome."""

    key_package: KeyPackage
    secrets: KeyPackageSecrets = attrs.field(repr=False)

    @property
    def message(self) -> bytes:
        return encode(MLSMessage(ProtocolVersion.MLS10, self.key_package))

    @property
    def init_private_key(self) -> bytes:
        return self.secrets.init_private


@attrs.frozen
class TsMlsInvitation:
    """A ts-mls KeyPackage (its handle in the peer and the encoded MLSMessage), waiting in a commit's Welcome."""

    handle: str
    message: bytes
    init_private_key: bytes = attrs.field(repr=False)

    @property
    def key_package(self) -> KeyPackage:
        framed = decode(MLSMessage, self.message).message
        assert isinstance(framed, KeyPackage)
        return framed


Invitation = OurInvitation | TsMlsInvitation


@attrs.frozen
class Leaf:
    """A member as one member's tree shows it."""

    identity: bytes
    signature_key: bytes
    encryption_key: bytes


@attrs.frozen
class View:
    """What one member reports of the group; every member's must be equal."""

    epoch: int
    epoch_authenticator: bytes
    exporter: bytes
    leaves: Mapping[int, Leaf]


@attrs.frozen
class Agreement:
    """The group as all its members agree on it.

    Attributes:
        epoch: the current epoch.
        epoch_authenticator: the epoch's authenticator.
        exporter: MLS-Exporter(EXPORTER_LABEL, EXPORTER_CONTEXT, 32) of the epoch.
        roster: each member's name (its identity), by leaf index.
    """

    epoch: int
    epoch_authenticator: bytes
    exporter: bytes
    roster: Mapping[int, str]


class MixedGroup:
    """The members of one group, ours and ts-mls's, and the messages between them.

    ``public_handshakes`` makes every member send proposals and commits as
    PublicMessages, else as PrivateMessages (checked for every handshake).
    ``tree_in_welcome=False`` leaves the ``ratchet_tree`` extension out of
    every Welcome, and joiners get the committer's tree out of band.

    Attributes:
        ours: our members' states, by name (a member's name is its identity).
        theirs: ts-mls members' group handles, by name.
        invitations: every KeyPackage a joiner was added with, by name.
        pending_refs: the ProposalRefs of the proposals sent in this epoch,
            as our members computed them, in order.
        last_commit: the last commit delivered (an encoded MLSMessage).
        last_welcome: the Welcome of the last commit, if it added anyone.
    """

    def __init__(self, peer: Peer, suite_id: int, *, public_handshakes: bool = False, tree_in_welcome: bool = True):
        self.peer = peer
        self.suite_id = suite_id
        self.cs: CipherSuite = suite(suite_id)
        self.public_handshakes = public_handshakes
        self.tree_in_welcome = tree_in_welcome
        self.config = GroupConfig(private_handshakes=not public_handshakes, ratchet_tree_in_welcome=tree_in_welcome)
        self.ours: dict[str, GroupState] = {}
        self.theirs: dict[str, str] = {}
        self.invitations: dict[str, Invitation] = {}
        self.pending_refs: list[bytes] = []
        self.last_commit: bytes | None = None
        self.last_welcome: bytes | None = None
        self._pending_joiners: list[str] = []
        self._authenticators: dict[int, bytes] = {}

    @property
    def names(self) -> list[str]:
        return [*self.ours, *self.theirs]

    # --- acts of one member ----------------------------------------------------------------------

    def create(self, name: str, impl: Impl) -> None:
        """``name`` creates the group, alone at leaf 0 of epoch 0."""
        if impl is Impl.OURS:
            signature_key = self.cs.generate_signature_key_pair()
            credential = BasicCredential(name.encode())
            self.ours[name] = create_group(self.cs, GROUP_ID, credential, signature_key, config=self.config)
        else:
            made = self.peer.call("create_group", identity=name.encode(), group_id=GROUP_ID, suite=self.suite_id)
            self.theirs[name] = made["handle"]

    def add(self, committer: str, joiners: Mapping[str, Impl]) -> None:
        """``committer`` adds ``joiners`` by value in one commit; they join from its Welcome."""
        invited = [self._invite(name, impl) for name, impl in joiners.items()]
        if committer in self.ours:
            self._commit_ours(committer, [Add(invitation.key_package) for invitation in invited])
        else:
            sent = self.peer.call(
                "add_members",
                handle=self.theirs[committer],
                key_packages=[invitation.message for invitation in invited],
                public=self.public_handshakes,
                ratchet_tree_extension=self.tree_in_welcome,
            )
            self._commit_sent(committer, bytes.fromhex(sent["commit"]), bytes.fromhex(sent["welcome"]))

    def remove(self, committer: str, *names: str) -> None:
        """``committer`` removes ``names`` by value; each of them sees its own removal."""
        leaves = [self.leaf_of(name) for name in names]
        if committer in self.ours:
            removed = self._commit_ours(committer, [Remove(leaf) for leaf in leaves])
        else:
            sent = self.peer.call(
                "remove_members", handle=self.theirs[committer], leaf_indexes=leaves, public=self.public_handshakes
            )
            removed = self._commit_sent(committer, bytes.fromhex(sent["commit"]), None)
        assert removed == set(names)

    def update(self, committer: str) -> None:
        """``committer`` commits with an UpdatePath and nothing else: fresh keys on its whole path."""
        if committer in self.ours:
            self._commit_ours(committer, [], force_path=True)
        else:
            sent = self.peer.call("update", handle=self.theirs[committer], public=self.public_handshakes)
            self._commit_sent(committer, bytes.fromhex(sent["commit"]), None)

    def propose_add(self, proposer: str, name: str, impl: Impl) -> None:
        """``proposer`` proposes adding ``name``, for a later commit to include by reference."""
        invitation = self._invite(name, impl)
        if proposer in self.ours:
            self._proposal_ours(proposer, propose_add(self.ours[proposer], invitation.key_package))
        else:
            self._propose_ts_mls(proposer, add=invitation.message)

    def propose_remove(self, proposer: str, name: str) -> None:
        """``proposer`` proposes removing ``name``."""
        leaf = self.leaf_of(name)
        if proposer in self.ours:
            self._proposal_ours(proposer, propose_remove(self.ours[proposer], leaf))
        else:
            self._propose_ts_mls(proposer, remove=leaf)

    def propose_update(self, proposer: str) -> None:
        """Our member ``proposer`` proposes a fresh leaf key for itself (the driver sends no ts-mls Updates)."""
        self._proposal_ours(proposer, propose_update(self.ours[proposer]))

    def commit_pending(self, committer: str) -> set[str]:
        """``committer`` commits every pending proposal by reference; returns the members it removed."""
        if committer in self.ours:
            return self._commit_ours(committer, [])
        sent = self.peer.call("commit", handle=self.theirs[committer], public=self.public_handshakes)
        welcome = sent.get("welcome")
        return self._commit_sent(
            committer, bytes.fromhex(sent["commit"]), None if welcome is None else bytes.fromhex(welcome)
        )

    def join_external(self, name: str, impl: Impl, via: str) -> None:
        """``name`` joins by external commit from the GroupInfo member ``via`` publishes."""
        if impl is Impl.OURS:
            signature_key = self.cs.generate_signature_key_pair()
            credential = BasicCredential(name.encode())
            joined = join_by_external_commit(self._group_info(via), credential, signature_key, config=self.config)
            self._deliver_commit(joined.message, None, WireFormat.MLS_PUBLIC_MESSAGE)
            self.ours[name] = joined.new_state
        else:
            made = self.peer.call(
                "join_external", group_info=self._group_info(via, for_ts_mls=True), identity=name.encode()
            )
            self._deliver_commit(bytes.fromhex(made["commit"]), None, WireFormat.MLS_PUBLIC_MESSAGE)
            self.theirs[name] = made["handle"]

    # --- application messages and agreement ------------------------------------------------------

    def talk(self) -> None:
        """Every member sends one application message; every other member must read exactly it."""
        for sender in self.names:
            epoch, leaf = self._view(sender).epoch, self.leaf_of(sender)
            text = f"{sender} in epoch {epoch}".encode()
            message = self._encrypt(sender, text)
            for reader in self.names:
                if reader != sender:
                    self._read(reader, message, sender, leaf, text, epoch)

    def agree(self) -> Agreement:
        """What every member reports of the group, checked to be the same for all and a new epoch's."""
        views = {name: self._view(name) for name in self.names}
        first = next(iter(views.values()))
        differing = {name: view for name, view in views.items() if view != first}
        assert not differing, f"members disagree: {first} vs {differing}"
        earlier = self._authenticators.setdefault(first.epoch, first.epoch_authenticator)
        assert earlier == first.epoch_authenticator, f"epoch {first.epoch} changed its authenticator"
        assert list(self._authenticators.values()).count(first.epoch_authenticator) == 1, "an authenticator repeats"
        roster = {leaf: found.identity.decode() for leaf, found in first.leaves.items()}
        return Agreement(first.epoch, first.epoch_authenticator, first.exporter, roster)

    def leaf_of(self, name: str) -> int:
        """``name``'s leaf index, as the first member's tree has it."""
        leaves = self._view(self.names[0]).leaves
        (leaf,) = [index for index, found in leaves.items() if found.identity == name.encode()]
        return leaf

    # --- our members ---------------------------------------------------------------------------------

    def _commit_ours(self, committer: str, proposals: list[Proposal], *, force_path: bool = False) -> set[str]:
        outcome = commit(self.ours[committer], proposals, force_path=force_path)
        self._adopt_own_commit(committer, outcome)
        tree = encode(self.ours[committer].tree.to_message())
        return self._commit_sent(committer, outcome.message, outcome.welcome, tree)

    def _adopt_own_commit(self, committer: str, outcome: CommitOutcome) -> None:
        # The way a member learns the delivery service accepted its commit: it comes back.
        result = process(outcome.pending_state, outcome.message)
        assert isinstance(result, CommitMessage) and result.own
        assert result.new_state.epoch == outcome.new_state.epoch
        self.ours[committer] = result.new_state

    def _proposal_ours(self, proposer: str, outcome: ProposalOutcome) -> None:
        self.ours[proposer] = outcome.new_state
        self._deliver_proposal(outcome.message, proposer, outcome.ref)

    def _read(self, reader: str, message: bytes, sender: str, leaf: int, text: bytes, epoch: int) -> None:
        if reader in self.ours:
            result = process(self.ours[reader], message)
            assert isinstance(result, ApplicationMessage)
            assert (result.data, result.sender, result.epoch) == (text, leaf, epoch)
            assert result.credential == BasicCredential(sender.encode())
            self.ours[reader] = result.new_state
        else:
            read = self.peer.call("process_message", handle=self.theirs[reader], message=message)
            assert read == {"kind": "application", "plaintext": text.hex(), "epoch": epoch}

    def _encrypt(self, sender: str, text: bytes) -> bytes:
        if sender in self.ours:
            message, self.ours[sender] = encrypt_application(self.ours[sender], text)
            return message
        return bytes.fromhex(
            self.peer.call("encrypt_application", handle=self.theirs[sender], plaintext=text)["message"]
        )

    # --- ts-mls members --------------------------------------------------------------------------------

    def _propose_ts_mls(self, proposer: str, **proposal: bytes | int) -> None:
        sent = self.peer.call("propose", handle=self.theirs[proposer], public=self.public_handshakes, **proposal)
        self._deliver_proposal(bytes.fromhex(sent["message"]), proposer)

    # --- delivery ------------------------------------------------------------------------------------

    @property
    def _handshake_format(self) -> WireFormat:
        return WireFormat.MLS_PUBLIC_MESSAGE if self.public_handshakes else WireFormat.MLS_PRIVATE_MESSAGE

    def _commit_sent(
        self, committer: str, message: bytes, welcome: bytes | None, tree: bytes | None = None
    ) -> set[str]:
        """Deliver ``committer``'s commit; whoever it invited joins from ``welcome``."""
        removed = self._deliver_commit(message, committer, self._handshake_format)
        assert (welcome is not None) == bool(self._pending_joiners), "a Welcome exactly when someone was added"
        if welcome is not None:
            if tree is None:
                tree = bytes.fromhex(self.peer.call("ratchet_tree", handle=self.theirs[committer])["ratchet_tree"])
            for name in self._pending_joiners:
                self._join(name, welcome, tree)
        self._pending_joiners.clear()
        self.pending_refs.clear()
        self.last_welcome = welcome
        return removed

    def _deliver_commit(self, message: bytes, sender: str | None, wire_format: WireFormat) -> set[str]:
        """Every member but the sender applies the commit; the ones it removed leave and are returned."""
        assert decode(MLSMessage, message).wire_format == wire_format
        self.last_commit = message
        removed = set()
        for name, state in list(self.ours.items()):
            if name != sender:
                result = process(state, message)
                assert isinstance(result, CommitMessage) and not result.own
                self.ours[name] = result.new_state
                if result.we_were_removed:
                    assert not result.new_state.active
                    removed.add(name)
                    del self.ours[name]
        for name, handle in list(self.theirs.items()):
            if name != sender:
                assert self.peer.call("process_message", handle=handle, message=message)["kind"] == "commit"
                if not self.peer.call("active", handle=handle)["active"]:
                    removed.add(name)
                    del self.theirs[name]
        return removed

    def _deliver_proposal(self, message: bytes, proposer: str, ref: bytes | None = None) -> None:
        """Every member but the proposer caches the proposal; ours must all name it by the same ProposalRef."""
        assert decode(MLSMessage, message).wire_format == self._handshake_format
        leaf = self.leaf_of(proposer)
        for name, state in self.ours.items():
            if name != proposer:
                result = process(state, message)
                assert isinstance(result, ProposalMessage) and result.sender == SenderMember(leaf)
                ref = result.ref if ref is None else ref
                assert result.ref == ref
                self.ours[name] = result.new_state
        for name, handle in self.theirs.items():
            if name != proposer:
                assert self.peer.call("process_message", handle=handle, message=message)["kind"] == "proposal"
        if ref is not None:
            self.pending_refs.append(ref)

    # --- joining -------------------------------------------------------------------------------------

    def _invite(self, name: str, impl: Impl) -> Invitation:
        invitation: Invitation
        if impl is Impl.OURS:
            signature_key = self.cs.generate_signature_key_pair()
            key_package, secrets = create_key_package(self.cs, BasicCredential(name.encode()), signature_key)
            invitation = OurInvitation(key_package, secrets)
        else:
            made = self.peer.call("create_key_package", identity=name.encode(), suite=self.suite_id)
            invitation = TsMlsInvitation(
                made["handle"], bytes.fromhex(made["key_package"]), bytes.fromhex(made["init_private_key"])
            )
        self.invitations[name] = invitation
        self._pending_joiners.append(name)
        return invitation

    def _join(self, name: str, welcome: bytes, tree: bytes) -> None:
        invitation = self.invitations[name]
        out_of_band = None if self.tree_in_welcome else tree
        if isinstance(invitation, OurInvitation):
            ratchet_tree = None if out_of_band is None else decode(RatchetTree, out_of_band)
            self.ours[name] = join_from_welcome(
                welcome, invitation.key_package, invitation.secrets, ratchet_tree=ratchet_tree, config=self.config
            )
        else:
            extra = {} if out_of_band is None else {"ratchet_tree": out_of_band}
            made = self.peer.call("join_from_welcome", key_package=invitation.handle, welcome=welcome, **extra)
            self.theirs[name] = made["handle"]

    def _group_info(self, via: str, *, for_ts_mls: bool = False) -> bytes:
        """The GroupInfo member ``via`` publishes, with ``external_pub`` in the form its reader takes."""
        if via in self.ours:
            state = self.ours[via]
            return group_info_for_ts_mls(state) if for_ts_mls else our_group_info(state)
        made = self.peer.call("group_info", handle=self.theirs[via], rfc_external_pub=not for_ts_mls)
        return bytes.fromhex(made["group_info"])

    # --- what each member reports ----------------------------------------------------------------------

    def _view(self, name: str) -> View:
        if name in self.ours:
            state = self.ours[name]
            leaves = {leaf: _our_leaf(node) for leaf, node in state.members().items()}
            exporter = state.exporter(EXPORTER_LABEL, EXPORTER_CONTEXT, 32)
            return View(state.epoch, state.epoch_authenticator, exporter, leaves)
        handle = self.theirs[name]
        members = self.peer.call("members", handle=handle)["members"]
        leaves = {
            member["leaf_index"]: Leaf(
                *(bytes.fromhex(member[key]) for key in ("identity", "signature_key", "encryption_key"))
            )
            for member in members
        }
        exported = self.peer.call(
            "export_secret", handle=handle, label=EXPORTER_LABEL, context=EXPORTER_CONTEXT, length=32
        )["secret"]
        authenticator = self.peer.call("epoch_authenticator", handle=handle)["epoch_authenticator"]
        epoch = self.peer.call("epoch", handle=handle)["epoch"]
        return View(epoch, bytes.fromhex(authenticator), bytes.fromhex(exported), leaves)


def _our_leaf(node: LeafNode) -> Leaf:
    assert isinstance(node.credential, BasicCredential)
    return Leaf(node.credential.identity, node.signature_key, node.encryption_key)


def our_group_info(state: GroupState) -> bytes:
    """The GroupInfo our member publishes for external joiners (RFC 9420 form), as an encoded MLSMessage."""
    return _signed_group_info(state, group_info_extensions(state))


def group_info_for_ts_mls(state: GroupState) -> bytes:
    """Our member's GroupInfo with ``external_pub`` holding the bare key, the form ts-mls 1.6.4 reads.

    Signed by our member like any GroupInfo it publishes; only the
    extension's encoding differs from :func:`our_group_info`.
    """
    extensions = [_bare_external_pub(found) for found in group_info_extensions(state)]
    return _signed_group_info(state, extensions)


def _bare_external_pub(extension: Extension) -> Extension:
    if extension.extension_type != ExtensionType.EXTERNAL_PUB:
        return extension
    return Extension(ExtensionType.EXTERNAL_PUB, decode(ExternalPub, extension.extension_data).external_pub)


def _signed_group_info(state: GroupState, extensions: tuple[Extension, ...] | list[Extension]) -> bytes:
    info = sign_group_info(
        state.suite, state.context, extensions, state.keys.confirmation_tag, state.own_leaf, state.signature_private
    )
    return encode(MLSMessage(ProtocolVersion.MLS10, info))
