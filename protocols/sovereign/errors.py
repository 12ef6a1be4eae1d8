"""What a client can get wrong, one exception each; ``code`` is the error code on the wire."""

from __future__ import annotations

from core.errors import InvalidInput, NotFound, TesseraError


class SovereignError(TesseraError, ValueError):
    """A request the store refuses; nothing was changed.  ``code`` names the refusal for clients."""

    code = "refused"


class MalformedPayload(SovereignError, InvalidInput):
    """The payload is not a well-formed MLSMessage of a kind the store keeps."""

    code = "malformed_payload"


class AlreadyStored(SovereignError, InvalidInput):
    """The payload was stored before and has expired since; a retry does not bring it back."""

    code = "already_stored"


class WrongGroup(SovereignError, InvalidInput):
    """The payload's cleartext header names another group than the request."""

    code = "wrong_group"


class BadInstallation(SovereignError, InvalidInput):
    """An installation id that is not an Ed25519 public key in 64 hex characters."""

    code = "bad_installation"


class BadGroupId(SovereignError, InvalidInput):
    """A group id that is not 1 to 255 bytes in lowercase hex."""

    code = "bad_group_id"


class LimitExceeded(SovereignError, InvalidInput):
    """A configured limit would be crossed; ``limit`` names it, ``value`` is what the request would make it."""

    code = "limit_exceeded"

    def __init__(self, message: str, *, limit: str, value: int, allowed: int):
        super().__init__(message)
        self.limit = limit
        self.value = value
        self.allowed = allowed


class PayloadTooLarge(LimitExceeded):
    code = "payload_too_large"


class RateLimited(LimitExceeded):
    code = "rate_limited"


class StorageFull(LimitExceeded):
    code = "storage_full"


class TooManyGroups(LimitExceeded):
    code = "too_many_groups"


class TooManyInstallations(LimitExceeded):
    """An account address already has as many installations as ``max_installations_per_address`` allows."""

    code = "too_many_installations"


class BindingTooLarge(LimitExceeded):
    """An identity binding over the fixed size the directory keeps (it is a signature and a few fields)."""

    code = "binding_too_large"


class BadAddress(SovereignError, InvalidInput):
    """An account address that is not ``0x`` and 40 hex digits, or whose mixed case is not its EIP-55 checksum."""

    code = "bad_address"


class BadBinding(SovereignError, InvalidInput):
    """An identity binding that is not bytes, or is empty."""

    code = "bad_binding"


class InstallationBound(SovereignError, InvalidInput):
    """The installation is bound to another account address already: an installation belongs to one account."""

    code = "installation_bound"


class NotAMember(SovereignError, InvalidInput):
    """The installation is not a member of the group it acts on."""

    code = "not_a_member"


class AlreadyMember(SovereignError, InvalidInput):
    code = "already_member"


class NoWelcome(SovereignError, InvalidInput):
    """Joining a group that has members needs a welcome stored for the installation."""

    code = "no_welcome"


class WelcomeNeedsRecipient(SovereignError, InvalidInput):
    code = "welcome_needs_recipient"


class RecipientIsMember(SovereignError, InvalidInput):
    code = "recipient_is_member"


class BadMessageIds(SovereignError, InvalidInput):
    """A list of message ids that is not a list, is too long, or holds something that is not a ULID."""

    code = "bad_ids"


class MalformedCursor(SovereignError, InvalidInput):
    code = "malformed_cursor"


class UnknownCursor(SovereignError, NotFound):
    code = "unknown_cursor"


class BadLimit(SovereignError, InvalidInput):
    code = "bad_limit"


class BadDirection(SovereignError, InvalidInput):
    code = "bad_direction"


class NoKeyPackage(SovereignError, NotFound):
    code = "no_key_package"


class InvalidKeyPackage(SovereignError, InvalidInput):
    code = "invalid_key_package"


class InvalidConfig(SovereignError, InvalidInput):
    """The server's TOML configuration has an unknown key, a wrong type or a value out of range."""

    code = "invalid_config"
