"""Labeled constructions of RFC 9420 section 5 for cipher suite 1.

Every label is prefixed with ``"MLS 1.0 "`` (except RefHash, whose callers
pass the full label) so that values derived or signed for one purpose can
never be confused with another.  Labels may be given as ``str`` or ``bytes``
(the key-schedule vectors carry binary exporter labels).
"""

from __future__ import annotations

from . import hpke, suite
from .tls import Writer

_PREFIX = b"MLS 1.0 "


def _label(label: str | bytes) -> bytes:
    return _PREFIX + (label.encode() if isinstance(label, str) else bytes(label))


def expand_with_label(secret: bytes, label: str | bytes, context: bytes, length: int) -> bytes:
    """ExpandWithLabel: HKDF-Expand with a KDFLabel {length, label, context}."""
    info = Writer().u16(length).opaque(_label(label)).opaque(context).bytes()
    return suite.hkdf_expand(secret, info, length)


def derive_secret(secret: bytes, label: str | bytes) -> bytes:
    """DeriveSecret: ExpandWithLabel with empty context and length Nh."""
    return expand_with_label(secret, label, b"", suite.NH)


def derive_tree_secret(secret: bytes, label: str | bytes, generation: int, length: int) -> bytes:
    """DeriveTreeSecret: ExpandWithLabel with the uint32 generation as context."""
    return expand_with_label(secret, label, generation.to_bytes(4, "big"), length)


def ref_hash(label: str | bytes, value: bytes) -> bytes:
    """RefHash: Hash(RefHashInput{label, value}); the label is used as given."""
    raw = label.encode() if isinstance(label, str) else bytes(label)
    return suite.hash_(Writer().opaque(raw).opaque(value).bytes())


def _sign_content(label: str | bytes, content: bytes) -> bytes:
    return Writer().opaque(_label(label)).opaque(content).bytes()


def sign_with_label(private: bytes, label: str | bytes, content: bytes) -> bytes:
    """SignWithLabel: Ed25519 over SignContent{"MLS 1.0 " + label, content}."""
    return suite.sign(private, _sign_content(label, content))


def verify_with_label(public: bytes, label: str | bytes, content: bytes, signature: bytes) -> bool:
    """VerifyWithLabel: the counterpart of :func:`sign_with_label`."""
    return suite.verify(public, _sign_content(label, content), signature)


def _encrypt_context(label: str | bytes, context: bytes) -> bytes:
    return Writer().opaque(_label(label)).opaque(context).bytes()


def encrypt_with_label(
    public: bytes, label: str | bytes, context: bytes, plaintext: bytes, rng: suite.Rng | None = None
) -> tuple[bytes, bytes]:
    """EncryptWithLabel: HPKE SealBase with info = EncryptContext, empty aad.

    Returns ``(kem_output, ciphertext)``.
    """
    return hpke.seal_base(public, _encrypt_context(label, context), b"", plaintext, rng)


def decrypt_with_label(
    private: bytes, label: str | bytes, context: bytes, kem_output: bytes, ciphertext: bytes
) -> bytes:
    """DecryptWithLabel; failures raise :class:`~protocols.mls.errors.DecryptionFailed`."""
    return hpke.open_base(kem_output, private, _encrypt_context(label, context), b"", ciphertext)
