"""Creating a one-member group (RFC 9420 section 11)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..crypto import CipherSuite, KeyPair, Rng
from ..crypto.keys import random_bytes
from ..messages import (
    Capabilities,
    Credential,
    Extension,
    GroupContext,
    KeyPackageOrigin,
    LeafNode,
    LeafNodePayload,
    Lifetime,
    ProtocolVersion,
)
from ..schedule import confirmation_tag, next_epoch, zero_secret
from ..tree.leaf_node import sign_leaf_node
from ..tree.private_tree import TreePrivate
from ..tree.ratchet_tree import RatchetTree
from . import extensions as ext
from .epoch import EpochStart, first_state
from .key_packages import default_capabilities, default_lifetime, supporting
from .state import GroupConfig, GroupState


def _default_capabilities(cs: CipherSuite, credential: Credential, extensions: Sequence[Extension]) -> Capabilities:
    """The KeyPackage default, plus the non-default extension types the creator is about to use."""
    return supporting(default_capabilities(cs, credential), sorted({e.extension_type for e in extensions}))


def own_leaf_node(
    cs: CipherSuite,
    credential: Credential,
    signature_key: KeyPair,
    encryption_key: bytes,
    *,
    capabilities: Capabilities | None = None,
    leaf_extensions: Sequence[Extension] = (),
    lifetime: Lifetime | None = None,
) -> LeafNode:
    """A signed leaf of key-package source for this member."""
    payload = LeafNodePayload(
        encryption_key=encryption_key,
        signature_key=signature_key.public,
        credential=credential,
        capabilities=capabilities or _default_capabilities(cs, credential, leaf_extensions),
        leaf_node_source=KeyPackageOrigin(lifetime or default_lifetime(int(time.time()))),
        extensions=tuple(leaf_extensions),
    )
    return sign_leaf_node(cs, signature_key.private, payload, b"", 0)


def create_group(
    cs: CipherSuite,
    group_id: bytes,
    credential: Credential,
    signature_key: KeyPair,
    *,
    extensions: Sequence[Extension] = (),
    capabilities: Capabilities | None = None,
    leaf_extensions: Sequence[Extension] = (),
    lifetime: Lifetime | None = None,
    config: GroupConfig | None = None,
    rng: Rng | None = None,
) -> GroupState:
    """A group of one: this member at leaf 0, at epoch 0, with ``extensions`` in its GroupContext.

    ``capabilities`` default to a KeyPackage's defaults plus every
    non-default type among ``extensions``, so the creator supports its own
    group; ``lifetime`` (of the creator's leaf) to a KeyPackage's default.
    """
    leaf_key = cs.generate_hpke_key_pair(rng)
    leaf = own_leaf_node(
        cs,
        credential,
        signature_key,
        leaf_key.public,
        capabilities=capabilities or _default_capabilities(cs, credential, (*extensions, *leaf_extensions)),
        leaf_extensions=leaf_extensions,
        lifetime=lifetime,
    )
    ext.check_group_extensions(extensions, [(0, leaf)])
    tree = RatchetTree.create(cs, leaf)
    context = GroupContext(ProtocolVersion.MLS10, cs.id, group_id, 0, tree.tree_hash(), b"", tuple(extensions))
    secrets = next_epoch(cs, random_bytes(rng, cs.nh), zero_secret(cs), zero_secret(cs), context).secrets
    tag = confirmation_tag(cs, secrets.confirmation_key, context.confirmed_transcript_hash)
    start = EpochStart(context, tree, TreePrivate.for_leaf(0, leaf_key), secrets, tag)
    return first_state(start, signature_key.private, config or GroupConfig())
