"""TreeKEM (RFC 9420 §7.4-7.6, §12.4.1-12.4.2): making an UpdatePath as a committer, and taking one in.

:func:`create_update_path` gives the committer a new leaf key and fresh path
secrets along its filtered direct path, signs the parent-hash chain into its
new leaf, merges the path into the tree, and encrypts each path secret to
the resolution of that node's copath child (minus the members the same
commit adds) with the provisional GroupContext as context.

:func:`receive_update_path` checks and merges a received path
(:mod:`.update_path`), then :func:`decrypt_update_path` finds the lowest
path node above our leaf, decrypts its path secret with the key we hold for
a node of the copath child's resolution, derives the secrets above it, and
checks that every derived public key is the one the path announced.

Both return the next private state, which holds the new keys and no longer
holds any key of a node the path blanked or re-keyed; the commit secret is
the path secret one step past the root.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ..codec import encode
from ..crypto import KeyPair, Rng
from ..crypto.keys import random_bytes
from ..crypto.labels import decrypt_with_label, encrypt_with_label
from ..errors import InvalidArgument
from ..messages import GroupContext, HPKECiphertext, LeafNode, RequiredCapabilities, UpdatePath, UpdatePathNode
from . import math as tree_math
from .errors import InvalidUpdatePath, NoDecryptionKey
from .leaf_node import commit_leaf_node
from .node import encryption_key, leaf_span
from .parent_hash import path_parent_nodes
from .path_secret import node_key_pair, path_secret_chain
from .private_tree import TreePrivate
from .ratchet_tree import PathStep, RatchetTree
from .update_path import MergedPath, merge_update_path

UPDATE_PATH_LABEL = "UpdatePathNode"


def _hide(_: object) -> str:
    return "<hidden>"


@attrs.frozen
class CreatedPath:
    """What a committer's UpdatePath produced.

    Attributes:
        tree: the tree with the path merged.
        private: the committer's next private state.
        update_path: the path to put in the Commit.
        group_context: the provisional GroupContext, with ``tree``'s hash.
        commit_secret: the path secret past the root, for the key schedule.
        path_secrets: each path node's secret, by node index, for the
            Welcome of members added by the same commit.
    """

    tree: RatchetTree
    private: TreePrivate
    update_path: UpdatePath
    group_context: GroupContext
    commit_secret: bytes = attrs.field(repr=False)
    path_secrets: Mapping[int, bytes] = attrs.field(repr=_hide)

    def path_secret_for(self, new_leaf: int) -> bytes | None:
        """The path secret a member added at ``new_leaf`` receives: that of the committer's and its common ancestor."""
        ancestor = tree_math.common_ancestor(2 * self.private.leaf, 2 * new_leaf, self.tree.n_leaves)
        return self.path_secrets.get(ancestor)


@attrs.frozen
class ReceivedPath:
    """What taking in another member's UpdatePath produced.

    Attributes:
        tree: the tree with the path merged.
        private: our next private state.
        group_context: the provisional GroupContext, with ``tree``'s hash.
        commit_secret: the path secret past the root, for the key schedule.
        path_secret: the path secret we decrypted (that of the lowest path
            node above our leaf).
    """

    tree: RatchetTree
    private: TreePrivate
    group_context: GroupContext
    commit_secret: bytes = attrs.field(repr=False)
    path_secret: bytes = attrs.field(repr=False)


def create_update_path(
    tree: RatchetTree,
    private: TreePrivate,
    signature_private: bytes,
    group_context: GroupContext,
    *,
    excluded: frozenset[int] = frozenset(),
    leaf_template: LeafNode | None = None,
    rng: Rng | None = None,
) -> CreatedPath:
    """Refresh our leaf and direct path in ``tree`` (after the commit's proposals) and encrypt the secrets.

    ``group_context`` is the provisional context (new epoch and extensions,
    old confirmed transcript hash); its ``tree_hash`` is replaced by the new
    tree's.  ``excluded`` are the leaves the commit adds; ``leaf_template``
    supplies the new leaf's credential, signature key, capabilities and
    extensions (by default our current leaf's).  Keys and secrets come from ``rng``.
    """
    cs = tree.suite
    _check_suite(tree, group_context)
    leaf = private.leaf
    template = leaf_template or tree.member(leaf)
    steps = tree.filtered_path(leaf)
    leaf_key = cs.generate_hpke_key_pair(rng)
    *secrets, commit_secret = path_secret_chain(cs, random_bytes(rng, cs.nh), len(steps) + 1)
    node_keys = [node_key_pair(cs, secret) for secret in secrets]
    parents, leaf_parent_hash = path_parent_nodes(tree, leaf, [pair.public for pair in node_keys])
    new_leaf = commit_leaf_node(
        cs, signature_private, template, leaf_key.public, leaf_parent_hash, group_context.group_id, leaf
    )
    new_tree = tree.merge_path(leaf, new_leaf, parents)
    context = attrs.evolve(group_context, tree_hash=new_tree.tree_hash())
    encoded_context = encode(context)
    path_nodes = tuple(
        UpdatePathNode(pair.public, _encrypt(new_tree, step, excluded, encoded_context, secret, rng))
        for step, pair, secret in zip(steps, node_keys, secrets, strict=True)
    )
    keys = {2 * leaf: leaf_key, **{step.node: pair for step, pair in zip(steps, node_keys, strict=True)}}
    return CreatedPath(
        tree=new_tree,
        private=TreePrivate(leaf, keys).pruned(new_tree),
        update_path=UpdatePath(new_leaf, path_nodes),
        group_context=context,
        commit_secret=commit_secret,
        path_secrets=MappingProxyType({step.node: secret for step, secret in zip(steps, secrets, strict=True)}),
    )


def _encrypt(
    tree: RatchetTree, step: PathStep, excluded: frozenset[int], context: bytes, secret: bytes, rng: Rng | None
) -> tuple[HPKECiphertext, ...]:
    """``secret`` encrypted to each node of the resolution of ``step``'s copath child, new members left out."""
    ciphertexts = []
    for index in tree.resolution(step.copath_child, excluded):
        node = tree.nodes[index]
        assert node is not None  # resolutions hold non-blank nodes only
        kem_output, ciphertext = encrypt_with_label(
            tree.suite, encryption_key(node), UPDATE_PATH_LABEL, context, secret, rng
        )
        ciphertexts.append(HPKECiphertext(kem_output, ciphertext))
    return tuple(ciphertexts)


def receive_update_path(
    tree: RatchetTree,
    private: TreePrivate,
    sender: int,
    update_path: UpdatePath,
    group_context: GroupContext,
    *,
    excluded: frozenset[int] = frozenset(),
    required: RequiredCapabilities | None = None,
    joining: bool = False,
) -> ReceivedPath:
    """Check and merge the UpdatePath of member ``sender`` into ``tree`` (after the commit's proposals), then decrypt it.

    :func:`~.update_path.merge_update_path` then :func:`decrypt_update_path`;
    ``excluded`` are the leaves the commit adds, ``required`` the group's
    required capabilities, ``joining`` whether ``sender`` joins by this very commit.
    """
    _check_suite(tree, group_context)
    merged = merge_update_path(
        tree, sender, update_path, group_context.group_id, excluded=excluded, required=required, joining=joining
    )
    return decrypt_update_path(merged, private, group_context)


def decrypt_update_path(merged: MergedPath, private: TreePrivate, group_context: GroupContext) -> ReceivedPath:
    """Our path secret from a merged UpdatePath, the secrets and keys above it, and the commit secret.

    ``group_context`` is the provisional context; its ``tree_hash`` is
    replaced by the merged tree's.  Raises :class:`InvalidUpdatePath` when a
    derived key is not the one the path announced, :class:`NoDecryptionKey`
    when we hold no key for its ciphertexts and
    :class:`~protocols.libraries.mls.errors.DecryptionFailed` when the one for us does
    not open.
    """
    tree, steps = merged.tree, merged.steps
    cs = tree.suite
    _check_suite(tree, group_context)
    if merged.sender == private.leaf:
        raise InvalidArgument("our own UpdatePath is not received: keep the result of create_update_path")
    context = attrs.evolve(group_context, tree_hash=tree.tree_hash())
    first = next((k for k, step in enumerate(steps) if private.leaf in leaf_span(step.copath_child)), None)
    if first is None:
        raise NoDecryptionKey(f"no node of member {merged.sender}'s path lies above leaf {private.leaf}")
    # The copath child's subtree is not on the sender's path, so the merged tree still has its resolution and keys.
    path_nodes = merged.update_path.nodes
    path_secret = _decrypt(tree, private, steps[first], path_nodes[first], merged.excluded, encode(context))
    *secrets, commit_secret = path_secret_chain(cs, path_secret, len(steps) - first + 1)
    keys: dict[int, KeyPair] = {}
    for step, node, secret in zip(steps[first:], path_nodes[first:], secrets, strict=True):
        pair = node_key_pair(cs, secret)
        if pair.public != node.encryption_key:
            raise InvalidUpdatePath(f"the path secret of node {step.node} does not give the key the path announces")
        keys[step.node] = pair
    return ReceivedPath(
        tree=tree,
        private=private.with_keys(keys).pruned(tree),
        group_context=context,
        commit_secret=commit_secret,
        path_secret=path_secret,
    )


def _decrypt(
    tree: RatchetTree,
    private: TreePrivate,
    step: PathStep,
    path_node: UpdatePathNode,
    excluded: frozenset[int],
    context: bytes,
) -> bytes:
    """The path secret of ``step``'s node, opened with our key for a node of its copath child's resolution."""
    resolution = tree.resolution(step.copath_child, excluded)
    for position, index in enumerate(resolution):
        pair = private.usable_key(tree, index)
        if pair is not None:
            sealed = path_node.encrypted_path_secret[position]
            return decrypt_with_label(
                tree.suite, pair.private, UPDATE_PATH_LABEL, context, sealed.kem_output, sealed.ciphertext
            )
    raise NoDecryptionKey(f"leaf {private.leaf} holds no key for the resolution of node {step.copath_child}")


def _check_suite(tree: RatchetTree, group_context: GroupContext) -> None:
    if group_context.cipher_suite != tree.suite.id:
        raise InvalidArgument(
            f"the group context is for cipher suite {group_context.cipher_suite}, the tree for {tree.suite.id}"
        )
