"""Errors of the ratchet tree, its validation and TreeKEM.

Each refines the library error that already means the same thing: a tree or
path that came off the wire and does not hold up is an
:class:`~protocols.libraries.mls.errors.InvalidMessage`, a bad leaf signature is also an
:class:`~protocols.libraries.mls.errors.InvalidSignature`, and asking the tree for
something it cannot do is an :class:`~protocols.libraries.mls.errors.InvalidArgument`.
Messages name nodes, leaves and checks, never key material or path secrets.
"""

from __future__ import annotations

from ..errors import InvalidArgument, InvalidMessage, InvalidSignature, MlsError


class InvalidTree(InvalidMessage):
    """A ratchet tree (from a Welcome or a ``ratchet_tree`` extension) is malformed or fails validation."""


class TreeHashMismatch(InvalidTree):
    """The tree's root hash is not the one the group agreed on (the GroupInfo's ``tree_hash``)."""


class ParentHashInvalid(InvalidTree):
    """A non-blank parent node is not parent-hash valid (RFC 9420 §7.9.2); ``node`` is its index."""

    def __init__(self, node: int, detail: str) -> None:
        self.node = node
        super().__init__(f"parent node {node} is not parent-hash valid: {detail}")


class UnmergedLeavesInvalid(InvalidTree):
    """A parent's ``unmerged_leaves`` disagree with the tree (RFC 9420 §7.1, §12.4.3.1)."""


class DuplicateKey(InvalidTree):
    """Two nodes of the tree carry the same encryption key, or two leaves the same signature key."""


class InvalidLeafNode(InvalidMessage):
    """A LeafNode fails validation (RFC 9420 §7.3); the message names the leaf and the check."""


class InvalidLeafSignature(InvalidLeafNode, InvalidSignature):
    """A LeafNode's signature does not verify under its own ``signature_key``."""


class InvalidUpdatePath(InvalidMessage):
    """An UpdatePath cannot be merged: wrong shape, wrong parent hash, reused or mismatching keys."""


class NoSuchLeaf(InvalidArgument):
    """A tree operation named a leaf that is outside the tree or blank."""


class PrivateStateMismatch(InvalidArgument):
    """A private key of the TreeKEM state does not belong to the public tree node it is kept for."""


class NoDecryptionKey(MlsError):
    """None of the nodes an UpdatePath encrypted to on our side is one we hold a private key for.

    The UpdatePath may be well formed: our private state is out of step with
    the sender's view of the tree (or we were added by this very commit).
    """
