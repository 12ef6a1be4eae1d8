"""The public ratchet tree (RFC 9420 §4, §7.7, §12.4.3.3) as an immutable value.

A :class:`RatchetTree` is the array of optional nodes of a full binary tree
(2**d leaves, 2**(d+1) - 1 nodes; leaf ``i`` at index ``2i``) and its cipher
suite.  Every change returns a new tree and leaves the old one intact, so a
commit can be staged on a copy and discarded.  A change copies the array of
node references once (never a node; 2,047 references for 1,024 leaves, about
20 microseconds with the cache, less than one HPKE operation) and hands the
new tree a copy of the tree-hash cache in which
only the changed nodes and their ancestors are forgotten, so hashing after a
commit costs one path (:mod:`.tree_hash`).

The wire form is :class:`~protocols.libraries.mls.messages.RatchetTree`, which omits
trailing blank nodes; :meth:`RatchetTree.from_message` restores the full
width and :meth:`RatchetTree.to_message` strips it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import attrs

from .. import messages as m
from ..crypto import CipherSuite
from ..messages import LeafNode, ParentNode
from . import math as tree_math
from .errors import InvalidTree, NoSuchLeaf
from .node import OptionalNode, unmerged_leaves, with_unmerged_leaf
from .tree_hash import OriginalHashMemo, TreeHashCache, original_tree_hash

#: RFC 9420 leaf indices are uint32; a tree never needs more leaves than that.
MAX_LEAVES = 1 << 32


class PathStep(NamedTuple):
    """A node of a leaf's filtered direct path and its child on the leaf's copath."""

    node: int
    copath_child: int


@attrs.frozen
class RatchetTree:
    """A full ratchet tree: ``nodes[i]`` is node ``i`` (``None`` if blank).

    Build one with :meth:`create` or :meth:`from_message`; every other tree
    comes from a change to an existing one.

    Attributes:
        suite: the group's cipher suite (its hash makes the tree hashes).
        nodes: every node in array order, ``2 * n_leaves - 1`` of them.
    """

    suite: CipherSuite = attrs.field(repr=lambda cs: f"suite {cs.id}")
    nodes: tuple[OptionalNode, ...] = attrs.field(repr=lambda nodes: f"<{(len(nodes) + 1) // 2} leaves>")
    _hashes: TreeHashCache = attrs.field(eq=False, repr=False, alias="hashes")

    # --- construction and the wire form --------------------------------------

    @classmethod
    def create(cls, cs: CipherSuite, leaf: LeafNode) -> RatchetTree:
        """The one-leaf tree of a group's creator."""
        return cls(cs, (leaf,), TreeHashCache.empty(1))

    @classmethod
    def from_message(cls, cs: CipherSuite, message: m.RatchetTree) -> RatchetTree:
        """The tree a ``ratchet_tree`` value describes, extended to full width (RFC 9420 §12.4.3.3).

        Refuses (:class:`InvalidTree`) an empty tree, a blank last node, a
        parent at a leaf position or a leaf at a parent position.  The
        contents are not validated here: see :mod:`.validation`.
        """
        nodes = message.nodes
        if not nodes:
            raise InvalidTree("a ratchet tree needs at least one node")
        if nodes[-1] is None:
            raise InvalidTree("the last node of a ratchet tree must not be blank")
        for index, node in enumerate(nodes):
            expected = ParentNode if index & 1 else LeafNode
            if node is not None and not isinstance(node, expected):
                raise InvalidTree(f"node {index} holds a {type(node).__name__}, not a {expected.__name__}")
        n_leaves = 1 << (len(nodes) // 2).bit_length()  # the smallest full tree holding len(nodes) nodes
        if n_leaves > MAX_LEAVES:
            raise InvalidTree(f"a ratchet tree of {len(nodes)} nodes has more leaves than a uint32 counts")
        width = tree_math.node_width(n_leaves)
        full = (*nodes, *([None] * (width - len(nodes))))
        return cls(cs, full, TreeHashCache.empty(width))

    def to_message(self) -> m.RatchetTree:
        """The wire form: the nodes without the trailing blanks."""
        end = len(self.nodes)
        while end > 1 and self.nodes[end - 1] is None:
            end -= 1
        return m.RatchetTree(self.nodes[:end])

    # --- shape and access ----------------------------------------------------

    @property
    def n_leaves(self) -> int:
        """The number of leaves, blank or not (a power of two)."""
        return (len(self.nodes) + 1) // 2

    @property
    def root(self) -> int:
        """The root's node index."""
        return tree_math.root(self.n_leaves)

    def leaf(self, leaf: int) -> LeafNode | None:
        """Leaf ``leaf``'s node, ``None`` if blank; :class:`NoSuchLeaf` outside the tree."""
        if type(leaf) is not int or not 0 <= leaf < self.n_leaves:
            raise NoSuchLeaf(f"leaf {leaf} is outside a tree of {self.n_leaves} leaves")
        node = self.nodes[2 * leaf]
        assert node is None or isinstance(node, LeafNode)  # from_message and every change keep leaves at even indices
        return node

    def member(self, leaf: int) -> LeafNode:
        """Leaf ``leaf``'s node, which must not be blank (:class:`NoSuchLeaf`)."""
        node = self.leaf(leaf)
        if node is None:
            raise NoSuchLeaf(f"leaf {leaf} is blank")
        return node

    def parent(self, index: int) -> ParentNode | None:
        """The parent node at node index ``index``, ``None`` if blank."""
        node = self.nodes[index]
        assert node is None or isinstance(node, ParentNode), f"node {index} is not a parent position"
        return node

    def members(self) -> Iterator[tuple[int, LeafNode]]:
        """``(leaf index, leaf node)`` of every non-blank leaf, left to right."""
        for index in range(0, len(self.nodes), 2):
            node = self.nodes[index]
            if isinstance(node, LeafNode):
                yield index >> 1, node

    def parents(self) -> Iterator[tuple[int, ParentNode]]:
        """``(node index, parent node)`` of every non-blank parent, left to right."""
        for index in range(1, len(self.nodes), 2):
            node = self.nodes[index]
            if isinstance(node, ParentNode):
                yield index, node

    # --- resolution and paths (RFC 9420 §4.1.1, §4.1.2) ----------------------

    def resolution(self, index: int, excluded: frozenset[int] = frozenset()) -> list[int]:
        """The resolution of node ``index``, as node indices, leaving out the leaves ``excluded``.

        ``excluded`` holds leaf indices (the leaves a commit adds, which an
        UpdatePath must not encrypt to); they are dropped both as leaves and
        as unmerged leaves.
        """
        found: list[int] = []
        pending = [index]
        while pending:  # depth first, left first: the right child is pushed first
            index = pending.pop()
            node = self.nodes[index]
            if node is None:
                if not tree_math.is_leaf(index):
                    pending.append(self._right(index))
                    pending.append(self._left(index))
            elif isinstance(node, LeafNode):
                if index >> 1 not in excluded:
                    found.append(index)
            else:
                found.append(index)
                found.extend(2 * leaf for leaf in unmerged_leaves(node) if leaf not in excluded)
        return found

    def filtered_path(self, leaf: int) -> list[PathStep]:
        """The filtered direct path of leaf ``leaf``, each node with its copath child, from the leaf up.

        A direct-path node is left out when its copath child's resolution is
        empty (RFC 9420 §4.1.2).
        """
        self.leaf(leaf)
        child = 2 * leaf
        steps: list[PathStep] = []
        for node in tree_math.direct_path(child, self.n_leaves):
            copath_child = self._right(node) if child < node else self._left(node)
            if self._holds_a_node(copath_child):
                steps.append(PathStep(node, copath_child))
            child = node
        return steps

    def _holds_a_node(self, index: int) -> bool:
        """Whether the subtree under ``index`` has a non-blank node (its resolution is not empty)."""
        if self.nodes[index] is not None:
            return True
        return not tree_math.is_leaf(index) and (
            self._holds_a_node(self._left(index)) or self._holds_a_node(self._right(index))
        )

    def _left(self, index: int) -> int:
        child = tree_math.left(index, self.n_leaves)
        assert child is not None, f"node {index} is a leaf"
        return child

    def _right(self, index: int) -> int:
        child = tree_math.right(index, self.n_leaves)
        assert child is not None, f"node {index} is a leaf"
        return child

    # --- hashes (RFC 9420 §7.8, §7.9) ----------------------------------------

    def tree_hash(self) -> bytes:
        """The tree hash of the root: the GroupContext's ``tree_hash``."""
        return self.node_hash(self.root)

    def node_hash(self, index: int) -> bytes:
        """The tree hash of node ``index`` (of the subtree under it)."""
        return self._hashes.hash_of(self.suite, self.nodes, self.n_leaves, index)

    def original_hash(self, index: int, excluded: frozenset[int], memo: OriginalHashMemo | None = None) -> bytes:
        """The tree hash of node ``index`` with the leaves ``excluded`` blanked and unlisted (RFC 9420 §7.9)."""
        return original_tree_hash(
            self.suite, self.nodes, self.n_leaves, self._hashes, index, excluded, {} if memo is None else memo
        )

    def cached_hashes(self) -> int:
        """How many node tree hashes this tree has already computed or inherited."""
        return self._hashes.known()

    # --- changes (RFC 9420 §7.5, §7.7, §12.1) --------------------------------

    def add(self, leaf_node: LeafNode) -> tuple[RatchetTree, int]:
        """Add a member in the leftmost blank leaf, extending the tree when none is blank (RFC 9420 §12.1.1).

        Returns the new tree and the new leaf's index.
        """
        draft = _Draft(self)
        leaf = draft.add(leaf_node)
        return draft.finish(), leaf

    def update(self, leaf: int, leaf_node: LeafNode) -> RatchetTree:
        """Replace member ``leaf``'s node and blank its direct path (an Update, RFC 9420 §12.1.2)."""
        draft = _Draft(self)
        draft.update(leaf, leaf_node)
        return draft.finish()

    def remove(self, leaf: int) -> RatchetTree:
        """Blank member ``leaf`` and its direct path, then drop blank right halves (RFC 9420 §12.1.3)."""
        draft = _Draft(self)
        draft.remove(leaf)
        return draft.finish()

    def apply(
        self, updates: Iterable[tuple[int, LeafNode]], removes: Iterable[int], adds: Iterable[LeafNode]
    ) -> tuple[RatchetTree, tuple[int, ...]]:
        """Apply a commit's tree changes in the order RFC 9420 §12.3 fixes: updates, removes, then adds.

        Returns the new tree and the leaf index of each added member, in order.
        """
        draft = _Draft(self)
        for leaf, leaf_node in updates:
            draft.update(leaf, leaf_node)
        for leaf in removes:
            draft.remove(leaf)
        added = tuple(draft.add(leaf_node) for leaf_node in adds)
        return draft.finish(), added

    def merge_path(self, leaf: int, leaf_node: LeafNode, path: Sequence[tuple[int, ParentNode]]) -> RatchetTree:
        """Merge an UpdatePath: blank ``leaf``'s direct path, set the ``path`` parents and the new leaf (RFC 9420 §7.5)."""
        draft = _Draft(self)
        draft.update(leaf, leaf_node)
        for index, parent in path:
            draft.set(index, parent)
        return draft.finish()


class _Draft:
    """A tree being changed: a private copy of the node array and the indices changed so far."""

    def __init__(self, tree: RatchetTree) -> None:
        self.tree = tree
        self.nodes: list[OptionalNode] = list(tree.nodes)
        self.n_leaves = tree.n_leaves
        self.changed: set[int] = set()
        self.kept = len(tree.nodes)  # the old nodes still in place are the first ``kept``

    def set(self, index: int, node: OptionalNode) -> None:
        self.nodes[index] = node
        self.changed.add(index)

    def member(self, leaf: int) -> None:
        if type(leaf) is not int or not 0 <= leaf < self.n_leaves:
            raise NoSuchLeaf(f"leaf {leaf} is outside a tree of {self.n_leaves} leaves")
        if self.nodes[2 * leaf] is None:
            raise NoSuchLeaf(f"leaf {leaf} is blank")

    def blank_direct_path(self, leaf: int) -> None:
        for index in tree_math.direct_path(2 * leaf, self.n_leaves):
            if self.nodes[index] is not None:
                self.set(index, None)

    def update(self, leaf: int, leaf_node: LeafNode) -> None:
        self.member(leaf)
        self.set(2 * leaf, leaf_node)
        self.blank_direct_path(leaf)

    def remove(self, leaf: int) -> None:
        self.member(leaf)
        self.set(2 * leaf, None)
        self.blank_direct_path(leaf)
        self.truncate()

    def add(self, leaf_node: LeafNode) -> int:
        leaf = next((i for i in range(self.n_leaves) if self.nodes[2 * i] is None), None)
        if leaf is None:
            leaf = self.n_leaves
            self.extend()
        for index in tree_math.direct_path(2 * leaf, self.n_leaves):
            parent = self.nodes[index]
            if isinstance(parent, ParentNode):
                self.set(index, with_unmerged_leaf(parent, leaf))
        self.set(2 * leaf, leaf_node)
        return leaf

    def extend(self) -> None:
        """Double the tree: the old tree becomes the left subtree of a new blank root."""
        self.nodes.extend([None] * len(self.nodes) + [None])
        self.n_leaves *= 2

    def truncate(self) -> None:
        """Drop right halves without a member until the rightmost member sits in the right half."""
        last = next((i for i in reversed(range(self.n_leaves)) if self.nodes[2 * i] is not None), 0)
        n_leaves = 1 << last.bit_length()  # the smallest power of two above ``last``
        if n_leaves < self.n_leaves:
            del self.nodes[tree_math.node_width(n_leaves) :]
            self.n_leaves = n_leaves
            self.kept = min(self.kept, len(self.nodes))

    def finish(self) -> RatchetTree:
        width = len(self.nodes)
        changed = [index for index in self.changed if index < width]
        hashes = self.tree._hashes.changed(changed, self.n_leaves, self.kept)
        return RatchetTree(self.tree.suite, tuple(self.nodes), hashes)
