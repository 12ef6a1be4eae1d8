"""Trees a joiner must refuse: the vector trees of tree-validation.json (suite 1) with one thing broken.

Each case breaks exactly one rule of RFC 9420 §7.3, §7.9.2 or §12.4.3.1 and
expects the typed error for it; the unbroken tree validates (see
test_tree_validation_vectors.py).  No error message quotes key material.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.errors import InvalidMessage, InvalidSignature
from protocols.libraries.mls.tree.errors import (
    DuplicateKey,
    InvalidLeafNode,
    InvalidLeafSignature,
    InvalidTree,
    ParentHashInvalid,
    TreeHashMismatch,
    UnmergedLeavesInvalid,
)
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from protocols.libraries.mls.tree.validation import validate_leaf_in_tree, validate_leaf_node, validate_tree
from tests.mls.crypto._vectors import h, mls

SUITE_1 = [v for v in mls("tree-validation") if v["cipher_suite"] == 1]
FULL_EIGHT, UNMERGED_ONE_LEVEL, UNMERGED_TWO_LEVELS = SUITE_1[2], SUITE_1[12], SUITE_1[13]
NOW = 1_690_000_000  # inside the lifetime of every key package leaf of the vectors


def _nodes(vector: dict[str, Any]) -> list[m.Node | None]:
    return list(decode(m.RatchetTree, h(vector["tree"])).nodes)


def _tree(nodes: list[m.Node | None]) -> RatchetTree:
    return RatchetTree.from_message(suite(1), m.RatchetTree(tuple(nodes)))


def _validate(nodes: list[m.Node | None], vector: dict[str, Any], **options: Any) -> None:
    validate_tree(_tree(nodes), h(vector["group_id"]), **options)


def _leaf(nodes: list[m.Node | None], leaf: int) -> m.LeafNode:
    node = nodes[2 * leaf]
    assert isinstance(node, m.LeafNode)
    return node


def _parent(nodes: list[m.Node | None], index: int) -> m.ParentNode:
    node = nodes[index]
    assert isinstance(node, m.ParentNode)
    return node


# --- the wire form -------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "reason"),
    [
        ((), "at least one node"),
        ((None,), "must not be blank"),
        ((m.ParentNode(b"k", b"", ()),), "not a LeafNode"),
    ],
    ids=["empty", "only-blank", "parent-at-leaf-position"],
)
def test_malformed_tree_messages_are_refused(nodes: tuple[m.Node | None, ...], reason: str) -> None:
    with pytest.raises(InvalidTree, match=reason):
        RatchetTree.from_message(suite(1), m.RatchetTree(nodes))


def test_a_leaf_at_a_parent_position_and_a_trailing_blank_are_refused() -> None:
    nodes = _nodes(FULL_EIGHT)
    with pytest.raises(InvalidTree, match="node 1 holds a LeafNode"):
        _tree([nodes[0], nodes[0], nodes[2]])
    with pytest.raises(InvalidTree, match="last node"):
        _tree([*nodes, None])


def test_a_short_tree_is_extended_to_full_width_and_stripped_again() -> None:
    vector = SUITE_1[5]  # three members: five nodes on the wire, seven in the tree
    nodes = _nodes(vector)
    tree = _tree(nodes)
    assert (len(nodes), len(tree.nodes), tree.n_leaves) == (5, 7, 4)
    assert tree.to_message() == m.RatchetTree(tuple(nodes))


# --- hashes --------------------------------------------------------------------


def test_a_tree_with_another_hash_is_refused() -> None:
    nodes = _nodes(FULL_EIGHT)
    with pytest.raises(TreeHashMismatch):
        _validate(nodes, FULL_EIGHT, tree_hash=bytes(32))


def test_a_parent_with_a_substituted_key_is_not_parent_hash_valid() -> None:
    nodes = _nodes(FULL_EIGHT)
    nodes[7] = attrs.evolve(_parent(nodes, 7), encryption_key=b"\x01" * 32)
    with pytest.raises(ParentHashInvalid) as caught:
        _validate(nodes, FULL_EIGHT)
    assert caught.value.node == 7  # the root: nothing below links to a key nobody set


def test_a_parent_whose_unmerged_leaf_was_dropped_breaks_the_link_below_it() -> None:
    nodes = _nodes(UNMERGED_ONE_LEVEL)
    nodes[11] = attrs.evolve(_parent(nodes, 11), unmerged_leaves=())
    with pytest.raises(ParentHashInvalid) as caught:
        _validate(nodes, UNMERGED_ONE_LEVEL)
    # Node 11 lost its link (leaf 7 now counts as merged below it) and the root, checked first, hashed
    # the old node 11 into its sibling's original tree hash.
    assert caught.value.node == 7


def test_a_leaf_with_a_broken_signature_is_refused() -> None:
    nodes = _nodes(FULL_EIGHT)
    leaf = _leaf(nodes, 3)
    nodes[6] = attrs.evolve(leaf, signature=bytes([leaf.signature[0] ^ 1]) + leaf.signature[1:])
    with pytest.raises(InvalidLeafSignature, match="leaf 3") as caught:
        _validate(nodes, FULL_EIGHT)
    assert isinstance(caught.value, InvalidSignature) and isinstance(caught.value, InvalidMessage)


def test_signatures_bind_the_group_id() -> None:
    vector = FULL_EIGHT
    with pytest.raises(InvalidLeafSignature):
        validate_tree(_tree(_nodes(vector)), h(vector["group_id"])[::-1])


# --- keys ----------------------------------------------------------------------


@pytest.mark.parametrize("field", ["encryption_key", "signature_key"])
def test_two_leaves_with_the_same_key_are_refused(field: str) -> None:
    nodes = _nodes(FULL_EIGHT)
    nodes[2] = attrs.evolve(_leaf(nodes, 1), **{field: getattr(_leaf(nodes, 0), field)})
    with pytest.raises(DuplicateKey, match="nodes 0 and 2") as caught:
        _validate(nodes, FULL_EIGHT)
    assert getattr(_leaf(nodes, 0), field).hex() not in str(caught.value)


def test_a_parent_with_a_leaf_key_is_refused() -> None:
    nodes = _nodes(FULL_EIGHT)
    nodes[5] = attrs.evolve(_parent(nodes, 5), encryption_key=_leaf(nodes, 0).encryption_key)
    with pytest.raises(DuplicateKey, match="nodes 0 and 5"):
        _validate(nodes, FULL_EIGHT)


# --- unmerged leaves -----------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "unmerged", "reason"),
    [
        (11, (7, 6), "increasing order"),
        (11, (7, 7), "increasing order"),
        (11, (0, 7), "leaf 0, which is not a member below it"),
        (11, (7, 9), "leaf 9, which is not a member below it"),
    ],
    ids=["unsorted", "repeated", "outside-the-subtree", "outside-the-tree"],
)
def test_unmerged_leaves_must_be_sorted_members_below(node: int, unmerged: tuple[int, ...], reason: str) -> None:
    nodes = _nodes(UNMERGED_ONE_LEVEL)
    nodes[node] = attrs.evolve(_parent(nodes, node), unmerged_leaves=unmerged)
    with pytest.raises(UnmergedLeavesInvalid, match=reason):
        _validate(nodes, UNMERGED_ONE_LEVEL)


def test_an_unmerged_leaf_must_be_listed_at_every_parent_between() -> None:
    nodes = _nodes(UNMERGED_TWO_LEVELS)
    assert (_parent(nodes, 7).unmerged_leaves, _parent(nodes, 11).unmerged_leaves) == ((5,), (5,))
    nodes[11] = attrs.evolve(_parent(nodes, 11), unmerged_leaves=())
    with pytest.raises(UnmergedLeavesInvalid, match="leaf 5 is unmerged at node 7 but not at node 11"):
        _validate(nodes, UNMERGED_TWO_LEVELS)


def test_a_blank_leaf_cannot_be_unmerged() -> None:
    nodes = _nodes(SUITE_1[9])  # leaves 2 and 3 were removed, then a member added
    blank = next(i for i in range(len(nodes) // 2 + 1) if nodes[2 * i] is None)
    root = 7
    nodes[root] = attrs.evolve(_parent(nodes, root), unmerged_leaves=(blank,))
    with pytest.raises(UnmergedLeavesInvalid, match=f"leaf {blank}, which is not a member"):
        _validate(nodes, SUITE_1[9])


# --- leaf nodes ----------------------------------------------------------------


def test_a_leaf_must_list_its_own_credential_type() -> None:
    nodes = _nodes(FULL_EIGHT)
    leaf = _leaf(nodes, 2)
    nodes[4] = attrs.evolve(leaf, capabilities=attrs.evolve(leaf.capabilities, credentials=(2,)))
    with pytest.raises(InvalidLeafNode, match="leaf 2: its credential type"):
        _validate(nodes, FULL_EIGHT)


def test_a_leaf_must_list_its_non_default_extensions() -> None:
    nodes = _nodes(FULL_EIGHT)
    application_id = m.Extension(m.ExtensionType.APPLICATION_ID, b"app")
    grease = m.Extension(0x0A0A, b"")
    leaf = _leaf(nodes, 2)
    with pytest.raises(InvalidLeafNode, match=r"extensions \[2570\]"):
        validate_leaf_node(suite(1), attrs.evolve(leaf, extensions=(application_id, grease)), b"g", 2)
    with pytest.raises(InvalidLeafSignature):  # a default extension needs no listing: only the signature fails
        validate_leaf_node(suite(1), attrs.evolve(leaf, extensions=(application_id,)), b"g", 2)


def test_required_capabilities_and_lifetime_are_checked_when_asked() -> None:
    vector = FULL_EIGHT
    nodes = _nodes(vector)
    default_only = m.RequiredCapabilities((m.ExtensionType.APPLICATION_ID,), (m.ProposalType.ADD,), (1,))
    _validate(nodes, vector, required=default_only, now=NOW)
    with pytest.raises(InvalidLeafNode, match="required capabilities: extension 2570"):
        _validate(nodes, vector, required=m.RequiredCapabilities((0x0A0A,), (), ()))
    with pytest.raises(InvalidLeafNode, match="required capabilities: credential 2"):
        _validate(nodes, vector, required=m.RequiredCapabilities((), (), (2,)))
    with pytest.raises(InvalidLeafNode, match="lifetime"):
        _validate(nodes, vector, now=2_000_000_000)


def test_a_leaf_from_the_wrong_source_is_refused() -> None:
    leaf = _leaf(_nodes(FULL_EIGHT), 7)  # the last member added: still its key package's leaf
    with pytest.raises(InvalidLeafNode, match="comes from key_package, not commit"):
        validate_leaf_node(suite(1), leaf, b"g", 7, source=m.LeafNodeSource.COMMIT)


def test_a_new_leaf_must_share_credential_types_and_bring_new_keys() -> None:
    tree = _tree(_nodes(FULL_EIGHT))
    leaf = tree.member(1)
    validate_leaf_in_tree(tree, leaf, 1)  # in its own place, against the others
    x509 = attrs.evolve(leaf.capabilities, credentials=(2,))
    with pytest.raises(InvalidLeafNode, match="credential type"):
        validate_leaf_in_tree(tree, attrs.evolve(leaf, capabilities=x509), 1)
    with pytest.raises(DuplicateKey, match="signature key of leaf 1"):
        validate_leaf_in_tree(tree, leaf, 8)
    root = tree.parent(tree.root)
    assert root is not None
    with pytest.raises(DuplicateKey, match=f"encryption key of parent node {tree.root}"):
        validate_leaf_in_tree(tree, attrs.evolve(leaf, encryption_key=root.encryption_key), 1)
