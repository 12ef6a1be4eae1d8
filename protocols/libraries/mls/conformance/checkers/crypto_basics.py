"""crypto-basics.json: RefHash, ExpandWithLabel, DeriveSecret, DeriveTreeSecret, SignWithLabel, EncryptWithLabel.

Signing and encryption are randomised or key-dependent, so the vector's
signature must verify and its ciphertext must open; our own signature and
ciphertext must then verify and open too.
"""

from __future__ import annotations

from typing import Any

from protocols.libraries.mls.conformance.checkers._hex import compare, h
from protocols.libraries.mls.conformance.report import Failure
from protocols.libraries.mls.crypto import CipherSuite, suite
from protocols.libraries.mls.crypto import labels as L

KEYS = frozenset(
    {
        "cipher_suite",
        "ref_hash",
        "expand_with_label",
        "derive_secret",
        "derive_tree_secret",
        "sign_with_label",
        "encrypt_with_label",
    }
)


def check(entry: dict[str, Any]) -> list[Failure]:
    cs = suite(entry["cipher_suite"])
    t = entry["ref_hash"]
    failures = compare("ref_hash.out", L.ref_hash(cs, t["label"], h(t["value"])), h(t["out"]))
    t = entry["expand_with_label"]
    expanded = L.expand_with_label(cs, h(t["secret"]), t["label"], h(t["context"]), t["length"])
    failures += compare("expand_with_label.out", expanded, h(t["out"]))
    t = entry["derive_secret"]
    failures += compare("derive_secret.out", L.derive_secret(cs, h(t["secret"]), t["label"]), h(t["out"]))
    t = entry["derive_tree_secret"]
    derived = L.derive_tree_secret(cs, h(t["secret"]), t["label"], t["generation"], t["length"])
    failures += compare("derive_tree_secret.out", derived, h(t["out"]))
    return failures + _signing(cs, entry["sign_with_label"]) + _encryption(cs, entry["encrypt_with_label"])


def _signing(cs: CipherSuite, t: dict[str, Any]) -> list[Failure]:
    public, content = h(t["pub"]), h(t["content"])
    failures = compare("sign_with_label.pub", cs.signature_public_key(h(t["priv"])), public)
    if not L.verify_with_label(cs, public, t["label"], content, h(t["signature"])):
        failures.append(Failure("sign_with_label.signature", "the vector's signature does not verify"))
    ours = L.sign_with_label(cs, h(t["priv"]), t["label"], content)
    if not L.verify_with_label(cs, public, t["label"], content, ours):
        failures.append(Failure("sign_with_label.signature", "our own signature does not verify"))
    return failures


def _encryption(cs: CipherSuite, t: dict[str, Any]) -> list[Failure]:
    private, label, context, plaintext = h(t["priv"]), t["label"], h(t["context"]), h(t["plaintext"])
    failures = compare("encrypt_with_label.pub", cs.hpke_public_key(private), h(t["pub"]))
    opened = L.decrypt_with_label(cs, private, label, context, h(t["kem_output"]), h(t["ciphertext"]))
    failures += compare("encrypt_with_label.plaintext", opened, plaintext)
    kem_output, ciphertext = L.encrypt_with_label(cs, h(t["pub"]), label, context, plaintext)
    failures += compare("encrypt_with_label.kem_output (our length)", len(kem_output), cs.kem.npk)
    reopened = L.decrypt_with_label(cs, private, label, context, kem_output, ciphertext)
    return failures + compare("encrypt_with_label.plaintext (our ciphertext)", reopened, plaintext)
