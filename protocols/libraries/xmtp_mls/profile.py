"""libxmtp v1.10.0's MLS profile, as code points: the suite, extension ids, the capabilities its KeyPackages list.

Facts read from libxmtp v1.10.0 (crates/xmtp_cryptography/src/configuration.rs,
crates/xmtp_configuration/src/common/{mls,metadata}.rs, ``XmtpKeyPackageBuilder``
in crates/xmtp_mls/src/identity.rs, ``build_group_config`` in
crates/xmtp_mls/src/groups/mod.rs) and openmls's extension-type numbers;
docs/xmtp-mls.md explains each and where this library differs.
"""

from __future__ import annotations

from protocols.libraries.mls.messages import Capabilities, CredentialType, ProtocolVersion
from protocols.libraries.mls.messages.registries import LAST_RESORT_EXTENSION_TYPE, ExtensionType, ProposalType
from protocols.libraries.xmtp_content.group_context import (
    GROUP_MEMBERSHIP_EXTENSION_TYPE,
    GROUP_PERMISSIONS_EXTENSION_TYPE,
    IMMUTABLE_METADATA_EXTENSION_TYPE,
    MUTABLE_METADATA_EXTENSION_TYPE,
)
from protocols.libraries.xmtp_wire.proto import mls_contents_pb2

#: MLS_128_DHKEMX25519_CHACHA20POLY1305_SHA256_Ed25519: every libxmtp group and KeyPackage.
CIPHER_SUITE = 3

#: libxmtp's group-context extensions (membership, metadata, policies) are numbered in
#: :mod:`protocols.libraries.xmtp_content.group_context`, which reads them.
#: KeyPackage extensions: a post-quantum (X-Wing) key to wrap welcomes to, and welcome-pointer support.
WELCOME_WRAPPER_ENCRYPTION_EXTENSION = 0xFF03
WELCOME_POINTEE_ENCRYPTION_AEAD_TYPES_EXTENSION = 0xFF04

#: The extension types a libxmtp KeyPackage's leaf lists as supported, in libxmtp's order.
SUPPORTED_EXTENSIONS = (
    LAST_RESORT_EXTENSION_TYPE,
    ExtensionType.APPLICATION_ID,
    GROUP_PERMISSIONS_EXTENSION_TYPE,
    MUTABLE_METADATA_EXTENSION_TYPE,
    GROUP_MEMBERSHIP_EXTENSION_TYPE,
    WELCOME_WRAPPER_ENCRYPTION_EXTENSION,
    WELCOME_POINTEE_ENCRYPTION_AEAD_TYPES_EXTENSION,
    IMMUTABLE_METADATA_EXTENSION_TYPE,
)

#: What an installation's leaf supports: MLS 1.0, suite 3 only, the extensions above, the
#: GroupContextExtensions proposal (libxmtp's groups require it) and basic credentials.
CAPABILITIES = Capabilities(
    (ProtocolVersion.MLS10,),
    (CIPHER_SUITE,),
    SUPPORTED_EXTENSIONS,
    (ProposalType.GROUP_CONTEXT_EXTENSIONS,),
    (CredentialType.BASIC,),
)

#: The label of the HPKE EncryptContext a welcome is wrapped under ("MLS 1.0 " is prefixed, as for any MLS label).
WELCOME_HPKE_LABEL = "MLS_WELCOME"

#: ``WelcomeWrapperAlgorithm`` of mls_api.proto: 0 (unspecified) and 1 mean Curve25519 (HPKE to the
#: KeyPackage's init key), 2 X-Wing (to the KeyPackage's post-quantum key), 3 a symmetric key (welcome pointers).
WRAPPER_UNSPECIFIED = mls_contents_pb2.WELCOME_WRAPPER_ALGORITHM_UNSPECIFIED
WRAPPER_CURVE25519 = mls_contents_pb2.WELCOME_WRAPPER_ALGORITHM_CURVE25519
WRAPPER_XWING = mls_contents_pb2.WELCOME_WRAPPER_ALGORITHM_XWING_MLKEM_768_DRAFT_6
WRAPPER_SYMMETRIC = mls_contents_pb2.WELCOME_WRAPPER_ALGORITHM_SYMMETRIC_KEY

#: libxmtp keeps the secrets of this many past epochs, so messages of recent epochs still decrypt.
MAX_PAST_EPOCHS = 3

#: The libxmtp version whose rules this library follows: a group whose ``minimum_supported_protocol_version``
#: is above it is one whose commits libxmtp v1.10.0 (and so this library) refuses.
SUPPORTED_PROTOCOL_VERSION = "1.10.0"
