"""Secret tree and hash ratchets (RFC 9420 section 9), as immutable values.

The tree is stored as its *frontier*: the node secrets not yet expanded.
Initially that is only the root (the epoch's encryption_secret).  The first
time a leaf's keys are needed, the path from the nearest stored ancestor
down to the leaf is expanded: each step keeps the off-path child and deletes
the parent, and the leaf secret itself is deleted once its two ratchets
(handshake, application) exist.  That is the deletion schedule of RFC 9420
section 9.2, and it costs O(log n) once per sender per epoch, after which
each message costs one ratchet step.

Each ratchet keeps the next generation and its secret, plus a bounded map of
keys for skipped generations so out-of-order messages still decrypt.  Keys
are never stored for generations that were used: forward secrecy.

Every function returns a NEW :class:`SecretTree`; inputs are never mutated.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from . import suite, treemath
from .errors import DecryptionFailed, InvalidMessage, KeyAlreadyUsed, RatchetExhausted
from .labels import derive_tree_secret, expand_with_label

HANDSHAKE = 0
APPLICATION = 1

#: How far ahead of the expected generation a message may be.
MAX_FORWARD_GAP = 1000
#: How many skipped-generation keys each ratchet retains (oldest evicted first).
MAX_SKIPPED_KEYS = 1000
#: Generations travel as uint32; the last value is kept unused so the ratchet's
#: "next generation" always fits a uint32 too.
MAX_GENERATION = 0xFFFFFFFE

EMPTY: Mapping = MappingProxyType({})


def frozen_map(d: dict) -> Mapping:
    """Read-only view over a private copy of ``d``: state values stay immutable."""
    return MappingProxyType(dict(d))


@attrs.frozen
class Ratchet:
    """One hash ratchet: ``secret`` is the ratchet secret of ``generation``."""

    generation: int
    secret: bytes
    skipped: Mapping[int, tuple[bytes, bytes]] = EMPTY  # generation -> (key, nonce)


@attrs.frozen
class SecretTree:
    """Frontier node secrets plus the ratchets of leaves already expanded."""

    n_leaves: int
    nodes: Mapping[int, bytes]
    ratchets: Mapping[int, tuple[Ratchet, Ratchet]] = EMPTY  # leaf -> (handshake, application)


def new_tree(encryption_secret: bytes, n_leaves: int) -> SecretTree:
    """Secret tree of an epoch; ``n_leaves`` is rounded up to a power of two."""
    n = treemath.tree_leaves_for(n_leaves)
    return SecretTree(n, frozen_map({treemath.root(n): encryption_secret}))


def _children(secret: bytes) -> tuple[bytes, bytes]:
    left = expand_with_label(secret, "tree", b"left", suite.NH)
    right = expand_with_label(secret, "tree", b"right", suite.NH)
    return left, right


def _expand_leaf(tree: SecretTree, leaf: int) -> SecretTree:
    """Derive the ratchets of ``leaf`` from the nearest stored ancestor."""
    target = 2 * leaf
    path = [target, *treemath.direct_path(target, tree.n_leaves)]
    start = next((i for i, node in enumerate(path) if node in tree.nodes), None)
    if start is None:
        # Cannot happen for a leaf that was never expanded; guards corrupted state.
        raise KeyAlreadyUsed(f"secret tree has no secret left for leaf {leaf}")
    nodes = dict(tree.nodes)
    secret = nodes.pop(path[start])
    for i in range(start - 1, -1, -1):
        child, parent = path[i], path[i + 1]
        left, right = _children(secret)
        secret, other = (left, right) if child < parent else (right, left)
        sibling = treemath.sibling(child, tree.n_leaves)
        assert sibling is not None  # child has a parent, so it is not the root
        nodes[sibling] = other
    ratchets = dict(tree.ratchets)
    ratchets[leaf] = (
        Ratchet(0, expand_with_label(secret, "handshake", b"", suite.NH)),
        Ratchet(0, expand_with_label(secret, "application", b"", suite.NH)),
    )
    return SecretTree(tree.n_leaves, frozen_map(nodes), frozen_map(ratchets))


def key_nonce(ratchet_secret: bytes, generation: int) -> tuple[bytes, bytes]:
    """AEAD key and nonce of one ratchet generation."""
    key = derive_tree_secret(ratchet_secret, "key", generation, suite.NK)
    nonce = derive_tree_secret(ratchet_secret, "nonce", generation, suite.NN)
    return key, nonce


def _step(secret: bytes, generation: int) -> bytes:
    return derive_tree_secret(secret, "secret", generation, suite.NH)


def _get_ratchet(tree: SecretTree, leaf: int, kind: int) -> tuple[SecretTree, Ratchet]:
    if not 0 <= leaf < tree.n_leaves:
        raise InvalidMessage(f"leaf {leaf} is outside the secret tree")
    if leaf not in tree.ratchets:
        tree = _expand_leaf(tree, leaf)
    return tree, tree.ratchets[leaf][kind]


def _with_ratchet(tree: SecretTree, leaf: int, kind: int, ratchet: Ratchet) -> SecretTree:
    pair = list(tree.ratchets[leaf])
    pair[kind] = ratchet
    ratchets = dict(tree.ratchets)
    ratchets[leaf] = (pair[0], pair[1])
    return SecretTree(tree.n_leaves, tree.nodes, frozen_map(ratchets))


def next_send_key(tree: SecretTree, leaf: int, kind: int) -> tuple[SecretTree, int, bytes, bytes]:
    """Key for our next message: ``(new_tree, generation, key, nonce)``.

    The returned tree has advanced past the generation, so the key exists
    nowhere but in the caller's hands.
    """
    tree, ratchet = _get_ratchet(tree, leaf, kind)
    gen = ratchet.generation
    if gen > MAX_GENERATION:
        raise RatchetExhausted("this ratchet has no generations left in this epoch; commit to start a new one")
    key, nonce = key_nonce(ratchet.secret, gen)
    advanced = Ratchet(gen + 1, _step(ratchet.secret, gen), ratchet.skipped)
    return _with_ratchet(tree, leaf, kind, advanced), gen, key, nonce


def receive_key(tree: SecretTree, leaf: int, kind: int, generation: int) -> tuple[SecretTree, bytes, bytes]:
    """Key for a received message: ``(new_tree, key, nonce)``; the key is deleted from the tree.

    Raises :class:`KeyAlreadyUsed` for a consumed or evicted generation and
    :class:`DecryptionFailed` for one too far ahead of the ratchet.
    """
    tree, ratchet = _get_ratchet(tree, leaf, kind)
    if generation < ratchet.generation:
        if generation not in ratchet.skipped:
            raise KeyAlreadyUsed(f"generation {generation} of leaf {leaf} was already used or evicted")
        skipped = dict(ratchet.skipped)
        key, nonce = skipped.pop(generation)
        return _with_ratchet(tree, leaf, kind, attrs.evolve(ratchet, skipped=frozen_map(skipped))), key, nonce
    if generation - ratchet.generation > MAX_FORWARD_GAP or generation > MAX_GENERATION:
        raise DecryptionFailed(f"generation {generation} is too far ahead of {ratchet.generation}")
    return _advance_to(tree, leaf, kind, ratchet, generation)


def _advance_to(tree: SecretTree, leaf: int, kind: int, ratchet: Ratchet, generation: int):
    skipped = dict(ratchet.skipped)
    secret, gen = ratchet.secret, ratchet.generation
    while gen < generation:
        skipped[gen] = key_nonce(secret, gen)
        secret, gen = _step(secret, gen), gen + 1
    key, nonce = key_nonce(secret, gen)
    if len(skipped) > MAX_SKIPPED_KEYS:
        for old in sorted(skipped)[: len(skipped) - MAX_SKIPPED_KEYS]:
            del skipped[old]
    advanced = Ratchet(gen + 1, _step(secret, gen), frozen_map(skipped))
    return _with_ratchet(tree, leaf, kind, advanced), key, nonce


def sender_data_key_nonce(sender_data_secret: bytes, ciphertext: bytes) -> tuple[bytes, bytes]:
    """Sender-data key and nonce from the ciphertext sample (RFC 9420 section 6.3.2)."""
    sample = ciphertext[: suite.NH]
    key = expand_with_label(sender_data_secret, "key", sample, suite.NK)
    nonce = expand_with_label(sender_data_secret, "nonce", sample, suite.NN)
    return key, nonce


def apply_reuse_guard(nonce: bytes, reuse_guard: bytes) -> bytes:
    """XOR the 4-byte reuse guard into the first bytes of the ratchet nonce."""
    head = bytes(a ^ b for a, b in zip(nonce[:4], reuse_guard, strict=False))
    return head + nonce[4:]
