"""Checking a received UpdatePath against the public tree and merging it (RFC 9420 §7.5, §7.6, §12.4.2).

Before anyone decrypts anything, the path must fit the tree the commit's
proposals produced: a valid leaf from a commit, signed for the sender's
position, with a new encryption key; one node per node of the sender's
filtered direct path, each with one ciphertext per node of its copath
child's resolution (new members excluded); keys found nowhere else in the
tree; and a leaf that signs the parent hash the path's keys produce.  The
merged tree then has the path's parents, with their parent hashes, on the
sender's filtered direct path and blanks on the rest of its direct path.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..messages import LeafNodeSource, RequiredCapabilities, UpdatePath
from .errors import InvalidUpdatePath
from .node import encryption_key, parent_hash_field
from .parent_hash import path_parent_nodes
from .ratchet_tree import PathStep, RatchetTree
from .validation import validate_leaf_in_tree, validate_leaf_node


@attrs.frozen
class MergedPath:
    """A received UpdatePath that fits the tree, and the tree it was merged into.

    Attributes:
        tree: the tree with the path merged.
        sender: the committer's leaf index.
        steps: the committer's filtered direct path (each path entry's node
            and its copath child), from the leaf up.
        update_path: the path itself.
        excluded: the leaves the commit added, which the path skipped.
    """

    tree: RatchetTree
    sender: int
    steps: tuple[PathStep, ...]
    update_path: UpdatePath
    excluded: frozenset[int]


def merge_update_path(
    tree: RatchetTree,
    sender: int,
    path: UpdatePath,
    group_id: bytes,
    *,
    excluded: frozenset[int] = frozenset(),
    required: RequiredCapabilities | None = None,
    joining: bool = False,
) -> MergedPath:
    """Check ``path`` from leaf ``sender`` against ``tree`` and merge it.

    ``tree`` is the tree after the commit's proposals, ``excluded`` the
    leaves those proposals added and ``required`` the group's required
    capabilities.  ``joining`` says the sender's leaf was placed by this
    very commit (an external commit, RFC 9420 section 12.4.3.2), so it has no
    older key to differ from.  Raises :class:`InvalidUpdatePath`, or the leaf validation
    errors.  Every member merges the same way; only decrypting
    (:func:`~.treekem.decrypt_update_path`) is each member's own.
    """
    steps = tree.filtered_path(sender)
    _check_shape(tree, path, steps, excluded)
    current = tree.member(sender)
    leaf = path.leaf_node
    if not joining and leaf.encryption_key == current.encryption_key:
        raise InvalidUpdatePath(f"the new leaf of member {sender} keeps its old encryption key")
    validate_leaf_node(tree.suite, leaf, group_id, sender, source=LeafNodeSource.COMMIT, required=required)
    validate_leaf_in_tree(tree, leaf, sender)
    keys = [node.encryption_key for node in path.nodes]
    _check_keys_are_new(tree, [leaf.encryption_key, *keys], 2 * sender if joining else None)
    parents, leaf_parent_hash = path_parent_nodes(tree, sender, keys)
    if parent_hash_field(leaf) != leaf_parent_hash:
        raise InvalidUpdatePath(f"the new leaf of member {sender} does not sign its path's parent hash")
    return MergedPath(tree.merge_path(sender, leaf, parents), sender, tuple(steps), path, excluded)


def _check_shape(tree: RatchetTree, path: UpdatePath, steps: Sequence[PathStep], excluded: frozenset[int]) -> None:
    if len(path.nodes) != len(steps):
        raise InvalidUpdatePath(f"the path has {len(path.nodes)} nodes for a filtered direct path of {len(steps)}")
    for step, node in zip(steps, path.nodes, strict=True):
        expected = len(tree.resolution(step.copath_child, excluded))
        if len(node.encrypted_path_secret) != expected:
            raise InvalidUpdatePath(
                f"node {step.node} has {len(node.encrypted_path_secret)} encrypted path secrets for a resolution of {expected}"
            )


def _check_keys_are_new(tree: RatchetTree, keys: Sequence[bytes], replaced: int | None) -> None:
    """The path's keys (its leaf's and its nodes') are distinct and appear in no node of the tree (RFC 9420 §12.4.2).

    ``replaced`` is a joining sender's leaf: placed by the same commit, it is the path's leaf itself.
    """
    if len(set(keys)) != len(keys):
        raise InvalidUpdatePath("the path gives two nodes the same encryption key")
    fresh = set(keys)
    for index, node in enumerate(tree.nodes):
        if node is not None and index != replaced and encryption_key(node) in fresh:
            raise InvalidUpdatePath(f"a key of the path is already the key of node {index}")
