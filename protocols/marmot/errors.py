"""Errors raised on purpose by the Marmot protocol plugin.

Everything here derives from :class:`MarmotError`, so one ``except`` clause
catches the whole protocol.  Errors caused by bad input also derive from
:class:`core.errors.InvalidInput` (and therefore ``ValueError``), so generic
Tessera code treats them like any other malformed input.

Each error carries ``reason``: a short, stable, machine-readable string that
code (and tests) can branch on without parsing the human message.  The message
itself says what was wrong and what the caller can do about it.
"""

from __future__ import annotations

from core.errors import ConfigurationError, InvalidInput, NotFound, TesseraError


class MarmotError(TesseraError, RuntimeError):
    """Base of every error the Marmot plugin raises on purpose."""


# --- Nostr events (NIP-01) ----------------------------------------------


class InvalidEvent(MarmotError, InvalidInput):
    """A Nostr event is malformed, has a wrong id or signature, or is not a group event.

    ``reason`` is one of :attr:`REASONS`; ``field`` names the offending event
    field when a single one is to blame (else ``None``).
    """

    REASONS = frozenset({"shape", "id_mismatch", "bad_signature", "not_group_event"})

    def __init__(self, message: str, *, reason: str, field: str | None = None):
        if reason not in self.REASONS:
            # A typo here would silently break every caller that branches on reason.
            raise InvalidInput(f"unknown InvalidEvent reason {reason!r}; one of {sorted(self.REASONS)}")
        self.reason = reason
        self.field = field
        super().__init__(message)


# --- NIP-44 version 2 encryption ----------------------------------------


class Nip44Error(MarmotError, InvalidInput):
    """A NIP-44 payload, key or plaintext was refused.

    Subclasses name the distinct failures; ``reason`` refines them further
    (for example an :class:`InvalidPayload` can be ``"bad_base64"``,
    ``"bad_length"`` or ``"unsupported_version"``).
    """

    default_reason = "nip44"

    def __init__(self, message: str, *, reason: str | None = None):
        self.reason = reason or self.default_reason
        super().__init__(message)


class InvalidPayload(Nip44Error):
    """The payload is not valid base64, has an impossible length, or an unknown version."""

    default_reason = "bad_payload"


class InvalidMac(Nip44Error):
    """The payload's MAC does not match: wrong key, or the payload was altered."""

    default_reason = "bad_mac"


class InvalidPadding(Nip44Error):
    """The MAC was fine but the decrypted padding is inconsistent."""

    default_reason = "bad_padding"


class InvalidPlaintextLength(Nip44Error):
    """A plaintext to encrypt is empty or longer than 65535 bytes."""

    default_reason = "bad_plaintext_length"


class InvalidKey(Nip44Error):
    """A secp256k1 secret key is out of range, or a public key is not on the curve.

    Also raised by :mod:`protocols.marmot.wire.nostr` for signing keys: both modules
    use the same curve and check secret keys with :mod:`protocols.marmot.wire.secp256k1`.
    """

    default_reason = "bad_key"


# --- group state at rest ---------------------------------------------------


class StateKeyError(MarmotError, ConfigurationError):
    """The at-rest key for group state is missing, malformed, ambiguous or wrong.

    A ``ConfigurationError``: an item that meets it is not the culprit, so it
    stays queued, untouched, and the drain stops with this one message until
    the operator fixes the configuration.
    """


class StateKeyMissing(StateKeyError):
    """Neither TESSERA_MARMOT_STATE_KEY nor TESSERA_MARMOT_STATE_KEY_FILE is set."""


class StateKeyInvalid(StateKeyError):
    """The configured key is not 64 hex characters, or its file cannot be read."""


class StateKeyWrong(StateKeyError):
    """Stored group state does not open with the configured key."""


class GroupStateKeyGone(StateKeyError):
    """A group's state was sealed under a version key that is no longer in the database's ``-erasable`` folder
    (the database was copied or restored without that folder, or the folder was lost)."""


# --- groups ----------------------------------------------------------------


class GroupNotFound(MarmotError, NotFound):
    """No joined group has this id."""


class InvalidRumor(MarmotError, InvalidInput):
    """A decrypted application message is not a well-formed Nostr rumor."""


class RelaySoftwareMissing(MarmotError, ConfigurationError):
    """``tessera marmot relay`` needs nostr-sdk (its in-process relay), an optional extra not installed here."""


class RelayNotStarted(MarmotError):
    """The development relay could not listen (the port is taken, or the address cannot be bound)."""
