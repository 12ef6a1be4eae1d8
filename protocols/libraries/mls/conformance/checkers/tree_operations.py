"""tree-operations.json: one proposal applied to a tree gives the vector's tree and tree hash (section 12.1)."""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls import messages as m
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.tree.operations import apply_proposals
from protocols.libraries.mls.tree.ratchet_tree import RatchetTree

KEYS = frozenset(
    {"cipher_suite", "proposal", "proposal_sender", "tree_before", "tree_after", "tree_hash_before", "tree_hash_after"}
)


def check(entry: dict[str, Any]) -> list[Failure]:
    before = RatchetTree.from_message(suite(entry["cipher_suite"]), decode(m.RatchetTree, h(entry["tree_before"])))
    failures = compare("tree_hash_before", before.tree_hash(), h(entry["tree_hash_before"]))
    change = apply_proposals(before, [(entry["proposal_sender"], decode(m.Proposal, h(entry["proposal"])))])
    failures += compare("tree_after", encode(change.tree.to_message()).hex(), entry["tree_after"])
    failures += compare("tree_hash_after", change.tree.tree_hash(), h(entry["tree_hash_after"]))
    # Trees are values: applying a proposal must leave the tree it started from as it was.
    return failures + compare("tree_before (after the change)", encode(before.to_message()).hex(), entry["tree_before"])
