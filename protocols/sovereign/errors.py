"""What a client can get wrong, one exception each; ``code`` is the error code on the wire."""

from __future__ import annotations

from typing import ClassVar

from core.errors import InvalidInput, NotFound, TesseraError
from protocols.libraries.delivery.codes import ErrorCode


class SovereignError(TesseraError, ValueError):
    """A request the store refuses; nothing was changed.  ``code`` names the refusal for clients."""

    code: ClassVar[ErrorCode] = ErrorCode.REFUSED


class MalformedPayload(SovereignError, InvalidInput):
    """The payload is not a well-formed MLSMessage of a kind the store keeps."""

    code = ErrorCode.MALFORMED_PAYLOAD


class AlreadyStored(SovereignError, InvalidInput):
    """The payload was stored before and has expired since; a retry does not bring it back."""

    code = ErrorCode.ALREADY_STORED


class WrongGroup(SovereignError, InvalidInput):
    """The payload's cleartext header names another group than the request."""

    code = ErrorCode.WRONG_GROUP


class BadInstallation(SovereignError, InvalidInput):
    """An installation id that is not an Ed25519 public key in 64 hex characters."""

    code = ErrorCode.BAD_INSTALLATION


class BadGroupId(SovereignError, InvalidInput):
    """A group id that is not 1 to 255 bytes in lowercase hex."""

    code = ErrorCode.BAD_GROUP_ID


class LimitExceeded(SovereignError, InvalidInput):
    """A configured limit would be crossed; ``limit`` names it, ``value`` is what the request would make it.

    Only its subclasses are raised, each with the code of its limit."""

    def __init__(self, message: str, *, limit: str, value: int, allowed: int):
        super().__init__(message)
        self.limit = limit
        self.value = value
        self.allowed = allowed


class PayloadTooLarge(LimitExceeded):
    code = ErrorCode.PAYLOAD_TOO_LARGE


class RateLimited(LimitExceeded):
    code = ErrorCode.RATE_LIMITED


class StorageFull(LimitExceeded):
    code = ErrorCode.STORAGE_FULL


class TooManyGroups(LimitExceeded):
    code = ErrorCode.TOO_MANY_GROUPS


class TooManyInstallations(LimitExceeded):
    """An account address already has as many installations as ``max_installations_per_address`` allows."""

    code = ErrorCode.TOO_MANY_INSTALLATIONS


class BindingTooLarge(LimitExceeded):
    """An identity binding over the fixed size the directory keeps (it is a signature and a few fields)."""

    code = ErrorCode.BINDING_TOO_LARGE


class BadAddress(SovereignError, InvalidInput):
    """An account address that is not ``0x`` and 40 hex digits, or whose mixed case is not its EIP-55 checksum."""

    code = ErrorCode.BAD_ADDRESS


class BadBinding(SovereignError, InvalidInput):
    """An identity binding that is not bytes, or is empty."""

    code = ErrorCode.BAD_BINDING


class InstallationBound(SovereignError, InvalidInput):
    """The installation is bound to another account address already: an installation belongs to one account."""

    code = ErrorCode.INSTALLATION_BOUND


class NotAMember(SovereignError, InvalidInput):
    """The installation is not a member of the group it acts on."""

    code = ErrorCode.NOT_A_MEMBER


class NoWelcome(SovereignError, InvalidInput):
    """Joining a group that has members needs a welcome stored for the installation."""

    code = ErrorCode.NO_WELCOME


class WelcomeNeedsRecipient(SovereignError, InvalidInput):
    code = ErrorCode.WELCOME_NEEDS_RECIPIENT


class RecipientIsMember(SovereignError, InvalidInput):
    code = ErrorCode.RECIPIENT_IS_MEMBER


class BadMessageIds(SovereignError, InvalidInput):
    """A list of message ids that is not a list, is too long, or holds something that is not a ULID."""

    code = ErrorCode.BAD_IDS


class MalformedCursor(SovereignError, InvalidInput):
    code = ErrorCode.MALFORMED_CURSOR


class UnknownCursor(SovereignError, NotFound):
    code = ErrorCode.UNKNOWN_CURSOR


class BadLimit(SovereignError, InvalidInput):
    code = ErrorCode.BAD_LIMIT


class BadDirection(SovereignError, InvalidInput):
    code = ErrorCode.BAD_DIRECTION


class NoKeyPackage(SovereignError, NotFound):
    code = ErrorCode.NO_KEY_PACKAGE


class InvalidKeyPackage(SovereignError, InvalidInput):
    code = ErrorCode.INVALID_KEY_PACKAGE


class InvalidConfig(InvalidInput):
    """The server's TOML configuration has an unknown key, a wrong type or a value out of range.

    It stops ``tessera serve`` before any client connects, so it has no wire code."""
