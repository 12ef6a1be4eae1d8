"""What the store checks in a payload without any key: it is an MLSMessage, and says what it is.

A PublicMessage or PrivateMessage carries its group id, epoch and content
type in the clear (:func:`protocols.libraries.mls.peek`), so the store can refuse a
message for another group and order commits by epoch.  A Welcome is
encrypted to its invitee and names no group in the clear; it is stored under
the group the sender names, for the one recipient the sender names.  A
KeyPackage is checked as RFC 9420 section 10.1 asks (signatures, lifetime),
and its signature key must be the installation that publishes it.
"""

from __future__ import annotations

import attrs

from protocols.libraries import mls
from protocols.libraries.delivery.records import BY_CONTENT_TYPE, WELCOME
from protocols.libraries.mls.codec import decode
from protocols.libraries.mls.crypto.suites import suite
from protocols.libraries.mls.group.key_packages import key_package_ref, validate_key_package
from protocols.libraries.mls.messages import MLSMessage
from protocols.libraries.mls.messages.registries import WireFormat
from protocols.sovereign.errors import InvalidKeyPackage, MalformedPayload, WrongGroup


@attrs.frozen
class Described:
    """What a payload is: its message type and, for group messages, the epoch it belongs to."""

    message_type: int
    epoch: int


def describe(payload: bytes, group_id: str) -> Described:
    """Check ``payload`` for ``group_id`` (hex); raises MalformedPayload or WrongGroup."""
    try:
        message = decode(MLSMessage, payload)
    except Exception as exc:  # the codec's refusals are many kinds; all mean the same here
        raise MalformedPayload(f"the payload is not a well-formed MLSMessage ({exc})") from None
    wire_format = message.wire_format
    if wire_format == WireFormat.MLS_WELCOME:
        return Described(WELCOME, 0)
    if wire_format not in (WireFormat.MLS_PUBLIC_MESSAGE, WireFormat.MLS_PRIVATE_MESSAGE):
        raise MalformedPayload(
            f"a {wire_format.name.lower()} is not stored as a group message; send a public or private message, "
            "or a welcome"
        )
    header = mls.peek(payload)
    if header.group_id.hex() != group_id:
        raise WrongGroup(
            f"the message's header names group {header.group_id.hex()[:16]}..., not {group_id[:16]}...; "
            "send it to the group it belongs to"
        )
    return Described(BY_CONTENT_TYPE[header.content_type], header.epoch)


def key_package_ref_of(installation: str, data: bytes, now_s: int) -> str:
    """The KeyPackageRef (hex) of a published KeyPackage that ``installation`` may publish; raises InvalidKeyPackage."""
    try:
        key_package = mls.key_package_from_bytes(data, verify=False)
        validate_key_package(key_package, now=now_s)
    except mls.MlsError as exc:
        raise InvalidKeyPackage(f"not a valid KeyPackage: {exc}") from None
    except Exception as exc:  # a decoding failure of any kind
        raise InvalidKeyPackage(f"not a KeyPackage MLSMessage ({exc})") from None
    if bytes(key_package.leaf_node.signature_key).hex() != installation:
        raise InvalidKeyPackage(
            "the KeyPackage's signature key is not this installation's key; publish only your own KeyPackages"
        )
    return key_package_ref(suite(int(key_package.cipher_suite)), key_package).hex()
