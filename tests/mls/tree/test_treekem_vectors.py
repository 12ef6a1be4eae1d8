"""RFC 9420 treekem.json, all seven suites: 77 trees, 434 update paths, every member's view.

For each tree, every member's private state is restored and must fit the
tree.  Each vector UpdatePath is merged once (parent hashes, leaf
signature, tree hash after) and decrypted by every other member, who must
find the vector's path secret and commit secret.  Then the sender makes a
new UpdatePath of its own, which every other member must open to the same
commit secret.  The GroupContext has the vector's suite, group id, epoch and
confirmed transcript hash, no extensions, and the merged tree's hash.
"""

from __future__ import annotations

from functools import cache

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers.treekem import check, group_context, private_states
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree.private_tree import TreePrivate
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from protocols.libraries.mls.tree.treekem import create_update_path, decrypt_update_path
from protocols.libraries.mls.tree.update_path import merge_update_path
from tests.mls.crypto._vectors import h, mls

from ._members import seeded_rng

VECTORS = mls("treekem")
CASES = pytest.mark.parametrize(
    "index", range(len(VECTORS)), ids=[f"suite-{v['cipher_suite']}-{len(v['update_paths'])}-paths" for v in VECTORS]
)


@attrs.frozen
class Group:
    """One vector's tree, context and members' private states (with their signature keys)."""

    tree: RatchetTree
    context: m.GroupContext
    private: dict[int, TreePrivate]
    signature_private: dict[int, bytes] = attrs.field(repr=False)


@cache
def _group(index: int) -> Group:
    vector = VECTORS[index]
    cs = suite(vector["cipher_suite"])
    tree = RatchetTree.from_message(cs, decode(m.RatchetTree, h(vector["ratchet_tree"])))
    private, signing = private_states(cs, vector)
    return Group(tree, group_context(cs, vector), private, signing)


@CASES
def test_private_states_and_the_vectors_update_paths(index: int) -> None:
    """The conformance checker: every private state fits, every member opens each vector path and a fresh one."""
    assert check(VECTORS[index]) == []


@CASES
def test_every_member_opens_a_new_update_path_from_each_sender(index: int) -> None:
    group = _group(index)
    for entry in VECTORS[index]["update_paths"]:
        sender = entry["sender"]
        created = create_update_path(
            group.tree, group.private[sender], group.signature_private[sender], group.context,
            rng=seeded_rng(b"treekem %d %d" % (index, sender)),
        )  # fmt: skip
        created.private.check(created.tree)
        merged = merge_update_path(group.tree, sender, created.update_path, group.context.group_id)
        assert merged.tree == created.tree
        for leaf, state in group.private.items():
            if leaf != sender:
                received = decrypt_update_path(merged, state, group.context)
                assert received.commit_secret == created.commit_secret
                assert received.path_secret == created.path_secret_for(leaf)  # their common ancestor's


def test_the_vectors_cover_every_suite_and_434_paths() -> None:
    assert sum(len(v["update_paths"]) for v in VECTORS) == 434
    per_suite = {s: [len(v["update_paths"]) for v in VECTORS if v["cipher_suite"] == s] for s in range(1, 8)}
    assert all(counts == per_suite[1] for counts in per_suite.values())
