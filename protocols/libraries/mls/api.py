"""The group engine as plugins use it: RFC 9420 behind a small, value-based API.

A plugin names members by their *credential string*: the hex of a basic
credential's identity (Marmot: the member's 32-byte Nostr public key).  It
holds :class:`Identity` (credential and signature key), KeyPackages with
their :class:`KeyPackagePrivate`, and :class:`~.group.state.GroupState`
values; every operation returns new values and stores nothing.  Bytes in
and out are RFC 9420 ``MLSMessage`` encodings, so whatever the engine sends
any RFC 9420 client can read, and the other way round.

Randomness comes from ``rng`` (``Callable[[int], bytes]``, default
``os.urandom``): with the same rng stream the outputs are identical.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, Protocol, TypeVar, runtime_checkable

import attrs

from .codec import Opaque, Uint16, decode, encode
from .crypto import KeyPair, Rng, suite
from .errors import InvalidArgument, InvalidMessage, InvalidSnapshot
from .group import application, create, join
from .group import commit as commits
from .group import proposals as sending_proposals
from .group import snapshot as snapshots
from .group import snapshot_split as split
from .group.key_packages import (
    KeyPackageSecrets,
    default_capabilities,
    default_lifetime,
    key_package_ref,
    supporting,
    validate_key_package,
)
from .group.key_packages import create_key_package as make_key_package
from .group.process import process
from .group.results import ApplicationMessage, CommitMessage, ProposalMessage
from .group.state import DEFAULT_MAX_PAST_EPOCHS, GroupConfig, GroupState
from .messages import (
    Add,
    BasicCredential,
    Capabilities,
    ContentType,
    Credential,
    Extension,
    GroupContextExtensions,
    KeyPackage,
    MLSMessage,
    PrivateMessage,
    Proposal,
    ProtocolVersion,
    PublicMessage,
    Remove,
    SelfRemove,
    Sender,
    SenderMember,
    Welcome,
)
from .schedule.ratchet import RatchetKind

DEFAULT_SUITE = 1
"""MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519, the suite RFC 9420 makes mandatory to implement."""


# --- credentials and identities ------------------------------------------------------------


def credential_string(credential: Credential) -> str:
    """How plugins name a member: the hex of its basic credential's identity."""
    if not isinstance(credential, BasicCredential):
        raise InvalidMessage(f"credential type {credential.credential_type} is not a basic credential")
    return credential.identity.hex()


def _credential_of(text: str) -> BasicCredential:
    try:
        return BasicCredential(bytes.fromhex(text))
    except (TypeError, ValueError):
        raise InvalidArgument(f"a credential is the hex of an identity, not {text!r}") from None


@attrs.frozen
class Identity:
    """A member's long-term identity in one cipher suite: its credential and signature key.

    Attributes:
        credential: the credential string (hex of the basic identity).
        suite_id: the cipher suite its keys are for.
        signature: its signature key pair (private half hidden from repr).
    """

    credential: str
    suite_id: int
    signature: KeyPair = attrs.field(repr=False)

    @property
    def basic_credential(self) -> BasicCredential:
        return _credential_of(self.credential)


@attrs.frozen
class _IdentityRecord:
    """The stored form of an :class:`Identity` (its private key included)."""

    magic: Opaque
    suite: Uint16
    identity: Opaque
    signature_private: Opaque


_IDENTITY_MAGIC = b"tessera-mls-identity-1"


_Record = TypeVar("_Record", "_IdentityRecord", "_KeyPackagePrivateRecord")


def _stored(form: type[_Record], data: bytes, magic: bytes, what: str) -> _Record:
    """Decode a stored value of this engine; anything else is refused, naming what to do."""
    try:
        record = decode(form, data)
    except InvalidMessage:
        record = None
    if record is None or record.magic != magic:
        raise InvalidSnapshot(
            f"these bytes are not a {what} stored by this engine; a value of the flat-tree engine"
            f" (tessera 0.1.0 and earlier) cannot be used with RFC 9420: create a new {what}"
        )
    return record


def new_identity(identity_hex: str, *, suite_id: int = DEFAULT_SUITE, rng: Rng | None = None) -> Identity:
    """An identity for ``identity_hex`` (e.g. a Nostr public key) with a fresh signature key from ``rng``."""
    credential = credential_string(_credential_of(identity_hex.lower()))
    return Identity(credential, suite_id, suite(suite_id).generate_signature_key_pair(rng))


def identity_with_key(identity_hex: str, signature_private: bytes, *, suite_id: int = DEFAULT_SUITE) -> Identity:
    """An identity for ``identity_hex`` whose signature key is one the caller already holds
    (e.g. a device key that also authenticates elsewhere); for Ed25519 suites the 32-byte seed."""
    credential = credential_string(_credential_of(identity_hex.lower()))
    cs = suite(suite_id)
    return Identity(credential, suite_id, KeyPair(bytes(signature_private), cs.signature_public_key(signature_private)))


def identity_to_bytes(identity: Identity) -> bytes:
    """Serialize an identity, INCLUDING its private signature key."""
    record = _IdentityRecord(
        _IDENTITY_MAGIC, identity.suite_id, bytes.fromhex(identity.credential), identity.signature.private
    )
    return encode(record)


def identity_from_bytes(data: bytes) -> Identity:
    """Inverse of :func:`identity_to_bytes`; anything else raises :class:`InvalidSnapshot`."""
    record = _stored(_IdentityRecord, data, _IDENTITY_MAGIC, "identity")
    cs = suite(record.suite)
    public = cs.signature_public_key(record.signature_private)
    return Identity(record.identity.hex(), record.suite, KeyPair(record.signature_private, public))


def capabilities_for(identity: Identity, extension_types: Iterable[int]) -> Capabilities:
    """What this engine supports: a KeyPackage's defaults, and the non-default ``extension_types``."""
    return supporting(
        default_capabilities(suite(identity.suite_id), identity.basic_credential), sorted(extension_types)
    )


# --- key packages --------------------------------------------------------------------------


@attrs.frozen
class KeyPackagePrivate:
    """A KeyPackage with the private keys its owner joins with."""

    key_package: KeyPackage
    secrets: KeyPackageSecrets = attrs.field(repr=False)


@attrs.frozen
class _KeyPackagePrivateRecord:
    magic: Opaque
    key_package: KeyPackage
    init_private: Opaque
    encryption_private: Opaque
    signature_private: Opaque


_KEY_PACKAGE_MAGIC = b"tessera-mls-key-package-1"


def create_key_package(
    identity: Identity,
    *,
    extensions: Sequence[Extension] = (),
    leaf_extensions: Sequence[Extension] = (),
    supported_extensions: Sequence[int] = (),
    last_resort: bool = False,
    now: int | None = None,
    rng: Rng | None = None,
) -> tuple[KeyPackage, KeyPackagePrivate]:
    """A fresh KeyPackage for ``identity`` and what its owner keeps to join with it.

    ``supported_extensions`` lists the non-default extension types the
    client supports in groups (a plugin's own group extension); ``now``
    (seconds since the epoch, default the clock) starts its lifetime.
    """
    cs = suite(identity.suite_id)
    key_package, secrets = make_key_package(
        cs,
        identity.basic_credential,
        identity.signature,
        capabilities=capabilities_for(identity, supported_extensions),
        extensions=extensions,
        leaf_extensions=leaf_extensions,
        lifetime=None if now is None else default_lifetime(now),
        last_resort=last_resort,
        rng=rng,
    )
    return key_package, KeyPackagePrivate(key_package, secrets)


def key_package_to_bytes(key_package: KeyPackage) -> bytes:
    """The KeyPackage as an MLSMessage, as it is published."""
    return encode(MLSMessage(ProtocolVersion.MLS10, key_package))


def key_package_from_bytes(data: bytes, *, verify: bool = True) -> KeyPackage:
    """A published KeyPackage (an MLSMessage), checked (RFC 9420 section 10.1) unless ``verify`` is false."""
    message = decode(MLSMessage, data)
    if not isinstance(message.message, KeyPackage):
        raise InvalidMessage(f"expected a KeyPackage, got a {message.wire_format.name.lower()}")
    if verify:
        validate_key_package(message.message)
    return message.message


def key_package_reference(key_package: KeyPackage) -> bytes:
    """The KeyPackageRef (RFC 9420 section 5.2) a Welcome names this KeyPackage by."""
    return key_package_ref(suite(key_package.cipher_suite), key_package)


def welcome_refs(welcome: bytes) -> tuple[bytes, ...]:
    """The KeyPackageRefs a Welcome carries group secrets for: who it invites."""
    return tuple(entry.new_member for entry in _welcome_of(welcome).secrets)


def welcome_for(welcome: bytes, key_package: KeyPackage) -> bytes:
    """The Welcome with only ``key_package``'s group secrets: one invitee's copy.

    RFC 9420 lets one Welcome serve every new member; a delivery service that
    stores one Welcome per recipient gets distinct bytes per recipient this
    way, and no invitee learns the others' KeyPackageRefs.
    """
    message = decode(MLSMessage, welcome)
    opened = _welcome_of(welcome)
    ref = key_package_reference(key_package)
    mine = tuple(entry for entry in opened.secrets if entry.new_member == ref)
    if not mine:
        raise InvalidArgument(f"the Welcome has no group secrets for KeyPackage {ref.hex()[:16]}")
    return encode(attrs.evolve(message, message=attrs.evolve(opened, secrets=mine)))


def _welcome_of(welcome: bytes) -> Welcome:
    message = decode(MLSMessage, welcome)
    if not isinstance(message.message, Welcome):
        raise InvalidMessage(f"expected a Welcome, got a {message.wire_format.name.lower()}")
    return message.message


def key_package_private_to_bytes(private: KeyPackagePrivate) -> bytes:
    """Serialize a KeyPackage with its private keys."""
    secrets = private.secrets
    record = _KeyPackagePrivateRecord(
        _KEY_PACKAGE_MAGIC,
        private.key_package,
        secrets.init_private,
        secrets.encryption_private,
        secrets.signature_private,
    )
    return encode(record)


def key_package_private_from_bytes(data: bytes) -> KeyPackagePrivate:
    """Inverse of :func:`key_package_private_to_bytes`; anything else raises :class:`InvalidSnapshot`."""
    record = _stored(_KeyPackagePrivateRecord, data, _KEY_PACKAGE_MAGIC, "key package")
    secrets = KeyPackageSecrets(record.init_private, record.encryption_private, record.signature_private)
    return KeyPackagePrivate(record.key_package, secrets)


# --- groups --------------------------------------------------------------------------------


def create_group(
    identity: Identity,
    group_id: bytes,
    *,
    extensions: Sequence[Extension] = (),
    leaf_extensions: Sequence[Extension] = (),
    supported_extensions: Sequence[int] = (),
    max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS,
    config: GroupConfig | None = None,
    now: int | None = None,
    rng: Rng | None = None,
) -> GroupState:
    """A new group of one, with ``extensions`` in its GroupContext.

    The creator's leaf supports every extension type among ``extensions``
    and ``supported_extensions``; ``now`` starts its lifetime.
    """
    cs = suite(identity.suite_id)
    types = {*supported_extensions, *(e.extension_type for e in (*extensions, *leaf_extensions))}
    return create.create_group(
        cs,
        group_id,
        identity.basic_credential,
        identity.signature,
        capabilities=capabilities_for(identity, types),
        extensions=extensions,
        leaf_extensions=leaf_extensions,
        lifetime=None if now is None else default_lifetime(now),
        config=config or GroupConfig(max_past_epochs=max_past_epochs),
        rng=rng,
    )


def own_credential(state: GroupState) -> str:
    """Our credential string in the group."""
    return credential_string(state.own_leaf_node.credential)


def member_credentials(state: GroupState) -> dict[int, str]:
    """Each member's credential string, by leaf index."""
    return {leaf: credential_string(node.credential) for leaf, node in state.members().items()}


def member_leaf_extension(state: GroupState, extension_type: int) -> dict[str, bytes | None]:
    """Each member's leaf extension of ``extension_type`` (None where its leaf has none), by credential."""
    found: dict[str, bytes | None] = {}
    for node in state.members().values():
        data = next((e.extension_data for e in node.extensions if e.extension_type == extension_type), None)
        found[credential_string(node.credential)] = data
    return found


def leaf_of(state: GroupState, credential: str) -> int:
    """The leaf of the member with ``credential`` (:class:`InvalidArgument` when none).

    Where one credential has several clients (an XMTP inbox's installations), this is the first of their
    leaves; :func:`leaf_of_signature_key` names one client.
    """
    for leaf, text in member_credentials(state).items():
        if text == credential.lower():
            return leaf
    raise InvalidArgument(f"{credential[:16]} is not a member of the group at epoch {state.epoch}")


def member_signature_keys(state: GroupState) -> dict[int, bytes]:
    """Each member's leaf signature key, by leaf index: unique per client even where credentials are shared."""
    return {leaf: bytes(node.signature_key) for leaf, node in state.members().items()}


def leaf_of_signature_key(state: GroupState, signature_key: bytes) -> int:
    """The leaf of the client whose signature key is ``signature_key`` (:class:`InvalidArgument` when none)."""
    for leaf, key in member_signature_keys(state).items():
        if key == signature_key:
            return leaf
    raise InvalidArgument(f"no member has signature key {signature_key.hex()[:16]}… at epoch {state.epoch}")


@attrs.frozen
class CommitResult:
    """Output of :func:`commit`.

    ``message``: the commit to publish.  ``welcomes``: the Welcome for each
    added member, by credential (one Welcome serves them all: RFC 9420
    encrypts its secrets to each).  ``welcomes_by_signature_key``: the same,
    by each added client's signature key, which stays one entry per client
    where clients share a credential (an XMTP inbox's installations).
    ``new_state``: our state at epoch + 1.  ``pending_state``: our current
    state with the commit remembered; processing the commit's own message
    with it gives ``new_state``.
    """

    message: bytes
    welcomes: dict[str, bytes]
    new_state: GroupState = attrs.field(repr=False)
    pending_state: GroupState = attrs.field(repr=False)
    welcomes_by_signature_key: dict[bytes, bytes] = attrs.field(factory=dict)


def commit(
    state: GroupState,
    *,
    add: Iterable[KeyPackage | bytes] = (),
    remove: Iterable[str] = (),
    remove_leaves: Iterable[int] = (),
    self_update: bool = False,
    proposals_by_ref: Iterable[bytes] | None = None,
    extensions: Sequence[Extension] | None = None,
    rng: Rng | None = None,
) -> CommitResult:
    """Commit adds, removes, a new set of group context ``extensions`` and/or a self-update.

    ``remove`` names members by credential (one leaf each); ``remove_leaves`` by leaf index, for
    credentials shared by several clients (see :func:`leaf_of_signature_key`).

    ``proposals_by_ref`` names pending proposals to include (default: all of
    them, but an Update or Remove of a member whose SelfRemove is pending,
    which the SelfRemove supersedes); ``self_update`` forces an UpdatePath
    even when nothing requires one.  SelfRemoves of other members are
    committed by reference only; our own never (another member commits it).
    """
    if isinstance(remove, str):
        raise InvalidArgument("remove must be a list of credentials, not a single string")
    packages = [key_package_from_bytes(bytes(kp)) if isinstance(kp, (bytes, bytearray)) else kp for kp in add]
    leaves = [leaf_of(state, credential) for credential in remove]
    members = state.members()
    for leaf in remove_leaves:
        if leaf not in members:
            raise InvalidArgument(f"leaf {leaf} holds no member at epoch {state.epoch}")
        if leaf not in leaves:
            leaves.append(leaf)
    proposals: list[Proposal] = [Remove(leaf) for leaf in leaves]
    proposals += [Add(kp) for kp in packages]
    if extensions is not None:
        proposals.append(GroupContextExtensions(tuple(extensions)))
    outcome = commits.commit(state, proposals, by_reference=proposals_by_ref, force_path=self_update, rng=rng)
    welcome, tree = outcome.welcome, outcome.new_state.tree
    added = [] if welcome is None else [tree.member(leaf) for leaf in outcome.added]
    return CommitResult(
        outcome.message,
        {credential_string(node.credential): welcome for node in added if welcome is not None},
        outcome.new_state,
        outcome.pending_state,
        {bytes(node.signature_key): welcome for node in added if welcome is not None},
    )


def propose(
    state: GroupState,
    *,
    add: KeyPackage | None = None,
    remove: str | None = None,
    self_remove: bool = False,
    rng: Rng | None = None,
) -> tuple[bytes, GroupState]:
    """Send one proposal for a later commit: add a KeyPackage, remove a member, or remove ourselves.

    ``self_remove`` sends a SelfRemove (draft-ietf-mls-extensions, as a
    PublicMessage) when every member supports it (:func:`self_remove_capable`),
    else a Remove of our own leaf, as MDK does; receivers see either as a
    proposal of kind ``"self_remove"``.
    """
    if sum((add is not None, remove is not None, self_remove)) != 1:
        raise InvalidArgument("propose exactly one of add=, remove= or self_remove=True")
    if add is not None:
        outcome = sending_proposals.propose_add(state, add, rng=rng)
    elif self_remove and self_remove_capable(state):
        outcome = sending_proposals.propose_self_remove(state, rng=rng)
    else:
        leaf = state.own_leaf if self_remove else leaf_of(state, remove or "")
        outcome = sending_proposals.propose_remove(state, leaf, rng=rng)
    return outcome.message, outcome.new_state


def self_remove_capable(state: GroupState) -> bool:
    """Whether ``propose(state, self_remove=True)`` sends a SelfRemove (every member supports it), not a Remove."""
    return sending_proposals.self_remove_capable(state)


def encrypt_application(state: GroupState, plaintext: bytes, *, rng: Rng | None = None) -> tuple[bytes, GroupState]:
    """``plaintext`` as a PrivateMessage of the current epoch, and the state without the key it used."""
    return application.encrypt_application(state, plaintext, rng=rng)


def join_from_welcome(
    identity: Identity,
    key_package_private: KeyPackagePrivate,
    welcome: bytes,
    *,
    max_past_epochs: int = DEFAULT_MAX_PAST_EPOCHS,
    config: GroupConfig | None = None,
) -> GroupState:
    """Join the group ``welcome`` invites our KeyPackage into."""
    if key_package_private.secrets.signature_private != identity.signature.private:
        raise InvalidArgument("the key package was made for another identity")
    return join.join_from_welcome(
        welcome,
        key_package_private.key_package,
        key_package_private.secrets,
        config=config or GroupConfig(max_past_epochs=max_past_epochs),
    )


def exporter_secret(
    state: GroupState,
    label: str = "marmot",
    context: bytes = b"group-event",
    length: int = 32,
    *,
    epoch: int | None = None,
) -> bytes:
    """MLS-Exporter(label, context, length) of the current or a retained ``epoch``."""
    return state.exporter(label, context, length, epoch=epoch)


# --- processing ----------------------------------------------------------------------------


ProposalKind = Literal["add", "remove", "self_remove", "other"]


@attrs.frozen
class ApplicationReceived:
    """Application data from a member."""

    sender_credential: str
    plaintext: bytes = attrs.field(repr=False)
    epoch: int
    new_state: GroupState = attrs.field(repr=False)
    #: The sender's leaf signature key: one credential may have several clients (RFC 9420 5.3), this names one.
    sender_signature_key: bytes = b""


@attrs.frozen
class CommitApplied:
    """A commit was applied (ours, another member's, or one that removed us: ``we_were_removed``).

    ``removed`` names every member the commit removed; ``self_removed`` those
    of them that left by their own SelfRemove proposal, not by a Remove.
    """

    committer_credential: str
    new_epoch: int
    added: tuple[str, ...]
    removed: tuple[str, ...]
    self_removed: tuple[str, ...]
    updated: tuple[str, ...]
    we_were_removed: bool
    extensions_changed: bool
    new_state: GroupState = attrs.field(repr=False)
    #: The signature keys of the clients added and removed, in the order of ``added`` and ``removed``.
    added_signature_keys: tuple[bytes, ...] = ()
    removed_signature_keys: tuple[bytes, ...] = ()
    #: The committer's signature key; the signature key of each proposal's sender, in the commit's list order
    #: (empty bytes for a sender that is no member); how many PreSharedKey proposals it carries.
    committer_signature_key: bytes = b""
    proposal_sender_keys: tuple[bytes, ...] = ()
    psk_proposals: int = 0
    #: Whether the commit carried an UpdatePath (a fresh leaf for the committer).
    committed_with_path: bool = False
    #: The GroupContext extensions its GroupContextExtensions proposal sets (None without one): what the group
    #: becomes even when the commit removed us, whose ``new_state`` keeps the context it had.
    group_context_extensions: tuple[Extension, ...] | None = None


@attrs.frozen
class ProposalReceived:
    """A proposal, now pending in ``new_state``; ``subject_credential`` is who would be added or removed."""

    kind: ProposalKind
    proposer_credential: str
    proposal_ref: bytes
    subject_credential: str | None
    epoch: int
    new_state: GroupState = attrs.field(repr=False)


ProcessResult = ApplicationReceived | CommitApplied | ProposalReceived


def process_message(state: GroupState, message: bytes) -> ProcessResult:
    """Process one group message (see :func:`protocols.libraries.mls.group.process.process`)."""
    received = process(state, message)
    if isinstance(received, ApplicationMessage):
        return ApplicationReceived(
            credential_string(received.credential),
            received.data,
            received.epoch,
            received.new_state,
            received.signature_key,
        )
    if isinstance(received, ProposalMessage):
        return _proposal_received(state, received)
    return _commit_applied(state, received)


def _sender_credential(state: GroupState, sender: Sender) -> str:
    if isinstance(sender, SenderMember):
        return credential_string(state.tree.member(sender.leaf_index).credential)
    return f"<{sender.sender_type.name.lower()}>"


def _proposal_received(state: GroupState, received: ProposalMessage) -> ProposalReceived:
    proposal, proposer = received.proposal, _sender_credential(state, received.sender)
    kind: ProposalKind = "other"
    subject = None
    if isinstance(proposal, Add):
        kind, subject = "add", credential_string(proposal.key_package.leaf_node.credential)
    elif isinstance(proposal, Remove):
        subject = credential_string(state.tree.member(proposal.removed).credential)
        kind = "self_remove" if received.sender == SenderMember(proposal.removed) else "remove"
    elif isinstance(proposal, SelfRemove):
        kind, subject = "self_remove", proposer
    return ProposalReceived(kind, proposer, received.ref, subject, state.epoch, received.new_state)


def _commit_applied(state: GroupState, received: CommitMessage) -> CommitApplied:
    summary = received.summary
    # A member committer is named in the tree it committed to; a new member only in the tree it joined.
    committer_tree = state.tree if isinstance(summary.committer, SenderMember) else received.new_state.tree
    return CommitApplied(
        committer_credential=credential_string(committer_tree.member(summary.committer_leaf).credential),
        new_epoch=summary.new_epoch,
        added=tuple(credential_string(node.credential) for _, node in summary.added),
        removed=tuple(credential_string(node.credential) for _, node in summary.removed),
        self_removed=tuple(
            credential_string(node.credential) for leaf, node in summary.removed if leaf in summary.self_removed
        ),
        updated=tuple(_updated_credentials(state, received)),
        we_were_removed=received.we_were_removed,
        extensions_changed=summary.extensions_changed,
        new_state=received.new_state,
        added_signature_keys=tuple(bytes(node.signature_key) for _, node in summary.added),
        removed_signature_keys=tuple(bytes(node.signature_key) for _, node in summary.removed),
        committer_signature_key=bytes(committer_tree.member(summary.committer_leaf).signature_key),
        proposal_sender_keys=tuple(_sender_signature_key(state, sender) for sender in received.proposal_senders),
        psk_proposals=received.psks,
        committed_with_path=summary.committer_leaf in summary.updated,
        group_context_extensions=received.extensions,
    )


def _sender_signature_key(state: GroupState, sender: Sender) -> bytes:
    if isinstance(sender, SenderMember) and state.tree.leaf(sender.leaf_index):
        return bytes(state.tree.member(sender.leaf_index).signature_key)
    return b""


def _updated_credentials(state: GroupState, received: CommitMessage) -> list[str]:
    tree = state.tree if received.we_were_removed else received.new_state.tree
    return [credential_string(tree.member(leaf).credential) for leaf in received.summary.updated if tree.leaf(leaf)]


# --- the cleartext header ------------------------------------------------------------------


#: A group message's content type as :class:`MessageHeader` names it (RFC 9420's names, in lower case).
ContentTypeName = Literal["application", "proposal", "commit"]
_CONTENT_TYPE_NAMES: dict[ContentType, ContentTypeName] = {
    ContentType.APPLICATION: "application",
    ContentType.PROPOSAL: "proposal",
    ContentType.COMMIT: "commit",
}


@attrs.frozen
class MessageHeader:
    """The cleartext part of a group message: its group, epoch and content type."""

    group_id: bytes
    epoch: int
    content_type: ContentTypeName


def peek(message: bytes) -> MessageHeader:
    """The cleartext header of a PublicMessage or PrivateMessage; no keys needed (a server can call it)."""
    decoded = decode(MLSMessage, message)
    inner = decoded.message
    if isinstance(inner, PublicMessage):
        content = inner.content
        return MessageHeader(content.group_id, content.epoch, _CONTENT_TYPE_NAMES[content.content_type])
    if isinstance(inner, PrivateMessage):
        return MessageHeader(inner.group_id, inner.epoch, _CONTENT_TYPE_NAMES[inner.content_type])
    raise InvalidMessage(f"a {decoded.wire_format.name.lower()} is not a group message")


def skipped_generations(state: GroupState) -> frozenset[tuple[int, int, int]]:
    """``(epoch, leaf, generation)`` of every application message ``state`` stepped over without receiving it,
    in the current epoch and the earlier ones it keeps: a later message of the same sender was read first.

    The keys of such generations wait in the state (within the sender ratchet's out-of-order window) for
    messages that arrive late, or that whoever handed the messages out left out."""
    views = [state.view, *(past.view for past in state.past)]
    return frozenset(
        (view.group_context.epoch, leaf, generation)
        for view in views
        for (leaf, kind), ratchet in view.secret_tree.ratchets.items()
        if kind is RatchetKind.APPLICATION
        for generation in ratchet.kept
    )


# --- snapshots -----------------------------------------------------------------------------


def snapshot(state: GroupState) -> bytes:
    """The versioned stored form of ``state`` (every private key in it: seal it at rest)."""
    return snapshots.snapshot(state)


def restore(data: bytes) -> GroupState:
    """The state :func:`snapshot` stored; anything else, the old flat-tree engine's included, is :class:`InvalidSnapshot`."""
    return snapshots.restore(data)


# Storing a state in two parts, the epoch's and the ratchets' (see :mod:`.group.snapshot_split`).
Ratchets = split.Ratchets
epoch_part = split.epoch_part
ratchets_of = split.ratchets_of
ratchets_bytes = split.ratchets_bytes
read_ratchets = split.read_ratchets
with_ratchets = split.with_ratchets
restore_parts = split.restore_parts
only_ratchets_differ = split.only_ratchets_differ
holds_no_ratchets = split.holds_no_ratchets
without_ratchets = split.without_ratchets


# --- the interface -------------------------------------------------------------------------


@runtime_checkable
class GroupEngine(Protocol):
    """What the group engine offers Tessera's protocol plugins: the module's functions, as one object."""

    def new_identity(self, identity_hex: str, *, suite_id: int = ..., rng: Rng | None = None) -> Identity: ...
    def identity_to_bytes(self, identity: Identity) -> bytes: ...
    def identity_from_bytes(self, data: bytes) -> Identity: ...
    def create_key_package(
        self,
        identity: Identity,
        *,
        extensions: Sequence[Extension] = ...,
        leaf_extensions: Sequence[Extension] = ...,
        supported_extensions: Sequence[int] = ...,
        last_resort: bool = ...,
        now: int | None = None,
        rng: Rng | None = None,
    ) -> tuple[KeyPackage, KeyPackagePrivate]: ...
    def key_package_to_bytes(self, key_package: KeyPackage) -> bytes: ...
    def key_package_from_bytes(self, data: bytes, *, verify: bool = True) -> KeyPackage: ...
    def key_package_private_to_bytes(self, private: KeyPackagePrivate) -> bytes: ...
    def key_package_private_from_bytes(self, data: bytes) -> KeyPackagePrivate: ...
    def create_group(
        self,
        identity: Identity,
        group_id: bytes,
        *,
        extensions: Sequence[Extension] = ...,
        leaf_extensions: Sequence[Extension] = ...,
        supported_extensions: Sequence[int] = ...,
        max_past_epochs: int = ...,
        config: GroupConfig | None = None,
        now: int | None = None,
        rng: Rng | None = None,
    ) -> GroupState: ...
    def commit(
        self,
        state: GroupState,
        *,
        add: Iterable[KeyPackage | bytes] = ...,
        remove: Iterable[str] = ...,
        self_update: bool = ...,
        proposals_by_ref: Iterable[bytes] | None = None,
        extensions: Sequence[Extension] | None = None,
        rng: Rng | None = None,
    ) -> CommitResult: ...
    def propose(
        self,
        state: GroupState,
        *,
        add: KeyPackage | None = None,
        remove: str | None = None,
        self_remove: bool = False,
        rng: Rng | None = None,
    ) -> tuple[bytes, GroupState]: ...
    def self_remove_capable(self, state: GroupState) -> bool: ...
    def encrypt_application(
        self, state: GroupState, plaintext: bytes, *, rng: Rng | None = None
    ) -> tuple[bytes, GroupState]: ...
    def process_message(self, state: GroupState, message: bytes) -> ProcessResult: ...
    def peek(self, message: bytes) -> MessageHeader: ...
    def join_from_welcome(
        self,
        identity: Identity,
        key_package_private: KeyPackagePrivate,
        welcome: bytes,
        *,
        max_past_epochs: int = ...,
        config: GroupConfig | None = None,
    ) -> GroupState: ...
    def exporter_secret(
        self, state: GroupState, label: str = ..., context: bytes = ..., length: int = ..., *, epoch: int | None = None
    ) -> bytes: ...
    def own_credential(self, state: GroupState) -> str: ...
    def member_credentials(self, state: GroupState) -> dict[int, str]: ...
    def snapshot(self, state: GroupState) -> bytes: ...
    def restore(self, data: bytes) -> GroupState: ...


class Rfc9420Engine:
    """The shipped engine: RFC 9420, every cipher suite of section 17.1 (its operations are this module's functions)."""

    name = "rfc9420"
    new_identity = staticmethod(new_identity)
    identity_to_bytes = staticmethod(identity_to_bytes)
    identity_from_bytes = staticmethod(identity_from_bytes)
    create_key_package = staticmethod(create_key_package)
    key_package_to_bytes = staticmethod(key_package_to_bytes)
    key_package_from_bytes = staticmethod(key_package_from_bytes)
    key_package_private_to_bytes = staticmethod(key_package_private_to_bytes)
    key_package_private_from_bytes = staticmethod(key_package_private_from_bytes)
    create_group = staticmethod(create_group)
    commit = staticmethod(commit)
    propose = staticmethod(propose)
    self_remove_capable = staticmethod(self_remove_capable)
    encrypt_application = staticmethod(encrypt_application)
    process_message = staticmethod(process_message)
    peek = staticmethod(peek)
    join_from_welcome = staticmethod(join_from_welcome)
    exporter_secret = staticmethod(exporter_secret)
    own_credential = staticmethod(own_credential)
    member_credentials = staticmethod(member_credentials)
    snapshot = staticmethod(snapshot)
    restore = staticmethod(restore)


ENGINE: GroupEngine = Rfc9420Engine()
"""The engine plugins use."""
