"""Extensions and the contents of the extensions RFC 9420 defines (RFC 9420 §7.2, §13.4)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque
from .credentials import Credential
from .crypto import HPKEPublicKey, SignaturePublicKey
from .registries import AnyCredentialType, AnyExtensionType, AnyProposalType


@frozen
class Extension:
    """``struct { ExtensionType extension_type; opaque extension_data<V>; }`` (RFC 9420 §7.2).

    Every extension type is accepted and kept as bytes: unknown extensions
    (and GREASE) must be ignored, not refused (RFC 9420 §13.4, §13.5).  Decode
    ``extension_data`` with the content structs below when the type is known.
    """

    extension_type: AnyExtensionType
    extension_data: Opaque


@frozen
class ApplicationId:
    """``application_id`` extension content: ``opaque application_id<V>`` (RFC 9420 §5.3.3)."""

    application_id: Opaque


@frozen
class RequiredCapabilities:
    """``required_capabilities`` extension content (RFC 9420 §11.1)."""

    extension_types: tuple[AnyExtensionType, ...]
    proposal_types: tuple[AnyProposalType, ...]
    credential_types: tuple[AnyCredentialType, ...]


@frozen
class ExternalPub:
    """``external_pub`` extension content (RFC 9420 §12.4.3.2)."""

    external_pub: HPKEPublicKey


@frozen
class ExternalSender:
    """One entry of the ``external_senders`` extension (RFC 9420 §12.1.8.1)."""

    signature_key: SignaturePublicKey
    credential: Credential


@frozen
class ExternalSenders:
    """``external_senders`` extension content: ``ExternalSender external_senders<V>`` (RFC 9420 §12.1.8.1)."""

    external_senders: tuple[ExternalSender, ...]
