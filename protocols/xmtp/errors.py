"""What a user, a peer or the server can get wrong in the XMTP-style client, one exception each."""

from __future__ import annotations

from core.errors import (
    ConfigurationError,
    InvalidInput,
    NotFound,
    PermanentError,
    TesseraError,
    TransientError,
    Unreachable,
)
from protocols.libraries.delivery.codes import ErrorCode


class XmtpError(TesseraError, RuntimeError):
    """Base of the XMTP-style client's own errors."""


class InvalidAddress(XmtpError, InvalidInput):
    """An account address that is not ``0x`` and 40 hex digits, or whose mixed case breaks its EIP-55 checksum."""


class InvalidBinding(XmtpError, InvalidInput):
    """An installation binding whose account signature does not verify, or that names another installation."""


class IdentityMissing(XmtpError, ConfigurationError):
    """This database has no XMTP identity yet: run ``tessera xmtp identity new --server URL``."""


class NotWebSocketServer(XmtpError, ConfigurationError):
    """The identity's server is not a ws:// or wss:// URL of ``tessera serve``."""


class InvalidNodeUrl(XmtpError, InvalidInput):
    """A node URL that is not ``http://HOST:PORT`` or ``https://HOST:PORT`` (what libxmtp and the node API take)."""


class InboxUnknown(XmtpError, NotFound):
    """An account with no inbox on the XMTP node (``identity add-installation`` needs one to join)."""


class PrivateProfileOnly(XmtpError, InvalidInput):
    """Something only Tessera's private profile has (a ``ws://`` server's KeyPackage and identity lookups)
    asked of a database that speaks XMTP through a node."""


class ChangeRefused(XmtpError, InvalidInput):
    """A change of ours to a libxmtp group that libxmtp's rules forbid (the group's permissions, a DM's
    limits, a value too long): refused before anything is sent, its intent ended with the reason."""


class ChangeForbidden(ChangeRefused):
    """A change of ours the group's permissions forbid this inbox (the message names the policy and who may
    make the change): refused by the command before anything is recorded, or, when the group changed after
    the intent was recorded, the intent ended in ERROR with the reason."""


class LeaveRefused(ChangeRefused):
    """A leave libxmtp refuses: a super admin (another super admin demotes it first), a DM member, or the
    group's last member (nobody is left to remove it).  Refused by ``leave`` before anything is recorded."""


class NodeProfileOnly(XmtpError, ConfigurationError):
    """A command of the node profile asked of a database made by Tessera's private profile (an identity on a
    ``ws://`` server), which no XMTP client can reach: a new database made with ``identity new --node URL``
    speaks XMTP."""


class IdentityExists(XmtpError, InvalidInput):
    """``identity new`` on a database that already has an identity."""


class GroupUnknown(XmtpError, NotFound):
    """No group with that id on this database."""


class MessageUnknown(XmtpError, NotFound):
    """A reaction or reply names a message this database does not hold in that group."""


class GroupInactive(XmtpError, InvalidInput):
    """The group is not one we may act in: not accepted yet, rejected, or we were removed from it."""


class UnknownPeer(XmtpError, NotFound):
    """An address with no verified installation on the server (it has not registered, or every binding failed)."""


class PayloadUnreadable(XmtpError, PermanentError):
    """A payload from the server that is not an MLS message we can process (parked with the reason)."""


class InvalidKey(XmtpError, InvalidInput):
    """Secret key bytes that are not 32 long, or (for the account's secp256k1 key) zero or not below the group order."""


class ServiceUnavailable(XmtpError, TransientError, Unreachable):
    """The delivery service could not be reached or did not answer in time; the work is retried (a command
    that could do nothing without it exits 4, *unreachable*)."""


class AnswersOutdated(ServiceUnavailable):
    """The node's answers a commit was to be built from no longer cover what it needs (the group moved
    between the asking and the build): the try fails, and the next one asks the node again."""


class ServiceRefused(XmtpError, PermanentError):
    """The delivery service refused a request; ``code`` is its error code (docs/server-protocol.md): a member of
    :class:`~protocols.libraries.delivery.codes.ErrorCode`, or the text of a code this client does not know."""

    def __init__(self, code: ErrorCode | str, message: str):
        super().__init__(f"the server refused ({code}): {message}")
        self.code = code


class EpochAhead(PayloadUnreadable):
    """A payload of a later epoch than we hold: a commit before it in the group's history is missing here."""

    def __init__(self, message: str, message_epoch: int, held_epoch: int):
        super().__init__(message)
        self.message_epoch = message_epoch
        self.held_epoch = held_epoch


class TopicStalled(XmtpError, TransientError):
    """A topic's sync stopped short and left its cursor where it was: the server's answers kept changing, or it
    knows none of the cursors we could start from.  The next sync tries again."""


class GroupNeedsRejoin(XmtpError, PermanentError):
    """We cannot follow a group any more: a commit we need is not on the server (expired, lost, or not one we
    can apply).  The group is marked with the reason; an admin must remove and add this installation again."""


class SyncIncomplete(XmtpError):
    """``tessera xmtp sync`` could not read every topic to its end, or a group needs a rejoin (the message says
    which, and why); what it could read is stored."""


class WrongIntentState(XmtpError, InvalidInput):
    """A transition of an intent asked for from a state it may not leave that way (or of an intent that is
    settled already): see :mod:`protocols.xmtp.intent_machine`."""
