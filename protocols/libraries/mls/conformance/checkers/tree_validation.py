"""tree-validation.json: every node's resolution and tree hash, and the tree validated as a joiner would."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree
from protocols.libraries.mls.tree.validation import validate_tree

KEYS = frozenset({"cipher_suite", "group_id", "tree", "resolutions", "tree_hashes"})


def check(entry: dict[str, Any]) -> list[Failure]:
    tree = RatchetTree.from_message(suite(entry["cipher_suite"]), decode(m.RatchetTree, h(entry["tree"])))
    width = range(len(tree.nodes))
    failures = compare("resolutions", [tree.resolution(i) for i in width], entry["resolutions"])
    failures += compare("tree_hashes", [tree.node_hash(i).hex() for i in width], entry["tree_hashes"])
    if not failures:
        # Validation checks the tree hash too, so it only adds news when the node-by-node checks passed.
        validate_tree(tree, h(entry["group_id"]), tree_hash=h(entry["tree_hashes"][tree.root]))
    return failures
