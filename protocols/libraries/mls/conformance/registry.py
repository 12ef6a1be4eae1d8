"""The vector types this package knows, each with the keys its entries carry and its checker.

Every type of the mlswg interop suite has a checker; only an entry for a
cipher suite outside RFC 9420's seven is counted as skipped, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from protocols.libraries.mls.conformance.checkers import (
    crypto_basics,
    deserialization,
    key_schedule,
    message_protection,
    messages,
    passive_client,
    psk_secret,
    secret_tree,
    transcript_hashes,
    tree_math,
    tree_operations,
    tree_validation,
    treekem,
    welcome,
)
from protocols.libraries.mls.conformance.report import Failure

Checker = Callable[[dict[str, Any]], list[Failure]]


@attrs.frozen
class VectorType:
    """A vector file type: every entry has all of ``keys`` and nothing but them and ``optional_keys``."""

    name: str
    keys: frozenset[str]
    check: Checker
    optional_keys: frozenset[str] = frozenset()

    def fits(self, entry_keys: frozenset[str]) -> bool:
        return self.keys <= entry_keys <= self.keys | self.optional_keys


VECTOR_TYPES: tuple[VectorType, ...] = (
    VectorType("tree-math", tree_math.KEYS, tree_math.check),
    VectorType("crypto-basics", crypto_basics.KEYS, crypto_basics.check),
    VectorType("deserialization", deserialization.KEYS, deserialization.check),
    VectorType("messages", messages.KEYS, messages.check),
    VectorType("psk_secret", psk_secret.KEYS, psk_secret.check),
    VectorType("secret-tree", secret_tree.KEYS, secret_tree.check),
    VectorType("key-schedule", key_schedule.KEYS, key_schedule.check),
    VectorType("transcript-hashes", transcript_hashes.KEYS, transcript_hashes.check),
    VectorType("tree-validation", tree_validation.KEYS, tree_validation.check),
    VectorType("tree-operations", tree_operations.KEYS, tree_operations.check),
    VectorType("treekem", treekem.KEYS, treekem.check),
    VectorType("message-protection", message_protection.KEYS, message_protection.check),
    VectorType("welcome", welcome.KEYS, welcome.check),
    # passive-client-welcome, -handling-commit and -random share one shape.
    VectorType(
        "passive-client",
        passive_client.KEYS,
        passive_client.check,
        optional_keys=passive_client.OPTIONAL_KEYS,
    ),
)
