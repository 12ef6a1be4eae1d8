"""Refusals of message protection (RFC 9420 section 6).

Each refines the library error that already means the same thing, so code
catching :class:`~protocols.libraries.mls.errors.InvalidMessage` or
:class:`~protocols.libraries.mls.errors.InvalidSignature` keeps working.  The other
refusals reuse the library's classes as they are:
:class:`~protocols.libraries.mls.errors.WrongEpoch`,
:class:`~protocols.libraries.mls.errors.CannotDecryptOwnMessage`,
:class:`~protocols.libraries.mls.errors.DecryptionFailed`,
:class:`~protocols.libraries.mls.errors.InvalidSignature` and the ratchet's
:class:`~protocols.libraries.mls.schedule.GenerationReused` for a replay.  Messages name
leaves, epochs and content types, never key material.
"""

from __future__ import annotations

from ..errors import InvalidMessage, InvalidSignature


class WrongGroup(InvalidMessage):
    """The message names another group than the epoch it was handed to."""


class UnknownSender(InvalidMessage):
    """The sending leaf is outside the tree or blank, so no signature key stands for it.

    ``leaf`` is the leaf index the message claims.
    """

    def __init__(self, leaf: int, detail: str) -> None:
        self.leaf = leaf
        super().__init__(f"sender leaf {leaf} {detail}")


class MembershipTagMismatch(InvalidSignature):
    """A member's PublicMessage carries a membership tag that does not verify with the epoch's membership key."""


class ContentNotAllowed(InvalidMessage):
    """The content type cannot travel this way.

    Application data only travels in PrivateMessages (section 6.2); external
    senders and new members send only the content their sender type is for
    (section 6).
    """


class NotFramedContent(InvalidMessage):
    """An MLSMessage that carries no framed content (a Welcome, GroupInfo or KeyPackage) was given to unprotect."""
