"""Identities, leaf nodes and key packages.

A member's *credential* is its Nostr public key (64 lowercase hex chars; on
the wire an RFC 9420 BasicCredential whose identity is the 32 raw bytes).
The engine does not check Nostr signatures: the application (Marmot) binds
the Nostr key to the key package at the Nostr layer.  Inside MLS the leaf
node carries the credential together with the member's Ed25519 signature key
and X25519 HPKE key, and the leaf's own signature (made with that Ed25519 key)
covers all three, so the signature key is bound to the credential.

Leaf nodes omit RFC 9420's capabilities, lifetime and extensions fields.
"""

from __future__ import annotations

import attrs

from . import suite, wire
from .errors import InvalidArgument, InvalidMessage, InvalidSignature, InvalidSnapshot
from .labels import ref_hash, sign_with_label, verify_with_label
from .tls import Reader, Writer

CREDENTIAL_BASIC = 1
SOURCE_KEY_PACKAGE = 1
SOURCE_COMMIT = 3  # RFC 9420 LeafNodeSource.commit: leaf replaced by its owner's commit

_HEX = frozenset("0123456789abcdef")


def normalize_credential(nostr_pubkey_hex: str) -> str:
    """Validate a Nostr public key (64 hex chars) and return it lowercase."""
    if not isinstance(nostr_pubkey_hex, str):
        raise InvalidArgument("credential must be a 64-character hex string")
    cred = nostr_pubkey_hex.lower()
    if len(cred) != 64 or not set(cred) <= _HEX:
        raise InvalidArgument(f"credential must be 64 hex characters, got {nostr_pubkey_hex!r}")
    return cred


def _write_credential(w: Writer, cred: str) -> None:
    w.u16(CREDENTIAL_BASIC).opaque(bytes.fromhex(cred))


def _read_credential(r: Reader) -> str:
    if r.u16() != CREDENTIAL_BASIC:
        raise r.fail("unsupported credential type")
    return r.fixed(32).hex()


# --- identity -----------------------------------------------------------------


@attrs.frozen
class Identity:
    """A member's long-term identity: credential plus Ed25519 signing key."""

    credential: str
    signing_private: bytes = attrs.field(repr=False)

    @property
    def signing_public(self) -> bytes:
        return suite.signature_public_key(self.signing_private)


def new_identity(nostr_pubkey_hex: str, *, rng: suite.Rng | None = None) -> Identity:
    """Create an identity for a Nostr public key with a fresh Ed25519 key from ``rng``."""
    private, _ = suite.signature_key_pair(rng)
    return Identity(normalize_credential(nostr_pubkey_hex), private)


def identity_to_bytes(identity: Identity) -> bytes:
    """Serialize an identity, INCLUDING its private signing key."""
    w = wire.writer(wire.KIND_IDENTITY)
    _write_credential(w, identity.credential)
    return w.opaque(identity.signing_private).bytes()


def identity_from_bytes(data: bytes) -> Identity:
    """Inverse of :func:`identity_to_bytes`; garbage raises :class:`InvalidSnapshot`."""
    r = wire.reader(data, wire.KIND_IDENTITY, InvalidSnapshot)
    identity = Identity(_read_credential(r), r.fixed(32))
    r.done()
    return identity


# --- leaf nodes -----------------------------------------------------------------


@attrs.frozen
class LeafNode:
    """One roster entry: credential, keys, and the owner's signature over them."""

    credential: str
    signature_key: bytes
    encryption_key: bytes
    source: int
    signature: bytes = attrs.field(repr=False)

    def encode_to(self, w: Writer) -> None:
        _write_tbs_prefix(w, self.encryption_key, self.signature_key, self.credential, self.source)
        w.opaque(self.signature)

    @classmethod
    def decode_from(cls, r: Reader) -> LeafNode:
        enc, sig_key, cred = r.fixed(32), r.fixed(32), _read_credential(r)
        source = r.u8()
        if source not in (SOURCE_KEY_PACKAGE, SOURCE_COMMIT):
            raise r.fail(f"unknown leaf node source {source}")
        return cls(cred, sig_key, enc, source, r.fixed(suite.SIGNATURE_LENGTH))


def _write_tbs_prefix(w: Writer, enc: bytes, sig_key: bytes, cred: str, source: int) -> None:
    w.opaque(enc).opaque(sig_key)
    _write_credential(w, cred)
    w.u8(source)


def _leaf_tbs(enc, sig_key, cred, source, group_id: bytes | None, leaf_index: int | None) -> bytes:
    w = Writer()
    _write_tbs_prefix(w, enc, sig_key, cred, source)
    if source == SOURCE_COMMIT:
        # As in RFC 9420: a leaf made inside a group is bound to that group and position.
        w.opaque(group_id or b"").u32(leaf_index or 0)
    return w.bytes()


def make_leaf(
    cred: str,
    signing_private: bytes,
    encryption_key: bytes,
    *,
    group_id: bytes | None = None,
    leaf_index: int | None = None,
) -> LeafNode:
    """Build and sign a leaf; pass ``group_id``/``leaf_index`` for a commit (update) leaf."""
    source = SOURCE_KEY_PACKAGE if group_id is None else SOURCE_COMMIT
    sig_key = suite.signature_public_key(signing_private)
    tbs = _leaf_tbs(encryption_key, sig_key, cred, source, group_id, leaf_index)
    return LeafNode(cred, sig_key, encryption_key, source, sign_with_label(signing_private, "LeafNodeTBS", tbs))


def verify_leaf(leaf: LeafNode, *, group_id: bytes | None = None, leaf_index: int | None = None) -> None:
    """Check the leaf's self-signature; raises :class:`InvalidSignature`."""
    tbs = _leaf_tbs(leaf.encryption_key, leaf.signature_key, leaf.credential, leaf.source, group_id, leaf_index)
    if not verify_with_label(leaf.signature_key, "LeafNodeTBS", tbs, leaf.signature):
        raise InvalidSignature(f"leaf node signature of {leaf.credential[:16]}... does not verify")


# --- key packages ---------------------------------------------------------------


@attrs.frozen
class KeyPackage:
    """Public, signed invitation material: HPKE init key plus the future leaf."""

    init_key: bytes
    leaf: LeafNode
    signature: bytes = attrs.field(repr=False)

    @property
    def credential(self) -> str:
        return self.leaf.credential

    @property
    def signature_key(self) -> bytes:
        return self.leaf.signature_key

    def tbs(self) -> bytes:
        w = Writer().u16(1).u16(suite.CIPHER_SUITE).opaque(self.init_key)
        self.leaf.encode_to(w)
        return w.bytes()

    def encode_to(self, w: Writer) -> None:
        w.raw(self.tbs()).opaque(self.signature)

    @classmethod
    def decode_from(cls, r: Reader) -> KeyPackage:
        if r.u16() != 1 or r.u16() != suite.CIPHER_SUITE:
            raise r.fail("key package has an unsupported version or cipher suite")
        init_key, leaf = r.fixed(32), LeafNode.decode_from(r)
        return cls(init_key, leaf, r.fixed(suite.SIGNATURE_LENGTH))

    def ref(self) -> bytes:
        """KeyPackageRef: RefHash over the key package encoding."""
        w = Writer()
        self.encode_to(w)
        return ref_hash("MLS 1.0 KeyPackage Reference", w.bytes())


@attrs.frozen
class KeyPackagePrivate:
    """Private keys behind a key package: the init key and the leaf HPKE key."""

    key_package_ref: bytes
    init_private: bytes = attrs.field(repr=False)
    encryption_private: bytes = attrs.field(repr=False)


def create_key_package(identity: Identity, *, rng: suite.Rng | None = None) -> tuple[KeyPackage, KeyPackagePrivate]:
    """Create a signed key package and its private part (fresh keys from ``rng``)."""
    init_private, init_public = suite.hpke_key_pair(rng)
    enc_private, enc_public = suite.hpke_key_pair(rng)
    leaf = make_leaf(identity.credential, identity.signing_private, enc_public)
    unsigned = KeyPackage(init_public, leaf, b"")
    kp = attrs.evolve(unsigned, signature=sign_with_label(identity.signing_private, "KeyPackageTBS", unsigned.tbs()))
    return kp, KeyPackagePrivate(kp.ref(), init_private, enc_private)


def verify_key_package(kp: KeyPackage) -> None:
    """Verify the key package signature and its leaf; raises :class:`InvalidSignature`."""
    if kp.leaf.source != SOURCE_KEY_PACKAGE:
        raise InvalidMessage("key package leaf must have source key_package")
    if not verify_with_label(kp.signature_key, "KeyPackageTBS", kp.tbs(), kp.signature):
        raise InvalidSignature(f"key package of {kp.credential[:16]}... has a bad signature")
    verify_leaf(kp.leaf)


def key_package_to_bytes(kp: KeyPackage) -> bytes:
    """Serialize a key package (public)."""
    w = wire.writer(wire.KIND_KEY_PACKAGE)
    kp.encode_to(w)
    return w.bytes()


def key_package_from_bytes(data: bytes, *, verify: bool = True) -> KeyPackage:
    """Parse (and by default verify) a key package; errors are :class:`MlsError` subclasses."""
    r = wire.reader(data, wire.KIND_KEY_PACKAGE, InvalidMessage)
    kp = KeyPackage.decode_from(r)
    r.done()
    if verify:
        verify_key_package(kp)
    return kp


def key_package_private_to_bytes(priv: KeyPackagePrivate) -> bytes:
    """Serialize the private part of a key package (secret!)."""
    w = wire.writer(wire.KIND_KEY_PACKAGE_PRIVATE).opaque(priv.key_package_ref)
    return w.opaque(priv.init_private).opaque(priv.encryption_private).bytes()


def key_package_private_from_bytes(data: bytes) -> KeyPackagePrivate:
    """Inverse of :func:`key_package_private_to_bytes`."""
    r = wire.reader(data, wire.KIND_KEY_PACKAGE_PRIVATE, InvalidSnapshot)
    priv = KeyPackagePrivate(r.fixed(suite.NH), r.fixed(32), r.fixed(32))
    r.done()
    return priv


__all__ = [
    "Identity",
    "KeyPackage",
    "KeyPackagePrivate",
    "LeafNode",
    "create_key_package",
    "identity_from_bytes",
    "identity_to_bytes",
    "key_package_from_bytes",
    "key_package_private_from_bytes",
    "key_package_private_to_bytes",
    "key_package_to_bytes",
    "make_leaf",
    "new_identity",
    "normalize_credential",
    "verify_key_package",
    "verify_leaf",
]
