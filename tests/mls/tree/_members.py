"""Members with real keys and signed leaves, and trees made of them, for the ratchet-tree tests.

Everything is derived from names, so every run builds the same trees.
"""

from __future__ import annotations

import hashlib
import itertools

import attrs

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.crypto import CipherSuite, KeyPair, Rng
from protocols.libraries.mls.tree.leaf_node import sign_leaf_node
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree

FOREVER = m.Lifetime(0, 2**64 - 1)


def seeded_rng(seed: bytes) -> Rng:
    """A deterministic rng: each call draws fresh bytes from ``seed`` and a call counter."""
    counter = itertools.count()

    def rng(n: int) -> bytes:
        return hashlib.shake_256(seed + next(counter).to_bytes(8, "big")).digest(n)

    return rng


def capabilities(cs: CipherSuite) -> m.Capabilities:
    """What every test member supports: MLS 1.0, the group's suite, basic credentials."""
    return m.Capabilities((m.ProtocolVersion.MLS10,), (cs.id,), (), (), (m.CredentialType.BASIC,))


@attrs.frozen
class Member:
    """A client: its key package leaf and the private halves of the leaf's keys."""

    name: bytes
    leaf: m.LeafNode
    encryption: KeyPair = attrs.field(repr=False)
    signature: KeyPair = attrs.field(repr=False)


def member(cs: CipherSuite, name: bytes) -> Member:
    """A member called ``name`` with fresh keys and a key package leaf signed by them."""
    rng = seeded_rng(b"member " + name)
    encryption = cs.generate_hpke_key_pair(rng)
    signature = cs.generate_signature_key_pair(rng)
    payload = m.LeafNodePayload(
        encryption.public, signature.public, m.BasicCredential(name), capabilities(cs), m.KeyPackageOrigin(FOREVER), ()
    )
    return Member(name, sign_leaf_node(cs, signature.private, payload, b"", 0), encryption, signature)


def members(cs: CipherSuite, count: int) -> list[Member]:
    """``count`` members called ``member 0``, ``member 1``..."""
    return [member(cs, b"member %d" % i) for i in range(count)]


def tree_of(cs: CipherSuite, group: list[Member]) -> RatchetTree:
    """The tree of ``group`` added one by one by its first member: every leaf in use, every parent blank."""
    tree = RatchetTree.create(cs, group[0].leaf)
    for joiner in group[1:]:
        tree, _ = tree.add(joiner.leaf)
    return tree
