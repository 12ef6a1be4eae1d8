"""Validating leaf nodes (RFC 9420 §7.3) and whole ratchet trees received from others (§12.4.3.1).

:func:`validate_leaf_node` checks what one LeafNode must satisfy on its own:
its signature, its source, its capabilities against its own credential and
extensions and against the group's required capabilities, and optionally its
lifetime.  :func:`validate_leaf_in_tree` adds what it must satisfy against
the other members (credential types everyone supports, unique keys).
:func:`validate_tree` runs all of it, plus the unmerged-leaves, parent-hash,
tree-hash and key-uniqueness checks, on a tree from a Welcome or a
``ratchet_tree`` extension.

Credentials themselves are for the application's authentication service
(RFC 9420 §5.3.1), not for this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from ..crypto import CipherSuite
from ..messages import (
    ExtensionType,
    KeyPackageOrigin,
    LeafNode,
    LeafNodeSource,
    ProposalType,
    RequiredCapabilities,
)
from . import math as tree_math
from .errors import DuplicateKey, InvalidLeafNode, InvalidLeafSignature, TreeHashMismatch, UnmergedLeavesInvalid
from .leaf_node import leaf_signature_valid, source_name
from .node import encryption_key, leaf_span
from .parent_hash import verify_parent_hashes
from .ratchet_tree import RatchetTree

#: Types every client supports without listing them in its capabilities (RFC 9420 §7.2).
DEFAULT_EXTENSIONS = frozenset(ExtensionType)
DEFAULT_PROPOSALS = frozenset(ProposalType)


def validate_leaf_node(
    cs: CipherSuite,
    leaf: LeafNode,
    group_id: bytes,
    leaf_index: int,
    *,
    source: LeafNodeSource | None = None,
    required: RequiredCapabilities | None = None,
    now: int | None = None,
) -> None:
    """Check ``leaf`` on its own, as leaf ``leaf_index`` of group ``group_id`` (RFC 9420 §7.3).

    ``source`` is the source the leaf must have where it appears (a
    KeyPackage, an Update, a Commit's path; ``None`` in a tree, where any
    is fine); ``required`` is the group's ``required_capabilities``; with
    ``now`` (seconds since the epoch) a key package leaf's lifetime must
    cover it.  Raises :class:`InvalidLeafNode` or :class:`InvalidLeafSignature`.
    """
    where = f"leaf {leaf_index}"
    if source is not None and leaf.leaf_node_source.leaf_node_source != source:
        raise InvalidLeafNode(f"{where} comes from {source_name(leaf.leaf_node_source)}, not {source.name.lower()}")
    capabilities = leaf.capabilities
    if leaf.credential.credential_type not in capabilities.credentials:
        raise InvalidLeafNode(f"{where}: its credential type is not among its own capabilities")
    unlisted = {e.extension_type for e in leaf.extensions} - DEFAULT_EXTENSIONS - set(capabilities.extensions)
    if unlisted:
        raise InvalidLeafNode(f"{where}: extensions {sorted(unlisted)} are not among its capabilities")
    if required is not None:
        check_required_capabilities(where, leaf, required)
    if now is not None:
        _check_lifetime(where, leaf, now)
    if not leaf_signature_valid(cs, leaf, group_id, leaf_index):
        raise InvalidLeafSignature(f"{where}: the signature does not verify")


def check_required_capabilities(where: str, leaf: LeafNode, required: RequiredCapabilities) -> None:
    """Refuse (:class:`InvalidLeafNode`) a leaf lacking a type the group's ``required_capabilities`` names."""
    capabilities = leaf.capabilities
    missing = [
        *(
            f"extension {t}"
            for t in required.extension_types
            if t not in DEFAULT_EXTENSIONS | set(capabilities.extensions)
        ),
        *(f"proposal {t}" for t in required.proposal_types if t not in DEFAULT_PROPOSALS | set(capabilities.proposals)),
        *(f"credential {t}" for t in required.credential_types if t not in capabilities.credentials),
    ]
    if missing:
        raise InvalidLeafNode(f"{where} lacks the group's required capabilities: {', '.join(missing)}")


def _check_lifetime(where: str, leaf: LeafNode, now: int) -> None:
    origin = leaf.leaf_node_source
    if isinstance(origin, KeyPackageOrigin) and not origin.lifetime.not_before <= now <= origin.lifetime.not_after:
        raise InvalidLeafNode(f"{where}: its lifetime does not cover the current time")


def validate_leaf_in_tree(tree: RatchetTree, leaf: LeafNode, leaf_index: int) -> None:
    """Check ``leaf``, about to sit at ``leaf_index``, against the tree's other members (RFC 9420 §7.3).

    Its credential type must be supported by every other member and it must
    support theirs; its signature and encryption keys must be new to the
    other leaves, and its encryption key to every parent node.
    """
    leaf_type = leaf.credential.credential_type
    supported = set(leaf.capabilities.credentials)
    for index, other in tree.members():
        if index == leaf_index:
            continue
        if leaf_type not in other.capabilities.credentials or other.credential.credential_type not in supported:
            raise InvalidLeafNode(f"leaf {leaf_index} and leaf {index} do not support each other's credential type")
        if other.signature_key == leaf.signature_key:
            raise DuplicateKey(f"leaf {leaf_index} has the signature key of leaf {index}")
        if other.encryption_key == leaf.encryption_key:
            raise DuplicateKey(f"leaf {leaf_index} has the encryption key of leaf {index}")
    for index, parent in tree.parents():
        if parent.encryption_key == leaf.encryption_key:
            raise DuplicateKey(f"leaf {leaf_index} has the encryption key of parent node {index}")


def validate_tree(
    tree: RatchetTree,
    group_id: bytes,
    *,
    tree_hash: bytes | None = None,
    required: RequiredCapabilities | None = None,
    now: int | None = None,
) -> None:
    """Check a received ratchet tree before joining with it (RFC 9420 §12.4.3.1).

    ``tree_hash`` is the hash the group agreed on (the GroupInfo's); the
    leaves are checked as in :func:`validate_leaf_node` with ``required`` and
    ``now``.  Raises a subclass of :class:`~.errors.InvalidTree` or
    :class:`InvalidLeafNode`.
    """
    if tree_hash is not None and tree.tree_hash() != tree_hash:
        raise TreeHashMismatch("the ratchet tree's hash is not the group's tree hash")
    check_unmerged_leaves(tree)
    check_unique_keys(tree)
    # Leaves before parent hashes: a forged leaf also breaks the parent hashes above it, and naming the leaf helps more.
    in_use = {leaf.credential.credential_type for _, leaf in tree.members()}
    for index, leaf in tree.members():
        validate_leaf_node(tree.suite, leaf, group_id, index, required=required, now=now)
        if not in_use <= set(leaf.capabilities.credentials):
            raise InvalidLeafNode(f"leaf {index} does not support every credential type in use: {sorted(in_use)}")
    verify_parent_hashes(tree)


def check_unmerged_leaves(tree: RatchetTree) -> None:
    """Each parent's unmerged leaves: sorted, non-blank leaves below it, also unmerged at the parents between."""
    for index, parent in tree.parents():
        leaves = parent.unmerged_leaves
        if any(a >= b for a, b in pairwise(leaves)):
            raise UnmergedLeavesInvalid(f"the unmerged leaves of node {index} are not in increasing order")
        span = leaf_span(index)
        for leaf in leaves:
            if leaf not in span or tree.nodes[2 * leaf] is None:
                raise UnmergedLeavesInvalid(f"node {index} lists leaf {leaf}, which is not a member below it")
            for between in tree_math.direct_path(2 * leaf, tree.n_leaves):
                if between == index:
                    break
                node = tree.parent(between)
                if node is not None and leaf not in node.unmerged_leaves:
                    raise UnmergedLeavesInvalid(f"leaf {leaf} is unmerged at node {index} but not at node {between}")


def check_unique_keys(tree: RatchetTree) -> None:
    """No two nodes share an encryption key and no two leaves a signature key (RFC 9420 §7.3, §12.4.3.1)."""
    _refuse_repeats("encryption key", ((i, encryption_key(n)) for i, n in enumerate(tree.nodes) if n is not None))
    _refuse_repeats("signature key", ((2 * i, leaf.signature_key) for i, leaf in tree.members()))


def _refuse_repeats(what: str, keys: Iterable[tuple[int, bytes]]) -> None:
    seen: dict[bytes, int] = {}
    for index, key in keys:
        first = seen.setdefault(key, index)
        if first != index:
            raise DuplicateKey(f"nodes {first} and {index} have the same {what}")
