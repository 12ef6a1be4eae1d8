"""Creating a one-member group (RFC 9420 section 11)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..crypto import CipherSuite, KeyPair, Rng
from ..crypto.keys import random_bytes
from ..messages import (
    Capabilities,
    Credential,
    CredentialType,
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
from ..tree.validation import DEFAULT_EXTENSIONS
from . import extensions as ext
from .epoch import EpochStart, first_state
from .state import GroupConfig, GroupState

#: A new leaf's validity window when the caller gives none: from an hour ago (clock skew) to 90 days ahead.
LIFETIME_BEFORE_S = 3600
LIFETIME_AFTER_S = 90 * 24 * 3600


def default_lifetime(now: int | None = None) -> Lifetime:
    """The lifetime of a new leaf: an hour back for clock skew, 90 days ahead."""
    start = int(time.time()) if now is None else now
    return Lifetime(max(0, start - LIFETIME_BEFORE_S), start + LIFETIME_AFTER_S)


def default_capabilities(cs: CipherSuite, extensions: Sequence[Extension] = ()) -> Capabilities:
    """What a leaf of this engine supports: MLS 1.0, the group's suite, basic credentials, every
    proposal type of RFC 9420, and the non-default extension types it is about to use."""
    used = sorted({e.extension_type for e in extensions} - DEFAULT_EXTENSIONS)
    return Capabilities((ProtocolVersion.MLS10,), (cs.id,), tuple(used), (), (CredentialType.BASIC,))


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
        capabilities=capabilities or default_capabilities(cs, leaf_extensions),
        leaf_node_source=KeyPackageOrigin(lifetime or default_lifetime()),
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
    config: GroupConfig | None = None,
    rng: Rng | None = None,
) -> GroupState:
    """A group of one: this member at leaf 0, at epoch 0, with ``extensions`` in its GroupContext.

    ``capabilities`` default to what :func:`default_capabilities` lists,
    including every non-default type among ``extensions`` so the creator
    supports its own group.
    """
    leaf_key = cs.generate_hpke_key_pair(rng)
    leaf = own_leaf_node(
        cs,
        credential,
        signature_key,
        leaf_key.public,
        capabilities=capabilities or default_capabilities(cs, (*extensions, *leaf_extensions)),
        leaf_extensions=leaf_extensions,
    )
    ext.check_group_extensions(extensions, [(0, leaf)])
    tree = RatchetTree.create(cs, leaf)
    context = GroupContext(ProtocolVersion.MLS10, cs.id, group_id, 0, tree.tree_hash(), b"", tuple(extensions))
    secrets = next_epoch(cs, random_bytes(rng, cs.nh), zero_secret(cs), zero_secret(cs), context).secrets
    tag = confirmation_tag(cs, secrets.confirmation_key, context.confirmed_transcript_hash)
    start = EpochStart(context, tree, TreePrivate.for_leaf(0, leaf_key), secrets, tag)
    return first_state(start, signature_key.private, config or GroupConfig())
