"""Code points: the protocol version (RFC 9420 §6) and the IANA registries of RFC 9420 §17.

``ProtocolVersion`` is a TLS ``enum``: only defined values are accepted.  The
registries (cipher suites, wire formats, extension, proposal and credential
types) are plain ``uint16`` fields in the RFC; where unknown values are legal
(capability lists, GREASE, RFC 9420 §13) fields use the ``Any…`` annotations
below, which keep unknown values as ints and known ones as enum members.
"""

from __future__ import annotations

from typing import Annotated

from ..codec import OpenEnum, Uint16Enum


class ProtocolVersion(Uint16Enum):
    """``enum { reserved(0), mls10(1), (65535) } ProtocolVersion`` (RFC 9420 §6)."""

    MLS10 = 1


class CipherSuite(Uint16Enum):
    """``uint16 CipherSuite``: the cipher suites RFC 9420 §17.1 registers."""

    MLS_128_DHKEMX25519_AES128GCM_SHA256_ED25519 = 0x0001
    MLS_128_DHKEMP256_AES128GCM_SHA256_P256 = 0x0002
    MLS_128_DHKEMX25519_CHACHA20POLY1305_SHA256_ED25519 = 0x0003
    MLS_256_DHKEMX448_AES256GCM_SHA512_ED448 = 0x0004
    MLS_256_DHKEMP521_AES256GCM_SHA512_P521 = 0x0005
    MLS_256_DHKEMX448_CHACHA20POLY1305_SHA512_ED448 = 0x0006
    MLS_256_DHKEMP384_AES256GCM_SHA384_P384 = 0x0007


class WireFormat(Uint16Enum):
    """``uint16 WireFormat`` (RFC 9420 §6, registry §17.2)."""

    MLS_PUBLIC_MESSAGE = 0x0001
    MLS_PRIVATE_MESSAGE = 0x0002
    MLS_WELCOME = 0x0003
    MLS_GROUP_INFO = 0x0004
    MLS_KEY_PACKAGE = 0x0005


class ExtensionType(Uint16Enum):
    """``uint16 ExtensionType`` (RFC 9420 §7.2, registry §17.3)."""

    APPLICATION_ID = 0x0001
    RATCHET_TREE = 0x0002
    REQUIRED_CAPABILITIES = 0x0003
    EXTERNAL_PUB = 0x0004
    EXTERNAL_SENDERS = 0x0005


#: The ``last_resort`` KeyPackage extension (empty content), registered in the MLS extension-type
#: registry by the MLS extensions draft (draft-ietf-mls-extensions), not by RFC 9420 itself.  It is
#: kept out of :class:`ExtensionType` on purpose: that enum's members are RFC 9420's default
#: extensions, which clients support without listing them in their capabilities (§7.2), and
#: ``last_resort`` is not one of them.
LAST_RESORT_EXTENSION_TYPE = 0x000A


#: The ``self_remove`` proposal type of the MLS extensions draft (draft-ietf-mls-extensions, "SelfRemove
#: Proposal"; 0x000a since draft-07, the value openmls and MDK use).  Like :data:`LAST_RESORT_EXTENSION_TYPE` (the
#: same number in another registry) it stays out of :class:`ProposalType`, whose members are RFC 9420's default
#: proposals: a client supports SelfRemove only when its capabilities list it.
SELF_REMOVE_PROPOSAL_TYPE = 0x000A


class ProposalType(Uint16Enum):
    """``uint16 ProposalType`` (RFC 9420 §12.1, registry §17.4)."""

    ADD = 0x0001
    UPDATE = 0x0002
    REMOVE = 0x0003
    PSK = 0x0004
    REINIT = 0x0005
    EXTERNAL_INIT = 0x0006
    GROUP_CONTEXT_EXTENSIONS = 0x0007


class CredentialType(Uint16Enum):
    """``uint16 CredentialType`` (RFC 9420 §5.3, registry §17.5)."""

    BASIC = 0x0001
    X509 = 0x0002


#: The values every RFC 9420 registry reserves for GREASE (§13.5): 0x0A0A, 0x1A1A, ... 0xEAEA.
GREASE_VALUES = frozenset(0x0A0A + 0x1010 * i for i in range(15))

AnyProtocolVersion = Annotated[int, OpenEnum(ProtocolVersion)]
AnyCipherSuite = Annotated[int, OpenEnum(CipherSuite)]
AnyExtensionType = Annotated[int, OpenEnum(ExtensionType)]
AnyProposalType = Annotated[int, OpenEnum(ProposalType)]
AnyCredentialType = Annotated[int, OpenEnum(CredentialType)]
