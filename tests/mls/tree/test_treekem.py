"""TreeKEM between real members: joining, following commits, forward secrecy, and every refusal of a bad path.

A group grows the way RFC 9420 groups do: the creator adds members and
commits with a path that skips them, the new members take their path
secret from the Welcome, later commits reach everyone.  The trees these
commits make validate like a received tree (parent hashes, unmerged leaves).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.crypto.labels import encrypt_with_label
from protocols.libraries.mls.errors import DecryptionFailed, InvalidArgument
from protocols.libraries.mls.tree import math as tree_math
from protocols.libraries.mls.tree import parent_hash, tree_hash
from protocols.libraries.mls.tree.errors import (
    InvalidLeafNode,
    InvalidLeafSignature,
    InvalidUpdatePath,
    NoDecryptionKey,
    PrivateStateMismatch,
)
from protocols.libraries.mls.tree.leaf_node import sign_leaf_node
from protocols.libraries.mls.tree.operations import apply_proposals
from protocols.libraries.mls.tree.private_tree import TreePrivate
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from protocols.libraries.mls.tree.treekem import (
    CreatedPath,
    create_update_path,
    decrypt_update_path,
    receive_update_path,
)
from protocols.libraries.mls.tree.update_path import merge_update_path
from protocols.libraries.mls.tree.validation import validate_tree

from ._members import Member, members, seeded_rng, tree_of

CS = suite(1)
GROUP_ID = b"treekem test group"
PEOPLE: list[Member] = members(CS, 8)


def _context(epoch: int) -> m.GroupContext:
    return m.GroupContext(m.ProtocolVersion.MLS10, CS.id, GROUP_ID, epoch, b"", b"transcript", ())


def _key_package(joiner: Member) -> m.KeyPackage:
    return m.KeyPackage(m.ProtocolVersion.MLS10, CS.id, b"init " + joiner.name, joiner.leaf, (), b"unsigned")


@attrs.define
class Group:
    """Everyone's view of one group: the shared tree and each member's private state."""

    tree: RatchetTree
    private: dict[int, TreePrivate]
    epoch: int = 0

    def commit(self, committer: int, adds: tuple[Member, ...] = (), removes: tuple[int, ...] = ()) -> CreatedPath:
        """``committer`` adds and removes members and commits with a path; everyone else follows."""
        proposals: list[tuple[int, m.Proposal]] = [(committer, m.Remove(leaf)) for leaf in removes]
        proposals += [(committer, m.Add(_key_package(joiner))) for joiner in adds]
        change = apply_proposals(self.tree, proposals)
        self.epoch += 1
        created = create_update_path(
            change.tree, self.private[committer], _signer(self, committer), _context(self.epoch),
            excluded=frozenset(change.added), rng=seeded_rng(b"commit %d" % self.epoch),
        )  # fmt: skip
        for leaf, state in list(self.private.items()):
            if leaf in removes:
                del self.private[leaf]
            elif leaf != committer:
                received = receive_update_path(
                    change.tree, state, committer, created.update_path, _context(self.epoch),
                    excluded=frozenset(change.added),
                )  # fmt: skip
                assert received.commit_secret == created.commit_secret
                assert received.tree == created.tree
                self.private[leaf] = received.private
        self.private[committer] = created.private
        for leaf, joiner in zip(change.added, adds, strict=True):
            ancestor = tree_math.common_ancestor(2 * committer, 2 * leaf, created.tree.n_leaves)
            secret = created.path_secret_for(leaf)
            assert secret is not None
            self.private[leaf] = TreePrivate.join(created.tree, leaf, joiner.encryption, ancestor, secret)
        self.tree = created.tree
        return created


def _signer(group: Group, leaf: int) -> bytes:
    """The signature key of whoever sits at ``leaf`` (found by the signature key of the leaf)."""
    signature_key = group.tree.member(leaf).signature_key
    return next(p.signature.private for p in PEOPLE if p.signature.public == signature_key)


def _founded(size: int) -> Group:
    """A group its creator grew to ``size`` members in one commit."""
    group = Group(RatchetTree.create(CS, PEOPLE[0].leaf), {0: TreePrivate.for_leaf(0, PEOPLE[0].encryption)})
    group.commit(0, adds=tuple(PEOPLE[1:size]))
    return group


# --- groups that work ---------------------------------------------------------------


def test_members_added_by_a_commit_join_with_its_path_secret_and_follow_later_commits() -> None:
    group = _founded(5)
    for committer in (3, 1, 4, 0):
        group.commit(committer)  # every receiver's commit secret was checked inside
    for leaf, state in group.private.items():
        state.check(group.tree)
        assert set(state.keys) == {2 * leaf, *tree_math.direct_path(2 * leaf, group.tree.n_leaves)} & {
            i for i, n in enumerate(group.tree.nodes) if n is not None
        }
    validate_tree(group.tree, GROUP_ID, tree_hash=group.tree.tree_hash())


def test_new_members_are_left_out_of_the_path_they_are_added_with() -> None:
    group = Group(RatchetTree.create(CS, PEOPLE[0].leaf), {0: TreePrivate.for_leaf(0, PEOPLE[0].encryption)})
    created = group.commit(0, adds=tuple(PEOPLE[1:4]))
    assert [len(node.encrypted_path_secret) for node in created.update_path.nodes] == [0, 0]
    created = group.commit(2, adds=(PEOPLE[4],))  # leaf 4: alone under node 11, skipped by the path's root
    assert [len(node.encrypted_path_secret) for node in created.update_path.nodes] == [1, 1, 0]


def test_trees_with_unmerged_leaves_and_blanks_validate_after_each_commit() -> None:
    group = _founded(6)
    group.commit(5)
    tree = apply_proposals(group.tree, [(2, m.Add(_key_package(PEOPLE[6])))]).tree
    root = group.tree.parent(tree.root)
    assert root is not None and tree.parent(tree.root) == attrs.evolve(root, unmerged_leaves=(6,))
    validate_tree(tree, GROUP_ID)  # the added leaf is unmerged above it: still parent-hash valid
    group.commit(2, removes=(3,), adds=(PEOPLE[7],))
    validate_tree(group.tree, GROUP_ID, tree_hash=group.tree.tree_hash())


def test_keys_replaced_by_a_path_are_gone_from_every_private_state() -> None:
    group = _founded(4)
    before = {leaf: dict(state.keys) for leaf, state in group.private.items()}
    group.commit(2)
    for leaf, state in group.private.items():
        old_privates = {pair.private for pair in before[leaf].values()}
        replaced = {node for node in before[leaf] if node in (5, 3) or (leaf == 2 and node == 4)}
        assert replaced
        assert not old_privates & {pair.private for node, pair in state.keys.items() if node in replaced}
        kept = set(before[leaf]) - replaced
        assert all(state.keys[node] == before[leaf][node] for node in kept)


def test_a_removal_prunes_the_keys_of_the_blanked_path() -> None:
    group = _founded(4)
    tree = group.tree.remove(1)
    state = group.private[0].pruned(tree)
    assert set(group.private[0].keys) == {0, 1, 3} and set(state.keys) == {0}


# --- refusals ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def four() -> Group:
    return _founded(4)


def _path(group: Group, committer: int = 1) -> CreatedPath:
    return create_update_path(
        group.tree, group.private[committer], _signer(group, committer), _context(9), rng=seeded_rng(b"bad")
    )


def _resigned(group: Group, leaf: m.LeafNode, sender: int = 1, **changes: Any) -> m.LeafNode:
    payload = m.LeafNodePayload(**{f.name: getattr(leaf, f.name) for f in attrs.fields(m.LeafNodePayload)})
    return sign_leaf_node(CS, _signer(group, sender), attrs.evolve(payload, **changes), GROUP_ID, sender)


def _receive(group: Group, path: m.UpdatePath, receiver: int = 0, **options: Any) -> Any:
    options.setdefault("group_context", _context(9))
    return receive_update_path(group.tree, group.private[receiver], 1, path, **options)


def _refusal_cases(group: Group) -> dict[str, tuple[m.UpdatePath, type[Exception], str]]:
    created = _path(group)
    path = created.update_path
    leaf, nodes = path.leaf_node, path.nodes
    other_key = group.tree.member(3).encryption_key
    return {
        "missing-node": (attrs.evolve(path, nodes=nodes[:-1]), InvalidUpdatePath, "1 nodes for a filtered direct path of 2"),
        "extra-ciphertext": (
            attrs.evolve(path, nodes=(nodes[0], attrs.evolve(nodes[1], encrypted_path_secret=nodes[1].encrypted_path_secret * 2))),
            InvalidUpdatePath, "4 encrypted path secrets for a resolution of 2",
        ),
        "node-key-in-tree": (
            attrs.evolve(path, nodes=(attrs.evolve(nodes[0], encryption_key=other_key), nodes[1])),
            InvalidUpdatePath, "already the key of node 6",
        ),
        "repeated-node-key": (
            attrs.evolve(path, nodes=(nodes[0], attrs.evolve(nodes[1], encryption_key=nodes[0].encryption_key))),
            InvalidUpdatePath, "same encryption key",
        ),
        "leaf-key-on-path": (
            attrs.evolve(path, leaf_node=_resigned(group, leaf, encryption_key=nodes[1].encryption_key)),
            InvalidUpdatePath, "same encryption key",
        ),
        "swapped-node-keys": (
            attrs.evolve(path, nodes=(attrs.evolve(nodes[0], encryption_key=nodes[1].encryption_key),
                                      attrs.evolve(nodes[1], encryption_key=nodes[0].encryption_key))),
            InvalidUpdatePath, "does not sign its path's parent hash",
        ),
        "wrong-parent-hash": (
            attrs.evolve(path, leaf_node=_resigned(group, leaf, leaf_node_source=m.CommitOrigin(b"\x00" * 32))),
            InvalidUpdatePath, "does not sign its path's parent hash",
        ),
        "old-leaf-key": (
            attrs.evolve(path, leaf_node=_resigned(group, leaf, encryption_key=group.tree.member(1).encryption_key)),
            InvalidUpdatePath, "keeps its old encryption key",
        ),
        "update-source": (
            attrs.evolve(path, leaf_node=_resigned(group, leaf, leaf_node_source=m.UpdateOrigin())),
            InvalidLeafNode, "comes from update, not commit",
        ),
        "bad-signature": (
            attrs.evolve(path, leaf_node=attrs.evolve(leaf, signature=leaf.signature[::-1])),
            InvalidLeafSignature, "leaf 1",
        ),
        "signed-for-another-leaf": (
            attrs.evolve(path, leaf_node=sign_leaf_node(CS, _signer(group, 1), leaf, GROUP_ID, 2)),
            InvalidLeafSignature, "leaf 1",
        ),
    }  # fmt: skip


REFUSALS = [
    "missing-node", "extra-ciphertext", "node-key-in-tree", "repeated-node-key", "leaf-key-on-path", "swapped-node-keys",
    "wrong-parent-hash", "old-leaf-key", "update-source", "bad-signature", "signed-for-another-leaf",
]  # fmt: skip


@pytest.mark.parametrize("case", REFUSALS)
def test_a_path_that_does_not_fit_the_tree_is_refused(four: Group, case: str) -> None:
    cases = _refusal_cases(four)
    assert list(cases) == REFUSALS
    path, error, reason = cases[case]
    with pytest.raises(error, match=reason):
        _receive(four, path)


def test_a_secret_that_does_not_give_the_announced_keys_is_refused(four: Group) -> None:
    created = _path(four)
    nodes = created.update_path.nodes
    context = encode(created.group_context)
    lie = encrypt_with_label(CS, four.tree.member(0).encryption_key, "UpdatePathNode", context, b"\x07" * 32)
    forged = attrs.evolve(nodes[0], encrypted_path_secret=(m.HPKECiphertext(*lie),))
    with pytest.raises(InvalidUpdatePath, match="path secret of node 1 does not give the key"):
        _receive(four, attrs.evolve(created.update_path, nodes=(forged, nodes[1])))


def test_another_context_does_not_decrypt(four: Group) -> None:
    with pytest.raises(DecryptionFailed):
        _receive(four, _path(four).update_path, group_context=_context(10))


def test_a_member_without_keys_for_the_path_cannot_decrypt(four: Group) -> None:
    stranger = TreePrivate.for_leaf(0, PEOPLE[7].encryption)
    merged = merge_update_path(four.tree, 1, _path(four).update_path, GROUP_ID)
    with pytest.raises(NoDecryptionKey, match="leaf 0 holds no key"):
        decrypt_update_path(merged, stranger, _context(9))


def test_our_own_path_and_a_context_of_another_suite_are_refused(four: Group) -> None:
    path = _path(four).update_path
    with pytest.raises(InvalidArgument, match="our own UpdatePath"):
        receive_update_path(four.tree, four.private[1], 1, path, _context(9))
    with pytest.raises(InvalidArgument, match="cipher suite 2"):
        _receive(four, path, group_context=attrs.evolve(_context(9), cipher_suite=2))


def test_private_states_that_do_not_fit_the_tree_are_refused(four: Group) -> None:
    with pytest.raises(PrivateStateMismatch, match="node 5, which is not above it"):
        four.private[0].with_keys({5: PEOPLE[7].encryption}).check(four.tree)
    with pytest.raises(PrivateStateMismatch, match="node 1 is not the node's key"):
        four.private[0].with_keys({1: PEOPLE[7].encryption}).check(four.tree)
    with pytest.raises(PrivateStateMismatch, match="node 3 is not the node's key"):
        TreePrivate.join(four.tree, 2, PEOPLE[2].encryption, 3, b"\x01" * 32)


# --- secrets stay out of sight -------------------------------------------------------------


def test_no_secret_shows_in_a_repr(four: Group) -> None:
    created = _path(four)
    received = _receive(four, created.update_path)
    secrets = [created.commit_secret, *created.path_secrets.values(), received.path_secret]
    secrets += [pair.private for pair in (*created.private.keys.values(), *received.private.keys.values())]
    text = " ".join(repr(x) for x in (created, received, created.private, received.private))
    assert "keys for nodes [0, 1, 3]" in text
    assert not [s for s in secrets if s.hex() in text or repr(s) in text]


# --- a commit on a large tree costs one path ---------------------------------------------


def test_a_commit_in_a_thousand_member_group_hashes_one_path(monkeypatch: pytest.MonkeyPatch) -> None:
    crowd = members(CS, 1000)
    tree = tree_of(CS, crowd)
    tree.tree_hash()
    counts: Counter[str] = Counter()
    _count(monkeypatch, tree_hash, "node_tree_hash", counts)
    _count(monkeypatch, parent_hash, "parent_hash", counts)
    committer = TreePrivate.for_leaf(500, crowd[500].encryption)
    created = create_update_path(tree, committer, crowd[500].signature.private, _context(1), rng=seeded_rng(b"big"))
    assert len(created.update_path.nodes) == 10  # every node of the direct path: no copath subtree is empty
    assert counts == {"parent_hash": 10, "node_tree_hash": 11}
    counts.clear()
    received = receive_update_path(
        tree, TreePrivate.for_leaf(7, crowd[7].encryption), 500, created.update_path, _context(1)
    )
    assert received.commit_secret == created.commit_secret
    assert counts == {"parent_hash": 10, "node_tree_hash": 11}


def _count(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, counts: Counter[str]) -> None:
    real: Callable[..., bytes] = getattr(module, name)

    def counting(*args: Any) -> bytes:
        counts[name] += 1
        return real(*args)

    monkeypatch.setattr(module, name, counting)
