"""Credentials (RFC 9420 §5.3)."""

from __future__ import annotations

from attrs import frozen

from ..codec import Opaque, case, tag_of, unknown_case, variant
from .registries import AnyCredentialType, CredentialType


@frozen
class Certificate:
    """One DER certificate of an X.509 chain (RFC 9420 §5.3)."""

    cert_data: Opaque


@variant(CredentialType)
class Credential:
    """``struct { CredentialType credential_type; select (...) {...} } Credential`` (RFC 9420 §5.3).

    Cases: :class:`BasicCredential`, :class:`X509Credential`, and
    :class:`UnknownCredential` for any other type.
    """

    __slots__ = ()

    @property
    def credential_type(self) -> int:
        return tag_of(self)


@case(CredentialType.BASIC)
@frozen
class BasicCredential(Credential):
    """``case basic: opaque identity<V>`` (RFC 9420 §5.3)."""

    identity: Opaque


@case(CredentialType.X509)
@frozen
class X509Credential(Credential):
    """``case x509: Certificate certificates<V>``, leaf first (RFC 9420 §5.3)."""

    certificates: tuple[Certificate, ...]


@unknown_case
@frozen
class UnknownCredential(Credential):
    """A credential type RFC 9420 does not define (RFC 9420 §13.3), kept as ``opaque data<V>``.

    RFC 9420 leaves the layout of new credential types to their
    specifications; like mls-rs (``CustomCredential``) and OpenMLS, the body
    is read as one ``opaque<V>`` so such credentials round-trip unchanged.
    """

    credential_type: AnyCredentialType
    data: Opaque
