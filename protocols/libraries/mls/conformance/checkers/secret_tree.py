"""secret-tree.json: sender-data key and nonce, and every leaf's ratchet keys (RFC 9420 section 9).

A receiver jumps straight to each listed generation and a sender ratchets
through every generation up to it, so both paths of the secret tree are checked.
"""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.schedule import RatchetKind, SecretTree, sender_data_key_nonce

KEYS = frozenset({"cipher_suite", "encryption_secret", "leaves", "sender_data"})
KINDS = {RatchetKind.HANDSHAKE: "handshake", RatchetKind.APPLICATION: "application"}


def check(entry: dict[str, Any]) -> list[Failure]:
    cs, sd = suite(entry["cipher_suite"]), entry["sender_data"]
    key, nonce = sender_data_key_nonce(cs, h(sd["sender_data_secret"]), h(sd["ciphertext"]))
    failures = compare("sender_data.key", key, h(sd["key"])) + compare("sender_data.nonce", nonce, h(sd["nonce"]))
    fresh = SecretTree.create(cs, h(entry["encryption_secret"]), len(entry["leaves"]))
    receiver = fresh
    for leaf, generations in enumerate(entry["leaves"]):
        for expected in generations:
            for kind, name in KINDS.items():
                receiver, got = receiver.receive_key(leaf, kind, expected["generation"])
                where = f"leaves[{leaf}].generation[{expected['generation']}].{name}"
                failures += compare(f"{where} (generation)", got.generation, expected["generation"])
                failures += compare(f"{where}_key", got.key, h(expected[f"{name}_key"]))
                failures += compare(f"{where}_nonce", got.nonce, h(expected[f"{name}_nonce"]))
    sender = fresh
    # Leaves in reverse order: the tree's expansion must not depend on which leaf comes first.
    for leaf in reversed(range(len(entry["leaves"]))):
        wanted = {e["generation"]: e for e in entry["leaves"][leaf]}
        for kind, name in KINDS.items():
            for generation in range(max(wanted, default=-1) + 1):
                sender, got = sender.send_key(leaf, kind)
                failures += compare(f"leaves[{leaf}].{name} (sender generation)", got.generation, generation)
                if generation in wanted:
                    where = f"leaves[{leaf}].generation[{generation}].{name}"
                    failures += compare(f"{where}_key (sender)", got.key, h(wanted[generation][f"{name}_key"]))
                    failures += compare(f"{where}_nonce (sender)", got.nonce, h(wanted[generation][f"{name}_nonce"]))
    return failures
