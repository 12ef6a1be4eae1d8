"""A member's private TreeKEM state (RFC 9420 §4.2, §7.4, §12.4.3.1): its leaf and the key pairs it holds.

The tree invariant says a member knows a node's private key only if the node
is its own leaf or one of its ancestors.  A :class:`TreePrivate` holds those
key pairs by node index.  Forward secrecy (§7.5: "each recipient MUST delete
outdated key material") comes from :meth:`TreePrivate.pruned`: once a node
is blanked or given a new key, the next state no longer holds the old
private key.  Values are immutable; the caller keeps only the newest one.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ..crypto import CipherSuite, KeyPair
from . import math as tree_math
from .errors import PrivateStateMismatch
from .node import encryption_key
from .path_secret import next_path_secret, node_key_pair
from .ratchet_tree import RatchetTree


def _describe_keys(keys: Mapping[int, KeyPair]) -> str:
    return f"<keys for nodes {sorted(keys)}>"


def _read_only(keys: Mapping[int, KeyPair]) -> Mapping[int, KeyPair]:
    return MappingProxyType(dict(keys))


@attrs.frozen
class TreePrivate:
    """The private keys one member holds in a ratchet tree.

    Attributes:
        leaf: the member's leaf index.
        keys: HPKE key pairs by node index: the leaf's own, and those of the
            ancestors whose path secrets reached the member.  Only the node
            indices show in a repr.
    """

    leaf: int
    keys: Mapping[int, KeyPair] = attrs.field(converter=_read_only, repr=_describe_keys)

    @classmethod
    def for_leaf(cls, leaf: int, leaf_key: KeyPair) -> TreePrivate:
        """The state of a member that knows only its own leaf's key (a joiner, before any path secret)."""
        return cls(leaf, {2 * leaf: leaf_key})

    @classmethod
    def restore(cls, cs: CipherSuite, leaf: int, leaf_private: bytes, path_secrets: Mapping[int, bytes]) -> TreePrivate:
        """A state from the leaf's private key and each ancestor's own path secret, by node index."""
        keys = {2 * leaf: KeyPair(leaf_private, cs.hpke_public_key(leaf_private))}
        keys.update((node, node_key_pair(cs, secret)) for node, secret in path_secrets.items())
        return cls(leaf, keys)

    @classmethod
    def join(cls, tree: RatchetTree, leaf: int, leaf_key: KeyPair, ancestor: int, path_secret: bytes) -> TreePrivate:
        """A joiner's state from the path secret of a Welcome (RFC 9420 §12.4.3.1).

        ``path_secret`` belongs to ``ancestor``, the lowest common ancestor of
        the joiner's and the committer's leaves; each non-blank node above it
        gets the next path secret, as the committer derived them along its
        filtered direct path.  Every derived key must be the node's
        (:class:`PrivateStateMismatch` otherwise).
        """
        keys = {2 * leaf: leaf_key}
        if ancestor not in tree_math.direct_path(2 * leaf, tree.n_leaves):
            raise PrivateStateMismatch(f"node {ancestor} is not above leaf {leaf}")
        secret = path_secret
        for node in [ancestor, *tree_math.direct_path(ancestor, tree.n_leaves)]:
            if tree.nodes[node] is None:
                continue
            keys[node] = node_key_pair(tree.suite, secret)
            secret = next_path_secret(tree.suite, secret)
        state = cls(leaf, keys)
        state.check(tree)
        return state

    def usable_key(self, tree: RatchetTree, node: int) -> KeyPair | None:
        """Our key pair for ``node`` if we hold one and it is the key the node has in ``tree``."""
        pair = self.keys.get(node)
        current = tree.nodes[node]
        if pair is None or current is None or encryption_key(current) != pair.public:
            return None
        return pair

    def with_keys(self, keys: Mapping[int, KeyPair]) -> TreePrivate:
        """This state with ``keys`` added, replacing any older key pair of the same nodes."""
        return attrs.evolve(self, keys={**self.keys, **keys})

    def pruned(self, tree: RatchetTree) -> TreePrivate:
        """This state without the key pairs ``tree`` no longer uses (blanked or re-keyed nodes)."""
        kept = {
            node: pair for node, pair in self.keys.items() if node < len(tree.nodes) and self.usable_key(tree, node)
        }
        return self if len(kept) == len(self.keys) else attrs.evolve(self, keys=kept)

    def check(self, tree: RatchetTree) -> None:
        """Refuse a state that does not fit ``tree`` (:class:`PrivateStateMismatch`).

        Each key must be for our leaf or one of its ancestors (the tree
        invariant), and that node must hold the key's public half.
        """
        tree.leaf(self.leaf)  # refuses a leaf outside the tree
        ours = {2 * self.leaf, *tree_math.direct_path(2 * self.leaf, tree.n_leaves)}
        for node in sorted(self.keys):
            if node not in ours:
                raise PrivateStateMismatch(f"leaf {self.leaf} holds a key for node {node}, which is not above it")
            if self.usable_key(tree, node) is None:
                raise PrivateStateMismatch(f"the key held for node {node} is not the node's key in the tree")
