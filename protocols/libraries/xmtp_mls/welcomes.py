"""Welcomes in libxmtp's wrapping: the HPKE wrapper around an RFC 9420 Welcome, opened and sealed.

libxmtp v1.10.0 (``wrap_welcome`` in crates/xmtp_mls/src/groups/mls_ext/welcome_wrapper.rs)
seals the TLS-serialised ``MLSMessage(Welcome)`` with HPKE base mode (DHKEM(X25519),
HKDF-SHA256, ChaCha20-Poly1305: suite 3's HPKE) to the KeyPackage's *init key*,
``info`` the MLS ``EncryptContext`` of label ``"MLS_WELCOME"`` and an empty
context, empty aad; it writes ``HPKECiphertext {kem_output, ciphertext}`` as
``data``.  The same HPKE context then seals ``WelcomeMetadata`` (sequence 1).
That is MLS's ``EncryptWithLabel`` continued for a second message, which the
engine's ``encrypt_with_label_all`` and ``decrypt_with_label_all`` do; the
metadata's cursor says where a joiner's reading of the group starts.  A
KeyPackage offering an X-Wing key (0xff03) gets a post-quantum wrapper, and one
offering pointer support (0xff04) may get a pointer; ours offer neither, so only
the Curve25519 wrapper is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from google.protobuf.message import DecodeError

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.crypto.labels import decrypt_with_label_all, encrypt_with_label, encrypt_with_label_all
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.messages import HPKECiphertext
from protocols.libraries.xmtp_wire.proto import mls_api_pb2

from .errors import UnsupportedWelcome, WelcomeNotForUs
from .profile import CIPHER_SUITE, WELCOME_HPKE_LABEL, WRAPPER_CURVE25519, WRAPPER_UNSPECIFIED


def wrap_welcome(welcome: bytes, init_key: bytes) -> bytes:
    """``MLSMessage(Welcome)`` bytes sealed to a KeyPackage's init key, as libxmtp's Curve25519 wrapper seals them."""
    kem_output, ciphertext = encrypt_with_label(suite(CIPHER_SUITE), init_key, WELCOME_HPKE_LABEL, b"", welcome)
    return encode(HPKECiphertext(kem_output, ciphertext))


def wrap_welcome_with_cursor(welcome: bytes, message_cursor: int, init_key: bytes) -> tuple[bytes, bytes]:
    """The welcome's ``data`` and ``welcome_metadata`` as libxmtp sends them: the same HPKE context seals the
    Welcome, then ``WelcomeMetadata`` naming the node's id of the commit that added the installation."""
    metadata = mls_api_pb2.WelcomeMetadata(message_cursor=message_cursor).SerializeToString()
    kem_output, (ciphertext, sealed_metadata) = encrypt_with_label_all(
        suite(CIPHER_SUITE), init_key, WELCOME_HPKE_LABEL, b"", [welcome, metadata]
    )
    return encode(HPKECiphertext(kem_output, ciphertext)), sealed_metadata


def unwrap_welcome(data: bytes, init_private: bytes) -> bytes:
    """The ``MLSMessage(Welcome)`` inside a Curve25519-wrapped welcome's ``data``."""
    welcome, _ = unwrap_welcome_with_cursor(data, b"", init_private)
    return welcome


def unwrap_welcome_with_cursor(data: bytes, welcome_metadata: bytes, init_private: bytes) -> tuple[bytes, int | None]:
    """The ``MLSMessage(Welcome)`` inside a wrapped welcome, and the message cursor its ``welcome_metadata``
    names (None when the sender sent none)."""
    try:
        wrapped = decode(HPKECiphertext, data)
        sealed = [wrapped.ciphertext, *([welcome_metadata] if welcome_metadata else [])]
        opened = decrypt_with_label_all(
            suite(CIPHER_SUITE), init_private, WELCOME_HPKE_LABEL, b"", wrapped.kem_output, sealed
        )
    except MlsError as error:
        raise WelcomeNotForUs(f"the welcome does not open with this KeyPackage's init key ({error})") from None
    if len(opened) == 1:
        return opened[0], None
    try:
        metadata = mls_api_pb2.WelcomeMetadata.FromString(opened[1])
    except DecodeError as error:
        raise UnsupportedWelcome(f"the welcome's metadata is no WelcomeMetadata ({error})") from None
    return opened[0], metadata.message_cursor


@attrs.frozen
class OpenedWelcome:
    """A stored welcome opened: the Welcome, the KeyPackage it was sent to, and the id of the group message that
    added us, after which our reading starts (None when the sender named none)."""

    welcome: bytes
    key_package: mls.KeyPackagePrivate
    message_cursor: int | None


def welcome_for_key_package(
    message: mls_api_pb2.WelcomeMessage, held: Sequence[mls.KeyPackagePrivate]
) -> tuple[bytes, mls.KeyPackagePrivate]:
    """The Welcome a node's stored welcome carries, and which of the ``held`` KeyPackages it was sent to."""
    opened = open_welcome(message, held)
    return opened.welcome, opened.key_package


def open_welcome(message: mls_api_pb2.WelcomeMessage, held: Sequence[mls.KeyPackagePrivate]) -> OpenedWelcome:
    """A node's stored welcome opened with whichever of the ``held`` KeyPackages it was sent to."""
    kind = message.WhichOneof("version")
    if kind != "v1":
        raise UnsupportedWelcome(
            f"a {kind} welcome needs welcome-pointer support, which this installation's KeyPackages do not offer"
        )
    v1 = message.v1
    if v1.wrapper_algorithm not in (WRAPPER_UNSPECIFIED, WRAPPER_CURVE25519):
        raise UnsupportedWelcome(
            f"welcome wrapper algorithm {v1.wrapper_algorithm} is not Curve25519 (1): "
            "this installation offers no post-quantum key, so the sender should not have used it"
        )
    for private in held:
        if bytes(private.key_package.init_key) == v1.hpke_public_key:
            welcome, cursor = unwrap_welcome_with_cursor(v1.data, v1.welcome_metadata, private.secrets.init_private)
            return OpenedWelcome(welcome, private, cursor)
    raise WelcomeNotForUs(
        f"the welcome is sealed to HPKE key {v1.hpke_public_key.hex()[:16]}…, the init key of none of this "
        "installation's KeyPackages (it was rotated out, or the welcome is for another installation)"
    )
