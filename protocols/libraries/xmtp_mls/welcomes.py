"""Opening a welcome libxmtp sent to this installation: the HPKE wrapper around an RFC 9420 Welcome.

libxmtp v1.10.0 (``wrap_welcome`` in crates/xmtp_mls/src/groups/mls_ext/welcome_wrapper.rs)
seals the TLS-serialised ``MLSMessage(Welcome)`` with HPKE base mode (DHKEM(X25519),
HKDF-SHA256, ChaCha20-Poly1305: suite 3's HPKE) to the KeyPackage's *init key*,
``info`` the MLS ``EncryptContext`` of label ``"MLS_WELCOME"`` and an empty
context, empty aad; it writes ``HPKECiphertext {kem_output, ciphertext}`` as
``data``.  The same HPKE context then seals ``WelcomeMetadata`` (sequence 1).
That is MLS's ``EncryptWithLabel``, so the engine's own ``decrypt_with_label``
opens it.  A KeyPackage offering an X-Wing key (0xff03) gets a post-quantum
wrapper, and one offering pointer support (0xff04) may get a pointer; ours
offer neither, so only the Curve25519 wrapper is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocols.libraries import mls
from protocols.libraries.mls.codec import decode, encode
from protocols.libraries.mls.crypto import suite
from protocols.libraries.mls.crypto.labels import decrypt_with_label, encrypt_with_label
from protocols.libraries.mls.errors import MlsError
from protocols.libraries.mls.messages import HPKECiphertext
from protocols.libraries.xmtp_wire.proto import mls_api_pb2

from .errors import UnsupportedWelcome, WelcomeNotForUs
from .profile import CIPHER_SUITE, WELCOME_HPKE_LABEL, WRAPPER_CURVE25519, WRAPPER_UNSPECIFIED


def wrap_welcome(welcome: bytes, init_key: bytes) -> bytes:
    """``MLSMessage(Welcome)`` bytes sealed to a KeyPackage's init key, as libxmtp's Curve25519 wrapper seals them."""
    kem_output, ciphertext = encrypt_with_label(suite(CIPHER_SUITE), init_key, WELCOME_HPKE_LABEL, b"", welcome)
    return encode(HPKECiphertext(kem_output, ciphertext))


def unwrap_welcome(data: bytes, init_private: bytes) -> bytes:
    """The ``MLSMessage(Welcome)`` inside a Curve25519-wrapped welcome's ``data``."""
    try:
        wrapped = decode(HPKECiphertext, data)
        return decrypt_with_label(
            suite(CIPHER_SUITE), init_private, WELCOME_HPKE_LABEL, b"", wrapped.kem_output, wrapped.ciphertext
        )
    except MlsError as error:
        raise WelcomeNotForUs(f"the welcome does not open with this KeyPackage's init key ({error})") from None


def welcome_for_key_package(
    message: mls_api_pb2.WelcomeMessage, held: Sequence[mls.KeyPackagePrivate]
) -> tuple[bytes, mls.KeyPackagePrivate]:
    """The Welcome a node's stored welcome carries, and which of the ``held`` KeyPackages it was sent to."""
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
            return unwrap_welcome(v1.data, private.secrets.init_private), private
    raise WelcomeNotForUs(
        f"the welcome is sealed to HPKE key {v1.hpke_public_key.hex()[:16]}…, the init key of none of this "
        "installation's KeyPackages (it was rotated out, or the welcome is for another installation)"
    )
