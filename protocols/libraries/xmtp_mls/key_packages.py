"""KeyPackages in libxmtp's form: what an installation uploads so that libxmtp clients can add it to groups.

Like ``XmtpKeyPackageBuilder::build`` (libxmtp v1.10.0, crates/xmtp_mls/src/identity.rs):
suite 3; a basic credential whose identity is the protobuf ``MlsCredential``
naming the inbox; the installation's Ed25519 key as the leaf's signature key;
the leaf's capabilities of :data:`~.profile.CAPABILITIES`; an ``application_id``
leaf extension holding the inbox id; the ``last_resort`` KeyPackage extension;
openmls's default lifetime.  Deliberately without the post-quantum wrapper key
(0xff03) and the welcome-pointer extension (0xff04): libxmtp then wraps the
welcome with HPKE to the init key and sends it whole (see :mod:`.welcomes`).
"""

from __future__ import annotations

import time

from google.protobuf.message import DecodeError

from protocols.libraries import mls
from protocols.libraries.mls.codec import encode
from protocols.libraries.mls.crypto import Rng, suite
from protocols.libraries.mls.group.key_packages import create_key_package
from protocols.libraries.mls.messages import ApplicationId, BasicCredential, Extension, KeyPackage, Lifetime
from protocols.libraries.mls.messages.registries import ExtensionType
from protocols.libraries.xmtp_wire.proto import mls_credential_pb2

from .errors import UnverifiedMember
from .profile import CAPABILITIES, CIPHER_SUITE

#: openmls's default KeyPackage lifetime, which libxmtp keeps: from an hour before now until 12 weeks after.
LIFETIME_MARGIN_SECONDS = 3600
LIFETIME_SECONDS = 12 * 7 * 24 * 3600


def credential_for(inbox_id: str) -> BasicCredential:
    """The basic credential of an installation of ``inbox_id``: its identity is the ``MlsCredential`` protobuf."""
    return BasicCredential(mls_credential_pb2.MlsCredential(inbox_id=inbox_id).SerializeToString())


def inbox_of_credential(credential: str) -> str:
    """The inbox id a member's credential string (the hex of its ``MlsCredential``) claims."""
    parsed = mls_credential_pb2.MlsCredential()
    try:
        parsed.ParseFromString(bytes.fromhex(credential))
    except (ValueError, DecodeError):
        raise UnverifiedMember(f"credential {credential[:32]}… is not an XMTP MlsCredential") from None
    return parsed.inbox_id


def installation_identity(installation_seed: bytes, inbox_id: str) -> mls.Identity:
    """The MLS identity of an installation: the inbox's credential, signed with the installation's Ed25519 key."""
    return mls.identity_with_key(credential_for(inbox_id).identity.hex(), installation_seed, suite_id=CIPHER_SUITE)


def new_key_package(
    installation_seed: bytes, inbox_id: str, *, now: int | None = None, rng: Rng | None = None
) -> tuple[bytes, mls.KeyPackagePrivate]:
    """A fresh last-resort KeyPackage for the installation, as uploaded (bare TLS, no MLSMessage framing),
    and what the installation keeps to join with it."""
    identity = installation_identity(installation_seed, inbox_id)
    started = int(time.time()) if now is None else now
    key_package, secrets = create_key_package(
        suite(CIPHER_SUITE),
        identity.basic_credential,
        identity.signature,
        capabilities=CAPABILITIES,
        leaf_extensions=(Extension(ExtensionType.APPLICATION_ID, encode(ApplicationId(inbox_id.encode()))),),
        lifetime=Lifetime(started - LIFETIME_MARGIN_SECONDS, started + LIFETIME_SECONDS),
        last_resort=True,
        rng=rng,
    )
    return encode(key_package, KeyPackage), mls.KeyPackagePrivate(key_package, secrets)
