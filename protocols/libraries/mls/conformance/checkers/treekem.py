"""treekem.json: members' private states, the vector's update paths, and fresh paths (sections 7.4-7.6, 12.4).

Every member's private state is restored and must fit the tree.  Each vector
UpdatePath is merged (tree hash after) and decrypted by every other member,
who must find the vector's path secret and commit secret.  Then the sender
makes a new UpdatePath, which every other member must open to the same
commit secret.
"""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.tree.private_tree import TreePrivate
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from protocols.libraries.mls.tree.treekem import create_update_path, decrypt_update_path
from protocols.libraries.mls.tree.update_path import merge_update_path

KEYS = frozenset(
    {"cipher_suite", "group_id", "epoch", "confirmed_transcript_hash", "ratchet_tree", "leaves_private", "update_paths"}
)


def group_context(cs: CipherSuite, entry: dict[str, Any]) -> m.GroupContext:
    """The vector's context: no extensions, and a tree hash each merge replaces with the merged tree's."""
    return m.GroupContext(
        m.ProtocolVersion.MLS10, cs.id, h(entry["group_id"]), entry["epoch"], b"",
        h(entry["confirmed_transcript_hash"]), (),
    )  # fmt: skip


def private_states(cs: CipherSuite, entry: dict[str, Any]) -> tuple[dict[int, TreePrivate], dict[int, bytes]]:
    """Each member's restored TreePrivate and signature private key, by leaf index."""
    private, signing = {}, {}
    for leaf in entry["leaves_private"]:
        secrets = {node["node"]: h(node["path_secret"]) for node in leaf["path_secrets"]}
        private[leaf["index"]] = TreePrivate.restore(cs, leaf["index"], h(leaf["encryption_priv"]), secrets)
        signing[leaf["index"]] = h(leaf["signature_priv"])
    return private, signing


def check(entry: dict[str, Any]) -> list[Failure]:
    cs = suite(entry["cipher_suite"])
    tree = RatchetTree.from_message(cs, decode(m.RatchetTree, h(entry["ratchet_tree"])))
    context = group_context(cs, entry)
    private, signing = private_states(cs, entry)
    failures = compare("leaves_private (indices)", sorted(private), [i for i, _ in tree.members()])
    for state in private.values():
        state.check(tree)
    for number, path in enumerate(entry["update_paths"]):
        failures += _vector_path(tree, context, private, number, path)
        failures += _fresh_path(tree, context, private, signing, number, path["sender"])
    return failures


def _vector_path(
    tree: RatchetTree, context: m.GroupContext, private: dict[int, TreePrivate], number: int, path: dict[str, Any]
) -> list[Failure]:
    where, sender = f"update_paths[{number}]", path["sender"]
    merged = merge_update_path(tree, sender, decode(m.UpdatePath, h(path["update_path"])), context.group_id)
    failures = compare(f"{where}.tree_hash_after", merged.tree.tree_hash(), h(path["tree_hash_after"]))
    failures += compare(f"{where}.path_secrets[{sender}] (the sender's)", path["path_secrets"][sender], None)
    for leaf, state in private.items():
        if leaf != sender:
            received = decrypt_update_path(merged, state, context)
            failures += compare(f"{where}.path_secrets[{leaf}]", received.path_secret, h(path["path_secrets"][leaf]))
            failures += compare(f"{where}.commit_secret ({leaf})", received.commit_secret, h(path["commit_secret"]))
            tree_hash = received.group_context.tree_hash
            failures += compare(f"{where}.tree_hash_after ({leaf}'s context)", tree_hash, h(path["tree_hash_after"]))
            received.private.check(received.tree)
    return failures


def _fresh_path(
    tree: RatchetTree,
    context: m.GroupContext,
    private: dict[int, TreePrivate],
    signing: dict[int, bytes],
    number: int,
    sender: int,
) -> list[Failure]:
    created = create_update_path(tree, private[sender], signing[sender], context)
    merged = merge_update_path(tree, sender, created.update_path, context.group_id)
    failures: list[Failure] = []
    for leaf, state in private.items():
        if leaf != sender:
            received = decrypt_update_path(merged, state, context)
            field = f"update_paths[{number}] (a fresh path from leaf {sender}, opened by leaf {leaf})"
            failures += compare(field, received.commit_secret, created.commit_secret)
    return failures
