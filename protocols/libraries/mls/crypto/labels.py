"""The labeled constructions of RFC 9420 sections 5.1-5.2, over any cipher suite.

Every label gets the ``"MLS 1.0 "`` prefix, so a value derived, signed or
encrypted for one purpose can never stand in for another.  RefHash is the
exception: its callers pass the whole label.  Labels may be ``str`` or
``bytes`` (the key-schedule vectors use exporter labels that are not text).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._wire import uint, vector
from .keys import Rng
from .suites import CipherSuite

_PREFIX = b"MLS 1.0 "
KEY_PACKAGE_REF_LABEL = b"MLS 1.0 KeyPackage Reference"
PROPOSAL_REF_LABEL = b"MLS 1.0 Proposal Reference"


def _raw(label: str | bytes) -> bytes:
    return label.encode() if isinstance(label, str) else bytes(label)


def _labeled(label: str | bytes, content: bytes) -> bytes:
    """``{opaque label<V> = "MLS 1.0 " + label; opaque content<V>}``: SignContent and EncryptContext."""
    return vector(_PREFIX + _raw(label)) + vector(content)


def expand_with_label(suite: CipherSuite, secret: bytes, label: str | bytes, context: bytes, length: int) -> bytes:
    """ExpandWithLabel: HKDF-Expand with ``KDFLabel {uint16 length; label; context}``."""
    info = uint(length, 2) + _labeled(label, context)
    return suite.expand(secret, info, length)


def derive_secret(suite: CipherSuite, secret: bytes, label: str | bytes) -> bytes:
    """DeriveSecret: ExpandWithLabel with an empty context and length ``Nh``."""
    return expand_with_label(suite, secret, label, b"", suite.nh)


def derive_tree_secret(suite: CipherSuite, secret: bytes, label: str | bytes, generation: int, length: int) -> bytes:
    """DeriveTreeSecret: ExpandWithLabel with the uint32 ``generation`` as context."""
    return expand_with_label(suite, secret, label, uint(generation, 4), length)


def ref_hash(suite: CipherSuite, label: str | bytes, value: bytes) -> bytes:
    """RefHash: ``Hash(RefHashInput {label; value})``, the label used as given."""
    return suite.hash(vector(_raw(label)) + vector(value))


def make_key_package_ref(suite: CipherSuite, key_package: bytes) -> bytes:
    """MakeKeyPackageRef over an encoded KeyPackage."""
    return ref_hash(suite, KEY_PACKAGE_REF_LABEL, key_package)


def make_proposal_ref(suite: CipherSuite, authenticated_content: bytes) -> bytes:
    """MakeProposalRef over an encoded AuthenticatedContent."""
    return ref_hash(suite, PROPOSAL_REF_LABEL, authenticated_content)


def sign_with_label(suite: CipherSuite, private: bytes, label: str | bytes, content: bytes) -> bytes:
    """SignWithLabel: a signature over ``SignContent {"MLS 1.0 " + label; content}``."""
    return suite.sign(private, _labeled(label, content))


def verify_with_label(suite: CipherSuite, public: bytes, label: str | bytes, content: bytes, signature: bytes) -> bool:
    """VerifyWithLabel, the counterpart of :func:`sign_with_label`."""
    return suite.verify(public, _labeled(label, content), signature)


def encrypt_with_label(
    suite: CipherSuite, public: bytes, label: str | bytes, context: bytes, plaintext: bytes, rng: Rng | None = None
) -> tuple[bytes, bytes]:
    """EncryptWithLabel: HPKE SealBase with ``info = EncryptContext`` and an empty aad.

    Returns ``(kem_output, ciphertext)``; the ephemeral key comes from ``rng``.
    """
    return suite.hpke.seal(public, _labeled(label, context), b"", plaintext, rng)


def decrypt_with_label(
    suite: CipherSuite, private: bytes, label: str | bytes, context: bytes, kem_output: bytes, ciphertext: bytes
) -> bytes:
    """DecryptWithLabel; failure raises :class:`~protocols.libraries.mls.errors.DecryptionFailed`."""
    return suite.hpke.open(kem_output, private, _labeled(label, context), b"", ciphertext)


def encrypt_with_label_all(
    suite: CipherSuite,
    public: bytes,
    label: str | bytes,
    context: bytes,
    plaintexts: Sequence[bytes],
    rng: Rng | None = None,
) -> tuple[bytes, tuple[bytes, ...]]:
    """EncryptWithLabel's HPKE context sealing several plaintexts in turn (the first as
    :func:`encrypt_with_label` seals it); ``(kem_output, ciphertexts)``."""
    return suite.hpke.seal_all(public, _labeled(label, context), b"", plaintexts, rng)


def decrypt_with_label_all(
    suite: CipherSuite,
    private: bytes,
    label: str | bytes,
    context: bytes,
    kem_output: bytes,
    ciphertexts: Sequence[bytes],
) -> tuple[bytes, ...]:
    """Inverse of :func:`encrypt_with_label_all`; failure raises :class:`~protocols.libraries.mls.errors.DecryptionFailed`."""
    return suite.hpke.open_all(kem_output, private, _labeled(label, context), b"", ciphertexts)
