"""Signing and verifying LeafNodes (RFC 9420 §7.2).

A LeafNode's signature covers ``LeafNodeTBS``: its fields, plus the group id
and leaf index when the leaf was made inside a group (an update or a
commit), so such a leaf cannot be replayed at another position or in another
group.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..codec import encode
from ..crypto import CipherSuite
from ..crypto.labels import sign_with_label, verify_with_label
from ..messages import CommitOrigin, KeyPackageOrigin, LeafNode, LeafNodeOrigin, LeafNodePayload, LeafNodeTBS

LEAF_NODE_LABEL = "LeafNodeTBS"


def leaf_node_tbs(payload: LeafNodePayload, group_id: bytes, leaf_index: int) -> bytes:
    """The encoded LeafNodeTBS of ``payload``; ``group_id`` and ``leaf_index`` count only outside key packages."""
    in_group = not isinstance(payload.leaf_node_source, KeyPackageOrigin)
    tbs = LeafNodeTBS(
        **_payload_fields(payload), group_id=group_id if in_group else None, leaf_index=leaf_index if in_group else None
    )
    return encode(tbs)


def _payload_fields(payload: LeafNodePayload) -> dict[str, Any]:
    """The LeafNodePayload fields of ``payload`` (a LeafNode, a LeafNodeTBS or a bare payload), by name."""
    return {field.name: getattr(payload, field.name) for field in attrs.fields(LeafNodePayload)}


def sign_leaf_node(
    cs: CipherSuite, signature_private: bytes, payload: LeafNodePayload, group_id: bytes, leaf_index: int
) -> LeafNode:
    """``payload`` as a LeafNode signed with ``signature_private`` for leaf ``leaf_index`` of group ``group_id``."""
    signature = sign_with_label(cs, signature_private, LEAF_NODE_LABEL, leaf_node_tbs(payload, group_id, leaf_index))
    return LeafNode(**_payload_fields(payload), signature=signature)


def commit_leaf_node(
    cs: CipherSuite,
    signature_private: bytes,
    template: LeafNode,
    encryption_key: bytes,
    parent_hash: bytes,
    group_id: bytes,
    leaf_index: int,
) -> LeafNode:
    """A committer's new leaf (RFC 9420 §7.5): ``template``'s identity with a new key and parent hash, re-signed."""
    payload = LeafNodePayload(
        encryption_key=encryption_key,
        signature_key=template.signature_key,
        credential=template.credential,
        capabilities=template.capabilities,
        leaf_node_source=CommitOrigin(parent_hash),
        extensions=template.extensions,
    )
    return sign_leaf_node(cs, signature_private, payload, group_id, leaf_index)


def leaf_signature_valid(cs: CipherSuite, leaf: LeafNode, group_id: bytes, leaf_index: int) -> bool:
    """Whether ``leaf``'s signature verifies under its own signature key at ``leaf_index`` of ``group_id``."""
    tbs = leaf_node_tbs(leaf, group_id, leaf_index)
    return verify_with_label(cs, leaf.signature_key, LEAF_NODE_LABEL, tbs, leaf.signature)


def source_name(source: LeafNodeOrigin) -> str:
    """``key_package``, ``update`` or ``commit``, for messages."""
    return source.leaf_node_source.name.lower()
