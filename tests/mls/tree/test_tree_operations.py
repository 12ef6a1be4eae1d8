"""Tree operations: tree-operations.json (suite 1, as upstream), RFC 9420's example trees, and the rules of §7.7/§12.1.

Adds go to the leftmost blank leaf or extend the tree and are unmerged at
every non-blank parent above; removes blank a path and truncate; updates
blank a path; a commit applies updates, removes, then adds.  Every change
leaves the tree it started from untouched.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers.tree_operations import check
from protocols.libraries.mls.conformance.shipped import vector_file
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree.errors import NoSuchLeaf
from protocols.libraries.mls.tree.operations import apply_proposals
from protocols.libraries.mls.tree.ratchet_tree import PathStep, RatchetTree
from tests.mls.crypto._vectors import h

from ._members import Member, members, tree_of

TREE_OPERATIONS: list[dict[str, Any]] = json.loads(vector_file("tree-operations").read_text())
CS = suite(1)
GROUP: list[Member] = members(CS, 9)
LEAVES = [g.leaf for g in GROUP]


@pytest.mark.parametrize(
    "vector",
    TREE_OPERATIONS,
    ids=[f"{i}-{decode(m.Proposal, h(v['proposal'])).__class__.__name__}" for i, v in enumerate(TREE_OPERATIONS)],
)
def test_tree_operations_vector(vector: dict[str, Any]) -> None:
    """Tree and hash before, after, and the old tree untouched (the conformance checker)."""
    assert check(vector) == []


def test_the_vector_covers_each_kind() -> None:
    kinds = [type(decode(m.Proposal, h(v["proposal"]))) for v in TREE_OPERATIONS]
    assert sorted(k.__name__ for k in kinds) == ["Add", "Add", "Remove", "Remove", "Update"]
    assert {v["cipher_suite"] for v in TREE_OPERATIONS} == {1}


# --- RFC 9420's example trees ----------------------------------------------------


def _parent(name: bytes, unmerged: tuple[int, ...] = ()) -> m.ParentNode:
    return m.ParentNode(name, b"", unmerged)


def _rfc_tree(nodes: dict[int, m.Node]) -> RatchetTree:
    last = max(nodes)
    return RatchetTree.from_message(CS, m.RatchetTree(tuple(nodes.get(i) for i in range(last + 1))))


def test_filtered_direct_paths_of_the_rfc_example() -> None:
    # RFC 9420 §4.1.2, "A Complete Tree with Five Members": A B _ _ E F G _ with T, W, X, Y set.
    tree = _rfc_tree(
        {
            0: LEAVES[0], 2: LEAVES[1], 8: LEAVES[4], 10: LEAVES[5], 12: LEAVES[6],
            1: _parent(b"T"), 7: _parent(b"W"), 9: _parent(b"X"), 11: _parent(b"Y"),
        }
    )  # fmt: skip
    assert tree.filtered_path(0) == [PathStep(1, 2), PathStep(7, 11)]  # A: T, W
    assert tree.filtered_path(1) == [PathStep(1, 0), PathStep(7, 11)]  # B: T, W
    assert [s.node for s in tree.filtered_path(4)] == [9, 11, 7]  # E: X, Y, W
    assert [s.node for s in tree.filtered_path(6)] == [11, 7]  # G: Y, W


def test_resolutions_of_the_rfc_example() -> None:
    # RFC 9420 §4.1.1, "A Tree with Blanks and Unmerged Leaves": X[B] over A B _ D, Y over E F, H.
    tree = _rfc_tree(
        {
            0: LEAVES[0], 2: LEAVES[1], 6: LEAVES[3], 8: LEAVES[4], 10: LEAVES[5], 14: LEAVES[7],
            3: _parent(b"X", (1,)), 9: _parent(b"Y"),
        }
    )  # fmt: skip
    assert tree.resolution(3) == [3, 2]  # [X, B]
    assert tree.resolution(4) == tree.resolution(12) == []
    assert tree.resolution(7) == [3, 2, 9, 14]  # [X, B, Y, H]
    assert tree.resolution(7, excluded=frozenset({1, 7})) == [3, 9]


# --- add, update, remove ------------------------------------------------------------


def test_add_takes_the_leftmost_blank_leaf_and_extends_a_full_tree() -> None:
    tree = tree_of(CS, GROUP[:3])
    assert (tree.n_leaves, [i for i, _ in tree.members()]) == (4, [0, 1, 2])
    tree, leaf = tree.add(LEAVES[3])
    assert (leaf, tree.n_leaves) == (3, 4)
    tree, leaf = tree.add(LEAVES[4])
    assert (leaf, tree.n_leaves, len(tree.nodes)) == (4, 8, 15)
    tree = tree.remove(1)
    tree, leaf = tree.add(LEAVES[5])
    assert leaf == 1


def test_an_added_leaf_is_unmerged_at_every_non_blank_parent_above_it_in_order() -> None:
    tree = _rfc_tree({0: LEAVES[0], 2: LEAVES[1], 6: LEAVES[3], 3: _parent(b"X", (3,)), 1: _parent(b"T")})
    tree, leaf = tree.add(LEAVES[2])
    assert leaf == 2
    assert tree.parent(3) == _parent(b"X", (2, 3))  # kept sorted
    assert tree.parent(5) is None  # blank parents stay blank
    assert tree.parent(1) == _parent(b"T")  # not above leaf 2


def test_update_replaces_the_leaf_and_blanks_its_direct_path() -> None:
    tree = _rfc_tree({0: LEAVES[0], 2: LEAVES[1], 4: LEAVES[2], 1: _parent(b"T"), 3: _parent(b"X"), 5: _parent(b"V")})
    updated = tree.update(1, LEAVES[8])
    assert updated.leaf(1) == LEAVES[8]
    assert [updated.parent(i) for i in (1, 3, 5)] == [None, None, _parent(b"V")]


def test_remove_blanks_the_path_and_truncates_to_the_rightmost_member() -> None:
    tree = tree_of(CS, GROUP[:5])  # 8 leaves
    assert tree.remove(2).n_leaves == 8  # a hole inside
    shrunk = tree.remove(4)
    assert (shrunk.n_leaves, [i for i, _ in shrunk.members()]) == (4, [0, 1, 2, 3])
    shrunk = shrunk.remove(3).remove(2)
    assert shrunk.n_leaves == 2
    assert shrunk.remove(1).n_leaves == 1
    assert tree.remove(2).remove(3).remove(4).n_leaves == 2


def test_a_commit_applies_updates_then_removes_then_adds() -> None:
    tree = tree_of(CS, GROUP[:4])
    proposals: list[tuple[int, m.Proposal]] = [
        (0, m.Add(_key_package(GROUP[5]))),
        (0, m.Add(_key_package(GROUP[6]))),
        (2, m.Update(LEAVES[7])),
        (0, m.Remove(1)),
        (0, m.PreSharedKey(m.ExternalPSK(b"id", b"nonce"))),
    ]
    change = apply_proposals(tree, proposals)
    assert change.added == (1, 4)  # the removed leaf's place first, then the extension
    assert [(i, leaf) for i, leaf in change.tree.members()] == [
        (0, LEAVES[0]), (1, LEAVES[5]), (2, LEAVES[7]), (3, LEAVES[3]), (4, LEAVES[6])
    ]  # fmt: skip
    assert change.tree.n_leaves == 8


def test_changes_never_touch_the_tree_they_start_from() -> None:
    tree = tree_of(CS, GROUP[:3])
    snapshot = (tree.nodes, tree.tree_hash())
    tree.add(LEAVES[3])
    tree.update(1, LEAVES[4])
    tree.remove(2)
    apply_proposals(tree, [(0, m.Remove(1)), (0, m.Add(_key_package(GROUP[4])))])
    assert (tree.nodes, tree.tree_hash()) == snapshot


@pytest.mark.parametrize(
    ("proposal", "sender", "reason"),
    [
        (m.Remove(3), 0, "leaf 3 is blank"),
        (m.Remove(9), 0, "leaf 9 is outside a tree of 4 leaves"),
        (m.Update(LEAVES[5]), 3, "leaf 3 is blank"),
    ],
    ids=["remove-blank", "remove-outside", "update-from-blank"],
)
def test_changes_to_leaves_that_are_not_members_are_refused(proposal: m.Proposal, sender: int, reason: str) -> None:
    tree = tree_of(CS, GROUP[:3])
    with pytest.raises(NoSuchLeaf, match=reason):
        apply_proposals(tree, [(sender, proposal)])


def _key_package(joiner: Member) -> m.KeyPackage:
    return m.KeyPackage(m.ProtocolVersion.MLS10, CS.id, b"init key", joiner.leaf, (), b"unsigned")


def test_the_wire_form_drops_trailing_blanks_only() -> None:
    tree = tree_of(CS, GROUP[:5]).remove(2)
    wire = tree.to_message().nodes
    assert len(wire) == 9 and wire[4] is None and wire[8] == LEAVES[4]
    assert RatchetTree.from_message(CS, tree.to_message()) == tree
