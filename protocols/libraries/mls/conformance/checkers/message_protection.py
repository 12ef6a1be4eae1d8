"""message-protection.json: a proposal, a commit and application data, public and private, in a group of two.

Leaf 1 sends and leaf 0 receives.  The vector's PublicMessages (proposal,
commit) must verify with the membership and signature keys and give the raw
value, and so must our own protection of that value; the vector's
PrivateMessages must open with the secret tree, and so must our own.
"""

from __future__ import annotations

from typing import Any

import attrs

from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.messages import (
    ApplicationData,
    AuthenticatedContent,
    Commit,
    Content,
    GroupContext,
    MLSMessage,
    Proposal,
    PublicMessage,
)
from protocols.libraries.mls.messages.registries import ProtocolVersion, WireFormat
from protocols.libraries.mls.protection import (
    EpochView,
    protect_private,
    protect_public,
    sign_own_content,
    unprotect,
    with_confirmation_tag,
)
from protocols.libraries.mls.schedule import RatchetWindow, SecretTree

KEYS = frozenset(
    {
        "cipher_suite",
        "group_id",
        "epoch",
        "tree_hash",
        "confirmed_transcript_hash",
        "signature_priv",
        "signature_pub",
        "encryption_secret",
        "sender_data_secret",
        "membership_key",
        "proposal",
        "proposal_pub",
        "proposal_priv",
        "commit",
        "commit_pub",
        "commit_priv",
        "application",
        "application_priv",
    }
)
SENDER, RECEIVER, N_LEAVES = 1, 0, 2
KINDS = ("proposal", "commit", "application")
PUBLIC_KINDS = ("proposal", "commit")


@attrs.frozen
class Group:
    """One vector's epoch, as its two members see it."""

    vector: dict[str, Any]

    @property
    def suite(self) -> CipherSuite:
        return suite(self.vector["cipher_suite"])

    @property
    def group_context(self) -> GroupContext:
        v = self.vector
        return GroupContext(
            ProtocolVersion.MLS10,
            v["cipher_suite"],
            h(v["group_id"]),
            v["epoch"],
            h(v["tree_hash"]),
            h(v["confirmed_transcript_hash"]),
            (),
        )

    @property
    def signature_private(self) -> bytes:
        """The sender's signing key (suite 5's is a 65-byte P-521 scalar, which the crypto layer takes as it is)."""
        return h(self.vector["signature_priv"])

    @property
    def signature_public(self) -> bytes:
        return h(self.vector["signature_pub"])

    def view(
        self, own_leaf: int, keys: dict[int, bytes] | None = None, window: RatchetWindow | None = None
    ) -> EpochView:
        """A member's view; by default only the sender's leaf has a signature key."""
        v = self.vector
        tree = SecretTree.create(self.suite, h(v["encryption_secret"]), N_LEAVES, window)
        signature_keys = {SENDER: self.signature_public} if keys is None else keys
        return EpochView(
            self.suite,
            self.group_context,
            own_leaf,
            h(v["membership_key"]),
            h(v["sender_data_secret"]),
            tree,
            signature_keys.get,
        )

    def sender(self, window: RatchetWindow | None = None) -> EpochView:
        return self.view(SENDER, window=window)

    def receiver(self, window: RatchetWindow | None = None) -> EpochView:
        return self.view(RECEIVER, window=window)

    def raw(self, kind: str) -> Content:
        """The vector's raw proposal, commit or application data, decoded."""
        data = h(self.vector[kind])
        if kind == "proposal":
            return decode(Proposal, data)
        if kind == "commit":
            return decode(Commit, data)
        return ApplicationData(data)

    def message(self, name: str) -> MLSMessage:
        """One of the vector's serialized messages (``proposal_pub``, ``application_priv``...)."""
        return decode(MLSMessage, h(self.vector[name]))

    def message_bytes(self, name: str) -> bytes:
        return h(self.vector[name])

    def confirmation_tag(self) -> bytes | None:
        """The vector's commit tag: its key is not in the vector, and protection only carries the tag."""
        message = self.message("commit_pub").message
        return message.auth.confirmation_tag if isinstance(message, PublicMessage) else None

    def signed(self, kind: str, wire_format: WireFormat) -> AuthenticatedContent:
        """The raw value of ``kind`` signed by the sender, with the vector's confirmation tag on a commit."""
        authenticated = sign_own_content(self.sender(), self.signature_private, wire_format, self.raw(kind))
        tag = self.confirmation_tag()
        if kind == "commit" and tag is not None:
            authenticated = with_confirmation_tag(authenticated, tag)
        return authenticated


def through_the_wire(message: Any) -> MLSMessage:
    """A protected message encoded and decoded, as a receiver gets it."""
    return decode(MLSMessage, encode(MLSMessage(ProtocolVersion.MLS10, message)))


def check(entry: dict[str, Any]) -> list[Failure]:
    group = Group(entry)
    failures = compare(
        "signature_pub", group.suite.signature_public_key(group.signature_private), group.signature_public
    )
    for kind in PUBLIC_KINDS:
        _, received = unprotect(group.receiver(), group.message(f"{kind}_pub"))
        failures += compare(f"{kind}_pub", received.content.content, group.raw(kind))
        ours = protect_public(group.sender(), group.signed(kind, WireFormat.MLS_PUBLIC_MESSAGE))
        _, received = unprotect(group.receiver(), through_the_wire(ours))
        failures += compare(f"{kind} (our PublicMessage)", received.content.content, group.raw(kind))
    for kind in KINDS:
        _, received = unprotect(group.receiver(), group.message(f"{kind}_priv"))
        failures += compare(f"{kind}_priv", received.content.content, group.raw(kind))
        _, ours_private = protect_private(group.sender(), group.signed(kind, WireFormat.MLS_PRIVATE_MESSAGE))
        _, received = unprotect(group.receiver(), through_the_wire(ours_private))
        failures += compare(f"{kind} (our PrivateMessage)", received.content.content, group.raw(kind))
    return failures
