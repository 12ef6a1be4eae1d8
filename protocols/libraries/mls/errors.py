"""Errors raised on purpose by the shared MLS library.

Everything derives from :class:`MlsError`, so one ``except`` clause catches
the whole library.  Errors caused by malformed or wrongly signed input also
derive from :class:`core.errors.InvalidInput` (and therefore ``ValueError``),
so generic Tessera code treats them like any other bad input.

Errors that describe *state* rather than input (a message for another epoch,
a key that was already consumed, a commit the sender was not allowed to make)
derive only from :class:`MlsError`: the input may be perfectly well formed.
"""

from __future__ import annotations

from core.errors import InvalidInput, TesseraError


class MlsError(TesseraError, RuntimeError):
    """Base of every error the MLS library raises on purpose."""


# --- malformed or unusable input -------------------------------------------


class InvalidMessage(MlsError, InvalidInput):
    """A message, key package or welcome is malformed, truncated or for another group."""


class InvalidSnapshot(MlsError, InvalidInput):
    """Bytes given to ``restore`` (or ``identity_from_bytes``...) are not a valid encoding."""


class InvalidSignature(MlsError, InvalidInput):
    """A signature (message, leaf, key package, group info) does not verify."""


class InvalidArgument(MlsError, InvalidInput):
    """An API call was made with arguments the engine cannot honour.

    Examples: removing a credential that is not in the group, adding a
    credential twice, committing a proposal ref that is not pending.
    """


# --- state-dependent refusals ------------------------------------------------


class WrongEpoch(MlsError):
    """The message belongs to an epoch this state cannot process.

    Either a future epoch (process the missing commits first) or an epoch
    older than the retained window (the keys are gone for good).  Handshake
    messages (proposals, commits) are only accepted for the current epoch.
    """

    def __init__(self, message_epoch: int, state_epoch: int, detail: str = ""):
        self.message_epoch = message_epoch
        self.state_epoch = state_epoch
        text = f"message is for epoch {message_epoch}, group state is at epoch {state_epoch}"
        super().__init__(f"{text}: {detail}" if detail else text)


class DecryptionFailed(MlsError):
    """An AEAD or HPKE decryption failed (wrong key, tampered ciphertext, fork)."""


class CannotDecryptOwnMessage(MlsError):
    """The message was sent by this very member; its key was deleted after sending.

    Detected from the (decryptable) sender data: the sending leaf is our own
    leaf.  Callers should keep their own plaintext when they send.
    """


class KeyAlreadyUsed(MlsError):
    """The ratchet key for this generation was consumed (or evicted) already.

    Raised for replays of the same ciphertext: forward secrecy means the key
    is deleted once used.
    """


class RatchetExhausted(MlsError):
    """A sender used up every uint32 generation of a ratchet in one epoch; commit first."""


class UnauthorizedCommit(MlsError):
    """A commit that the group's own policy forbids (a plugin's rule, e.g. Marmot's: only admins change the group)."""


class ConfirmationMismatch(MlsError):
    """The commit's confirmation tag does not match our view of the new epoch."""


class NotAMember(MlsError):
    """This state is not (or no longer) a member able to perform the operation."""
