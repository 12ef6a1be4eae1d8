"""The groups of message-protection.json: two members, leaf 1 sending, leaf 0 receiving.

Each vector gives one epoch's GroupContext fields, its membership key,
sender-data and encryption secrets, and the sender's signature key pair;
:class:`Group` builds both members' views of that epoch from them.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from protocols.mls.codec import decode
from protocols.mls.crypto import CipherSuite, suite
from protocols.mls.messages import ApplicationData, Commit, Content, GroupContext, MLSMessage, Proposal
from protocols.mls.messages.registries import ProtocolVersion
from protocols.mls.protection import EpochView
from protocols.mls.schedule import RatchetWindow, SecretTree
from tests.mls.crypto._vectors import h, mls

VECTORS = mls("message-protection")
CASES = pytest.mark.parametrize("vector", VECTORS, ids=[f"suite-{v['cipher_suite']}" for v in VECTORS])

SENDER, RECEIVER, N_LEAVES = 1, 0, 2
KINDS = ("proposal", "commit", "application")


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
        """The sender's signing key as the crypto layer takes it.

        Suite 5's vector writes the P-521 scalar without its leading zero
        byte (65 bytes); the crypto layer wants the fixed 66-byte form, so it
        is left-padded here.  The public key derived from it is checked
        against the vector's in the tests.
        """
        private = h(self.vector["signature_priv"])
        if self.suite.id == 5:
            return private.rjust(66, b"\x00")
        return private

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
