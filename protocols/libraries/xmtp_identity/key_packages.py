"""Checking a KeyPackage an XMTP installation uploads, before a node stores and hands it out.

What libxmtp v1.10.0 checks when it reads one (``VerifiedKeyPackageV2::from_bytes``
in crates/xmtp_mls/src/verified_key_package_v2.rs, over OpenMLS's validation):
it decodes, both its signatures verify (the KeyPackage's and its leaf's, under
the leaf's signature key: the *installation key*), its leaf's lifetime covers
now, and its credential is a basic credential holding an ``MlsCredential`` (the
installation's inbox id).  The RFC 9420 part is the project's own engine
(:func:`protocols.libraries.mls.group.key_packages.validate_key_package`).
"""

from __future__ import annotations

import re

import attrs
from google.protobuf.message import DecodeError as ProtobufDecodeError

from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.errors import InvalidMessage, MlsError
from protocols.libraries.mls.group.key_packages import validate_key_package
from protocols.libraries.mls.group.refusals import InvalidKeyPackageSignature
from protocols.libraries.mls.messages import MLSMessage
from protocols.libraries.mls.messages.credentials import BasicCredential
from protocols.libraries.mls.messages.key_package import KeyPackage
from protocols.libraries.mls.messages.nodes import KeyPackageOrigin
from protocols.libraries.xmtp_wire.proto import mls_credential_pb2

from .errors import Refused

#: A KeyPackage is a few hundred bytes (a few KiB with post-quantum keys); more is not a client's.
MAX_KEY_PACKAGE_BYTES = 64 * 1024
#: How far ahead of the node's clock a lifetime may start (clients start theirs an hour early already).
MAX_CLOCK_SKEW_SECONDS = 3600
#: The longest lifetime accepted; libxmtp's run about 84 days.
MAX_LIFETIME_SECONDS = 366 * 24 * 3600
_INBOX_ID = re.compile(r"[0-9a-f]{64}")


@attrs.frozen
class CheckedKeyPackage:
    """A KeyPackage that passed :func:`check_key_package`, and what a node indexes it by.

    Attributes:
        installation_key: the leaf node's signature key, which XMTP calls the installation key.
        inbox_id: the inbox named by the XMTP credential inside the basic credential.
        cipher_suite: its MLS cipher suite.
        not_before: start of the leaf's lifetime, seconds since the epoch.
        not_after: end of the leaf's lifetime, seconds since the epoch.
        init_key: the HPKE init key a Welcome to it is encrypted to.
        raw: the bytes as uploaded.
    """

    installation_key: bytes
    inbox_id: str
    cipher_suite: int
    not_before: int
    not_after: int
    init_key: bytes
    raw: bytes


def check_key_package(data: bytes, *, now: int) -> CheckedKeyPackage:
    """Decode and verify an uploaded KeyPackage (bare, as libxmtp uploads it, or MLSMessage-framed) at ``now``."""
    if len(data) > MAX_KEY_PACKAGE_BYTES:
        raise Refused(
            f"a key package of {len(data)} bytes is larger than {MAX_KEY_PACKAGE_BYTES}",
            reason="too_large",
            status="RESOURCE_EXHAUSTED",
        )
    key_package = _decoded(data)
    origin = key_package.leaf_node.leaf_node_source
    if not isinstance(origin, KeyPackageOrigin):  # a leaf made for an update or a commit
        raise Refused("the key package's leaf was not made for a key package", reason="not_key_package")
    _check_lifetime(int(origin.lifetime.not_before), int(origin.lifetime.not_after), now)
    try:
        validate_key_package(key_package)
    except InvalidKeyPackageSignature as error:
        raise Refused(f"the key package's signature is invalid: {error}", reason="bad_signature") from None
    except MlsError as error:
        raise Refused(f"the key package is not valid MLS: {error}", reason="invalid_key_package") from None
    return CheckedKeyPackage(
        installation_key=bytes(key_package.leaf_node.signature_key),
        inbox_id=_inbox_id_of(key_package),
        cipher_suite=int(key_package.cipher_suite),
        not_before=int(origin.lifetime.not_before),
        not_after=int(origin.lifetime.not_after),
        init_key=bytes(key_package.init_key),
        raw=data,
    )


def _decoded(data: bytes) -> KeyPackage:
    try:
        return decode(KeyPackage, data)
    except InvalidMessage as bare_error:
        try:
            framed = decode(MLSMessage, data).message
        except InvalidMessage:
            raise Refused(f"not a TLS-serialised KeyPackage: {bare_error}", reason="not_mls") from None
        if not isinstance(framed, KeyPackage):
            raise Refused(
                f"the MLSMessage carries a {type(framed).__name__}, not a KeyPackage", reason="not_key_package"
            ) from None
        return framed


def _check_lifetime(not_before: int, not_after: int, now: int) -> None:
    if not_after < now:
        raise Refused(f"the key package expired at {not_after} (now is {now})", reason="expired")
    if not_before > now + MAX_CLOCK_SKEW_SECONDS:
        raise Refused(f"the key package is not valid before {not_before} (now is {now})", reason="not_yet_valid")
    if not_after - not_before > MAX_LIFETIME_SECONDS:
        raise Refused(
            f"the key package's lifetime of {not_after - not_before} s is longer than {MAX_LIFETIME_SECONDS} s",
            reason="lifetime_too_long",
        )


def _inbox_id_of(key_package: KeyPackage) -> str:
    credential = key_package.leaf_node.credential
    if not isinstance(credential, BasicCredential):
        raise Refused(
            f"the key package's credential is of type {credential.credential_type}, not basic (1)",
            reason="bad_credential",
        )
    parsed = mls_credential_pb2.MlsCredential()
    try:
        parsed.ParseFromString(bytes(credential.identity))
    except ProtobufDecodeError:
        raise Refused("the basic credential's identity is not an XMTP MlsCredential", reason="bad_credential") from None
    if not _INBOX_ID.fullmatch(parsed.inbox_id):
        raise Refused(
            f"the credential's inbox id {parsed.inbox_id[:80]!r} is not 64 lowercase hex digits",
            reason="bad_credential",
        )
    return parsed.inbox_id
