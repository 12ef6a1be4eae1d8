"""The secret tree of an epoch (RFC 9420 section 9).

The root's secret is the epoch's ``encryption_secret``; each parent's
children get ``ExpandWithLabel(secret, "tree", "left"|"right", Nh)``, and
each leaf's secret starts that leaf's handshake and application ratchets
(:mod:`.ratchet`).  The tree has the ratchet tree's shape (the same leaf
count, any count accepted; see :mod:`protocols.libraries.mls.tree.math`).

Only the *frontier* is stored: node secrets not yet expanded.  The first key
asked of a leaf expands the path from its nearest stored ancestor down: each
parent's secret is dropped once its children exist, the child off the path
is stored, and the leaf's secret is dropped once its two ratchets exist.
That is section 9.2's deletion schedule, at O(log n) once per leaf and epoch.

Values are immutable: each operation returns the tree that replaces the old
one, which still holds what the new one deleted.  Callers keep only the
newest tree; it is what a group state stores.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ..crypto import CipherSuite
from ..crypto.labels import expand_with_label
from ..tree import math as tree_math
from ..values import replaced
from .errors import UnknownLeaf
from .ratchet import HashRatchet, RatchetKey, RatchetKind, RatchetWindow

_RatchetId = tuple[int, RatchetKind]


@attrs.frozen
class SecretTree:
    """One epoch's secret tree and the ratchets of the leaves expanded so far.

    Attributes:
        suite: the group's cipher suite.
        n_leaves: the number of leaves (the ratchet tree's leaf count).
        window: how far receiving ratchets reach (see :class:`RatchetWindow`).
        frontier: secrets of the nodes not yet expanded, by node index.
        ratchets: the ratchets of expanded leaves, by ``(leaf, kind)``.
    """

    suite: CipherSuite
    n_leaves: int
    window: RatchetWindow
    frontier: Mapping[int, bytes] = attrs.field(repr=lambda nodes: f"<nodes {sorted(nodes)}>")
    ratchets: Mapping[_RatchetId, HashRatchet] = attrs.field(
        factory=lambda: MappingProxyType({}), repr=lambda ratchets: f"<{len(ratchets)} ratchets>"
    )

    @classmethod
    def create(
        cls, cs: CipherSuite, encryption_secret: bytes, n_leaves: int, window: RatchetWindow | None = None
    ) -> SecretTree:
        """The tree of an epoch whose key schedule gave ``encryption_secret``."""
        root = tree_math.root(n_leaves)  # refuses a tree without leaves
        return cls(cs, n_leaves, window or RatchetWindow(), MappingProxyType({root: encryption_secret}))

    def send_key(self, leaf: int, kind: RatchetKind) -> tuple[SecretTree, RatchetKey]:
        """The key for this leaf's next message of ``kind``; the returned tree no longer has it."""
        tree, ratchet = self._ratchet(leaf, kind)
        ratchet, key = ratchet.next_key(self.suite)
        return tree._with(ratchet), key

    def receive_key(self, leaf: int, kind: RatchetKind, generation: int) -> tuple[SecretTree, RatchetKey]:
        """The key of a message from ``leaf`` at ``generation``; the returned tree no longer has it.

        See :meth:`HashRatchet.key_for` for the refusals; a refused request
        leaves nothing changed.
        """
        tree, ratchet = self._ratchet(leaf, kind)
        ratchet, key = ratchet.key_for(self.suite, generation, self.window)
        return tree._with(ratchet), key

    def _ratchet(self, leaf: int, kind: RatchetKind) -> tuple[SecretTree, HashRatchet]:
        if type(leaf) is not int or not 0 <= leaf < self.n_leaves:
            raise UnknownLeaf(leaf, self.n_leaves)
        tree = self if (leaf, kind) in self.ratchets else self._expand(leaf)
        return tree, tree.ratchets[leaf, kind]

    def _expand(self, leaf: int) -> SecretTree:
        """Derive the leaf's ratchets from its nearest stored ancestor, storing the secrets off the path."""
        path = [tree_math.leaf_node(leaf), *tree_math.direct_path(tree_math.leaf_node(leaf), self.n_leaves)]
        start = next(i for i, node in enumerate(path) if node in self.frontier)
        frontier = dict(self.frontier)
        secret = frontier.pop(path[start])
        for depth in range(start, 0, -1):
            node, child = path[depth], path[depth - 1]
            left, right = tree_math.left(node, self.n_leaves), tree_math.right(node, self.n_leaves)
            assert left is not None and right is not None  # node is a parent: it is above the leaf
            secrets = {
                left: expand_with_label(self.suite, secret, "tree", b"left", self.suite.nh),
                right: expand_with_label(self.suite, secret, "tree", b"right", self.suite.nh),
            }
            secret = secrets.pop(child)
            frontier.update(secrets)
        ratchets = dict(self.ratchets)
        for kind in RatchetKind:
            ratchets[leaf, kind] = HashRatchet.start(self.suite, kind, leaf, secret)
        return attrs.evolve(self, frontier=MappingProxyType(frontier), ratchets=MappingProxyType(ratchets))

    def _with(self, ratchet: HashRatchet) -> SecretTree:
        ratchets = dict(self.ratchets)
        ratchets[ratchet.leaf, ratchet.kind] = ratchet
        return replaced(self, ratchets=MappingProxyType(ratchets))
